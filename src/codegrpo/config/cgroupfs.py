"""This process's cgroups, read from /proc, and the CPUs it may use: what the schemas (the default
concurrency), the evaluation's threads and the local sandbox's cgroups (sandbox/cgroups.py) all need.

Works with cgroup v1 (a hierarchy per controller) and v2 (unified).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids")  # what the local sandbox limits through cgroups
LEAF = "codegrpo-leaf"  # where the processes of our own v2 cgroup move, so it may enable controllers


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    own: Path  # this process's cgroup, as a directory of the mounted hierarchy


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _relative(path: str, root: str) -> str | None:
    """``path`` (from /proc/self/cgroup) relative to a mount of the hierarchy at ``root``."""
    if path.startswith("/.."):
        return None  # outside our cgroup namespace
    if root == "/":
        return path.lstrip("/")
    if path == root or path.startswith(root + "/"):
        return path[len(root) :].lstrip("/")
    return None  # our cgroup is outside what this mount shows


def find_hierarchies(
    proc_cgroup: str | None = None, mountinfo: str | None = None, controllers: tuple[str, ...] = CONTROLLERS
) -> dict[str, Hierarchy]:
    """For each of ``controllers``: the mounted hierarchy that has it, and our cgroup in it.

    ``proc_cgroup`` and ``mountinfo`` default to this process's /proc/self/cgroup and mountinfo.
    Our own v2 cgroup is always under key "unified" when a v2 hierarchy shows it, controllers or not.
    """
    if proc_cgroup is None:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    own_v1: dict[str, str] = {}
    own_v2: str | None = None
    for line in proc_cgroup.splitlines():
        hierarchy_id, names, path = line.split(":", 2)
        if hierarchy_id == "0" and not names:
            own_v2 = path
        for name in names.split(","):
            own_v1[name] = path
    found: dict[str, Hierarchy] = {}
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, (fstype, _source, options) = left.split(), right.split(" ", 2)
        root, mountpoint = _unescape(fields[3]), _unescape(fields[4])
        if fstype == "cgroup":
            for name in set(controllers) & set(options.split(",")) - found.keys():
                if name in own_v1 and (relative := _relative(own_v1[name], root)) is not None:
                    found[name] = Hierarchy(1, Path(mountpoint, relative))
        elif fstype == "cgroup2" and own_v2 is not None:
            relative = _relative(own_v2, root)
            if relative is None:
                continue
            own = Path(mountpoint, relative)
            if own.name == LEAF:  # moved there by an earlier sandbox of this process
                own = own.parent
            found.setdefault("unified", Hierarchy(2, own))
            try:
                available = (own / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            for name in set(controllers) & set(available) - found.keys():
                found[name] = Hierarchy(2, own)
    return found


def usable_cores() -> int:
    """The CPUs this process may use: its affinity, capped by a cgroup CPU quota (v2 cpu.max, v1 cfs)."""
    cores = len(os.sched_getaffinity(0))
    for hierarchy in find_hierarchies(controllers=("cpu",)).values():
        try:
            if hierarchy.version == 2:
                quota, period = (hierarchy.own / "cpu.max").read_text().split()
            else:
                quota = (hierarchy.own / "cpu.cfs_quota_us").read_text().strip()
                period = (hierarchy.own / "cpu.cfs_period_us").read_text().strip()
            if quota not in ("max", "-1"):
                cores = min(cores, max(1, int(quota) // int(period)))
        except (OSError, ValueError):
            continue
    return cores
