"""Per-run cgroups for the local sandbox: a memory and a process limit, an OOM count, and a sure kill.

Works with cgroup v1 and v2 (codegrpo.config.cgroupfs finds our cgroups). Each sandbox gets a parent cgroup
inside this process's own cgroup, so whatever limits the trainer runs under still cover its programs,
and each run gets a child of that parent with the limits set. Where no writable cgroup exists, the caller
falls back to rlimits (see ``CgroupLimits.unavailable``, which says what is missing and how to grant it).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import re
import signal
import time
import uuid
from pathlib import Path

from codegrpo.config.cgroupfs import CONTROLLERS, LEAF, Hierarchy, find_hierarchies

log = logging.getLogger(__name__)

PREFIX = "codegrpo-"
DELEGATE_HINT = (
    "run the trainer in a cgroup it may manage: `systemd-run --scope -p Delegate=yes <command>`, or a "
    "container with its own cgroup namespace (`docker run --cgroupns=private`, the default on cgroup v2)"
)
_instances = itertools.count()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, and someone else's
    return True


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _pids(directory: Path) -> list[int]:
    try:
        return [int(pid) for pid in (directory / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return []


def _remove(directory: Path, deadline: float) -> bool:
    """Kill every process in ``directory`` (and below) and remove it. False if it would not go in time."""
    try:
        children = [p for p in directory.iterdir() if p.is_dir()]
    except FileNotFoundError:
        return True
    for child in children:
        if not _remove(child, deadline):
            return False
    while True:
        try:
            directory.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("could not remove cgroup %s: %s", directory, error)
                return False
        kill_file = directory / "cgroup.kill"  # v2, Linux 5.14+: kills the whole cgroup at once
        if kill_file.exists():
            with contextlib.suppress(OSError):
                _write(kill_file, "1")
        for pid in _pids(directory):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


class RunCgroup:
    """The cgroup(s) of one run: the launcher joins before bwrap starts; then the OOM count, then destroy."""

    def __init__(self, directories: list[Path], memory: tuple[int, Path] | None) -> None:
        self.directories = directories
        self._memory = memory  # (version, directory) when memory is limited here

    @property
    def procs_files(self) -> list[str]:
        """Where a process writes its pid to move into the run's cgroups."""
        return [str(directory / "cgroup.procs") for directory in self.directories]

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        if self._memory is None:
            return 0
        version, directory = self._memory
        try:
            text = (directory / ("memory.oom_control" if version == 1 else "memory.events")).read_text()
        except OSError:
            return 0
        match = re.search(r"^oom_kill (\d+)$", text, re.MULTILINE)
        return int(match.group(1)) if match else 0

    def pinned_bytes(self) -> int | None:
        """Memory charged to the run that reclaim cannot free (page cache is left out); None without a
        memory cgroup. What a warm worker holds once its program is gone, which should be little."""
        if self._memory is None:
            return None
        version, directory = self._memory
        try:
            usage = int((directory / ("memory.usage_in_bytes" if version == 1 else "memory.current")).read_text())
            stat = dict(line.split(" ", 1) for line in (directory / "memory.stat").read_text().splitlines())
            cache = int(stat.get("cache" if version == 1 else "file", 0)) - int(stat.get("shmem", 0))
            return usage - cache - int(stat.get("slab_reclaimable", 0))
        except (OSError, ValueError):
            return None

    def destroy(self, timeout_s: float = 2.0) -> bool:
        """Kill whatever is still in the run's cgroups and remove them. True when all are gone."""
        deadline = time.monotonic() + timeout_s
        return all([_remove(directory, deadline) for directory in self.directories])


class CgroupLimits:
    """Creates this sandbox's parent cgroups, and one child cgroup per run with the limits set.

    ``controllers`` holds the controllers that work here ("memory", "pids", mapped to the cgroup
    version); ``unavailable`` says for each other one why not, so the caller can fall back.
    """

    def __init__(self, memory_bytes: int, max_processes: int, hierarchies: dict[str, Hierarchy] | None = None) -> None:
        self.memory_bytes = memory_bytes
        self.max_processes = max_processes
        self.controllers: dict[str, int] = {}
        self.unavailable: dict[str, str] = {}
        self._parents: dict[str, Path] = {}
        if hierarchies is None:
            try:
                hierarchies = find_hierarchies()
            except (OSError, ValueError) as error:
                hierarchies = {}
                log.warning("cannot read this process's cgroups: %s", error)
        name = f"{PREFIX}{os.getpid()}-{next(_instances)}"
        for controller in CONTROLLERS:
            hierarchy = hierarchies.get(controller)
            if hierarchy is None:
                self.unavailable[controller] = _missing(controller, hierarchies.get("unified"))
                continue
            try:
                self._parents[controller] = self._make_parent(hierarchy, controller, name)
            except OSError as error:
                self.unavailable[controller] = f"cannot create a cgroup under {hierarchy.own}: {error}; {DELEGATE_HINT}"
                continue
            self.controllers[controller] = hierarchy.version

    @staticmethod
    def _make_parent(hierarchy: Hierarchy, controller: str, name: str) -> Path:
        own = hierarchy.own
        _sweep_stale(own)
        parent = own / name
        if hierarchy.version == 2:
            # v2 hands a controller to children only through subtree_control, which a cgroup that
            # holds processes may not use (unless it is the root): ours move into a leaf first.
            _move_into_leaf(own)
            _write(own / "cgroup.subtree_control", f"+{controller}")
            parent.mkdir(exist_ok=True)
            _write(parent / "cgroup.subtree_control", f"+{controller}")
        else:
            parent.mkdir(exist_ok=True)
        return parent

    def new_run(self, extra_processes: int = 0) -> RunCgroup:
        """A fresh cgroup (per hierarchy) with the limits set, the process limit raised by
        ``extra_processes`` for the sandbox's own. Raises OSError."""
        name = uuid.uuid4().hex
        directories: list[Path] = []
        memory: tuple[int, Path] | None = None
        try:
            for controller, parent in self._parents.items():
                directory = parent / name
                if directory not in directories:
                    directory.mkdir()
                    directories.append(directory)
                version = self.controllers[controller]
                if controller == "memory":
                    self._limit_memory(version, directory)
                    memory = (version, directory)
                else:
                    _write(directory / "pids.max", str(self.max_processes + extra_processes))
        except OSError:
            RunCgroup(directories, None).destroy()
            raise
        return RunCgroup(directories, memory)

    def _limit_memory(self, version: int, directory: Path) -> None:
        limit = str(self.memory_bytes)
        if version == 1:
            _write(directory / "memory.limit_in_bytes", limit)
            swap = directory / "memory.memsw.limit_in_bytes"  # memory + swap: no swapping past the limit
        else:
            _write(directory / "memory.max", limit)
            swap, limit = directory / "memory.swap.max", "0"
        if swap.exists():
            _write(swap, limit)

    def close(self) -> None:
        """Remove the parent cgroups (and any run cgroup still there). Safe to call twice."""
        deadline = time.monotonic() + 2.0
        for parent in set(self._parents.values()):
            _remove(parent, deadline)
        self._parents.clear()


def _move_into_leaf(own: Path) -> None:
    """Move every process of ``own`` (the trainer's, at least) into ``own``/LEAF. Raises OSError."""
    pids = _pids(own)
    if not pids or not (own / "cgroup.type").exists():
        return  # nothing to move, or the root cgroup, which may hold processes and hand down controllers
    leaf = own / LEAF
    leaf.mkdir(exist_ok=True)
    for pid in pids:
        try:
            _write(leaf / "cgroup.procs", str(pid))
        except ProcessLookupError:
            pass  # gone meanwhile
        except OSError as error:
            if error.errno != errno.ESRCH:
                raise


def _missing(controller: str, unified: Hierarchy | None) -> str:
    """Why ``controller`` has no hierarchy for us, and how to grant it."""
    if unified is None:
        return f"no cgroup hierarchy with the {controller} controller is mounted for this process"
    own = unified.own
    return (
        f"cgroup v2 does not delegate {controller} to {own} (it is not in {own}/cgroup.controllers): enable it "
        f"in {own.parent}/cgroup.subtree_control (as root: `echo +{controller} > {own.parent}/cgroup.subtree_control`)"
        f", or {DELEGATE_HINT}"
    )


def _sweep_stale(own: Path) -> None:
    """Remove parents left by sandboxes whose process is gone (a trainer that was killed, say)."""
    for entry in own.glob(f"{PREFIX}*"):
        pid = entry.name[len(PREFIX) :].partition("-")[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            _remove(entry, time.monotonic() + 1.0)
