"""What a run dir records so the run can be repeated (codegrpo.tracking.runinfo): run_info.json's fields, the
user's own project's git state, fields added later, and the command line that repeats a recorded run."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest
import yaml

from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.tracking import runinfo
from codegrpo.tracking.runinfo import (
    PACKAGES,
    RERUN_OF,
    codegrpo_commit,
    package_versions,
    record_in_run_info,
    rerun_arguments,
    write_run_info,
)


@pytest.fixture
def rerun_env(monkeypatch):
    """rerun_arguments sets CODEGRPO_RERUN_OF for its process: the test's own value is put back after it."""
    monkeypatch.setenv(RERUN_OF, "")
    return monkeypatch


def _run_dir(path, overrides=("seed=3", "trainer.learning_rate=1e-5"), config_name="train", config_dir=None):
    """A run dir as train.py leaves it: its .hydra record of overrides and Hydra's own settings."""
    sources = [
        {"path": "hydra.conf", "schema": "pkg", "provider": "hydra"},
        {"path": str(PROJECT_ROOT / "conf"), "schema": "file", "provider": "main"},
    ]
    if config_dir:
        sources.append({"path": config_dir, "schema": "file", "provider": "command-line"})
    hydra = {"hydra": {"runtime": {"config_sources": sources}, "job": {"config_name": config_name}}}
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(list(overrides)))
    (path / ".hydra" / "hydra.yaml").write_text(yaml.safe_dump(hydra))
    return path


def test_run_info_records_the_users_own_project_where_it_is_a_git_repo(tmp_path, monkeypatch):
    from codegrpo.tracking.runinfo import write_run_info

    subprocess.run(["git", "init", "-q", str(tmp_path / "project")], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path / "project"),
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    monkeypatch.chdir(tmp_path / "project")
    (tmp_path / "project" / "outputs" / "runs").mkdir(parents=True)  # the run's own dir, and a data file: untracked
    (tmp_path / "project" / "mine.jsonl").write_text("{}\n")
    info = json.loads(write_run_info(tmp_path / "run", 1, "0" * 64).read_text())
    assert info["project"]["dir"] == str((tmp_path / "project").resolve()) and len(info["project"]["git_commit"]) == 40
    assert info["project"]["git_dirty"] is False and info["git_commit"] != info["project"]["git_commit"]
    subprocess.run(["git", "-C", str(tmp_path / "project"), "add", "mine.jsonl"], check=True)
    assert json.loads(write_run_info(tmp_path / "run", 1, "0" * 64).read_text())["project"]["git_dirty"] is True


def test_run_info_records_the_seed_hash_command_packages_and_extra_fields(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no git repo of the user's own: no project entry
    monkeypatch.setattr(sys, "argv", ["train.py", "seed=7", "problems=seed"])
    monkeypatch.delenv(RERUN_OF, raising=False)
    path = write_run_info(tmp_path / "new" / "run", 7, "ab" * 32, {"resumed_from": "outputs/runs/a", "seed": 8})
    assert path == tmp_path / "new" / "run" / "run_info.json"
    info = json.loads(path.read_text())
    assert info["seed"] == 8 and info["problems_sha256"] == "ab" * 32  # the extra entries come last and win
    assert info["command"] == ["train.py", "seed=7", "problems=seed"] and info["resumed_from"] == "outputs/runs/a"
    assert "project" not in info and "rerun_of" not in info
    assert set(info) == {"git_commit", "git_dirty", "seed", "problems_sha256", "packages", "command", "resumed_from"}
    assert info["packages"]["python"] == platform.python_version() and set(info["packages"]) == {"python", *PACKAGES}


def test_run_info_of_a_rerun_names_the_run_it_repeats(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(RERUN_OF, "outputs/runs/first")
    assert json.loads(write_run_info(tmp_path / "run", 1, "0" * 64).read_text())["rerun_of"] == "outputs/runs/first"


def test_run_info_records_the_checkouts_commit_and_whether_its_tree_is_dirty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert codegrpo_commit() == (head.stdout.strip() if head.returncode == 0 else None)
    info = json.loads(write_run_info(tmp_path / "run", 1, "0" * 64).read_text())
    assert info["git_commit"] == codegrpo_commit()
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True).stdout
    assert info["git_dirty"] is bool(diff) is (tmp_path / "run" / "git.diff").is_file()  # kept where there is one
    if diff:  # this checkout's state: git's own word is the oracle either way
        assert (tmp_path / "run" / "git.diff").read_text().startswith("diff --git ")


def test_codegrpos_own_checkout_is_no_project_of_the_users(tmp_path, monkeypatch):
    """Run from inside the checkout (a git repo where codegrpo runs from one), the run records no project."""
    monkeypatch.chdir(PROJECT_ROOT / "src")
    assert "project" not in json.loads(write_run_info(tmp_path / "run", 1, "0" * 64).read_text())


def test_package_versions_name_python_and_each_package_the_run_depends_on():
    import torch

    versions = package_versions()
    recorded = "python codegrpo torch transformers trl datasets accelerate hydra-core omegaconf superserve wandb"
    assert list(versions) == recorded.split()
    assert versions["python"] == platform.python_version() and versions["torch"] == torch.__version__
    assert versions["codegrpo"] != "not installed"


def test_a_package_that_is_not_installed_is_recorded_as_such(monkeypatch):
    import torch

    monkeypatch.setattr(runinfo, "PACKAGES", ("torch", "codegrpo-no-such-package"))
    assert package_versions() == {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "codegrpo-no-such-package": "not installed",
    }


def test_fields_known_later_are_added_to_run_info_and_win(tmp_path):
    (tmp_path / "run_info.json").write_text(json.dumps({"seed": 1, "model": "asked"}))
    record_in_run_info(tmp_path, {"model": "loaded", "dtype": "float32"})
    assert json.loads((tmp_path / "run_info.json").read_text()) == {"seed": 1, "model": "loaded", "dtype": "float32"}


def test_fields_recorded_before_run_info_exists_start_it_and_leave_out_secret_names(tmp_path):
    record_in_run_info(tmp_path, {"model": "loaded", "hf_token": "hf_abcdefghijklmnopqrstuvwxyz012345"})
    assert json.loads((tmp_path / "run_info.json").read_text()) == {"model": "loaded"}


def test_a_command_line_that_repeats_no_run_is_returned_as_it_is(rerun_env, tmp_path):
    args = ["seed=3", "--config-dir", str(tmp_path), "--config-name", "mine"]  # a config dir, not a run's .hydra
    assert rerun_arguments(args) == args
    assert rerun_arguments(()) == []
    assert rerun_arguments(["seed=3", "--config-dir"]) == ["seed=3", "--config-dir"]  # Hydra names what is missing
    assert os.environ[RERUN_OF] == ""


def test_a_rerun_composes_the_runs_own_config_and_overrides_then_the_new_ones(rerun_env, tmp_path):
    source = _run_dir(tmp_path / "first", config_name="evaluate", config_dir="/mine/conf")
    args = rerun_arguments(["trainer.learning_rate=3e-5", f"rerun={source}", "logger=none"])
    assert args == [
        "--config-dir=/mine/conf",
        "--config-name=evaluate",
        "seed=3",
        "trainer.learning_rate=1e-5",
        "trainer.learning_rate=3e-5",
        "logger=none",
    ]
    assert os.environ[RERUN_OF] == str(source)


def test_a_rerun_of_a_run_with_no_config_dir_or_name_of_its_own_uses_train(rerun_env, tmp_path):
    source = _run_dir(tmp_path / "first", overrides=(), config_name=None)
    assert rerun_arguments([f"rerun={source}"]) == ["--config-name=train"]


def test_the_last_rerun_names_the_run_repeated(rerun_env, tmp_path):
    first, second = _run_dir(tmp_path / "first", ("seed=1",)), _run_dir(tmp_path / "second", ("seed=2",))
    assert rerun_arguments([f"rerun={first}", f"rerun={second}"]) == ["--config-name=train", "seed=2"]
    assert os.environ[RERUN_OF] == str(second)


@pytest.mark.parametrize("form", ["separate", "joined", "short"])
def test_the_older_config_dir_form_repeats_the_run_too(rerun_env, tmp_path, form):
    source = _run_dir(tmp_path / "first")
    record = str(source / ".hydra")
    given = {
        "separate": ["--config-dir", record, "--config-name", "config"],
        "joined": [f"--config-dir={record}", "--config-name=config"],
        "short": ["-cd", record, "-cn", "config"],
    }[form]
    assert rerun_arguments([*given, "seed=4"]) == [
        "--config-name=train",
        "seed=3",
        "trainer.learning_rate=1e-5",
        "seed=4",
    ]
    assert os.environ[RERUN_OF] == str(source)


def test_a_rerun_of_a_dir_that_is_no_run_is_one_line(rerun_env, tmp_path):
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "overrides.yaml").write_text("[]\n")  # no hydra.yaml
    with pytest.raises(UsageError, match=rf"^rerun={tmp_path}: not a run dir \(no .hydra/overrides.yaml and hyd"):
        rerun_arguments([f"rerun={tmp_path}"])
    assert os.environ[RERUN_OF] == ""


def test_a_rerun_whose_record_does_not_parse_is_one_line(rerun_env, tmp_path):
    source = _run_dir(tmp_path / "first")
    (source / ".hydra" / "overrides.yaml").write_text("- [unclosed\n")
    with pytest.raises(UsageError, match=r"first: its \.hydra record cannot be read"):
        rerun_arguments([f"rerun={source}"])


def test_a_rerun_into_the_run_it_repeats_is_refused(rerun_env, tmp_path):
    source = _run_dir(tmp_path / "first")
    with pytest.raises(UsageError, match=r"hydra\.run\.dir is the run being repeated"):
        rerun_arguments([f"rerun={source}", f"hydra.run.dir={tmp_path}/./first"])
    assert rerun_arguments([f"rerun={source}", f"hydra.run.dir={tmp_path}/second"])[-1] == (
        f"hydra.run.dir={tmp_path}/second"
    )
