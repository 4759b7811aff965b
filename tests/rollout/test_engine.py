"""The episode engine (codegrpo.rollout.engine) with an environment of the test's own (the Environment
protocol), the offline model's real tokenizer and chat template, and scripted replies: each stop condition,
and the tokens and mask of what the model wrote and what it was told."""

from __future__ import annotations

import pytest

from codegrpo.config.choices import Form
from codegrpo.data.problems import Problem
from codegrpo.reward.reports import ProgramReport
from codegrpo.reward.verdict import Status, Verdict
from codegrpo.rollout.chat import Chat
from codegrpo.rollout.engine import play
from codegrpo.rollout.environment import Response
from codegrpo.rollout.episode import Episode, Stop
from tests.helpers.feedback import offline_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return offline_tokenizer()


class Scripted:
    """An environment that answers each episode (named by its problem id) from a script, turn by turn."""

    def __init__(self, script: dict[str, list[Response]]) -> None:
        self.script = script
        self.seen: list[list[str]] = []  # each call's episodes, by name

    def code(self, reply: str) -> str:
        return reply.upper()

    async def respond(self, episodes):
        self.seen.append([e.problem.id for e in episodes])
        return [self.script[e.problem.id][len(e.codes) - 1] for e in episodes]


def _episode(tokenizer, chat: Chat, name: str) -> Episode:
    problem = Problem(id=name, prompt="", test="", form=Form.stdio)
    return Episode(problem, chat.prompt_ids([{"role": "user", "content": f"episode {name}"}]))


def _generate(tokenizer, eos: int, replies: dict[str, list[str]]):
    def generate(batch: list[list[int]]):
        out = []
        for ids in batch:
            text = tokenizer.decode(ids)
            name = text.split("episode ", 1)[1][0]
            turn = text.count("<|im_start|>assistant") - 1
            out.append([*tokenizer.encode(replies[name][turn], add_special_tokens=False), eos])
        return out, None

    return generate


REPORT = ProgramReport(Verdict(Status.FAILED, 0.0))
TELL = Response(REPORT, "try again")


def test_each_episode_stops_at_its_first_stop_condition(tokenizer):
    eos = tokenizer.eos_token_id
    chat = Chat(tokenizer, [eos], budget=400, context=None)
    script = {
        "s": [TELL, Response(ProgramReport(Verdict(Status.PASSED, 1.0)), stop=Stop.SOLVED)],
        "f": [Response(ProgramReport(Verdict(Status.INFRA, None)), stop=Stop.FAULT)],
        "u": [Response(None, stop=Stop.UNTESTED)],
        "t": [TELL, TELL, TELL],
        "b": [Response(REPORT, "x " * 500)],  # a message that does not fit the budget
    }
    replies = {name: [f"{name} turn {t}" for t in range(3)] for name in script}
    episodes = [_episode(tokenizer, chat, name) for name in script]
    environment = Scripted(script)
    sampled = play(episodes, _generate(tokenizer, eos, replies), environment, chat, max_turns=3)
    assert not sampled  # the generator gave no logprobs
    stops = {e.problem.id: e.stop for e in episodes}
    assert stops == {"s": Stop.SOLVED, "f": Stop.FAULT, "u": Stop.UNTESTED, "t": Stop.TURNS, "b": Stop.BUDGET}
    assert environment.seen == [["s", "f", "u", "t", "b"], ["s", "t"], ["t"]]  # a stopped episode is not asked
    by_name = {e.problem.id: e for e in episodes}
    assert by_name["t"].codes == ["T TURN 0", "T TURN 1", "T TURN 2"] and by_name["t"].messages == ["try again"] * 2
    assert by_name["f"].fault and not by_name["s"].fault and by_name["b"].cut and not by_name["t"].cut
    assert by_name["b"].messages == [] and by_name["b"].feedback_tokens == 0  # nothing was added past the budget
    for episode in episodes:  # the model's tokens are 1 in the mask, the environment's 0, and nothing else
        assert len(episode.env_mask) == len(episode.completion_ids) == len(episode.logprobs)
        assert episode.env_mask.count(0) == episode.feedback_tokens
    told = by_name["t"]
    feedback = [t for t, m in zip(told.completion_ids, told.env_mask, strict=True) if m == 0]
    assert "try again" in tokenizer.decode(feedback) and "T TURN" not in tokenizer.decode(feedback)


def test_a_turn_cut_by_the_budget_stops_its_episode_whatever_the_environment_says(tokenizer):
    eos = tokenizer.eos_token_id
    chat = Chat(tokenizer, [eos], budget=3, context=None)
    episode = _episode(tokenizer, chat, "c")
    play(
        [episode],
        _generate(tokenizer, eos, {"c": ["a much longer reply than three tokens"]}),
        Scripted({"c": [TELL]}),
        chat,
        3,
    )
    assert episode.stop is Stop.BUDGET and len(episode.completion_ids) == 3 and episode.public == [REPORT]


def test_a_response_poses_a_message_or_stops():
    with pytest.raises(ValueError, match="poses a message or stops"):
        Response(REPORT)
