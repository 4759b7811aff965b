"""The local sandbox's cgroups (codegrpo.sandbox.cgroups): parents, run cgroups and their limits, OOM counts and
removal, on plain directories standing in for cgroupfs, and on this machine's cgroups where they are writable."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codegrpo.sandbox.cgroups import (
    DELEGATE_HINT,
    LEAF,
    PREFIX,
    CgroupLimits,
    Hierarchy,
    RunCgroup,
    _move_into_leaf,
    _pid_alive,
    _sweep_stale,
    find_hierarchies,
)
from tests.helpers.run_if import run_if

MiB = 1 << 20


def reaped_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def mine(own: Path) -> list[Path]:
    return sorted(own.glob(f"{PREFIX}{os.getpid()}-*"))


# -- on descriptions of other machines: plain directories stand in for cgroupfs ----------------------------


def test_v2_says_what_is_not_delegated_and_how_to_grant_it(tmp_path):
    own = tmp_path / "process_api" / "job"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory\n")  # the root has pids; our parent does not hand it down
    mountinfo = f"30 25 0:26 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    hierarchies = find_hierarchies("0::/process_api/job\n", mountinfo)
    limits = CgroupLimits(256 << 20, 16, hierarchies)
    assert limits.controllers == {"memory": 2}
    why = limits.unavailable["pids"]
    assert f"does not delegate pids to {own}" in why and f"echo +pids > {own.parent}/cgroup.subtree_control" in why
    assert "systemd-run --scope -p Delegate=yes" in why and "--cgroupns=private" in why
    limits.close()


def test_v2_setup_writes_the_unified_files(tmp_path):
    own = tmp_path / "user.slice" / "trainer"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory pids\n")
    mountinfo = f"30 25 0:26 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    (own / "cgroup.type").write_text("domain\n")
    (own / "cgroup.procs").write_text(f"{os.getpid()}\n")  # the trainer lives in its own cgroup
    hierarchies = find_hierarchies("0::/user.slice/trainer\n", mountinfo)
    assert hierarchies == {"memory": Hierarchy(2, own), "pids": Hierarchy(2, own), "unified": Hierarchy(2, own)}

    limits = CgroupLimits(256 << 20, 16, hierarchies)  # a plain directory stands in for cgroupfs here
    assert limits.controllers == {"memory": 2, "pids": 2} and limits.unavailable == {}
    (parent,) = own.glob(f"{PREFIX}{os.getpid()}-*")
    # A cgroup with processes cannot hand controllers down: the trainer moved into a leaf beside ours.
    assert (own / LEAF / "cgroup.procs").read_text() == str(os.getpid())
    # v2 hands controllers down through subtree_control, ours and our parent's.
    assert (own / "cgroup.subtree_control").read_text() == "+pids"  # the last of the two writes
    assert (parent / "cgroup.subtree_control").exists()
    # A later sandbox of this process finds its cgroup through the leaf, not a leaf of the leaf.
    assert find_hierarchies("0::/user.slice/trainer/codegrpo-leaf\n", mountinfo)["memory"] == Hierarchy(2, own)
    run = limits.new_run()
    (directory,) = run.directories  # one directory: both controllers live in the one hierarchy
    assert (directory / "memory.max").read_text() == str(256 << 20)
    assert (directory / "pids.max").read_text() == "16"
    (directory / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n")
    assert run.oom_kills() == 1


def test_v1_gives_each_controller_its_parent_and_each_run_a_cgroup_in_each(tmp_path):
    memory, pids = tmp_path / "memory" / "job", tmp_path / "pids"
    memory.mkdir(parents=True)
    pids.mkdir()
    limits = CgroupLimits(64 * MiB, 8, {"memory": Hierarchy(1, memory), "pids": Hierarchy(1, pids)})
    assert limits.controllers == {"memory": 1, "pids": 1} and limits.unavailable == {}
    ((memory_parent,), (pids_parent,)) = mine(memory), mine(pids)
    assert memory_parent.name == pids_parent.name
    assert not (memory / LEAF).exists() and not (memory / "cgroup.subtree_control").exists()  # v2's only

    run = limits.new_run(extra_processes=3)
    assert [d.parent for d in run.directories] == [memory_parent, pids_parent]
    assert run.directories[0].name == run.directories[1].name
    assert run.procs_files == [str(d / "cgroup.procs") for d in run.directories]
    assert (run.directories[0] / "memory.limit_in_bytes").read_text() == str(64 * MiB)
    assert not (run.directories[0] / "memory.memsw.limit_in_bytes").exists()  # only where the kernel has swap
    assert (run.directories[1] / "pids.max").read_text() == "11"  # the program's 8 and the sandbox's own 3
    assert sorted(p.name for p in run.directories[1].iterdir()) == ["pids.max"]
    assert limits.new_run().directories[0].name != run.directories[0].name  # a fresh cgroup per run


def test_each_sandbox_of_a_process_gets_its_own_parent(tmp_path):
    first = CgroupLimits(64 * MiB, 8, {"pids": Hierarchy(1, tmp_path)})
    second = CgroupLimits(64 * MiB, 8, {"pids": Hierarchy(1, tmp_path)})
    assert len(mine(tmp_path)) == 2
    first.close()
    assert len(mine(tmp_path)) == 1
    second.close()
    second.close()  # twice is fine
    assert mine(tmp_path) == []


def test_a_controller_without_a_hierarchy_or_a_writable_one_is_unavailable_with_the_reason(tmp_path):
    nowhere = CgroupLimits(64 * MiB, 8, {})
    assert nowhere.controllers == {}
    assert nowhere.unavailable == {
        "memory": "no cgroup hierarchy with the memory controller is mounted for this process",
        "pids": "no cgroup hierarchy with the pids controller is mounted for this process",
    }
    gone = tmp_path / "gone"
    limits = CgroupLimits(64 * MiB, 8, {"memory": Hierarchy(1, gone), "pids": Hierarchy(1, tmp_path)})
    assert limits.controllers == {"pids": 1}
    why = limits.unavailable["memory"]
    assert why.startswith(f"cannot create a cgroup under {gone}: [Errno 2]") and why.endswith(f"; {DELEGATE_HINT}")
    assert limits.new_run(extra_processes=1).directories[0].parent.parent == tmp_path  # pids alone


def test_a_parent_left_by_a_process_that_is_gone_is_swept_and_a_live_ones_is_kept(tmp_path):
    dead = tmp_path / f"{PREFIX}{reaped_pid()}-0"
    (dead / "abc123").mkdir(parents=True)  # a run cgroup it left too
    alive = tmp_path / f"{PREFIX}{os.getppid()}-0"
    odd = tmp_path / f"{PREFIX}leaf"
    for directory in (alive, odd):
        directory.mkdir()
    _sweep_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, odd.name])
    (dead / "abc123").mkdir(parents=True)
    CgroupLimits(64 * MiB, 8, {"pids": Hierarchy(1, tmp_path)}).close()  # a new sandbox sweeps first too
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, odd.name])


def test_the_root_cgroup_or_one_without_processes_moves_nothing_into_a_leaf(tmp_path):
    root = tmp_path / "root"  # the root cgroup has no cgroup.type: it may hold processes and hand controllers down
    root.mkdir()
    (root / "cgroup.procs").write_text(f"{os.getpid()}\n")
    _move_into_leaf(root)
    assert not (root / LEAF).exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "cgroup.type").write_text("domain\n")
    (empty / "cgroup.procs").write_text("")
    _move_into_leaf(empty)
    assert not (empty / LEAF).exists()
    _move_into_leaf(tmp_path / "no-such-cgroup")  # nothing to move


def test_the_oom_count_is_the_kernels_oom_kill_line_in_each_version(tmp_path):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 4\noom_kill 2\noom_group_kill 0\n")
    assert RunCgroup([v1], (1, v1)).oom_kills() == 3
    assert RunCgroup([v2], (2, v2)).oom_kills() == 2
    assert RunCgroup([v1], (2, v1)).oom_kills() == 0  # no memory.events: nothing counted
    (v1 / "memory.oom_control").write_text("oom_kill_disable 1\nunder_oom 0\n")  # an older kernel's, no count
    assert RunCgroup([v1], (1, v1)).oom_kills() == 0
    assert RunCgroup([v1], None).oom_kills() == 0  # memory is not limited by a cgroup here


def test_pinned_memory_is_the_usage_less_reclaimable_cache_and_slab(tmp_path):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "memory.usage_in_bytes").write_text("1000000\n")
    (v1 / "memory.stat").write_text("cache 300000\nrss 600000\nshmem 100000\n")
    (v2 / "memory.current").write_text("10000000\n")
    (v2 / "memory.stat").write_text("anon 5000000\nfile 4000000\nshmem 1000000\nslab_reclaimable 500000\n")
    assert RunCgroup([v1], (1, v1)).pinned_bytes() == 1000000 - (300000 - 100000)  # shared memory stays pinned
    assert RunCgroup([v2], (2, v2)).pinned_bytes() == 10000000 - (4000000 - 1000000) - 500000
    assert RunCgroup([v2], None).pinned_bytes() is None
    (v2 / "memory.stat").write_text("file four\n")
    assert RunCgroup([v2], (2, v2)).pinned_bytes() is None
    (v1 / "memory.stat").unlink()
    assert RunCgroup([v1], (1, v1)).pinned_bytes() is None


def test_removing_a_cgroup_removes_its_children_first_and_a_missing_one_is_already_removed(tmp_path):
    (tmp_path / "run" / "nested" / "deeper").mkdir(parents=True)
    assert RunCgroup([tmp_path / "run", tmp_path / "never-made"], None).destroy() is True
    assert sorted(tmp_path.iterdir()) == []


def test_a_directory_that_will_not_go_is_reported_not_waited_for(tmp_path, caplog):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "a-file").write_text("")  # not a cgroup: rmdir says ENOTEMPTY, not EBUSY
    started = time.monotonic()
    assert RunCgroup([tmp_path / "run"], None).destroy(timeout_s=60) is False
    assert time.monotonic() - started < 30  # only a busy cgroup (EBUSY) is retried until the deadline
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"could not remove cgroup {tmp_path / 'run'}: [Errno 39] Directory not empty: '{tmp_path / 'run'}'"
    ]


def test_a_process_is_alive_until_it_is_reaped():
    assert _pid_alive(os.getpid()) and _pid_alive(1)
    assert not _pid_alive(reaped_pid())


# -- on this machine's cgroups -----------------------------------------------------------------------------


@pytest.fixture
def real_limits():
    """64 MiB and 8 processes a run, in this machine's cgroups; skipped where memory and pids are not both
    writable here."""
    limits = CgroupLimits(64 * MiB, 8)
    if set(limits.controllers) != {"memory", "pids"}:
        limits.close()
        pytest.skip(f"no writable memory and pids cgroups here: {limits.unavailable}")
    yield limits
    limits.close()


def joined(run: RunCgroup):
    """A preexec_fn that moves the child into the run's cgroups, as the sandbox's launcher does."""

    def join() -> None:
        for procs in run.procs_files:
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))

    return join


@run_if(root=True)  # only root writes the machine's cgroups
def test_a_run_cgroup_has_its_limits_set_and_goes_with_its_parents(real_limits):
    run = real_limits.new_run(extra_processes=3)
    memory, pids = run.directories[0], run.directories[-1]  # one directory for both on v2
    if real_limits.controllers["memory"] == 1:
        assert (memory / "memory.limit_in_bytes").read_text().strip() == str(64 * MiB)
        if (memory / "memory.memsw.limit_in_bytes").exists():
            assert (memory / "memory.memsw.limit_in_bytes").read_text().strip() == str(64 * MiB)
    else:
        assert (memory / "memory.max").read_text().strip() == str(64 * MiB)
        if (memory / "memory.swap.max").exists():
            assert (memory / "memory.swap.max").read_text().strip() == "0"
    assert (pids / "pids.max").read_text().strip() == "11"
    assert run.oom_kills() == 0 and isinstance(run.pinned_bytes(), int)
    parents = [d.parent for d in run.directories]
    real_limits.close()
    assert not any(p.exists() for p in [*run.directories, *parents])


@run_if(root=True)  # only root writes the machine's cgroups
def test_a_program_in_a_run_cgroup_is_held_to_its_processes_and_killed_past_its_memory(real_limits):
    run = real_limits.new_run(extra_processes=1)
    forks = (
        "import os, time\ncount = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            time.sleep(30)\n            os._exit(0)\n        count += 1\nexcept OSError as error:\n"
        "    print(count, error.errno, flush=True)\n"
    )
    forker = subprocess.Popen([sys.executable, "-c", forks], preexec_fn=joined(run), stdout=subprocess.PIPE, text=True)
    assert forker.stdout.readline().split() == ["8", "11"]  # 9 processes with it; EAGAIN for the next
    assert run.destroy() is True  # the forker and its 8 sleepers are killed and the cgroups removed
    assert forker.wait(10) == -9 and not any(d.exists() for d in run.directories)

    run = real_limits.new_run()
    hog = subprocess.run(
        [sys.executable, "-c", "x = bytearray(256 << 20); print('survived')"],
        preexec_fn=joined(run),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (hog.returncode, hog.stdout) == (-9, "")
    assert run.oom_kills() == 1
    assert run.destroy() is True


@run_if(root=True)  # only root writes the machine's cgroups
def test_a_run_cgroup_that_cannot_be_made_whole_is_removed_and_the_error_raised(real_limits):
    pids_parent = real_limits._parents["pids"]
    if pids_parent == real_limits._parents["memory"]:
        pytest.skip("v2: one directory holds both controllers")
    pids_parent.rmdir()  # as if someone removed it under the sandbox
    with pytest.raises(FileNotFoundError):
        real_limits.new_run()
    assert [p for p in real_limits._parents["memory"].iterdir() if p.is_dir()] == []
