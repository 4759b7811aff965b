"""``run_if``: one skip marker for what a test needs of the machine (as lightning-hydra-template's RunIf)."""

from __future__ import annotations

import os
import shutil

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"


def run_if(
    *, bwrap: bool = False, system_python: bool = False, root: bool = False, node: bool = False, unshare: bool = False
) -> pytest.MarkDecorator:
    """Skip unless the machine has each thing asked for: bubblewrap, a system python3 every user can run,
    root (to simulate a VM's root), node, or util-linux's unshare."""
    missing = [
        why
        for needed, present, why in (
            (bwrap, shutil.which("bwrap") is not None, "bubblewrap"),
            (system_python, os.access(SYSTEM_PYTHON, os.X_OK), SYSTEM_PYTHON),
            (root, os.geteuid() == 0, "root (it simulates a VM's root)"),
            (node, shutil.which("node") is not None, "node"),
            (unshare, shutil.which("unshare") is not None, "unshare"),
        )
        if needed and not present
    ]
    return pytest.mark.skipif(bool(missing), reason=f"needs {' and '.join(missing)}")
