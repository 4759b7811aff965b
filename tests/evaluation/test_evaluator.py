"""The evaluate command and evaluate_model: two eval files compared from the command line, a file that is not
one refused, a missing checkpoint named, and the tokens generated per second recorded."""

from __future__ import annotations

import json

from codegrpo.evaluation.results import load_evaluation, save
from tests.helpers.commands import command
from tests.helpers.evaluations import evaluation_of


def test_evaluate_compares_two_eval_files_with_the_breakdown(tmp_path):
    ids = [f"p{i}" for i in range(12)]
    save(evaluation_of(dict.fromkeys(ids, (1, 2, 5))), tmp_path / "a.json")
    save(evaluation_of({pid: (7, 1, 0) if i % 2 else (7, 0, 1) for i, pid in enumerate(ids)}), tmp_path / "b.json")
    out = tmp_path / "cmp"
    done = command(
        "codegrpo.commands.evaluate", f"hydra.run.dir={out}", f"compare=[{tmp_path / 'a.json'},{tmp_path / 'b.json'}]"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "change +0.750" in done.stdout
    # Odd problems: errors 5 -> 0, wrong 2 -> 1 (+1 skill, +5 format); even: errors 5 -> 1, wrong 2 -> 0 (+2, +4).
    assert "errors -> passes +0.562 (format), wrong -> passes +0.188 (skill), passes lost 0.000" in done.stdout
    result = json.loads((out / "comparison.json").read_text())
    assert result["ci95"] == [0.75, 0.75] and result["num_problems"] == 12
    assert result["breakdown"]["format"] == 0.5625 and result["breakdown"]["skill"] == 0.1875
    assert result["breakdown"]["before"] == {"passed": 12, "wrong": 24, "error": 60}
    assert result["compared"] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    assert (out / "comparison.png").stat().st_size > 0
    assert json.loads((out / "eval_a.json").read_text()) == json.loads((tmp_path / "a.json").read_text())


def test_evaluate_refuses_a_file_that_is_not_an_eval(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"change": 0.1}')
    save(evaluation_of({"p": (1, 1, 0)}), tmp_path / "a.json")
    done = command(
        "codegrpo.commands.evaluate", f"hydra.run.dir={tmp_path / 'o'}", f"compare=[{tmp_path / 'a.json'},{bad}]"
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "bad.json is not an eval file" in line


def test_an_evaluation_records_the_tokens_it_generated_per_second(compose_cfg, local_sandbox, tmp_path):
    """The offline model evaluated in the real sandbox: the replies' own tokens (to their end-of-turn token; the
    padding after it is not generated) over the seconds generate() took, in the metrics, the summary and the file."""
    from codegrpo import build
    from codegrpo.config.choices import RewardKind
    from codegrpo.evaluation.evaluator import Generated, evaluate_model

    counted = Generated()
    counted.add([[5, 6, 2, 2, 2], [7, 8, 9]], {2}, 0.5)  # a reply that ended (and was padded), one cut at the limit
    assert (counted.tokens, counted.per_second) == (6, 12.0)

    cfg = compose_cfg(
        "problems=trivial", "evaluation.limit=2", "evaluation.num_samples=2", "evaluation.max_new_tokens=12"
    )
    problems = build.eval_problems(cfg)
    model, tokenizer = build.model(cfg.model)
    scorer = build.scorer(cfg, problems, local_sandbox, kind=RewardKind.binary)
    result = evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation)
    assert result.generated_tokens is not None and result.generation_s is not None and result.wall_s is not None
    assert 4 <= result.generated_tokens <= 2 * 2 * 12 and 0 < result.generation_s < result.wall_s
    rate = result.generated_tokens / result.generation_s
    assert result.metrics()["tokens_per_s"] == rate and result.summary().endswith(f"; {rate:.1f} generated tokens/s")
    loaded = load_evaluation(save(result, tmp_path / "eval.json"))
    assert loaded == result and loaded.tokens_per_s == rate


def test_a_missing_checkpoint_is_one_line_naming_it_and_leaves_no_dir(tmp_path):
    """It blamed the Hub for a mistyped local path, and left outputs/evals/<time> behind."""
    out = tmp_path / "o"
    done = command(
        "codegrpo.commands.evaluate", f"hydra.run.dir={out}", f"checkpoint={tmp_path / 'no' / 'such' / 'dir'}"
    )
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: checkpoint={tmp_path / 'no' / 'such' / 'dir'}: ") and "does not exist" in line
    assert "Hub" not in line.split(";")[0] and not out.exists()
