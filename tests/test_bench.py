"""The bench's command line: a section it does not have is an error, not an empty run (the sections' figures
are the benches' own; they are not timed tests)."""

from __future__ import annotations

import re

import pytest
from benchmarks.bench import SECTIONS, main


def test_an_unknown_section_is_an_error_naming_the_sections(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--only", "local,nope"])
    assert stopped.value.code == 2
    assert "--only: no section 'nope'; the sections: local, io, superserve" in capsys.readouterr().err


def test_every_section_is_in_the_docstring():
    import benchmarks.bench

    doc = benchmarks.bench.__doc__ or ""
    assert [name for name in SECTIONS if not re.search(rf"(^|\W){name}\b", doc)] == []
