"""The bench's command line: a section it does not have is an error, not an empty run (the sections' figures
are the benches' own; they are not timed tests); each section a module of benchmarks/sections/; and nothing in
benchmarks/ imports from tests/ (the tests import the corpora and the fake they share from benchmarks/)."""

from __future__ import annotations

import ast
import importlib
import re

import pytest
from benchmarks.bench import SECTIONS, main

from codegrpo.resources import PROJECT_ROOT
from tests.helpers.tiny_model import tiny_model

BENCHMARKS = PROJECT_ROOT / "benchmarks"


def test_an_unknown_section_is_an_error_naming_the_sections(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--only", "local,nope"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --only: no section 'nope'; the sections: local, io, superserve")
    assert err.count("\n") == 1  # one line, not argparse's usage block


@pytest.mark.slow
def test_the_startup_section_runs_each_command_to_the_status_it_expects(tmp_path):
    """Its misspelt-key row expected exit 1 after usage errors became 2: the section crashed, and no test ran it."""
    from benchmarks.sections.startup import bench_startup

    rows = bench_startup(1, tmp_path)
    assert any("misspelt" in str(row) for row in rows)


@pytest.mark.slow
def test_the_feedback_section_replays_its_episodes_and_prints_the_loops_share():
    """It crashed twice on a changed signature (public() and hidden() took the reward's SameTest, the
    generation read evaluation.top_p) with no test running it: two episodes of short turns, one replay."""
    from benchmarks.sections.feedback import bench_feedback

    rows = dict((measure, value) for measure, value, _ in bench_feedback(episodes=2, new_tokens=16, rounds=1))
    share = rows["the loop's share of the rollout, %"]
    assert 0 < share < 100 and rows["the loop's own time per step, s (best replay)"] > 0


def test_every_section_is_in_the_docstring():
    import benchmarks.bench

    doc = benchmarks.bench.__doc__ or ""
    assert [name for name in SECTIONS if not re.search(rf"(^|\W){name}\b", doc)] == []


def test_every_section_names_modules_with_a_title_and_a_run_and_every_module_is_named():
    named = {module for modules in SECTIONS.values() for module in modules}
    titles = {}
    for module in named:
        section = importlib.import_module(f"benchmarks.sections.{module}")
        assert isinstance(section.TITLE, str) and callable(section.run), module
        titles[section.TITLE] = module
    assert len(titles) == len(named)  # a table is printed once per title
    on_disk = {path.stem for path in (BENCHMARKS / "sections").glob("*.py") if path.stem != "__init__"}
    assert named == on_disk


def _imported(path) -> set[str]:
    """The top-level packages a module imports, anywhere in it (functions' lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_nothing_in_benchmarks_imports_from_tests():
    modules = sorted(BENCHMARKS.rglob("*.py"))
    assert len(modules) > 10
    assert [str(path.relative_to(PROJECT_ROOT)) for path in modules if "tests" in _imported(path)] == []


# Each section's bench at its smallest sizes: the figures mean nothing here, the run is what is tested (the
# generation section crashed on evaluation's new top_p with no test running it). startup and feedback have
# their own tests above. SCRATCH stands for the test's tmp_path, TINY for the tiny random model's path
# (tests/helpers/tiny_model.py), which the training sections train in place of the offline model.
SCRATCH, TINY = object(), object()
SMALLEST: dict[str, tuple[str, tuple]] = {
    "local": ("bench_local", ([1], 40)),
    "io": ("bench_io", ([1],)),
    "superserve": ("bench_superserve", (1,)),
    "train": ("bench_train", (1, 1, SCRATCH, TINY)),
    "memory": ("bench_memory", (2,)),
    "generation": ("bench_generation", (2, 2, 8, 1)),
    "training_generation": ("", ()),
    "logging": ("bench_logging", (1, 1, SCRATCH, TINY)),
    "hacks": ("bench_hacks", (1,)),
    "sampler": ("bench_sampler", (1, [1], 2, 2, 2, 1, ["uniform"], SCRATCH, TINY)),
    "ray": ("bench_ray", (40, 2)),
    "agents": ("bench_agents", ([2], 1, 1, 0)),
}


def _training_generation():
    from benchmarks.common import offline_model
    from benchmarks.sections.training_generation import measure, rows

    from codegrpo.models.loading import resolve_model

    return rows(measure(str(resolve_model(offline_model())), ["generate"], [2], 4), 4)


def test_every_section_but_startup_and_feedback_has_a_smallest_run():
    named = {module for modules in SECTIONS.values() for module in modules}
    assert named - {"startup", "feedback"} == set(SMALLEST)


@pytest.mark.slow
@pytest.mark.parametrize("section", sorted(SMALLEST))
def test_every_section_runs_and_prints_numbers(section, tmp_path):
    if section == "ray":
        pytest.importorskip("ray")
    function, args = SMALLEST[section]
    if not function:
        rows = _training_generation()
    else:
        bench = getattr(importlib.import_module(f"benchmarks.sections.{section}"), function)
        given = {id(SCRATCH): tmp_path, id(TINY): str(tiny_model())}
        rows = bench(*(given.get(id(arg), arg) for arg in args))
    assert rows and all(isinstance(value, float | int) for _, value, _ in rows), rows


def test_the_agents_section_runs_its_tool_calls_and_judges_the_solved_workspaces():
    """A tiny run on the real local sandbox: every row a number, every call ok and every solved workspace
    passed (a note "k/n ..." with k < n fails it), and the ratios printed."""
    from benchmarks.sections.agents import bench_agents

    rows = bench_agents([2], episodes=2, calls=2, judged=1)
    assert all(isinstance(value, float) and value > 0 for _, value, _ in rows), rows
    counted = [re.fullmatch(r"(\d+)/(\d+) (calls ok|passed)", note) for _, _, note in rows]
    tallies = [(int(m[1]), int(m[2]), m[3]) for m in counted if m]
    assert len(tallies) == 8 and all(ok == total > 0 for ok, total, _ in tallies), rows
    assert [total for _, total, what in tallies if what == "passed"] == [3]  # the 3 shipped tasks, solved
    assert sum(measure.startswith("ratio") for measure, _, _ in rows) == 4
