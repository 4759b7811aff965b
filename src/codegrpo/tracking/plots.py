"""PNG plots of a run's reward curve and pass rate, for users who do not use W&B."""

from __future__ import annotations

from pathlib import Path

from codegrpo.reward.metric_names import CHANGE, PASS1_AFTER, PASS1_BEFORE, PASS_RATE, REWARD_MEAN, STEP

CURVES = {
    "reward_curve.png": (REWARD_MEAN, "mean reward"),
    "pass_rate.png": (PASS_RATE, "pass rate"),
}


def write_plots(history: list[dict], run_dir: Path) -> list[Path]:
    """One PNG per curve that the log history holds; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")  # no display on training machines
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    written = []
    for filename, (key, label) in CURVES.items():
        points = [(row[STEP], row[key]) for row in history if key in row and STEP in row]
        if not points:
            continue
        figure, axes = plt.subplots(figsize=(6, 3.5))
        axes.plot(*zip(*points, strict=True), marker="o")
        axes.set_title(f"{label} by training step: {run_dir.name}")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole: no 0.5 ticks on a short run
        axes.set_xlabel("step")
        axes.set_ylabel(label)
        axes.set_ylim(-0.02, 1.02)
        axes.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(run_dir / filename, dpi=100)
        plt.close(figure)
        written.append(run_dir / filename)
    return written


def write_comparison_plot(comparison: dict, path: Path) -> Path:
    """Per-problem pass@1 before and after (sorted by change), with the mean change and its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(comparison["per_problem"].items(), key=lambda item: item[1]["diff"])
    names = [name for name, _ in rows]
    figure, axes = plt.subplots(figsize=(7, max(3.0, 0.22 * len(rows) + 1.2)))
    positions = range(len(rows))
    axes.barh(
        positions, [r["diff"] for _, r in rows], color=["tab:green" if r["diff"] > 0 else "tab:red" for _, r in rows]
    )
    axes.set_yticks(list(positions), names, fontsize=7)
    axes.axvline(0, color="black", linewidth=0.8)
    low, high = comparison["ci95"]
    axes.axvspan(low, high, color="tab:blue", alpha=0.15, label="95% CI of the mean change")
    axes.axvline(comparison[CHANGE], color="tab:blue", label=f"mean change {comparison[CHANGE]:+.3f}")
    axes.set_xlim(-1.02, 1.02)
    axes.set_xlabel("pass@1 after - before (per problem)")
    axes.set_title(
        f"pass@1 {comparison[PASS1_BEFORE]:.3f} -> {comparison[PASS1_AFTER]:.3f} [{low:+.3f}, {high:+.3f}]",
        fontsize=9,
    )
    axes.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
