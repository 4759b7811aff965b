"""evaluation.backend=vllm: a model sampled through vLLM's API (tests/fakes/vllm_api, a fake that samples with
transformers: vLLM needs a GPU build) gives the evaluation transformers gives, in the real sandbox. Where what is
under test is the engine's use, not what the model writes, the tiny random model (tests/helpers/tiny_model.py)
is sampled."""

from __future__ import annotations

import json
import sys

import pytest

from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.commands import command

FAKE_VLLM = PROJECT_ROOT / "tests" / "fakes" / "vllm_api"
SMALL = ("problems=trivial", "evaluation.split=eval", "evaluation.limit=3", "evaluation.batch_size=1")


@pytest.fixture
def fake_vllm(monkeypatch):
    """``import vllm`` finds the fake for this test, and its engines."""
    monkeypatch.syspath_prepend(str(FAKE_VLLM))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    import vllm

    yield vllm
    sys.modules.pop("vllm", None)


@pytest.mark.slow
def test_vllm_samples_the_evaluation_transformers_samples(compose_cfg, fake_vllm):
    """The offline model: greedy completions that depend on the prompt (the random model's do not)."""
    from codegrpo.tasks.evaluate import evaluate

    greedy = (*SMALL, "evaluation.num_samples=1", "evaluation.temperature=0", "evaluation.max_new_tokens=40")
    by_transformers = evaluate(compose_cfg(*greedy, config_name="evaluate"))
    by_vllm = evaluate(compose_cfg(*greedy, "evaluation.backend=vllm", config_name="evaluate"))

    assert [s["code"] for s in by_vllm.samples] == [s["code"] for s in by_transformers.samples]
    assert by_vllm.per_problem == by_transformers.per_problem and by_vllm.status_counts == by_transformers.status_counts
    assert by_vllm.generated_tokens == by_transformers.generated_tokens > 0
    [engine] = fake_vllm.ENGINES
    assert [len(prompts) for prompts, _ in engine.calls] == [1, 1, 1]  # batch_size=1: a request per sample
    [params] = {id(params): params for _, params in engine.calls}.values()  # one SamplingParams for them all
    assert (params.n, params.temperature, params.max_tokens) == (1, 0.0, 40)
    assert engine.words.eos_token_id in params.stop_token_ids and engine.seed == 0
    record = by_vllm.record
    assert record["sampling"]["backend"] == "vllm" and record["model"]["parameters"] is None
    assert by_transformers.record["sampling"]["backend"] == "transformers"


def test_a_problems_samples_are_draws_of_one_seeded_stream(compose_cfg, fake_vllm, tiny_model):
    """A seed per request would make a problem's n samples one sample n times; the engine's one seed does not,
    and the same seed draws the same samples again."""
    from codegrpo.tasks.evaluate import evaluate

    sampled = (*tiny_model, *SMALL, "evaluation.limit=1", "evaluation.num_samples=4", "evaluation.temperature=1.0")
    first, again = (
        evaluate(
            compose_cfg(*sampled, "evaluation.max_new_tokens=24", "evaluation.backend=vllm", config_name="evaluate")
        )
        for _ in range(2)
    )
    # The random model writes no code to compare: the engine's replies (token ids) are the samples.
    [drawn], [redrawn] = (engine.replies for engine in fake_vllm.ENGINES)
    assert len(drawn) == 4 and len(set(map(tuple, drawn))) == 4, drawn
    assert redrawn == drawn
    assert len(first.samples) == len(again.samples) == 4
    assert [params.top_p for engine in fake_vllm.ENGINES for _, params in engine.calls] == [1.0, 1.0]
    assert [params.seed for engine in fake_vllm.ENGINES for _, params in engine.calls] == [None, None]
    assert [len(prompts) for engine in fake_vllm.ENGINES for prompts, _ in engine.calls] == [4, 4]


def test_vllm_without_its_package_is_one_line_before_anything_loads(tmp_path):
    out = tmp_path / "o"
    done = command("codegrpo.commands.evaluate", f"hydra.run.dir={out}", "evaluation.backend=vllm")
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: evaluation.backend=vllm needs the vllm package") and "pip install" in line
    assert not out.exists()


def test_training_refuses_vllm_for_its_own_evaluations(compose_cfg):
    with pytest.raises(UsageError, match=r"evaluation\.backend=vllm samples in codegrpo-evaluate"):
        compose_cfg("evaluation.after=true", "evaluation.backend=vllm")
    assert compose_cfg("evaluation.backend=vllm").evaluation.after is False  # a sweep's shared setting is fine


def test_feedback_episodes_take_each_turn_in_the_engine(compose_cfg, fake_vllm, tiny_model, tmp_path):
    """rollout=feedback: each turn's prompts (the chat so far, as token ids) go to the engine; greedy episodes
    revise as under transformers, turn for turn."""
    from codegrpo.tasks.evaluate import evaluate

    # Episodes of different lengths: the random model fails cap_at_10's public tests each turn; add_5, without
    # public tests here, gets one turn.
    rows = [json.loads(line) for line in (PROJECT_ROOT / "problems" / "feedback.jsonl").read_text().splitlines()]
    hard = tmp_path / "hard.jsonl"
    picked = [row for row in rows if row["id"] in ("cap_at_10", "add_5")]
    for row in picked:
        if row["id"] == "add_5":
            del row["public_tests"]
    hard.write_text("".join(json.dumps(row) + "\n" for row in picked))
    feedback = (
        *tiny_model,
        "problems=feedback",
        f"problems.path={hard}",
        "rollout=feedback",
        "evaluation.split=all",
        "evaluation.num_samples=1",
        "evaluation.temperature=0",
        "evaluation.max_new_tokens=64",
        "evaluation.batch_size=1",
    )
    by_transformers = evaluate(compose_cfg(*feedback, config_name="evaluate"))
    by_vllm = evaluate(compose_cfg(*feedback, "evaluation.backend=vllm", config_name="evaluate"))

    def episodes(result):
        return [(s["turns"], s["public"], s["code"]) for s in result.samples]

    assert episodes(by_vllm) == episodes(by_transformers)
    assert by_vllm.first_turn is not None and by_vllm.first_turn.per_problem == by_transformers.first_turn.per_problem
    [engine] = fake_vllm.ENGINES
    turns = [s["turns"] for s in by_vllm.samples]
    assert min(turns) == 1 and max(turns) > 1, turns
    # A call per turn, with the episodes still going: each prompt the one before it, its reply and the feedback.
    assert [len(prompts) for prompts, _ in engine.calls] == [sum(t > turn for t in turns) for turn in range(max(turns))]
    going = turns.index(max(turns))
    prompt, reply = engine.calls[0][0][going], engine.replies[0][going]
    for (prompts, _), replies in zip(engine.calls[1:], engine.replies[1:], strict=True):
        [next_prompt], [next_reply] = prompts, replies
        assert next_prompt[: len(prompt) + len(reply)] == prompt + reply and len(next_prompt) > len(prompt + reply)
        prompt, reply = next_prompt, next_reply
