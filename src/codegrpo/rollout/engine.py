"""The episode engine: plays episodes turn by turn, all of them generating together, until each meets a stop
condition (codegrpo.rollout.episode.Stop); an Environment says what the model is told between turns."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from codegrpo.rollout.chat import Chat
from codegrpo.rollout.environment import Environment
from codegrpo.rollout.episode import Episode, Stop

# Token-id prompts -> (each one's new token ids, their sampling logprobs or None).
Generate = Callable[[list[list[int]]], tuple[list[list[int]], list[list[float]] | None]]


def play(
    episodes: Sequence[Episode],
    generate: Generate,
    environment: Environment,
    chat: Chat,
    max_turns: int,
    *,
    widest: Callable[[int], int] = lambda count: count,
    run: Callable[[Coroutine[Any, Any, Any]], Any] = asyncio.run,
) -> bool:
    """Play ``episodes`` to their end; training and evaluation both run this. After each turn an episode
    stops at the first of: its turn was cut by ``chat.budget`` (BUDGET), the environment stops it (UNTESTED,
    FAULT, SOLVED), it was the last of ``max_turns`` (TURNS), the environment's message would not fit the
    budget or the context (BUDGET). A turn that stops without ending (a model that never stops: the per-turn
    token limit) is closed by the chat template's end-of-turn token before the message, and the episode goes
    on. ``widest(count)``: the most episodes going on any process (every process generates as many sequences);
    ``run``: runs a coroutine (the environment's). Returns whether ``generate`` gave logprobs."""
    sampled = True  # vLLM gives logprobs, transformers does not
    for turn in range(max_turns):
        active = [e for e in episodes if not e.done]
        width = widest(len(active))
        if not width:
            break
        # Every process generates as many sequences as the busiest: vLLM's server mode gathers them all and
        # hands each process the slice of its own length, and collectives need every process to call.
        batch = [e.prompt_ids + e.completion_ids for e in active]
        batch += [episodes[0].prompt_ids] * (width - len(batch))  # padding, discarded
        new_ids, new_logprobs = generate(batch)
        sampled = sampled and new_logprobs is not None
        ended: dict[int, bool] = {}
        cut: dict[int, bool] = {}
        for number, episode in enumerate(active):
            ids = list(new_ids[number])
            kept = ids[: chat.budget - len(episode.completion_ids)]
            episode.add(kept, 1, new_logprobs[number][: len(kept)] if new_logprobs is not None else None)
            ended[id(episode)] = bool(kept) and kept[-1] in chat.eos
            cut[id(episode)] = len(kept) < len(ids) or len(episode.completion_ids) >= chat.budget
            text = chat.tokenizer.decode(kept, skip_special_tokens=True)
            episode.texts.append(text)
            episode.codes.append(environment.code(text))
        responses = run(environment.respond(active))
        for episode, response in zip(active, responses, strict=True):
            episode.public.append(response.report)
            if cut[id(episode)]:
                episode.stop = Stop.BUDGET
            elif response.stop is not None:
                episode.stop = response.stop
            elif turn == max_turns - 1:
                episode.stop = Stop.TURNS
            else:
                message = chat.escape(response.message)
                ids = chat.message_ids(message, ended[id(episode)])
                if not chat.fits(len(episode.prompt_ids), len(episode.completion_ids) + len(ids)):
                    episode.stop = Stop.BUDGET
                    continue
                episode.add(ids, 0, None)
                episode.messages.append(message)
                episode.feedback_tokens += len(ids)
    return sampled
