"""TRL's ``rollout_func`` for rollout=feedback: codegrpo.rollout.engine plays the episodes, in rollout.feedback's
environment.

TRL's mechanism (GRPOTrainer 1.16, ``rollout_func``): TRL calls ``rollout(prompts, trainer)`` with this
process's prompts (chat messages, each repeated num_generations times by TRL's sampler) and expects a dict
with one entry per prompt in each of

    prompt_ids      list[list[int]]            the chat-templated prompt
    completion_ids  list[list[int]]            every turn's model tokens and the feedback between them
    logprobs        list[list[float]] | None   the sampling logprob of each completion token (0.0 on
                                               feedback), None where the backend gives none (transformers)
    env_mask        list[list[int]]            1 on model tokens, 0 on feedback: the loss never trains on
                                               feedback (TRL pops it into its tool_mask)

and any other key (a list, one entry per completion) is added to the inputs TRL gives the reward functions
as keyword arguments: ``final_code`` (the code scored), ``feedback_turns``, ``feedback_public`` (each
turn's public status), ``feedback_messages`` and ``feedback_tokens``.

Generation is TRL's own: ``trainer._generate_single_turn(prompt_ids, None, {}, 1)``, the call TRL's tool
loop makes for each later turn (vLLM server or colocate, transformers' continuous batching or plain
``generate``), on token ids: the turns are concatenated, never re-tokenized. Feedback is a plain user
message rendered by the model's own chat template, so any chat model works without a tool-calling template.
CodeGRPOTrainer books the rollout as generation time, less the public tests' runs between turns, which go to
its ``clock`` as reward time (codegrpo.training.timing): ``timing/generation_s`` is the model's alone.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from codegrpo.config.rollout import RolloutConfig
from codegrpo.data.problems import Problem
from codegrpo.errors import UsageError
from codegrpo.models.loading import context_length
from codegrpo.reward.explain import code_head
from codegrpo.reward.metric_names import CUT_FIRST_TURN
from codegrpo.reward.scorer import Scorer
from codegrpo.rollout.chat import Chat
from codegrpo.rollout.engine import Generate, play
from codegrpo.rollout.episode import Episode
from codegrpo.rollout.feedback import Feedback
from codegrpo.rollout.metrics import EpisodeStats, cut_first_turn, episode_metrics, warn_if_mostly_cut
from codegrpo.training import timing

T = TypeVar("T")
log = logging.getLogger(__name__)

FINAL_CODE = "final_code"  # the extra field code_reward scores under rollout=feedback
FAULT = "feedback_fault"  # a sandbox failure stopped the episode: its reward is None


def trainer_generate(trainer: Any) -> Generate:
    """Generation as TRL does it for a turn after the first (its tool loop): one completion per token-id
    prompt, by vLLM (server or colocate) or transformers, with the trainer's sampling settings and
    max_completion_length as max new tokens."""

    def generate(prompt_ids: list[list[int]]) -> tuple[list[list[int]], list[list[float]] | None]:
        completion_ids, logprobs = trainer._generate_single_turn(prompt_ids, None, {}, 1)
        return [list(ids) for ids in completion_ids], logprobs

    return generate


def _prompt_key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, default=str)


def _context_limit(trainer: Any) -> int | None:
    if getattr(trainer, "use_vllm", False) and getattr(trainer, "vllm_mode", None) == "colocate":
        try:
            return int(trainer.vllm_generation.llm.llm_engine.model_config.max_model_len)
        except AttributeError:
            pass
    return context_length(getattr(trainer, "model", None))


def _run_async(trainer: Any, coroutine: Coroutine[Any, Any, T]) -> T:
    """On TRL's async loop where it has one (the async reward runs there, on the same sandbox), else here."""
    loop = getattr(trainer, "async_loop", None)
    if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running():
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()
    return asyncio.run(coroutine)


def _gathered(trainer: Any, items: list[T]) -> list[T]:
    """``items`` of every process, in process order (accelerate's gather_object); with one process, ``items``."""
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is None or accelerator.num_processes <= 1:
        return items
    from accelerate.utils import gather_object

    return list(gather_object(items))


RolloutFunc = Callable[[list[Any], Any], dict[str, Any]]


def make_feedback_rollout(
    problems: Sequence[Problem],
    scorer: Scorer,
    settings: RolloutConfig | None = None,
    *,
    prompt_of: Callable[[Problem], Any] | None = None,
    generate: Callable[[Any], Generate] = trainer_generate,
) -> RolloutFunc:
    """TRL's ``rollout_func`` for rollout=feedback.

    Args:
        problems: the training problems with their public tests alone (build.sides' ``public``): the rollout
            never holds a hidden test.
        scorer: the sandbox and how a run is judged (language, checker, tolerance, limits, extract).
        settings: the rollout group's settings.
        prompt_of: the chat prompt each problem is posed with (build.dataset's ``prompt``): which problem a
            prompt is, where the trainer does not give its inputs (CodeGRPOTrainer's ``rollout_inputs``).
        generate: ``generate(trainer)`` -> a function from token-id prompts to (completion ids, logprobs or
            None); TRL's generation by default.
    """
    settings = settings or RolloutConfig()
    publics = {problem.id: problem for problem in problems}
    if publics and not any(p.tests for p in publics.values()):
        log.warning(
            "rollout=feedback: none of the %d problems has public tests, so every episode is one turn, as "
            "rollout=single (problems=feedback has them; docs/research-workflow.md)",
            len(publics),
        )
    environment = Feedback(scorer, settings)
    by_prompt = _by_prompt(problems, prompt_of)

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if not prompts or not all(isinstance(p, list) for p in prompts):
            raise UsageError("rollout=feedback needs chat prompts (lists of messages)")
        chat = _chat(trainer)
        episodes = []
        for pid, prompt in zip(_problem_ids(prompts, trainer, by_prompt), prompts, strict=True):
            if pid not in publics:
                raise UsageError(f"rollout=feedback: problem_id {pid!r} is not in the rollout's problems")
            episodes.append(Episode(publics[pid], chat.prompt_ids(prompt)))
        clock = getattr(trainer, "clock", None)  # CodeGRPOTrainer's timing/*: the public tests are reward time

        def run_tests(coroutine: Coroutine[Any, Any, T]) -> T:
            with timing.phase(clock, timing.REWARD):
                return _run_async(trainer, coroutine)

        sampled = play(
            episodes,
            generate(trainer),
            environment,
            chat,
            settings.max_turns,
            widest=lambda n: max(_gathered(trainer, [n])),  # the most episodes still going on any process
            run=run_tests,
        )
        log_metrics(trainer, episodes, settings.max_turns)
        return _outputs(episodes, sampled)

    return rollout


def _chat(trainer: Any) -> Chat:
    """The trainer's chat template, end-of-turn ids and limits, as TRL renders a prompt."""
    tokenizer = getattr(trainer, "_tokenizer", None) or trainer.processing_class
    template = {
        "chat_template": getattr(trainer, "chat_template", None),
        **(getattr(trainer, "chat_template_kwargs", None) or {}),
    }
    eos = getattr(trainer, "eos_token_ids", None) or [tokenizer.eos_token_id]
    return Chat(tokenizer, eos, int(trainer.max_completion_length), _context_limit(trainer), template)


def _by_prompt(problems: Sequence[Problem], prompt_of: Callable[[Problem], Any] | None) -> dict[str, str | None]:
    """Each prompt's problem id (None: two problems share that prompt)."""
    by_prompt: dict[str, str | None] = {}
    if prompt_of is not None:
        for problem in problems:
            key = _prompt_key(prompt_of(problem))
            by_prompt[key] = problem.id if key not in by_prompt else None
    return by_prompt


def _problem_ids(prompts: list[Any], trainer: Any, by_prompt: dict[str, str | None]) -> list[str]:
    """Each prompt's problem: the trainer's inputs where it gives them, else the problem posed with it."""
    inputs = getattr(trainer, "rollout_inputs", None)
    if (
        inputs is not None
        and len(inputs) == len(prompts)
        and all("problem_id" in x and x.get("prompt") == p for x, p in zip(inputs, prompts, strict=True))
    ):
        return [str(x["problem_id"]) for x in inputs]
    ids = [by_prompt.get(_prompt_key(p), "") for p in prompts]
    if not all(ids):
        raise UsageError(
            "rollout=feedback: a prompt matches no problem, or several: build the rollout with "
            "prompt_of=, and give each problem its own prompt, or train with CodeGRPOTrainer"
        )
    return [str(i) for i in ids]


def _outputs(episodes: list[Episode], sampled: bool) -> dict[str, Any]:
    """What TRL takes from a rollout_func, and the columns the reward functions and the completions table read."""
    return {
        "prompt_ids": [e.prompt_ids for e in episodes],
        "completion_ids": [e.completion_ids for e in episodes],
        "logprobs": [e.logprobs for e in episodes] if sampled else None,
        "env_mask": [e.env_mask for e in episodes],
        FINAL_CODE: [e.codes[-1] for e in episodes],
        FAULT: [e.fault for e in episodes],
        "feedback_turns": [len(e.codes) for e in episodes],
        "feedback_codes": [list(e.codes) for e in episodes],
        "feedback_public": [[None if r is None else r.verdict.status.value for r in e.public] for e in episodes],
        "feedback_messages": [list(e.messages) for e in episodes],
        "feedback_tokens": [e.feedback_tokens for e in episodes],
    }


def log_metrics(trainer: Any, episodes: Sequence[Episode], max_turns: int) -> None:
    """The episodes' metrics into the trainer's (TRL averages each key's values at its next log), over
    every process's episodes; on a step with cuts, the share cut before their second turn
    (``feedback/cut_first_turn``), and a warning when that is most of them."""
    store = getattr(trainer, "_metrics", None)
    if store is None:
        return
    stats = _gathered(trainer, [EpisodeStats.of(e) for e in episodes])
    model = getattr(trainer, "model", None)
    mode = "train" if model is None or model.training else "eval"
    for name, value in episode_metrics(stats, max_turns).items():
        store[mode][name].append(value)
    share = cut_first_turn(stats, max_turns)
    if share is not None:
        store[mode][CUT_FIRST_TURN].append(share)
    if getattr(getattr(trainer, "accelerator", None), "is_main_process", True):
        warn_if_mostly_cut(stats, max_turns, getattr(trainer, "max_completion_length", None))


# -- the reward on the final code -----------------------------------------------------------------------------------


def turn_columns(columns: dict[str, Any], max_turns: int) -> dict[str, list[Any]]:
    """The completions table's columns of each turn, ``max_turns`` of them in every batch (a table's columns
    stay the same from step to step): ``turns``, and per turn t its code (its head), its public verdict and
    the feedback the model saw after it; "" where an episode did not get that far."""
    codes, public, messages = columns["feedback_codes"], columns["feedback_public"], columns["feedback_messages"]

    def at(values: Sequence[Any], turn: int) -> Any:
        return values[turn] if turn < len(values) and values[turn] is not None else ""

    table: dict[str, list[Any]] = {"turns": [len(c) for c in codes]}
    for turn in range(max_turns):
        table[f"turn_{turn + 1}_code"] = [code_head(at(c, turn)) for c in codes]
        table[f"turn_{turn + 1}_public"] = [at(p, turn) for p in public]
        if turn < max_turns - 1:
            table[f"turn_{turn + 1}_feedback"] = [at(m, turn) for m in messages]
    return table


def score_final_code(function: Callable[..., Any], max_turns: int = 0) -> Callable[..., Any]:
    """``function`` (code_reward, hack_penalty) scoring each episode's final code (the ``final_code`` field)
    in place of its whole multi-turn completion, logged under the same name; None for an episode a sandbox
    failure stopped (``feedback_fault``), as for a single turn's; unchanged where the fields are absent
    (rollout=single). With ``max_turns`` (one reward function of a run has it), each turn's columns go to the
    completions table (``turn_columns``)."""

    def split(completions: Any, columns: dict[str, Any]) -> tuple[Any, list[bool]]:
        final, faults = columns.pop(FINAL_CODE, None), columns.pop(FAULT, None)
        if max_turns and final is not None and (log_extra := columns.get("log_extra")) is not None:
            for name, values in turn_columns(columns, max_turns).items():
                log_extra(name, values)
        return (completions if final is None else list(final)), list(faults or [])

    def unscored(rewards: Any, faults: list[bool]) -> Any:
        return [None if fault else reward for reward, fault in zip(rewards, faults, strict=True)] if faults else rewards

    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(type(function).__call__):

        async def reward(completions: Any, **columns: Any) -> Any:
            scored, faults = split(completions, columns)
            return unscored(await function(scored, **columns), faults)
    else:

        def reward(completions: Any, **columns: Any) -> Any:  # type: ignore[misc]
            scored, faults = split(completions, columns)
            return unscored(function(scored, **columns), faults)

    reward.__name__ = getattr(function, "__name__", type(function).__name__)
    reward.__qualname__ = reward.__name__
    return reward
