"""Harbor-style task folders: the shipped set, the Dockerfile subset the sandbox can hold, and bad folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codegrpo.data.repo_tasks import load_repo_task, load_repo_tasks
from codegrpo.errors import ProblemError
from codegrpo.resources import project_path

SHIPPED = project_path("problems/repo_tasks")


PLAIN = "FROM python:3.11\nWORKDIR /app\nCOPY src/ /app/\n"


def make_task(root: Path, name: str = "t", dockerfile: str = PLAIN, **files: str | None) -> Path:
    folder = root / name
    defaults = {
        "instruction.md": "Fix it.",
        "task.toml": 'version = "1.0"\n',
        "environment/Dockerfile": dockerfile,
        "environment/src/mod.py": "X = 1\n",
        "tests/test.sh": "#!/bin/bash\npytest /tests\n",
        "tests/test_mod.py": "from mod import X\n\ndef test_x():\n    assert X == 2\n",
    }
    for name_, text in {**defaults, **files}.items():
        path = folder / name_
        if text is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def test_the_shipped_tasks_load_each_with_its_files_tests_and_two_solutions():
    tasks, skipped = load_repo_tasks(SHIPPED)
    assert skipped == []
    assert {t.id for t in tasks} == {"fix-median", "add-triangle-area", "slugify-test"}
    for task in tasks:
        assert task.instruction.strip() and task.solution and task.wrong_solution
        assert all(path in task.files for path in task.public_tests) and task.public_tests
        assert any(name.startswith("test_") for name in task.hidden_tests)
        assert "test.sh" not in task.hidden_tests  # Harbor's script is not a test file
        assert not set(task.hidden_tests) & set(task.files)  # the hidden tests are not in the workspace
    median = next(t for t in tasks if t.id == "fix-median")
    assert sorted(median.files) == ["stats.py", "tests/test_stats.py"]  # COPY repo/ /app/: the folder's contents


def test_copy_follows_dockers_rules_for_folders_files_and_several_sources(tmp_path):
    folder = make_task(
        tmp_path,
        dockerfile=(
            "# a comment\nFROM docker.io/library/python:3.12-slim AS base\nWORKDIR /app\n"
            'COPY src ./lib\nCOPY --chown=1000 a.txt b.txt data/\nCOPY ["c.txt", "renamed.txt"]\n'
            "WORKDIR sub\nCOPY a.txt .\nWORKDIR /app\n"
            'RUN pip install --no-cache-dir \\\n    pytest==8.3.0\nCMD ["bash"]\n'
        ),
        **{"environment/a.txt": "a", "environment/b.txt": "b", "environment/c.txt": "c"},
    )
    task = load_repo_task(folder)
    assert task.files == {
        "lib/mod.py": b"X = 1\n",
        "data/a.txt": b"a",
        "data/b.txt": b"b",
        "renamed.txt": b"c",
        "sub/a.txt": b"a",
    }


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("RUN apt-get install -y git", "RUN apt-get install -y git needs the image"),
        ("ENV PYTHONPATH=/app", "ENV PYTHONPATH=/app needs the image"),
        ("ADD https://example.com/x.tar.gz /app/", "ADD"),
        ("COPY --from=builder /out /app/", "copies from another image"),
        ("COPY src /opt/elsewhere", "outside its WORKDIR /app"),
    ],
)
def test_a_task_that_needs_its_image_is_skipped_with_the_reason(tmp_path, line, reason):
    make_task(tmp_path, "needs", dockerfile=f"FROM python:3.11\nWORKDIR /app\nCOPY src/ /app/\n{line}\n")
    make_task(tmp_path, "fine")
    tasks, skipped = load_repo_tasks(tmp_path)
    assert [t.id for t in tasks] == ["fine"]
    assert len(skipped) == 1 and skipped[0].path.endswith("needs") and reason in skipped[0].reason


def test_a_base_image_other_than_pythons_is_skipped(tmp_path):
    make_task(tmp_path, dockerfile="FROM node:20\nWORKDIR /app\nCOPY src/ /app/\n")
    tasks, skipped = load_repo_tasks(tmp_path)
    assert tasks == [] and "its image node:20 is not Python's" in skipped[0].reason


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"instruction.md": None}, r"no instruction\.md"),
        ({"instruction.md": "  \n"}, r"instruction\.md is empty"),
        ({"task.toml": "version = \n"}, r"task\.toml does not parse"),
        ({"tests/test.sh": None}, r"no tests/test\.sh"),
        ({"tests/test_mod.py": None, "tests/helper.py": "x = 1\n"}, r"tests/ holds no pytest file"),
        ({"environment/Dockerfile": None}, r"no environment/Dockerfile"),
        ({"environment/Dockerfile": "WORKDIR /app\n"}, r"has no FROM line"),
        ({"environment/Dockerfile": "FROM python:3.11\nCOPY missing.py /x.py\n"}, r"COPY missing\.py: no such file"),
        ({"environment/Dockerfile": "FROM python:3.11\nCOPY ../../x /x\n"}, r"no such file in environment/"),
        ({"task.toml": '[codegrpo]\npublic_tests = ["tests/nope.py"]\n'}, r"public_tests names tests/nope\.py"),
    ],
)
def test_a_malformed_task_is_one_line_naming_what_is_wrong(tmp_path, change, message):
    folder = make_task(tmp_path)
    for name, text in change.items():
        if text is None:
            (folder / name).unlink()
        else:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    with pytest.raises(ProblemError, match=message) as raised:
        load_repo_tasks(tmp_path)
    assert "\n" not in str(raised.value) and str(folder) in str(raised.value)


def test_a_link_in_a_task_is_refused(tmp_path):
    folder = make_task(tmp_path)
    os.symlink("/etc/passwd", folder / "environment/src/passwd")
    with pytest.raises(ProblemError, match="passwd is a symbolic link"):
        load_repo_task(folder)


def test_a_folder_without_tasks_is_an_error(tmp_path):
    with pytest.raises(ProblemError, match="holds no task"):
        load_repo_tasks(tmp_path)
    with pytest.raises(ProblemError, match="does not exist"):
        load_repo_tasks(tmp_path / "nope")


def test_a_task_folder_given_for_the_folder_of_tasks_or_a_file_is_one_line_saying_which(tmp_path):
    from codegrpo.errors import ProblemError

    task = tmp_path / "one-task"
    task.mkdir()
    (task / "task.toml").write_text("[metadata]\n")
    with pytest.raises(ProblemError, match=r"one-task is a task: give the folder that holds it \(its parent, "):
        load_repo_tasks(task)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ProblemError, match=r"file.txt is a file, not a folder of task folders$"):
        load_repo_tasks(tmp_path / "file.txt")
