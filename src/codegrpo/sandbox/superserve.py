"""Superserve backend: programs run in fresh Firecracker microVMs in Superserve's cloud (docs/superserve.md).

As in Superserve's TRL guide, a sandbox is created with outbound traffic denied and ``auto_delete_seconds=0``,
its program run under ``timeout -s KILL``, and it is killed in a ``finally``. A create is much the slowest of a
sandbox's four round trips (create, write, exec, kill), so a batch of more programs than ``max_concurrency`` is
split into chunks of up to ``programs_per_sandbox``: each chunk gets one sandbox, one write (harness/runner.py with
the programs, encrypted) and one exec, in which the trusted runner runs the programs one after another, isolated
from it and from each other. A chunk whose runner gives no well-formed result for every program is run again, one
sandbox per program, so nothing a program does to the runner changes any verdict but its own. On top of the guide:
one cap on live sandboxes for every thread and event loop; transient faults retried with jittered backoff, a rate
limit pausing every create; a fatal fault raised once, the batch's other sandboxes killed; and no leaks: a create
whose answer was lost is found by its metadata tag and killed, a cancelled call kills its sandboxes, and aclose()
or, failing that, an exit hook kills the rest. The SDK never retries a POST (create, write, exec), so
``max_retries`` is the budget of a whole attempt per program or chunk; kills get it on top of the SDK's own.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import hashlib
import json
import logging
import math
import os
import random
import secrets
import shlex
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence

import httpx
from superserve import (
    AsyncSandbox,
    AuthenticationError,
    CommandResult,
    NetworkConfig,
    RateLimitError,
    Sandbox,
    SandboxError,
    SandboxStatus,
    SandboxTimeoutError,
    ServerError,
    async_connection_pool,
)

from codegrpo.config.sandbox import SuperserveSandboxConfig
from codegrpo.errors import UsageError
from codegrpo.harness.protocol import KILLED_EXIT, NO_NAMESPACES_EXIT, OutputCap
from codegrpo.sandbox import seccomp
from codegrpo.sandbox.base import (
    Outcome,
    Program,
    RunResult,
    SandboxBackend,
    SandboxFatalError,
    classify,
    program_limits,
    program_result,
    runner_sources,
)

log = logging.getLogger(__name__)

API_KEY_DOCS = "https://docs.superserve.ai/api-key"
EXEC_OUTPUT_BYTES = 1 << 20  # what an exec returns of its stdout at most: a chunk's document must fit
EXEC_MARGIN_S = 5.0  # the server's own limit on exec stays above the KILL wrapper's
RUN_TAG = "codegrpo_run"  # metadata: the backend instance that made the sandbox
ATTEMPT_TAG = "codegrpo_attempt"  # metadata: the create call, to find its sandbox if the answer is lost
CANCEL_WAIT_S = 10.0  # how long a close waits for cancelled programs to kill their own sandboxes
EXIT_CLEANUP_S = 30.0  # how long the exit hook may keep the process alive
# In-sandbox code, read as text: the runner of every program (the local sandbox's too) and its modules.
RUNNER_MODULES = runner_sources()
KEY_ENV = "CODEGRPO_BUNDLE_KEY"  # where the runner finds the bundle's key
PROGRAM_FILTERS = {machine: seccomp.build_filter(machine).hex() for machine in seccomp.MACHINES}
RUNNER_PATH = "/tmp/codegrpo_batch.py"
RUNNER_START_S = 5.0  # the runner's own start, on top of its programs' time
RUNNER_SLACK_S = 1.0  # per run: start, kill and clean-up around its timeout
SANDBOX_MARGIN_S = 60  # a chunk's programs finish this long before the sandbox's own timeout


class SuperserveSandbox(SandboxBackend):
    """Runs each program in its own Superserve sandbox, at most ``max_concurrency`` alive at once."""

    def __init__(self, cfg: SuperserveSandboxConfig) -> None:
        least = math.ceil(cfg.timeout_s + SANDBOX_MARGIN_S + RUNNER_START_S)
        if cfg.sandbox_timeout_s < least:
            raise UsageError(
                f"sandbox.sandbox_timeout_s={cfg.sandbox_timeout_s} must be at least {least}: a program "
                f"of sandbox.timeout_s={cfg.timeout_s:g}, the runner's start ({RUNNER_START_S:g} s) and "
                f"the margin before the sandbox's own timeout ({SANDBOX_MARGIN_S:g} s)"
            )
        api_key = os.environ.get(cfg.api_key_env, "").strip()
        if not api_key:
            raise SandboxFatalError(
                f"sandbox=superserve needs a Superserve API key in the environment variable {cfg.api_key_env}, "
                f"which is not set. Create a key in the Superserve console ({API_KEY_DOCS}) and "
                f"`export {cfg.api_key_env}=ss_live_...`, or choose sandbox=local."
            )
        if "0.0.0.0/0" not in cfg.deny_out:
            log.warning("sandbox.deny_out does not block 0.0.0.0/0: model-written code can reach the internet")
        self.cfg = cfg
        self._api_key = api_key  # passed to the SDK only: never logged, never in stats or errors
        self._run_id = uuid.uuid4().hex
        self._slots = _Slots(cfg.max_concurrency)
        self._lock = threading.Lock()
        self._alive: set[str] = set()
        self._inflight: dict[asyncio.Task[list[RunResult]], asyncio.AbstractEventLoop] = {}
        counters = ("created", "killed", "max_alive", "retries", "infra_failures", "reaped", "chunks", "chunks_rerun")
        self._counts = dict.fromkeys(counters, 0)
        self._warned_rerun = False
        self._apart = False  # set when the sandboxes cannot give programs of one chunk namespaces of their own
        self._fatal_message: str | None = None
        self._creates_since_sweep = False
        self._rate_limited_until = 0.0
        self._exit_hook = False
        self._exiting = False

    # ------------------------------------------------------------------------------ interface

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        self._raise_if_fatal()
        if not programs:
            return []
        if not self._exit_hook:  # on Ctrl-C, TRL's reward loop thread may stop with our tasks pending: kill at exit
            self._exit_hook = True
            atexit.register(self._cleanup_at_exit)
        chunks = self._chunks(programs)
        error: BaseException | None = None
        async with async_connection_pool():  # creates in this batch share connections
            try:
                async with asyncio.TaskGroup() as group:  # the first fatal error cancels the rest
                    tasks = [group.create_task(self._run_one([programs[i] for i in c])) for c in chunks]
            except ExceptionGroup as failures:
                error = _first_error(failures)
        if error is not None:
            raise error  # outside the except block: one traceback, not the whole group
        by_index = {
            i: r for chunk, task in zip(chunks, tasks, strict=True) for i, r in zip(chunk, task.result(), strict=True)
        }
        results = [by_index[i] for i in range(len(programs))]
        failed = [r for r in results if r.is_infra_failure]
        if failed:
            log.warning(
                "superserve: %d of %d programs got no result after %d retries (%s)",
                len(failed),
                len(results),
                self.cfg.max_retries,
                failed[0].error,
            )
        return results

    async def aclose(self) -> None:
        """Cancel calls in flight (on any loop), kill every sandbox this backend knows of, sweep orphans."""
        pending = self._cancel_inflight()
        while pending():
            await asyncio.sleep(0.02)
        with self._lock:
            alive = list(self._alive)
        await asyncio.gather(*(self._kill(sandbox_id) for sandbox_id in alive))
        if self._creates_since_sweep:
            await self._reap({RUN_TAG: self._run_id})
        if self._exit_hook:
            atexit.unregister(self._cleanup_at_exit)
            self._exit_hook = False

    def stats(self) -> dict[str, float]:
        with self._lock:
            counts = {f"sandbox/{name}": float(n) for name, n in self._counts.items()}
            counts["sandbox/alive"] = float(len(self._alive))
        return counts

    # ---------------------------------------------------------------------- one sandbox's programs

    def _chunks(self, programs: Sequence[Program]) -> list[list[int]]:
        """Indices of the programs each sandbox runs: enough sandboxes to use the cap, no more."""
        n = len(programs)
        per_sandbox = 1 if self._apart else self.cfg.programs_per_sandbox
        size = max(1, min(per_sandbox, math.ceil(n / self.cfg.max_concurrency)))
        count = math.ceil(n / size)
        # Strided, not sliced: a GRPO group's completions sit side by side in the batch, so with at
        # least as many chunks as the group has completions, no two of them share a sandbox.
        budget = self.cfg.sandbox_timeout_s - SANDBOX_MARGIN_S - RUNNER_START_S
        chunks = []
        for start in range(count):
            chunk: list[int] = []
            total = 0.0
            for i in range(start, n, count):
                cost = _seconds(programs[i])
                if chunk and total + cost > budget:  # the sandbox would time out before this program ends
                    chunks.append(chunk)
                    chunk, total = [], 0.0
                chunk.append(i)
                total += cost
            chunks.append(chunk)
        return chunks

    async def _run_one(self, programs: list[Program]) -> list[RunResult]:
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            self._inflight[task] = asyncio.get_running_loop()
        try:
            return await self._run_with_retries(programs)
        finally:
            with self._lock:
                self._inflight.pop(task, None)

    async def _run_with_retries(self, programs: list[Program]) -> list[RunResult]:
        failures = 0
        while True:
            self._raise_if_fatal()
            pause = self._rate_limited_until - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
            try:
                async with self._slots.held():
                    if len(programs) == 1 and programs[0].inputs is None:
                        return [await self._attempt(programs[0])]
                    return await self._attempt_chunk(programs)
            except SandboxFatalError:
                raise
            except _RunnerFailed as error:
                if len(programs) == 1:  # per-test runs need the runner: no sandbox runs them otherwise
                    self._count("infra_failures")
                    return [RunResult(Outcome.SANDBOX_ERROR, error=f"the chunk's runner failed: {error}")]
                return await self._rerun_apart(programs, error)
            except Exception as error:
                if not _is_transient(error):
                    raise self._fatal(error) from error
                failures += 1
                if failures > self.cfg.max_retries:
                    self._count("infra_failures", len(programs))
                    failure = RunResult(
                        Outcome.SANDBOX_ERROR,
                        error=f"{_describe(error)}; gave up after {failures} attempts",
                    )
                    return [failure] * len(programs)
                self._count("retries")
                delay = self._backoff(failures)
                if isinstance(error, RateLimitError):  # everyone waits: more creates now would also be refused
                    self._rate_limited_until = max(self._rate_limited_until, time.monotonic() + delay)
                log.debug("superserve: attempt %d failed (%s); retrying in %.2fs", failures, _describe(error), delay)
                await asyncio.sleep(delay)

    async def _rerun_apart(self, programs: list[Program], error: _RunnerFailed) -> list[RunResult]:
        """Run a chunk's programs again, a sandbox each: whatever broke its runner breaks only itself."""
        self._count("chunks_rerun")
        if error.exit_code == NO_NAMESPACES_EXIT and not self._apart:
            # Programs of one chunk could then reach each other through the kernel: from now on, one each.
            self._apart = True
            log.warning(
                "superserve: these sandboxes cannot give each program namespaces of its own (the runner "
                "needs CAP_SYS_ADMIN); every program now gets a sandbox of its own"
            )
        level = logging.DEBUG if self._warned_rerun else logging.WARNING
        self._warned_rerun = True
        log.log(level, "superserve: a chunk of %d programs is run again one per sandbox (%s)", len(programs), error)
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self._run_with_retries([program])) for program in programs]
        return [task.result()[0] for task in tasks]

    async def _attempt_chunk(self, programs: list[Program]) -> list[RunResult]:
        script, key, header = chunk_script(programs, program_limits(self.cfg, processes=self.cfg.max_processes))
        wrapper_s = math.ceil(RUNNER_START_S + sum(_seconds(p) for p in programs))
        sandbox = await self._create()
        self._count("chunks")
        try:
            await sandbox.files.write(RUNNER_PATH, script)
            result = await sandbox.commands.run(
                f"timeout -s KILL {wrapper_s} python3 -I -S {RUNNER_PATH}",
                cwd="/tmp",
                env={KEY_ENV: key},
                timeout_seconds=math.ceil(max(self.cfg.command_timeout_s, wrapper_s + EXEC_MARGIN_S)),
            )
        finally:
            await self._kill(sandbox.id, sandbox)
        return _chunk_results(result, programs, header)

    async def _attempt(self, program: Program) -> RunResult:
        sandbox = await self._create()
        try:
            await sandbox.files.write(f"/tmp/{program.filename}", program.source)
            started = time.monotonic()
            result = await sandbox.commands.run(
                _wrapped(program),
                cwd="/tmp",
                timeout_seconds=math.ceil(max(self.cfg.command_timeout_s, program.timeout_s + EXEC_MARGIN_S)),
            )
            return program.kept(0, _to_run_result(result, program, time.monotonic() - started, self.cfg))
        finally:
            await self._kill(sandbox.id, sandbox)

    # ----------------------------------------------------------------------------- lifecycle

    async def _create(self) -> AsyncSandbox:
        if self._exiting:
            raise SandboxFatalError("the process is exiting; no new Superserve sandboxes")
        attempt = uuid.uuid4().hex
        self._creates_since_sweep = True
        cfg = self.cfg
        try:
            sandbox = await AsyncSandbox.create(
                name=cfg.name,
                from_template=cfg.from_template,
                timeout_seconds=cfg.sandbox_timeout_s,
                auto_delete_seconds=0,
                network=NetworkConfig(allow_out=list(cfg.allow_out) or None, deny_out=list(cfg.deny_out)),
                metadata={RUN_TAG: self._run_id, ATTEMPT_TAG: attempt},
                api_key=self._api_key,
                base_url=cfg.base_url,
            )
        except (asyncio.CancelledError, Exception) as error:
            if _may_have_created(error):  # the server may have made it although we never got its id
                await self._reap({ATTEMPT_TAG: attempt})
            raise
        self._track_created(sandbox.id)
        return sandbox

    async def _kill(self, sandbox_id: str, sandbox: AsyncSandbox | None = None) -> None:
        """Kill one sandbox, retrying transient faults; never raises, so it is safe in a finally."""
        failures = 0
        while True:
            try:
                if sandbox is not None and failures == 0:
                    await sandbox.kill()  # also closes the handle's own HTTP client
                else:  # kill() is a no-op on a handle whose first kill failed
                    await AsyncSandbox.kill_by_id(sandbox_id, api_key=self._api_key, base_url=self.cfg.base_url)
            except Exception as error:
                failures += 1
                if not _is_transient(error) or failures > self.cfg.max_retries:
                    self._warn("could not kill sandbox %s (%s); retrying at close", sandbox_id, _describe(error))
                    return
                self._count("retries")
                await asyncio.sleep(self._backoff(failures))
            else:
                self._track_killed(sandbox_id)
                return

    async def _reap(self, tags: dict[str, str]) -> None:
        """Kill every live sandbox that carries ``tags``: ones whose create answer never reached us."""
        try:
            found = await AsyncSandbox.list(metadata=tags, api_key=self._api_key, base_url=self.cfg.base_url)
        except Exception as error:
            self._warn("could not list sandboxes to clean up (%s); sweeping again at close", _describe(error))
            return
        if RUN_TAG in tags:
            self._creates_since_sweep = False
        for info in found:
            if info.status is not SandboxStatus.DELETED:
                if self._track_created(info.id):
                    self._count("reaped")
                await self._kill(info.id)

    def _cancel_inflight(self) -> Callable[[], bool]:
        """Cancel every program in flight, on whatever loop runs it; each then kills its own sandbox. Returns
        whether one may still be doing so (its loop must be running for that), for CANCEL_WAIT_S at most."""
        me: asyncio.Task | None = None
        with contextlib.suppress(RuntimeError):  # no loop runs in this thread (the exit hook's)
            me = asyncio.current_task()
        with self._lock:
            inflight = [(task, loop) for task, loop in self._inflight.items() if task is not me]
        for task, loop in inflight:
            if loop.is_running():
                loop.call_soon_threadsafe(task.cancel)
        deadline = time.monotonic() + CANCEL_WAIT_S
        return lambda: time.monotonic() < deadline and any(not t.done() and loop.is_running() for t, loop in inflight)

    def _cleanup_at_exit(self) -> None:
        """Last resort when aclose() was never awaited, as after Ctrl-C. With the sync SDK: once the interpreter
        is shutting down, asyncio cannot resolve host names (its executor is gone), while plain sockets still work."""
        self._exiting = True
        deadline = time.monotonic() + EXIT_CLEANUP_S
        pending = self._cancel_inflight()
        while pending():
            time.sleep(0.02)
        if self._creates_since_sweep:
            try:
                found = Sandbox.list(
                    metadata={RUN_TAG: self._run_id}, api_key=self._api_key, base_url=self.cfg.base_url
                )
            except Exception as error:
                log.error("superserve: could not list this run's sandboxes at exit (%s)", _describe(error))
                found = []
            for info in found:
                if info.status is not SandboxStatus.DELETED and self._track_created(info.id):
                    self._count("reaped")
        with self._lock:
            alive = list(self._alive)
        for sandbox_id in alive:
            self._kill_at_exit(sandbox_id, deadline)
        if self._alive:
            log.error("superserve: %d sandboxes could not be killed at exit: %s", len(self._alive), sorted(self._alive))

    def _kill_at_exit(self, sandbox_id: str, deadline: float) -> None:
        failures = 0
        while time.monotonic() < deadline:
            try:
                Sandbox.kill_by_id(sandbox_id, api_key=self._api_key, base_url=self.cfg.base_url)
            except Exception as error:
                failures += 1
                if not _is_transient(error) or failures > self.cfg.max_retries:
                    return
                time.sleep(self._backoff(failures))
            else:
                self._track_killed(sandbox_id)
                return

    # ------------------------------------------------------------------------------- bookkeeping

    def _track_created(self, sandbox_id: str) -> bool:
        with self._lock:
            if sandbox_id in self._alive:
                return False
            self._alive.add(sandbox_id)
            self._counts["created"] += 1
            self._counts["max_alive"] = max(self._counts["max_alive"], len(self._alive))
            return True

    def _track_killed(self, sandbox_id: str) -> None:
        with self._lock:
            if sandbox_id in self._alive:  # two killers may race (a task and aclose): count once
                self._alive.remove(sandbox_id)
                self._counts["killed"] += 1

    def _warn(self, message: str, *args: object) -> None:
        # At exit, async cleanup fails by design (asyncio cannot resolve hosts any more) and the exit hook redoes it.
        log.log(logging.DEBUG if self._exiting else logging.WARNING, "superserve: " + message, *args)

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def _backoff(self, failures: int) -> float:
        delay = min(self.cfg.backoff_max_s, self.cfg.backoff_base_s * 2 ** (failures - 1))
        return delay * random.uniform(0.5, 1.0)

    def _raise_if_fatal(self) -> None:
        if self._fatal_message is not None:
            raise SandboxFatalError(self._fatal_message)

    def _fatal(self, error: Exception) -> SandboxFatalError:
        if isinstance(error, AuthenticationError):
            message = (
                f"Superserve rejected the API key in {self.cfg.api_key_env} (HTTP {error.status_code}: {error}). "
                f"Check or replace the key ({API_KEY_DOCS}), or choose sandbox=local."
            )
        elif isinstance(error, SandboxError):
            hint = f" Does template {self.cfg.from_template!r} exist and is it built?" if self.cfg.from_template else ""
            message = f"Superserve failed with an error that retrying cannot fix ({_describe(error)}).{hint}"
        else:
            message = f"Unexpected error in the Superserve backend ({_describe(error)})"
        with self._lock:
            if self._fatal_message is None:
                self._fatal_message = message
        return SandboxFatalError(message)


def chunk_script(programs: Sequence[Program], limits: dict) -> tuple[str, str, str]:
    """The script a chunk's sandbox runs (harness/runner.py and its encrypted bundle, the programs with
    the runner's ``limits``), the one-time key it needs in KEY_ENV, and its result document's header line."""
    key, header = secrets.token_hex(32), f"codegrpo-batch {secrets.token_hex(16)}"
    bundle = {
        "header": header,
        "limits": limits,
        "document_bytes": EXEC_OUTPUT_BYTES,
        "seccomp": PROGRAM_FILTERS,  # by machine: the VM's is not known here
        "modules": RUNNER_MODULES,
        "programs": [p.request()[0] | {"source": p.source, "stdin": p.inputs and list(p.inputs)} for p in programs],
    }
    script = f"{RUNNER_MODULES['runner']}\nunpack({_encrypt(json.dumps(bundle).encode(), key)!r}, {KEY_ENV!r})\n"
    return script, key, header


def _seconds(program: Program) -> float:
    """What a program may take of its chunk: its runs' time, and their start and clean-up."""
    return program.wall_s + RUNNER_SLACK_S * (1 if program.inputs is None else max(1, len(program.inputs)))


class _RunnerFailed(Exception):
    """A chunk's runner gave no well-formed result for every program: not retried as a chunk."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Slots:
    """A counting semaphore shared by every event loop and thread of the process.

    asyncio.Semaphore belongs to one loop; the cap on live sandboxes must hold across TRL's reward
    loop thread, asyncio.run in commands, and anything else that calls run_many at the same time.
    """

    def __init__(self, capacity: int) -> None:
        self._free = capacity
        self._lock = threading.Lock()
        self._waiters: deque[asyncio.Future[None]] = deque()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def _acquire(self) -> None:
        with self._lock:
            if self._free > 0:
                self._free -= 1
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                queued = waiter in self._waiters
                if queued:
                    self._waiters.remove(waiter)
            if not queued:  # the slot was handed over as we were cancelled: pass it on
                self._release()
            raise

    def _release(self) -> None:
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                try:
                    waiter.get_loop().call_soon_threadsafe(_wake, waiter)
                    return
                except RuntimeError:  # its loop is closed, so nobody waits on it any more
                    continue
            self._free += 1


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _is_transient(error: BaseException) -> bool:
    # Network failures arrive as a SandboxError caused by an httpx error.
    return isinstance(error, (RateLimitError, ServerError, SandboxTimeoutError)) or (
        isinstance(error, SandboxError) and isinstance(error.__cause__, httpx.HTTPError)
    )


def _may_have_created(error: BaseException) -> bool:
    """Whether a failed create may still have made a sandbox (the request reached the server)."""
    if isinstance(error, asyncio.CancelledError):
        return True
    if isinstance(error.__cause__, (httpx.ConnectError, httpx.ConnectTimeout)):
        return False
    return _is_transient(error) and not isinstance(error, RateLimitError)


def _first_error(group: BaseExceptionGroup) -> BaseException:
    """The error to raise for a failed batch: the first fatal one, else the first of any kind."""
    fatal, _ = group.split(SandboxFatalError)
    first = (fatal or group).exceptions[0]
    while isinstance(first, BaseExceptionGroup):  # a group nested in the group: its own first
        first = first.exceptions[0]
    return first


def _describe(error: BaseException) -> str:
    status = getattr(error, "status_code", None)
    code = getattr(error, "code", None)
    details = ", ".join(str(x) for x in (f"HTTP {status}" if status else None, code) if x)
    return f"{type(error).__name__}: {error}" + (f" [{details}]" if details else "")


def _wrapped(program: Program) -> str:
    seconds = f"{program.timeout_s:.3f}".rstrip("0").rstrip(".")
    return f"timeout -s KILL {seconds} {shlex.join(program.argv)}"


def _to_run_result(
    result: CommandResult, program: Program, duration_s: float, cfg: SuperserveSandboxConfig
) -> RunResult:
    stdout, stderr = OutputCap(cfg.stdout_limit_bytes), OutputCap(cfg.stderr_limit_bytes)
    over = [
        cap.feed(text.encode("utf-8", "surrogatepass"))
        for cap, text in ((stdout, result.stdout), (stderr, result.stderr))
    ]
    code = result.exit_code
    killed = code == KILLED_EXIT and duration_s >= 0.95 * program.timeout_s  # the KILL wrapper fired
    return classify(
        code, stdout.text, stderr.text, duration_s, over_limit=result.truncated or any(over), timed_out=killed
    )


def _encrypt(data: bytes, key: str) -> str:
    """XOR with SHAKE-256 of a one-time key, as runner.unpack undoes it; base64 for the script."""
    stream = hashlib.shake_256(key.encode()).digest(len(data))
    return base64.b64encode(
        (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")
    ).decode()


def _chunk_results(result: CommandResult, programs: list[Program], header: str) -> list[RunResult]:
    """The runner's document as RunResults; anything but exactly one well-formed result per run fails."""
    head, _, body = result.stdout.partition("\n")
    if result.exit_code != 0 or result.truncated or head != header:
        tail = result.stderr.strip()[-300:]
        raise _RunnerFailed(
            f"exit status {result.exit_code}, truncated={result.truncated}, stderr: {tail!r}", result.exit_code
        )
    try:
        records = json.loads(body)
    except ValueError as error:
        raise _RunnerFailed(f"malformed results: {error}") from None
    if not isinstance(records, list) or len(records) != len(programs):
        raise _RunnerFailed(f"expected {len(programs)} results")
    # Every record is checked before any run is kept: a malformed chunk runs again, and nothing of it was judged.
    checked = [(program, _runs(record, program)) for program, record in zip(programs, records, strict=True)]
    del records
    results = []
    # Program.failed (a binary reward's fail-fast) is not applied: the chunk already ran every run in its VM,
    # which cannot tell a failing run (the expected outputs never go there), so every run is judged, as
    # without it; skipping the judging of the rest would save little and lose the monitor's evidence.
    for program, runs in checked:
        kept = [program.kept(index, _to_result(run)) for index, run in enumerate(runs)]
        results.append(program_result(program, kept, sum(run.duration_s for run in kept)))
    return results


_RUN_FIELDS: dict[str, type | tuple[type, ...]] = {
    "exit_code": (int, type(None)),
    "timed_out": bool,
    "budget_cut": bool,
    "over_limit": bool,
    "stdout": str,
    "stderr": str,
    "duration_s": (int, float),
}


def _runs(record: object, program: Program) -> list[dict]:
    """One program's runs from its record, {"runs": [...]}, one per input (one without inputs), checked,
    their outputs as bytes."""
    expected = 1 if program.inputs is None else len(program.inputs)
    runs = record.get("runs") if isinstance(record, dict) and record.keys() == {"runs"} else None
    if not isinstance(runs, list) or len(runs) != expected:
        raise _RunnerFailed(f"expected {expected} runs")
    for run in runs:
        if not (
            isinstance(run, dict)
            and run.keys() == _RUN_FIELDS.keys()
            and all(isinstance(run[k], t) for k, t in _RUN_FIELDS.items())
            and not isinstance(run["exit_code"], bool)
            and (run["exit_code"] is not None or run["timed_out"])  # only a run the budget never started
        ):
            raise _RunnerFailed("malformed result")
        try:  # the outputs come as base64 of their bytes
            run["stdout"], run["stderr"] = (base64.b64decode(run[name], validate=True) for name in ("stdout", "stderr"))
        except ValueError:
            raise _RunnerFailed("malformed output") from None
    return runs


def _to_result(run: dict) -> RunResult:
    """One checked run as a RunResult, its output decoded here, one run at a time."""
    return classify(
        run["exit_code"],
        run.pop("stdout").decode("utf-8", "replace"),
        run.pop("stderr").decode("utf-8", "replace"),
        float(run["duration_s"]),
        over_limit=run["over_limit"],
        timed_out=run["timed_out"],
        budget_cut=run["budget_cut"],
    )
