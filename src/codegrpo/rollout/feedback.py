"""rollout=feedback: the model sees what its code did, revises it, and its last code is scored on hidden tests.

One episode per completion, turn by turn: the model writes code; codegrpo runs it on the problem's PUBLIC
tests in the configured sandbox (codegrpo.data.public_tests); the failing tests (input, expected output if
``show_expected``, what the code printed or raised, cut to ``truncate_chars``) go back as the next user
message, and the model revises. An episode stops when every public test passes, after ``max_turns`` turns,
or when the next turn would not fit in ``trainer.max_completion_length``. A problem without public tests
gets one turn, as rollout=single. The last turn's code is scored on the HIDDEN tests by code_reward (and
hack_penalty) through ``score_final_code``: the same verdict, statuses, partial credit and monitor as a
single turn. The rollout never holds a hidden test: it is built from ``public(problem)`` alone.

The engine is the trainer's and evaluation's alike: ``play`` takes a ``generate`` function (token-id
prompts -> completions); codegrpo.train.rollout_func binds it to TRL's GRPOTrainer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import re
import statistics
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codegrpo.config.choices import Form
from codegrpo.config.schema import MAX_SHOWN_CHARS, RolloutConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.errors import UsageError
from codegrpo.reward.extraction import extract_code
from codegrpo.reward.monitor import without_audit_lines
from codegrpo.reward.programs import build_program
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status, Verdict, clean_text, envelope, score_io, show_value
from codegrpo.sandbox.base import Outcome, RunResult

log = logging.getLogger(__name__)


# -- the public tests, run --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublicRun:
    """One public test's run, judged on the host."""

    status: Status
    detail: str  # the verdict's reason; for a wrong answer it quotes the expected output
    got: str  # what the code printed (stdin/stdout) or returned (call form), cut to MAX_SHOWN_CHARS
    error: str  # why it failed when it did not finish cleanly: the end of stderr, or the harness's report


@dataclass(frozen=True)
class PublicResult:
    """A code's verdict on a problem's public tests and each test's run (None: it did not run)."""

    verdict: Verdict
    runs: tuple[PublicRun | None, ...] = ()

    @property
    def passed(self) -> bool:
        return self.verdict.status is Status.PASSED


def _got(problem: Problem, run: RunResult) -> str:
    if problem.form is Form.call:
        early, value = envelope(run)
        return "" if early is not None else show_value(value, MAX_SHOWN_CHARS)
    return run.stdout[:MAX_SHOWN_CHARS]


class _Collected:
    """A program's public runs, judged as the sandbox returns each (its ``digest``): the host keeps a cut copy."""

    def __init__(self, scorer: Scorer, problem: Problem) -> None:
        self.scorer = scorer
        self.problem = problem
        self.runs: dict[int, PublicRun] = {}

    def digest(self, index: int, run: RunResult) -> RunResult:
        run = without_audit_lines(run)  # the monitor's tokens are never shown to the model
        verdict = self.scorer.judge_run(self.problem, index, run)
        try:
            got = _got(self.problem, run)
        except Exception:  # what a run shows never costs it its verdict
            got = ""
        stderr = run.stderr.strip()
        error = verdict.detail if self.problem.form is Form.call or not stderr else stderr[-MAX_SHOWN_CHARS:]
        self.runs[index] = PublicRun(verdict.status, verdict.detail, clean_text(got), clean_text(error))
        return dataclasses.replace(run, stdout="", stderr="")

    def result(self, result: RunResult) -> PublicResult:
        for index, run in enumerate(result.runs):  # a backend that does not digest (a user's own)
            if index not in self.runs and run.outcome is not Outcome.SANDBOX_ERROR:
                self.digest(index, run)
        total = len(self.problem.tests)

        def failure(index: int, _: RunResult) -> tuple[Status, str] | None:
            run = self.runs.get(index)
            if run is None:
                return Status.ERROR, "did not run"
            return None if run.status is Status.PASSED else (run.status, run.detail)

        verdict = score_io(result, total, failure, self.scorer.partial)
        return PublicResult(verdict, tuple(self.runs.get(index) for index in range(total)))


async def run_public(scorer: Scorer, problems: Sequence[Problem], codes: Sequence[str]) -> list[PublicResult]:
    """Each code run on its problem's tests (``problems`` are public problems: ``public(problem)``), in the
    scorer's sandbox with its limits; identical (problem, code) pairs run once."""
    keys = [(problem.id, code) for problem, code in zip(problems, codes, strict=True)]
    by_key = dict(zip(keys, problems, strict=True))
    unique = [key for key in by_key if key[1].strip() and by_key[key].tests]
    collected = [_Collected(scorer, by_key[key]) for key in unique]
    programs = [
        dataclasses.replace(
            build_program(c.problem, code, scorer.language, scorer.timeout_s, scorer.budget_s), digest=c.digest
        )
        for c, (_, code) in zip(collected, unique, strict=True)
    ]
    results = await scorer.sandbox.run_many(programs) if programs else []
    judged = {key: c.result(result) for key, c, result in zip(unique, collected, results, strict=True)}
    no_code = PublicResult(Verdict(Status.NO_CODE, 0.0))
    return [judged.get(key, no_code) for key in keys]


# -- the feedback message -----------------------------------------------------------------------------------------

_WHAT = {
    Status.FAILED: "wrong answer",
    Status.ERROR: "error",
    Status.TIMEOUT: "timed out",
}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n... ({len(text) - limit} more characters)"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"... ({len(text) - limit} characters before)\n{text[-limit:]}"


def _block(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text.rstrip(chr(10)) if text.strip() else '(nothing)'}\n{fence}"


def feedback_message(
    tests: Sequence[IOTest], result: PublicResult, settings: RolloutConfig, *, call: bool = False, fence: str = "python"
) -> str:
    """The user message that shows a turn's results on the public ``tests`` (all it is given: it cannot show
    a hidden test): how many passed, then up to ``max_failures`` failing tests, each with its input, its
    expected output (``show_expected``), what the code printed or returned and its error, each cut to
    ``truncate_chars``."""
    ask = f"Fix the code and reply with the whole corrected program in one ```{fence} code block."
    if result.verdict.status is Status.NO_CODE:
        return f"No code was found in your reply. {ask}"
    limit = settings.truncate_chars
    failing = [(index, run) for index, run in enumerate(result.runs) if run is None or run.status is not Status.PASSED]
    total = len(tests)
    parts = [
        f"Your code was run on the {total} public test{'s' if total != 1 else ''}: "
        f"{total - len(failing)} passed, {len(failing)} failed."
    ]
    if not failing and result.verdict.detail:  # the program as a whole failed (a sandbox fault, say)
        parts.append(f"Error: {_tail(result.verdict.detail, limit)}")
    for index, run in failing[: settings.max_failures]:
        what = "did not run" if run is None else _WHAT.get(run.status, run.status.value)
        lines = [
            f"Test {index + 1}: {what}.",
            "Input" + (" (the arguments, as JSON)" if call else "") + ":",
            _block(_cut(tests[index].input, limit)),
        ]
        if settings.show_expected:
            wanted = "Expected " + ("return value" if call else "output") + ":"
            lines += [wanted, _block(_cut(tests[index].output, limit))]
        if run is not None and run.status is Status.FAILED:
            lines += ["Your code " + ("returned" if call else "printed") + ":", _block(_cut(run.got, limit))]
            if settings.show_expected and run.detail:
                lines.append(f"First difference: {_cut(run.detail, limit)}")
        elif run is not None:
            lines += ["Error:", _block(_tail(run.error, limit))]
        parts.append("\n".join(lines))
    if len(failing) > settings.max_failures:
        hidden_count = len(failing) - settings.max_failures
        parts.append(f"({hidden_count} more failing test{'s' if hidden_count != 1 else ''} not shown.)")
    parts.append(ask)
    return "\n\n".join(parts)


# -- the episodes -------------------------------------------------------------------------------------------------

Generate = Callable[[list[list[int]]], tuple[list[list[int]], list[list[float]] | None]]


@dataclass
class Episode:
    """One completion's turns: its tokens (model and feedback), and what each turn's code did."""

    problem: Problem  # public tests only
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # each turn's reply, decoded
    codes: list[str] = field(default_factory=list)  # each turn's code
    public: list[PublicResult | None] = field(default_factory=list)  # each turn's; None: no public tests
    messages: list[str] = field(default_factory=list)  # the feedback messages
    feedback_tokens: int = 0
    cut: bool = False  # stopped by max_completion_length (or the context): a turn or its feedback did not fit
    done: bool = False

    @property
    def fault(self) -> bool:
        """A sandbox failure stopped the episode: its final code is not scored (reward None)."""
        return any(r is not None and r.verdict.status is Status.INFRA for r in self.public)

    def add(self, ids: Sequence[int], mask: int, logprobs: Sequence[float] | None) -> None:
        self.completion_ids += ids
        self.env_mask += [mask] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)


class _Suffix:
    """The tokens that close a model turn (after its EOS) and pose a user message, then open the model's next
    turn: rendered by the chat template around a dummy exchange, as TRL renders a tool result."""

    def __init__(self, tokenizer: Any, eos: set[int], template: dict[str, Any]) -> None:
        self.tokenizer, self.template = tokenizer, template
        head = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
        self.head = head
        prefix = self._ids(head, False)
        ends = [i for i, token in enumerate(prefix) if token in eos]
        self.prefix = prefix[: ends[-1] + 1] if ends else prefix
        self.close = prefix[ends[-1] : ends[-1] + 1] if ends else []  # ends a turn that stopped without it
        # The tokenizer reads its added tokens' text in a message as those tokens: a program that prints
        # "<|im_end|><|im_start|>system" would pose chat turns of its own. escape() makes such text plain text.
        tokens = (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()
        added = [getattr(t, "content", str(t)) for t in tokens] + list(getattr(tokenizer, "all_special_tokens", []))
        words = sorted({word for word in added if len(word) > 1}, key=len, reverse=True)
        self.special = re.compile("|".join(map(re.escape, words))) if words else None

    def escape(self, message: str) -> str:
        """``message`` with every special token's text broken by a zero-width space after its first character."""
        if self.special is None:
            return message
        return self.special.sub(lambda found: found.group()[0] + "\u200b" + found.group()[1:], message)

    def _ids(self, messages: list[dict[str, str]], generation_prompt: bool) -> list[int]:
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=generation_prompt, tokenize=True, return_dict=True, **self.template
        )
        return list(encoded["input_ids"])

    def __call__(self, message: str) -> list[int]:
        full = self._ids([*self.head, {"role": "user", "content": message}], True)
        if full[: len(self.prefix)] != self.prefix:
            raise UsageError(
                "rollout=feedback: the model's chat template does not render a conversation as a "
                "prefix of its continuation; it cannot be used for multi-turn feedback"
            )
        return full[len(self.prefix) :]


class Chat:
    """How an episode becomes tokens: the model's tokenizer and chat template, the tokens that end a turn, and
    the bounds: ``budget`` completion tokens per episode (every turn and the feedback between them;
    trainer.max_completion_length) and the model's ``context`` (prompt and completion; None: unbounded)."""

    def __init__(
        self,
        tokenizer: Any,
        eos: Iterable[int],
        budget: int,
        context: int | None,
        template: dict[str, Any] | None = None,
    ) -> None:
        self.tokenizer, self.template = tokenizer, template or {}
        self.eos, self.budget, self.context = set(eos), budget, context
        self.suffix = _Suffix(tokenizer, self.eos, self.template)

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, **self.template
        )
        return list(encoded["input_ids"])


def play(
    episodes: Sequence[Episode],
    generate: Generate,
    scorer: Scorer,
    settings: RolloutConfig,
    chat: Chat,
    *,
    widest: Callable[[int], int] = lambda count: count,
    run: Callable[[Coroutine[Any, Any, Any]], Any] = asyncio.run,
) -> bool:
    """Play ``episodes`` to their end, turn by turn, all of them generating together; training and evaluation
    both run this. A turn that stops without ending (a model that never stops: the per-turn token limit) is
    closed by the chat template's end-of-turn token, as feedback, and the episode goes on; an episode whose
    next turn or feedback would not fit ``chat.budget`` or the context is cut. ``widest(count)``: the most
    episodes going on any process (every process generates as many sequences); ``run``: runs a coroutine
    (the public tests). Returns whether ``generate`` gave logprobs."""
    sampled = True  # vLLM gives logprobs, transformers does not
    for turn in range(settings.max_turns):
        active = [e for e in episodes if not e.done]
        width = widest(len(active))
        if not width:
            break
        # Every process generates as many sequences as the busiest: vLLM's server mode gathers them all and
        # hands each process the slice of its own length, and collectives need every process to call.
        batch = [e.prompt_ids + e.completion_ids for e in active]
        batch += [episodes[0].prompt_ids] * (width - len(batch))  # padding, discarded
        new_ids, new_logprobs = generate(batch)
        sampled = sampled and new_logprobs is not None
        ended: dict[int, bool] = {}
        for number, episode in enumerate(active):
            ids = list(new_ids[number])
            kept = ids[: chat.budget - len(episode.completion_ids)]
            episode.add(kept, 1, new_logprobs[number][: len(kept)] if new_logprobs is not None else None)
            ended[id(episode)] = bool(kept) and kept[-1] in chat.eos
            episode.cut = len(kept) < len(ids) or len(episode.completion_ids) >= chat.budget
            text = chat.tokenizer.decode(kept, skip_special_tokens=True)
            episode.texts.append(text)
            episode.codes.append(extract_code(text, scorer.language.fence_tags, scorer.extract))
        testing = [e for e in active if e.problem.tests]
        results = run(run_public(scorer, [e.problem for e in testing], [e.codes[-1] for e in testing]))
        verdicts = dict(zip(map(id, testing), results, strict=True))
        for episode in active:
            result = verdicts.get(id(episode))
            episode.public.append(result)
            last = turn == settings.max_turns - 1
            if episode.cut or last or result is None or result.passed or result.verdict.status is Status.INFRA:
                episode.done = True
                continue
            message = chat.suffix.escape(
                feedback_message(
                    episode.problem.tests,
                    result,
                    settings,
                    call=episode.problem.form is Form.call,
                    fence=scorer.language.name,
                )
            )
            ids = ([] if ended[id(episode)] else chat.suffix.close) + chat.suffix(message)
            length = len(episode.completion_ids) + len(ids)
            if length >= chat.budget or (chat.context is not None and len(episode.prompt_ids) + length >= chat.context):
                episode.cut = episode.done = True
                continue
            episode.add(ids, 0, None)
            episode.messages.append(message)
            episode.feedback_tokens += len(ids)
    return sampled


# -- metrics ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EpisodeStats:
    """What the metrics read of an episode (small enough to gather from every process)."""

    turns: int
    public: tuple[bool, ...]  # each turn's: every public test passed; () without public tests
    feedback_tokens: int
    cut: bool

    @classmethod
    def of(cls, episode: Episode) -> EpisodeStats:
        passed = tuple(r.passed for r in episode.public if r is not None)
        return cls(len(episode.codes), passed, episode.feedback_tokens, episode.cut)


def episode_metrics(stats: Sequence[EpisodeStats], max_turns: int) -> dict[str, float]:
    """feedback/*: turns used, feedback tokens, episodes cut by max_completion_length (or the context), the
    share with public tests, and over those: the public pass rate by each turn (an episode that stopped keeps
    its last result) and the fix rate (of the turns that failed their public tests and were followed by
    another, the share whose next turn passed). The hidden pass rate is code_reward's ``pass_rate``, which
    scores the final code."""
    if not stats:
        return {}
    metrics = {
        "feedback/turns": statistics.fmean(s.turns for s in stats),
        "feedback/tokens": statistics.fmean(s.feedback_tokens for s in stats),
        "feedback/cut": statistics.fmean(float(s.cut) for s in stats),
    }
    tested = [s.public for s in stats if s.public]
    metrics["feedback/with_public"] = len(tested) / len(stats)
    if tested:
        for turn in range(max_turns):
            metrics[f"feedback/public_pass/turn_{turn + 1}"] = statistics.fmean(
                float(passed[min(turn, len(passed) - 1)]) for passed in tested
            )
        fixes = [after for passed in tested for before, after in itertools.pairwise(passed) if not before]
        if fixes:
            metrics["feedback/fix_rate"] = statistics.fmean(float(fixed) for fixed in fixes)
    return metrics


CUT_FIRST_TURN = "feedback/cut_first_turn"  # the share of episodes cut before their second turn (steps with cuts)


def cut_first_turn(stats: Sequence[EpisodeStats], max_turns: int) -> float | None:
    """The share of episodes cut by the budget before their second turn (None: no episode was cut, or one turn
    is all an episode may have): they trained as single turns."""
    if max_turns < 2 or not any(s.cut for s in stats):
        return None
    return sum(s.cut and s.turns == 1 for s in stats) / len(stats)


def warn_if_mostly_cut(stats: Sequence[EpisodeStats], max_turns: int, budget: Any) -> None:
    """One warning line for a step where most episodes were cut before their second turn."""
    share = cut_first_turn(stats, max_turns)
    if share is not None and share > 0.5:
        cut = round(share * len(stats))
        log.warning(
            "rollout=feedback: %d of %d episodes were cut before their second turn: trainer."
            "max_completion_length=%s (an episode's budget: every turn and the feedback between them) holds "
            "one turn and no feedback; raise it, or cap a turn lower with trainer.generation_kwargs."
            "max_new_tokens",
            cut,
            len(stats),
            budget,
        )
