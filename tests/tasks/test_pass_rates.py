"""The pass-rates task (codegrpo.tasks.pass_rates): a rates file read back only for its own problem set, the
problems with lo < pass rate < hi kept, a finished file re-filtered without a model, and a tiny model's rates
appended a batch at a time and continued where they stopped."""

from __future__ import annotations

import json

import pytest

from codegrpo import build
from codegrpo.data.files import load_problems
from codegrpo.data.problems import parse_problem
from codegrpo.data.sets import problem_set_hash
from codegrpo.errors import UsageError
from codegrpo.tasks.pass_rates import keep, pass_rates, read_rates


def _problem(pid: str):
    return parse_problem({"id": pid, "prompt": "f().", "test": "f()", "expected": "1"}, pid)


def _rates(path, sha256: str, rates: dict[str, float]) -> None:
    lines = [{"problem_set_sha256": sha256}] + [
        {"id": pid, "passed": 4 * rate, "samples": 4, "pass_rate": rate} for pid, rate in rates.items()
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_read_rates_of_no_file_is_empty_and_of_a_file_is_each_problems_line(tmp_path):
    path = tmp_path / "rates.jsonl"
    assert read_rates(path, "abc") == {}
    _rates(path, "abc", {"a": 0.25, "b": 1.0})
    assert read_rates(path, "abc") == {
        "a": {"id": "a", "passed": 1.0, "samples": 4, "pass_rate": 0.25},
        "b": {"id": "b", "passed": 4.0, "samples": 4, "pass_rate": 1.0},
    }


def test_read_rates_refuses_another_problem_sets_file_in_one_line(tmp_path):
    path = tmp_path / "rates.jsonl"
    _rates(path, "0123456789abcdef", {"a": 0.5})
    with pytest.raises(UsageError) as refused:
        read_rates(path, "fedcba9876543210")
    message = str(refused.value)
    assert message.startswith(f"{path} holds the pass rates of another problem set (sha256 0123456789ab, ")
    assert "this one is fedcba987654)" in message and "\n" not in message


def test_keep_is_the_problems_strictly_between_the_bounds_in_problem_order():
    problems = [_problem(pid) for pid in "abcdef"]
    rates = {pid: {"pass_rate": rate} for pid, rate in zip("fedcb", (0.5, 0.0, 1.0, 0.25, 0.75), strict=True)}
    assert [p.id for p in keep(problems, rates, 0.0, 1.0)] == ["b", "c", "f"]  # a: not rated
    assert [p.id for p in keep(problems, rates, 0.25, 0.75)] == ["f"]
    assert [p.id for p in keep(problems, rates, -1, 2)] == ["b", "c", "d", "e", "f"]


def test_a_finished_rates_file_is_refiltered_without_loading_the_model(compose_cfg, tmp_path, capsys):
    overrides = ["problems.limit=4", f"rates={tmp_path}/rates.jsonl", f"filtered={tmp_path}/kept.jsonl"]
    problems = build.problems(compose_cfg(*overrides, config_name="pass_rates").problems)
    ids = [p.id for p in problems]
    _rates(tmp_path / "rates.jsonl", problem_set_hash(problems), dict(zip(ids, (0.0, 0.5, 1.0, 0.25), strict=True)))
    unloadable = ["model.gguf_package=", "model.name_or_path=/nonexistent"]
    kept = pass_rates(compose_cfg(*overrides, *unloadable, "lo=0.2", config_name="pass_rates"))
    assert [p.id for p in kept] == [ids[1], ids[3]]
    assert [p.id for p in load_problems(str(tmp_path / "kept.jsonl"))] == [ids[1], ids[3]]
    out, err = capsys.readouterr()
    assert f"pass rates in {tmp_path}/rates.jsonl: 1 at 0, 2 between, 1 at 1" in out
    assert f"kept 2/4 problems with 0.2 < pass rate < 1.0 in {tmp_path}/kept.jsonl" in out
    assert "rating" not in err


def test_a_tiny_model_rates_every_problem_a_batch_at_a_time_and_continues_where_it_stopped(
    compose_cfg, tmp_path, capsys, tiny_model
):
    rates = tmp_path / "rates.jsonl"
    small = [
        *tiny_model,
        "problems.limit=3",
        "evaluation.num_samples=2",
        "evaluation.max_new_tokens=4",
        "evaluation.batch_size=2",
        f"rates={rates}",
        f"filtered={tmp_path}/kept.jsonl",
    ]
    cfg = compose_cfg(*small, config_name="pass_rates")
    pass_rates(cfg)
    header, *lines = [json.loads(line) for line in rates.read_text().splitlines()]
    problems = build.problems(cfg.problems)
    assert header == {
        "problem_set_sha256": problem_set_hash(problems),
        "problems": "trivial",
        "model": "base",
        "num_samples": 2,
        "temperature": 1.0,
    }
    assert [line["id"] for line in lines] == [p.id for p in problems]
    assert all(line["samples"] == 2 and line["pass_rate"] == line["passed"] / 2 for line in lines)
    err = capsys.readouterr().err
    assert "rating 3 of 3 problems (0 already in" in err
    assert "rated 2/3 problems" in err and "rated 3/3 problems" in err

    rates.write_text("".join(json.dumps(line) + "\n" for line in [header, lines[0]]))  # stopped after one
    pass_rates(compose_cfg(*small, config_name="pass_rates"))
    err = capsys.readouterr().err
    assert f"rating 2 of 3 problems (1 already in {rates})" in err and "rated 3/3 problems" in err
    assert "rated 2/3" not in err
    assert [json.loads(line)["id"] for line in rates.read_text().splitlines()[1:]] == [p.id for p in problems]


@pytest.mark.slow
def test_a_problems_rate_is_its_passing_samples_over_its_samples(compose_cfg, tmp_path):
    """The real offline model, which solves add about two times in three: a tiny random model never passes,
    so only a model that does shows the rate's arithmetic and a problem kept between the bounds."""
    rates = tmp_path / "rates.jsonl"
    cfg = compose_cfg(
        "problems.limit=1",
        "evaluation.num_samples=4",
        "evaluation.max_new_tokens=48",
        f"rates={rates}",
        f"filtered={tmp_path}/kept.jsonl",
        config_name="pass_rates",
    )
    kept = pass_rates(cfg)
    [line] = [json.loads(line) for line in rates.read_text().splitlines()[1:]]
    assert line["id"] == "add" and line["samples"] == 4 and line["passed"] > 0
    assert line["pass_rate"] == line["passed"] / 4
    assert [p.id for p in kept] == (["add"] if line["passed"] < 4 else [])
