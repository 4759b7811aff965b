"""Red team 7, of issue 54's trim of sandbox/ (977f4d5, "112 lines shorter, behaviour unchanged"): what the trim
touched, pinned exactly.

The one memfd helper (rewound; bwrap reads bound files and the seccomp filter from the fd's position), the
--setenv table (SANDBOX_ENV), the inlined rlimit fallbacks, and superserve's _first_error as a loop. Every test
passes at 977f4d5^ and at 977f4d5; each fails if the refactored piece drifts (an fd not rewound, a variable
dropped or changed, a limit not applied in one mode, a nested group's first error chosen differently).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import textwrap

import pytest

from codegrpo.errors import SandboxFatalError
from codegrpo.sandbox.base import Outcome, Program
from codegrpo.sandbox.local import SANDBOX_ENV
from codegrpo.sandbox.superserve import _first_error
from codegrpo.sandbox.workers import memfd, worker_files
from tests.helpers.sandbox import backend_in

MODES = ["warm-cgroups", "warm-rlimits", "cold-cgroups", "cold-rlimits"]

PROBE = textwrap.dedent(
    r"""
    import hashlib, json, os, resource, sys
    out = {"env": dict(os.environ)}
    out["fds"] = sorted(int(fd) for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))
    out["stdin_link"] = os.readlink("/proc/self/fd/0")
    out["stdin_size"] = os.fstat(0).st_size
    out["stdin_beyond"] = os.pread(0, 64, out["stdin_size"]).decode()
    out["stdin"] = sys.stdin.read()
    try:
        fd = os.open("/proc/self/fd/0", os.O_RDWR)
        os.pwrite(fd, b"X", 0)
        out["stdin_write"] = "wrote"
    except OSError as error:
        out["stdin_write"] = type(error).__name__
    out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    out["files"] = {
        name: hashlib.sha256(open(f"/run/codegrpo/{name}", "rb").read()).hexdigest()
        for name in os.listdir("/run/codegrpo")
    }
    out["rlimits"] = {name: resource.getrlimit(getattr(resource, name))[0] for name in ("RLIMIT_NPROC", "RLIMIT_AS")}
    print(json.dumps(out))
    """
)
INPUTS = ("alpha\n", "beta-only-mine\n")


@pytest.fixture(scope="module", params=MODES)
def box(request):
    with backend_in(request.param) as sandbox:
        yield sandbox


def probe(box) -> list[dict]:
    (result,) = asyncio.run(box.run_many([Program(PROBE, timeout_s=10, inputs=INPUTS)]))
    assert result.outcome is Outcome.EXITED, result
    return [json.loads(run.stdout.strip().splitlines()[-1]) for run in result.runs]


def test_environment_is_exactly_the_table(box):
    for seen in probe(box):
        assert seen["env"] == {"PATH": box._sandbox_path(), **SANDBOX_ENV, "PWD": "/tmp"}
    assert SANDBOX_ENV == {"HOME": "/tmp", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def test_each_run_holds_only_its_stdio_and_its_own_sealed_input(box):
    for text, seen in zip(INPUTS, probe(box), strict=True):
        assert seen["fds"] == [0, 1, 2], seen["fds"]  # no program or stdin memfd of the host's survives into the run
        assert seen["stdin_link"].startswith("/memfd:stdin")  # the run's own copy, never the host's codegrpo-stdin
        assert seen["stdin_size"] == len(text.encode()) and seen["stdin_beyond"] == ""
        assert seen["stdin"] == text
        assert seen["stdin_write"] == "PermissionError"  # sealed: a run cannot change what a later one reads
        assert seen["pids"] == [1]  # the runner (which holds the program's memfd) is out of sight


def test_the_sandbox_got_every_bound_file_whole(box):
    """bwrap reads --ro-bind-data and --seccomp from the fd's position: a memfd not rewound binds an empty file."""
    want = {
        os.path.basename(path): hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        for path, text in worker_files().items()
    }
    for seen in probe(box):
        assert seen["files"] == want


def test_rlimits_stand_in_where_no_cgroup_counts(box):
    cfg = box.cfg
    for seen in probe(box):
        nproc, address_space = seen["rlimits"]["RLIMIT_NPROC"], seen["rlimits"]["RLIMIT_AS"]
        if box.enforcement["processes"].startswith("RLIMIT_NPROC"):
            assert nproc == cfg.max_processes + 1  # the program's processes and the worker
        else:
            assert nproc != cfg.max_processes + 1
        if box.enforcement["memory"] == "RLIMIT_AS":
            assert address_space == cfg.memory_mb << 20
        else:
            assert address_space == -1


def test_memfd_is_rewound_and_close_on_exec():
    fd = memfd("codegrpo-test", b"hello")
    try:
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0 and os.read(fd, 10) == b"hello"
        assert not os.get_inheritable(fd)
    finally:
        os.close(fd)


def test_first_error_is_the_first_leaf_of_the_fatal_ones_else_of_all():
    inner_fatal, other = SandboxFatalError("inner"), ValueError("first")
    group = BaseExceptionGroup("batch", [other, BaseExceptionGroup("chunk", [KeyError("k"), inner_fatal])])
    assert _first_error(group) is inner_fatal
    nested = BaseExceptionGroup("batch", [BaseExceptionGroup("a", [BaseExceptionGroup("b", [other])]), KeyError()])
    assert _first_error(nested) is other


def test_the_sandbox_environment_table_is_read_only():
    with pytest.raises(TypeError):
        SANDBOX_ENV["LD_PRELOAD"] = "/tmp/x.so"  # type: ignore[index]
