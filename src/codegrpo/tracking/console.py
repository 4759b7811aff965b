"""What a training run tells the researcher, on the console and in train.log (Hydra's job log):

- at the start, the run dir, then the W&B mode and where its run lives;
- one line per logged step: reward, pass rate, status counts, step time and where it went (generation, with
  its tokens per second, reward and update); under rollout=feedback the turns, the public pass rate after the
  first turn and after the last, the fix rate and the episodes cut;
- at the end, the final reward and pass rate, where everything is, and `wandb sync` when offline.

Everything goes through `logging`, so Hydra's job logging writes it to the console and to train.log.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegrpo.reward import metric_names as keys
from codegrpo.reward.verdict import Status
from codegrpo.tracking import secrets
from codegrpo.tracking.runinfo import EVAL_FILES

if TYPE_CHECKING:
    from transformers import Trainer

log = logging.getLogger(__name__)


def quiet_library_deprecations() -> None:
    """Silence the FutureWarnings TRL's own code raises under transformers 5.18+ (it reads the deprecated
    ``model.is_gradient_checkpointing`` on every generation and calls ``gradient_checkpointing_enable`` /
    ``_disable``); no setting of ours causes them, and they say nothing a researcher can act on. Nor does TRL's
    word on every rollout=tools run that environment_factory is experimental (docs/agents.md says so once).
    Other warnings still show, and go to train.log too."""
    warnings.filterwarnings(
        "ignore", message=r"`(is_)?gradient_checkpointing(_enable|_disable)?` is deprecated", category=FutureWarning
    )
    warnings.filterwarnings("ignore", message=r"You are using 'environment_factory', which is an experimental")
    logging.captureWarnings(True)


def tell(text: str) -> None:
    """Print ``text`` for the user, and keep it in the job's log file (evaluate.log) beside what was logged."""
    print(text)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and handler.stream is not None:
            handler.stream.write(secrets.mask_text(text) + "\n")
            handler.flush()


def announce_run_dir(run_dir: Path) -> None:
    log.info("run dir: %s", run_dir.resolve())


def wandb_location(run) -> str:
    """Where a W&B run lives: its URL online, its offline-run-* dir offline."""
    if run is None:
        return ""
    if getattr(run, "offline", False) or run.settings.mode == "offline":
        return str(Path(run.dir).parent)
    return getattr(run, "url", None) or str(Path(run.dir).parent)


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def feedback_part(logs: dict[str, Any]) -> str:
    """rollout=feedback's `turns 2.1  public 25% -> 50%  fixed 33%  cut 12%` (the public pass rate after the
    first turn and after the last; the episodes cut by max_completion_length, when any were); else ""."""
    if keys.FEEDBACK_TURNS not in logs:
        return ""
    public = sorted((turn, value) for key, value in logs.items() if (turn := keys.public_pass_turn(key)) is not None)
    parts = [
        f"turns {logs[keys.FEEDBACK_TURNS]:.1f}",
        f"public {public[0][1]:.0%} -> {public[-1][1]:.0%}" if public else "",
        f"fixed {logs[keys.FIX_RATE]:.0%}" if keys.FIX_RATE in logs else "",
        f"cut {logs[keys.FEEDBACK_CUT]:.0%}" if logs.get(keys.FEEDBACK_CUT) else "",
    ]
    return "  ".join(p for p in parts if p)


def tools_part(logs: dict[str, Any]) -> str:
    """rollout=tools' `judged passed 1, failed 3  calls 4.2 (errors 25%)  turns 3.1  budget 10%` (the judge's
    statuses of the step's workspaces, the tool calls an episode made and the share that failed, the model's
    turns, the episodes that ran out of a budget, when any did); else ""."""
    if keys.TOOL_CALLS not in logs:
        return ""
    judged = [(s, logs.get(keys.judge(s))) for s in ("passed", "failed", "tampered", "infra")]
    budget = logs.get(keys.TOOL_BUDGET)
    parts = [
        "judged " + ", ".join(f"{name} {_count(count)}" for name, count in judged if count),
        f"calls {logs[keys.TOOL_CALLS]:.1f} (errors {logs.get(keys.TOOL_ERRORS, 0.0):.0%})",
        f"turns {logs[keys.TOOL_TURNS]:.1f}" if keys.TOOL_TURNS in logs else "",
        f"budget {budget:.0%}" if budget else "",
    ]
    return "  ".join(p for p in parts if p)


def dynamic_part(logs: dict[str, Any]) -> str:
    """sampler.dynamic's `rounds 2.5  filler 20%` (the generations a batch took, averaged over the logged steps,
    and the share of the batch that groups without spread filled), so the statuses before it, which count every
    round's completions, read as such; else ""."""
    if keys.DYNAMIC_ROUNDS not in logs:
        return ""
    filler = logs.get(keys.DYNAMIC_FILLER_SHARE)
    return f"rounds {logs[keys.DYNAMIC_ROUNDS]:.1f}" + (f"  filler {filler:.0%}" if filler else "")


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value >= 1 else f"{value:.2f} s"


def timing_part(logs: dict[str, Any]) -> str:
    """`gen 7.9 s at 41 tok/s, reward 0.02 s, update 1.1 s`: where the step's time went (the timing/* metrics,
    codegrpo.training.timing; the rest is other_s); "" without them."""
    if keys.GENERATION_S not in logs:
        return ""
    rate = logs.get(keys.TOKENS_PER_S)
    generation = _seconds(logs[keys.GENERATION_S]) + (f" at {rate:.0f} tok/s" if rate else "")
    return f"gen {generation}, reward {_seconds(logs[keys.REWARD_S])}, update {_seconds(logs[keys.UPDATE_S])}"


def step_line(logs: dict[str, Any], step: int, max_steps: int, seconds: float) -> str:
    """`step 3/8  reward 0.250  pass 25%  passed 1, failed 2, error 1  hacks 1  12.3 s (gen 7.9 s ...)`: the
    statuses that occurred (rollout=tools: tools_part), the flagged count when any, then feedback_part,
    dynamic_part and timing_part."""
    split = timing_part(logs)
    counts = {s.value: logs.get(keys.status(s)) for s in Status}
    statuses = ", ".join(f"{name} {_count(count)}" for name, count in counts.items() if count)
    pass_rate, tools = logs.get(keys.PASS_RATE), tools_part(logs)
    parts = [
        f"step {step}/{max_steps}" if max_steps > 0 else f"step {step}",
        f"reward {logs[keys.REWARD_MEAN]:.3f}",
        f"pass {pass_rate:.0%}" if pass_rate is not None else "",
        tools or statuses or "no completions scored",
        f"hacks {_count(logs[keys.HACKS_COUNT])}" if logs.get(keys.HACKS_COUNT) else "",
        feedback_part(logs),
        dynamic_part(logs),
        f"{seconds:.1f} s" + (f" ({split})" if split else ""),
    ]
    return "  ".join(p for p in parts if p)


def log_over_bars(text: str, bars: Sequence[Any] = ()) -> None:
    """Log ``text`` with the progress ``bars`` (tqdm's) cleared while it is written, then drawn again below
    it: on a terminal the trainer's bar and the step line shared a line (`12%|█▎ | 1/8 [00:19<02:14][...] -
    step 1/8 ...`)."""
    for bar in bars:
        bar.clear()
    try:
        log.info("%s", text)
    finally:
        for bar in bars:
            bar.refresh()


def install(trainer: Trainer) -> None:
    """Replace the trainer's dict-printing progress output with one story line per logged step. (Which
    steps write a completions table is the trainer's: codegrpo.training.trl_adapter.)"""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback, TrainerCallback

    class QuietProgress(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs) -> None:
            pass  # the step line below says it; the raw dict only repeated log_history.json

    class StoryLine(TrainerCallback):
        def __init__(self, progress: ProgressCallback | None) -> None:
            self.last = time.monotonic()
            self.progress = progress

        def on_train_begin(self, args, state, control, **kwargs) -> None:
            self.last = time.monotonic()
            announce_tracking()

        def on_log(self, args, state, control, logs=None, **kwargs) -> None:
            logs = logs or {}
            if keys.REWARD_MEAN in logs and state.is_world_process_zero:
                now = time.monotonic()
                bar = getattr(self.progress, "training_bar", None)  # ProgressCallback's, while it trains
                log_over_bars(
                    step_line(logs, state.global_step, state.max_steps, now - self.last),
                    [bar] if bar is not None else [],
                )
                self.last = now

    quiet_library_deprecations()
    progress = None
    if trainer.pop_callback(ProgressCallback) is not None:
        progress = QuietProgress()
        trainer.add_callback(progress)
    trainer.pop_callback(PrinterCallback)
    trainer.add_callback(StoryLine(progress))


def announce_tracking() -> None:
    """The W&B mode and where the run lives, once training starts (wandb's own banner is silenced)."""
    try:
        import wandb
    except ImportError:
        return
    run = wandb.run
    if run is None:
        log.info("W&B: off (logger=none)")
        return
    mode = "offline" if run.settings.mode == "offline" else run.settings.mode
    log.info("W&B: %s, %s", mode, wandb_location(run))


def final_summary(run_dir: Path, history: list[dict[str, Any]], run=None) -> str:
    """The end-of-run summary (logged, and returned for tests): the last step's numbers, then where each
    file the run wrote is."""
    from codegrpo.tracking.plots import CURVES

    steps = [row for row in history if keys.REWARD_MEAN in row]
    lines = ["run finished"]
    if steps:
        last = steps[-1]
        first_pass = steps[0].get(keys.PASS_RATE)
        pass_text = f", pass rate {last.get(keys.PASS_RATE, 0.0):.0%}" if keys.PASS_RATE in last else ""
        count = f"{len(steps)} logged step{'s' if len(steps) != 1 else ''}"
        lines[0] += f" after {count}: final reward {last[keys.REWARD_MEAN]:.3f}{pass_text}"
        if first_pass is not None and len(steps) > 1:
            lines[0] += f" (first step {first_pass:.0%})"
    places = [
        ("run dir", [run_dir]),
        ("config", [run_dir / "config.yaml"]),
        ("log", [run_dir / "train.log"]),
        ("metrics", [run_dir / "log_history.json"]),
        ("completions", [run_dir / "completions"]),
        ("plots", [run_dir / name for name in (*CURVES, "comparison.png")]),
        ("evaluation", [run_dir / name for name in EVAL_FILES]),
        ("model", [run_dir / "final_model"]),
    ]
    for label, paths in places:
        found = [path for path in paths if path.exists()]
        if found:
            lines.append(f"  {label + ':':<13}{found[0]}" + "".join(f", {path.name}" for path in found[1:]))
    if run is not None:
        location = wandb_location(run)
        lines.append(f"  {'W&B:':<13}{location}")
        if run.settings.mode == "offline":
            lines.append(f"  {'upload:':<13}wandb sync {location}")
    text = "\n".join(lines)
    log.info("%s", text)
    return text
