"""The CPUs this process may use (codegrpo.config.cgroupfs.usable_cores) and the default concurrency built on
them, and finding our cgroups in v1 and hybrid mount tables (v2's setup: tests/sandbox/test_cgroups.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegrpo.config.cgroupfs import Hierarchy, find_hierarchies, usable_cores
from codegrpo.config.sandbox import auto_concurrency

PROBE = (
    "import json, os, sys; from codegrpo.config.cgroupfs import usable_cores; from codegrpo.config.sandbox import "
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


# -- cgroup discovery, on descriptions of other machines ----------------------------------------------

V1_MOUNTS = """\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""


def test_finds_v1_hierarchies_and_our_cgroup_in_them():
    proc_cgroup = "8:pids:/\n4:memory:/jobs/trainer\n0::/\n"
    found = find_hierarchies(proc_cgroup, V1_MOUNTS)
    assert found == {
        "memory": Hierarchy(1, Path("/sys/fs/cgroup/memory/jobs/trainer")),
        "pids": Hierarchy(1, Path("/sys/fs/cgroup/pids")),
        "unified": Hierarchy(2, Path("/sys/fs/cgroup/unified")),  # a hybrid host's v2 mount, without controllers
    }
    # A container's bind mount of a subtree: paths are relative to the mount's root.
    bound = "35 31 0:32 /jobs /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
    assert find_hierarchies(proc_cgroup, bound)["memory"].own == Path("/sys/fs/cgroup/memory/trainer")
    assert find_hierarchies("4:memory:/elsewhere\n", bound) == {}  # our cgroup is not under that mount
