"""The run's PNG plots: a curve per logged metric by training step, and the comparison's per-problem bars with
the mean change and its interval."""

from __future__ import annotations

import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from codegrpo.tracking.plots import write_comparison_plot, write_plots


def test_plots_have_a_title_and_whole_step_ticks(tmp_path, monkeypatch):
    import matplotlib.figure

    from codegrpo.tracking.plots import write_plots

    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    write_plots([{"step": 1, "rewards/code_reward/mean": 0.0}, {"step": 2, "rewards/code_reward/mean": 1.0}], tmp_path)
    [axes] = figures[0].axes
    assert axes.get_title() == f"mean reward by training step: {tmp_path.name}"
    ticks = [t for t in axes.get_xticks() if 1 <= t <= 2]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks  # a 2-step run had ticks at 1.25, 1.5, ...


@pytest.fixture
def drawn(monkeypatch) -> list[Figure]:
    """Every figure saved, in order; each is still written to its file."""
    figures: list[Figure] = []
    savefig = Figure.savefig

    def record(self, *args, **kwargs):
        figures.append(self)
        return savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return figures


PNG = b"\x89PNG\r\n\x1a\n"


def test_write_plots_draws_a_png_for_each_curve_the_history_holds(tmp_path):
    history = [{"step": 1, "rewards/code_reward/mean": 0.25, "pass_rate": 0.0}, {"step": 2, "pass_rate": 0.5}]
    assert write_plots(history, tmp_path) == [tmp_path / "reward_curve.png", tmp_path / "pass_rate.png"]
    assert all(path.read_bytes().startswith(PNG) for path in tmp_path.iterdir())


def test_a_curve_the_history_does_not_hold_is_not_drawn(tmp_path):
    assert write_plots([{"step": 1, "rewards/code_reward/mean": 0.5}], tmp_path) == [tmp_path / "reward_curve.png"]
    assert not (tmp_path / "pass_rate.png").exists()
    assert write_plots([{"pass_rate": 0.5}, {"step": 3, "loss": 0.1}], tmp_path / "none") == []  # no step, no curve
    assert write_plots([], tmp_path / "none") == [] and not (tmp_path / "none").exists()


def test_a_curve_is_each_steps_value_on_a_zero_to_one_axis(tmp_path, drawn):
    import matplotlib.pyplot as plt

    open_before = plt.get_fignums()
    history = [
        {"step": 1, "rewards/code_reward/mean": 0.25, "pass_rate": 0.0},
        {"step": 2, "pass_rate": 0.5},  # no reward this row
        {"rewards/code_reward/mean": 0.9},  # no step
        {"step": 3, "rewards/code_reward/mean": 0.75, "pass_rate": 1.0},
    ]
    write_plots(history, tmp_path)
    reward, pass_rate = (figure.axes[0] for figure in drawn)
    [line] = reward.get_lines()
    assert line.get_xdata().tolist() == [1, 3] and line.get_ydata().tolist() == [0.25, 0.75]
    assert (reward.get_xlabel(), reward.get_ylabel(), reward.get_ylim()) == ("step", "mean reward", (-0.02, 1.02))
    [line] = pass_rate.get_lines()
    assert line.get_xdata().tolist() == [1, 2, 3] and line.get_ydata().tolist() == [0.0, 0.5, 1.0]
    assert pass_rate.get_title() == f"pass rate by training step: {tmp_path.name}"
    assert plt.get_fignums() == open_before  # each figure closed once saved


COMPARISON = {
    "pass@1_before": 0.25,
    "pass@1_after": 0.375,
    "change": 0.125,
    "ci95": [-0.1, 0.3],
    "per_problem": {
        "up": {"before": 0.0, "after": 0.5, "diff": 0.5},
        "down": {"before": 0.5, "after": 0.25, "diff": -0.25},
        "same": {"before": 0.25, "after": 0.25, "diff": 0.0},
    },
}


def test_the_comparison_plot_is_a_bar_per_problem_sorted_by_change_gains_green(tmp_path, drawn):
    assert write_comparison_plot(COMPARISON, tmp_path / "comparison.png") == tmp_path / "comparison.png"
    assert (tmp_path / "comparison.png").read_bytes().startswith(PNG)
    [axes] = drawn[0].axes
    [bars] = axes.containers
    assert [label.get_text() for label in axes.get_yticklabels()] == ["down", "same", "up"]
    assert [bar.get_width() for bar in bars] == [-0.25, 0.0, 0.5]
    assert [to_hex(bar.get_facecolor()) for bar in bars] == [to_hex("tab:red"), to_hex("tab:red"), to_hex("tab:green")]
    assert axes.get_title() == "pass@1 0.250 -> 0.375 [-0.100, +0.300]" and axes.get_xlim() == (-1.02, 1.02)
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert sorted(legend) == ["95% CI of the mean change", "mean change +0.125"]


def test_the_comparison_plot_marks_the_mean_change_and_its_interval(tmp_path, drawn):
    write_comparison_plot(COMPARISON, tmp_path / "comparison.png")
    [axes] = drawn[0].axes
    zero, mean = (line.get_xdata() for line in axes.get_lines())
    assert list(zero) == [0, 0] and list(mean) == [0.125, 0.125]
    [interval] = [patch for patch in axes.patches if patch.get_label() == "95% CI of the mean change"]
    corners = interval.get_path().transformed(interval.get_patch_transform()).vertices[:, 0]
    assert (corners.min(), corners.max()) == pytest.approx((-0.1, 0.3))


def test_the_comparison_plot_grows_with_the_problems(tmp_path, drawn):
    many = COMPARISON | {"per_problem": {f"p{i}": {"before": 0.0, "after": 0.0, "diff": 0.0} for i in range(20)}}
    write_comparison_plot(COMPARISON, tmp_path / "few.png")
    write_comparison_plot(many, tmp_path / "many.png")
    assert [tuple(figure.get_size_inches()) for figure in drawn] == [(7.0, 3.0), (7.0, pytest.approx(5.6))]
