"""The paired bootstrap comparison of two evaluations, its format/skill/lost breakdown, the summary lines
and what write_comparison writes (comparison.json, comparison.png) and logs."""

from __future__ import annotations

import json

import pytest

from codegrpo.errors import UsageError
from codegrpo.evaluation.compare import breakdown, breakdown_summary, compare, comparison_summary, write_comparison
from codegrpo.evaluation.results import Breakdown, Comparison, Evaluation, Outcomes, load_evaluation, save
from tests.helpers.evaluations import evaluation_of


def test_paired_bootstrap_interval():
    ids = [f"p{i}" for i in range(20)]
    before = evaluation_of(dict.fromkeys(ids, (2, 6, 0)))
    better = compare(before, evaluation_of({pid: (2 + i % 3, 6 - i % 3, 0) for i, pid in enumerate(ids)}), 2000, 1)
    assert better.change == pytest.approx(sum(i % 3 for i in range(20)) / 20 / 8)
    low, high = better.ci95
    assert 0 < low < better.change < high and better.excludes_zero
    assert better.improved == 13 and better.worse == 0
    same = compare(
        before,
        evaluation_of({pid: (2 + (1 if i % 2 else -1), 6 - (1 if i % 2 else -1), 0) for i, pid in enumerate(ids)}),
        2000,
    )
    assert same.change == 0 and same.ci95[0] < 0 < same.ci95[1] and not same.excludes_zero
    with pytest.raises(UsageError, match="share no problem ids"):
        compare(before, evaluation_of({"other": (1, 7, 0)}))


def test_breakdown_splits_the_change_into_format_skill_and_lost():
    before = evaluation_of(
        {
            "fmt": (1, 1, 6),
            "skl": (2, 6, 0),
            "both": (0, 4, 4),
            "lost": (6, 2, 0),
            "err_to_wrong": (0, 0, 8),
            "same": (4, 4, 0),
        }
    )
    after = evaluation_of(
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
    before = evaluation_of({"a": (1, 3, 4), "b": (4, 4, 0)})  # 8 samples each
    after = evaluation_of({"a": (2, 2, 0), "b": (1, 3, 0)})  # 4 samples each
    parts = compare(before, after, 100).breakdown
    assert parts.format == pytest.approx((0.5 - 0.125) / 2)  # a: errors 1/2 -> 0, wrong 3/8 -> 1/2
    assert parts.skill == 0 and parts.lost == pytest.approx(0.25 / 2)


def test_a_feedback_evaluation_holds_its_first_turn_and_compares_both_turns(tmp_path):
    """rollout=feedback: the eval file is the last turn's, with the first turn's inside it; a comparison of two
    such files compares the last turns and the first turns alike."""
    ids = [f"p{i}" for i in range(10)]
    first = evaluation_of(dict.fromkeys(ids, (1, 3, 0)))
    last = evaluation_of({pid: (1 + i % 2, 3 - i % 2, 0) for i, pid in enumerate(ids)})
    last.first_turn = first
    last.turn_gain = compare(first, last, 1000, 0).to_json()
    last.feedback = {"feedback/turns": 2.5}
    loaded = load_evaluation(save(last, tmp_path / "eval.json"))
    assert loaded == last and loaded.first_turn == first
    assert loaded.metrics() == {"pass@1": 0.375, "first_turn/pass@1": 0.25, "feedback/turns": 2.5}
    assert loaded.summary().startswith("first turn pass@1 0.250; last turn pass@1 0.375; change +0.125 [95% CI ")
    trained = evaluation_of(dict.fromkeys(ids, (4, 0, 0)))
    trained.first_turn = evaluation_of(dict.fromkeys(ids, (2, 2, 0)))
    comparison = compare(loaded, trained, 1000, 0)
    assert comparison.change == pytest.approx(0.625) and comparison.first_turn is not None
    assert comparison.first_turn.change == pytest.approx(0.25)
    text = comparison_summary(comparison)
    assert text.startswith("last turn pass@1 0.375 -> 1.000") and "\nfirst turn pass@1 0.250 -> 0.500" in text
    assert comparison.to_json()["first_turn"]["change"] == pytest.approx(0.25)
    assert compare(first, trained.first_turn).first_turn is None  # single-turn evaluations: no first-turn part


def test_compare_pairs_the_problems_both_evaluations_hold_and_counts_each_ones_change():
    before = evaluation_of({"a": (1, 3, 0), "b": (2, 2, 0), "only_before": (4, 0, 0)})
    after = evaluation_of({"b": (4, 0, 0), "a": (0, 4, 0), "only_after": (0, 4, 0)})
    comparison = compare(before, after, 200)
    assert comparison.num_problems == 2 and comparison.num_samples == (4, 4)
    assert comparison.per_problem == {
        "a": {"before": 0.25, "after": 0.0, "diff": -0.25},
        "b": {"before": 0.5, "after": 1.0, "diff": 0.5},
    }
    assert (comparison.pass1_before, comparison.pass1_after, comparison.change) == (0.375, 0.5, 0.125)
    assert (comparison.improved, comparison.worse) == (1, 1)
    # a: a pass lost to a wrong answer; b: two wrong answers became passes. The unshared problems count nowhere.
    assert comparison.breakdown == Breakdown(0.0, 0.25, 0.125, Outcomes(3, 5, 0), Outcomes(4, 4, 0))


def test_each_sides_pass_at_1_is_over_its_own_sample_count():
    comparison = compare(evaluation_of({"a": (2, 6, 0)}), evaluation_of({"a": (2, 2, 0)}), 100)
    assert (comparison.pass1_before, comparison.pass1_after, comparison.change) == (0.25, 0.5, 0.25)
    assert comparison.num_samples == (8, 4)


def test_the_interval_is_paired_so_a_change_every_problem_shares_is_certain():
    """Problems from 0/8 to 7/8 each gain one pass: the interval of the paired change is that one change, where
    resampling the two evaluations independently would spread over the problems' differences."""
    before = evaluation_of({f"p{i}": (i, 8 - i, 0) for i in range(8)})
    after = evaluation_of({f"p{i}": (i + 1, 7 - i, 0) for i in range(8)})
    comparison = compare(before, after, 2000)
    assert comparison.change == 0.125 and comparison.ci95 == (0.125, 0.125) and comparison.excludes_zero
    assert (comparison.improved, comparison.worse) == (8, 0)


def test_the_interval_spans_the_resampled_means_and_one_that_touches_zero_does_not_exclude_it():
    # Resampling two problems whose changes are 1 and 0 gives means 0, 1/2 and 1, a quarter of them 0 and 1 each.
    comparison = compare(
        evaluation_of({"a": (0, 1, 0), "b": (1, 0, 0)}), evaluation_of({"a": (1, 0, 0), "b": (1, 0, 0)})
    )
    assert comparison.change == 0.5 and comparison.ci95 == (0.0, 1.0)
    assert not comparison.excludes_zero
    worse = compare(evaluation_of({"a": (1, 0, 0), "b": (1, 0, 0)}), evaluation_of({"a": (0, 1, 0), "b": (0, 1, 0)}))
    assert worse.ci95 == (-1.0, -1.0) and worse.excludes_zero and worse.worse == 2


def test_the_interval_is_drawn_from_its_seed():
    ids = [f"p{i}" for i in range(15)]
    before = evaluation_of(dict.fromkeys(ids, (4, 4, 0)))
    after = evaluation_of({pid: (i % 8, 8 - i % 8, 0) for i, pid in enumerate(ids)})
    intervals = [compare(before, after, 20, seed).ci95 for seed in (0, 0, 1, 2, 3)]
    assert intervals[0] == intervals[1] == compare(before, after, 20).ci95  # seed 0 unless told
    assert len(set(intervals)) > 2


def test_there_is_no_breakdown_when_an_eval_file_holds_no_samples():
    before = evaluation_of({"a": (1, 3, 0), "b": (2, 2, 0)})
    bare = Evaluation({1: 0.5}, 2, 4, {}, {"a": 2, "b": 2})  # an eval file without its samples
    comparison = compare(before, bare, 100)
    assert comparison.breakdown is None and comparison.change == 0.125
    assert comparison_summary(comparison).endswith("\n  no breakdown: an eval file holds no samples")
    assert breakdown(bare, before, ["a", "b"]) is None


def test_breakdown_covers_only_the_problems_it_is_given():
    before = evaluation_of({"a": (1, 3, 0), "b": (0, 2, 2)})
    after = evaluation_of({"a": (0, 4, 0), "b": (3, 1, 0)})
    # b: errors 2 -> 0 and wrong 2 -> 1 became three passes: one of skill, two of format.
    assert breakdown(before, after, ["b"]) == Breakdown(0.5, 0.25, 0.0, Outcomes(0, 2, 2), Outcomes(3, 1, 0))
    assert breakdown(before, after, ["a"]) == Breakdown(0.0, 0.0, 0.25, Outcomes(1, 3, 0), Outcomes(0, 4, 0))
    assert breakdown(before, after, ["a", "gone"]) is None  # a problem one side has no samples of


def _comparison(change: float, ci95: tuple[float, float], parts: Breakdown | None, **fields) -> Comparison:
    return Comparison(
        0.25, 0.25 + change, change, ci95, ci95[0] > 0 or ci95[1] < 0, 12, (8, 8), 5, 1, {}, parts, **fields
    )


PARTS = Breakdown(0.125, 0.1875, 0.0625, Outcomes(24, 48, 24), Outcomes(48, 40, 8))


def test_the_summary_is_the_change_with_its_interval_then_where_it_came_from():
    assert comparison_summary(_comparison(0.25, (0.1, 0.4), PARTS)) == (
        "pass@1 0.250 -> 0.500, change +0.250 [95% CI +0.100, +0.400] over 12 problems (5 better, 1 worse)\n"
        "  errors -> passes +0.125 (format), wrong -> passes +0.188 (skill), passes lost 0.062; "
        "samples: errors 24 -> 8, wrong 48 -> 40, passed 24 -> 48"
    )
    assert breakdown_summary(None) == "no breakdown: an eval file holds no samples"


def test_a_feedback_summary_names_the_last_turn_then_the_first():
    first = _comparison(-0.125, (-0.3, 0.05), None)
    assert comparison_summary(_comparison(0.25, (0.1, 0.4), PARTS, first_turn=first)) == (
        "last turn pass@1 0.250 -> 0.500, change +0.250 [95% CI +0.100, +0.400] over 12 problems (5 better, 1 worse)\n"
        "  errors -> passes +0.125 (format), wrong -> passes +0.188 (skill), passes lost 0.062; "
        "samples: errors 24 -> 8, wrong 48 -> 40, passed 24 -> 48\n"
        "first turn pass@1 0.250 -> 0.125, change -0.125 [95% CI -0.300, +0.050] over 12 problems (5 better, 1 worse)\n"
        "  no breakdown: an eval file holds no samples"
    )


class _Run:
    """What write_comparison uses of a W&B run: log() and summary."""

    def __init__(self):
        self.logged: list[dict] = []
        self.summary: dict = {}

    def log(self, metrics: dict) -> None:
        self.logged.append(metrics)


def test_write_comparison_writes_the_comparison_and_its_plot_into_the_run_dir(tmp_path):
    comparison = compare(
        evaluation_of({"a": (1, 3, 0), "b": (0, 2, 2)}), evaluation_of({"a": (0, 4, 0), "b": (3, 1, 0)})
    )
    write_comparison(comparison, tmp_path)
    written = json.loads((tmp_path / "comparison.json").read_text())
    assert written["change"] == 0.25 and written["per_problem"]["b"] == {"before": 0.0, "after": 0.75, "diff": 0.75}
    assert written["breakdown"]["before"] == {"passed": 1, "wrong": 5, "error": 2}
    assert (tmp_path / "comparison.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["comparison.json", "comparison.png"]


def test_write_comparison_logs_the_change_its_interval_and_breakdown_to_the_run(tmp_path):
    run = _Run()
    write_comparison(_comparison(0.25, (0.1, 0.4), PARTS), tmp_path, run)
    assert run.logged == [
        {
            "eval_compare/pass@1_before": 0.25,
            "eval_compare/pass@1_after": 0.5,
            "eval_compare/change": 0.25,
            "eval_compare/ci95_low": 0.1,
            "eval_compare/ci95_high": 0.4,
            "eval_compare/format": 0.125,
            "eval_compare/skill": 0.1875,
            "eval_compare/lost": 0.0625,
        }
    ]
    assert run.summary == {"eval_compare/excludes_zero": True}


def test_write_comparison_logs_the_first_turns_and_no_breakdown_it_does_not_have(tmp_path):
    run = _Run()
    first = _comparison(-0.125, (-0.3, 0.05), None)
    write_comparison(_comparison(0.0, (-0.2, 0.2), None, first_turn=first), tmp_path, run)
    assert run.logged == [
        {
            "eval_compare/pass@1_before": 0.25,
            "eval_compare/pass@1_after": 0.25,
            "eval_compare/change": 0.0,
            "eval_compare/ci95_low": -0.2,
            "eval_compare/ci95_high": 0.2,
            "eval_compare/first_turn/pass@1_before": 0.25,
            "eval_compare/first_turn/pass@1_after": 0.125,
            "eval_compare/first_turn/change": -0.125,
        }
    ]
    assert run.summary == {"eval_compare/excludes_zero": False}
    assert json.loads((tmp_path / "comparison.json").read_text())["first_turn"]["change"] == -0.125
