"""What a run dir records so the run can be repeated: config, git state, packages, seed, problem hash.
Secrets masked (codegrpo.tracking.secrets): the command line, the extra entries, the diff."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from codegrpo.resources import PROJECT_ROOT
from codegrpo.tracking import secrets

PACKAGES = ("codegrpo", "torch", "transformers", "trl", "datasets", "accelerate", "hydra-core", "omegaconf",
            "superserve", "wandb")


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def write_run_info(run_dir: Path, seed: int, problems_hash: str, extra: dict[str, Any] | None = None) -> Path:
    """Write run_info.json (and git.diff when the tree is dirty) into the run dir."""
    run_dir.mkdir(parents=True, exist_ok=True)
    diff = _git("diff", "HEAD")
    if diff:
        (run_dir / "git.diff").write_text(secrets.mask_text(diff))  # an edited .env stays home
    info = {
        "git_commit": _git("rev-parse", "HEAD").strip() or None,
        "git_dirty": bool(diff),
        "seed": seed,
        "problems_sha256": problems_hash,
        "packages": package_versions(),
        "command": secrets.mask_argv(sys.argv),  # the model card quotes it
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
