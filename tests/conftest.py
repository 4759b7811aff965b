"""Shared fixtures: configs composed the way users compose them, and a real local sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, open_dict

from codegrpo.cli import CONFIG_DIR
from codegrpo.config import register_configs

register_configs()


@pytest.fixture
def compose_cfg(tmp_path: Path):
    """compose_cfg(*overrides) -> the config train.py would get, with the run dir under tmp_path."""

    def _compose(*overrides: str) -> DictConfig:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = compose(config_name="train", overrides=list(overrides))
        with open_dict(cfg):
            cfg.run_dir = str(tmp_path / "run")
        return cfg

    yield _compose
    GlobalHydra.instance().clear()


@pytest.fixture(scope="session")
def local_sandbox():
    from tests.helpers.sandbox import make_sandbox

    return make_sandbox()
