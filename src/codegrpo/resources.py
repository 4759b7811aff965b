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
    is_checkout = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "conf" / "train.yaml").is_file()
    return PROJECT_ROOT if is_checkout else None


def config_dir() -> Path:
    """The Hydra config folder (the one holding train.yaml)."""
    root = source_root()
    return root / "conf" if root else PACKAGE_DIR / PACKAGED["conf"]


def project_path(relative: str | Path) -> Path:
    """A relative path a user or a config gives (``mine.jsonl``, ``problems/seed.jsonl``).

    A file that exists under the working directory wins: the user's own, wherever they stand (``cd
    ~/data && python ~/codegrpo/train.py problems=jsonl problems.path=mine.jsonl``). Otherwise a shipped
    path (conf/..., problems/...) is taken from the checkout this package runs from, or installed, from the
    copy inside the package; anything else stays under the working directory, where the error names it.
    """
    relative = Path(relative)
    here = Path.cwd() / relative
    if here.exists() or not relative.parts or relative.parts[0] not in PACKAGED:
        return here
    root = source_root()
    return root / relative if root else PACKAGE_DIR / PACKAGED[relative.parts[0]] / Path(*relative.parts[1:])
