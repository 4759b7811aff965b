"""The CPUs this process may use (codegrpo.config.cgroupfs.usable_cores) and the default concurrency built on
them. Finding our cgroups in v1, v2 and hybrid mount tables is tested with the local sandbox's cgroups,
in tests/sandbox/test_local.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from codegrpo.config.cgroupfs import usable_cores
from codegrpo.config.schema import auto_concurrency

PROBE = (
    "import json, os, sys; from codegrpo.config.cgroupfs import usable_cores; from codegrpo.config.schema import "
    "auto_concurrency; os.sched_setaffinity(0, {int(sys.argv[1])}); "
    "print(json.dumps([usable_cores(), auto_concurrency()]))"
)


def test_usable_cores_are_the_affinity_at_most():
    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))
    assert auto_concurrency() == max(2, usable_cores() - 1)  # one core for the trainer, never below 2


def test_a_process_pinned_to_one_cpu_uses_one_core_and_still_runs_two_programs():
    cpu = min(os.sched_getaffinity(0))
    done = subprocess.run([sys.executable, "-c", PROBE, str(cpu)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [1, 2]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin to")
def test_pinning_to_two_cpus_gives_two_cores_unless_a_quota_caps_them():
    probe = PROBE.replace("{int(sys.argv[1])}", "set(sorted(os.sched_getaffinity(0))[:2])")
    done = subprocess.run([sys.executable, "-c", probe, "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    cores, _ = json.loads(done.stdout)
    assert cores == min(2, usable_cores())
