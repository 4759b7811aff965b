"""One way to make and probe each sandbox, shared by the sandbox tests (no test module imports another).

``make_sandbox`` builds the local sandbox as users configure it; ``score`` runs a completion through the
real reward and keeps the RunResult beside the verdict; the rest looks at what a run left on the host.
``answering`` is the public in-memory backend for the tests whose subject is not what real programs print.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import textwrap
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve
from benchmarks.fakes.superserve_api import VM_FILES

from codegrpo.agents.workspace import sandbox_config
from codegrpo.config.rollout import Budgets
from codegrpo.config.sandbox import LocalSandboxConfig, RaySandboxConfig, SuperserveSandboxConfig
from codegrpo.data.files import load_problems
from codegrpo.harness import sandbox_source
from codegrpo.harness.python_harness import _typed
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Scored
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend
from codegrpo.sandbox.cgroups import PREFIX, find_hierarchies
from codegrpo.sandbox.memory import MemoryBackend
from codegrpo.sandbox.ray_cluster import RaySandbox
from codegrpo.sandbox.superserve import SuperserveSandbox

PYTHON = ("python3", "-I", "/tmp/solution.py")
MiB = 1 << 20
WORKER_FDS = 4  # what a warm worker holds open here: its control socket, stderr, bwrap's status, a pidfd


def run(coro):
    return asyncio.run(coro)


def make_sandbox(use_cgroups: bool = True, **overrides):
    from codegrpo.sandbox.local import LocalSandbox

    return LocalSandbox(LocalSandboxConfig(**{"max_concurrency": 2, "use_cgroups": use_cgroups, **overrides}))


def run_source(sandbox, source: str, timeout_s: float = 5.0, command: tuple[str, ...] | None = None) -> RunResult:
    """A Python program (warm where the sandbox has warm workers), or ``command`` run cold."""
    program = Program(textwrap.dedent(source), timeout_s=timeout_s, command=command)
    return asyncio.run(sandbox.run_many([program]))[0]  # run_many: every backend's one interface


def children_of(parent: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == parent:
                found.add(int(entry))
    return found


def descendants(roots: list[int]) -> set[int]:
    """Every process below ``roots``, however deep."""
    found: set[int] = set()
    level = set(roots)
    while level:
        level = set().union(*(children_of(pid) for pid in level)) - found
        found |= level
    return found


def child_pids(owner: int | None = None) -> set[int]:
    """Processes whose parent is this (test) process, or ``owner`` (a sandbox actor's process)."""
    return children_of(owner or os.getpid())


def is_idle_warm_worker(pid: int) -> bool:
    """bwrap with one child, the worker (its sandbox's pid 1), which has no process of a program left."""
    inside = children_of(pid)
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    return comm == "bwrap" and len(inside) == 1 and children_of(inside.pop()) == set()


def processes_with(marker: str) -> list[int]:
    """Processes anywhere on the machine whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def run_cgroups(controller: str | None = None, owner: int | None = None) -> list[Path]:
    """Run cgroups of this process's sandboxes, or ``owner``'s (of one controller's hierarchy, or of all)."""
    leftovers = []
    for name, hierarchy in find_hierarchies().items():
        if controller not in (None, name):
            continue
        for parent in hierarchy.own.glob(f"{PREFIX}{owner or os.getpid()}-*"):
            leftovers += [p for p in parent.iterdir() if p.is_dir()]
    return leftovers


def open_fds(owner: int | None = None) -> int:
    """This process's (or ``owner``'s) open file descriptors, less those its idle warm workers hold."""
    return len(os.listdir(f"/proc/{owner or os.getpid()}/fd")) - WORKER_FDS * len(child_pids(owner))


def sandbox_owners(backend: SandboxBackend) -> list[int | None]:
    """The processes that start a backend's sandboxes: sandbox=ray's actors, else this one (None)."""
    return list(backend._pids) if isinstance(backend, RaySandbox) else [None]


def assert_nothing_left(fds_before: int, marker: str | None = None, owner: int | None = None) -> None:
    """No process of a program is left, only idle warm workers; no cgroup or fd but theirs (of this process's
    sandboxes, or of those ``owner`` started)."""
    workers = child_pids(owner)
    assert all(is_idle_warm_worker(pid) for pid in workers), workers
    assert len({group.name for group in run_cgroups(owner=owner)}) <= len(workers)
    assert open_fds(owner) == fds_before
    if marker is not None:
        assert processes_with(marker) == []


def daemon_source(marker: str) -> str:
    """A program that leaves a double-forked, setsid daemon (named ``marker``) behind and exits at once."""
    return f"""
        import os, sys
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", "{marker}"])
            os._exit(0)
        os.wait()
        print("parent done")
    """


# -- scoring through the real reward ----------------------------------------------------------------

PROBLEMS_FILE = PROJECT_ROOT / "problems" / "seed.jsonl"
PROBLEMS = {p.id: p for p in load_problems(str(PROBLEMS_FILE))}


class Recording(SandboxBackend):
    """Passes programs to the real sandbox and keeps each RunResult, to look at beside the reward."""

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner
        self.results: list[RunResult] = []

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        results = await self.inner.run_many(programs)
        self.results.extend(results)
        return results


def score(sandbox, problem_id: str, completion: str, timeout_s: float = 5.0) -> tuple[Scored, RunResult]:
    recording = Recording(sandbox)
    scorer = Scorer(list(PROBLEMS.values()), recording, get_language("python"), "binary", timeout_s=timeout_s)
    (scored,) = asyncio.run(scorer.score([problem_id], [completion]))
    (result,) = recording.results
    return scored, result


def reported_value(result: RunResult):
    """The value the harness reported (its one JSON line on stdout)."""
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["status"] == "ok", report
    return report["value"]


FAKE_KEY_ENV = "CODEGRPO_TEST_FAKE_SUPERSERVE_KEY"


class FreshSuperserve(SandboxBackend):
    """A Superserve backend on the fake, a fresh one per call (its sandboxes are all killed after each)."""

    def __init__(self, fake: FakeSuperserve, cfg: SuperserveSandboxConfig | None = None) -> None:
        self.fake = fake  # what a test counts of the calls it made
        self.cfg = cfg or SuperserveSandboxConfig(api_key_env=FAKE_KEY_ENV, base_url=fake.base_url, max_concurrency=2)

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        backend = SuperserveSandbox(self.cfg)
        try:
            return await backend.run_many(programs)
        finally:
            await backend.aclose()


@contextlib.contextmanager
def backend_in(mode: str, **settings: Any) -> Iterator[SandboxBackend]:
    """The backend of a mode users meet: "superserve" (the real SDK on the fake), "ray" (sandbox=ray on a Ray
    instance started here), or "warm"/"cold" with
    "-cgroups" or "-rlimits" (cgroups when the machine has them, if neither is said); ``settings`` are the local
    sandbox's (memory_mb=...), on every backend but Superserve's."""
    if mode == "superserve":
        os.environ[FAKE_KEY_ENV] = FAKE_API_KEY
        with FakeSuperserve() as fake:
            yield FreshSuperserve(fake)
        return
    if mode == "ray":  # the local sandbox on two actors of a Ray instance of this process's own
        with RaySandbox(RaySandboxConfig(**{"address": "local", "actors": 2, "max_concurrency": 2, **settings})) as box:
            yield box
        return
    warm, _, limits = mode.partition("-")
    box = make_sandbox(warm=warm == "warm", **({"use_cgroups": limits == "cgroups"} if limits else {}), **settings)
    try:
        yield box
    finally:
        asyncio.run(box.aclose())


LOCAL_MODES = ("warm-cgroups", "warm-rlimits", "cold-cgroups", "cold-rlimits")  # the first: sandbox=local's default
# What a VM's runner gives each program fresh (harness/runner.py: /tmp and VM_WRITABLE): a folder there is hidden.
VM_FRESH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


@contextlib.contextmanager
def vm_image_site(site: str) -> Iterator[str]:
    """The pytest a Superserve VM's image brings (docs/agents.md), as the fake can model it: a pytest folder its
    VMs bind read-only, at a path the VM's runner keeps for every program. ``site`` where it lies outside
    ``VM_FRESH``; else a copy made for the test under the project's outputs/ (removed after), or a skip."""
    if not any(Path(site).is_relative_to(place) for place in VM_FRESH):
        yield site
        return
    from codegrpo.sandbox.local import reachable_by_others
    from codegrpo.sandbox.pytest_site import pytest_site

    outputs = PROJECT_ROOT / "outputs"
    if not (os.access(outputs, os.W_OK) and reachable_by_others(outputs)):
        pytest.skip(f"the fake VM hides {site} (a fresh {VM_FRESH}), and {outputs} cannot hold a copy")
    image = Path(tempfile.mkdtemp(prefix="vm-image-pytest-", dir=outputs))
    try:
        image.chmod(0o755)
        yield str(pytest_site(image))
    finally:
        shutil.rmtree(image, ignore_errors=True)


@contextlib.contextmanager
def workspace_backend_in(
    mode: str, site: str, budgets: Budgets | None = None, **settings: Any
) -> Iterator[tuple[SandboxBackend, str]]:
    """``backend_in``'s backend of ``mode`` set up for agents' workspaces as RepoEnvironment sets it up
    (agents.workspace.sandbox_config over the mode's config; ``settings`` are that config's), and the pytest
    folder its programs are given. On "superserve" the fake's VMs have pytest as an image would (vm_image_site)."""
    from codegrpo.sandbox.local import LocalSandbox

    budgets = budgets or Budgets()
    settings = {"max_concurrency": 2, **settings}
    if mode == "superserve":
        os.environ[FAKE_KEY_ENV] = FAKE_API_KEY
        with vm_image_site(site) as image_site:
            # The VM's own room for a workspace, as sandbox_config gives the host's run (a real VM has no such cap).
            image = sandbox_config(LocalSandboxConfig(warm=False, vm_root=True, **VM_FILES), budgets, image_site)
            with FakeSuperserve(local_cfg=image) as fake:
                cfg = SuperserveSandboxConfig(api_key_env=FAKE_KEY_ENV, base_url=fake.base_url, **settings)
                yield FreshSuperserve(fake, sandbox_config(cfg, budgets, image_site)), image_site
        return
    if mode == "ray":
        cfg = sandbox_config(RaySandboxConfig(**{"address": "local", "actors": 2, **settings}), budgets, site)
        with RaySandbox(cfg) as box:
            yield box, site
        return
    warm, _, limits = mode.partition("-")
    cgroups = {"use_cgroups": limits == "cgroups"} if limits else {}
    box = LocalSandbox(sandbox_config(LocalSandboxConfig(warm=warm == "warm", **cgroups, **settings), budgets, site))
    try:
        yield box, site
    finally:
        asyncio.run(box.aclose())


def backends(*modes: str, name: str = "backend") -> Any:
    """A module-scoped fixture called ``name``: one backend of each mode (``backend_in``'s), shared by the module's
    tests. ``backend = backends("warm", "cold", "superserve")`` in a test module."""

    @pytest.fixture(scope="module", params=list(modes), name=name)
    def backend(request: pytest.FixtureRequest) -> Iterator[SandboxBackend]:
        with backend_in(request.param) as box:
            yield box

    return backend


# -- the public in-memory backend, answering as CPython and the harness answer -----------------------------


def harness_call(program: Program) -> tuple | None:
    """The arguments of the line the host appends to a Python harness program, ``main(code, test, mode, ...)``,
    or None for a program without the harness (a stdin/stdout one: the code itself)."""
    if not program.prelude_chars or program.source[: program.prelude_chars] != sandbox_source("python_harness"):
        return None
    last = program.source.rstrip("\n").rpartition("\n")[2]
    return ast.literal_eval(last.removeprefix("main"))


def _traceback(error: Exception) -> str:
    where = '  File "/tmp/solution.py", line 1, in <module>\n'
    return "Traceback (most recent call last):\n" + where + "".join(traceback.format_exception_only(error))


def answering(
    prints: Mapping[str, Callable[[str | None], str]] | None = None,
    defines: Mapping[str, Mapping[str, Callable]] | None = None,
    delay_s: float = 0.0,
) -> MemoryBackend:
    """A sandbox where no program runs (a MemoryBackend), each answered as CPython and the Python harness answer
    the code it stands for (tests/sandbox/ and test_scorer.py's end-to-end tests check the real ones):

    - a stdin/stdout program of code ``c`` prints ``prints[c](stdin)`` and exits 0; where that raises, it
      exits 1 with the exception's traceback on stderr, as ``python3`` does;
    - a harness program (the expression or call form) of code ``c`` reports, in the one JSON line the harness
      prints, the value of the test expression with ``defines[c]`` as the code's names, or the value of
      ``defines[c][fn_name]`` called with stdin's JSON arguments; where that raises, the harness's error
      report, with the traceback on stderr (where the harness sends the completion's output).

    Codes are compared stripped. A program of any other code, or of another form, is a failed sandbox (the
    handler raises): the verdicts then say infra, and the test fails. Each run takes ``delay_s`` of real time
    (an ``await``), for tests that measure where the sandbox's time goes."""
    stdio = {code.strip(): answer for code, answer in (prints or {}).items()}
    harness = {code.strip(): names for code, names in (defines or {}).items()}

    async def handler(program: Program, stdin: str | None) -> RunResult:
        if delay_s:
            await asyncio.sleep(delay_s)
        call = harness_call(program)
        if call is None:
            answer = stdio[program.source.strip()]
            try:
                printed = answer(stdin)
            except Exception as error:
                return RunResult(Outcome.EXITED, 1, stderr=_traceback(error), duration_s=0.01)
            return RunResult(Outcome.EXITED, 0, stdout=printed, duration_s=0.01)
        code, test, mode = call[:3]
        names = dict(harness[code.strip()])
        if mode not in ("expression", "call"):
            raise ValueError(f"answering: no answer for the harness's {mode!r} form")
        try:
            # The expression is the problem's test (test data), never a completion's code.
            value = eval(test, names) if mode == "expression" else names[test](*json.loads(stdin or "[]"))
            report, stderr = {"status": "ok", "value": _typed(value)}, ""
        except Exception as error:
            report, stderr = {"status": "error", "error": f"{type(error).__name__}: {error}"}, _traceback(error)
        return RunResult(Outcome.EXITED, 0, stdout=json.dumps(report) + "\n", stderr=stderr, duration_s=0.01)

    return MemoryBackend(handler)
