"""The trainer group's schema (codegrpo.config.grpo_schema): every GRPOConfig field settable, the static fields'
types agreeing, and a config holding it pickling, in this process and in a fresh one."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

from codegrpo.resources import PROJECT_ROOT


def test_every_grpo_field_is_settable(compose_cfg):
    from trl import GRPOConfig

    cfg = compose_cfg(
        "trainer.learning_rate=1e-5",
        "trainer.num_generations=8",
        "trainer.beta=0.1",
        "trainer.per_device_train_batch_size=8",
    )  # a generation batch num_generations divides
    assert cfg.trainer.learning_rate == 1e-5 and cfg.trainer.num_generations == 8 and cfg.trainer.beta == 0.1
    settable = {f.name for f in dataclasses.fields(cfg.trainer)}
    expected = {f for f in GRPOConfig.__dataclass_fields__ if GRPOConfig.__dataclass_fields__[f].init}
    assert expected - settable == {"output_dir", "seed"}  # the run dir and the top-level seed


def test_the_trainer_configs_static_fields_have_the_schemas_types():
    """TrainConfig.trainer is typed TrainerConfig: the fields codegrpo reads, which the schema built from
    GRPOConfig (a subclass) replaces with TRL's defaults. Their types must agree."""
    import typing

    from codegrpo.config.grpo_schema import GRPOTrainerConfig
    from codegrpo.config.trainer import TrainerConfig

    schema = GRPOTrainerConfig
    assert issubclass(schema, TrainerConfig)
    static, full = typing.get_type_hints(TrainerConfig), typing.get_type_hints(schema)
    assert {name: full[name] for name in static} == static
    defaults = schema()
    assert all(getattr(defaults, name) != "???" for name in static)  # every MISSING is replaced


def test_a_train_config_pickles(compose_cfg):
    """The trainer schema is built at run time, and still found by name: a config crosses processes (a
    launcher's jobs, DataLoader workers)."""
    cfg = compose_cfg("trainer.learning_rate=2e-5")
    again = pickle.loads(pickle.dumps(cfg))
    assert again == cfg and type(again.trainer) is type(cfg.trainer)


def test_a_fresh_process_unpickles_a_train_config(compose_cfg, tmp_path):
    """Where a launcher's job unpickles it: nothing has built the schema there, and importing its module does."""
    cfg = compose_cfg("trainer.learning_rate=2e-5")
    (tmp_path / "cfg.pickle").write_bytes(pickle.dumps(cfg))
    read = "import pickle, sys; print(pickle.loads(open(sys.argv[1], 'rb').read()).trainer.learning_rate)"
    done = subprocess.run(
        [sys.executable, "-c", read, str(tmp_path / "cfg.pickle")], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "2e-05", done.stderr[-2000:]
