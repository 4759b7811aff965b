"""An episode (codegrpo.rollout.episode): the tokens it adds, with their mask and log-probs, and what its stop and
its public results say (done, cut, fault)."""

from __future__ import annotations

import pytest

from codegrpo.config.choices import Form
from codegrpo.data.problems import Problem
from codegrpo.reward.reports import ProgramReport
from codegrpo.reward.verdict import Status, Verdict
from codegrpo.rollout.episode import Episode, Stop

PROBLEM = Problem(id="sum", prompt="Print a + b.", test="", form=Form.stdio)


def report(status: Status) -> ProgramReport:
    return ProgramReport(Verdict(status, None if status is Status.INFRA else 0.0))


def test_a_new_episode_goes_on_with_nothing_added():
    episode = Episode(PROBLEM, [5, 6])
    assert (episode.done, episode.cut, episode.fault) == (False, False, False)
    assert episode.completion_ids == episode.env_mask == episode.logprobs == []
    assert episode.codes == episode.public == episode.messages == episode.texts == []
    assert episode.feedback_tokens == 0 and episode.prompt_ids == [5, 6]


def test_each_episode_has_lists_of_its_own():
    first, second = Episode(PROBLEM, []), Episode(PROBLEM, [])
    first.add([1], 1, [-0.5])
    first.codes.append("print(1)")
    assert (second.completion_ids, second.env_mask, second.logprobs, second.codes) == ([], [], [], [])


def test_added_tokens_carry_their_mask_and_log_probs_and_the_environments_get_zeros():
    episode = Episode(PROBLEM, [9])
    episode.add([11, 12, 13], 1, [-0.1, -0.2, -0.3])  # the model's turn
    episode.add((20, 21), 0, None)  # the feedback message: no log-probs
    episode.add([14], 1, (-1.5,))
    assert episode.completion_ids == [11, 12, 13, 20, 21, 14]
    assert episode.env_mask == [1, 1, 1, 0, 0, 1]
    assert episode.logprobs == [-0.1, -0.2, -0.3, 0.0, 0.0, -1.5]
    assert episode.prompt_ids == [9]  # the prompt is not the completion


def test_adding_no_tokens_changes_nothing():
    episode = Episode(PROBLEM, [])
    episode.add([], 0, None)
    episode.add([], 1, [])
    assert (episode.completion_ids, episode.env_mask, episode.logprobs) == ([], [], [])


@pytest.mark.parametrize("stop", list(Stop))
def test_any_stop_ends_the_episode_and_only_the_budget_cuts_it(stop):
    episode = Episode(PROBLEM, [], stop=stop)
    assert episode.done
    assert episode.cut is (stop is Stop.BUDGET)


def test_a_sandbox_failure_in_any_turn_is_a_fault():
    episode = Episode(PROBLEM, [])
    episode.public = [None, report(Status.FAILED), report(Status.ERROR), report(Status.TIMEOUT)]
    assert not episode.fault
    episode.public.append(report(Status.PASSED))
    assert not episode.fault
    episode.public.insert(1, report(Status.INFRA))
    assert episode.fault
