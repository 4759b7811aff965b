"""Experiment tracking (W&B): online with an API key, offline in the run dir without one, never a prompt."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codegrpo.config import LoggerConfig

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def redact(value: Any) -> Any:
    """Drop every entry whose key looks like a secret, at any depth."""
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items() if not any(m in str(k).upper() for m in SECRET_MARKERS)}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def wandb_mode(cfg: LoggerConfig) -> str:
    if cfg.mode:
        return cfg.mode
    return "online" if os.environ.get("WANDB_API_KEY") else "offline"


def start_run(cfg: LoggerConfig, run_dir: Path, config: dict[str, Any], run_id: str | None = None):
    """Start the W&B run that TRL's callback then reuses; None when logging is off."""
    if cfg.backend == "none":
        return None
    if cfg.backend != "wandb":
        raise ValueError(f"logger.backend must be 'wandb' or 'none', not {cfg.backend!r}")
    import wandb

    os.environ.setdefault("WANDB_SILENT", "true")
    return wandb.init(
        project=cfg.project,
        entity=cfg.entity,
        group=cfg.group,
        name=cfg.name or run_dir.name,
        tags=list(cfg.tags),
        dir=str(run_dir),
        mode=wandb_mode(cfg),
        config=redact(config),
        id=run_id,
        resume="allow" if run_id else None,
        settings=wandb.Settings(login_timeout=10, console="off"),
    )


def finish_run(run) -> None:
    if run is not None:
        run.finish()
