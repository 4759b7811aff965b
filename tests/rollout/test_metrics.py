"""The episodes' metrics (codegrpo.rollout.metrics): what an episode's stats keep, the feedback/* means, and the
warning for a step whose episodes were mostly cut before their second turn."""

from __future__ import annotations

import logging

import pytest

from codegrpo.config.choices import Form
from codegrpo.data.problems import Problem
from codegrpo.reward.reports import ProgramReport
from codegrpo.reward.verdict import Status, Verdict
from codegrpo.rollout.episode import Episode, Stop
from codegrpo.rollout.metrics import EpisodeStats, cut_first_turn, episode_metrics, warn_if_mostly_cut

PROBLEM = Problem(id="sum", prompt="Print a + b.", test="", form=Form.stdio)


def report(status: Status) -> ProgramReport:
    return ProgramReport(Verdict(status, 0.0))


def stats(turns: int, public: tuple[bool, ...] = (), tokens: int = 0, cut: bool = False) -> EpisodeStats:
    return EpisodeStats(turns, public, tokens, cut)


def test_an_episodes_stats_count_its_turns_and_the_public_results_of_the_turns_that_ran():
    episode = Episode(PROBLEM, [1, 2], codes=["a", "b", "c"], feedback_tokens=42, stop=Stop.BUDGET)
    episode.public = [report(Status.FAILED), None, report(Status.PASSED)]
    assert EpisodeStats.of(episode) == EpisodeStats(3, (False, True), 42, True)
    solved = Episode(PROBLEM, [1], codes=["a"], public=[report(Status.PASSED)], stop=Stop.SOLVED)
    assert EpisodeStats.of(solved) == EpisodeStats(1, (True,), 0, False)


def test_no_episodes_give_no_metrics():
    assert episode_metrics([], 3) == {}


def test_episodes_without_public_tests_give_only_the_means():
    assert episode_metrics([stats(1, tokens=0, cut=True), stats(2, tokens=30), stats(3, tokens=60)], 3) == {
        "feedback/turns": 2.0,
        "feedback/tokens": 30.0,
        "feedback/cut": 1 / 3,
        "feedback/with_public": 0.0,
    }


def test_the_public_pass_rate_by_turn_keeps_a_stopped_episodes_last_result():
    episodes = [
        stats(3, (False, False, True), 20),
        stats(1, (True,)),  # solved at once: passed by every turn
        stats(2, (False, False), 10, cut=True),  # cut after its second turn: failed by every turn
        stats(1),  # no public tests: left out of the rates
    ]
    assert episode_metrics(episodes, 4) == {
        "feedback/turns": 7 / 4,
        "feedback/tokens": 30 / 4,
        "feedback/cut": 0.25,
        "feedback/with_public": 0.75,
        "feedback/public_pass/turn_1": 1 / 3,
        "feedback/public_pass/turn_2": 1 / 3,
        "feedback/public_pass/turn_3": 2 / 3,
        "feedback/public_pass/turn_4": 2 / 3,
        # failed turns followed by another: (F -> F), (F -> T) of the first, (F -> F) of the third
        "feedback/fix_rate": 1 / 3,
    }


def test_the_fix_rate_counts_a_failed_turn_only_when_another_followed():
    metrics = episode_metrics([stats(1, (False,)), stats(2, (True, False))], 2)
    assert "feedback/fix_rate" not in metrics  # the failures were last turns
    assert metrics["feedback/public_pass/turn_1"] == 0.5 and metrics["feedback/public_pass/turn_2"] == 0.0
    assert episode_metrics([stats(2, (False, True)), stats(2, (False, True))], 2)["feedback/fix_rate"] == 1.0


@pytest.mark.parametrize(
    ("episodes", "max_turns", "share"),
    [
        ([stats(1, cut=True), stats(2, cut=True), stats(1), stats(3)], 3, 0.25),
        ([stats(1, cut=True), stats(1, cut=True)], 2, 1.0),
        ([stats(2, cut=True), stats(1)], 2, 0.0),  # cut, but after its second turn
        ([stats(1), stats(1)], 2, None),  # nothing cut
        ([stats(1, cut=True), stats(1, cut=True)], 1, None),  # one turn is all an episode may have
        ([], 2, None),
    ],
)
def test_the_share_cut_before_the_second_turn(episodes, max_turns, share):
    assert cut_first_turn(episodes, max_turns) == share


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "codegrpo.rollout.metrics"]


def test_a_step_mostly_cut_before_the_second_turn_warns_once_with_the_budget(caplog):
    with caplog.at_level(logging.WARNING, logger="codegrpo.rollout.metrics"):
        warn_if_mostly_cut([stats(1, cut=True)] * 3 + [stats(2)], 3, 256)
    [warning] = warnings_of(caplog)
    assert warning.startswith(
        "rollout=feedback: 3 of 4 episodes were cut before their second turn: trainer.max_completion_length=256 "
    )
    assert warning.endswith("cap a turn lower with trainer.generation_kwargs.max_new_tokens")


@pytest.mark.parametrize(
    ("episodes", "max_turns"),
    [
        ([stats(1, cut=True), stats(1, cut=True), stats(2), stats(2)], 3),  # half: not most
        ([stats(1, cut=True)] * 4, 1),  # single-turn episodes are not cut short
        ([stats(2, cut=True)] * 4, 3),  # cut later
    ],
)
def test_no_warning_unless_most_episodes_were_cut_before_their_second_turn(caplog, episodes, max_turns):
    with caplog.at_level(logging.WARNING, logger="codegrpo.rollout.metrics"):
        warn_if_mostly_cut(episodes, max_turns, 256)
    assert warnings_of(caplog) == []
