# Runs INSIDE a sandbox, in a process just forked from a warm interpreter: runs one program in this
# process as `python3 -I <path>` would run it, so that no program pays for starting an interpreter.
# Shared by the local warm worker and the Superserve batch runner, which import it from their own
# directory. Standard library only.
import atexit
import builtins
import contextlib
import gc
import importlib
import importlib.machinery
import io
import operator
import os
import re
import signal
import sys
import threading
import traceback
import types

from codegrpo.harness.audit_events import (  # in a sandbox: that file's text, inlined (sandbox_source)
    HONEST_HANDLERS,
    audit_hook,
    event_category,
    frame_walk,
)

PRELUDE_CACHE = 8
# What programs and the harness import, imported once in the warm parent so that forks find them.
PRELOAD = (
    "collections",
    "ctypes",
    "functools",
    "heapq",
    "itertools",
    "json",
    "marshal",
    "math",
    "re",
    "select",
    "typing",
)
# File objects that may hold output at exit (a TextIOWrapper's flush flushes its buffer too).
BUFFERED = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom)
_preludes: dict[tuple[str, str], object] = {}
C_INT_MAX = (1 << 31) - 1  # the recursion limit is a C int (32 bits wherever CPython runs)

# -- the monitor's evidence of a stdin/stdout program (codegrpo.reward.monitor) ----------------------------
# A program whose prelude is not the harness (which takes its own evidence, in its child) runs with a PEP 578
# audit hook, installed just before its first line, which nothing in Python can remove: each kind of
# suspect event its own code raises (not the standard library's on its own, nor this module's) is written
# at once, before the operation is done, as one line AUDIT_MARK + token on its stderr pipe, which only
# the host reads; once it ran (atexit hooks included), a value of the builtins module replaced, added or
# removed and a signal's handler changed (but SIGPIPE's to its default) are written too. The program can
# add such lines (flags against itself) but cannot take back one written; the host reads them from its
# stderr (run_evidence.py). Best effort: a failed write is dropped, never the program's error.
HARNESS_MARK = "# Runs INSIDE the sandbox. The host appends one line: main("  # the harness's first line
AUDIT_MARK = "codegrpo-audit "
# Its own streams, by any name: a stdio program's to read and write.
STREAM_PATHS = (
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
)
STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")


def _evidence_channel():
    """Where the tokens go: fd 2 while it is still the stderr pipe the host reads, else nowhere. A program
    that points fd 2 at its stdout (``os.dup2(1, 2)``) would otherwise get tokens in its answer and fail (red
    team 6); a copy of the pipe on an fd of its own would show in the program's /proc/self/fd."""
    fstat, write_fd = os.fstat, os.write  # its own: the program may rebind os's attributes, never these

    def identity():
        try:
            found = fstat(2)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    stderr = identity()

    def write(data):
        if stderr is not None and identity() == stderr:
            write_fd(2, data)

    return write


def program_evidence():
    """Install the program's audit hook (see above) and return what to call once it ran. Its parts hold
    their own references (audit_events): the program may rebind this module's globals (its functions hand
    their __globals__ out: sys.getrecursionlimit is one), os's attributes and the builtins, never these."""
    import _thread

    library = (*sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}), "<frozen")
    ours = os.path.dirname(os.path.abspath(__file__)) + "/"
    sent, send = _sender(_evidence_channel())
    hook = audit_hook(
        event_category(_path_category(os.getcwd(), library), os.getpid()),
        frame_walk(sys._getframe, library, lambda name: not name.startswith(ours)),
        sent,
        send,
        _thread.get_ident,
        refuse_hooks=False,  # a hook of the program's own is evidence (patch:sys.addaudithook), and is added
    )
    after = _changes(send)  # taken before the hook is installed
    sys.addaudithook(hook)
    return after


def _sender(write):
    """(sent, send): send(token) writes the token's line once, at once, through ``write``; ``sent``: those sent."""
    sent, mark, failed = set(), AUDIT_MARK, OSError

    def send(token):
        if token not in sent:
            sent.add(token)
            try:  # noqa: SIM105 (contextlib is this module's global, which the program may rebind)
                write(f"\n{mark}{token}\n".encode())
            except failed:
                pass

    return sent, send


def _path_category(home, library):
    """The program's events on a path: evidence where the path is not its own (``home``, its cwd; /tmp; its
    streams by any name; an fd) nor a read of the standard library's files (``library``'s prefixes)."""
    kind, size, some, norm, join, decode = type, len, any, os.path.normpath, os.path.join, bytes.decode
    streams, stream_prefixes, own, installed = STREAM_PATHS, STREAM_PREFIXES, (home + "/", "/tmp/"), library[:-1]

    def path_category(event, args):
        path = args[0] if args else "."
        if kind(path) is int:
            return ""  # an fd: its own streams, or a file it opened
        # By identity: hashing or comparing a path object's class would run the program's code in the hook.
        if kind(path) is bytes:
            path = decode(path, "utf-8", "replace")
        elif kind(path) is not str:
            return "filesystem"  # a path object, whose code would run here
        full = norm(join(home, path))
        if full in streams or full.startswith(stream_prefixes) or full == home or full.startswith(own):
            return ""
        writes = event != "open" or (size(args) > 1 and kind(args[1]) is str and some(c in args[1] for c in "wax+"))
        if not writes and event == "open" and full.startswith(installed):
            return ""  # reading the standard library's own files
        return "filesystem"

    return path_category


def _changes(send):
    """Taken now, before the program runs: the builtins module's values and every signal's handler. The
    returned after() compares them once it ran: a value replaced, added or removed, and a handler changed
    (but SIGPIPE's to its default), each sent once."""
    import _signal  # type: ignore[import-not-found]

    space, kind, some, failed = builtins.__dict__, type, any, Exception
    saved = dict(space)
    getsignal = _signal.getsignal
    signals = {number: getsignal(number) for number in _signal.valid_signals()}
    honest = dict(HONEST_HANDLERS)

    def after():
        try:
            if space.__len__() != saved.__len__() or some(
                space.get(name, saved) is not value for name, value in saved.items()
            ):
                send("patch:builtins")
        except failed:
            send("patch:builtins")
        for number, handler in signals.items():
            try:
                now = getsignal(number)
                same = now is handler or (kind(now) is int and kind(handler) is int and now == handler)
                if not same and not (kind(now) is int and honest.get(number) == now):
                    send("exit:signal.signal")
                    break
            except failed:
                pass

    return after


def preload():
    for name in PRELOAD:
        importlib.import_module(name)
    # What is here now stays: no collection in a forked program walks it again (nor copies its pages).
    gc.freeze()


def prelude_code(path, source, prelude_chars):
    """The compiled prelude of ``source`` (trusted code many programs share, whole lines), compiled once
    per process, or None. Call it in the warm parent, before forking, for the cache to help."""
    if not 0 < prelude_chars <= len(source) or source[prelude_chars - 1] != "\n":
        return None
    key = (path, source[:prelude_chars])
    if key not in _preludes and len(_preludes) < PRELUDE_CACHE:
        try:
            _preludes[key] = compile(key[1], path, "exec")
        except (SyntaxError, ValueError):
            _preludes[key] = None
    return _preludes.get(key)


def run_as_main(path, source, prelude=None, prelude_chars=0):
    """Run ``source`` as the __main__ module of this process; returns the exit status the interpreter
    would have ended with (an uncaught KeyboardInterrupt kills the process by SIGINT, as there). The
    caller has set up fds, limits, the environment and the cwd."""
    sys.argv[:] = [path]
    _fresh_stdio()
    atexit._clear()  # the warm parent's hooks are not the program's
    _match_cold_recursion_limit()
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__builtins__ = builtins  # the module, as in a script's __main__ (an imported module has its dict)
    sys.modules["__main__"] = main
    status = 0
    # The harness (a trusted prelude: the host's, never the program's) takes its own evidence, in its child.
    harnessed = prelude_chars > 0 and source.startswith(HARNESS_MARK)
    after = None if harnessed else program_evidence()
    try:
        # Compiled from the file's bytes, as the interpreter compiles a file: a UTF-8 BOM at its top and a
        # PEP 263 coding line (`# -*- coding: latin-1 -*-`) mean what they mean there. The source came here
        # as the file's text (read back with surrogatepass), so encoding it gives the file's bytes again.
        if prelude is None:
            exec(compile(source.encode("utf-8", "surrogatepass"), path, "exec"), main.__dict__)
        else:
            # Compiled before anything runs, as the whole file would be, with the same line numbers.
            rest = "\n" * source.count("\n", 0, prelude_chars) + source[prelude_chars:]
            rest = compile(rest.encode("utf-8", "surrogatepass"), path, "exec")
            exec(prelude, main.__dict__)
            exec(rest, main.__dict__)
    except SystemExit as error:
        status = exit_status(error.code)
    except BaseException as error:
        # Without this function's frame: the traceback a cold run would print.
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        status = -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    try:
        threading._shutdown()  # non-daemon threads, then atexit hooks, as at interpreter exit
        atexit._run_exitfuncs()
    except SystemExit as error:
        status = exit_status(error.code)
    finally:
        if after is not None:
            with contextlib.suppress(BaseException):
                after()
        del main  # sys.modules holds the last reference: the module goes as the interpreter lets it go
        _finalize()
    if status == -signal.SIGINT:
        # A cold interpreter ends an uncaught KeyboardInterrupt by dying of SIGINT, or, as a pid 1 that
        # ignores it, by exiting with 128 + SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 128 + signal.SIGINT
    return status


def _finalize():
    """What the interpreter does at exit, for whatever the program buffered: flush sys.stdout and
    sys.stderr, put the original streams back, let go of __main__ and collect it (finalizers first, as
    the collector does: files flush and close, __del__ methods still see the module's globals), then
    flush every file object still open on fd 1 or 2 (the interpreter would, clearing the modules that
    hold them) and the original streams last."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    # Before the collection too: it finalizes a cycle's objects in no order, so the FileIO under a file
    # object kept in __main__ (whose functions make its globals a cycle) may close before the buffer above
    # it is flushed, where the interpreter's exit lets them go one by one, top down.
    _flush_open_files()
    with contextlib.suppress(BaseException):
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
        sys.modules.pop("__main__", None)
        gc.collect()
    _flush_open_files()
    for stream in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            stream.flush()


def _flush_open_files():
    """Flush every file object still open on fd 1 or 2."""
    with contextlib.suppress(BaseException):
        for value in gc.get_objects():
            if isinstance(value, BUFFERED):
                with contextlib.suppress(BaseException):
                    if not value.closed and value.fileno() in (1, 2):
                        value.flush()


def _fresh_stdio():
    """sys.stdin, sys.stdout and sys.stderr (and their __dunder__ twins) made anew on fds 0-2, as the
    interpreter makes them at its start (create_stdio): the warm parent's were made for its own fds (its
    stdout is /dev/null, and a FileIO remembers that it can seek: on the run's pipe,
    io.TextIOWrapper(sys.stdout.buffer) then failed with ESPIPE, and sys.stdout.seekable() was True)."""
    streams = []
    try:
        for fd, old, write in ((0, sys.__stdin__, False), (1, sys.__stdout__, True), (2, sys.__stderr__, True)):
            buffer = open(fd, "wb" if write else "rb", -1, closefd=False)  # noqa: SIM115 (it lives on as sys.std*)
            buffer.raw.name = f"<{('stdin', 'stdout', 'stderr')[fd]}>"
            line_buffering = buffer.raw.isatty() or fd == 2
            stream = io.TextIOWrapper(buffer, old.encoding, old.errors, "\n", line_buffering, False)
            stream.mode = "w" if write else "r"
            streams.append(stream)
    except (OSError, ValueError, AttributeError):
        return  # an fd the caller did not set up: the parent's streams stay
    # The interpreter sets the __std*__ names once at its start; this process is a program's fresh start.
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]


def _match_cold_recursion_limit():
    """The program's module code runs a few frames deep here, one frame deep in a cold interpreter: raise
    the limit by the difference, and show the program the limit a cold interpreter would have, with its
    errors: every value `python3 -I` accepts is accepted (up to the C int maximum, 2147483647, the first
    line of AtCoder's template, where the real limit stops at that maximum), and every value it refuses
    is refused by the interpreter's own function, with its own exception and message."""
    frame, offset = sys._getframe(1), 1  # exec() counts as a frame too
    while frame is not None:
        frame, offset = frame.f_back, offset + 1
    get, set_, index = sys.getrecursionlimit, sys.setrecursionlimit, operator.index
    shown = [get()]  # what the program set: a cold interpreter's getrecursionlimit() reads back just that
    set_(shown[0] + offset)

    def getrecursionlimit(*args, **kwargs):
        if args or kwargs:
            get(*args, **kwargs)  # the interpreter's own TypeError
        return shown[0]

    def setrecursionlimit(*args, **kwargs):
        if len(args) != 1 or kwargs:
            set_(*args, **kwargs)  # the interpreter's own TypeError; nothing is set
        try:
            limit = int.__index__(index(args[0]))  # an exact int, as the interpreter converts it (True is 1)
        except TypeError:
            set_(args[0])  # the interpreter's own TypeError, as it converts the argument
            raise
        if not 1 <= limit <= C_INT_MAX:
            set_(limit)  # the interpreter's own OverflowError or ValueError; nothing is set
        try:
            set_(min(limit + offset, C_INT_MAX))
        except RecursionError:
            # Refused at this depth, which is one frame deeper than the program's (this function's frame):
            # one more frame then, and refused only where a cold interpreter refuses, with its numbers.
            try:
                set_(limit + offset + 1)
            except RecursionError as error:
                cold = re.sub(r"\d+", lambda number: str(int(number[0]) - offset - 1), str(error))
                raise RecursionError(cold) from None
        shown[0] = limit

    sys.getrecursionlimit, sys.setrecursionlimit = getrecursionlimit, setrecursionlimit


def exit_status(code):
    """What the interpreter makes of SystemExit's argument."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1
