"""pytest for programs in the sandbox: a copy of this Python's pytest and the packages it needs, in a folder
the sandbox's user can read, which a backend binds read-only (``extra_ro_paths``) and programs put on their
path. The sandbox's interpreter sees no third-party package of its own, and a task's tests need pytest."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import stat
from pathlib import Path

from codegrpo.errors import SandboxFatalError
from codegrpo.sandbox.local import reachable_by_others

FALLBACK_ROOT = Path("/var/tmp")  # kept across reboots, open to every user: a folder of this user's own in it
# pytest and what it imports: these it cannot run without, and those some of its versions use (pygments since 8.4).
PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging")
OPTIONAL = ("py", "pygments")


def pytest_site(cache: Path | None = None) -> Path:
    """The folder holding pytest for sandboxed programs, made once per pytest version on this machine."""
    root = cache or _cache_root()
    site = root / f"pytest-{importlib.metadata.version('pytest')}"
    if site.is_dir():
        return site
    staging = root / f".{site.name}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in (*PACKAGES, *OPTIONAL):
        spec = importlib.util.find_spec(name)
        if (spec is None or spec.origin is None) and name in OPTIONAL:
            continue
        if spec is None or spec.origin is None:
            raise SandboxFatalError(f"{name} is not installed here, and a task's tests need it: pip install pytest")
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            shutil.copytree(origin.parent, staging / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, staging / origin.name)
    for folder, _, files in os.walk(staging):
        os.chmod(folder, 0o755)
        for file in files:
            os.chmod(os.path.join(folder, file), 0o644)
    try:
        staging.rename(site)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    return site


def _cache_root() -> Path:
    """Where the copy lives: codegrpo's cache if the sandbox's user can reach it, else a folder of this user's
    own under /var/tmp (a home folder is often closed to other users)."""
    base = Path(os.environ.get("CODEGRPO_CACHE") or Path.home() / ".cache" / "codegrpo")
    if base.is_dir() and reachable_by_others(base):
        (cache := base / "sandbox-site").mkdir(exist_ok=True)
        os.chmod(cache, 0o755)
        return cache
    fallback = FALLBACK_ROOT / f"codegrpo-{os.getuid()}" / "sandbox-site"
    fallback.mkdir(parents=True, exist_ok=True)
    for folder in (fallback.parent, fallback):
        info = folder.stat()
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise SandboxFatalError(f"{folder} is not this user's own: remove it, or set CODEGRPO_CACHE")
        os.chmod(folder, 0o755)
    return fallback
