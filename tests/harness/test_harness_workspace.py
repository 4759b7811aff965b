"""harness/workspace.py's pieces, on the host (the whole program runs in the sandbox in tests/agents/)."""

from __future__ import annotations

import base64
import types

import pytest

from codegrpo.harness import sandbox_source


@pytest.fixture(scope="module")
def program():
    module = types.ModuleType("workspace_program")
    exec(compile(sandbox_source("workspace"), "workspace.py", "exec"), module.__dict__)
    return module


def test_it_imports_nothing_of_codegrpo():
    assert "codegrpo" not in sandbox_source("workspace").replace("imports nothing of codegrpo", "")


def test_files_are_written_under_the_root_and_a_path_that_leaves_it_is_refused(program, tmp_path):
    program._write_tree(str(tmp_path), {"pkg/a.py": base64.b64encode(b"x").decode()})
    assert (tmp_path / "pkg/a.py").read_bytes() == b"x"
    for bad in ("/etc/x", "../x", "a/../../x"):
        with pytest.raises(ValueError, match="refused path"):
            program._write_tree(str(tmp_path), {bad: ""})


def test_the_tree_read_back_holds_regular_files_and_stops_at_its_limits(program, tmp_path):
    (tmp_path / "a").write_text("1")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/b").write_text("22")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__/c.pyc").write_text("no")
    (tmp_path / "link").symlink_to("/etc/passwd")
    files, links, over = program._read_tree(str(tmp_path), 10, 100)
    assert {k: base64.b64decode(v) for k, v in files.items()} == {"a": b"1", "sub/b": b"22"}
    assert links == ["link"] and over is None
    assert program._read_tree(str(tmp_path), 1, 100)[2] == "files"
    assert program._read_tree(str(tmp_path), 10, 2)[2] == "bytes"


def test_a_tests_outcome_is_its_first_failing_phase_or_its_call(program):
    outcomes = program._Outcomes()
    report = lambda nodeid, when, outcome: types.SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome)  # noqa: E731
    for phase in [("t::a", "setup", "passed"), ("t::a", "call", "passed"), ("t::a", "teardown", "passed")]:
        outcomes.pytest_runtest_logreport(report(*phase))
    for phase in [("t::b", "setup", "failed"), ("t::b", "teardown", "passed")]:
        outcomes.pytest_runtest_logreport(report(*phase))
    for phase in [("t::c", "call", "passed"), ("t::c", "teardown", "failed")]:
        outcomes.pytest_runtest_logreport(report(*phase))
    outcomes.pytest_collectreport(types.SimpleNamespace(nodeid="t.py", outcome="failed"))
    assert outcomes.outcomes == {"t::a": "passed", "t::b": "failed", "t::c": "failed", "t.py": "error"}
