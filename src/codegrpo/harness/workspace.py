"""An agent's workspace inside the sandbox: one run of this program per tool call or per hidden test file.

It reads its request as JSON on stdin, writes the workspace's files under /tmp/ws (the run's own fresh /tmp),
and either runs a shell command there (``shell``: the output, and the files as they are after it) or runs
one hidden test file against the files with pytest (``judge``: each test's outcome). It prints one JSON line.
Run by ``python3 -I`` as a sandbox program: it imports nothing of codegrpo.

This program makes itself non-dumpable first, so nothing it starts (the agent's commands, the code under
test) can open its fds or read its memory: its request, the nonce and the report channel (a copy of stdout;
what anything else prints goes to stderr) stay its own.

The judge runs pytest in a child (``_child``) that gets only file paths: the code under test runs there and
can tell its parent nothing but outcomes, which the parent sends on with the nonce. pytest reads nothing of the
workspace as configuration: its ini is an empty file of ours (``-c``), conftest.py files are read only from the
test's folder down, entry-point plugins are off, compiled files go to a cache of this run's own
(``sys.pycache_prefix``), and the workspace comes last on ``sys.path``, so none of its files shadows the standard
library or pytest. The test file is the host's copy, written after the workspace's files in a folder outside
it, with the host's canary among its tests: a test that must fail, named from the file's own words.
"""

import base64
import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time

WORKSPACE = "/tmp/ws"
TESTS = "/tmp/judge/tests"
CACHE = "/tmp/judge/cache"
READ_CHUNK = 1 << 16
IDLE_S = 0.02  # output idle this long after bash has exited: the command is done
NAMED_LINKS, NAME_CHARS = 20, 200  # of the links a report names


def _write_tree(root, files):
    """Each file of ``files`` (relative path -> base64) under ``root``; paths were checked on the host. What no
    file system can hold (a file where another's folder is, a name that is not UTF-8) is left out: the paths and
    why, so that one such file does not fail every run of its workspace."""
    left_out = []
    for path, data in files.items():
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"refused path {path}")
        target = os.path.join(root, path)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(base64.b64decode(data))
        except (OSError, UnicodeError) as error:
            left_out.append((ascii(path), type(error).__name__))
    return left_out


def _read_tree(root, max_files, max_bytes):
    """The regular files under ``root`` (base64), or why not: more than ``max_files`` files, or more than
    ``max_bytes`` in their contents or a quarter of it in their paths as the report writes them (JSON escapes, six
    bytes a character beyond ASCII), so that the report always fits the run's output. A few of the links and
    other things that are not files are named, cut: the host reads none of them."""
    files, links, total, names = {}, [], 0, 0
    for folder, dirs, found in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in found:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path) or not os.path.isfile(path):
                if len(links) < NAMED_LINKS:
                    links.append(relative[:NAME_CHARS])
                continue
            size = os.path.getsize(path)
            total += size
            names += len(json.dumps(relative))
            if len(files) >= max_files:
                return None, links, "files"
            if total > max_bytes or names > max_bytes // 4:
                return None, links, "bytes"
            with open(path, "rb") as handle:
                files[relative] = base64.b64encode(handle.read()).decode("ascii")
    return files, links, None


def _end_all(process):
    """Kill the command's group and, where this program is its sandbox's pid 1 (the local sandbox, warm or cold),
    every other process there, and reap them: a process in a session of its own (setsid, a daemon) outlives its
    group and would change the files as they are read back. Returns the command's exit code."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    code = process.wait()
    if os.getpid() == 1:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # pid 1 of a pid namespace: all the others in it, never itself
        with contextlib.suppress(ChildProcessError):
            while True:  # every orphan is this process's child: none is running once all are reaped
                os.waitpid(-1, 0)
    return code


def _shell(request, left_out=()):
    """Run the command in the workspace, its output (stdout and stderr as one) cut at ``max_output`` bytes.
    ``left_out``: the workspace's files that could not be written, named at the head of the output."""
    head = "".join(f"{path} cannot be written here ({why}): left out of the workspace\n" for path, why in left_out)
    command = request["command"]
    if isinstance(command, str):
        code, kept, size, timed_out = _run_command(request, head.encode())
    else:  # TRL's parser types no argument: {"command": 123} comes here
        code, size, timed_out = 2, 0, False
        kept = (head + f"the command is a {type(command).__name__}, not a string: nothing ran\n").encode()
    files, links, over = _read_tree(WORKSPACE, request["max_files"], request["max_bytes"])
    return {
        "exit_code": code,
        "output": kept.decode("utf-8", "replace"),
        "output_bytes": size,
        "timed_out": timed_out,
        "files": files,
        "links": links,
        "over": over,
    }


def _run_command(request, kept):
    """The command under bash, until it has exited and its output is idle (or its time is up), then every process
    it left: its exit code, the output after ``kept`` (cut), the output's whole size and whether it timed out."""
    # `python` is the sandbox's python3, as in the tasks' images (their test.sh files call it so).
    shims = "/tmp/judge/bin"
    os.makedirs(shims, exist_ok=True)
    os.symlink(sys.executable, os.path.join(shims, "python"))
    env = {
        "PATH": f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": request["site"],
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
    }
    process = subprocess.Popen(
        ["bash", "-c", request["command"]],
        cwd=WORKSPACE,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + request["timeout_s"]
    kept, size, timed_out = bytearray(kept), 0, False
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        if select.select([fd], [], [], min(IDLE_S, remaining))[0]:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                break
            if chunk:
                size += len(chunk)
                kept += chunk[: max(0, request["max_output"] - len(kept))]
                continue
        elif process.poll() is not None:
            break  # bash has exited and the output is idle: what still holds the pipe is left behind, killed below
    if not timed_out:  # at EOF bash may still be running (its last program closes its output before it exits)
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    return _end_all(process), bytes(kept), size, timed_out  # nothing changes the files as they are read


class _Outcomes:
    """The child's pytest plugin: each test's outcome by node id (its call, or the phase that failed)."""

    def __init__(self):
        self.outcomes = {}

    def pytest_runtest_logreport(self, report):
        first = self.outcomes.get(report.nodeid) in (None, "passed")  # a setup's failure outlives its teardown
        if (report.when == "call" or report.outcome != "passed") and first:
            self.outcomes[report.nodeid] = report.outcome

    def pytest_collectreport(self, report):
        if report.outcome != "passed":
            self.outcomes[report.nodeid or "<collection>"] = "error"


def _child(test_file, site, workspace, cache, out):
    """The process that runs pytest on one hidden test file. The code under test runs here, so it is given
    nothing it could forge a report with: no nonce, no request, and a parent it cannot read (_not_dumpable).
    Its outcomes go to the fd ``out``; the parent adds the nonce."""
    sys.path.insert(0, site)
    sys.path.append(workspace)  # after the standard library and pytest: a workspace file shadows none of them
    sys.pycache_prefix = cache
    sys.dont_write_bytecode = True
    import pytest

    plugin = _Outcomes()
    folder = os.path.dirname(test_file)
    config = os.path.join(cache, "pytest.ini")
    args = ["-q", "-p", "no:cacheprovider", "-c", config, "--rootdir", folder, "--confcutdir", folder]
    status = pytest.main([*args, "--continue-on-collection-errors", test_file], plugins=[plugin])
    with os.fdopen(int(out), "w") as handle:
        handle.write(json.dumps({"status": int(status), "outcomes": plugin.outcomes}))


CHILD_FLAG = "--judge-child"
CHILD_REPORT_BYTES = 1 << 20


def _not_dumpable():
    """No process this one starts can open its fds or read its memory through /proc (PR_SET_DUMPABLE 0):
    the nonce and the report channel stay out of reach of the code under test and of the agent's commands."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


def _finds_pytest(site):
    """Whether the child will import pytest: from ``site`` (the local sandbox's bound folder) or the interpreter's
    own packages (a VM image's). Found, not imported: nothing of it runs in this process."""
    sys.path.insert(0, site)
    try:
        return importlib.util.find_spec("pytest") is not None
    finally:
        sys.path.remove(site)


def _judge(request):
    """One hidden test file (its canary among its tests) against the workspace: each test's outcome, with the nonce.
    Where the sandbox has no pytest, no test can run: a report of that (the host's infra verdict), not a failure."""
    if not _finds_pytest(request["site"]):
        return {"nonce": request["nonce"], "status": -1, "outcomes": {}, "no_pytest": True}
    _write_tree(TESTS, request["tests"])
    target = os.path.join(TESTS, request["file"])
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, "pytest.ini"), "w") as handle:
        handle.write("[pytest]\n")
    reading, writing = os.pipe()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    argv = [sys.executable, "-I", "-c", request["runner"], CHILD_FLAG, target, request["site"], WORKSPACE, CACHE]
    argv.append(str(writing))
    child = subprocess.Popen(
        argv, cwd=WORKSPACE, env=env, stdin=subprocess.DEVNULL, stdout=2, stderr=2, pass_fds=(writing,)
    )
    os.close(writing)
    os.set_blocking(reading, False)
    data = b""
    while len(data) <= CHILD_REPORT_BYTES:
        if select.select([reading], [], [], IDLE_S)[0]:
            with contextlib.suppress(BlockingIOError):
                chunk = os.read(reading, READ_CHUNK)
                if not chunk:
                    break
                data += chunk
        elif child.poll() is not None:
            break  # the child has exited and its pipe is idle: a process it left holding the pipe sends nothing more
    os.close(reading)
    child.kill()
    child.wait()
    try:
        found = json.loads(data[:CHILD_REPORT_BYTES])
        outcomes = {str(k): str(v) for k, v in found["outcomes"].items()}
        status = int(found["status"])
    except Exception:  # the child died, or wrote what is not its report: no test passed
        outcomes, status = {}, -1
    return {"nonce": request["nonce"], "status": status, "outcomes": outcomes}


def _report_channel():
    """This run's stdout, kept for the report alone: what pytest and the code under test print goes to stderr."""
    channel = os.dup(1)
    os.dup2(2, 1)
    return channel


def main():
    if sys.argv[1:2] == [CHILD_FLAG]:
        _child(*sys.argv[2:7])
        return
    _not_dumpable()
    request = json.loads(sys.stdin.read())
    channel = _report_channel()
    os.makedirs(WORKSPACE, exist_ok=True)
    left_out = _write_tree(WORKSPACE, request["files"])
    result = _shell(request, left_out) if request["mode"] == "shell" else _judge(request)
    sys.stdout.flush()
    with os.fdopen(channel, "wb") as report:
        report.write((json.dumps(result) + "\n").encode())


if __name__ == "__main__":
    main()
