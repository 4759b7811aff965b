"""Print pip constraints that pin each of codegrpo's key dependencies to the floor pyproject.toml declares
(``--check``: instead, fail unless the installed versions are those floors).

CI's oldest-versions run (.ci/oldest-versions) installs these exactly, as TRL's tests_min_versions job
does: a `>=` floor that nobody installs is a floor nobody knows works. The floors come from pyproject.toml
itself, so moving one there moves what this run installs. torch is the Makefile's pin.
"""

from __future__ import annotations

import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

# The packages whose APIs codegrpo calls into (issue 45); the rest float to their newest release.
PINNED = ("transformers", "trl", "accelerate", "datasets", "hydra-core", "omegaconf", "peft", "huggingface-hub")


def floors(pyproject: Path) -> dict[str, str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        declared += extra
    found: dict[str, str] = {}
    for line in declared:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        for spec in requirement.specifier:
            if name in PINNED and spec.operator == ">=":
                found[name] = spec.version
    missing = sorted(set(PINNED) - set(found))
    if missing:
        sys.exit(f"pyproject.toml declares no >= floor for {', '.join(missing)}")
    return found


def check(pinned: dict[str, str]) -> None:
    """Exit 1 naming each pinned package whose installed version is not its floor (a resolver that quietly
    picked another would make the run test nothing)."""
    wrong = [
        f"{name} {importlib.metadata.version(name)} (floor {floor})"
        for name, floor in sorted(pinned.items())
        if Version(importlib.metadata.version(name)) != Version(floor)
    ]
    if wrong:
        sys.exit(f"not at the declared floor: {', '.join(wrong)}")
    print("at the declared floors: " + ", ".join(f"{name} {floor}" for name, floor in sorted(pinned.items())))


if __name__ == "__main__":
    pinned = floors(Path(__file__).resolve().parent.parent / "pyproject.toml")
    if sys.argv[1:] == ["--check"]:
        check(pinned)
    else:
        for name, version in sorted(pinned.items()):
            print(f"{name}=={version}")
