"""Where the configs and shipped problem sets are (codegrpo.resources): the checkout's conf/ and problems/ when
the package runs from one, else their copies inside the installed package; a user's own file first."""

from __future__ import annotations

from pathlib import Path

import pytest

import codegrpo
from codegrpo import resources
from codegrpo.resources import PACKAGE_DIR, PACKAGED, PROJECT_ROOT, config_dir, project_path, source_root


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    """The package as a wheel would run it: no checkout above it (its would-be root an empty folder)."""
    root = tmp_path / "site-packages"
    root.mkdir()
    monkeypatch.setattr(resources, "PROJECT_ROOT", root)
    return root


def test_the_package_dir_is_codegrpos_and_the_project_root_two_folders_up():
    assert Path(codegrpo.__file__).resolve().parent == PACKAGE_DIR
    assert PACKAGE_DIR.parent.parent == PROJECT_ROOT and PACKAGE_DIR.parent.name == "src"
    assert PACKAGED == {"conf": "conf", "problems": "problem_sets"}


def test_a_checkout_is_its_own_source_root_with_its_conf():
    assert source_root() == PROJECT_ROOT
    assert config_dir() == PROJECT_ROOT / "conf" and (config_dir() / "train.yaml").is_file()


@pytest.mark.parametrize("present", [[], ["pyproject.toml"], ["conf/train.yaml"]])
def test_a_root_without_both_pyproject_and_conf_train_yaml_is_no_checkout(installed, present):
    for name in present:
        (installed / name).parent.mkdir(parents=True, exist_ok=True)
        (installed / name).write_text("")
    assert source_root() is None
    assert config_dir() == PACKAGE_DIR / "conf"


def test_a_root_with_both_is_a_checkout(installed):
    (installed / "conf").mkdir()
    (installed / "conf" / "train.yaml").write_text("")
    (installed / "pyproject.toml").write_text("")
    assert source_root() == installed and config_dir() == installed / "conf"


def test_a_users_own_file_under_the_working_directory_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "problems").mkdir()
    (tmp_path / "problems" / "seed.jsonl").write_text("")
    assert project_path("problems/seed.jsonl") == tmp_path / "problems" / "seed.jsonl"


def test_a_shipped_path_is_the_checkouts_and_anything_else_stays_under_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert project_path("problems/seed.jsonl") == PROJECT_ROOT / "problems" / "seed.jsonl"
    assert project_path(Path("conf/train.yaml")) == PROJECT_ROOT / "conf" / "train.yaml"
    assert project_path("mine.jsonl") == tmp_path / "mine.jsonl"  # where the error will name it
    assert project_path("data/problems/x.jsonl") == tmp_path / "data" / "problems" / "x.jsonl"
    assert project_path("") == tmp_path


def test_installed_a_shipped_path_is_the_packages_copy(installed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert project_path("problems/seed.jsonl") == PACKAGE_DIR / "problem_sets" / "seed.jsonl"
    assert project_path("conf/model/smol.yaml") == PACKAGE_DIR / "conf" / "model" / "smol.yaml"
    assert project_path("problems") == PACKAGE_DIR / "problem_sets"
    assert project_path("mine.jsonl") == tmp_path / "mine.jsonl"
