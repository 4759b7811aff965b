"""What a run dir records so the run can be repeated: config, git state, packages, seed, problem hash.
Secrets masked (codegrpo.tracking.secrets): the command line, the extra entries, the diff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.tracking import secrets

PACKAGES = (
    "codegrpo",
    "torch",
    "transformers",
    "trl",
    "datasets",
    "accelerate",
    "hydra-core",
    "omegaconf",
    "superserve",
    "wandb",
)


def _git(*args: str, where: Path = PROJECT_ROOT) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def codegrpo_commit() -> str | None:
    """The commit of the codegrpo checkout this runs from (None outside a git checkout)."""
    return _git("rev-parse", "HEAD").strip() or None


# What train.py's evaluation.before / evaluation.after write into the run dir (steps.evaluate_phase, compare).
EVAL_FILES = ("eval_before.json", "eval_after.json", "comparison.json")


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _project_state() -> dict[str, Any]:
    """The git state of the user's own project, the repo the command runs in, when it is not codegrpo's
    checkout: its files (problems, configs) are the run's too."""
    top = _git("rev-parse", "--show-toplevel", where=Path.cwd()).strip()
    if not top or Path(top).resolve() == PROJECT_ROOT.resolve():
        return {}
    return {
        "project": {
            "dir": top,
            "git_commit": _git("rev-parse", "HEAD", where=Path(top)).strip() or None,
            # Tracked files only: the run's own outputs/ and the user's data files are untracked.
            "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no", where=Path(top)).strip()),
        }
    }


def write_run_info(run_dir: Path, seed: int, problems_hash: str, extra: dict[str, Any] | None = None) -> Path:
    """Write run_info.json (and git.diff when the tree is dirty) into the run dir."""
    run_dir.mkdir(parents=True, exist_ok=True)
    diff = _git("diff", "HEAD")
    if diff:
        (run_dir / "git.diff").write_text(secrets.mask_text(diff))  # an edited .env stays home
    info = {
        "git_commit": codegrpo_commit(),
        "git_dirty": bool(diff),
        "seed": seed,
        "problems_sha256": problems_hash,
        "packages": package_versions(),
        "command": secrets.mask_argv(sys.argv),  # the model card quotes it
        **({"rerun_of": os.environ[RERUN_OF]} if os.environ.get(RERUN_OF) else {}),
        **_project_state(),
        **(extra or {}),
    }
    path = run_dir / "run_info.json"
    path.write_text(json.dumps(secrets.mask(info), indent=2))
    return path


def record_in_run_info(run_dir: Path, fields: dict[str, Any]) -> None:
    """Add ``fields`` to the run dir's run_info.json (what is known only later: the model that loaded)."""
    path = run_dir / "run_info.json"
    info = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps(secrets.mask(info | fields), indent=2))


RERUN = "rerun="
RERUN_OF = "CODEGRPO_RERUN_OF"  # set by rerun_arguments for this process: run_info.json records the source


def rerun_arguments(args: Sequence[str]) -> list[str]:
    """The command line that repeats a recorded run: ``rerun=<run dir> [override ...]`` (or the older
    ``--config-dir <run dir>/.hydra --config-name config``) becomes the run's own config name and config
    dir, its recorded overrides (.hydra/overrides.yaml), then the new overrides, which win. The run is
    composed as it was, from the same config files, into a new run dir: the source run is only read.
    Other command lines are returned as they are. Raises UsageError in one line."""
    args = list(args)
    source, rest = _rerun_source(args)
    if source is None:
        return args
    record = source / ".hydra"
    if not (record / "overrides.yaml").is_file() or not (record / "hydra.yaml").is_file():
        raise UsageError(
            f"rerun={source}: not a run dir (no .hydra/overrides.yaml and hydra.yaml): name a dir "
            "that python train.py wrote, e.g. outputs/runs/<date>"
        )
    import yaml  # type: ignore[import-untyped]

    try:
        overrides = yaml.safe_load((record / "overrides.yaml").read_text()) or []
        hydra = (yaml.safe_load((record / "hydra.yaml").read_text()) or {}).get("hydra", {})
    except (OSError, yaml.YAMLError) as error:
        raise UsageError(f"rerun={source}: its .hydra record cannot be read ({error})") from None
    given_dir = next((a.partition("=")[2] for a in rest if a.startswith("hydra.run.dir=")), None)
    if given_dir is not None and Path(given_dir).resolve() == source.resolve():
        raise UsageError(f"rerun={source}: hydra.run.dir is the run being repeated; name a new dir (or none)")
    config_dirs = [
        s["path"]
        for s in hydra.get("runtime", {}).get("config_sources", [])
        if s.get("provider") == "command-line" and s.get("schema") == "file"
    ]
    name = hydra.get("job", {}).get("config_name") or "train"
    os.environ[RERUN_OF] = str(source)
    return (
        ([f"--config-dir={config_dirs[0]}"] if config_dirs else [])
        + [f"--config-name={name}"]
        + [str(o) for o in overrides]
        + rest
    )


def _rerun_source(args: list[str]) -> tuple[Path | None, list[str]]:
    """(the run dir to repeat, the other arguments), or (None, args)."""
    reruns = [a for a in args if a.startswith(RERUN)]
    if reruns:
        return Path(reruns[-1][len(RERUN) :]).expanduser(), [a for a in args if not a.startswith(RERUN)]
    # The older documented form: --config-dir <run>/.hydra --config-name config (a run's composed config,
    # without its schema or Hydra's own settings: it could not train, and wrote FAILED into the source run).
    for index, arg in enumerate(args):
        value = (
            arg.partition("=")[2]
            if arg.startswith("--config-dir=")
            else args[index + 1]
            if arg in ("--config-dir", "-cd") and index + 1 < len(args)
            else None
        )
        if value and (Path(value) / "overrides.yaml").is_file() and Path(value).name == ".hydra":
            skip = {index} | ({index + 1} if "=" not in arg else set())
            rest = [a for i, a in enumerate(args) if i not in skip]
            rest = _drop_config_name(rest)
            return Path(value).parent, rest
    return None, args


def _drop_config_name(args: list[str]) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--config-name", "-cn"):
            skip = True
        elif not arg.startswith("--config-name="):
            out.append(arg)
    return out
