"""The public code-RL datasets, read in their own schemas (``problems.loader``): one module a source
(apps.py: apps and taco; code_contests.py; livecodebench.py; deepcoder.py; verifiable_coding.py;
humaneval_plus.py; leetcode.py), what they share in rows.py, and here the loading: the columns each needs, the date
window, the skip counts.

Each loader maps one row of its dataset into a record for ``data.problems.parse_problem`` (the stdio or call
form; HumanEval's for humaneval_plus), or says why the row cannot be used; unusable rows are skipped and
counted on stderr, never silently. Rows load through ``datasets.load_dataset(hub_path, hub_name, split=hub_split,
data_files=...)``: from the Hub by default, or from a local copy with ``problems.hub_path=json`` (or
``parquet``, ``arrow``) and ``problems.data_files=FILE`` in the dataset's own schema. A row that is
malformed (an ``input_output`` that is not JSON, tests that do not pair up) stops loading with a
one-line ProblemError naming the row, as does a missing data file or a dataset whose columns are not
the group's. The filters papers apply afterwards (``max_tests``, ``min_tests``, duplicate prompts) are
``data.sets.filter_problems``; the release-date window (``problems.after`` / ``before``) is applied here,
where the dates are.
"""

from __future__ import annotations

import glob
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from codegrpo.config.choices import Loader
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.data.files import resolve_path
from codegrpo.data.problems import Problem, parse_problem
from codegrpo.data.public_datasets.apps import map_apps, map_taco
from codegrpo.data.public_datasets.code_contests import map_code_contests
from codegrpo.data.public_datasets.deepcoder import map_deepcoder
from codegrpo.data.public_datasets.humaneval_plus import map_humaneval_plus
from codegrpo.data.public_datasets.leetcode import map_leetcode
from codegrpo.data.public_datasets.livecodebench import map_livecodebench
from codegrpo.data.public_datasets.rows import Row, Skip, _naive_utc
from codegrpo.data.public_datasets.verifiable_coding import map_verifiable_coding
from codegrpo.errors import ProblemError, UsageError


@dataclass
class Loaded:
    """The problems of a dataset and how many of its rows were skipped, by reason."""

    problems: list[Problem]
    rows: int
    skipped: Counter[str] = field(default_factory=Counter)

    def report(self) -> list[str]:
        return [f"problems: skipped {n} of {self.rows} rows ({why})" for why, n in sorted(self.skipped.items())]


# -- each dataset's schema --------------------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    mapper: Callable[[Mapping[str, Any], int, str], Row]
    columns: tuple[str, ...]  # the columns the mapper needs: a dataset without them is not this group's
    dated: bool = False  # rows carry a release date (problems.after / before; LeetCodeDataset's v0.3 rows only)


SCHEMAS = {
    Loader.apps: Schema(map_apps, ("question", "solutions", "input_output")),
    Loader.taco: Schema(map_taco, ("question", "solutions", "input_output")),
    Loader.code_contests: Schema(
        map_code_contests, ("name", "description", "public_tests", "private_tests", "generated_tests", "solutions")
    ),
    Loader.livecodebench: Schema(
        map_livecodebench, ("question_id", "question_content", "public_test_cases", "contest_date"), dated=True
    ),
    Loader.deepcoder: Schema(map_deepcoder, ("problem", "tests")),
    Loader.verifiable_coding: Schema(map_verifiable_coding, ("verification_info",)),
    Loader.humaneval_plus: Schema(map_humaneval_plus, ("task_id", "prompt", "entry_point", "test")),
    Loader.leetcode: Schema(map_leetcode, ("task_id", "entry_point", "test"), dated=True),
}


# -- loading ------------------------------------------------------------------------------------------

# The datasets library's builders that read files (problems.hub_path=json with problems.data_files=FILE).
FILE_BUILDERS = frozenset({"json", "parquet", "arrow", "csv", "text"})


def _window(cfg: ProblemsConfig) -> tuple[datetime | None, datetime | None]:
    bounds = []
    for key in ("after", "before"):
        value = getattr(cfg, key)
        try:
            bounds.append(_naive_utc(datetime.fromisoformat(str(value))) if value else None)
        except ValueError:
            raise UsageError(f"problems.{key}={value!r} is not an ISO date (YYYY-MM-DD)") from None
    return bounds[0], bounds[1]


def _data_files(cfg: ProblemsConfig) -> dict[str, str] | None:
    """data_files under the configured split's name (so hub_split works for local files too); a local
    path that does not exist is an error here, before the datasets library starts."""
    if not cfg.data_files:
        return None
    files = cfg.data_files
    if "://" not in files:
        local = resolve_path(files)
        if not (glob.glob(str(local)) if glob.has_magic(str(local)) else local.exists()):
            raise ProblemError(f"problems.data_files: {local} does not exist")
        if cfg.hub_path not in FILE_BUILDERS:  # a Hub id beside a local file: the library would ask the Hub
            raise UsageError(
                f"problems.data_files={files} is a local file, and problems.hub_path={cfg.hub_path} names a Hub "
                f"dataset: add problems.hub_path=json (or {', '.join(sorted(FILE_BUILDERS - {'json'}))}) to read it"
            )
        files = str(local)
    return {cfg.hub_split: files}


def read_dataset(cfg: ProblemsConfig) -> Loaded:
    """Every usable row of the dataset ``cfg.loader`` names, as validated problems, and the skip counts."""
    if cfg.loader not in SCHEMAS:  # Hydra refuses a misspelt loader at compose time; a script's config may not
        raise UsageError(f"problems.loader={cfg.loader!r} is not one of {', '.join(SCHEMAS)}")
    schema = SCHEMAS[cfg.loader]
    after, before = _window(cfg)
    if (after or before) and not schema.dated:
        raise UsageError(
            f"problems.after/before: {cfg.loader} rows have no release date (livecodebench and leetcode do)"
        )
    data_files = _data_files(cfg)
    names: list[str | None] = list(cfg.hub_names) or [cfg.hub_name]
    loaded = Loaded([], rows=0)
    seen: set[str] = set()
    for name in names:
        # Several configs: each id starts with its config's, as row numbers restart in each.
        prefix = f"{name}/" if len(names) > 1 else ""
        _read_config(cfg, schema, name, data_files, (after, before), prefix, loaded, seen)
    return loaded


def _read_config(
    cfg: ProblemsConfig,
    schema: Schema,
    name: str | None,
    data_files: dict[str, str] | None,
    window: tuple[datetime | None, datetime | None],
    prefix: str,
    loaded: Loaded,
    seen: set[str],
) -> None:
    """The usable rows of config ``name`` of the dataset, added to ``loaded`` (ids in ``seen`` are skipped)."""
    from datasets import load_dataset

    after, before = window
    source = cfg.data_files or (f"{cfg.hub_path} ({name})" if prefix else cfg.hub_path)
    try:
        rows = load_dataset(cfg.hub_path, name, split=cfg.hub_split, data_files=data_files)
    except Exception as error:  # the datasets library raises many kinds; all mean "cannot load"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        remote = not cfg.data_files or "://" in cfg.data_files
        local = " (or a local copy in its own schema: problems.data_files=FILE)"
        raise ProblemError(
            f"cannot load dataset {source!r} (split {cfg.hub_split!r}): {first_line}{local if remote else ''}"
        ) from None
    missing = [column for column in schema.columns if column not in rows.column_names]
    if missing:
        raise ProblemError(
            f"dataset {source!r} has no column {', '.join(missing)} that problems.loader="
            f"{cfg.loader} reads (its columns: {', '.join(rows.column_names)})"
        )
    loaded.rows += len(rows)
    for number, row in enumerate(rows):
        where = f"{source}[{cfg.hub_split}] row {number}"
        try:
            mapped = schema.mapper(row, number, where)
        except Skip as why:
            loaded.skipped[str(why)] += 1
            continue
        except (TypeError, AttributeError, KeyError, IndexError) as error:  # a value of a shape the schema has not
            raise ProblemError(f"{where}: a malformed row ({type(error).__name__}: {error})") from None
        released = mapped.released
        if (after or before) and released is None:  # a LeetCodeDataset v1/v2 row: no estimated_date
            loaded.skipped["no release date, with a release-date window"] += 1
            continue
        if released is not None and ((after and released < after) or (before and released >= before)):
            loaded.skipped["outside the release-date window"] += 1
            continue
        record = mapped.record | {"id": prefix + mapped.record["id"]} if prefix else mapped.record
        problem = parse_problem(record, where)
        if problem.id in seen:
            loaded.skipped["duplicate id"] += 1
            continue
        seen.add(problem.id)
        loaded.problems.append(problem)


def load(cfg: ProblemsConfig) -> list[Problem]:
    """The problems of ``cfg.loader``'s dataset; the rows skipped, by reason, are reported on stderr."""
    loaded = read_dataset(cfg)
    for line in loaded.report():
        print(line, file=sys.stderr)
    if not loaded.problems:
        raise ProblemError(
            f"dataset {cfg.data_files or cfg.hub_path!r} has no usable rows "
            f"({', '.join(f'{n} {why}' for why, n in loaded.skipped.items()) or 'it is empty'})"
        )
    return loaded.problems
