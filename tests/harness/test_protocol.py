"""codegrpo.harness.protocol, the host's side: what a run is told, the limits the host holds the runner's answers
to, and what a runner (in the sandbox: hostile once a program has run there) can and cannot make the host
believe. The runner's side here is a thread of the test speaking the protocol over a real SOCK_SEQPACKET pair
(tests/sandbox/ check the real runner)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time

import pytest

from codegrpo.harness import protocol
from codegrpo.harness.protocol import ProtocolError

LIMITS = (10, 10)  # bytes of stdout and stderr the host keeps


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


class Runner:
    """A runner on the other end of the control socket, each run doing what its own input says:
    ``echo:TEXT`` prints TEXT and exits 0; ``flood`` prints 100 bytes; ``wait`` prints nothing; both then wait
    for the host's kill (up to 5 s) and exit 137; ``error`` cannot be started; ``budget`` claims the budget cut
    it; ``silent`` opens and never answers; ``bad:JSON`` answers JSON."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.messages: list[dict] = []  # every run message, as received
        self.inputs: list[bytes] = []  # each run's stdin, as its memfd held it
        self.seals: list[int] = []
        self.kills = 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            message, fds = protocol.receive(self.control, 2)
            if message is None:
                return
            if "kill" in message:  # stale: after its run was answered
                self.kills += 1
                continue
            self.messages.append(message)
            stdin = b""
            if len(fds) == 2:
                self.seals.append(fcntl.fcntl(fds[1], fcntl.F_GET_SEALS))
                stdin = os.pread(fds[1], 1 << 16, 0)
            self.inputs.append(stdin)
            protocol.close_all(fds)
            self.answer(stdin.decode())

    def answer(self, what: str) -> None:
        if what == "error":
            protocol.send(self.control, {"error": "no interpreter"})
            return
        (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
        protocol.send(self.control, {"open": True}, [out_r, err_r])
        protocol.close_all([out_r, err_r])
        code, answer = 0, {}
        if what.startswith("echo:"):
            os.write(out_w, what[5:].encode())
        elif what in ("flood", "wait"):
            if what == "flood":
                os.write(out_w, b"x" * 100)
            message, _ = protocol.receive(self.control, 0, time.monotonic() + 5)
            self.kills += message == {"kill": True}
            code = protocol.KILLED_EXIT
        elif what == "budget":
            answer = {"budget": True}
        elif what == "silent":
            protocol.close_all([out_w, err_w])
            return
        elif what.startswith("bad:"):
            protocol.close_all([out_w, err_w])
            protocol.send(self.control, json.loads(what[4:]))
            return
        protocol.close_all([out_w, err_w])
        protocol.send(self.control, {"code": code, "timeout": False, "duration_s": 0.01} | answer)


@contextlib.contextmanager
def runner_for(inputs: list[str] | None):
    """(host end, the Runner, fds of a request with ``inputs``: the source's memfd and the inputs', end to end)."""
    host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    runner = Runner(theirs)
    fds = [os.memfd_create("source")]
    os.write(fds[0], b"print()")
    if inputs is not None:
        fds.append(os.memfd_create("stdin"))
        os.write(fds[1], b"".join(protocol.encode_inputs(inputs)))
    try:
        yield host, runner, fds
    finally:
        host.close()
        runner.thread.join(5)
        theirs.close()
        protocol.close_all(fds)


def request(inputs: list[str] | None, timeout: float = 5.0, budget: float | None = None, **fields) -> dict:
    sizes = None if inputs is None else [len(piece) for piece in protocol.encode_inputs(inputs)]
    return protocol.request("solution.py", "", None, timeout, sizes, budget) | fields


def exchanged(inputs, grace_s=protocol.ANSWER_GRACE_S, failed=None, **fields):
    """Every (index, answer, outputs, over) the host yields, and the Runner that answered."""
    with runner_for(inputs) as (host, runner, fds):
        document = request(inputs, **fields)
        results = list(protocol.exchange(host, document, fds, LIMITS, grace_s, failed))
    return results, runner


# -- what a run is told --------------------------------------------------------------------------------


def test_each_run_is_sent_its_own_input_alone_and_nothing_else_of_the_request():
    inputs = ["echo:a", "echo:bb", "echo:ccc"]
    results, runner = exchanged(inputs, budget=100.0)
    assert sorted(runner.inputs) == sorted(text.encode() for text in inputs)
    for message in runner.messages:  # no index, no count, no other input, no budget
        assert message == {"filename": "solution.py", "prelude": "", "argv": None, "timeout": 5.0}
    assert sorted((index, outputs[0]) for index, _, outputs, _ in results) == [(0, b"a"), (1, b"bb"), (2, b"ccc")]


def test_a_runs_input_is_sealed_against_any_change():
    _, runner = exchanged(["echo:a", "echo:b"])
    assert runner.seals == [protocol.SEALS] * 2
    assert protocol.SEALS & fcntl.F_SEAL_WRITE and protocol.SEALS & fcntl.F_SEAL_GROW


def test_a_program_without_inputs_runs_once_with_no_stdin_fd():
    results, runner = exchanged(None)
    assert [index for index, *_ in results] == [0]
    assert runner.inputs == [b""] and runner.seals == []


def test_each_run_is_told_the_uid_of_its_own_index():
    inputs = [f"echo:{index}" for index in range(4)]
    _, runner = exchanged(inputs, uids=[1000, 1001, 1002, 1003])
    told = {stdin.decode()[5:]: message["uid"] for stdin, message in zip(runner.inputs, runner.messages, strict=True)}
    assert told == {"0": 1000, "1": 1001, "2": 1002, "3": 1003}


def test_runs_go_in_an_order_drawn_anew_for_each_request():
    inputs = [f"echo:{index}" for index in range(4)]
    orders = {tuple(index for index, *_ in exchanged(inputs)[0]) for _ in range(12)}
    assert len(orders) > 1 and all(sorted(order) == [0, 1, 2, 3] for order in orders)


# -- output and the answer -----------------------------------------------------------------------------


def test_output_past_its_limit_is_cut_there_and_the_run_killed():
    (result,), runner = exchanged(["flood"])
    _, answer, outputs, over = result
    assert over is True and outputs == [b"x" * LIMITS[0], b""]
    assert runner.kills == 1 and answer["code"] == protocol.KILLED_EXIT


def test_output_of_exactly_the_limit_is_kept_whole_and_not_killed():
    (result,), runner = exchanged(["echo:" + "y" * LIMITS[0]])
    assert result[2:] == ([b"y" * LIMITS[0], b""], False) and runner.kills == 0


def test_an_output_cap_keeps_at_most_its_limit_however_the_stream_is_cut():
    cap = protocol.OutputCap(5)
    assert [cap.feed(chunk) for chunk in (b"ab", b"cde", b"f", b"gh")] == [False, False, True, True]
    assert cap.kept == b"abcde" and cap.seen == 8 and cap.text == "abcde"


def test_a_run_that_could_not_be_started_is_the_sandboxs_error():
    with pytest.raises(ProtocolError, match="could not be started: no interpreter"):
        exchanged(["error"])


def test_a_runner_that_does_not_answer_past_the_timeout_and_grace_is_given_up():
    started = time.monotonic()
    with pytest.raises(ProtocolError, match="no answer in time"):
        exchanged(["silent"], timeout=0.3, grace_s=0.2)
    assert time.monotonic() - started < 3


def test_a_runner_cannot_claim_the_budget_cut_its_run():
    ((_, answer, _, _),), _ = exchanged(["budget"], budget=100.0)
    assert "budget" not in answer and answer["timeout"] is False


@pytest.mark.parametrize(
    "answer",
    [
        {"code": True, "timeout": False, "duration_s": 0.1},  # a bool is no exit status
        {"code": "0", "timeout": False, "duration_s": 0.1},
        {"code": 0, "timeout": 0, "duration_s": 0.1},
        {"code": 0, "timeout": False, "duration_s": True},
        {"code": 0, "timeout": False, "duration_s": "0.1"},
        {"code": 0, "timeout": False},
        {"timeout": False, "duration_s": 0.1},
        {"open": True},
    ],
)
def test_a_malformed_answer_is_refused(answer):
    with pytest.raises(ProtocolError):
        exchanged(["bad:" + json.dumps(answer)])


def test_a_well_formed_answer_passes_as_it_is():
    for answer in ({"code": None, "timeout": True, "duration_s": 2}, {"code": -9, "timeout": False, "duration_s": 0.5}):
        assert protocol.checked(answer) is answer


# -- the budget -------------------------------------------------------------------------------------------


def test_runs_the_budget_leaves_no_time_for_are_never_sent():
    results, runner = exchanged(["echo:a", "echo:b"], budget=0.0)
    assert runner.messages == []
    assert sorted(index for index, *_ in results) == [0, 1]
    for _, answer, outputs, over in results:
        assert answer == {"code": None, "timeout": True, "duration_s": 0.0, "budget": True}
        assert outputs == [b"", b""] and over is False


def test_a_run_at_the_budgets_end_is_killed_as_a_timeout_of_the_budget():
    started = time.monotonic()
    ((_, answer, _, _),), runner = exchanged(["wait"], timeout=5.0, budget=0.3)
    assert runner.kills == 1 and answer["timeout"] is True and answer["budget"] is True
    assert time.monotonic() - started < 3


# -- failed: runs a failing one made unneeded --------------------------------------------------------------


def test_after_a_failing_run_only_the_runs_below_it_are_run():
    inputs = [f"echo:{index}" for index in range(5)]  # run 2 fails
    for _ in range(12):  # the order is random: the paths past a failure differ from draw to draw
        results, runner = exchanged(inputs, failed=lambda index: index == 2)
        answered = {index for index, answer, *_ in results if answer is not None}
        unanswered = {index for index, answer, *_ in results if answer is None}
        failing = [index for index, *_ in results].index(2)
        assert all(answer is None for index, answer, *_ in results[failing:] if index > 2), results
        assert {0, 1, 2} <= answered and not answered & unanswered
        assert unanswered <= {3, 4}  # only a run sent before the failure was read is abandoned
        later = [index for index, answer, *_ in results[failing + 2 :] if answer is not None]
        assert later == sorted(later) and all(index < 2 for index in later)  # then in index order, below it
        assert len(runner.messages) == len(results)  # every run sent was answered, the abandoned one too


def test_without_a_failure_every_run_is_run():
    results, runner = exchanged([f"echo:{index}" for index in range(5)], failed=lambda index: False)
    assert sorted(index for index, answer, *_ in results if answer is not None) == [0, 1, 2, 3, 4]
    assert len(runner.messages) == 5


# -- the pieces ----------------------------------------------------------------------------------------------


def test_receive_refuses_a_message_that_is_not_a_json_object_and_closes_its_fds():
    host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with host, theirs:
        for data in (b"not json", b"[1, 2]", b'"text"'):
            before = fd_count()
            read, write = os.pipe()
            socket.send_fds(theirs, [data], [read])
            protocol.close_all([read, write])
            with pytest.raises(ProtocolError, match="not a JSON object"):
                protocol.receive(host, 2)
            assert fd_count() == before


def test_receive_says_none_once_the_other_side_is_gone():
    host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.close()
    with host:
        assert protocol.receive(host, 2) == (None, [])


def test_receive_gives_up_at_its_deadline():
    host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with host, theirs:
        started = time.monotonic()
        with pytest.raises(ProtocolError, match="no answer in time"):
            protocol.receive(host, 0, started + 0.2)
        assert 0.15 < time.monotonic() - started < 2
        protocol.send(theirs, {"late": True})
        with pytest.raises(ProtocolError):  # a deadline already past: not even a waiting message is read
            protocol.receive(host, 0, time.monotonic())
        assert protocol.receive(host, 0, time.monotonic() + 1) == ({"late": True}, [])


def test_receive_takes_no_more_fds_than_asked():
    host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with host, theirs:
        pipes = [os.pipe() for _ in range(2)]
        protocol.send(theirs, {"open": True}, [end for pipe in pipes for end in pipe])
        protocol.close_all([end for pipe in pipes for end in pipe])
        message, fds = protocol.receive(host, 2)
        assert message == {"open": True} and len(fds) == 2
        protocol.close_all(fds)


def test_own_input_is_the_slice_of_the_inputs_and_cannot_be_written():
    stdin = os.memfd_create("stdin")
    try:
        os.write(stdin, b"first" + b"second" * 20000 + b"third")  # past one READ_CHUNK
        memfd = protocol.own_input(stdin, 5, 6 * 20000)
        try:
            assert os.pread(memfd, 1 << 20, 0) == b"second" * 20000
            with pytest.raises(PermissionError):
                os.pwrite(memfd, b"X", 0)
            with pytest.raises(PermissionError):
                os.ftruncate(memfd, 1)
        finally:
            os.close(memfd)
        before = fd_count()
        with pytest.raises(ProtocolError, match="shorter"):
            protocol.own_input(stdin, 5, 1 << 20)
        assert fd_count() == before
    finally:
        os.close(stdin)


def test_inputs_travel_as_their_utf8_bytes_lone_surrogates_too():
    assert protocol.encode_inputs(["é", "\udc80", ""]) == [b"\xc3\xa9", b"\xed\xb2\x80", b""]


def test_a_request_counts_one_run_per_input_or_one_without():
    assert protocol.runs(request(None)) == 1
    assert protocol.runs(request(["a", "b", "c"])) == 3
    assert request(["é"])["inputs"] == [2]  # bytes, not characters


def test_limits_set_process_and_memory_rlimits_only_where_asked_and_never_a_core():
    plain = protocol.limits(file_bytes=1, open_files=2, tmpfs_bytes=3, stdout_bytes=4, stderr_bytes=5)
    assert plain == {
        "rlimits": {"RLIMIT_FSIZE": 1, "RLIMIT_NOFILE": 2, "RLIMIT_CORE": 0},
        "tmpfs_bytes": 3,
        "output_bytes": [4, 5],
    }
    full = protocol.limits(
        file_bytes=1, open_files=2, tmpfs_bytes=3, stdout_bytes=4, stderr_bytes=5, processes=6, memory_bytes=7
    )
    assert full["rlimits"] == {
        "RLIMIT_FSIZE": 1,
        "RLIMIT_NOFILE": 2,
        "RLIMIT_CORE": 0,
        "RLIMIT_NPROC": 6,
        "RLIMIT_AS": 7,
    }


def test_the_exit_statuses_the_runner_reports_are_the_shells():
    assert protocol.KILLED_EXIT == 137
    assert protocol.SETUP_FAILED_EXIT == 70  # EX_SOFTWARE
    assert set(protocol.MODULES) == {"runner", "inprocess", "protocol"}
