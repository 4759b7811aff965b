"""The logger group (codegrpo.config.logger): W&B by default in training, none by option, and the mode a closed
choice."""

from __future__ import annotations

from codegrpo.config.choices import LoggerBackend


def test_training_logs_to_wandb_unless_logger_none(compose_cfg):
    assert compose_cfg().logger.backend is LoggerBackend.wandb
    logger = compose_cfg("logger=none").logger
    assert logger.backend is LoggerBackend.none and logger.mode is None
