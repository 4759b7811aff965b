"""``run_if``: one skip marker for what a test needs of the machine (as lightning-hydra-template's RunIf)."""

from __future__ import annotations

import os
import platform
import shutil

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"


def run_if(
    *,
    bwrap: bool = False,
    system_python: bool = False,
    root: bool = False,
    node: bool = False,
    unshare: bool = False,
    x86_64: bool = False,
) -> pytest.MarkDecorator:
    """Skip unless the machine has each thing asked for: bubblewrap, a system python3 every user can run,
    root (a root trainer's choices, or a VM's root simulated), node, util-linux's unshare, or x86_64 (a test
    that names syscalls by their numbers)."""
    missing = [
        why
        for needed, present, why in (
            (bwrap, shutil.which("bwrap") is not None, "bubblewrap"),
            (system_python, os.access(SYSTEM_PYTHON, os.X_OK), SYSTEM_PYTHON),
            (root, os.geteuid() == 0, "root"),
            (node, shutil.which("node") is not None, "node"),
            (unshare, shutil.which("unshare") is not None, "unshare"),
            (x86_64, platform.machine() == "x86_64", "x86_64 (its syscall numbers)"),
        )
        if needed and not present
    ]
    return pytest.mark.skipif(bool(missing), reason=f"needs {' and '.join(missing)}")
