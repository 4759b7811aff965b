"""The metric table (codegrpo.reward.metric_names) is the single source of every metric key: what the
producers log and what the console, the plots and the sweep summary read are keys of the table, and no module
spells a namespaced key (``status/...``, ``feedback/...``, ``timing/...``) outside it."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from codegrpo.evaluation.results import Evaluation
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward import metric_names as keys
from codegrpo.reward.monitor import CATEGORIES, hack_metrics
from codegrpo.reward.scorer import batch_metrics
from codegrpo.reward.verdict import Scored, Status, Verdict
from codegrpo.rollout.metrics import EpisodeStats, episode_metrics
from codegrpo.tracking import console, plots, sweep
from codegrpo.training.sampling import PassRates
from codegrpo.training.timing import GENERATION, Clock

PACKAGE = PROJECT_ROOT / "src" / "codegrpo"
MARK = "\0"
CONSTANTS = {value for name, value in vars(keys).items() if name.isupper() and isinstance(value, str)}
# Each family of keys as a pattern: what it makes of any one parameter.
FAMILIES = [
    re.compile(re.escape(family(MARK)).replace(re.escape(MARK), r"[^/]+"))
    for family in (
        keys.reward_mean,
        keys.hacks,
        keys.public_pass,
        keys.sampler_pool,
        keys.pass_at,
        lambda key: keys.first_turn(keys.pass_at(key)),
        keys.evaluation,
        lambda key: keys.evaluation(key, MARK),
        keys.compared,
    )
]
STATUSES = {keys.status(s) for s in Status}


def in_table(key: str) -> bool:
    return key in CONSTANTS or key in STATUSES or any(family.fullmatch(key) for family in FAMILIES)


def test_what_the_producers_log_is_in_the_table():
    scored = [
        Scored("a", "x = 1", Verdict(Status.PASSED, 1.0), 0.5),
        Scored("b", "", Verdict(Status.NO_CODE, 0.0), 0.0, ("exit",)),
    ]
    stats = [EpisodeStats(2, (False, True), 10, False), EpisodeStats(1, (), 0, True)]
    clock = Clock()
    with clock.phase(GENERATION):
        clock.generated(5)
    rates = PassRates(["a", "b"], window=4)
    rates.observe(scored)
    rates.end_generation()
    evaluation = Evaluation({1: 0.5}, 2, 2, {}, {"a": 1, "b": 0}, generated_tokens=4, generation_s=1.0)
    evaluation.first_turn = Evaluation({1: 0.25}, 2, 2, {}, {"a": 1, "b": 0})
    logged = {
        "batch_metrics": batch_metrics(scored),
        "hack_metrics": hack_metrics([s.flags for s in scored]),
        "episode_metrics": episode_metrics(stats, 3),
        "Clock.lap": clock.lap(),
        "PassRates.metrics": rates.metrics(),
        "Evaluation.metrics": evaluation.metrics(),
    }
    outside = {name: [key for key in metrics if not in_table(key)] for name, metrics in logged.items()}
    assert outside == {name: [] for name in logged}
    assert set(logged["hack_metrics"]) == {keys.HACKS_ANY, keys.HACKS_COUNT} | {keys.hacks(c) for c in CATEGORIES}
    assert STATUSES | {keys.PASS_RATE, keys.LATENCY_P50_S, keys.LATENCY_P95_S} == set(logged["batch_metrics"])


class Reading(dict):
    """A dict that records every key read from it."""

    def __init__(self, data: dict[str, Any], read: set[str]) -> None:
        super().__init__(data)
        self.read = read

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def _row(read: set[str]) -> Reading:
    row = {keys.STEP: 1, keys.REWARD: 0.5, keys.REWARD_MEAN: 0.5, keys.PASS_RATE: 0.5, keys.HACKS_COUNT: 1.0}
    row |= {keys.status(s): 1.0 for s in Status}
    row |= {keys.FEEDBACK_TURNS: 2.0, keys.FEEDBACK_CUT: 0.5, keys.FIX_RATE: 0.5, keys.public_pass(1): 0.5}
    row |= {keys.GENERATION_S: 1.0, keys.REWARD_S: 1.0, keys.UPDATE_S: 1.0, keys.TOKENS_PER_S: 10.0}
    return Reading(row, read)


def test_what_the_console_the_plots_and_the_sweep_summary_read_is_in_the_table(tmp_path, monkeypatch):
    read: set[str] = set()
    assert "turns 2.0" in console.step_line(_row(read), 1, 2, 1.0)
    console.final_summary(tmp_path, [_row(read), _row(read)])
    assert plots.write_plots([_row(read)], tmp_path)

    job = tmp_path / "0_job"
    (job / ".hydra").mkdir(parents=True)
    (job / "log_history.json").write_text(json.dumps([dict(_row(set()))]))
    (job / "comparison.json").write_text(json.dumps({keys.CHANGE: 0.1}))
    loads = lambda text: Reading(found, read) if isinstance(found := json.loads(text), dict) else [_row(read)]  # noqa: E731
    monkeypatch.setattr(sweep, "json", SimpleNamespace(loads=loads))
    assert sweep.job_row(job)[keys.EVAL_CHANGE] == 0.1

    assert {keys.REWARD_MEAN, keys.PASS_RATE, keys.REWARD, keys.CHANGE, keys.GENERATION_S} <= read
    assert sorted(k for k in read if not in_table(k)) == []


def _spelt_keys(path: Path, namespaces: tuple[str, ...]) -> list[str]:
    """The string literals of ``path`` (docstrings aside) that begin a key of one of ``namespaces``."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):  # an f-string's literal parts included
        text = node.value if isinstance(node, ast.Constant) and id(node) not in docstrings else None
        if isinstance(text, str) and text.startswith(namespaces):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {text!r}")
    return found


def test_no_module_spells_a_metric_key_outside_the_table():
    namespaces = tuple(
        sorted({key.split("/")[0] + "/" for key in CONSTANTS | {keys.status(Status.PASSED)} if "/" in key})
    )
    assert {"status/", "feedback/", "timing/", "sampler/", "hacks/", "rewards/", "update/"} <= set(namespaces)
    table = PACKAGE / "reward" / "metric_names.py"
    # sandbox/ is a floor below reward/ (tests/test_layout.py): its backends' stats() spell their counters.
    modules = [p for p in PACKAGE.rglob("*.py") if p != table and "sandbox" not in p.relative_to(PACKAGE).parts]
    assert [hit for path in sorted(modules) for hit in _spelt_keys(path, namespaces)] == []
