"""The one interface every sandbox backend implements: run these programs, return the results."""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import enum
import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from codegrpo.config.sandbox import SandboxConfig
from codegrpo.errors import SandboxFatalError, UsageError
from codegrpo.harness import REFUSED, protocol, sandbox_source


class Runtime(enum.StrEnum):
    """What runs a program's file; the value is the name the configs and the problem files hold."""

    python = "python"
    node = "node"

    @property
    def runs_warm(self) -> bool:
        """Whether its programs may run in a warm interpreter, forked per program (codegrpo.harness.runner),
        exactly as its command (RUNTIMES) would run them: a Python one."""
        return self is Runtime.python

    @property
    def suffix(self) -> str:
        """The suffix of its programs' file names."""
        return {Runtime.python: ".py", Runtime.node: ".js"}[self]


# How each runtime runs a program's file.
RUNTIMES: dict[Runtime, tuple[str, ...]] = {Runtime.python: ("python3", "-I"), Runtime.node: ("node",)}
# A program each runtime must print 42 with, run when a sandbox is opened.
# Python's runs in the harness (trivial_program), its answer the value of `answer`.
TRIVIAL: dict[Runtime, str] = {Runtime.python: "answer = 6 * 7", Runtime.node: "console.log(6 * 7)"}


class Outcome(str, enum.Enum):
    """How a program's run ended, as seen by the sandbox (not by the program)."""

    EXITED = "exited"  # the program ended by itself; see exit_code
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SIGNALED = "signaled"  # killed by a signal we did not send
    SANDBOX_ERROR = "sandbox_error"  # infrastructure failure: the program's fault is unknown
    # A run of a program with inputs that never started because its caller wanted no more (Program.failed):
    # neither the program's doing nor the sandbox's.
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Program:
    """A self-contained program to run in a fresh sandbox.

    ``source`` is written to ``/tmp/<filename>`` and run by its ``runtime`` (a key of RUNTIMES), or by
    ``command`` when given (any argv: tests and the Superserve fake's exec use one). Its first
    ``prelude_chars`` characters may be trusted code that many programs share (the harness), whole
    lines: a warm interpreter compiles them once.

    ``digest(index, run)``, where given, is called by the backend with each run as it arrives and returns
    what the host keeps of it (the scorer judges the run there and keeps its verdict, not its output), so
    the host's memory does not grow with runs x output.

    With ``inputs``, the program runs once per input, each run a fresh process that shares nothing with
    the others (no files, /tmp, working directory or memory), with that text on its stdin;
    ``timeout_s`` is then per run, and ``budget_s`` bounds all the runs together. Every run of one
    program goes to the sandbox in one request.

    ``failed(index, kept)``, where given with inputs, says on the host whether run ``index`` (as ``kept``)
    failed, for a caller that needs the runs only up to the first failing one by index (a binary reward:
    the first failing test decides the verdict). Once a run has failed, a backend that runs them one by
    one starts only the runs below it that have not run (in index order, until one of them fails too) and
    no others, which come back SKIPPED: every run up to the first failing one is as it would be without
    ``failed``. A backend may run them all anyway (Superserve does), and the result is then as without it.
    The predicate stays on the host: the sandbox only sees that no more runs come.
    """

    source: str
    runtime: Runtime = Runtime.python
    timeout_s: float = 10.0
    filename: str = "solution.py"
    prelude_chars: int = 0
    command: tuple[str, ...] | None = None
    inputs: tuple[str, ...] | None = None
    budget_s: float | None = None
    digest: Callable[[int, RunResult], RunResult] | None = field(default=None, compare=False, repr=False)
    failed: Callable[[int, RunResult], bool] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "runtime", Runtime(self.runtime))  # a runtime's name ("node") works too

    def kept(self, index: int, run: RunResult) -> RunResult:
        """What the host keeps of run ``index``: what ``digest`` keeps, or all of it."""
        return run if self.digest is None else self.digest(index, run)

    def fails_at(self, index: int, kept: RunResult) -> bool:
        """Whether run ``index`` failed, as ``failed`` says (never, without it): runs above it may be skipped."""
        return self.failed is not None and self.failed(index, kept)

    @property
    def argv(self) -> tuple[str, ...]:
        return self.command or (*RUNTIMES[self.runtime], f"/tmp/{self.filename}")

    @property
    def wall_s(self) -> float:
        """The most wall time all its runs together may take."""
        if self.inputs is None:
            return self.timeout_s
        total = len(self.inputs) * self.timeout_s
        return total if self.budget_s is None else min(total, self.budget_s)

    def request(self) -> tuple[dict, bytes | None]:
        """Its request to the runner (harness/protocol.py) and, with inputs, their bytes end to end."""
        argv = None if self.runs_warm else list(self.argv)
        pieces = None if self.inputs is None else protocol.encode_inputs(self.inputs)
        sizes = None if pieces is None else [len(piece) for piece in pieces]
        document = protocol.request(
            self.filename, self.source[: self.prelude_chars], argv, self.timeout_s, sizes, self.budget_s
        )
        return document, None if pieces is None else b"".join(pieces)

    @property
    def runs_warm(self) -> bool:
        """Whether a warm Python may run it: a runtime's own command, never an argv of the caller's."""
        return self.command is None and self.runtime.runs_warm and "/" not in self.filename


@dataclass(frozen=True)
class RunResult:
    """How a program ended (or, with ``runs``, each of its runs): outcome, exit code, output, time, and for
    SANDBOX_ERROR what went wrong."""

    outcome: Outcome
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error: str = ""  # what went wrong, for SANDBOX_ERROR
    # A program with inputs: one result per input, in order (a run the budget left no time for is a TIMEOUT,
    # one skipped after a failing run, Program.failed, is SKIPPED).
    runs: tuple[RunResult, ...] = ()
    # A TIMEOUT the program's budget (Program.budget_s) caused: the run never started, or the budget's end
    # killed it. Set by the host's side of the protocol, never by a run; a test that failed by itself outranks it.
    budget_cut: bool = False

    @property
    def is_infra_failure(self) -> bool:
        return self.outcome is Outcome.SANDBOX_ERROR


def classify(
    exit_code: int | None,
    stdout: str = "",
    stderr: str = "",
    duration_s: float = 0.0,
    *,
    over_limit: bool = False,
    timed_out: bool = False,
    oom: bool = False,
    budget_cut: bool = False,
) -> RunResult:
    """The result of a program the sandbox saw end, the same way for every backend: output over its cap,
    then the wall clock, then the memory limit, then how it exited (a death by signal N is 128 + N)."""
    outcome = Outcome.EXITED
    if over_limit:
        outcome, exit_code = Outcome.OUTPUT_LIMIT, None
    elif timed_out:
        outcome, exit_code = Outcome.TIMEOUT, None
    elif oom:
        outcome = Outcome.MEMORY_LIMIT
    elif exit_code is None:
        outcome = Outcome.SANDBOX_ERROR
    elif exit_code < 0 or exit_code > 128:
        outcome = Outcome.SIGNALED
    elif exit_code != 0 and stderr.rstrip().endswith("MemoryError"):
        outcome = Outcome.MEMORY_LIMIT
    return RunResult(
        outcome, exit_code, stdout, stderr, duration_s, budget_cut=budget_cut and outcome is Outcome.TIMEOUT
    )


def runner_sources() -> dict[str, str]:
    """The runner's modules (harness/protocol.py's MODULES) by name, as text for a sandbox."""
    return {name: sandbox_source(name) for name in protocol.MODULES}


def program_limits(cfg: SandboxConfig, processes: int | None = None, memory_bytes: int | None = None) -> dict:
    """The limits the runner sets on every run (harness/protocol.py), from the sandbox's config; the
    processes and memory rlimits only where no cgroup (or VM) enforces them."""
    return protocol.limits(
        file_bytes=cfg.file_size_limit_bytes,
        open_files=cfg.open_files,
        tmpfs_bytes=cfg.tmpfs_limit_bytes,
        stdout_bytes=cfg.stdout_limit_bytes,
        stderr_bytes=cfg.stderr_limit_bytes,
        processes=processes,
        memory_bytes=memory_bytes,
    )


SKIPPED_RUN = RunResult(Outcome.SKIPPED)  # a run that never started: its caller wanted no more (Program.failed)


def program_result(program: Program, runs: list[RunResult], duration_s: float) -> RunResult:
    """A program's result from its runs' (one without inputs): with inputs, EXITED with every run's result
    and the total duration."""
    if program.inputs is None:
        (run,) = runs
        return dataclasses.replace(run, duration_s=duration_s)
    return RunResult(Outcome.EXITED, None, duration_s=duration_s, runs=tuple(runs))


class SandboxBackend(abc.ABC):
    """Runs untrusted programs in isolation, at most ``max_concurrency`` at a time.

    Open it with ``async with`` (or ``with`` from synchronous code): that checks it runs a trivial program
    of every runtime in ``runtimes``, so a broken sandbox fails before a model loads, and closing it
    releases everything it holds.
    """

    runtimes: tuple[Runtime, ...] = (Runtime.python,)

    @abc.abstractmethod
    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        """Run every program and return one result per program, in order.

        Transient infrastructure faults come back as ``Outcome.SANDBOX_ERROR``;
        fatal ones raise ``SandboxFatalError``.
        """

    async def aclose(self) -> None:  # noqa: B027 - an optional hook: most backends hold nothing to release
        """Release every resource the backend holds. Safe to call twice."""

    def stats(self) -> dict[str, float]:
        """Counters worth logging (sandboxes created and killed, for example)."""
        return {}

    def limits(self) -> list[tuple[str, str, str]]:
        """Each limit on a program, its value, and what enforces it (``codegrpo-limits``)."""
        return []

    async def check(self) -> None:
        """Run one trivial program per runtime; raise SandboxFatalError if one does not answer 42."""
        programs = [trivial_program(runtime) for runtime in map(Runtime, self.runtimes)]  # "node" works too
        for program, result in zip(programs, await self.run_many(programs), strict=True):
            why = trivial_failure(program, result)
            if why is not None:
                raise SandboxFatalError(f"the {program.runtime} sandbox cannot run a trivial program: {why}")

    async def __aenter__(self) -> SandboxBackend:
        try:
            await self.check()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # Synchronous code (training, evaluation) opens it with `with`: each call runs on an event loop of
    # its own, as every backend allows (TRL also scores on a loop thread of its own).
    def __enter__(self) -> SandboxBackend:
        return asyncio.run(self.__aenter__())

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run(self.aclose())


def trivial_program(runtime: Runtime, timeout_s: float = 30.0) -> Program:
    """The start-up check's program. Python's goes through the harness, as a completion does: a sandbox where
    the harness refuses to run completions (a root that cannot become nobody) fails at start, rather than
    every reward coming back None."""
    source = TRIVIAL[runtime]
    if runtime is Runtime.python:
        source = f"{sandbox_source('python_harness')}\n\nmain({source!r}, 'answer', 'expression')\n"
    return Program(source, runtime, timeout_s, f"check{runtime.suffix}")


def trivial_failure(program: Program, result: RunResult) -> str | None:
    """Why ``result`` is not the trivial program's answer, 42 (one line), or None."""
    if result.outcome is not Outcome.EXITED or result.exit_code != 0:
        why = " ".join((result.error or result.stderr).split())[-800:]
        return f"{result.outcome.value}, exit {result.exit_code}, {why}"
    last = result.stdout.rstrip("\n").rpartition("\n")[2]
    if program.runtime is not Runtime.python:
        return None if last.strip() == "42" else f"it printed {last[-200:]!r}"
    try:
        report = json.loads(last)
    except ValueError:
        report = None
    if not isinstance(report, dict):
        return f"no report from the harness: {last[-200:]!r}"
    if report.get("status") == REFUSED:
        return f"the harness refuses to run completions there: {report.get('error')}"
    if report.get("status") != "ok" or report.get("value") != 42:
        return f"the harness answered {last[-200:]!r}"
    return None


def format_limits(rows: list[tuple[str, str, str]]) -> str:
    """The limits table, as the limits command prints it and the trainer logs it."""
    if not rows:
        return "(this sandbox reports no limits)"
    rows = [("limit", "value", "enforced by"), *rows]
    width = max(len(name) for name, _, _ in rows), max(len(value) for _, value, _ in rows)
    return "\n".join(f"{name:<{width[0]}}  {value:<{width[1]}}  {how}" for name, value, how in rows)


def make_backend(cfg: SandboxConfig, runtime: Runtime = Runtime.python) -> SandboxBackend:
    """The backend class ``cfg._target_`` names (codegrpo's or a user's SandboxBackend), made with ``cfg``,
    to run programs of ``runtime``; not yet opened."""
    module, _, name = cfg._target_.rpartition(".")
    try:
        backend_class = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise UsageError(f"sandbox._target_={cfg._target_!r} names no class: {error}") from None
    if not (isinstance(backend_class, type) and issubclass(backend_class, SandboxBackend)):
        raise UsageError(f"sandbox._target_={cfg._target_!r} is not a codegrpo.sandbox.base.SandboxBackend")
    make: Callable[[SandboxConfig], SandboxBackend] = backend_class  # every backend takes its config
    backend = make(cfg)
    backend.runtimes = (runtime,)
    return backend
