# Runs INSIDE the sandbox. The host appends one line: main(<code>, <test>, <mode>[, <entry>, <prompt>]).
# Modes: "expression" (the value of the expression <test>), "call" (the value of the function named
# <test>, or of class Solution's method, called with the JSON list of arguments on stdin: one test per
# process) and "checks" (HumanEval, below).
#
# Why two processes: the completion runs in a forked child whose stdout is redirected to stderr, so
# nothing it prints, no exit(0) and no patched builtin can reach the real stdout. The parent never runs
# completion code; it is non-dumpable (no ptrace, no /proc/<pid>/fd from the child), reads the child's
# result from a private pipe, checks it holds exact builtin values only, and writes the one line the
# host reads, in a typed JSON that keeps tuples, sets and dict keys as Python has them. The expected
# values never enter the sandbox (expression and call forms).
#
# HumanEval form ("checks"): the checks run in the parent, where the completion never ran, so it cannot
# switch them off (wrapping exec or assert's helpers, say). The candidate there is a stand-in that asks
# the child to call the completion's function: arguments go in, a return value of exact builtin types
# (or the name of the exception it raised) comes back. The prompt's own helpers (trusted problem code)
# are defined in the parent from the prompt, not from the completion.
import builtins
import ctypes
import json
import linecache
import marshal
import os
import select
import struct
import sys

RESULT_LIMIT = 1 << 20
MAX_DEPTH = 100


INT_BITS = 10000  # larger ints travel as hex: JSON's decimal text of them is refused past 4300 digits
TAGS = {tuple: "t", set: "s", frozenset: "f"}


def _typed(value, depth=0):
    """Typed JSON of exact builtin values, so the host rebuilds what Python compared: a JSON object is
    always a tag ({"t": tuple, "s": set, "f": frozenset, "d": dict items, "b": bytes, "c": complex,
    "i": a big int}), never a dict. A subclass with a forged __eq__ is rejected, never compared."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    kind = type(value)
    if value is None or kind in (bool, float, str):
        return value
    if kind is int:
        return value if value.bit_length() <= INT_BITS else {"i": hex(value)}
    if kind is list:
        return [_typed(item, depth + 1) for item in value]
    if kind in TAGS:
        return {TAGS[kind]: [_typed(item, depth + 1) for item in value]}
    if kind is dict:
        return {"d": [[_typed(key, depth + 1), _typed(item, depth + 1)] for key, item in value.items()]}
    if kind is bytes:
        return {"b": value.hex()}
    if kind is complex:
        return {"c": [value.real, value.imag]}
    raise ValueError(f"unsupported type {kind.__name__}")


EXACT = (type(None), bool, int, float, complex, str, bytes)


def _exact(value, depth=0):
    """Builtin types only, exactly (what marshal carries as itself): no subclass crosses to the parent."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    kind = type(value)
    if kind in EXACT:
        return value
    if kind in (list, tuple, set, frozenset):
        for item in value:
            _exact(item, depth + 1)
        return value
    if kind is dict:
        for key, item in value.items():
            _exact(key, depth + 1)
            _exact(item, depth + 1)
        return value
    raise ValueError(f"unsupported type {kind.__name__}")


def _send(fd, data):
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


def _receive(fd):
    head = _read_exactly(fd, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    return _read_exactly(fd, size) if size <= RESULT_LIMIT else None


def _read_exactly(fd, size):
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _callable(namespace, name):
    """The function a call-form test calls: a top-level one, else a method of class Solution (LeetCode)."""
    function = namespace.get(name)
    if callable(function):
        return function
    solution = namespace.get("Solution")
    if isinstance(solution, type) and callable(getattr(solution, name, None)):
        return getattr(solution(), name)
    raise NameError(f"the code defines no function {name!r}")


def _child(code, test, mode, result_fd, request_fd, arguments):
    os.dup2(2, 1)  # the completion's prints go to stderr; the real stdout stays the parent's
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    dumps, loads = marshal.dumps, marshal.loads  # builtins: their behaviour cannot be patched from Python code
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    # Its own name in tracebacks, with its own lines (solution.py's first lines are this harness).
    linecache.cache["<completion>"] = (len(code), None, code.splitlines(True), "<completion>")
    exec(compile(code, "<completion>", "exec"), namespace)
    if mode == "expression":
        os.write(result_fd, dumps(("ok", eval(compile(test, "test", "eval"), namespace))))
        os._exit(0)
    if mode == "call":
        os.write(result_fd, dumps(("ok", _callable(namespace, test)(*arguments))))
        os._exit(0)
    function = namespace[test]
    _send(result_fd, dumps(("ready", None)))
    while (request := _receive(request_fd)) is not None:
        args, kwargs = loads(request)
        try:
            answer = ("ok", _exact(function(*args, **kwargs)))
        except Exception as error:
            answer = ("raised", type(error).__name__)
        _send(result_fd, dumps(answer))
    os._exit(0)


class _ChildGone(BaseException):
    """The completion's process died or broke the protocol: no check can be judged."""


def _candidate(request_fd, result_fd):
    def candidate(*args, **kwargs):
        _send(request_fd, marshal.dumps((args, kwargs)))
        data = _receive(result_fd)
        if data is None:
            raise _ChildGone("the candidate's process died")
        try:
            tag, value = marshal.loads(data)
        except Exception:
            raise _ChildGone("a malformed answer") from None
        if tag == "ok":
            return value
        kind = getattr(builtins, str(value), None)
        raise kind() if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError(str(value))

    return candidate


def _run_checks(checks, entry, prompt, request_fd, result_fd):
    """HumanEval form, in the parent: ``checks`` defines _codegrpo_check(), one record per statement of
    check(candidate) that asserts (the host split them), with ``entry`` calling into the child."""
    data = _receive(result_fd)
    if data is None:
        return None
    # The completion ran before the child says it is ready, with the pipe in reach: anything but the
    # exact ready message (its own error report included) is no verdict, and never a record.
    message = marshal.loads(data)
    if message != ("ready", None):
        error = message[1] if type(message) is tuple and len(message) == 2 and message[0] == "error" else None
        return marshal.dumps(("error", str(error)[:2000] if type(error) is str else "no ready message"))
    namespace = {"__name__": "__checks__", "__builtins__": builtins}
    if prompt:
        exec(compile(prompt, "prompt", "exec"), namespace)
    namespace[entry] = _candidate(request_fd, result_fd)
    namespace["_typed"] = _typed
    exec(compile(checks, "test", "exec"), namespace)
    try:
        return marshal.dumps(("ok", namespace["_codegrpo_check"]()))
    except _ChildGone as error:
        return marshal.dumps(("error", str(error)))


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


def main(code, test, mode, entry="", prompt=""):
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    # Trusted input (the test's arguments), read before the completion's process exists.
    arguments = json.loads(sys.stdin.buffer.read()) if mode == "call" else None
    read_fd, write_fd = os.pipe()
    request_r, request_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.close(request_w)
        try:
            _child(code, entry or test, mode, write_fd, request_r, arguments)
        except BaseException as error:
            message = f"{type(error).__name__}: {error}"[:2000]
            try:
                import traceback

                traceback.print_exc()
                (_send if mode == "checks" else os.write)(write_fd, marshal.dumps(("error", message)))
            finally:
                os._exit(1)
    os.close(write_fd)
    os.close(request_r)
    if mode == "checks":
        try:
            data = _run_checks(test, entry, prompt, request_w, read_fd)
        except Exception as error:  # the problem's own checks or prompt failed: no verdict
            data = marshal.dumps(("error", f"the checks could not run: {type(error).__name__}: {error}"[:2000]))
        os.close(request_w)
        status = os.waitpid(pid, 0)[1]
    else:
        os.close(request_w)
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
        return json.dumps({"status": "ok", "value": _typed(payload)})
    except (ValueError, RecursionError) as error:
        return json.dumps({"status": "error", "error": f"unscorable value: {error}"})
