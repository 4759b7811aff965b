# The one protocol between a host and the runner's serve loop (harness/runner.py), on both sides of the
# sandbox: the host imports it (codegrpo.harness.protocol), the runner loads it from beside itself (a
# local sandbox's /run/codegrpo, a Superserve chunk's directory), and a chunk's batch process is the
# host of its own serve loop. Messages are JSON over a unix SOCK_SEQPACKET socket, fds beside them.
#
# A program's request ({"filename", "timeout", "prelude", "argv", "inputs", "budget"} with fds [source] or
# [source, stdin], see `request`) stays with the host: `exchange` sends the runner one run at a time, each
# with its own input alone, and keeps the rest (the run's index, the count, the other inputs, the
# budget), so that nothing in the sandbox, and no run forked there, can learn them:
#
#   run      {"filename", "timeout", "prelude", "argv"[, "uid"]} with fds [source] or [source, stdin]: argv
#            null: the file runs in the runner's forked Python; stdin: a sealed memfd of this run's input
#            alone (none: an empty stdin); timeout: this run's; uid: the user it runs as in a VM
#   open     {"open": true} with the read ends of the run's stdout and stderr, pipes made in the sandbox
#   answer   {"code", "timeout", "duration_s"} once every process of the run is gone
#   error    {"error"}: the run could not be started (the sandbox's fault); the request is over
#   kill     {"kill": true} from the host: kill the run (its output went past its limit, the budget is
#            spent, or the host needs no more runs); one that arrives after its run was answered is stale,
#            and dropped
#
# The host sends the next run only once the last is answered, so a stale kill always comes before it.
# A run the budget left no time for is never sent, nor one the host no longer needs (`exchange`'s
# `failed`: a binary reward past a failing test). Standard library only.
import fcntl
import json
import os
import select
import socket
import time

MODULES = ("runner", "inprocess", "protocol")  # what a sandbox needs of harness/ to run programs
MESSAGE_LIMIT = 1 << 20
READ_CHUNK = 1 << 16
ANSWER_GRACE_S = 10.0  # past a run's timeout, how long the serve loop may take to answer
RUN_FIELDS = ("filename", "prelude", "argv", "timeout")  # what of its program's request a run is told
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
NO_NAMESPACES_EXIT = 3  # a chunk's runner, where programs cannot get namespaces of their own
SETUP_FAILED_EXIT = 70  # a run's process, when its setup failed (reported as an error, never as its status)
KILLED_EXIT = 128 + 9  # a process killed by SIGKILL, as a shell reports it (`timeout -s KILL`)


class ProtocolError(Exception):
    """The other side broke the protocol, died, or a run could not be started."""


def limits(*, file_bytes, open_files, tmpfs_bytes, stdout_bytes, stderr_bytes, processes=None, memory_bytes=None):
    """What the runner sets on every run: rlimits (processes and memory only where no cgroup counts them),
    its /tmp's size, and how much of each output stream the host keeps."""
    rlimits = {"RLIMIT_FSIZE": file_bytes, "RLIMIT_NOFILE": open_files, "RLIMIT_CORE": 0}
    if processes is not None:
        rlimits["RLIMIT_NPROC"] = processes
    if memory_bytes is not None:
        rlimits["RLIMIT_AS"] = memory_bytes
    return {"rlimits": rlimits, "tmpfs_bytes": tmpfs_bytes, "output_bytes": [stdout_bytes, stderr_bytes]}


def request(filename, prelude, argv, timeout, inputs=None, budget=None):
    """A request (without its fds); ``inputs``: the byte length of each run's input, or None."""
    return {
        "filename": filename,
        "prelude": prelude,
        "argv": argv,
        "timeout": timeout,
        "inputs": None if inputs is None else list(inputs),
        "budget": budget,
    }


def encode_inputs(inputs):
    """Each input's bytes, as laid end to end in the stdin memfd."""
    return [text.encode("utf-8", "surrogatepass") for text in inputs]


def runs(document):
    return 1 if document["inputs"] is None else len(document["inputs"])


def send(control, document, fds=()):
    socket.send_fds(control, [json.dumps(document).encode()], list(fds))


def receive(control, max_fds, deadline=None):
    """The next message and its fds; (None, []) when the other side is gone. With a deadline, a message
    that does not come in time is a ProtocolError."""
    if deadline is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([control], [], [], remaining)[0]:
            raise ProtocolError("no answer in time")
    data, fds, _, _ = socket.recv_fds(control, MESSAGE_LIMIT, max_fds)
    if not data:
        close_all(fds)
        return None, []
    try:
        document = json.loads(data)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        close_all(fds)
        raise ProtocolError("a message that is not a JSON object")
    return document, fds


def close_all(fds):
    for fd in fds:
        os.close(fd)


class OutputCap:
    """One output stream kept up to ``limit`` bytes; ``feed`` says when the stream went past it."""

    def __init__(self, limit):
        self.limit = limit
        self.kept = bytearray()
        self.seen = 0

    def feed(self, chunk):
        """Keep what fits; True once more than ``limit`` bytes have arrived."""
        if self.seen < self.limit:
            self.kept += chunk[: self.limit - self.seen]
        self.seen += len(chunk)
        return self.seen > self.limit

    @property
    def text(self):
        return self.kept.decode("utf-8", "replace")


def exchange(control, document, fds, output_limits, grace_s=ANSWER_GRACE_S, failed=None):
    """The host's side of one request: its runs one after another, in an order drawn anew for each request,
    each sent with its own input alone, and yield, run by run, (index, answer, [stdout bytes, stderr bytes],
    over_limit), ``index`` being the run's place in the request. Each next run is sent as soon as the last
    is answered, so the runner starts it while the caller reads that one. ``fds`` stay the caller's to
    close; ``document["uids"]``, if any, is the uid of each run (by index).

    The order is random because a run can always learn how many ran before it through what the machine
    shares (the page cache, the sandbox's timestamps): in a random order that count says nothing about
    which test it is, so a program cannot replay a dataset's examples (its first tests) by position.

    ``failed(index)``, where given, is asked once the caller has read run ``index`` (as it asks for the next
    run): True says the caller needs no run above that index. From then on only the runs below it that have
    not run are sent, in index order (the fewest runs to find the lowest failing one), until another fails
    or none is left. The run already sent, if above it, is killed and its answer awaited unread, so that
    the runner is idle and ready for the next request; it is yielded with the answer None (no result: the
    caller learns only that it is over) before the next run is sent. Runs never sent are not yielded. The
    runs after a failure go in index order, where a program might tell its test's place: what they show
    decides which test failed first, never a reward (the caller's is 0 once one failed).

    One generator, past 60 lines: the order, the run in flight and the budget are one state that each
    yield hands back to the caller; split, every piece would pass all of it around."""
    count, sizes, uids = runs(document), document["inputs"], document.get("uids")
    import random  # here: only a host runs this, and no program's interpreter gets the module from the runner

    order = list(range(count))  # the runs in the order they go; after a failure, what is left of it changes
    random.SystemRandom().shuffle(order)
    offsets = [0]
    for size in sizes or []:
        offsets.append(offsets[-1] + size)
    budget_end = None if document["budget"] is None else time.monotonic() + document["budget"]

    def start(position):
        """Send the run at ``position`` of the order; its end of budget (if sooner than its timeout) and
        answer deadline, or None when the budget leaves it no time (or no run is left)."""
        started = time.monotonic()
        if position >= len(order) or (budget_end is not None and budget_end <= started):
            return None
        index = order[position]
        run = {name: document[name] for name in RUN_FIELDS} | ({} if uids is None else {"uid": uids[index]})
        own = [] if sizes is None else [own_input(fds[1], offsets[index], sizes[index])]
        try:
            send(control, run, [fds[0], *own])
        finally:
            close_all(own)
        # The budget is the host's: past it, the run is killed as if its own timeout had come.
        cut = budget_end if budget_end is not None and budget_end < started + document["timeout"] else None
        return cut, (started + document["timeout"] if cut is None else cut) + grace_s

    sent = start(0)
    position = 0
    while position < len(order):
        index = order[position]
        if sent is None:  # no time left: the run never starts
            yield index, {"code": None, "timeout": True, "duration_s": 0.0, "budget": True}, [b"", b""], False
        else:
            cut, deadline = sent
            answer, outputs, over = collect(
                control, index, opened(control, index, deadline), output_limits, deadline, cut
            )
            sent = start(position + 1)
            yield index, checked(answer), outputs, over
        position += 1
        if failed is None or not failed(index):
            continue
        below = sorted(other for other in order[position:] if other < index)
        if position < len(order) and order[position] > index:  # the next run is not needed
            if sent is not None:
                abandon(control, order[position], sent[1], output_limits)
                yield order[position], None, [b"", b""], False  # over before the next is sent; no result
            order[position:] = below
            sent = start(position) if sent is not None else None
        else:  # the next run (sent, if any) is needed: it stays next
            order[position + 1 :] = [other for other in below if other != order[position]]


def opened(control, index, deadline):
    """Run ``index``'s stdout and stderr, as the runner opens the run."""
    message, streams = receive(control, 2, deadline)
    if message is None:
        raise ProtocolError("the runner is gone")
    if "error" in message:
        close_all(streams)
        raise ProtocolError(f"the program could not be started: {message['error']}")
    if message != {"open": True} or len(streams) != 2:
        close_all(streams)
        raise ProtocolError(f"an unexpected message for run {index}: {message}")
    return streams


def abandon(control, index, deadline, output_limits):
    """Kill run ``index``, sent but no longer wanted, and wait for its answer, keeping nothing of it. Killed
    in its setup, it is answered as a run that could not be started: here that is no fault, and the runner,
    having answered, is idle."""
    streams = opened(control, index, deadline)
    collect(control, index, streams, output_limits, deadline, time.monotonic(), abandoned=True)


def own_input(stdin, offset, size):
    """A sealed memfd holding ``size`` bytes of ``stdin`` from ``offset`` on: one run's input alone."""
    memfd = os.memfd_create("stdin", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        while size > 0:
            data = os.pread(stdin, min(size, READ_CHUNK), offset)
            if not data:
                raise ProtocolError("an input is shorter than its request says")
            offset += len(data)
            size -= len(data)
            view = memoryview(data)
            while view:
                view = view[os.write(memfd, view) :]
        fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(memfd)
        raise
    return memfd


def collect(control, index, streams, output_limits, deadline, cut=None, abandoned=False):
    """Run ``index``'s output (up to the limits) and its answer; past a limit, or at ``cut`` (the end of the
    budget), the runner is told to kill the run, and the rest is drained unread. Once the answer is in,
    every process of the run is gone: what is in the pipes now is all there is, even if a write end lives
    on as an fd in flight, so the pipes are drained without waiting for their end. An ``abandoned`` run
    (killed at once, see `abandon`) may be answered with an error, and so may one the budget's end killed
    while it was being set up: that one is a timeout, as any run the budget cuts."""
    caps = {fd: OutputCap(limit) for fd, limit in zip(streams, output_limits, strict=True)}
    reading, answer, over, cut_off = list(streams), None, False, False
    try:
        while reading or answer is None:
            now = time.monotonic()
            if answer is None and cut is not None and not cut_off and now >= cut:
                cut_off = True
                send(control, {"kill": True})
            remaining = 0.0 if answer is not None else deadline - now
            if answer is None and remaining <= 0:
                raise ProtocolError("no answer in time")
            if answer is None and cut is not None and not cut_off:
                remaining = min(remaining, max(0.0, cut - now))
            ready = select.select(reading + ([control] if answer is None else []), [], [], remaining)[0]
            if not ready:
                if answer is not None:
                    break  # drained
                continue
            if control in ready:
                answer, extra = receive(control, 2)
                close_all(extra)
                if isinstance(answer, dict):
                    answer.pop("budget", None)  # the host's word alone: set below when the budget cut the run
                if answer is not None and "error" in answer:
                    if cut_off:  # the budget's end killed it while it was set up: the program ran out of time
                        answer = {"code": None, "timeout": True, "duration_s": 0.0, "budget": True}
                    elif not abandoned:
                        raise ProtocolError(f"the program could not be started: {answer['error']}")
                elif answer is None or "code" not in answer:
                    raise ProtocolError(f"an unexpected answer for run {index}: {answer}")
            for fd in [fd for fd in ready if fd in reading]:
                chunk = os.read(fd, READ_CHUNK)
                if not chunk:
                    reading.remove(fd)
                elif caps[fd].feed(chunk) and not over:
                    over = True
                    send(control, {"kill": True})
    finally:
        close_all(streams)
    if cut_off and isinstance(answer, dict):
        answer["timeout"] = answer["budget"] = True  # killed at the budget's end: a timeout, and the budget's
    return answer, [bytes(caps[fd].kept) for fd in streams], over


def checked(answer):
    code, timeout, duration = answer.get("code"), answer.get("timeout"), answer.get("duration_s")
    if (
        not (code is None or (isinstance(code, int) and not isinstance(code, bool)))
        or not isinstance(timeout, bool)
        or not isinstance(duration, (int, float))
        or isinstance(duration, bool)
    ):
        raise ProtocolError(f"a malformed answer: {answer}")
    return answer
