"""The generated transfer sets (problems/generate_families.py): the shipped files are what it builds, the
split is by family with every train family on both sides of the id split, every reference passes in the
real sandbox, and a bad family stops the build with one line naming it."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from collections import defaultdict

import pytest

from codegrpo.data.sets import load_problem_set
from codegrpo.errors import ProblemError
from codegrpo.resources import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "problems" / "generate_families.py"
_spec = importlib.util.spec_from_file_location("generate_families", SCRIPT)
families = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = families  # dataclasses look their module up there
_spec.loader.exec_module(families)


def _records(name: str) -> list[dict]:
    return [json.loads(line) for line in (PROJECT_ROOT / "problems" / f"{name}.jsonl").read_text().splitlines()]


def test_the_shipped_files_are_what_the_generator_builds():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "transfer.jsonl: 161 tasks in 33 families" in done.stdout
    assert "transfer_unseen.jsonl: 68 tasks in 18 families" in done.stdout
    assert "feedback.jsonl: 161 tasks in 33 families" in done.stdout


def test_split_by_family_with_every_train_family_on_both_sides(compose_cfg):
    train_records, unseen_records = _records("transfer"), _records("transfer_unseen")
    family_of = {r["id"]: r["family"] for r in train_records}
    assert not {r["family"] for r in train_records} & {r["family"] for r in unseen_records}
    assert not set(family_of) & {r["id"] for r in unseen_records}
    cfg = compose_cfg("problems=transfer")
    sides: dict[str, set[str]] = defaultdict(set)
    for split in ("train", "eval"):
        for problem in load_problem_set(dataclasses.replace(cfg.problems, split=split)):
            sides[family_of[problem.id]].add(split)
    assert set(sides) == set(family_of.values()) and len(sides) >= 30
    assert all(found == {"train", "eval"} for found in sides.values()), sides
    assert cfg.problems.eval_fraction == families.EVAL_FRACTION
    # Many kinds on both sides of the family split; every level in training. The unseen side is levels 1-2:
    # the base model passed 2 of 48 samples of its level-3 families, too few for a CPU run to move.
    kinds = {"arithmetic", "conditionals", "lists", "strings", "dicts", "loops"}
    assert {r["kind"] for r in train_records} >= kinds | {"algorithms"}
    assert {r["kind"] for r in unseen_records} >= kinds
    assert {r["level"] for r in train_records} == {1, 2, 3}
    assert {r["level"] for r in unseen_records} == {1, 2}


def test_the_feedback_set_is_the_train_families_with_a_public_call_that_gives_nothing_hidden_away():
    calls, expressions = _records("feedback"), _records("transfer")
    assert [r["id"] for r in calls] == [r["id"] for r in expressions]
    for call, expression in zip(calls, expressions, strict=True):
        assert [t["output"] for t in call["tests"]] == json.loads(expression["expected"])
        if call["public_tests"]:
            assert call["public_tests"] == call["tests"][:1] and len(call["tests"]) > 1
            # Returning what the public call showed passes no hidden one.
            assert any(t["output"] != call["tests"][0]["output"] for t in call["tests"][1:])
    assert sum(bool(r["public_tests"]) for r in calls) == len(calls) - 2  # count_digit_5, words_over_5: all alike


@pytest.mark.parametrize("name", ["transfer", "transfer_unseen", "feedback"])
def test_every_reference_passes_in_the_sandbox(name, compose_cfg, capsys):
    """The validate task in this process (its command: tests/commands/test_commands_validate.py)."""
    from codegrpo.tasks.validate import validate

    status = validate(compose_cfg(f"problems={name}", "problems.split=all", "weak_tests=false", config_name="validate"))
    out, err = capsys.readouterr()
    assert status == 0, out + err[-2000:]
    count = len(_records(name))
    assert f"{name}: {count}/{count} references pass" in out


def _family(**changes) -> object:
    base = families.Family(
        "plus_{p}",
        "arithmetic",
        1,
        "x",
        "returns x plus {p}.",
        "return x + {p}",
        lambda p, x: x + p,
        families.same((1,), (2,)),
        (1, 2, 3, 4, 5, 6, 7, 8),
    )
    return dataclasses.replace(base, **changes)


def _one_line_error(*args) -> str:
    with pytest.raises(ProblemError) as error:
        families.build(*args)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_a_reference_that_fails_stops_the_build_naming_the_family():
    assert families.build(
        [_family()],
        [_family(name="minus_{p}", prompt="returns x minus {p}.", reference="return x - {p}", spec=lambda p, x: x - p)],
    )
    wrong = _one_line_error([_family(reference="return x + {p} + 1")], families.UNSEEN)
    assert wrong.startswith("family plus_N: the reference of plus_1 gives [3, 4], the spec [2, 3]")
    raises = _one_line_error(families.TRAIN, [_family(reference="return x / 0")])
    assert raises.startswith("family plus_N: the reference of plus_1 raises ZeroDivisionError")


def test_a_family_split_that_leaves_a_side_empty_stops_the_build():
    assert _one_line_error(families.TRAIN, []) == "the family split leaves the unseen side with no family"
    assert _one_line_error([], families.UNSEEN) == "the family split leaves the train side with no family"
    # One task cannot be on both sides of the id split.
    lonely = _one_line_error([_family(params=(1,))], families.UNSEEN)
    assert lonely.startswith("family plus_N: none of its 1 tasks falls in the") and "add a parameter" in lonely
    both = _one_line_error([_family()], [_family()])
    assert both == "family plus_N is both a train and an unseen family"


def test_the_script_reports_a_bad_build_in_one_line(tmp_path):
    # The real script, with its family lists emptied on one side: exit status 2 and one line.
    copy = tmp_path / "generate_families.py"
    copy.write_text(SCRIPT.read_text().replace("\nUNSEEN = [", "\nUNSEEN = []\n_UNUSED = ["))
    done = subprocess.run(
        [sys.executable, str(copy), "--check"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "error: the family split leaves the unseen side with no family"
