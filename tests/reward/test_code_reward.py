"""The reward as a library: the guide's train.py with one import changed, CodeReward's contract (columns,
settings refused as the template refuses them, its bounds in time and memory, pickling, threads, fork,
async), codegrpo.score against codegrpo-score, and a light `import codegrpo`. The tests of CodeReward's own
bookkeeping (its row cache, its metrics, the problem it judges) run on the public in-memory backend
(``adding``); those that score real programs run them in the local sandbox."""

from __future__ import annotations

import asyncio
import json
import operator
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from benchmarks.corpora.reward import GOOD, HACKS, IS_PRIME

import codegrpo
from codegrpo import CodeReward, MemoryBackend, Outcome, Program, RunResult, code_reward
from codegrpo.config.reward import RewardConfig
from codegrpo.config.sandbox import LocalSandboxConfig, SuperserveSandboxConfig
from codegrpo.data.problems import parse_problem
from codegrpo.errors import SandboxFatalError, UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward.code_reward import make_code_reward
from codegrpo.reward.shared_batch import SharedBatch
from codegrpo.reward.verdict import Status
from tests.helpers.commands import command
from tests.helpers.sandbox import answering

ADD_CODE, SUB_CODE = "def add(a, b):\n    return a + b", "def add(a, b):\n    return a - b"
ADD, SUB = f"```python\n{ADD_CODE}\n```", f"```python\n{SUB_CODE}\n```"
SLEEPS = "import time\ntime.sleep(1000)"  # never finishes, and costs the shared machine no CPU while it waits


def adding() -> MemoryBackend:
    """A sandbox where no program runs: ADD's and SUB's harness programs report the test expression's value with
    their ``add`` (a + b, or a - b), as the real harness does; any other program is a failed sandbox."""
    return answering(defines={ADD_CODE: {"add": operator.add}, SUB_CODE: {"add": operator.sub}})


def _readme_blocks() -> list[str]:
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme[readme.index("## Use the reward in your own TRL script") :]
    return re.findall(r"```python\n(.*?)```\n", section, re.DOTALL)[:2]


def test_the_readme_script_is_the_guides_with_one_import_changed():
    script, laptop = _readme_blocks()
    for block in (script, laptop):
        assert "from codegrpo import code_reward" in block and "reward_funcs=code_reward" in block
        assert "code_reward.py" not in block and "def code_reward" not in block  # nothing of the guide's module
    assert 'model="Qwen/Qwen2.5-0.5B-Instruct"' in script and "model=codegrpo.offline_model()" in laptop


@pytest.mark.slow
def test_the_readmes_laptop_script_trains_as_it_is_written(tmp_path):
    """The README's offline CPU version of the guide's train.py, run verbatim in an empty dir."""
    script = _readme_blocks()[1] + "\nimport json\nprint('HISTORY', json.dumps(trainer.state.log_history))\n"
    (tmp_path / "train.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
        env=os.environ | {"PYTHONPATH": str(PROJECT_ROOT / "src")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    history = json.loads(done.stdout.split("HISTORY ", 1)[1])
    steps = [entry for entry in history if "rewards/code_reward/mean" in entry]
    assert len(steps) == 2, history
    assert all(0.0 <= entry["rewards/code_reward/mean"] <= 1.0 for entry in steps)
    assert all("status/passed" in entry and "sandbox/batch_s" in entry for entry in steps)  # the template's metrics


def test_the_offline_models_path_is_a_function_and_a_command():
    import codegrpo

    path = codegrpo.offline_model()
    assert (Path(path) / "config.json").is_file() and (Path(path) / "tokenizer_config.json").is_file()
    done = command("codegrpo.models.conversion")
    assert done.returncode == 0 and done.stdout.strip() == path


def test_each_form_reads_its_own_columns():
    rewards = code_reward(
        [ADD, SUB, "no code at all", None, [{"role": "assistant", "content": ADD}], 42],
        test=["add(2, 3)"] * 6,
        expected=["5"] * 6,
    )
    assert rewards == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    stdio = [{"input": "2 3\n", "output": "5\n"}, {"input": "1 1\n", "output": "2\n"}]
    assert code_reward(["print(sum(map(int, input().split())))", "print(5)"], tests=[stdio, json.dumps(stdio)]) == [
        1.0,
        0.0,
    ]
    call = [{"input": [2, 3], "output": 5}]
    assert code_reward([ADD, SUB], tests=[call, call], fn_name=["add", "add"]) == [1.0, 0.0]
    humaneval = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 0) == 0\n"
    assert code_reward([ADD, SUB], test=[humaneval] * 2, entry_point=["add"] * 2) == [1.0, 0.0]
    reward = CodeReward(problems=PROJECT_ROOT / "problems" / "seed.jsonl")
    assert reward([GOOD, HACKS["os._exit"]], problem_id=["is_prime"] * 2) == [1.0, 0.0]


def test_bad_columns_are_one_error_naming_them_before_anything_runs():
    with pytest.raises(UsageError, match=r"one form: test \+ expected .* it has test \(its columns: test\)$"):
        code_reward([ADD], test=["add(2, 3)"])
    # A misspelt column is named, beside TRL's own arguments, which are not.
    with pytest.raises(UsageError, match=r"it has none of them \(its columns: expected_output, tset\)$"):
        code_reward(
            [ADD],
            prompts=["p"],
            tset=["add(2, 3)"],
            expected_output=["5"],
            completion_ids=[[1]],
            trainer_state=None,
            log_extra=print,
        )
    with pytest.raises(UsageError, match="column 'expected' must be a list with one entry per completion"):
        code_reward([ADD], test=["add(2, 3)"], expected="5")
    with pytest.raises(UsageError, match="row 0: field 'expected' is not valid JSON text"):
        code_reward([ADD], test=["add(2, 3)"], expected=["{five"])
    with pytest.raises(UsageError, match=r"tests\[0\].input' must be a list of arguments"):
        code_reward([ADD], tests=[[{"input": 2, "output": 5}]], fn_name=["add"])
    with pytest.raises(UsageError, match="problem_id nope not in CodeReward"):
        CodeReward()([ADD], problem_id=["nope"])
    with pytest.raises(UsageError, match=r"kind='half'\): must be one of binary, partial"):
        CodeReward(kind="half")
    with pytest.raises(UsageError, match="sandbox='docker'"):
        CodeReward(sandbox="docker")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"time_budget_s": 0}, "time_budget_s=0 must be a number of seconds above 0 and at most 3600"),
        ({"time_budget_s": -5}, "time_budget_s=-5 must be a number of seconds above 0 and at most 3600"),
        ({"time_budget_s": float("nan")}, "time_budget_s=nan must be a number of seconds above 0 and at most 3600"),
        ({"timeout_s": 0}, "timeout_s=0 must be a number of seconds above 0 and at most 60"),
        ({"tolerance": float("nan")}, "tolerance=nan must be a finite number at least 0"),
        ({"tolerance": -1}, "tolerance=-1 must be a finite number at least 0"),
        ({"max_concurrency": 0}, "max_concurrency must be at least 1, not 0"),
        ({"cache_rows": -1}, "cache_rows must be a whole number at least 0, not -1"),
        ({"cache_bytes": 1.5}, "cache_bytes must be a whole number at least 0, not 1.5"),
    ],
)
def test_a_setting_the_template_would_refuse_is_one_error_naming_it(setting, message):
    # Today's main took time_budget_s=0 (every test timed out) and tolerance=nan (no number matched).
    with pytest.raises(UsageError) as raised:
        CodeReward(**setting)
    assert str(raised.value) == f"CodeReward: {message}"


def test_the_library_bounds_a_completion_by_the_templates_time_budget():
    # The default is the template's reward.time_budget_s, read from its schema: no second literal to drift.
    assert CodeReward().settings.time_budget_s == RewardConfig().time_budget_s == 60.0
    assert codegrpo.reward.code_reward._default().settings.time_budget_s == RewardConfig().time_budget_s
    tests = [{"input": f"{n}\n", "output": f"{n}\n"} for n in range(4)]
    reward = CodeReward(timeout_s=3.0, time_budget_s=4.0)
    assert reward(["print(input())"], tests=[tests]) == [1.0]  # opens the sandbox, outside the timing
    started = time.monotonic()
    assert reward([SLEEPS], tests=[tests]) == [0.0]
    assert time.monotonic() - started < 9  # the budget's 4 s, not 4 tests of 3 s


@pytest.mark.slow
def test_a_sleeping_completion_on_12_tests_holds_the_default_reward_for_the_budget_not_12_timeouts():
    """The finding itself: one looping completion on 12 tests held a reward call for 121 s."""
    tests = [{"input": f"{n}\n", "output": f"{n}\n"} for n in range(12)]
    reward = CodeReward()
    assert reward(["print(input())"], tests=[tests]) == [1.0]
    started = time.monotonic()
    assert reward([SLEEPS], tests=[tests]) == [0.0]
    assert time.monotonic() - started < RewardConfig().time_budget_s + 20  # not 12 x 10 s


def _rss() -> int:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) << 10


def test_rows_are_kept_within_the_caches_bounds_however_many_come():
    reward = CodeReward(answering())  # no code, no program: one would be a failed sandbox (None)
    big = "x" * (2 << 20)
    assert reward([""], test=["f()"], expected=["1"]) == [0.0]  # opens the reward (its loop) before measuring
    before = _rss()
    for n in range(200):  # no code: nothing runs, the row is still parsed and kept
        assert reward([""], test=["f()"], expected=[json.dumps(f"{n}{big}")]) == [0.0]
    # Today's main kept all 200 rows: +400 MiB. The default cache holds 64 MiB of rows.
    assert _rss() - before < 160 << 20
    small = CodeReward(answering(), cache_rows=3, cache_bytes=5 << 20)
    for n in range(10):
        small([""], test=["f()"], expected=[json.dumps(f"{n}{big}")])
    assert len(small._rows) <= 2 and small._rows.bytes <= 5 << 20  # two 2 MiB rows fit in 5 MiB
    for n in range(10):
        small([""], test=[f"f({n})"], expected=["1"])
    assert len(small._rows) == 3


def test_a_backend_of_the_callers_scores_as_given_stays_open_and_does_not_pickle():
    """CodeReward(sandbox=<a backend>), here the public in-memory one: the reward's programs go to it (what ran
    is what it recorded), closing the reward leaves it to its owner, and the reward refuses to pickle."""

    def handler(program: Program, stdin: str | None) -> RunResult:
        value = 5 if "return a + b" in program.source else -1  # add(2, 3), as the harness reports it
        return RunResult(Outcome.EXITED, 0, stdout=json.dumps({"status": "ok", "value": value}) + "\n")

    backend = MemoryBackend(handler)
    reward = CodeReward(backend, kind="partial")
    assert reward([ADD, SUB, "no code"], test=["add(2, 3)"] * 3, expected=["5"] * 3) == [1.0, 0.0, 0.0]
    assert len(backend.programs) == 2  # no code, no program
    reward.close()
    assert reward([ADD], test=["add(2, 3)"], expected=["5"]) == [1.0] and len(backend.programs) == 3
    with pytest.raises(TypeError, match="given a SandboxBackend does not pickle"):
        pickle.dumps(reward)


def test_fail_fast_is_the_templates_default_and_a_setting_of_the_library():
    """CodeReward(kind="binary") stops a completion's tests at its first failing one (reward.fail_fast, read from
    the schema), ``fail_fast=False`` runs them all; partial always does; the reward is the same."""
    asked: list[str | None] = []

    def handler(program: Program, stdin: str | None) -> RunResult:
        asked.append(stdin)
        return RunResult(Outcome.EXITED, 0, stdout="0\n")

    tests = [{"input": f"{n}\n", "output": f"{n}\n"} for n in range(4)]
    assert CodeReward().settings.fail_fast is RewardConfig().fail_fast is True
    for settings, runs in (({}, 2), ({"fail_fast": False}, 4), ({"kind": "partial"}, 4)):
        asked.clear()
        reward = CodeReward(MemoryBackend(handler), **settings)
        assert reward(["print(0)"], tests=[tests]) == [1.0 / 4 if settings.get("kind") == "partial" else 0.0]
        assert len(asked) == runs, settings
    assert pickle.loads(pickle.dumps(CodeReward(fail_fast=False))).settings.fail_fast is False


def test_a_batch_larger_than_the_cache_is_judged_against_its_own_rows():
    # Each batch holds its rows itself: the cache dropping one (or another thread's rows) changes no verdict.
    reward = CodeReward(adding(), cache_rows=1)
    assert reward(
        [ADD, ADD, SUB, ADD], test=["add(2, 3)", "add(1, 1)", "add(2, 3)", "add(2, 3)"], expected=["5", "2", "5", "5"]
    ) == [1.0, 1.0, 0.0, 1.0]
    assert len(reward._rows) == 1 and reward.problems == {}  # the given problems, never the rows
    assert CodeReward(adding(), cache_rows=0)([ADD, SUB], test=["add(2, 3)"] * 2, expected=["5"] * 2) == [1.0, 0.0]


def test_a_missing_bubblewrap_and_a_missing_key_say_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(SandboxFatalError, match="bubblewrap"):
        CodeReward(LocalSandboxConfig(bwrap=str(tmp_path / "bwrap")))([ADD], test=["add(2, 3)"], expected=["5"])
    monkeypatch.delenv("SUPERSERVE_API_KEY", raising=False)
    with pytest.raises((SandboxFatalError, UsageError), match="SUPERSERVE_API_KEY"):
        CodeReward(SuperserveSandboxConfig())([ADD], test=["add(2, 3)"], expected=["5"])


def test_a_pickled_reward_scores_as_the_original():
    original = CodeReward(kind="partial", timeout_s=5.0)
    completions = [ADD, SUB, "def add(a, b):\n    return 5"]
    columns = {"test": ["[add(2, 3), add(1, 1)]"] * 3, "expected": ["[5, 2]"] * 3}
    before = original(completions, **columns)
    copy = pickle.loads(pickle.dumps(original))
    assert copy(completions, **columns) == before == [1.0, 0.0, 0.5]
    assert copy.__name__ == "code_reward" and (copy.settings, copy.timeout_s) == (original.settings, original.timeout_s)


def test_threads_and_a_fork_each_get_their_verdicts():
    reward = CodeReward()
    results: dict[int, list] = {}

    def call(number: int) -> None:
        results[number] = reward([ADD if number % 2 else SUB], test=["add(2, 3)"], expected=["5"])

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: [1.0 if n % 2 else 0.0] for n in range(6)}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's sandbox and loop thread are not its own; it opens its own
        try:
            os.write(write, json.dumps(reward([ADD], test=["add(2, 3)"], expected=["5"])).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        assert json.loads(pipe.read() or "null") == [1.0]
    os.waitpid(pid, 0)
    assert reward([ADD], test=["add(2, 3)"], expected=["5"]) == [1.0]  # the parent's still works


def test_a_fork_while_another_thread_opens_the_sandbox_leaves_a_child_that_scores():
    reward = CodeReward()
    opener = threading.Thread(target=reward, args=([ADD],), kwargs={"test": ["add(2, 3)"], "expected": ["5"]})
    opener.start()
    deadline = time.monotonic() + 60
    while not reward._lock.locked():  # the thread is opening the sandbox (a second or so) and holds the lock
        assert opener.is_alive() and time.monotonic() < deadline
        time.sleep(0.0005)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # today's main: the child waited forever for the lock the parent's thread held at the fork
        try:
            os.write(write, json.dumps(reward([ADD], test=["add(2, 3)"], expected=["5"])).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 120)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        assert ready and json.loads(pipe.read() or "null") == [1.0], "the child hung, or did not score"
    opener.join()
    assert reward([ADD], test=["add(2, 3)"], expected=["5"]) == [1.0]  # the parent's opened and still works


def test_the_async_reward_is_awaited_and_logs_the_templates_metrics():
    from trl.trainer.utils import get_callable_name, is_async_callable

    reward = codegrpo.AsyncCodeReward(adding())
    assert is_async_callable(reward) and not is_async_callable(CodeReward())
    assert get_callable_name(reward) == get_callable_name(code_reward) == "code_reward"
    metrics: dict[str, float] = {}
    extra: dict[str, list] = {}
    rewards = asyncio.run(
        reward(
            [ADD, SUB],
            test=["add(2, 3)"] * 2,
            expected=["5"] * 2,
            log_metric=metrics.__setitem__,
            log_extra=extra.__setitem__,
        )
    )
    assert rewards == [1.0, 0.0]
    assert metrics["status/passed"] == 1.0 and metrics["pass_rate"] == 0.5 and "hacks/any" in metrics
    assert extra["status"] == ["passed", "failed"] and set(extra) == {"problem_id", "status", "error", "code", "flags"}


def test_the_templates_reward_judges_as_its_scorer_says_and_through_its_sandbox(compose_cfg, local_sandbox):
    # It copies none of the Scorer's settings (of_scorer once copied nine and checked them again): what the
    # config says reaches the verdicts through the Scorer alone.
    from codegrpo import build

    cfg = compose_cfg("reward=partial", "problems=seed", "sandbox.timeout_s=3")
    scorer = build.scorer(cfg, build.problems(cfg.problems), local_sandbox)
    reward = make_code_reward(SharedBatch(scorer))
    runs = local_sandbox.stats().get("sandbox/runs", 0)
    half_right = "```python\ndef is_prime(n):\n    return n > 1\n```"  # 2 of is_prime's 3 checks
    assert reward.__name__ == "code_reward"
    assert asyncio.run(reward([GOOD, half_right], problem_id=["is_prime"] * 2)) == [1.0, pytest.approx(2 / 3)]
    assert local_sandbox.stats()["sandbox/runs"] == runs + 2
    with pytest.raises(UsageError, match="problem_id nope not in the problem set"):
        asyncio.run(reward([GOOD], problem_id=["nope"]))


def test_the_sandbox_kinds_are_the_sandbox_groups_options():
    from codegrpo.config.sandbox import SANDBOX_KINDS

    assert sorted(SANDBOX_KINDS) == sorted(p.stem for p in (PROJECT_ROOT / "conf" / "sandbox").glob("*.yaml"))
    assert [type(CodeReward(sandbox=kind).sandbox) for kind in SANDBOX_KINDS] == list(SANDBOX_KINDS.values())


def test_score_gives_the_verdicts_of_codegrpo_score(tmp_path):
    corpus = [
        GOOD,
        "def is_prime(n):\n    return n > 1",
        "def is_prime(n):\n    raise ValueError()",
        "```bash\nls\n```",
        "def is_prime(n):\n    while True: pass",
        *HACKS.values(),
    ]
    path = tmp_path / "completions.jsonl"
    path.write_text("".join(json.dumps({"problem_id": "is_prime", "completion": c}) + "\n" for c in corpus))
    done = command(
        "codegrpo.commands.score", f"completions={path}", "problems=seed", "sandbox.timeout_s=2", "--reasons"
    )
    assert done.returncode == 0, done.stderr
    cli = [json.loads(line) for line in done.stdout.splitlines()]
    reward = CodeReward(timeout_s=2.0)
    library = [codegrpo.score(c, problem=IS_PRIME, reward=reward) for c in corpus]
    assert [(s.verdict.status.value, s.verdict.reward, sorted(s.flags)) for s in library] == [
        (line["status"], line["reward"], sorted(line["flags"])) for line in cli
    ]
    assert library[0].verdict.status is Status.PASSED and {s.verdict.status for s in library[1:]} <= {
        Status.FAILED,
        Status.ERROR,
        Status.NO_CODE,
        Status.TIMEOUT,
    }
    one = codegrpo.score("def add(a, b):\n    return a + b", test="add(2, 3)", expected="5")
    assert (one.verdict.status, one.verdict.reward, one.verdict.detail) == (Status.PASSED, 1.0, "")


def test_score_judges_the_problem_it_is_given_not_an_earlier_one_of_its_id():
    first = parse_problem({"id": "p", "prompt": "", "test": "add(2, 3)", "expected": "5"}, "first")
    second = parse_problem({"id": "p", "prompt": "", "test": "add(2, 2)", "expected": "4"}, "second")
    fives = "def add(a, b):\n    return 5"  # right for the first, wrong for the second
    sandbox = answering(defines={fives: {"add": lambda a, b: 5}})
    plain = CodeReward(sandbox)  # as code_reward's default, with no problems of its own
    assert codegrpo.score(fives, problem=first, reward=plain).verdict.reward == 1.0
    # today's main: 1.0, the first's tests
    assert codegrpo.score(fives, problem=second, reward=plain).verdict.reward == 0.0
    reward = CodeReward(sandbox, problems=[first])
    assert codegrpo.score(fives, problem=second, reward=reward).verdict.reward == 0.0
    assert reward([fives], problem_id=["p"]) == [1.0]  # the reward's own set is left as it was


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        # Today's main: each scored every completion 0, or failed the batch with a bare SyntaxError.
        (
            {"test": ["add(2, 3"], "expected": ["5"]},
            "code_reward: row 1: field 'test' does not parse as Python (line 1: '(' was never closed)",
        ),
        (
            {"test": ["def check(candidate):\n    assert candidate(2, 3) ==\n"], "entry_point": ["add"]},
            "code_reward: row 1: field 'test' does not parse as Python (line 2: invalid syntax)",
        ),
        # Today's main: a raw TypeError, ValueError and RecursionError out of json.dumps.
        (
            {"test": ["add(2, 3)"], "expected": [b"5"]},
            "code_reward: row 1: column 'expected' is not JSON data (Object of type bytes is not JSON serializable)",
        ),
        (
            {"test": ["add(2, 3)"], "expected": [10**5000]},
            "code_reward: row 1: column 'expected' is not JSON data (an integer of more than 4300 digits)",
        ),
        (
            {"test": ["add(2, 3)"], "expected": [_deep(5000)]},
            "code_reward: row 1: column 'expected' is not JSON data (nested too deep)",
        ),
        (
            {"tests": [[{"input": [_deep(5000)], "output": 5}]], "fn_name": ["add"]},
            "code_reward: row 1: column 'tests' is not JSON data (nested too deep)",
        ),
        (
            {"tests": [[{"input": [2, 3], "output": 10**5000}]], "fn_name": ["add"]},
            "code_reward: row 1: column 'tests' is not JSON data (an integer of more than 4300 digits)",
        ),
    ],
)
def test_a_row_whose_test_does_not_compile_or_whose_values_json_cannot_encode_is_one_error(columns, message):
    reward = CodeReward()
    good = {
        "test": "add(1, 1)",
        "expected": "2",
        "entry_point": "add",
        "fn_name": "add",
        "tests": [{"input": [1, 1], "output": 2}],
    }  # row 0 of each column, and then the bad row
    if "entry_point" in columns:
        good["test"] = "def check(candidate):\n    assert candidate(1, 1) == 2\n"
    batch = {name: [good[name], *values] for name, values in columns.items()}
    with pytest.raises(UsageError) as raised:
        reward([ADD, ADD], **batch)
    assert str(raised.value) == message
    assert reward._open is None  # before any program ran: the sandbox was never opened
    with pytest.raises(UsageError, match=r"^code_reward: row 0: "):
        codegrpo.score(ADD, reward=reward, **{name: values[-1] for name, values in columns.items()})


def test_a_javascript_reward_leaves_its_test_expressions_to_node():
    reward = CodeReward(language="javascript")
    ids, problems = reward._batch(1, {"test": ["[1, 2].map(x => x * 2)"], "expected": [[2, 4]]})
    assert problems[ids[0]].test == "[1, 2].map(x => x * 2)" and problems[ids[0]].expected == "[2, 4]"


def test_the_library_imports_no_torch_transformers_trl_hydra_or_omegaconf():
    # Every public name (the sandbox's interface, its configs and the MemoryBackend among them), a program
    # scored through it in the real sandbox and one answered by a MemoryBackend: the config machinery is the
    # commands' (codegrpo.config.registration), and the heavy libraries are training's.
    sandbox = ["MemoryBackend", "Outcome", "Program", "RunResult", "SandboxBackend", "SandboxConfig"]
    assert {*sandbox, "LocalSandboxConfig", "SuperserveSandboxConfig"} <= set(codegrpo.__all__)
    probe = (
        "import asyncio, sys, codegrpo; [getattr(codegrpo, name) for name in codegrpo.__all__]; "
        "print(codegrpo.score('def add(a, b):\\n    return a + b\\n', test='add(2, 3)', expected='5')"
        ".verdict.reward); "
        "echo = codegrpo.MemoryBackend(lambda program, stdin: codegrpo.RunResult(codegrpo.Outcome.EXITED, 0, stdin)); "
        "print(asyncio.run(echo.run_many([codegrpo.Program('', inputs=('7',))]))[0].runs[0].stdout); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'trl', 'hydra', "
        "'omegaconf')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "1.0\n7\n[]\n"), done.stderr[-2000:]
    documented = [n for n in codegrpo.__all__ if not (getattr(codegrpo, n).__doc__ or f"{n}(").startswith(f"{n}(")]
    assert sorted(codegrpo.__all__) == codegrpo.__all__ == documented  # a docstring of its own, not the signature
