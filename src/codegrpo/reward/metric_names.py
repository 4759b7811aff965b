"""Every metric key codegrpo logs, and every key of TRL's it reads, in one table: the producers (the reward,
the rollout, the trainer, the evaluations) and the consumers (the console, the plots, the sweep summary, a
sweep's objective) name a key only through it. A key is a constant; a family of keys (one per status, per
turn, per counter) is a function of what varies. In W&B TRL prefixes a training step's keys with ``train/``.

Standard library only: reward/ and everything above it import it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codegrpo.reward.verdict import Status

# -- TRL's and transformers', which codegrpo reads ------------------------------------------------------------


def reward_mean(function: str) -> str:
    """``rewards/<function>/mean``: a reward function's mean over a step's completions (TRL's)."""
    return f"rewards/{function}/mean"


CODE_REWARD = "code_reward"  # CodeReward's __name__, so TRL logs it as rewards/code_reward/...
HACK_PENALTY = "hack_penalty"  # the monitor's opt-in penalty (shared_batch.py): rewards/hack_penalty/...
REWARD_MEAN = reward_mean(CODE_REWARD)  # code_reward's mean: a training step's row has it
REWARD = "reward"  # the weighted sum of every reward function's mean over a step's completions (TRL's)
FRAC_REWARD_ZERO_STD = "frac_reward_zero_std"  # the share of groups whose rewards have no spread (TRL's)
LOSS = "loss"  # the training loss: in a training step's row only, not an evaluation's or the summary's
TRAIN_RUNTIME = "train_runtime"  # the seconds training took: in the end-of-training summary row only
TRL_STEP_TIME = "step_time"  # TRL's training_step alone: dropped from the log, timing/step_s is the step's duration
STEP = "step"  # the optimizer step a log_history row belongs to

# -- the reward: reward/scorer.py's batch_metrics and reward/code_reward.py, on every reward call -------------

PASS_RATE = "pass_rate"  # the share of the completions that passed every test


def status(status: Status) -> str:
    """``status/<status>``: how many of the completions got that verdict (passed, failed, error, ...)."""
    return f"status/{status.value}"


LATENCY_P50_S = "sandbox/latency_p50_s"  # the median seconds a completion's programs took in the sandbox
LATENCY_P95_S = "sandbox/latency_p95_s"  # their 95th percentile
SANDBOX_BATCH_S = "sandbox/batch_s"  # the seconds the reward call took, scoring included
# And sandbox/<counter>, a sandbox backend's running counts (runs, each outcome's, warm workers, ...): the
# backends' stats() spell them, as sandbox/ is a floor below reward/ (tests/test_layout.py).

HACKS_ANY = "hacks/any"  # the share of the completions the reward-hack monitor flagged
HACKS_COUNT = "hacks/count"  # how many it flagged


def hacks(category: str) -> str:
    """``hacks/<category>``: the share of the completions flagged for that category (reward/monitor)."""
    return f"hacks/{category}"


# -- rollout=feedback: the episodes of a step (rollout/metrics.py) --------------------------------------------

FEEDBACK_TURNS = "feedback/turns"  # the mean turns an episode used
FEEDBACK_TOKENS = "feedback/tokens"  # the mean feedback tokens an episode got
FEEDBACK_CUT = "feedback/cut"  # the share of episodes cut by max_completion_length (or the context)
FEEDBACK_WITH_PUBLIC = "feedback/with_public"  # the share of episodes whose problem has public tests
FIX_RATE = "feedback/fix_rate"  # of the turns that failed their public tests and had a next, the share fixed
CUT_FIRST_TURN = "feedback/cut_first_turn"  # the share cut before their second turn (on steps with cuts)
_PUBLIC_PASS = "feedback/public_pass/turn_"


def public_pass(turn: int) -> str:
    """``feedback/public_pass/turn_<turn>``: the share of episodes with public tests that passed them all by
    that turn (counted from 1; an episode that stopped keeps its last result)."""
    return f"{_PUBLIC_PASS}{turn}"


def public_pass_turn(key: str) -> int | None:
    """The turn of a ``public_pass`` key; None for any other key."""
    return int(key[len(_PUBLIC_PASS) :]) if key.startswith(_PUBLIC_PASS) else None


# -- rollout=tools: the episodes of a step (agents/rewards.py); TRL's own tools/call_frequency beside them --------

TOOL_CALLS = "episodes/tool_calls"  # the mean tool calls an episode made
TOOL_ERRORS = "episodes/tool_errors"  # the share of the calls that failed, timed out or hit a sandbox failure
TOOL_BUDGET = "episodes/budget_exhausted"  # the share of episodes that ran out of a budget
TOOL_TURNS = "episodes/turns"  # the mean model turns an episode took


def judge(status: str) -> str:
    """``judge/<status>``: how many of the step's workspaces the judge found passed, failed, tampered or infra."""
    return f"judge/{status}"


# -- the trainer: train/timing.py, train/trl_adapter.py, train/sampling.py, every logged step ------------------

GENERATION_S = "timing/generation_s"  # sampling the completions (rollout=feedback: less its public tests)
REWARD_S = "timing/reward_s"  # the reward functions, and rollout=feedback's public tests
UPDATE_S = "timing/update_s"  # forward and backward passes (TRL's old and reference log-probs too), optimizer step
SAVE_S = "timing/save_s"  # saving checkpoints (a save follows its step's row: booked to the next step)
OTHER_S = "timing/other_s"  # the rest: loading the batch, gradient clipping, callbacks, logging
STEP_S = "timing/step_s"  # the wall time since the previous logged step (or the start): the five above sum to it
TOKENS_PER_S = "timing/tokens_per_s"  # the model's tokens generated per second of generation (this process's)
RELATIVE_NORM = "update/relative_norm"  # how far the optimizer step moved the weights: |delta| / |weights|


def sampler_pool(pool: str) -> str:
    """``sampler/pool_<pool>``: how many problems are in that pool (unseen, learning, solved, unsolved)."""
    return f"sampler/pool_{pool}"


SAMPLER_PASS_RATE_MEAN = "sampler/pass_rate_mean"  # the mean recent pass rate of the problems seen
SAMPLER_ZERO_SPREAD_SHARE = "sampler/zero_spread_share"  # the share of the groups without reward spread
SAMPLER_GROUPS = "sampler/groups"  # the groups seen since the last logged step
# sampler.dynamic (DAPO's dynamic sampling), per generation batch: the generations it took, the share of the groups
# generated that had correctness spread, and the share of the batch that agreeing groups filled.
DYNAMIC_ROUNDS = "sampler/dynamic_rounds"
DYNAMIC_SPREAD_SHARE = "sampler/dynamic_spread_share"
DYNAMIC_FILLER_SHARE = "sampler/dynamic_filler_share"
# The pass rates' histogram: to W&B alone (no histogram goes into log_history.json), so with TRL's prefix.
SAMPLER_PASS_RATE_HIST = "train/sampler/pass_rate_hist"

# -- the evaluations: evaluation/results.py (eval.json), evaluation/compare.py (comparison.json) ---------------

_PASS_AT = re.compile(r"pass@(\d+)")


def pass_at(k: int) -> str:
    """``pass@<k>``: the unbiased pass@k over the problems (Chen et al., 2021)."""
    return f"pass@{k}"


def pass_at_k(key: str) -> int | None:
    """The k of a ``pass_at`` key; None for any other key."""
    match = _PASS_AT.fullmatch(key)
    return int(match[1]) if match else None


def first_turn(key: str) -> str:
    """``first_turn/<key>``: rollout=feedback's evaluation after the first turn (the key alone: after the last)."""
    return f"first_turn/{key}"


EVAL_TOKENS_PER_S = "tokens_per_s"  # the model's tokens generated per second of generation
PASS1_BEFORE = "pass@1_before"  # a comparison's pass@1 of the first evaluation
PASS1_AFTER = "pass@1_after"  # and of the second
CHANGE = "change"  # the paired change in pass@1 from the first to the second


def evaluation(key: str, phase: str | None = None) -> str:
    """An evaluation's key in W&B: ``eval/<key>`` (codegrpo-evaluate), ``eval_<phase>/<key>`` (training's
    evaluation.before and .after)."""
    return f"eval_{phase}/{key}" if phase else f"eval/{key}"


def compared(key: str) -> str:
    """``eval_compare/<key>``: a comparison's number in W&B."""
    return f"eval_compare/{key}"


# -- a training run's result: what the train task returns, and so what a sweep can optimise -------------------

FINAL_REWARD_MEAN = "final_reward_mean"  # the last logged step's REWARD: the default sweep objective
EVAL_CHANGE = "eval_change"  # the comparison's CHANGE from evaluation.before to evaluation.after
# With transformers' own Trainer.train() result (5.x):
RESULT_METRICS = (
    FINAL_REWARD_MEAN,
    EVAL_CHANGE,
    "train_loss",
    TRAIN_RUNTIME,
    "train_samples_per_second",
    "train_steps_per_second",
    "total_flos",
    "epoch",
)
