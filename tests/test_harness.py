"""codegrpo.harness (its __init__): the in-sandbox files as a sandbox gets them, with audit_events inlined, since
under ``python3 -I`` in the sandbox nothing of the package can be imported; and the harness's "refused" report."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest

from codegrpo.harness import REFUSED, sandbox_source
from codegrpo.harness.audit_events import AUDIT_EVENTS, KILL_EVENTS, PATH_EVENTS, SPECIAL_EVENTS

INLINED = ("inprocess", "python_harness")  # the files that import audit_events
SHARED = resources.files("codegrpo.harness").joinpath("audit_events.py").read_text(encoding="utf-8")


def original(name: str) -> str:
    return resources.files("codegrpo.harness").joinpath(f"{name}.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", INLINED)
def test_the_import_of_audit_events_is_replaced_by_its_text(name):
    text = sandbox_source(name)
    assert "from codegrpo" not in text and "import codegrpo" not in text
    assert SHARED in text
    head, _, tail = original(name).partition("from codegrpo.harness.audit_events import (")
    after = tail.partition("\n)\n")[2]  # from the line after the import's closing parenthesis
    assert text == head + SHARED + after  # whole lines in place of whole lines, the rest as it was


@pytest.mark.parametrize("name", INLINED)
def test_an_inlined_file_runs_where_the_package_cannot_be_imported(name):
    # -I -S: no site-packages, no PYTHONPATH, no cwd, as in the sandbox: `codegrpo` cannot be found there.
    probe = (
        "import sys\n"
        "namespace = {'__name__': 'inlined'}\n"
        "exec(compile(sys.stdin.read(), 'inlined.py', 'exec'), namespace)\n"
        "print(len(namespace['PATH_EVENTS']), len(namespace['KILL_EVENTS']), len(namespace['SPECIAL_EVENTS']))\n"
        "print(len(namespace['AUDIT_EVENTS']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], input=sandbox_source(name), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    expected = f"{len(PATH_EVENTS)} {len(KILL_EVENTS)} {len(SPECIAL_EVENTS)}\n{len(AUDIT_EVENTS)}\n"
    assert done.stdout == expected


def test_files_without_the_import_are_sent_as_they_are():
    for name in ("runner", "protocol"):
        assert sandbox_source(name) == original(name)
        assert sandbox_source(name).endswith("\n")


def test_only_harness_files_can_be_asked_for():
    with pytest.raises(FileNotFoundError):
        sandbox_source("no_such_module")


def test_the_refused_status_is_the_one_the_python_harness_writes():
    assert REFUSED == "refused"
    assert f'"status": "{REFUSED}"' in sandbox_source("python_harness")
