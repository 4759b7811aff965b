"""The console story: the step line and the end summary."""

from __future__ import annotations

from codegrpo.tracking.console import final_summary, step_line


def test_step_line_shows_reward_pass_rate_statuses_and_time():
    logs = {
        "rewards/code_reward/mean": 0.25,
        "pass_rate": 0.25,
        "status/passed": 1.0,
        "status/failed": 2.0,
        "status/error": 1.0,
        "status/no_code": 0.0,
        "status/timeout": 0.0,
        "status/infra": 0.0,
    }
    assert step_line(logs, 3, 8, 12.34) == "step 3/8  reward 0.250  pass 25%  passed 1, failed 2, error 1  12.3 s"


def test_step_line_shows_the_feedback_turns():
    logs = {
        "rewards/code_reward/mean": 0.5,
        "pass_rate": 0.5,
        "status/passed": 2.0,
        "status/failed": 2.0,
        "feedback/turns": 2.25,
        "feedback/cut": 0.25,
        "feedback/fix_rate": 1 / 3,
        "feedback/public_pass/turn_1": 0.25,
        "feedback/public_pass/turn_2": 0.5,
        "feedback/public_pass/turn_3": 0.75,
    }
    assert step_line(logs, 1, 2, 5.0) == (
        "step 1/2  reward 0.500  pass 50%  passed 2, failed 2  turns 2.2  public 25% -> 75%  fixed 33%  cut 25%  5.0 s"
    )
    del logs["feedback/cut"], logs["feedback/fix_rate"]
    assert "turns 2.2  public 25% -> 75%  5.0 s" in step_line(logs, 1, 2, 5.0)


def test_step_line_says_dynamic_samplings_rounds_beside_the_statuses_of_every_round():
    logs = {
        "rewards/code_reward/mean": 0.5,
        "pass_rate": 0.5,
        "status/passed": 12.0,
        "status/failed": 12.0,
        "sampler/dynamic_rounds": 1.5,
        "sampler/dynamic_spread_share": 0.5,
        "sampler/dynamic_filler_share": 0.25,
    }
    assert "passed 12, failed 12  rounds 1.5  filler 25%  5.0 s" in step_line(logs, 1, 2, 5.0)
    logs["sampler/dynamic_filler_share"] = 0.0
    assert step_line(logs, 1, 2, 5.0).endswith("failed 12  rounds 1.5  5.0 s")


def test_step_line_shows_where_the_steps_time_went():
    logs = {
        "rewards/code_reward/mean": 0.5,
        "pass_rate": 0.5,
        "status/passed": 2.0,
        "status/failed": 2.0,
        "timing/generation_s": 7.94,
        "timing/reward_s": 0.0213,
        "timing/update_s": 1.06,
        "timing/other_s": 0.3,
        "timing/step_s": 9.32,
        "timing/tokens_per_s": 41.3,
    }
    assert step_line(logs, 3, 8, 9.32) == (
        "step 3/8  reward 0.500  pass 50%  passed 2, failed 2  "
        "9.3 s (gen 7.9 s at 41 tok/s, reward 0.02 s, update 1.1 s)"
    )
    # A step that reused a buffered generation batch (steps_per_generation > 1) generated nothing: no rate.
    logs |= {"timing/generation_s": 0.0, "timing/step_s": 1.4}
    del logs["timing/tokens_per_s"]
    assert step_line(logs, 4, 8, 1.4).endswith("  1.4 s (gen 0.00 s, reward 0.02 s, update 1.1 s)")


def test_final_summary_says_where_everything_is(tmp_path):
    (tmp_path / "train.log").write_text("")
    (tmp_path / "final_model").mkdir()
    history = [{"rewards/code_reward/mean": 0.0, "pass_rate": 0.0}, {"rewards/code_reward/mean": 0.5, "pass_rate": 0.5}]
    text = final_summary(tmp_path, history)
    assert text.startswith("run finished after 2 logged steps: final reward 0.500, pass rate 50% (first step 0%)")
    assert f"log:         {tmp_path / 'train.log'}" in text and f"model:       {tmp_path / 'final_model'}" in text
    assert "plots" not in text and "evaluation" not in text  # only what the run wrote
    one = final_summary(tmp_path, history[-1:])
    assert one.startswith("run finished after 1 logged step: final reward 0.500")  # not "1 logged steps"


def test_final_summary_names_the_plots_and_the_evaluation_files(tmp_path):
    from codegrpo.tracking.plots import write_plots

    history = [
        {"step": 1, "rewards/code_reward/mean": 0.25, "pass_rate": 0.0},
        {"step": 2, "rewards/code_reward/mean": 0.5, "pass_rate": 0.5},
    ]
    write_plots(history, tmp_path)
    for name in ("eval_before.json", "eval_after.json", "comparison.json", "comparison.png"):
        (tmp_path / name).write_text("{}")
    text = final_summary(tmp_path, history)
    assert f"plots:       {tmp_path / 'reward_curve.png'}, pass_rate.png, comparison.png" in text
    assert f"evaluation:  {tmp_path / 'eval_before.json'}, eval_after.json, comparison.json" in text


def test_completions_table_columns_say_why_and_show_the_code(local_sandbox):
    import asyncio

    from codegrpo.data.files import load_problems
    from codegrpo.reward.code_reward import make_code_reward
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer
    from codegrpo.reward.shared_batch import SharedBatch

    scorer = Scorer(load_problems("problems/seed.jsonl"), local_sandbox, get_language("python"), "binary")
    extra: dict[str, list] = {}
    completions = ["```python\ndef is_prime(n):\n    return n > 1\n```", "no code here", ""]
    reward = make_code_reward(SharedBatch(scorer))
    asyncio.run(reward(completions=completions, problem_id=["is_prime"] * 3, log_extra=extra.__setitem__))
    assert extra["status"] == ["failed", "no_code", "no_code"]  # prose is no code, not a SyntaxError on it
    assert extra["error"][0] == "got [true, false, true], expected [true, false, false]"
    assert extra["error"][1] == "no code: no ```python block, and the reply does not read as Python"
    assert extra["error"][2].startswith("no code")
    assert extra["code"] == ["def is_prime(n):\n    return n > 1", "", ""]


def test_a_step_line_clears_the_progress_bar_and_draws_it_again_below(capsys, caplog):
    import logging
    import sys

    from tqdm import tqdm

    from codegrpo.tracking.console import log_over_bars

    bar = tqdm(total=8, file=sys.stderr, mininterval=0, ascii=True)
    bar.update(1)
    capsys.readouterr()
    with caplog.at_level(logging.INFO, logger="codegrpo.tracking.console"):
        log_over_bars("step 1/8  reward 0.500", [bar])
    bar.close()
    err = capsys.readouterr().err
    cleared, _, drawn = err.partition("\r" + " " * 10)  # the bar's line blanked before the step line
    assert cleared == "" or cleared.endswith("\r"), err
    assert "1/8" in drawn, err  # and drawn again after it
    assert caplog.messages == ["step 1/8  reward 0.500"]
