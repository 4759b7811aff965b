"""Evaluation results: eval files written and read back in one format, the paired bootstrap comparison,
and its breakdown of the change into format (errors -> passes), skill (wrong -> passes) and passes lost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codegrpo.errors import UsageError
from codegrpo.evaluation.compare import compare, comparison_summary
from codegrpo.evaluation.results import Evaluation, Outcomes, load_evaluation, save
from codegrpo.resources import PROJECT_ROOT


def _evaluation(outcomes: dict[str, tuple[int, int, int]]) -> Evaluation:
    """An evaluation whose problems have (passed, wrong, error) samples, as evaluate_model records them."""
    status = {"passed": ["passed"], "wrong": ["failed"], "error": ["error", "timeout", "no_code"]}
    samples = []
    for pid, counts in outcomes.items():
        for kind, count in zip(("passed", "wrong", "error"), counts, strict=True):
            # Errors cycle through every status that gives no answer.
            samples += [
                {
                    "problem_id": pid,
                    "status": status[kind][i % len(status[kind])],
                    "reward": 0.0,
                    "reason": "",
                    "code": "",
                }
                for i in range(count)
            ]
    n = sum(next(iter(outcomes.values())))
    per_problem = {pid: counts[0] for pid, counts in outcomes.items()}
    counts: dict[str, int] = {}
    for sample in samples:
        counts[sample["status"]] = counts.get(sample["status"], 0) + 1
    return Evaluation(
        {1: sum(per_problem.values()) / n / len(per_problem)},
        len(outcomes),
        n,
        counts,
        per_problem,
        samples,
        wall_s=1.5,
    )


def test_eval_file_round_trips_in_the_format_compare_reads(tmp_path):
    evaluation = _evaluation({"a": (2, 1, 1), "b": (0, 0, 4)})
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


def test_paired_bootstrap_interval():
    ids = [f"p{i}" for i in range(20)]
    before = _evaluation(dict.fromkeys(ids, (2, 6, 0)))
    better = compare(before, _evaluation({pid: (2 + i % 3, 6 - i % 3, 0) for i, pid in enumerate(ids)}), 2000, 1)
    assert better.change == pytest.approx(sum(i % 3 for i in range(20)) / 20 / 8)
    low, high = better.ci95
    assert 0 < low < better.change < high and better.excludes_zero
    assert better.improved == 13 and better.worse == 0
    same = compare(
        before,
        _evaluation({pid: (2 + (1 if i % 2 else -1), 6 - (1 if i % 2 else -1), 0) for i, pid in enumerate(ids)}),
        2000,
    )
    assert same.change == 0 and same.ci95[0] < 0 < same.ci95[1] and not same.excludes_zero
    with pytest.raises(UsageError, match="share no problem ids"):
        compare(before, _evaluation({"other": (1, 7, 0)}))


def test_breakdown_splits_the_change_into_format_skill_and_lost():
    before = _evaluation(
        {
            "fmt": (1, 1, 6),
            "skl": (2, 6, 0),
            "both": (0, 4, 4),
            "lost": (6, 2, 0),
            "err_to_wrong": (0, 0, 8),
            "same": (4, 4, 0),
        }
    )
    after = _evaluation(
        {
            "fmt": (5, 3, 0),  # errors fell by 6, wrong rose: +4 passes, all format
            "skl": (5, 3, 0),  # wrong fell by 3, no errors before: +3 skill
            "both": (6, 2, 0),  # wrong -2, errors -4: +2 skill, +4 format
            "lost": (3, 2, 3),  # -3 passes, to errors
            "err_to_wrong": (0, 8, 0),  # runs now, but wrong: no pass gained
            "same": (4, 4, 0),
        }
    )
    comparison = compare(before, after, 500)
    parts = comparison.breakdown
    assert parts.format * 6 * 8 == pytest.approx(4 + 4)
    assert parts.skill * 6 * 8 == pytest.approx(3 + 2)
    assert parts.lost * 6 * 8 == pytest.approx(3)
    assert parts.format + parts.skill - parts.lost == pytest.approx(comparison.change)
    assert parts.before == Outcomes(13, 17, 18) and parts.after == Outcomes(23, 22, 3)
    summary = comparison_summary(comparison)
    assert "errors -> passes +0.167 (format), wrong -> passes +0.104 (skill), passes lost 0.062" in summary
    assert "errors 18 -> 3, wrong 17 -> 22, passed 13 -> 23" in summary


def test_breakdown_of_different_sample_counts_is_in_shares():
    before = _evaluation({"a": (1, 3, 4), "b": (4, 4, 0)})  # 8 samples each
    after = _evaluation({"a": (2, 2, 0), "b": (1, 3, 0)})  # 4 samples each
    parts = compare(before, after, 100).breakdown
    assert parts.format == pytest.approx((0.5 - 0.125) / 2)  # a: errors 1/2 -> 0, wrong 3/8 -> 1/2
    assert parts.skill == 0 and parts.lost == pytest.approx(0.25 / 2)


def test_evaluate_compares_two_eval_files_with_the_breakdown(tmp_path):
    ids = [f"p{i}" for i in range(12)]
    save(_evaluation(dict.fromkeys(ids, (1, 2, 5))), tmp_path / "a.json")
    save(_evaluation({pid: (7, 1, 0) if i % 2 else (7, 0, 1) for i, pid in enumerate(ids)}), tmp_path / "b.json")
    out = tmp_path / "cmp"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegrpo.commands.evaluate",
            f"hydra.run.dir={out}",
            f"compare=[{tmp_path / 'a.json'},{tmp_path / 'b.json'}]",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "change +0.750" in done.stdout
    # Odd problems: errors 5 -> 0, wrong 2 -> 1 (+1 skill, +5 format); even: errors 5 -> 1, wrong 2 -> 0 (+2, +4).
    assert "errors -> passes +0.562 (format), wrong -> passes +0.188 (skill), passes lost 0.000" in done.stdout
    result = json.loads((out / "comparison.json").read_text())
    assert result["ci95"] == [0.75, 0.75] and result["num_problems"] == 12
    assert result["breakdown"]["format"] == 0.5625 and result["breakdown"]["skill"] == 0.1875
    assert result["breakdown"]["before"] == {"passed": 12, "wrong": 24, "error": 60}
    assert result["compared"] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    assert (out / "comparison.png").stat().st_size > 0
    assert json.loads((out / "eval_a.json").read_text()) == json.loads((tmp_path / "a.json").read_text())


def test_evaluate_refuses_a_file_that_is_not_an_eval(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"change": 0.1}')
    save(_evaluation({"p": (1, 1, 0)}), tmp_path / "a.json")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegrpo.commands.evaluate",
            f"hydra.run.dir={tmp_path / 'o'}",
            f"compare=[{tmp_path / 'a.json'},{bad}]",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "bad.json is not an eval file" in line


def test_a_feedback_evaluation_holds_its_first_turn_and_compares_both_turns(tmp_path):
    """rollout=feedback: the eval file is the last turn's, with the first turn's inside it; a comparison of two
    such files compares the last turns and the first turns alike."""
    ids = [f"p{i}" for i in range(10)]
    first = _evaluation(dict.fromkeys(ids, (1, 3, 0)))
    last = _evaluation({pid: (1 + i % 2, 3 - i % 2, 0) for i, pid in enumerate(ids)})
    last.first_turn = first
    last.turn_gain = compare(first, last, 1000, 0).to_json()
    last.feedback = {"feedback/turns": 2.5}
    loaded = load_evaluation(save(last, tmp_path / "eval.json"))
    assert loaded == last and loaded.first_turn == first
    assert loaded.metrics() == {"pass@1": 0.375, "first_turn/pass@1": 0.25, "feedback/turns": 2.5}
    assert loaded.summary().startswith("first turn pass@1 0.250; last turn pass@1 0.375; change +0.125 [95% CI ")
    trained = _evaluation(dict.fromkeys(ids, (4, 0, 0)))
    trained.first_turn = _evaluation(dict.fromkeys(ids, (2, 2, 0)))
    comparison = compare(loaded, trained, 1000, 0)
    assert comparison.change == pytest.approx(0.625) and comparison.first_turn is not None
    assert comparison.first_turn.change == pytest.approx(0.25)
    text = comparison_summary(comparison)
    assert text.startswith("last turn pass@1 0.375 -> 1.000") and "\nfirst turn pass@1 0.250 -> 0.500" in text
    assert comparison.to_json()["first_turn"]["change"] == pytest.approx(0.25)
    assert compare(first, trained.first_turn).first_turn is None  # single-turn evaluations: no first-turn part


def test_an_evaluation_records_the_tokens_it_generated_per_second(compose_cfg, local_sandbox, tmp_path):
    """The offline model evaluated in the real sandbox: the replies' own tokens (to their end-of-turn token; the
    padding after it is not generated) over the seconds generate() took, in the metrics, the summary and the file."""
    from codegrpo import build
    from codegrpo.config.choices import RewardKind
    from codegrpo.evaluation.evaluate import Generated, evaluate_model

    counted = Generated()
    counted.add([[5, 6, 2, 2, 2], [7, 8, 9]], {2}, 0.5)  # a reply that ended (and was padded), one cut at the limit
    assert (counted.tokens, counted.per_second) == (6, 12.0)

    cfg = compose_cfg(
        "problems=trivial", "evaluation.limit=2", "evaluation.num_samples=2", "evaluation.max_new_tokens=12"
    )
    problems = build.eval_problems(cfg)
    model, tokenizer = build.model(cfg.model)
    scorer = build.scorer(cfg, problems, local_sandbox, kind=RewardKind.binary)
    result = evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation)
    assert result.generated_tokens is not None and result.generation_s is not None and result.wall_s is not None
    assert 4 <= result.generated_tokens <= 2 * 2 * 12 and 0 < result.generation_s < result.wall_s
    rate = result.generated_tokens / result.generation_s
    assert result.metrics()["tokens_per_s"] == rate and result.summary().endswith(f"; {rate:.1f} generated tokens/s")
    loaded = load_evaluation(save(result, tmp_path / "eval.json"))
    assert loaded == result and loaded.tokens_per_s == rate


def test_a_missing_checkpoint_is_one_line_naming_it_and_leaves_no_dir(tmp_path):
    """It blamed the Hub for a mistyped local path, and left outputs/evals/<time> behind."""
    out = tmp_path / "o"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegrpo.commands.evaluate",
            f"hydra.run.dir={out}",
            f"checkpoint={tmp_path / 'no' / 'such' / 'dir'}",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: checkpoint={tmp_path / 'no' / 'such' / 'dir'}: ") and "does not exist" in line
    assert "Hub" not in line.split(";")[0] and not out.exists()
