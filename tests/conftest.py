"""Shared fixtures: configs composed the way users compose them, and a real local sandbox."""

from __future__ import annotations

import os
from pathlib import Path

# One torch intra-op thread in every test process (in-process training and the train.py subprocesses, which
# inherit it), set before anything imports torch. The tests' models are tiny: a second OpenMP thread gains
# little, and on a 2-core CI machine shared with the sandboxes (or a busy one) each parallel region waits for
# a descheduled thread: on a busy 2-core machine one GRPO step of the 135M model took 125 s with 2 threads,
# 15 s with 1. (Evaluation sets its own count, codegrpo.evaluation.evaluator.set_torch_threads.)
# OMP_NUM_THREADS=2 make test restores torch's default.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf, open_dict

from codegrpo.commands import CONFIG_DIR, prepare_hydra

prepare_hydra(trainer=True)  # as the commands' entry points do; the trainer schema too: tests compose train.yaml


@pytest.fixture
def compose_cfg(tmp_path: Path):
    """compose_cfg(*overrides, config_name="train") -> the typed config (codegrpo.config.runs) the command
    would get, with the run dir under tmp_path."""

    def _compose(*overrides: str, config_name: str = "train"):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
        with open_dict(cfg):
            cfg.run_dir = str(tmp_path / config_name)
        return OmegaConf.to_object(cfg)

    yield _compose
    GlobalHydra.instance().clear()


SIGNALS = ("SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2")


@pytest.fixture(autouse=True)
def signal_handlers_put_back():
    """A test leaves the signal handlers as it found them: one that kept ray.init's SIGTERM -> sys.exit(15)
    made a later preemption test exit 15, not 75, and only in CI's order."""
    import signal

    before = {name: signal.getsignal(getattr(signal, name)) for name in SIGNALS}
    yield
    after = {name: signal.getsignal(getattr(signal, name)) for name in SIGNALS}
    changed = {name: handler for name, handler in after.items() if handler is not before[name]}
    for name in changed:
        signal.signal(getattr(signal, name), before[name])
    assert not changed, f"the test left signal handlers set: {changed}"


@pytest.fixture(scope="session")
def tiny_model() -> list[str]:
    """The overrides that train a tiny random model (tests/helpers/tiny_model.py) in place of the offline one."""
    from tests.helpers.tiny_model import tiny_model_overrides

    return tiny_model_overrides()


@pytest.fixture(scope="session")
def tiny_coder() -> list[str]:
    """The overrides that train the tiny model fitted to write one program (tests/helpers/tiny_model.py)."""
    from tests.helpers.tiny_model import tiny_coder_overrides

    return tiny_coder_overrides()


@pytest.fixture(scope="session")
def local_sandbox():
    from tests.helpers.sandbox import make_sandbox

    return make_sandbox()
