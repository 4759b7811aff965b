"""``python train.py`` answers at once when it has nothing to train: ``--help``, ``--cfg job`` and a config
that does not compose import neither torch, transformers nor trl (the trainer group's fields come from
codegrpo/config/grpo_fields.json), and say what they should. ``bench --only startup`` times them."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.helpers.commands import command, imported_modules

HEAVY = {"torch", "transformers", "trl"}


def train_py(*args: str) -> subprocess.CompletedProcess:
    """``python -X importtime train.py args...`` from the project root."""
    return command("train", *args, flags=("-X", "importtime"))


def heavy_imports(done: subprocess.CompletedProcess) -> set[str]:
    return {m.split(".")[0] for m in imported_modules(done.stderr)} & HEAVY


def messages(done: subprocess.CompletedProcess) -> list[str]:
    """stderr without -X importtime's report."""
    return [line for line in done.stderr.splitlines() if not line.startswith("import time:")]


def test_help_lists_the_groups_without_torch():
    done = train_py("--help")
    assert done.returncode == 0, "\n".join(messages(done))
    assert "== Groups: pick one option each (group=option) ==" in done.stdout
    listed = {
        line.split()[0]
        for line in done.stdout.split("== Groups")[1].split("== Examples")[0].splitlines()[1:]
        if line.strip()
    }
    assert {"model", "problems", "reward", "sandbox", "trainer", "logger", "peft", "sampler", "experiment"} <= listed
    assert "codegrpo-score" in done.stdout  # the companion commands
    assert not heavy_imports(done)


def test_cfg_job_prints_the_trainer_keys_without_torch():
    done = train_py("--cfg", "job", "trainer.learning_rate=1e-5")
    assert done.returncode == 0, "\n".join(messages(done))
    cfg = yaml.safe_load(done.stdout)
    trainer = cfg["trainer"]
    assert trainer["learning_rate"] == 1e-5 and trainer["max_steps"] == 8  # the override, and trainer=cpu's
    assert {"num_generations", "beta", "log_completions", "push_to_hub", "reward_weights"} <= set(trainer)
    assert "output_dir" not in trainer and "seed" not in trainer  # the run dir and the top-level seed
    assert cfg["sandbox"]["_target_"] == "codegrpo.sandbox.local.LocalSandbox"
    assert not heavy_imports(done)


def test_cfg_job_resolve_shows_the_run_dir_a_run_would_get(tmp_path):
    # The README's `--cfg job --resolve` failed: no job runs, so Hydra has no output dir to interpolate.
    done = train_py("--cfg", "job", "--resolve")
    assert done.returncode == 0, "\n".join(messages(done))
    assert yaml.safe_load(done.stdout)["run_dir"].startswith("outputs/runs/")
    done = train_py("--cfg", "job", "--resolve", f"hydra.run.dir={tmp_path}/run")
    assert yaml.safe_load(done.stdout)["run_dir"] == f"{tmp_path}/run"
    assert not (tmp_path / "run").exists() and not heavy_imports(done)
    # rollout=feedback's turn cap is an interpolation that yields a dict; resolving it in place failed
    # ("Value 'dict' is not a supported primitive type").
    done = train_py("rollout=feedback", "--cfg", "job", "--resolve")
    assert done.returncode == 0, "\n".join(messages(done))
    assert yaml.safe_load(done.stdout)["trainer"]["generation_kwargs"] == {"max_new_tokens": 128}


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("trainer.learning_rte=1", "'trainer.learning_rte'"),
        ("trainer.num_generations=many", "trainer.num_generations=many"),
        ("reward=nope", "Available options in 'reward': binary, partial"),  # not the schema node base_reward
    ],
)
def test_a_config_that_does_not_compose_is_one_line_without_torch(override, named):
    done = train_py(override)
    assert done.returncode == 2  # a usage error's status, as codegrpo's own (Hydra's would be 1)
    [line] = messages(done)
    assert line.startswith("error: ") and named in line, line
    assert done.stdout == ""
    assert not heavy_imports(done)


def test_two_hydra_modes_at_once_are_one_line():
    """`-m hparams_search=optuna --cfg job` (a sweep previewed) was Hydra's 12-line traceback."""
    done = train_py("-m", "hparams_search=optuna", "--cfg", "job")
    assert done.returncode == 2
    [line] = messages(done)
    assert line == "error: Only one of --run, --multirun, --cfg, --info and --shell_completion can be specified"


def test_hydra_shares_the_config_store_it_never_writes_through():
    """prepare_hydra makes a deep copy of Hydra's ConfigStore the store itself (Hydra copied it, every
    schema included, for each of the ~120 groups --help lists): safe while a load still copies its node."""
    import copy

    from hydra.core.config_store import ConfigStore

    from codegrpo.commands import prepare_hydra

    prepare_hydra(trainer=False)
    store = ConfigStore.instance()
    assert copy.deepcopy(store) is store
    stored = store.repo["base_train.yaml"].node
    loaded = store.load("base_train.yaml").node
    assert loaded == stored and loaded is not stored
