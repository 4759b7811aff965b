# Runs INSIDE the sandbox. The host appends one line: main(<code>, <test>, <mode>).
#
# Why two processes: the completion runs in a forked child whose stdout is redirected to stderr, so
# nothing it prints, no exit(0) and no patched builtin can reach the real stdout. The parent never runs
# completion code; it is non-dumpable (no ptrace, no /proc/<pid>/fd from the child), reads the child's
# result from a private pipe, checks it holds plain builtin values only, and writes the one line the
# host reads. The expected values never enter the sandbox (expression form).
import ctypes
import json
import marshal
import os
import select
import sys

RESULT_LIMIT = 1 << 20
MAX_DEPTH = 100


def _plain(value, depth=0):
    """Exact builtin types only: a subclass with a forged __eq__ is rejected, never compared."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind in (list, tuple):
        return [_plain(item, depth + 1) for item in value]
    if kind is dict:
        if any(type(key) is not str for key in value):
            raise ValueError("dict keys must be str")
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    raise ValueError(f"unsupported type {kind.__name__}")


def _child(code, test, mode, result_fd):
    os.dup2(2, 1)  # the completion's prints go to stderr; the real stdout stays the parent's
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    dumps = marshal.dumps  # a builtin: its behaviour cannot be patched from Python code
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(code, "solution.py", "exec"), namespace)
    expression = mode == "expression"
    payload = eval(compile(test, "test", "eval"), namespace) if expression else _run_checks(test, namespace)
    os.write(result_fd, dumps(("ok", payload)))
    os._exit(0)


def _run_checks(test, namespace):
    # HumanEval form: test defines check(candidate) whose body the host split into
    # _CHECKS: one entry per top-level statement, recording values or assert outcomes.
    namespace["_plain"] = _plain
    exec(compile(test, "test", "exec"), namespace)
    return namespace["_codegrpo_check"]()


def _read_result(fd, pid):
    """Read the child's pipe until EOF, or until the child is gone and the pipe is idle.

    Orphans of the child may hold the pipe open, so EOF alone could wait forever.
    """
    os.set_blocking(fd, False)
    chunks, size, status = [], 0, None
    while True:
        if select.select([fd], [], [], 0.02)[0]:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                break
            if chunk:
                size += len(chunk)
                if size > RESULT_LIMIT:
                    return None, "result too large"
                chunks.append(chunk)
                continue
        if status is not None:
            break
        pid_done, code = os.waitpid(pid, os.WNOHANG)
        if pid_done:
            status = code
    if status is None:
        status = os.waitpid(pid, 0)[1]
    return b"".join(chunks), status


def main(code, test, mode):
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            _child(code, test, mode, write_fd)
        except BaseException as error:
            message = f"{type(error).__name__}: {error}"[:2000]
            try:
                import traceback

                traceback.print_exc()
                os.write(write_fd, marshal.dumps(("error", message)))
            finally:
                os._exit(1)
    os.close(write_fd)
    data, status = _read_result(read_fd, pid)
    line = _verdict_line(data, status)
    os.write(1, (line + "\n").encode())


def _verdict_line(data, status):
    if data is None:
        return json.dumps({"status": "error", "error": status})
    if not data:
        code = os.waitstatus_to_exitcode(status)
        return json.dumps({"status": "error", "error": f"no result (exit status {code})"})
    try:
        tag, payload = marshal.loads(data)
    except Exception as error:
        return json.dumps({"status": "error", "error": f"malformed result: {type(error).__name__}"})
    if tag != "ok":
        return json.dumps({"status": "error", "error": str(payload)[:2000]})
    try:
        return json.dumps({"status": "ok", "value": _plain(payload)})
    except (ValueError, RecursionError) as error:
        return json.dumps({"status": "error", "error": f"unscorable value: {error}"})
