"""What the public datasets' loader tests share (tests/data/public_datasets/ and test_public_datasets.py): the
sample files of each loader, a problems config that reads one, and small rows and files."""

from __future__ import annotations

import json

import pytest

from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.data.public_datasets import read_dataset
from codegrpo.resources import PROJECT_ROOT

DATA = PROJECT_ROOT / "tests" / "data" / "code_datasets"
SAMPLES = json.loads((DATA / "samples.json").read_text())  # each loader's builder and sample file


def dataset_cfg(loader: str, data_files: str | None = None, **fields) -> ProblemsConfig:
    """problems=<loader> reading ``data_files`` (the loader's sample file if None)."""
    builder, name = SAMPLES[loader]
    return ProblemsConfig(
        name=loader,
        path="",
        loader=loader,
        hub_path=fields.pop("hub_path", builder),
        data_files=data_files or str(DATA / name),
        **fields,
    )


def by_id(loader: str, **fields):
    """The problems a loader reads from its sample file, by id."""
    return {p.id: p for p in read_dataset(dataset_cfg(loader, **fields)).problems}


def jsonl_file(tmp_path, rows: list[dict], name: str = "rows.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def one_line(error: pytest.ExceptionInfo) -> str:
    """The error's message, which must be one line."""
    message = str(error.value)
    assert "\n" not in message
    return message


def taco_row(**fields) -> dict:
    """A TACO row that maps to a problem; ``fields`` replace its columns."""
    return {
        "question": "Print a + b.",
        "solutions": json.dumps(["print(sum(map(int, input().split())))"]),
        "starter_code": "",
        "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
    } | fields
