"""The commands: thin Hydra entry points over the composition root (codegrpo.build).

Each module here is one console script (``codegrpo-<name>``; ``python train.py`` is ``codegrpo-train``):
it composes its config, hands ``run`` its task, and prints. No command imports another. Hydra names a
job, and so its log file, after the command's module: train.log, evaluate.log.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import NoReturn, TypeVar, cast

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from codegrpo.config.registration import register_configs
from codegrpo.config.runs import EvaluateConfig, PassRatesConfig, ScoreConfig, TrainConfig
from codegrpo.errors import CodegrpoError, UsageError
from codegrpo.resources import config_dir
from codegrpo.tracking import secrets

# The repo's conf/ in a checkout, the copy inside the package when installed from a wheel.
CONFIG_DIR = str(config_dir())


def prepare_hydra(*, trainer: bool) -> None:
    """The schemas and resolvers Hydra needs to compose a command's config, registered by the entry point (and
    tests that compose), not on import. Idempotent. ``trainer``: the trainer schema too, which may import trl
    (register_configs): only train composes it."""
    register_configs(trainer=trainer)
    OmegaConf.register_new_resolver("codegrpo_help", command_help, replace=True)
    # train.yaml's hydra.searchpath: the conf/ of the directory the user stands in (their own experiments),
    # read at the call (the shell's PWD can be stale in a child process); where there is none, Hydra's
    # warning says nothing.
    OmegaConf.register_new_resolver("codegrpo_cwd", os.getcwd, replace=True)
    warnings.filterwarnings("ignore", message=r"provider=hydra\.searchpath in main, path=.* is not available")
    # Hydra deep-copies its config repository each time it lists a group's options (``--help`` lists about
    # 120), and each copy reaches the ConfigStore singleton with every schema in it, the trainer's 189 fields
    # included: 4 of the 5 seconds ``train.py --help`` took. No copy is ever written through (ConfigStore.load
    # hands out a deep copy of each node it loads), so a copy of the singleton may be the singleton itself.
    ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]


def command_help(name: str) -> str:
    """``codegrpo-<name> --help``: the command's docstring (what it does, its input with an example, its
    main options), then the groups its config reads with their options, the default first, read from
    conf/<name>.yaml's defaults list and the group folders. The commands' configs set
    ``hydra.help.template: ${codegrpo_help:<name>}``."""
    import importlib
    import inspect

    import yaml  # type: ignore[import-untyped]

    module = importlib.import_module(f"codegrpo.commands.{name}")
    doc = inspect.cleandoc(module.__doc__ or "")
    defaults = yaml.safe_load((Path(CONFIG_DIR) / f"{name}.yaml").read_text())["defaults"]
    reads = getattr(module, "GROUPS_READ", None)  # where its config composes groups only its schema needs
    lines = [doc, "", "== Groups it reads (group=option, the default first) =="]
    for item in defaults:
        for group, default in item.items() if isinstance(item, dict) else ():
            if group.startswith(("override ", "optional ")) or (reads is not None and group not in reads):
                continue
            found = (Path(CONFIG_DIR) / group).glob("*.yaml")
            options = sorted(p.stem for p in found if not p.stem.startswith("base_"))  # base_*: schemas
            ordered = ([str(default)] if default else ["(none)"]) + [o for o in options if o != default]
            lines.append(f"  {group:<10} {', '.join(ordered)}")
    script = f"codegrpo-{name.replace('_', '-')}"
    lines += [
        "",
        f"  {script} --cfg job      every setting of the composed config (key=value overrides any)",
        f"  {script} --hydra-help   Hydra's own flags",
        "  Docs: README.md and docs/",
    ]
    return "\n".join(lines).replace("$", "$$") + "\n"  # Hydra's help is a string.Template


T = TypeVar("T")
C = TypeVar("C", TrainConfig, EvaluateConfig, ScoreConfig, PassRatesConfig)  # the command's config, as its dataclass
HINTS = {"problems.path": "problems=jsonl reads a file: add problems.path=/path/to/problems.jsonl"}


def check_mandatory(cfg: DictConfig) -> None:
    """Every ``???`` value is set, or one line naming each missing key."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        hints = "; ".join(HINTS.get(key, f"set {key}=...") for key in missing)
        raise UsageError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set ({hints})")


def exit_usage(message: str, mask: bool = True) -> NoReturn:
    """End the command with codegrpo's report of a user's error: one line on stderr, any secret masked (``mask``),
    and exit status 2 (Hydra's 1 is also a failed run's)."""
    print(f"error: {secrets.mask_text(message) if mask else message}", file=sys.stderr)
    sys.exit(2)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """A CodegrpoError raised inside ends the command as ``exit_usage`` does: every command's errors, one way."""
    try:
        yield
    except CodegrpoError as error:
        exit_usage(str(error))


def run(task: Callable[[C], T], cfg: DictConfig, on_failure: Callable[[BaseException], None] | None = None) -> T:
    """Run ``task`` on the config as its typed dataclasses (codegrpo.config.runs), calling ``on_failure`` with
    any error first. The one place user errors are reported: a CodegrpoError ends the command with one
    line on stderr and exit status 2. No secret gets past it (codegrpo.tracking.secrets): the console and the
    job log are masked, Hydra's files scrubbed, and a secret in the overrides or the config refused."""
    _report_errors_to_hydra()  # from here on, Hydra reports what is not a CodegrpoError (entry_point)
    secrets.mask_logging()  # Hydra's console and job log handlers exist by now
    started = False
    with one_line_errors():
        try:
            # Hydra wrote its files before calling us; a secret is masked there before it is refused here.
            overrides = _scrub_hydra_outputs()
            secrets.refuse_overrides(overrides)
            # Before the task imports any of them: a dependency out of pyproject's range is one line here,
            # not an error deep inside transformers or trl (CODEGRPO_SKIP_VERSION_CHECK=1 skips it). Imported
            # here: packaging's parsers cost --help and --cfg job 60 ms they never need.
            from codegrpo.config.requirements import check_dependencies

            check_dependencies()
            check_mandatory(cfg)
            secrets.refuse_config(cast(dict, OmegaConf.to_container(cfg, resolve=True)))
            started = True
            return task(cast(C, OmegaConf.to_object(cfg)))  # the dataclass of the command's schema
        except BaseException as error:
            if isinstance(error, secrets.Refused):  # what no mask knew: a run dir that exists keeps Hydra's files
                _scrub_hydra_outputs(error.values)
            if not started:  # refused before the task: nothing of a run was written, and an earlier run's dir
                if HydraConfig.initialized():  # keeps what it held (no FAILED marker on a finished run)
                    hydra_cfg = HydraConfig.get()
                    discard_empty_run_dir(Path(hydra_cfg.runtime.output_dir), f"{hydra_cfg.job.name}.log")
            elif on_failure is not None:
                on_failure(error)
            raise


def discard_empty_run_dir(run_dir: Path, log_name: str) -> None:
    """Remove a command's run dir that holds only what Hydra wrote (.hydra/ and the job's log): a failed
    command leaves nothing behind."""
    import shutil

    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {".hydra", log_name}:
        shutil.rmtree(run_dir, ignore_errors=True)


def _scrub_hydra_outputs(refused: Sequence[str] = ()) -> list[str]:
    """Mask the files Hydra wrote for this job (.hydra/, and a sweep's multirun.yaml), taking out the values
    ``refused`` too; returns the job's command-line overrides (none outside Hydra: a test calling run)."""
    if not HydraConfig.initialized():
        return []
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.output_subdir:
        secrets.scrub_hydra_files(Path(hydra_cfg.runtime.output_dir, hydra_cfg.output_subdir), refused)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        secrets.scrub_hydra_files(Path(hydra_cfg.sweep.dir, "multirun.yaml"), refused)
    return [*hydra_cfg.overrides.hydra, *hydra_cfg.overrides.task]


def entry_point(hydra_main: Callable[[], object], trainer: bool = False) -> Callable[[], None]:
    """A command's console script: its ``@hydra.main`` function, after ``prepare_hydra``, with a config that
    does not compose (a misspelt key, a wrong type, an unknown option) reported as ``run`` reports a
    CodegrpoError, in place of Hydra's five lines or more and its status 1. HYDRA_FULL_ERROR=1 still shows
    Hydra's own traceback.

    Hydra prints a composition error itself unless HYDRA_FULL_ERROR is set, so it is set until the task
    starts, and ``run`` takes it off: the task's own errors are reported as before."""

    def main() -> None:
        prepare_hydra(trainer=trainer)
        with one_line_errors():
            # Before Hydra sees argv: it writes the overrides to .hydra/ before any task runs.
            secrets.refuse_overrides(sys.argv[1:])
        if os.environ.get(FULL_ERROR):
            hydra_main()
            return
        with _full_error_until_the_task():
            try:
                hydra_main()
            except (ConfigCompositionException, OmegaConfBaseException) as error:
                exit_usage(compose_error_line(error))
            except OverrideParseException as error:
                # Unmasked: an override holding a secret was refused above, and the hint's example,
                # 'key="~/my dir"', reads as one to the masker.
                exit_usage(parse_error_line(error), mask=False)
            except ValueError as error:
                if not str(error).startswith(HYDRA_MODES):  # Hydra's own check of its flags; anything else is a bug
                    raise
                exit_usage(str(error))

    main.__doc__ = hydra_main.__doc__
    return main


FULL_ERROR = "HYDRA_FULL_ERROR"
# Hydra's ValueError for two of its modes at once (`-m ... --cfg job`): a usage error, one line.
HYDRA_MODES = "Only one of --run, --multirun, --cfg"
# Within an entry point's call, while the HYDRA_FULL_ERROR it set is still set (_full_error_until_the_task).
_full_error_held: ContextVar[bool] = ContextVar("full_error_held", default=False)


@contextlib.contextmanager
def _full_error_until_the_task() -> Iterator[None]:
    """HYDRA_FULL_ERROR=1 (unset before) until the task starts (``run``) or the command ends, unset then."""
    os.environ[FULL_ERROR] = "1"
    held = _full_error_held.set(True)
    try:
        yield
    finally:
        _report_errors_to_hydra()
        _full_error_held.reset(held)


def _report_errors_to_hydra() -> None:
    if _full_error_held.get():
        os.environ.pop(FULL_ERROR, None)
        _full_error_held.set(False)


def parse_error_line(error: OverrideParseException) -> str:
    """An override Hydra's grammar cannot read, as one line naming it (its message spans three)."""
    override = str(error).splitlines()[0].partition(": ")[2].strip() if str(error) else ""
    return (
        f"cannot read the override {secrets.mask_text(override)}: quote a value with characters Hydra's grammar "
        "reserves (~ = , [ ] { } ( ) ' \" \\ and spaces), e.g. 'key=\"~/my dir\"'"
    )


# Lines of Hydra's and OmegaConf's messages that a one-line error leaves out: the hint to append with +
# (a typed schema refuses a new key anyway), the key's types, and where Hydra searched.
_DETAIL = ("To append to your config", "full_key:", "reference_type=", "object_type=")


def compose_error_line(error: BaseException) -> str:
    """A composition error as one line: Hydra's message, then its cause's, less their details.

    ``Could not override 'trainer.learning_rte': Key 'learning_rte' not in 'GRPOTrainerConfig'``"""
    parts: list[str] = []
    cause: BaseException | None = error
    while cause is not None:
        kept = []
        for line in str(cause).splitlines():
            if line.startswith("Config search path"):
                break
            if line.strip() and not line.strip().startswith(_DETAIL):
                kept.append(line.rstrip())
        text = re.sub(r"\n[ \t]+", ", ", "\n".join(kept)).replace(":, ", ": ")  # an indented line is a list item
        text = " ".join(text.split())
        # The schema nodes Hydra lists among a group's options (base_reward) are not choices.
        text = re.sub(r"(Available options in '[^']*': .*)", lambda m: re.sub(r"\bbase_\w+(, )?", "", m[1]), text)
        if text and text not in parts:
            parts.append(text.rstrip("."))
        cause = cause.__cause__
    return ": ".join(parts) or type(error).__name__
