"""Where the configs and the shipped problem sets are, in a checkout or in an installed wheel.

In a checkout (editable install, or src/ on the path) they are the repo's conf/ and problems/, so
edits take effect at once. A wheel ships them inside the package as codegrpo/conf and
codegrpo/problem_sets (pyproject.toml maps them), because site-packages has no project root.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parents[1]  # the checkout's root, when the package runs from one
# Top-level folder in the repo -> its copy inside the installed package.
PACKAGED = {"conf": "conf", "problems": "problem_sets"}


def source_root() -> Path | None:
    """The checkout this package runs from, or None when it runs from an installed wheel."""
    root = PROJECT_ROOT
    is_checkout = (root / "pyproject.toml").is_file() and (root / "conf" / "train.yaml").is_file()
    return root if is_checkout else None


def config_dir() -> Path:
    """The Hydra config folder (the one holding train.yaml)."""
    root = source_root()
    return root / "conf" if root else PACKAGE_DIR / PACKAGED["conf"]


def project_path(relative: str | Path) -> Path:
    """A path the configs give relative to the project (``problems/seed.jsonl``).

    In a checkout it is taken from the repo root, whatever the working directory. Installed, a file
    that exists under the working directory wins (the user's own ``problems/x.jsonl``); otherwise a
    path under conf/ or problems/ maps onto the copy shipped in the package.
    """
    relative = Path(relative)
    root = source_root()
    if root:
        return root / relative
    if relative.exists() or not relative.parts or relative.parts[0] not in PACKAGED:
        return Path.cwd() / relative
    return PACKAGE_DIR / PACKAGED[relative.parts[0]] / Path(*relative.parts[1:])
