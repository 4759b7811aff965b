"""Problem files: JSONL (optionally .gz) read line by line with file:line errors, and written back."""

from __future__ import annotations

import gzip
import importlib.util
import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from codegrpo import resources
from codegrpo.data.problems import Problem, json_value, parse_problem, to_record
from codegrpo.errors import ProblemError


def resolve_path(path: str) -> Path:
    """A problem file: ``pkg://package/relative/path`` inside an installed package, or a file path
    (relative paths are taken from the project root, so any working directory works)."""
    if path.startswith("pkg://"):
        package, _, relative = path[len("pkg://") :].partition("/")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ProblemError(f"problem file {path}: package {package!r} is not installed (pip install it)")
        return Path(next(iter(spec.submodule_search_locations))) / relative
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else resources.project_path(candidate)


def _read_lines(path: Path) -> Iterable[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            yield from handle
    except (OSError, EOFError, zlib.error) as error:  # a truncated or corrupt .gz among them
        raise ProblemError(f"{path}: cannot be read ({error})") from None


def read_jsonl(file: Path) -> Iterator[tuple[str, Any]]:
    """(``file:line``, decoded record) for each non-blank line; a line that is not UTF-8 JSON is a ProblemError."""
    for number, raw in enumerate(_read_lines(file), start=1):
        where = f"{file}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProblemError(f"{where}: not UTF-8 text (byte {error.start + 1} of the line)") from None
        if not line.strip():
            continue
        try:
            record = json_value(line)
        except ValueError as error:
            raise ProblemError(f"{where}: not valid JSON ({error})") from None
        yield where, record


def write_problems(problems: Iterable[Problem], path: Path) -> None:
    """A problem file of ``problems``, one JSON record a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(to_record(p), ensure_ascii=False) + "\n" for p in problems), encoding="utf-8")


def load_problems(path: str, limit: int | None = None, language: str | None = None) -> list[Problem]:
    """Load and validate every line of a JSONL (or .jsonl.gz) problem file before anything trains: each
    Python test compiled, each id once. ``language``: problems.language (parse_problem), Python by default."""
    file = resolve_path(path)
    if not file.is_file():
        raise ProblemError(f"problem file {file} does not exist (set problems.path)")
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for where, record in read_jsonl(file):
        problem = parse_problem(record, where, language)
        if problem.id in seen:
            raise ProblemError(f"{where}: duplicate id {problem.id!r} (first at {seen[problem.id]})")
        seen[problem.id] = where
        problems.append(problem)
    if not problems:
        raise ProblemError(f"problem file {file} holds no problems")
    return problems[:limit] if limit else problems
