"""Checkpoints a run resumes from: written whole or not at all, and refused when the run differs.

A checkpoint is the trainer's ``checkpoint-N`` (model, optimizer, scheduler, RNG states of every rank,
trainer state) plus ``codegrpo_state.json``: the config it trained with, the problem set's SHA-256 and the
W&B run id. It is written into ``<run dir>/.saving/`` and renamed into place once complete, so a crash or
a full disk mid-save leaves the previous checkpoint as it was, and ``resume=auto`` never sees a
half-written one (it only looks at complete ``checkpoint-N`` dirs).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from codegrpo.errors import UsageError
from codegrpo.tracking import secrets

STATE_FILE = "codegrpo_state.json"
STAGING = ".saving"
_NAME = re.compile(r"^checkpoint-(\d+)$")
# Settings a resumed run may change: none of them changes what the steps already taken computed. A new
# trainer.max_steps (or num_train_epochs) extends or shortens the run; the LR schedule follows the new length.
FREE_ON_RESUME = (
    "resume",
    "resume_force",
    "run_dir",
    "logger",
    "evaluation",
    "plots",
    "save_model",
    "trainer.max_steps",
    "trainer.num_train_epochs",
    "completions_every",
    "preemption",
    "sandbox.max_concurrency",
    "trainer.save_steps",
    "trainer.save_total_limit",
    "trainer.save_strategy",
    "trainer.push_to_hub",
    "trainer.hub_model_id",
    "trainer.hub_token",
    "trainer.hub_private_repo",
    "trainer.hub_revision",
    "recipe",  # what the run reproduces and how it differs from its paper: prose and the paper's figures
)


def step_of(path: Path) -> int:
    match = _NAME.match(path.name)
    return int(match.group(1)) if match else -1


def is_complete(path: Path) -> bool:
    """A checkpoint-N dir the trainer finished: its trainer state is written last."""
    return step_of(path) >= 0 and path.is_dir() and (path / "trainer_state.json").is_file()


def complete(run_dir: Path) -> list[Path]:
    """The run's complete checkpoints, oldest first."""
    found = [p for p in run_dir.iterdir() if is_complete(p)] if run_dir.is_dir() else []
    return sorted(found, key=step_of)


def newest(run_dir: Path) -> Path | None:
    found = complete(run_dir)
    return found[-1] if found else None


def staging_dir(run_dir: Path) -> Path:
    return run_dir / STAGING


def discard_staging(run_dir: Path) -> None:
    """Remove what an unfinished save wrote (it frees the space a full disk needs back)."""
    shutil.rmtree(staging_dir(run_dir), ignore_errors=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(staged: Path, run_dir: Path) -> Path:
    """Move a complete checkpoint from the staging dir into the run dir, durably: its files reach the disk
    before the rename does, so after a power cut the name never points at missing data."""
    for file in staged.rglob("*"):
        if file.is_file():
            _fsync(file)
    target, old = run_dir / staged.name, staging_dir(run_dir) / f"old-{staged.name}"
    if target.exists():  # the same step saved again (a resumed run's last step): replace it
        target.rename(old)
    staged.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    _fsync(run_dir)
    discard_staging(run_dir)
    return target


def rotate(run_dir: Path, keep: int | None) -> list[Path]:
    """Delete all but the newest ``keep`` complete checkpoints (None or <= 0: keep all); returns the deleted."""
    if not keep or keep <= 0:
        return []
    old = complete(run_dir)[:-keep]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
    return old


def write_state(checkpoint: Path, config: dict[str, Any], problems_sha256: str, wandb_run_id: str | None) -> None:
    # Secrets (trainer.hub_token, ...) stay out of the run dir, as they stay out of W&B.
    state = {"config": secrets.mask(config), "problems_sha256": problems_sha256, "wandb_run_id": wandb_run_id}
    (checkpoint / STATE_FILE).write_text(json.dumps(state, indent=1, sort_keys=True))


def read_state(checkpoint: Path) -> dict[str, Any] | None:
    """The checkpoint's codegrpo state; None for a checkpoint written without one (another tool's)."""
    path = checkpoint / STATE_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat |= _flatten(item, f"{prefix}{key}.")
        return flat
    return {prefix.rstrip("."): value}


def _free(key: str) -> bool:
    return any(key == free or key.startswith(free + ".") for free in FREE_ON_RESUME)


# Before codegrpo.tracking.secrets, the state left out every key whose name merely held one of these
# (trainer.average_tokens_across_devices, evaluation.max_new_tokens): such a key, absent from a saved state,
# is not a difference.
_LEFT_OUT_BEFORE = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def _left_out_before(key: str, saved: dict[str, Any]) -> bool:
    return key not in saved and any(word in key.rsplit(".", 1)[-1].upper() for word in _LEFT_OUT_BEFORE)


def differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``key (saved -> current)`` for every setting that differs and would change training."""
    # Compared as JSON holds them (the saved side went through JSON: tuples are lists, keys strings).
    before, after = _flatten(saved), _flatten(json.loads(json.dumps(current, default=str)))
    keys = sorted(
        k
        for k in before.keys() | after.keys()
        if not _free(k) and not _left_out_before(k, before) and before.get(k) != after.get(k)
    )
    return [f"{k} ({before.get(k, '<unset>')!r} -> {after.get(k, '<unset>')!r})" for k in keys]


def check_resume(checkpoint: Path, config: dict[str, Any], problems_sha256: str, force: bool) -> None:
    """Refuse, in one line, to resume a checkpoint whose run had another config or problem set."""
    state = read_state(checkpoint)
    if state is None or force:
        return
    changed = differences(state["config"], secrets.mask(config))
    if state["problems_sha256"] != problems_sha256:
        changed.insert(0, f"the problem set (sha256 {state['problems_sha256'][:12]} -> {problems_sha256[:12]})")
    if changed:
        shown = "; ".join(changed[:5]) + (f"; and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise UsageError(
            f"resume: {checkpoint} was trained with a different setup: {shown}. Resume with the "
            f"run's own overrides, or set resume_force=true to continue anyway"
        )
