"""pytest for sandboxed programs: copied once per version into a folder the sandbox's user can read."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from codegrpo.errors import SandboxFatalError
from codegrpo.sandbox import pytest_site as sites


def test_the_copy_is_made_once_and_every_file_and_folder_is_readable_by_others(tmp_path):
    site = sites.pytest_site(tmp_path)
    assert site.name == f"pytest-{importlib.metadata.version('pytest')}"
    assert {p.name for p in site.iterdir()} >= {"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments"}
    for path in [site, *site.rglob("*")]:
        mode = path.stat().st_mode
        assert mode & stat.S_IROTH and (not path.is_dir() or mode & stat.S_IXOTH), path
    assert not list(site.rglob("__pycache__"))
    marker = site / "pytest" / "marker"
    marker.write_text("kept")
    assert sites.pytest_site(tmp_path) == site and marker.is_file()  # made once: not copied again
    assert [p.name for p in tmp_path.iterdir()] == [site.name]  # no staging folder left


def test_a_cache_the_sandboxs_user_cannot_reach_falls_back_to_a_folder_of_this_users_own(monkeypatch):
    closed = Path(tempfile.mkdtemp(dir="/var/tmp"))  # /var/tmp: every folder above it open to others
    try:
        closed.chmod(0o700)
        monkeypatch.setenv("CODEGRPO_CACHE", str(closed))
        root = sites._cache_root()
        assert root == sites.FALLBACK_ROOT / f"codegrpo-{os.getuid()}" / "sandbox-site"
        assert root.stat().st_uid == os.getuid() and stat.S_IMODE(root.stat().st_mode) == 0o755
        closed.chmod(0o755)
        assert sites._cache_root() == closed / "sandbox-site"
    finally:
        shutil.rmtree(closed)


def test_a_fallback_folder_another_user_could_write_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEGRPO_CACHE", str(tmp_path / "missing"))
    monkeypatch.setattr(sites, "FALLBACK_ROOT", tmp_path)
    root = sites._cache_root()
    assert root == tmp_path / f"codegrpo-{os.getuid()}" / "sandbox-site"
    root.chmod(0o777)
    with pytest.raises(SandboxFatalError, match="is not this user's own"):
        sites._cache_root()
