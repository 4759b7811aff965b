"""Hostile completions against the local sandbox, scored through the real reward.

Every attack asserts that it was contained (the run's outcome, and what the host sees afterwards) and the
reward it got. Completions that would profit from an escape answer correctly only when their attack
worked, so a reward of 1.0 on those means the sandbox leaked. After every attack the trainer is alive,
the next normal program still scores 1.0, and nothing is left behind: no process, cgroup, file
descriptor, secret in the output, or growth of the trainer's memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import select
import socket
import string
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from benchmarks.corpora.attacks import ATTACKS, Attack, Check, escaped_if, fenced

from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import KEPT_OUTPUT_CHARS, Scorer
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import Program, RunResult
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import (
    PROBLEMS,
    PROBLEMS_FILE,
    MiB,
    Recording,
    assert_nothing_left,
    backend_in,
    child_pids,
    open_fds,
    processes_with,
    reported_value,
    run_cgroups,
    sandbox_owners,
    score,
)

pytestmark = run_if(bwrap=True)

SECRET_NAMES = ("WANDB_API_KEY", "SUPERSERVE_API_KEY", "HF_TOKEN")
SECRET = f"sekret-{uuid.uuid4().hex}"  # the sandbox searches for the "sekret-" prefix, never the value


# -- host services the sandbox must not reach ----------------------------------------------------------


class HostServices:
    """A TCP service on the host's loopback and two unix sockets (abstract and path), all answering
    is_prime's expected values to whoever connects, and counting every connection."""

    def __init__(self, directory: Path) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.tcp_port = self.tcp.getsockname()[1]
        self.abstract_name = f"codegrpo-test-{uuid.uuid4().hex}"
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind("\0" + self.abstract_name)
        self.unix_path = str(directory / "service.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        self.accepted: list[str] = []
        self._stop = False
        for listener in (self.tcp, self.abstract, self.unix):
            listener.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        listeners = [self.tcp, self.abstract, self.unix]
        while not self._stop:
            for ready in select.select(listeners, [], [], 0.05)[0]:
                connection, _ = ready.accept()
                self.accepted.append(str(ready.getsockname()))
                connection.sendall(b"[true, false, false]\n")
                connection.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        for listener in (self.tcp, self.abstract, self.unix):
            listener.close()


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    host = HostServices(tmp_path_factory.mktemp("services"))
    yield host
    host.close()


@pytest.fixture(scope="module", params=["warm", "cold", "warm-rlimits", "cold-rlimits", "ray"])
def kind(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def sandbox(kind):
    # As root, rlimits bind too: every sandbox runs as an unprivileged uid. "ray": warm, on two Ray actors.
    with backend_in(kind) as box:
        if kind == "ray":  # each actor's first large result opens Ray's object store connection: here, not mid-check
            asyncio.run(box.run_many([Program("print('x' * 200_000)")] * 2))
        yield box


def has_cgroups(box) -> bool:
    how = {name: where for name, _, where in box.limits()}  # through Ray: an actor's local sandbox's rows
    return how["memory"].startswith("cgroup") and how["processes"].startswith("cgroup")


def _peak_rss() -> int:
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) << 10


def _rss() -> int:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) << 10


@pytest.fixture
def contained(sandbox, monkeypatch):
    """Secrets in the trainer's environment during the attack; afterwards, the trainer's state is checked."""
    for name in SECRET_NAMES:
        monkeypatch.setenv(name, SECRET)
    owners = sandbox_owners(sandbox)
    fds = [open_fds(owner) for owner in owners]
    rss = _rss()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set size
    seen: list[RunResult] = []
    yield seen
    assert _peak_rss() - rss < 64 * MiB, "the trainer's memory grew with what a program did"
    for result in seen:
        assert "sekret-" not in result.stdout + result.stderr + result.error
    scored, _ = score(sandbox, "is_prime", PROBLEMS["is_prime"].reference)
    assert (scored.verdict.status, scored.verdict.reward) == (Status.PASSED, 1.0)
    for owner, before in zip(owners, fds, strict=True):
        assert_nothing_left(before, owner=owner)


# -- the attacks (benchmarks/corpora/attacks.py): what each run is checked for beyond its verdict ----------


def _not_escaped(result: RunResult, ctx: dict) -> None:
    assert reported_value(result) == [None, None, None]  # the attack ran to the end and found nothing


def _quick(result: RunResult, ctx: dict) -> None:
    assert result.duration_s < 3


def _killed_on_time(result: RunResult, ctx: dict) -> None:
    assert result.duration_s < 1.0 + 2.0


def _fewer_than_the_process_limit(result: RunResult, ctx: dict) -> None:
    count = reported_value(result)[0]
    assert 0 < count < ctx["max_processes"]


def _output_capped(result: RunResult, ctx: dict) -> None:
    # The sandbox cut the stream at its cap (the outcome says so); the host kept only its judged share.
    assert 0 < len(result.stderr) <= min(ctx["output_cap"], KEPT_OUTPUT_CHARS)


def _no_connection(result: RunResult, ctx: dict) -> None:
    _not_escaped(result, ctx)
    assert ctx["services"].accepted == []


def _daemon_gone(result: RunResult, ctx: dict) -> None:
    assert processes_with(ctx["marker"]) == []


def _harness_reported_an_error(result: RunResult, ctx: dict) -> None:
    assert json.loads(result.stdout.strip().splitlines()[-1])["status"] == "error"


def _tmp_full(result: RunResult, ctx: dict) -> None:
    _quick(result, ctx)
    written = reported_value(result)[0]
    assert ctx["tmpfs"] - 4 * MiB <= written <= ctx["tmpfs"]


def _not_found(result: RunResult, ctx: dict) -> None:
    assert reported_value(result) == [None, None]


def _forgery_went_to_stderr(result: RunResult, ctx: dict) -> None:
    assert '"value": [true, false, false]' in result.stderr
    assert reported_value(result) == [False, False, False]


def _planted_nothing_on_the_host(result: RunResult, ctx: dict) -> None:
    _not_escaped(result, ctx)
    for directory in (Path(sys.base_prefix), Path(os.__file__).parent, Path("/tmp")):
        assert not list(directory.glob(f"planted-{ctx['marker']}*"))


CHECKS: dict[Check, Callable[[RunResult, dict], None]] = {
    Check.NOT_ESCAPED: _not_escaped,
    Check.NOT_ESCAPED_QUICKLY: lambda r, c: (_not_escaped(r, c), _quick(r, c)),
    Check.KILLED_ON_TIME: _killed_on_time,
    Check.FEWER_THAN_THE_PROCESS_LIMIT: _fewer_than_the_process_limit,
    Check.OUTPUT_CAPPED: _output_capped,
    Check.NO_CONNECTION: _no_connection,
    Check.DAEMON_GONE: _daemon_gone,
    Check.HARNESS_REPORTED_AN_ERROR: _harness_reported_an_error,
    Check.TMP_FULL: _tmp_full,
    Check.NOT_FOUND: _not_found,
    Check.FORGERY_WENT_TO_STDERR: _forgery_went_to_stderr,
    Check.PLANTED_NOTHING_ON_THE_HOST: _planted_nothing_on_the_host,
}


def _context(services: HostServices, sandbox) -> dict:
    prefix = Path(sys.base_prefix).resolve()
    home = Path.home()
    home_paths = [str(p) for p in home.iterdir() if not (p == prefix or p in prefix.parents)] if home.is_dir() else []
    home_paths += [str(home / ".netrc"), str(home / ".cache" / "huggingface"), str(home / ".config" / "wandb")]
    return {
        "trainer_pid": os.getpid(),
        "tcp_port": services.tcp_port,
        "abstract": services.abstract_name,
        "unix_path": services.unix_path,
        "home_paths": repr(home_paths),
        "problems_file": str(PROBLEMS_FILE),
        "marker": f"codegrpo-attack-{uuid.uuid4().hex}",
        "max_processes": sandbox.cfg.max_processes,
        "output_cap": sandbox.cfg.stderr_limit_bytes,
        "tmpfs": sandbox.cfg.tmpfs_limit_bytes,
        "services": services,
    }


def test_there_are_enough_attacks():
    assert len(ATTACKS) >= 25 and len({a.name for a in ATTACKS}) == len(ATTACKS)
    assert set(CHECKS) == set(Check)


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_is_contained(attack: Attack, sandbox, kind, services, contained):
    ctx = _context(services, sandbox)
    completion = string.Template(textwrap.dedent(attack.code)).substitute(
        {k: v for k, v in ctx.items() if isinstance(v, (str, int))}
    )
    started = time.monotonic()
    scored, result = score(sandbox, attack.problem, completion, attack.timeout_s)
    contained.append(result)
    outcome = attack.outcome
    if not has_cgroups(sandbox) and attack.rlimit_outcome is not None:
        outcome = attack.rlimit_outcome
    assert result.outcome is outcome, (result.outcome, result.exit_code, result.stderr[-2000:])
    assert (scored.verdict.status, scored.verdict.reward) == (attack.status, attack.reward), scored.verdict
    assert time.monotonic() - started < attack.timeout_s + 5
    if attack.check is not None:
        CHECKS[attack.check](result, ctx)


def test_poisoning_a_later_run(sandbox, contained):
    poison = escaped_if("""
        import os, sys
        planted = []
        targets = ["/tmp", "/tmp/.local/lib/python3/site-packages", os.path.dirname(os.__file__)] + sys.path
        exit_now = "import os; os._exit(0)"
        files = [("json.py", "raise SystemExit('poisoned')"), ("sitecustomize.py", exit_now),
                 ("usercustomize.py", exit_now), ("zz-poison.pth", exit_now)]
        for directory in targets:
            for name, text in files:
                try:
                    os.makedirs(directory, exist_ok=True)
                    with open(os.path.join(directory, name), "w") as handle:
                        handle.write(text)
                    planted.append(directory)
                except OSError:
                    pass
        return sorted(set(planted)) != ["/tmp", "/tmp/.local/lib/python3/site-packages"]
    """)
    scored, result = score(sandbox, "is_prime", poison)
    contained.append(result)
    assert (scored.verdict.status, scored.verdict.reward) == (Status.FAILED, 0.0)
    assert reported_value(result) == [None, None, None]  # it planted files only in its own /tmp
    scored, _ = score(sandbox, "is_prime", PROBLEMS["is_prime"].reference)
    assert (scored.verdict.status, scored.verdict.reward) == (Status.PASSED, 1.0)
    probe = """
        import json, os, sys
        print(json.__file__.startswith(sys.base_prefix), "sitecustomize" in sys.modules, sorted(os.listdir("/tmp")))
    """
    [result] = asyncio.run(sandbox.run_many([Program(textwrap.dedent(probe))]))
    assert result.stdout.strip() == "True False ['solution.py']"


def test_files_left_for_the_next_run(sandbox, contained):
    marker = uuid.uuid4().hex
    leave = f"""
        import os
        os.makedirs("/tmp/.cache/answers")
        for path in ("/tmp/answers-{marker}", "/tmp/.cache/answers/{marker}"):
            with open(path, "w") as handle:
                handle.write("[true, false, false]")

        def is_prime(n):
            return None
    """
    scored, result = score(sandbox, "is_prime", textwrap.dedent(leave))
    contained.append(result)
    assert (scored.verdict.status, scored.verdict.reward) == (Status.FAILED, 0.0)
    pick_up = escaped_if(f"""
        import os
        return os.path.exists("/tmp/answers-{marker}") or os.path.exists("/tmp/.cache/answers/{marker}")
    """)
    scored, result = score(sandbox, "is_prime", pick_up)
    contained.append(result)
    assert (scored.verdict.status, scored.verdict.reward) == (Status.FAILED, 0.0)
    assert reported_value(result) == [None, None, None]


# -- under load ----------------------------------------------------------------------------------------


def _attack_code(name: str) -> str:
    return textwrap.dedent(next(a.code for a in ATTACKS if a.name == name))


LOAD_MIX: list[tuple[str, str, set[Status], float]] = [
    # (name, completion, statuses, reward); {n} makes every program distinct, so none is deduplicated
    ("correct", PROBLEMS["is_prime"].reference + "# {n}\n", {Status.PASSED}, 1.0),
    ("correct_fenced", fenced(PROBLEMS["is_prime"].reference + "# {n}"), {Status.PASSED}, 1.0),
    ("wrong", "def is_prime(n):  # {n}\n    return True\n", {Status.FAILED}, 0.0),
    ("syntax_error", "def is_prime(n) # {n}\n", {Status.ERROR}, 0.0),
    ("raises", "def is_prime(n):  # {n}\n    raise ValueError(n)\n", {Status.ERROR}, 0.0),
    ("exit_early", "import os  # {n}\nos._exit(0)\n", {Status.ERROR}, 0.0),
    (
        "override_eq",
        "class E(list):  # {n}\n    __eq__ = lambda s, o: True\n\ndef is_prime(n):\n    return E()\n",
        {Status.ERROR},
        0.0,
    ),
    ("daemon", _attack_code("double_fork_setsid_daemon").replace("$marker", "load-{n}"), {Status.PASSED}, 1.0),
    ("kill_harness", "import os, signal  # {n}\nos.kill(os.getppid(), signal.SIGKILL)\n", {Status.ERROR}, 0.0),
    ("stdout_flood", "while True:  # {n}\n    print('x' * 1000)\n", {Status.ERROR}, 0.0),
    ("fork_until_refused", _attack_code("fork_until_refused") + "# {n}\n", {Status.FAILED}, 0.0),
]
# Slow ones, a few each: a timeout costs its whole timeout, a memory bomb a second or more of page faults
# (under load it may reach the wall-clock limit first).
LOAD_RARE: list[tuple[str, str, set[Status], float]] = [
    ("infinite_loop", "while True:  # {n}\n    pass\n", {Status.TIMEOUT}, 0.0),
    ("memory_bomb", "BOMB = bytearray(4 << 30)  # {n}\n", {Status.ERROR, Status.TIMEOUT}, 0.0),
    ("sigstop", "import os, signal  # {n}\nos.kill(os.getpid(), signal.SIGSTOP)\n", {Status.TIMEOUT}, 0.0),
]


def _new_threads(before: set[threading.Thread]) -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread not in before]


@pytest.mark.slow
def test_500_programs_under_load(compose_cfg):
    from codegrpo import build

    cfg = compose_cfg("sandbox=local").sandbox
    others = child_pids(), run_cgroups()  # other tests' idle warm workers, if any
    theirs = set(run_cgroups("memory"))  # held by those workers the whole time: not this box's runs
    box = build.sandbox(cfg)
    if not has_cgroups(box):
        pytest.skip(f"the mix has fork and memory bombs, which need cgroups; here: {box.enforcement}")
    kinds = ([kind for kind in LOAD_RARE for _ in range(3)] + [kind for kind in LOAD_MIX for _ in range(50)])[:500]
    random.Random(0).shuffle(kinds)
    completions = [code.replace("{n}", str(n)) for n, (_, code, _, _) in enumerate(kinds)]
    recording = Recording(box)
    scorer = Scorer(list(PROBLEMS.values()), recording, get_language("python"), "binary", timeout_s=3.0)

    fds, threads, tmp, rss = open_fds(), set(threading.enumerate()), set(os.listdir("/tmp")), _rss()
    peak = {"runs": 0}
    stop = threading.Event()

    def watch() -> None:  # how many sandboxes run at once, seen from their cgroups
        while not stop.is_set():
            peak["runs"] = max(peak["runs"], len(set(run_cgroups("memory")) - theirs))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    try:
        scored = asyncio.run(scorer.score(["is_prime"] * 500, completions))
    finally:
        stop.set()
        watcher.join()
    elapsed = time.monotonic() - started
    asyncio.run(box.aclose())

    assert len(scored) == 500 and len(recording.results) == 500  # every program ran, none was deduplicated
    wrong = [
        (name, s.verdict)
        for s, (name, _, statuses, reward) in zip(scored, kinds, strict=True)
        if s.verdict.status not in statuses or s.verdict.reward != reward
    ]
    assert wrong == []
    assert not any(r.is_infra_failure for r in recording.results)
    assert 1 <= peak["runs"] <= cfg.max_concurrency
    # Nothing leaks: processes, cgroups, descriptors, threads, host /tmp, memory.
    assert (child_pids(), run_cgroups()) == others
    assert [p for n in range(500) for p in processes_with(f"load-{n}\x00")] == []
    assert open_fds() == fds
    # The child watcher's threads end right after their process, though not always within 5 s on CI's loaded
    # machine. A leaked thread never ends, however long the wait. Python's threads, told apart by identity: the
    # process's thread count also moved with native threads of libraries other tests loaded (40 of 39 once).
    deadline = time.monotonic() + 30
    while _new_threads(threads) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _new_threads(threads) == []
    assert not [e for e in set(os.listdir("/tmp")) - tmp if "bwrap" in e or "bubblewrap" in e or "codegrpo" in e]
    assert _rss() - rss < 64 * MiB
    print(f"500 programs in {elapsed:.1f}s at concurrency {cfg.max_concurrency}; peak {peak['runs']} at once")
