"""The logger group: W&B or none, and the run's project, names and mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegrpo.config.choices import LoggerBackend, WandbMode


@dataclass
class LoggerConfig:
    backend: LoggerBackend = LoggerBackend.none  # wandb | none
    project: str = "codegrpo"
    entity: str | None = None
    group: str | None = None
    name: str | None = None
    tags: list[str] = field(default_factory=list)
    # online | offline | disabled | shared; None: WANDB_MODE, else online when wandb finds credentials.
    mode: WandbMode | None = None
    job_type: str | None = None  # None: WANDB_JOB_TYPE, else what the command is (train, eval)
    log_model: bool = False  # log the final model as a W&B artifact
