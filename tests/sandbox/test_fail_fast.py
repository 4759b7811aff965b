"""Fail-fast for the binary reward (issue 42), in the real local sandbox: a program's runs stop at its first
failing test, with the verdict (status, reward, reason) it gets when every test runs; partial reward and the
feedback rollout's public tests run every test; the warm worker that ran it is clean for the next program.

Runs are counted on the host as they are sent to the runner (a pass-through spy on ``protocol.send``), so the
counts hold whatever the timing: a run killed in flight counts as sent."""

from __future__ import annotations

import asyncio
import textwrap
import uuid

import pytest

from codegrpo.config.choices import Form
from codegrpo.config.rollout import RolloutConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.harness import protocol
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status, Verdict
from codegrpo.rollout.episode import Episode
from codegrpo.rollout.feedback import Feedback
from codegrpo.sandbox.base import Outcome
from tests.helpers.fail_fast import DOUBLE, MIXED, RIGHT, TESTS, WRONG, WRONG_FIRST, score, scorer, skipped
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import Recording, assert_nothing_left, daemon_source, make_sandbox, open_fds

pytestmark = run_if(bwrap=True)


@pytest.fixture(scope="module")
def box():
    sandbox = make_sandbox()
    yield sandbox
    asyncio.run(sandbox.aclose())


@pytest.fixture
def one_worker():
    """A warm sandbox with a single worker, so that one program's successor runs in the same one."""
    sandbox = make_sandbox(max_concurrency=1)
    yield sandbox
    asyncio.run(sandbox.aclose())


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every run the host sends a runner, as it sends it (the runs of programs with inputs have a filename)."""
    runs: list[dict] = []
    send = protocol.send

    def counting(control, document, fds=()):
        if "filename" in document:
            runs.append(document)
        send(control, document, fds)

    monkeypatch.setattr(protocol, "send", counting)
    return runs


def test_a_program_failing_test_1_of_10_stops_early_and_one_failing_every_test_at_once(box, sent):
    variants = [f"{WRONG_FIRST}# {n}\n" for n in range(8)]  # distinct programs: each runs on its own
    fds = open_fds()
    scored, results = score(box, variants)
    assert {(s.verdict.status, s.verdict.reward, s.verdict.detail) for s in scored} == {
        (Status.FAILED, 0.0, 'test 1 of 10: got "1", expected "0"')
    }
    # Test 1 (index 0) ran in each; what its random place left after it did not: all 8 at the end of the
    # order has a chance of 1 in 10^8.
    assert all(result.runs[0].outcome is Outcome.EXITED for result in results)
    assert len(sent) < len(variants) * TESTS and sum(map(skipped, results)) > 0
    assert all(len(result.runs) == TESTS for result in results)
    # Failing every test: the first run fails, then only test 1 is needed. At most 3 runs kept (the first, the
    # one already sent if below it, test 1) and 2 killed in flight; 10 each without fail-fast.
    sent.clear()
    scored, results = score(box, [f"{WRONG}# {n}\n" for n in range(8)])
    assert {s.verdict.detail for s in scored} == {'test 1 of 10: got "1", expected "0"'}
    assert len(sent) <= 8 * 5 and all(TESTS - skipped(result) <= 3 for result in results)
    sent.clear()
    scored, results = score(box, [f"{WRONG}# {n}\n" for n in range(8)], fail_fast=False)
    assert len(sent) == 8 * TESTS and sum(map(skipped, results)) == 0
    assert box.stats()["sandbox/skipped_runs"] > 0
    assert_nothing_left(fds)


def test_the_verdict_is_the_same_with_and_without_fail_fast(box):
    """Passing, wrong, an error, a timeout and mixes of them: status, reward and reason alike, whatever order
    the runs went in (three orders drawn with fail-fast)."""
    codes = [RIGHT, WRONG, WRONG_FIRST, *MIXED.values()]
    every, results = score(box, codes, fail_fast=False)
    assert not any(map(skipped, results))
    expected = [(s.verdict.status, s.verdict.reward, s.verdict.detail) for s in every]
    assert [status for status, _, _ in expected] == [
        Status.PASSED,
        Status.FAILED,
        Status.FAILED,
        Status.FAILED,
        Status.ERROR,
        Status.TIMEOUT,
        Status.FAILED,
        Status.ERROR,
    ]
    assert expected[3][2] == 'test 3 of 10: got "5", expected "4"' and expected[5][2] == "test 4 of 10: timed out"
    for _ in range(3):
        fast, results = score(box, codes)
        assert [(s.verdict.status, s.verdict.reward, s.verdict.detail) for s in fast] == expected
        assert skipped(results[0]) == 0  # a passing program runs every test


def test_partial_reward_runs_every_test(box, sent):
    scored, results = score(box, [WRONG_FIRST, WRONG], kind="partial")  # fail_fast is on: partial ignores it
    assert [s.verdict.reward for s in scored] == [pytest.approx(0.9), 0.0]
    assert len(sent) == 2 * TESTS and not any(map(skipped, results))


def test_the_feedback_rollout_runs_every_public_test(box, sent):
    """rollout=feedback shows up to max_failures failing tests: its public runs (Scorer.reports) never stop
    early, with a binary scorer that fails fast."""
    environment = Feedback(scorer(box), RolloutConfig())
    assert environment.scorer.stops_early
    episode = Episode(DOUBLE, [])
    episode.codes.append(WRONG)
    (response,) = asyncio.run(environment.respond([episode]))
    assert response.report is not None and all(run is not None for run in response.report.runs)
    assert len(response.report.runs) == TESTS and len(sent) == TESTS
    assert response.message.startswith(f"Your code was run on the {TESTS} public tests: 0 passed, {TESTS} failed.")


def test_the_worker_is_clean_for_the_next_program_and_nothing_is_left(one_worker, sent):
    """A program whose runs each leave a daemon and fail: its run in flight is killed, its daemons are gone,
    and the same warm worker gives every following program its right verdict."""
    marker = f"codegrpo-fail-fast-{uuid.uuid4().hex}"
    leaving = textwrap.dedent(daemon_source(marker)).replace('print("parent done")', "print(-1)")
    fds = open_fds()
    for round_ in range(3):
        scored, results = score(one_worker, [f"{leaving}# {round_}\n"])
        assert scored[0].verdict.detail == 'test 1 of 10: got "-1", expected "0"' and skipped(results[0]) > 0
        scored, _ = score(one_worker, [f"{RIGHT}# {round_}\n", f"{WRONG_FIRST}# {round_}\n"])
        assert [s.verdict.status for s in scored] == [Status.PASSED, Status.FAILED]
    stats = one_worker.stats()
    assert (stats["sandbox/warm_started"], stats["sandbox/warm_retired"]) == (1.0, 0.0)  # one worker, reused
    assert "sandbox/warm_reruns" not in stats
    assert_nothing_left(fds, marker)


def test_a_run_the_budgets_end_kills_in_its_setup_is_a_timeout_not_a_sandbox_fault():
    """The host's kill at the end of reward.time_budget_s can reach a run while the runner still sets it up; the
    runner then answers with an error. That run ran out of time (red team: it read as infra, reward None, and
    retired the worker). Here the runner's side is a socket the test answers as the runner would."""
    import os
    import socket
    import time

    host, runner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    os.close(out_w)
    os.close(err_w)
    try:
        protocol.send(runner, {"open": True}, [out_r, err_r])
        os.close(out_r)
        os.close(err_r)
        _, streams = protocol.receive(host, 2)
        now = time.monotonic()
        protocol.send(runner, {"error": "the program's process died during setup"})  # as a kill in setup makes it
        answer, outputs, over = protocol.collect(host, 0, streams, (1024, 1024), now + 5, cut=now - 1)
        assert protocol.receive(runner, 0)[0] == {"kill": True}  # the budget's end was told to the runner
        assert protocol.checked(answer)["timeout"] is True and answer["code"] is None
        assert (outputs, over) == ([b"", b""], False)
        # Without the budget's kill, the same error is the sandbox's fault, as before.
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        os.close(out_w)
        os.close(err_w)
        protocol.send(runner, {"open": True}, [out_r, err_r])
        os.close(out_r)
        os.close(err_r)
        _, streams = protocol.receive(host, 2)
        protocol.send(runner, {"error": "no such interpreter"})
        with pytest.raises(protocol.ProtocolError, match="could not be started"):
            protocol.collect(host, 0, streams, (1024, 1024), time.monotonic() + 5)
    finally:
        host.close()
        runner.close()


# Six tests; the last is answered wrong at once, the others right after 0.4 s: a budget of 1 s never lets the five
# below it all run, so under the old rule (the lowest-numbered failing test decides) a run of test 6 still read
# TIMEOUT, and fail-fast, which runs the tests below a failure first, leaned another way than a full run.
SLOW_BUT_RIGHT = "import time\nn = int(input())\nif n != 5:\n    time.sleep(0.4)\nprint(2 * n + (n == 5))\n"
SIX = Problem(
    "six",
    "Print twice the integer read.",
    "",
    Form.stdio,
    tests=tuple(IOTest(f"{i}\n", f"{2 * i}\n") for i in range(6)),
)


@pytest.mark.parametrize("fail_fast", [True, False], ids=["fail-fast", "every-test"])
def test_where_the_budget_binds_a_failure_found_before_its_end_is_the_verdict_in_both_modes(box, fail_fast):
    """Issue 52, item 5: one rule whichever tests the budget reached (docs/reward-design.md): test 6's wrong
    answer is the verdict whenever test 6 ran; a timeout, the budget's, only where it never ran."""
    recording = Recording(box)
    scoring = Scorer(
        [SIX], recording, get_language("python"), "binary", timeout_s=2.0, budget_s=1.0, fail_fast=fail_fast
    )
    seen = {True: 0, False: 0}
    for attempt in range(40):  # the order of the runs is random: until test 6 ran, and did not, twice each
        (scored,) = asyncio.run(scoring.score([SIX.id], [f"```python\n{SLOW_BUT_RIGHT}# {attempt}\n```"]))
        runs = recording.results[-1].runs
        ran = runs[5].outcome is Outcome.EXITED
        assert any(run.budget_cut for run in runs), runs  # the budget bound
        if ran:
            assert scored.verdict == Verdict(Status.FAILED, 0.0, 'test 6 of 6: got "11", expected "10"'), runs
        else:
            assert scored.verdict.status is Status.TIMEOUT and "time_budget_s ran out" in scored.verdict.detail
        seen[ran] += 1
        if min(seen.values()) >= 2:
            break
    assert min(seen.values()) >= 2, seen
