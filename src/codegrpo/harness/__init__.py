"""Programs that run inside the sandbox around a completion, sent as text (``sandbox_source``); on the host
only protocol.py is imported (and the others by tests)."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

# The Python harness's report when it would not run a completion for the environment's sake, before the
# completion existed (a root that cannot become nobody): python_harness.main writes it, spelt out there.
REFUSED = "refused"

# The one import of the package the in-sandbox files make: the tables both audit hooks watch.
_SHARED_IMPORT = re.compile(r"^from codegrpo\.harness\.audit_events import \(.*?^\)\n", re.MULTILINE | re.DOTALL)


@cache
def sandbox_source(name: str) -> str:
    """``harness/<name>.py`` as a sandbox runs it: its import of audit_events replaced by that file's text
    (there, under ``python3 -I``, nothing of the package can be imported), in whole lines."""
    folder = resources.files("codegrpo.harness")
    text = folder.joinpath(f"{name}.py").read_text(encoding="utf-8")
    shared = folder.joinpath("audit_events.py").read_text(encoding="utf-8")
    text = _SHARED_IMPORT.sub(lambda _: shared, text, count=1)
    return text if text.endswith("\n") else text + "\n"
