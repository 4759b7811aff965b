"""Repository tasks in Harbor's task layout, read for codegrpo's sandbox, which has no Docker.

    <task>/instruction.md         what the agent is asked to do
    <task>/task.toml              [metadata], [verifier] and [agent] timeouts; codegrpo's own [codegrpo] table
    <task>/environment/Dockerfile FROM python:..., WORKDIR and COPY lines: the workspace's starting files
    <task>/tests/test.sh          Harbor's verifier script; codegrpo runs the pytest files beside it itself
    <task>/tests/test_*.py        the hidden tests (with any conftest.py or data file beside them)
    <task>/solution/solve.sh      the reference solution, a shell script run in the workspace
    <task>/solution/wrong.sh      codegrpo's addition: a plausible solution that must fail

A Dockerfile line that needs the image (RUN other than installing pytest, ENV, ADD, COPY --from, a base image
that is not Python's) makes the task skipped, with the reason; a malformed task is a ProblemError.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from codegrpo.data.files import resolve_path
from codegrpo.errors import ProblemError

# Dockerfile instructions that change nothing the workspace holds.
_IGNORED = {"CMD", "ENTRYPOINT", "LABEL", "USER", "EXPOSE", "ARG", "SHELL", "HEALTHCHECK", "STOPSIGNAL"}
# `RUN pip install pytest`: the sandbox has pytest already.
_PYTEST_INSTALL = re.compile(r"^(python3? -m )?pip3? install( -[-\w=]+)*( pytest([<>=!~]=?[\w.]+)?)+$")


@dataclass(frozen=True)
class RepoTask:
    """One task: the instruction, the workspace's files and the hidden tests, each by its relative path."""

    id: str
    instruction: str
    files: dict[str, bytes]
    hidden_tests: dict[str, bytes]
    public_tests: tuple[str, ...] = ()  # workspace paths the agent's run_tests tool runs
    solution: str | None = None
    wrong_solution: str | None = None
    verifier_timeout_s: float = 60.0
    agent_timeout_s: float = 600.0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A task this sandbox cannot hold, and why."""

    path: str
    reason: str


class NeedsImage(Exception):
    """A Dockerfile line only the task's image could satisfy."""


def load_repo_tasks(root: str | Path) -> tuple[list[RepoTask], list[Skipped]]:
    """Every task folder under ``root`` (a folder holding task.toml), and the ones skipped, with why. A relative
    ``root`` is found as problem files are (data.files.resolve_path: where you stand, else the checkout)."""
    folder = resolve_path(str(root))
    if not folder.exists():
        raise ProblemError(f"task folder {folder} does not exist")
    if not folder.is_dir():
        raise ProblemError(f"task folder {folder} is a file, not a folder of task folders")
    if (folder / "task.toml").is_file():
        raise ProblemError(f"{folder} is a task: give the folder that holds it (its parent, {folder.parent})")
    tasks, skipped = [], []
    for toml in sorted(folder.glob("*/task.toml")):
        try:
            tasks.append(load_repo_task(toml.parent))
        except NeedsImage as reason:
            skipped.append(Skipped(str(toml.parent), str(reason)))
    if not tasks and not skipped:
        raise ProblemError(f"task folder {folder} holds no task (a folder with a task.toml)")
    return tasks, skipped


def task_set_hash(tasks: list[RepoTask]) -> str:
    """A stable hash of the tasks' content (what the agent sees and what judges it), for the run's records."""
    digest = hashlib.sha256()
    for task in tasks:
        for part in (task.id, task.instruction, json.dumps(task.public_tests), str(task.verifier_timeout_s)):
            digest.update(part.encode() + b"\0")
        for files in (task.files, task.hidden_tests):
            for name in sorted(files):
                digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def load_repo_task(folder: Path) -> RepoTask:
    """The task in ``folder``; ProblemError naming what is wrong, NeedsImage where only its image would do."""
    where = f"task {folder}"
    instruction = _text(folder / "instruction.md", where)
    try:
        config = tomllib.loads(_text(folder / "task.toml", where))
    except tomllib.TOMLDecodeError as error:
        raise ProblemError(f"{where}: task.toml does not parse ({error})") from None
    tests_dir = folder / "tests"
    if not (tests_dir / "test.sh").is_file():
        raise ProblemError(f"{where}: no tests/test.sh")
    hidden = _tree(tests_dir, exclude=frozenset({"test.sh"}))
    if not any(PurePosixPath(name).name.startswith("test_") and name.endswith(".py") for name in hidden):
        raise ProblemError(f"{where}: tests/ holds no pytest file (tests/test_*.py)")
    files = read_dockerfile(folder / "environment", where)
    own = config.get("codegrpo", {})
    public = tuple(own.get("public_tests", ()))
    for path in public:
        if path not in files:
            raise ProblemError(f"{where}: [codegrpo] public_tests names {path}, which the workspace does not hold")
    solution = folder / "solution"
    return RepoTask(
        id=folder.name,
        instruction=instruction,
        files=files,
        hidden_tests=hidden,
        public_tests=public,
        solution=_optional_text(solution / "solve.sh"),
        wrong_solution=_optional_text(solution / "wrong.sh"),
        verifier_timeout_s=float(config.get("verifier", {}).get("timeout_sec", 60.0)),
        agent_timeout_s=float(config.get("agent", {}).get("timeout_sec", 600.0)),
        metadata=dict(config.get("metadata", {})),
    )


def read_dockerfile(context: Path, where: str) -> dict[str, bytes]:
    """The files a Dockerfile of FROM python:..., WORKDIR and COPY lines puts under its WORKDIR, by path
    relative to it. NeedsImage for anything else the image would have to provide."""
    dockerfile = context / "Dockerfile"
    if not dockerfile.is_file():
        raise ProblemError(f"{where}: no environment/Dockerfile")
    workdir = PurePosixPath("/")
    files: dict[str, bytes] = {}
    image = None
    for line in _instructions(dockerfile.read_text(encoding="utf-8")):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            image = rest.split()[0]
            if not re.fullmatch(r"(docker\.io/)?(library/)?python(:[\w.-]+)?", image):
                raise NeedsImage(f"its image {image} is not Python's")
        elif keyword == "WORKDIR":
            workdir = PurePosixPath(posixpath.normpath(workdir / rest))
        elif keyword == "COPY":
            _copy(context, rest, workdir, files, where)
        elif keyword == "RUN" and _PYTEST_INSTALL.match(" ".join(rest.split())):
            continue
        elif keyword not in _IGNORED:
            raise NeedsImage(f"its Dockerfile's {keyword} {rest[:60]} needs the image")
    if image is None:
        raise ProblemError(f"{where}: environment/Dockerfile has no FROM line")
    inside = {}
    for path, data in files.items():
        if not PurePosixPath(path).is_relative_to(workdir) or PurePosixPath(path) == workdir:
            raise NeedsImage(f"its Dockerfile copies {path} outside its WORKDIR {workdir}")
        inside[str(PurePosixPath(path).relative_to(workdir))] = data
    return inside


def _copy(context: Path, rest: str, workdir: PurePosixPath, files: dict[str, bytes], where: str) -> None:
    words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    if any(word.startswith("--from") for word in words):
        raise NeedsImage(f"COPY {rest} copies from another image")
    words = [word for word in words if not word.startswith("--")]  # --chown, --chmod: one user here
    if len(words) < 2:
        raise ProblemError(f"{where}: COPY {rest} names no source and destination")
    *sources, target = words
    dest = PurePosixPath(posixpath.normpath(workdir / target))
    into_dir = target.endswith(("/", "/.")) or target == "." or len(sources) > 1
    for source in sources:
        path = (context / source).resolve()
        if not path.is_relative_to(context.resolve()) or not path.exists():
            raise ProblemError(f"{where}: COPY {source}: no such file in environment/")
        if path.is_dir():
            for name, data in _tree(path).items():
                files[str(dest / name)] = data
        else:
            files[str(dest / path.name if into_dir else dest)] = path.read_bytes()


def _instructions(text: str) -> list[str]:
    """A Dockerfile's instructions, continuation lines joined and comments dropped."""
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    if current:
        lines.append(current)
    return lines


def _tree(folder: Path, exclude: frozenset[str] = frozenset()) -> dict[str, bytes]:
    """Every regular file under ``folder`` by its relative POSIX path; links are refused (a task is data)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            raise ProblemError(f"{folder}: {relative} is a symbolic link; a task holds plain files")
        if path.is_file() and relative not in exclude and "__pycache__" not in path.parts:
            found[relative] = path.read_bytes()
    return found


def _text(path: Path, where: str) -> str:
    if not path.is_file():
        raise ProblemError(f"{where}: no {path.name}")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise ProblemError(f"{where}: {path.name} is empty")
    return text


def _optional_text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None
