"""An agent's workspace inside the sandbox: one run of this program per tool call or per hidden test file.

It reads its request as JSON on stdin, writes the workspace's files under /tmp/ws (the run's own fresh /tmp),
and either runs a shell command there (``shell``: the output, and the files as they are after it) or runs
one hidden test file against the files with pytest (``judge``: each test's outcome). It prints one JSON line.
Run by ``python3 -I`` as a sandbox program: it imports nothing of codegrpo.

The judge runs pytest so that nothing the workspace holds is read as configuration: pytest's ini options
come from the request alone (``-c`` names an empty file of ours), conftest.py files are read only below the
test's own folder, entry-point plugins are off, and compiled files are written and read under a cache of
this run's own (``sys.pycache_prefix``), never a ``__pycache__`` of the workspace. The test file is the
host's copy, written after the workspace's files, in a folder of its own outside the workspace. Outcomes go
back on stdout with the run's nonce, which only a report made by this program carries; a canary test that
must fail runs beside the real ones, so a workspace that makes every test pass is seen.
"""

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

WORKSPACE = "/tmp/ws"
TESTS = "/tmp/judge/tests"
CACHE = "/tmp/judge/cache"
READ_CHUNK = 1 << 16


def _write_tree(root, files):
    """Each file of ``files`` (relative path -> base64) under ``root``; paths were checked on the host."""
    for path, data in files.items():
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"refused path {path}")
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(base64.b64decode(data))


def _read_tree(root, max_files, max_bytes):
    """The regular files under ``root`` (base64), or why not: more than ``max_files`` files or ``max_bytes``."""
    files, links, total = {}, [], 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path) or not os.path.isfile(path):
                links.append(relative)
                continue
            size = os.path.getsize(path)
            total += size
            if len(files) >= max_files:
                return None, links, "files"
            if total > max_bytes:
                return None, links, "bytes"
            with open(path, "rb") as handle:
                files[relative] = base64.b64encode(handle.read()).decode("ascii")
    return files, links, None


def _shell(request):
    """Run the command in the workspace, its output (stdout and stderr as one) cut at ``max_output`` bytes."""
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
    kept, size, timed_out = bytearray(), 0, False
    os.set_blocking(process.stdout.fileno(), False)
    while True:
        try:
            chunk = os.read(process.stdout.fileno(), READ_CHUNK)
        except BlockingIOError:
            chunk = None
        if chunk == b"":
            break
        if chunk:
            size += len(chunk)
            kept += chunk[: max(0, request["max_output"] - len(kept))]
            continue
        if time.monotonic() > deadline:
            timed_out = True
            break
        time.sleep(0.005)
    if timed_out or process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    code = process.wait()
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


class _Outcomes:
    """A pytest plugin that keeps each test's outcome by node id (call phase, or the phase that failed)."""

    def __init__(self):
        self.outcomes = {}

    def pytest_runtest_logreport(self, report):
        first = self.outcomes.get(report.nodeid) in (None, "passed")  # a setup's failure outlives its teardown
        if (report.when == "call" or report.outcome != "passed") and first:
            self.outcomes[report.nodeid] = report.outcome

    def pytest_collectreport(self, report):
        if report.outcome != "passed":
            self.outcomes[report.nodeid or "<collection>"] = "error"


def _judge(request):
    """One hidden test file, with the canary beside it, against the workspace: each test's outcome."""
    _write_tree(TESTS, request["tests"])
    canary = request["canary"]
    with open(os.path.join(TESTS, f"{canary}.py"), "w") as handle:
        handle.write(f"def {canary}():\n    raise AssertionError('the canary fails')\n")
    os.makedirs(CACHE, exist_ok=True)
    config = os.path.join(CACHE, "pytest.ini")
    with open(config, "w") as handle:
        handle.write("[pytest]\n")
    sys.pycache_prefix = CACHE
    sys.dont_write_bytecode = True
    sys.path[:0] = [request["site"]]
    os.chdir(WORKSPACE)
    os.environ.pop("PYTEST_ADDOPTS", None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest

    plugin = _Outcomes()
    args = [
        "-q",
        "-p",
        "no:cacheprovider",
        "-c",
        config,
        "--rootdir",
        TESTS,
        "--confcutdir",
        TESTS,
        "-o",
        f"pythonpath={WORKSPACE}",
        "-o",
        "python_files=test_*.py *_test.py",
        "-o",
        "python_functions=test_*",
        "--continue-on-collection-errors",  # the canary runs whatever the file does
        os.path.join(TESTS, request["file"]),
        os.path.join(TESTS, f"{canary}.py"),
    ]
    status = pytest.main(args, plugins=[plugin])
    return {"nonce": request["nonce"], "status": int(status), "outcomes": plugin.outcomes}


def _report_channel():
    """This run's stdout, kept for the report alone: what pytest and the code under test print goes to stderr."""
    channel = os.dup(1)
    os.dup2(2, 1)
    return channel


def main():
    request = json.loads(sys.stdin.read())
    channel = _report_channel()
    os.makedirs(WORKSPACE, exist_ok=True)
    _write_tree(WORKSPACE, request["files"])
    result = _shell(request) if request["mode"] == "shell" else _judge(request)
    sys.stdout.flush()
    with os.fdopen(channel, "wb") as report:
        report.write((json.dumps(result) + "\n").encode())


if __name__ == "__main__":
    main()
