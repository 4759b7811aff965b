"""sandbox=ray: codegrpo's local sandbox on a Ray cluster's nodes, so that model-written code leaves the training
machine without a cloud account (docs/scaling.md has the design and its red teams).

Each of ``sandbox.actors`` Ray actors opens a LocalSandbox (bubblewrap, warm workers, every limit the local
sandbox has) on the node Ray places it on (``sandbox.resources`` keeps them off the GPU nodes) and runs its share
of ``sandbox.max_concurrency`` programs. Programs cross without their host-side callables: the Scorer's ``digest``
(which holds the expected outputs) and ``failed`` stay here, so expected outputs never leave the trainer and the
verdict is the trainer's; for fail-fast, a node reports each run as it is read and waits for the trainer's answer.

Every rank of a distributed launch (WORLD_SIZE > 1) uses one pool of named, detached actors, so the cap holds
across ranks (``sandbox.pool=<name>`` shares one on purpose, between jobs too). An actor knows its holders, (job,
rank) pairs: only its last holder kills it, and one whose holders' processes have all gone closes itself. Results
stream back program by program; where a chunk's actor dies or misses its deadline, it is replaced and the programs
it had not finished run once more on another actor, a second failure making them SANDBOX_ERROR (None, never a 0).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import ipaddress
import itertools
import logging
import math
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from functools import cache
from typing import Any

from codegrpo.config.sandbox import LocalSandboxConfig, RaySandboxConfig
from codegrpo.errors import SandboxFatalError, UsageError
from codegrpo.sandbox.base import Outcome, Program, RunResult, Runtime, SandboxBackend

RAY_EXTRA = "pip install -e '.[ray]' (an installed codegrpo: pip install 'codegrpo[ray]')"
RAY_SLACK_S = 30.0  # a chunk's deadline beyond its programs' own time: scheduling, transfer, a worker's start
RUN_OVERHEAD_S = 0.1  # a run's start and cleanup beyond its wall time (about 0.01 s measured here), per run
START_S = 120.0  # an actor's start: a worker process, codegrpo's imports, the sandbox's trivial program
LOCAL_OBJECT_STORE = 256 << 20  # address=local: programs and results are small; Ray's default is 30% of RAM
RAY_SETTINGS = ("address", "actors", "resources", "pool")  # the rest of the config is each node's local sandbox's
CONNECT_S = 5.0  # a host:port address must accept a connection this fast
NAME_FREE_S = 10.0  # a shared pool's actor name is free again this soon after its actor was killed
WATCH_S = 5.0  # a shared pool's actor checks this often whether its holders' processes are still alive
NAMESPACE = "codegrpo"  # the shared pools' actor names live in it, apart from any other application's
# A node waits this long at most for the trainer's judgment of a run (a round trip: milliseconds); well within
# protocol.ANSWER_GRACE_S, past which the run's answer would read as the runner's failure.
ANSWER_S = 3.0


@cache
def _actor_class() -> Any:
    import ray

    return ray.remote(num_cpus=0)(SandboxActor)


Item = tuple[int, int | None, int | None, RunResult]  # run_each's: (index, run, report, result)


class _Reports:
    """A run_each call's items for the caller (its results, and reports of runs), and the caller's answers by
    report number: whether each run failed."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.items: asyncio.Queue[Item | BaseException] = asyncio.Queue()
        self.answers: dict[int, concurrent.futures.Future[bool]] = {}
        self.numbers = itertools.count()
        self.latest: dict[tuple[int, int], int] = {}  # each run's last report
        self.over = threading.Event()

    def asking(self, index: int, program: Program) -> Program:
        """``program``, reporting each run as it is read and waiting for the caller's answer to it."""

        def digest(run_index: int, run: RunResult) -> RunResult:  # on the sandbox's thread
            report = self.latest[index, run_index] = next(self.numbers)
            waiting = self.answers[report] = concurrent.futures.Future()
            if self.over.is_set():  # the call ended as this run was read: nobody will answer
                waiting.cancel()
            self.loop.call_soon_threadsafe(self.items.put_nowait, (index, run_index, report, run))
            return dataclasses.replace(run, stdout="", stderr="")  # the caller has it: not sent twice

        def failed(run_index: int, _: RunResult) -> bool:
            report = self.latest[index, run_index]  # the run just digested: its report, this thread's
            try:
                # No answer in time (the caller gone): the runs go on, and the verdict is the same.
                with contextlib.suppress(concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                    return self.answers[report].result(timeout=ANSWER_S) is True
                return False
            finally:
                self.answers.pop(report, None)  # answered or given up: a late answer finds nothing

        return dataclasses.replace(program, digest=digest, failed=failed)


class SandboxActor:
    """One local sandbox on the node Ray placed this actor on."""

    def __init__(self, settings: dict[str, Any], runtimes: tuple[str, ...], pool: dict[str, Any]) -> None:
        self.settings, self.runtimes, self.pool = settings, runtimes, pool
        self.sandbox: SandboxBackend | None = None
        self.ready = asyncio.Event()  # a batch sent to a replacement still starting waits for its sandbox
        self.opening: asyncio.Future[tuple[str, int]] | None = None
        # The processes using this actor: each holder, "job/rank", by its Ray job (its driver, alive or not).
        self.holders: dict[str, str] = {}
        self.closing = False  # its last holder has left or gone: it takes no new one
        self.watching: asyncio.Future[None] | None = None
        self.made = time.monotonic()
        # Watched from the start (red team): a rank killed between making this actor and its start's arrival (a
        # worker's start: a second or more) never held it, and a detached actor nobody holds outlived everyone.
        with contextlib.suppress(RuntimeError):  # no running loop here: the first start watches it
            self.watching = asyncio.get_running_loop().create_task(self._watch())
        # run_each's calls: by report number, each run reported and waiting for the caller's answer
        self.answers: dict[str, dict[int, concurrent.futures.Future[bool]]] = {}

    async def start(self, holder: str, job: str, pool: dict[str, Any], siblings: list[str]) -> tuple[str, str, Any]:
        """Take ``holder`` (of Ray job ``job``) and open the sandbox once, however many ask: ("started", this
        node's name, this process's pid); ("closing", "", None) where it is going (ask its successor);
        ("differs", a setting, this pool's value) where ``pool``, the asker's settings, differ from this
        pool's and a live holder uses it. A replacement takes the holders of its ``siblings`` (the pool's other
        actors, by name): a rank that has not met it yet still holds the pool, and no other rank's leaving may
        kill it under that rank."""
        import ray

        self._prune()
        differing = [name for name in self.pool if self.pool[name] != pool.get(name)]
        if differing and self._abandoned():  # held by a job gone (a crash), or by none ever (its maker died):
            await self._end()  # its successor, with this job's settings
        if self.closing:
            return "closing", "", None
        if differing:
            return "differs", differing[0], self.pool[differing[0]]
        self.holders[holder] = job
        # By name, not by handle (red team): a handle of a dead actor whose maker has gone could not be read here,
        # so the replacement's start failed, and each chunk sent to it waited its deadline.
        asked: list[Any] = []
        for name in siblings:
            with contextlib.suppress(Exception):  # ValueError: no actor of that name now
                other = ray.get_actor(name, namespace=NAMESPACE)
                asked.append(asyncio.wait_for(asyncio.wrap_future(other.held.remote().future()), CONNECT_S))
        for held in await asyncio.gather(*asked, return_exceptions=True):
            if isinstance(held, dict):  # a dead or hung sibling holds nobody this actor must know
                self.holders |= held
        self._prune()
        if self.watching is None:
            self.watching = asyncio.ensure_future(self._watch())
        if self.opening is None:
            self.opening = asyncio.ensure_future(self._open())
        node, pid = await asyncio.shield(self.opening)
        return "started", node, pid

    def held(self) -> dict[str, str]:
        return dict(self.holders)

    async def leave(self, holder: str) -> int:
        """``holder`` is done with this actor; how many live holders still use it. At 0 it closes its
        sandbox, takes no new holder, and ends (the caller, its last holder, kills it too). One not holding it
        changes nothing (a rank leaving by name an actor just made, not yet started by its maker)."""
        if self.holders.pop(holder, None) is None:
            return len(self.holders) or 1
        self._prune()
        if not self.holders and not self.closing:
            await self._end()
        return len(self.holders)

    def _abandoned(self) -> bool:
        """No live holder: those it had have gone, or none came in RAY_SLACK_S since it was made (its maker
        died before its start arrived; a maker's start arrives within a moment of the actor's)."""
        return not self.holders and (self.opening is not None or time.monotonic() - self.made > RAY_SLACK_S)

    def _prune(self) -> None:
        """Forget the holders whose process is gone (a rank that crashed, or was killed, without leaving)."""
        if self.holders:
            alive = _alive(set(self.holders.values()))
            self.holders = {holder: job for holder, job in self.holders.items() if job in alive}

    async def _watch(self) -> None:
        """Close this actor once every holder's process has gone without leaving (a detached actor outlives
        them, and nobody else would); never while a live holder holds it."""
        while not self.closing:
            await asyncio.sleep(WATCH_S)
            self._prune()
            if self._abandoned() and not self.closing:
                await self._end()

    async def _end(self) -> None:
        """Close the sandbox and end this actor: its holders have left or gone (the callers have checked)."""
        import ray

        self.closing = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.close(), START_S)
        # A moment later, so that this call's answer leaves first; its last holder kills it at once anyway.
        actor = ray.get_runtime_context().current_actor
        asyncio.get_running_loop().call_later(1.0, functools.partial(ray.kill, actor, no_restart=True))

    async def _open(self) -> tuple[str, int]:
        """Open the sandbox (its trivial program of each runtime); (this node's name, this process's pid)."""
        import ray

        from codegrpo.sandbox.local import LocalSandbox

        node = f"{socket.gethostname()} (Ray node {ray.get_runtime_context().get_node_id()[:8]})"
        # Ray starts its workers at oom_score_adj 1000, which the sandbox's pid 1 (the runner) would inherit:
        # at the memory limit the kernel could then kill the runner, not the program (1000 of its own), and a
        # memory bomb would read as the sandbox's fault (None), not the program's (0). Back to the default.
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("0")
        try:
            sandbox = LocalSandbox(LocalSandboxConfig(**self.settings))
            sandbox.runtimes = tuple(map(Runtime, self.runtimes))
            await sandbox.__aenter__()
        except Exception as error:  # the node's own reason (no bubblewrap, too little memory), named
            raise SandboxFatalError(f"node {node}: {str(error).strip().splitlines()[0]}") from None
        self.sandbox = sandbox
        self.ready.set()
        return node, os.getpid()

    async def run_each(self, programs: list[Program], asking: list[bool], call: str) -> AsyncIterator[Item]:
        """Each program's result as it finishes, (index, None, None, result), a streaming call: the caller
        keeps what is done when this actor is lost, and no more than the programs in flight wait here. A
        program ``asking`` (fail-fast) also reports each run as it is read, (index, run, report, result),
        and waits for the caller's ``answer`` to that report on whether it failed before its runs go on
        (Program.failed): only the trainer judges a run. A report's number is new each time, so a late
        answer never reaches a run the sandbox ran again (a fresh sandbox's rerun of the program)."""
        await self.ready.wait()
        sandbox = self.sandbox
        assert sandbox is not None
        reports = _Reports()
        self.answers[call] = reports.answers

        async def one(index: int, program: Program) -> None:
            try:
                [result] = await sandbox.run_many([program])  # run_many: under the sandbox's semaphore
                reports.items.put_nowait((index, None, None, result))
            except BaseException as error:
                reports.items.put_nowait(error)
                raise

        running = [
            asyncio.ensure_future(one(index, reports.asking(index, program) if asking[index] else program))
            for index, program in enumerate(programs)
        ]
        try:
            finished = 0
            while finished < len(programs):
                item = await reports.items.get()
                if isinstance(item, BaseException):
                    raise item
                finished += item[1] is None
                yield item
        finally:  # cancelled (a missed deadline): no program of the call is left running, none waits
            for task in running:
                task.cancel()
            reports.over.set()
            for waiting in list(self.answers.pop(call).values()):
                waiting.cancel()

    def answer(self, call: str, report: int, failed: bool) -> None:
        """The caller's judgment of a run ``run_each`` reported: whether it failed."""
        waiting = self.answers.get(call, {}).get(report)
        if waiting is not None:
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # the call is over: cancelled
                waiting.set_result(failed)

    def limits(self) -> list[tuple[str, str, str]]:
        return [] if self.sandbox is None else self.sandbox.limits()

    async def close(self) -> None:
        sandbox, self.sandbox = self.sandbox, None  # once, however many ask
        if sandbox is not None:
            await sandbox.aclose()


def _check_reachable(address: str) -> None:
    """UsageError in seconds where a host:port address answers nothing (ray.init waits minutes for it)."""
    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"sandbox.address={address} must be auto, local, ray://host:port or host:port")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_S).close()
    except OSError as error:
        raise UsageError(
            f"sandbox.address={address}: nothing answers there ({error.strerror or error}); start the cluster's "
            "head with `ray start --head` (docs/scaling.md), or sandbox.address=local for a Ray instance of "
            "this process's own"
        ) from None


def shares(total: int, parts: int) -> list[int]:
    """``total`` programs at once split among ``parts`` actors, as evenly as whole numbers go (each at least 1)."""
    return [max(1, total // parts + (index < total % parts)) for index in range(parts)]


def _alive(jobs: set[str]) -> set[str]:
    """Those of ``jobs`` (Ray job ids: each a holder's driver process) still alive; all of them where the GCS
    cannot say (a pool is then kept, never closed under a holder)."""
    try:
        from ray._private.state import state  # what ray.nodes() reads; the job table has no public reader

        dead = {job["JobID"] for job in state.job_table() if job["IsDead"]}
    except Exception:
        return jobs
    return jobs - dead


def _ray_job() -> str:
    """This process's Ray job (a driver's, whose end the GCS records): what a pool's actor checks a holder by."""
    import ray

    return str(ray.get_runtime_context().get_job_id())


class _Unplaced(Exception):
    """No live node of the cluster can take a sandbox actor."""


def _loopback(address: str) -> bool:
    """Whether ``address`` names no one machine (single-node launches use 127.0.0.1 on every machine)."""
    if address in ("", "localhost"):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


@dataclasses.dataclass(frozen=True)
class Job:
    """The training processes one pool serves: this one alone, or every rank of a distributed launch."""

    rank: int = 0
    world: int = 1
    pool: str | None = None  # the shared pool's name; None: actors of this process's own
    name: str = ""  # this job's, apart from any other job's that may share the pool (sandbox.pool)

    @property
    def holder(self) -> str:
        return f"{self.name}/{self.rank}"

    @classmethod
    def from_environment(cls, pool: str | None = None) -> Job:
        """The job torchrun or accelerate started this process in, its ranks sharing what names it: the master's
        address and port, the run id and the run dir, and the host where the master is a loopback address (two
        single-node launches on two machines have the same 127.0.0.1:29500 and run id). ``pool``: sandbox.pool,
        a pool named on purpose."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            name = f"{socket.gethostname()}:{os.getpid()}"
            return cls(0, 1, f"sandbox-{pool}" if pool else None, name)
        master = os.environ.get("MASTER_ADDR", "")
        parts = [master, os.environ.get("MASTER_PORT", ""), os.environ.get("TORCHELASTIC_RUN_ID", "")]
        parts += [os.environ.get("CODEGRPO_RUN_DIR", ""), socket.gethostname() if _loopback(master) else ""]
        name = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
        return cls(int(os.environ.get("RANK", "0")), world, f"sandbox-{pool or name}", name)


def _remote(program: Program) -> Program:
    """What crosses to a node: the program without the host's callables (the expected outputs stay here)."""
    return dataclasses.replace(program, digest=None, failed=None)


def _digested(program: Program, result: RunResult, reported: dict[int, RunResult]) -> RunResult:
    """A node's result kept as the host keeps a run (Program.kept), run by run; a run the node reported as it
    was read (``reported``, kept then) comes back without its output, and what was kept of it stands."""
    if program.inputs is None or not result.runs:
        return program.kept(0, result) if program.inputs is None else result
    runs = [
        run
        if run.outcome is Outcome.SKIPPED  # never ran: nothing to keep, as in the local sandbox
        else reported[i]
        if i in reported and run.outcome is not Outcome.SANDBOX_ERROR
        else program.kept(i, run)
        for i, run in enumerate(result.runs)
    ]
    return dataclasses.replace(result, runs=tuple(runs))


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """ray.init on the main thread sets SIGTERM to sys.exit: a preempted run would stop with no checkpoint."""
    kept = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        yield
    finally:
        if kept is not None:  # None: off the main thread, or a handler set outside Python (not reinstallable)
            signal.signal(signal.SIGTERM, kept)


class RaySandbox(SandboxBackend):
    """The local sandbox on Ray actors; see the module's docstring."""

    def __init__(self, cfg: RaySandboxConfig) -> None:
        try:
            import ray  # noqa: F401 - the extra, checked before anything starts
        except ImportError:
            raise UsageError(f"sandbox=ray needs the ray package, which is not installed: {RAY_EXTRA}") from None
        self.cfg = cfg
        self.job = Job.from_environment(cfg.pool)
        if self.job.world > 1 and cfg.address == "local":
            raise UsageError(
                f"sandbox.address=local starts a Ray instance in each of the {self.job.world} processes, so "
                "sandbox.max_concurrency would hold per process: start one with `ray start --head` and use "
                "sandbox.address=auto (docs/scaling.md)"
            )
        self._shares = shares(cfg.max_concurrency, cfg.actors)
        self._actors: list[Any] = []
        self._nodes: list[str] = []
        self._pids: list[int] = []
        self._ready: list[bool] = []  # by actor: started (False for a replacement until it has)
        self._started_ray = False
        self._counts: Counter[str] = Counter()

    # -- the cluster ---------------------------------------------------------------------------------

    def _connect(self) -> None:
        import ray

        if not ray.is_initialized():  # else the caller's own Ray (a script's, a test's): used, and left running
            self._start_ray()
        if not self._placeable():  # its actors would never be placed
            raise UsageError(
                f"sandbox.resources={dict(self.cfg.resources or {})}: no node of the Ray cluster offers them, so no "
                "sandbox actor could be placed (start CPU nodes with `ray start --resources='{\"sandbox\": 8}'`, "
                "docs/scaling.md)"
            )

    def _start_ray(self) -> None:
        import ray

        address = self.cfg.address
        _check_reachable(address)
        # Ray's start-up lines (its token notice, "Started a local Ray instance") would precede a one-line error.
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
        if address == "local":
            options["object_store_memory"] = LOCAL_OBJECT_STORE
        try:
            with _signal_handlers_kept():
                ray.init(address=address, **options)  # "local": a new instance, whatever RAY_ADDRESS says
        except (ConnectionError, ValueError, RuntimeError, TimeoutError) as error:
            why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise UsageError(
                f"sandbox.address={address}: no Ray cluster to join ({why}); start one with `ray start --head` "
                "(docs/scaling.md), or sandbox.address=local for a Ray instance of this process's own"
            ) from None
        self._started_ray = True

    def _placeable(self) -> bool:
        """Whether a live node offers what one actor asks for (in all, used or not): else Ray never places it."""
        import ray

        wanted = dict(self.cfg.resources or {})
        if not wanted:
            return True
        offered = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
        return any(all(node.get(name, 0) >= amount for name, amount in wanted.items()) for node in offered)

    def _pool_settings(self) -> dict[str, Any]:
        """What a shared pool's users must agree on: every setting but where the cluster is, and the runtimes."""
        settings = {
            f"sandbox.{field.name}": getattr(self.cfg, field.name)
            for field in dataclasses.fields(self.cfg)
            if field.name not in ("_target_", "address", "pool")
        }
        return settings | {
            "sandbox.resources": dict(self.cfg.resources or {}),
            "runtimes": tuple(map(str, self.runtimes)),
        }

    def _new_actor(self, index: int) -> Any:
        """Actor ``index`` of the pool: a new one, or, in a shared pool, the one another rank made first."""
        settings = {
            field.name: getattr(self.cfg, field.name)
            for field in dataclasses.fields(self.cfg)
            if field.name not in RAY_SETTINGS
        }
        settings |= {"_target_": "codegrpo.sandbox.local.LocalSandbox", "max_concurrency": self._shares[index]}
        # The actor's own concurrency stays Ray's async default (1000 calls): its sandbox's semaphore is the cap.
        options: dict[str, Any] = {}
        if self.cfg.resources:
            options["resources"] = dict(self.cfg.resources)
        if self.job.pool is not None:
            # Detached: it outlives the rank that made it (another may still use it); its last holder ends it.
            options |= {"name": f"{self.job.pool}-{index}", "namespace": NAMESPACE, "get_if_exists": True}
            options["lifetime"] = "detached"
        return _actor_class().options(**options).remote(settings, tuple(map(str, self.runtimes)), self._pool_settings())

    def _starting(self, actor: Any, index: int) -> Any:
        """``actor``'s start as this job's rank: a Ray future. A replacement takes the pool's holders from the
        other actors."""
        siblings = []  # by name: the pool's other actors, whichever now has each name
        if self._nodes and self.job.pool is not None:
            siblings = [f"{self.job.pool}-{other}" for other in range(len(self._shares)) if other != index]
        return actor.start.remote(self._holder(), _ray_job(), self._pool_settings(), siblings).future()

    def _holder(self) -> str:
        """This rank as a holder: its job's (job, rank) and its Ray job. Two live processes never share one (red
        team): two jobs of one automatic name (one host name), or pids alike in containers, had one holder, and
        the first to leave killed the actors under the other."""
        return f"{self.job.holder}@{_ray_job()}"

    async def _start(self, index: int) -> tuple[str, int]:
        """Start actor ``index`` (found or made); where the one found is closing, its successor."""
        loop = asyncio.get_running_loop()
        until = loop.time() + START_S
        while True:
            state, *answer = await self._started(self._actors[index], index)
            if state == "started":
                node, pid = answer
                return node, pid
            if state == "differs":
                setting, theirs = answer
                pool = f"sandbox.pool={self.cfg.pool}" if self.cfg.pool else f"the sandbox pool {self.job.pool}"
                raise UsageError(
                    f"{pool} is in use with {setting}={theirs!r}, and this job has {setting}="
                    f"{self._pool_settings()[setting]!r}: give it the same, or a pool of its own (another "
                    "sandbox.pool, or none)"
                )
            if loop.time() > until:
                raise SandboxFatalError(f"sandbox actor {self.job.pool}-{index} was still closing after {START_S:g} s")
            await asyncio.sleep(0.2)  # its name is free again once it has ended
            self._actors[index] = self._new_actor(index)

    async def _started(self, actor: Any, index: int) -> tuple[str, str, Any]:
        import ray

        try:
            return await asyncio.wait_for(asyncio.wrap_future(self._starting(actor, index)), START_S)
        except ray.exceptions.RayTaskError as error:  # the actor's own one line: "node <name>: <why>"
            cause = getattr(error, "cause", None)
            raise SandboxFatalError(str(cause) if cause is not None else str(error).strip().splitlines()[-1]) from None
        except ray.exceptions.RayError as error:  # killed while starting (a node lost, or replaced again)
            raise SandboxFatalError(f"a sandbox actor died while it started: {type(error).__name__}") from None
        except TimeoutError:
            raise SandboxFatalError(
                f"a sandbox actor did not start within {START_S:g} s: no node can place it "
                f"(sandbox.resources={dict(self.cfg.resources or {})}), or the cluster is out of workers"
            ) from None

    async def _ensure_started(self) -> None:
        if self._actors:
            return
        self._connect()
        self._actors = [self._new_actor(index) for index in range(len(self._shares))]
        started = await asyncio.gather(
            *(self._start(index) for index in range(len(self._actors))), return_exceptions=True
        )
        failed = [outcome for outcome in started if isinstance(outcome, BaseException)]
        if failed:
            await self.aclose()
            raise failed[0]
        self._nodes = [node for node, _ in started]  # type: ignore[misc]
        self._pids = [pid for _, pid in started]  # type: ignore[misc]
        self._ready = [True] * len(self._actors)

    async def _replace(self, index: int, failed: Any) -> None:
        """A fresh actor in the place of ``failed``, which died or stopped answering; nothing where another chunk
        has replaced it already (no await between the check and the swap: one replacement an actor)."""
        import ray

        if self._actors[index] is not failed:
            return
        ray.kill(failed, no_restart=True)
        fresh = self._actors[index] = self._new_actor(index)
        self._ready[index] = False
        self._counts["ray_replaced"] += 1
        # A shared pool's name outlives a killed actor for a moment: until it is free, the name finds the failed one.
        until = time.monotonic() + NAME_FREE_S
        while fresh._actor_id == failed._actor_id and time.monotonic() < until:
            await asyncio.sleep(0.1)
            fresh = self._actors[index] = self._new_actor(index)
        # Started, not awaited: the retry goes on at once (a batch sent to the replacement waits for its sandbox),
        # and the start goes on whether this call's event loop does or not.
        self._starting(fresh, index).add_done_callback(functools.partial(self._restarted, index, fresh))

    def _restarted(self, index: int, actor: Any, started: concurrent.futures.Future) -> None:
        """Where a replacement runs, once it has started (called on Ray's thread)."""
        if index >= len(self._actors) or self._actors[index] is not actor:  # replaced again, or closed
            return
        try:
            state, node, pid = started.result()
        except Exception:  # its batches then fail as lost, and come back as infrastructure errors
            state, node, pid = "failed", "", None
        if state != "started":
            self._counts["ray_replace_failed"] += 1
            return
        self._nodes[index], self._pids[index], self._ready[index] = node, pid, True

    # -- running -------------------------------------------------------------------------------------

    async def check(self) -> None:
        await self._ensure_started()
        await super().check()

    def _deadline(self, programs: Sequence[Program], share: int) -> float:
        """The most a chunk can take on an actor of ``share`` programs at once: its rounds of the slowest program's
        wall time (behind every rank's chunk of the same size, in a shared pool), each run's start and cleanup
        beside it (RUN_OVERHEAD_S), and the slack."""
        rounds = math.ceil(len(programs) * self.job.world / share)
        runs = max(len(program.inputs or ()) or 1 for program in programs)
        return rounds * max(program.wall_s + RUN_OVERHEAD_S * runs for program in programs) + RAY_SLACK_S

    async def _on_actor(self, actor: Any, programs: list[Program], deadline: float, done: dict[int, RunResult]) -> None:
        """Run ``programs`` on ``actor``, each result digested into ``done`` (by index) as it comes back; raises
        where the actor is lost or misses ``deadline``, ``done`` then holding what had finished."""
        import ray

        call = os.urandom(8).hex()
        # Fail-fast: a node asks the host, run by run, whether such a program's runs go on.
        asking = [program.inputs is not None and program.failed is not None for program in programs]
        stream = actor.run_each.options(num_returns="streaming").remote(
            [_remote(program) for program in programs], asking, call
        )
        reported: dict[int, dict[int, RunResult]] = {}  # by program, each run the node reported, as kept here

        async def receive() -> None:
            async for ref in stream:
                index, run_index, report, result = await ref
                if not (isinstance(index, int) and 0 <= index < len(programs)) or index in done:
                    raise ValueError(f"an actor answered for program {index!r}")  # its fault, never a program's
                program = programs[index]
                if run_index is None:
                    done[index] = _digested(program, result, reported.pop(index, {}))
                    continue
                if not (asking[index] and isinstance(run_index, int) and 0 <= run_index < len(program.inputs or ())):
                    raise ValueError(f"an actor reported run {run_index!r} of program {index}")
                kept = reported.setdefault(index, {})[run_index] = program.kept(run_index, result)
                actor.answer.remote(call, report, program.fails_at(run_index, kept))  # the node waits
            if len(done) < len(programs):
                raise ValueError(f"an actor ended with {len(programs) - len(done)} programs unanswered")

        try:
            await asyncio.wait_for(receive(), deadline)
        except BaseException:  # a missed deadline, a lost actor, or this call cancelled: the node stops the call,
            with contextlib.suppress(Exception):  # else its runs would each wait ANSWER_S for no answer (red team)
                ray.cancel(stream)
            raise

    async def _chunk(self, index: int, programs: list[Program]) -> list[RunResult]:
        """A chunk on its actor; the programs it had not finished once more on another where the actor dies or
        misses its deadline; then those left are errors."""
        import ray

        # RayError: every failure of Ray's (an actor, a node, an object or its owner lost), never a program's.
        lost = (ray.exceptions.RayError, TimeoutError, ValueError, _Unplaced)
        kept: dict[int, RunResult] = {}
        why = ""
        for attempt, place in enumerate((index, (index + 1) % len(self._actors))):
            left = [i for i in range(len(programs)) if i not in kept]
            actor, done = self._actors[place], dict[int, RunResult]()
            # A retry may wait behind the other actor's own chunk: twice the time.
            deadline = self._deadline([programs[i] for i in left], self._shares[place]) * (1 + attempt)
            try:
                # A replacement no live node can take (its node lost, and no other offers the resources) would
                # hold the chunk to its deadline: minutes, for a place Ray already knows it cannot give.
                if not self._ready[place] and not self._placeable():
                    raise _Unplaced(f"no live node offers sandbox.resources={dict(self.cfg.resources or {})}")
                await self._on_actor(actor, [programs[i] for i in left], deadline, done)
            except lost as error:
                self._counts["ray_retried" if attempt == 0 else "ray_lost"] += len(left) - len(done)
                why = f"{type(error).__name__} on node {self._nodes[place]}"
                if not isinstance(error, _Unplaced):  # a replacement waiting for a place: kept for one
                    await self._replace(place, actor)
            kept |= {left[i]: result for i, result in done.items()}
            if len(kept) == len(programs):
                return [kept[i] for i in range(len(programs))]
        failed = RunResult(Outcome.SANDBOX_ERROR, error=f"sandbox=ray: the program was lost twice ({why})")
        return [kept.get(i, failed) for i in range(len(programs))]

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        if not programs:
            return []
        await self._ensure_started()
        # Contiguous chunks in proportion to each actor's share of the concurrency.
        total = sum(self._shares)
        bounds = [0]
        for share in self._shares:
            bounds.append(min(len(programs), bounds[-1] + math.ceil(len(programs) * share / total)))
        chunks = [(i, list(programs[lo:hi])) for i, (lo, hi) in enumerate(itertools.pairwise(bounds)) if hi > lo]
        done = await asyncio.gather(*(self._chunk(index, chunk) for index, chunk in chunks))
        self._counts["ray_programs"] += len(programs)
        return [result for results in done for result in results]

    # -- reporting and closing -----------------------------------------------------------------------

    def stats(self) -> dict[str, float]:
        return {f"sandbox/{name}": float(count) for name, count in sorted(self._counts.items())}

    def limits(self) -> list[tuple[str, str, str]]:
        if not self._actors:
            return []
        import ray

        where = f"Ray actors on {', '.join(sorted(set(self._nodes)))}"
        # Each actor's own rows: its local sandbox's limits, "at once" being its share.
        rows = ray.get(self._actors[0].limits.remote(), timeout=START_S)
        split = " + ".join(map(str, self._shares))
        total = f"{sum(self._shares)} programs at once ({split}, one share an actor; the rows below are one actor's)"
        if self.job.pool is not None:
            total += f", for all {self.job.world} ranks of this job together"
        return [("actors", f"{len(self._actors)}: {total}", where), *rows]

    async def _leave(self, actor: Any) -> bool:
        """Leave ``actor``; whether to kill it: this rank was its last holder (it has closed its sandbox), or it
        answers nothing (it serves no one). Never where another live holder uses it, whatever the timing."""
        import ray

        try:
            holding = await asyncio.wait_for(asyncio.wrap_future(actor.leave.remote(self._holder()).future()), START_S)
        except TimeoutError:
            return True
        except ray.exceptions.RayError:  # dead already
            return False
        return holding == 0

    def _held(self) -> list[Any]:
        """The actors this rank holds: its own handles, and in a shared pool whichever actor now has each name (a
        replacement another rank made, which took this rank as a holder from its siblings)."""
        import ray

        actors = list(self._actors)
        if self.job.pool is not None:
            for index, ours in enumerate(self._actors):
                with contextlib.suppress(ValueError):  # no actor of that name now
                    named = ray.get_actor(f"{self.job.pool}-{index}", namespace=NAMESPACE)
                    if named._actor_id != ours._actor_id:
                        actors.append(named)
        return actors

    async def aclose(self) -> None:
        if self._actors:
            import ray

            actors = self._held()
            # A replacement no live node can place runs nothing and would answer nothing: a leave would wait START_S.
            unplaced = [a for a, ready in zip(self._actors, self._ready, strict=False) if not ready]
            if unplaced and not self._placeable():
                actors = [actor for actor in actors if actor not in unplaced]
                for actor in unplaced:
                    ray.kill(actor, no_restart=True)
            ends = await asyncio.gather(*(self._leave(actor) for actor in actors))
            for actor, end in zip(actors, ends, strict=True):
                if end:
                    ray.kill(actor, no_restart=True)
            self._actors = []
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False
