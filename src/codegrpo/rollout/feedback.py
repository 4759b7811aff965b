"""rollout=feedback: the model sees what its code did, revises it, and its last code is scored on hidden tests.

One episode per completion, turn by turn (codegrpo.rollout.engine): the model writes code; ``Feedback``, the
environment, runs it on the problem's PUBLIC tests in the configured sandbox (codegrpo.data.public_tests,
through ``Scorer.reports``); the failing tests (input, expected output if ``show_expected``, what the code
printed or raised, cut to ``truncate_chars``) go back as the next user message, and the model revises. An
episode stops when every public test passes, after ``max_turns`` turns, or when the next turn would not fit in
``trainer.max_completion_length``. A problem without public tests gets one turn, as rollout=single. The last
turn's code is scored on the HIDDEN tests by code_reward (and hack_penalty) through
codegrpo.training.rollout_func's ``score_final_code``: the same verdict, statuses, partial credit and monitor as a
single turn. The rollout never holds a hidden test: its episodes hold ``public(problem)`` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from codegrpo.config.choices import Form
from codegrpo.config.rollout import RolloutConfig
from codegrpo.data.problems import IOTest
from codegrpo.reward.extraction import extract_code
from codegrpo.reward.reports import ProgramReport
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from codegrpo.rollout.environment import Response
from codegrpo.rollout.episode import Episode, Stop


class Feedback:
    """The environment of rollout=feedback: each turn's code run on its problem's public tests, and the
    failing ones shown to the model (``feedback_message``) until they all pass."""

    def __init__(self, scorer: Scorer, settings: RolloutConfig) -> None:
        self.scorer, self.settings = scorer, settings

    def code(self, reply: str) -> str:
        return extract_code(reply, self.scorer.language.fence_tags, self.scorer.extract)

    async def respond(self, episodes: Sequence[Episode]) -> list[Response]:
        testing = [e for e in episodes if e.problem.tests]
        reports = await self.scorer.reports([e.problem for e in testing], [e.codes[-1] for e in testing])
        by_episode = dict(zip(map(id, testing), reports, strict=True))
        return [self._response(episode, by_episode.get(id(episode))) for episode in episodes]

    def _response(self, episode: Episode, report: ProgramReport | None) -> Response:
        if report is None:
            return Response(None, stop=Stop.UNTESTED)
        if report.fault:
            return Response(report, stop=Stop.FAULT)
        if report.passed:
            return Response(report, stop=Stop.SOLVED)
        problem = episode.problem
        call = problem.form is Form.call
        return Response(
            report, feedback_message(problem.tests, report, self.settings, call=call, fence=self.scorer.language.name)
        )


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
    tests: Sequence[IOTest],
    result: ProgramReport,
    settings: RolloutConfig,
    *,
    call: bool = False,
    fence: str = "python",
) -> str:
    """The user message that shows a turn's results on the public ``tests`` (all it is given: it cannot show
    a hidden test): how many passed, then up to ``max_failures`` failing tests, each with its input, its
    expected output (``show_expected``), what the code printed or returned and its error, each cut to
    ``truncate_chars``."""
    ask = f"Fix the code and reply with the whole corrected program in one ```{fence} code block."
    if result.no_code:
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
