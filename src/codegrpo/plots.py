"""PNG plots of a run's reward curve and pass rate, for users who do not use W&B."""

from __future__ import annotations

from pathlib import Path

CURVES = {
    "reward_curve.png": ("rewards/code_reward/mean", "mean reward"),
    "pass_rate.png": ("pass_rate", "pass rate"),
}


def write_plots(history: list[dict], run_dir: Path) -> list[Path]:
    """One PNG per curve that the log history holds; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")  # no display on training machines
    import matplotlib.pyplot as plt

    written = []
    for filename, (key, label) in CURVES.items():
        points = [(row["step"], row[key]) for row in history if key in row and "step" in row]
        if not points:
            continue
        figure, axes = plt.subplots(figsize=(6, 3.5))
        axes.plot(*zip(*points, strict=True), marker="o")
        axes.set_xlabel("step")
        axes.set_ylabel(label)
        axes.set_ylim(-0.02, 1.02)
        axes.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(run_dir / filename, dpi=100)
        plt.close(figure)
        written.append(run_dir / filename)
    return written
