"""Several rewards: each `reward.functions` entry -> the reward function GRPOTrainer sums
(codegrpo.build.reward_functions makes the list, with `reward.weights`).

An entry is one of:
  - ``code_reward``: the sandboxed test reward (code_reward.py), set up by ``reward.kind`` and ``reward.extract``;
  - ``hack_penalty``: -1.0 for a completion the reward-hack monitor flagged, 0.0 otherwise (shared_batch.py);
  - a name from ``trl.rewards`` (``think_format_reward``, ``get_soft_overlong_punishment``,
    ``get_repetition_penalty_reward``, ...);
  - ``pkg.module:function``, a function of the user's (TRL's reward signature:
    ``f(completions, **columns) -> list[float | None]``).

Names that start with ``get_`` are factories (TRL's convention): they are called with
``reward.args.<name>`` (the function's name, without its module: Hydra's command line takes no ``:`` in a
key) and return the reward function. TRL logs each function under its ``__name__``
(``rewards/<name>/mean``) and sums them with ``reward.weights`` (all 1.0 when null).
Every mistake is a UsageError, raised before the model loads.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from codegrpo.config.runs import TrainConfig
from codegrpo.errors import UsageError
from codegrpo.reward.code_reward import make_code_reward
from codegrpo.reward.metric_names import CODE_REWARD, HACK_PENALTY
from codegrpo.reward.shared_batch import SharedBatch, make_hack_penalty


def _factory_defaults(name: str, cfg: TrainConfig) -> dict[str, Any]:
    """Arguments a factory gets unless reward.args sets them: lengths come from the trainer's."""
    if name == "get_soft_overlong_punishment":
        length = int(cfg.trainer.max_completion_length or 0)  # trainer.yaml always sets it
        return {"max_completion_len": length, "soft_punish_cache": max(1, length // 4)}
    return {}


def _trl_reward_names() -> list[str]:
    import trl.rewards

    return sorted(n for n in dir(trl.rewards) if not n.startswith("_") and not n.endswith("_rewards"))


def _lookup(entry: str) -> tuple[str, Any]:
    """(attribute name, object) for a trl.rewards name or a module:function path."""
    if ":" in entry:
        module_name, _, attr = entry.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # ImportError, or anything the module raises while importing
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise UsageError(f"reward.functions: {entry!r}: cannot import {module_name!r} ({first})") from None
        if not attr or not hasattr(module, attr):
            raise UsageError(f"reward.functions: {entry!r}: module {module_name!r} has no attribute {attr!r}")
        return attr, getattr(module, attr)
    names = _trl_reward_names()
    if entry not in names:
        raise UsageError(
            f"reward.functions: unknown reward {entry!r}; use {CODE_REWARD}, one of trl.rewards "
            f"({', '.join(names)}) or an import path pkg.module:function"
        )
    import trl.rewards

    return entry, getattr(trl.rewards, entry)


def args_key(entry: str) -> str:
    """The key of an entry's arguments in reward.args: the function's name, without its module."""
    return entry.rpartition(":")[2]


def check(entry: str, cfg: TrainConfig) -> Callable[..., Any] | None:
    """One reward.functions entry and its reward.args, checked before a sandbox or model starts: the
    function it names, or None for the two a scorer serves (code_reward, hack_penalty)."""
    key = args_key(entry)
    args = dict(cfg.reward.args.get(key) or {})
    if entry == CODE_REWARD:
        if args:
            raise UsageError("reward.args.code_reward: code_reward is set up by reward.kind and reward.extract")
        return None
    if entry == HACK_PENALTY:  # the reward-hack monitor's opt-in penalty (shared_batch.py), on code_reward's batch
        if args:
            raise UsageError("reward.args.hack_penalty: its weight is its reward.weights entry")
        return None
    attr, obj = _lookup(entry)
    if not callable(obj):
        raise UsageError(f"reward.functions: {entry!r} is not a function")
    if attr.startswith("get_"):
        try:
            obj = obj(**(_factory_defaults(attr, cfg) | args))
        except (TypeError, ValueError) as error:
            raise UsageError(f"reward.args.{key}: {error}") from None
        if not callable(obj):
            raise UsageError(f"reward.functions: factory {entry!r} did not return a function")
    elif args:
        raise UsageError(f"reward.args.{key}: only get_* factories take arguments")
    return obj


def of_batch(entry: str, batch: SharedBatch) -> Callable[..., Any]:
    """The reward function of an entry a scorer serves (``check`` returned None for it), reading ``batch``."""
    return make_code_reward(batch) if entry == CODE_REWARD else make_hack_penalty(batch)


def reward_name(function: Callable[..., Any]) -> str:
    """The name TRL logs a reward function under."""
    return getattr(function, "__name__", type(function).__name__)
