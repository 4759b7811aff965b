"""Evaluating a model: sample completions for a problem set, score them in the sandbox, and report pass@1
and pass@k (results.py). The evaluate command and training's before/after evaluations both run this; the
paired comparison of two evaluations is compare.py.

Under rollout=feedback each sample is an episode, played as training plays them (codegrpo.rollout.engine, in
rollout.feedback's environment): the model sees its code's results on the public tests and revises, up to
``rollout.max_turns`` turns of at most ``evaluation.max_new_tokens`` tokens each, within the model's context.
The first turn's code and the last turn's are both scored on the hidden tests: the Evaluation is the last
turn's, with the first turn's inside it (``first_turn``) and their paired comparison (``turn_gain``), as RLEF
reports both.

Under rollout=tools each sample is an agent's episode on a repository task (``evaluate_agents``)."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from codegrpo.agents.environment import Session
from codegrpo.agents.episodes import Episode, play
from codegrpo.config.choices import RolloutKind
from codegrpo.config.evaluation import EvaluationConfig
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.config.rollout import RolloutConfig
from codegrpo.data.problems import Problem
from codegrpo.data.prompts import messages_for
from codegrpo.data.repo_tasks import RepoTask
from codegrpo.evaluation.results import Evaluation, pass_at_k
from codegrpo.evaluation.vllm_engine import Turn, VllmModel, vllm_turn
from codegrpo.reward.explain import explain
from codegrpo.reward.scorer import Scored, Scorer
from codegrpo.reward.verdict import Status

log = logging.getLogger(__name__)


def set_torch_threads() -> int:
    """One intra-op thread per usable CPU: more oversubscribes the cores and slows decoding several-fold."""
    import torch

    from codegrpo.config.cgroupfs import usable_cores  # affinity and cgroup quota: containers report the host's

    threads = usable_cores()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


@dataclass
class Generated:
    """What generate() produced and took: the model's tokens (each reply to its end-of-turn token) and seconds."""

    tokens: int = 0
    seconds: float = 0.0

    def add(self, replies: list[list[int]], eos: set[int], seconds: float) -> None:
        self.tokens += sum(_reply_length(row, eos) for row in replies)
        self.seconds += seconds

    @property
    def per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def _reply_length(row: list[int], eos: set[int]) -> int:
    """A generated row's own tokens: up to its first end-of-turn token, which counts; the padding after it does not."""
    return next((i + 1 for i, token in enumerate(row) if token in eos), len(row))


def _eos(model, tokenizer) -> set[int]:
    ends = getattr(getattr(model, "generation_config", None), "eos_token_id", None)  # an int, a list or None
    return {tokenizer.eos_token_id, *([ends] if isinstance(ends, int) else ends or [])}


def generate(
    model, tokenizer, messages: list[list[dict]], settings: EvaluationConfig, generated: Generated | None = None
) -> list[list[str]]:
    """num_samples completions for each chat prompt, by ``generate_ids`` (the one generation set-up: every
    prompt's samples in one batch). Seeded, so two models are evaluated on the same random stream.
    ``generated`` adds up the tokens generated and the seconds generate() took."""
    import torch

    from codegrpo.rollout.chat import prompt_ids

    set_torch_threads()
    torch.manual_seed(settings.seed)
    generated = generated if generated is not None else Generated()
    turn = sampling_turn(model, tokenizer, settings, _eos(model, tokenizer), generated)
    n = settings.num_samples
    outputs: list[list[str]] = []
    with inference(model):
        for start in range(0, len(messages), settings.batch_size):
            batch = messages[start : start + settings.batch_size]
            replies, _ = turn([prompt_ids(tokenizer, m) for m in batch for _ in range(n)])
            decoded = tokenizer.batch_decode(replies, skip_special_tokens=True)
            outputs += [decoded[i * n : (i + 1) * n] for i in range(len(batch))]
            print(
                f"generated {min(start + len(batch), len(messages))}/{len(messages)} problems "
                f"({generated.per_second:.1f} tokens/s)",
                file=sys.stderr,
            )
    return outputs


@contextmanager
def inference(model) -> Iterator[None]:
    """A transformers model in eval mode while it samples, then back to the mode it was in (training's own
    evaluations sample the model that trains); vLLM's engine has no modes."""
    if isinstance(model, VllmModel):
        yield
        return
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def sampling_turn(
    model, tokenizer, settings: EvaluationConfig, eos: set[int], generated: Generated | None = None
) -> Turn:
    """A turn's generation by evaluation.backend: ``model`` is a transformers model, or a VllmModel
    (build.sampling_model loads the one the backend names)."""
    if isinstance(model, VllmModel):
        return vllm_turn(model, settings, eos, generated)
    return generate_ids(model, tokenizer, settings, eos, generated)


def _sampling(settings: EvaluationConfig) -> dict[str, object]:
    if settings.temperature > 0:
        return {"do_sample": True, "temperature": settings.temperature, "top_p": settings.top_p}
    return {"do_sample": False}


def _evaluation(
    problems: list[Problem],
    scored: list[Scored],
    settings: EvaluationConfig,
    started: float,
    generated: Generated | None = None,
) -> Evaluation:
    n = settings.num_samples
    correct = [sum(s.verdict.reward == 1.0 for s in scored[i * n : (i + 1) * n]) for i in range(len(problems))]
    return Evaluation(
        pass_at={k: float(np.mean([pass_at_k(n, c, k) for c in correct])) for k in settings.k},
        num_problems=len(problems),
        num_samples=n,
        status_counts=dict(Counter(s.verdict.status.value for s in scored)),
        per_problem={p.id: c for p, c in zip(problems, correct, strict=True)},
        # Every sample with why it scored what it did: problem, status, reason, the code's first lines.
        samples=[explain(s) for s in scored],
        wall_s=time.monotonic() - started,
        generated_tokens=None if generated is None else generated.tokens,
        generation_s=None if generated is None else generated.seconds,
    )


def evaluate_model(
    model,
    tokenizer,
    scorer: Scorer,
    problems: list[Problem],
    problems_cfg: ProblemsConfig,
    settings: EvaluationConfig,
    rollout: RolloutConfig | None = None,
    public: Sequence[Problem] = (),
) -> Evaluation:
    """Generate, score in the sandbox, and return pass@k for each k, status counts and every sample. Under
    rollout=feedback, ``scorer`` holds the hidden tests, ``public`` the public ones (build.sides' two sides)
    and ``problems`` every test."""
    if rollout is not None and rollout.kind is RolloutKind.feedback:
        return evaluate_feedback(model, tokenizer, scorer, problems, public, problems_cfg, settings, rollout)
    started = time.monotonic()
    messages = [messages_for(p, problems_cfg) for p in problems]
    generated = Generated()
    samples = generate(model, tokenizer, messages, settings, generated)
    ids = [p.id for p, group in zip(problems, samples, strict=True) for _ in group]
    flat = [text for group in samples for text in group]
    return _evaluation(problems, asyncio.run(scorer.score(ids, flat)), settings, started, generated)


def generate_ids(
    model, tokenizer, settings: EvaluationConfig, eos: set[int], generated: Generated | None = None
) -> Turn:
    """A turn's generation for evaluation episodes: token-id prompts, left-padded, batch_size x num_samples
    sequences per generate(), each reply up to evaluation.max_new_tokens and cut after its end-of-turn token.
    ``generated`` adds up the tokens generated and the seconds generate() took."""
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    size = settings.batch_size * settings.num_samples

    def turn(prompt_ids: list[list[int]]) -> tuple[list[list[int]], None]:
        replies: list[list[int]] = []
        for start in range(0, len(prompt_ids), size):
            chunk = prompt_ids[start : start + size]
            width = max(map(len, chunk))
            ids = torch.tensor([[pad] * (width - len(x)) + x for x in chunk], device=model.device)
            mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in chunk], device=model.device)
            began = time.perf_counter()
            with torch.inference_mode():
                tokens = model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=settings.max_new_tokens,
                    use_cache=True,
                    pad_token_id=pad,
                    **_sampling(settings),
                )
            rows = tokens[:, width:].tolist()
            if generated is not None:
                generated.add(rows, eos, time.perf_counter() - began)
            replies += [row[: _reply_length(row, eos)] for row in rows]
        return replies, None

    return turn


def evaluate_feedback(
    model,
    tokenizer,
    scorer: Scorer,
    problems: list[Problem],
    public: Sequence[Problem],
    problems_cfg: ProblemsConfig,
    settings: EvaluationConfig,
    rollout: RolloutConfig,
) -> Evaluation:
    """num_samples episodes per problem (rollout=feedback), their first and last turns scored on the hidden
    tests: the last turn's Evaluation, holding the first turn's, their comparison and the episodes' metrics."""
    import torch

    from codegrpo.evaluation.compare import compare
    from codegrpo.models.loading import context_length
    from codegrpo.rollout.chat import Chat
    from codegrpo.rollout.engine import play
    from codegrpo.rollout.episode import Episode
    from codegrpo.rollout.feedback import Feedback
    from codegrpo.rollout.metrics import EpisodeStats, episode_metrics

    started = time.monotonic()
    set_torch_threads()
    torch.manual_seed(settings.seed)
    context = context_length(model)
    eos = _eos(model, tokenizer)
    chat = Chat(tokenizer, eos, context or 1 << 30, context)  # each turn is bounded by max_new_tokens
    episodes = [
        Episode(shown, chat.prompt_ids(messages_for(p, problems_cfg)))
        for p, shown in zip(problems, public, strict=True)
        for _ in range(settings.num_samples)
    ]
    generated = Generated()  # every turn's generate(); the public tests between turns are not in its seconds
    turn = sampling_turn(model, tokenizer, settings, eos, generated)

    def logged(prompt_ids: list[list[int]]) -> tuple[list[list[int]], None]:
        replies = turn(prompt_ids)
        going = sum(not e.done for e in episodes)
        print(
            f"feedback: turn {min(len(e.codes) for e in episodes if not e.done) + 1}, generated {going} "
            f"episodes of {len(episodes)} ({generated.per_second:.1f} tokens/s)",
            file=sys.stderr,
        )
        return replies

    with inference(model):
        play(episodes, logged, Feedback(scorer, rollout), chat, rollout.max_turns)
    ids = [e.problem.id for e in episodes]
    # One batch: an episode that stopped after its first turn has one code, which the scorer runs once.
    scored = asyncio.run(scorer.score(ids + ids, [e.texts[0] for e in episodes] + [e.texts[-1] for e in episodes]))
    first = _evaluation(problems, scored[: len(ids)], settings, started)
    last = _evaluation(problems, scored[len(ids) :], settings, started, generated)
    for sample, episode in zip(last.samples, episodes, strict=True):
        sample["turns"] = len(episode.texts)
        sample["public"] = [None if r is None else r.verdict.status.value for r in episode.public]
    last.first_turn = first
    last.feedback = episode_metrics([EpisodeStats.of(e) for e in episodes], rollout.max_turns)
    last.turn_gain = compare(first, last, settings.bootstrap, settings.seed).to_json()
    return last


REPLY_CHARS = 400  # of an episode's last message in its sample record
# The judge's statuses as a sample's verdict status (Evaluation.outcomes: passed, a wrong answer, no answer).
_JUDGED = {"passed": Status.PASSED, "failed": Status.FAILED, "tampered": Status.FAILED, "infra": Status.INFRA}


def evaluate_agents(
    model,
    tokenizer,
    session: Session,
    tasks: list[RepoTask],
    settings: EvaluationConfig,
    rollout: RolloutConfig,
    system_prompt: str | None = None,
) -> Evaluation:
    """num_samples episodes per repository task (rollout=tools: codegrpo.agents.episodes), each turn at most
    evaluation.max_new_tokens tokens within the model's context, every final workspace judged on the hidden
    tests: pass@k over the tasks, each episode's trajectory, and the episodes' metrics (episodes/*, judge/*)."""
    import torch

    from codegrpo.agents.rewards import episode_metrics
    from codegrpo.models.loading import context_length

    started = time.monotonic()
    set_torch_threads()
    torch.manual_seed(settings.seed)
    generated = Generated()
    turn = sampling_turn(model, tokenizer, settings, _eos(model, tokenizer), generated)
    with inference(model):
        episodes = play(
            session,
            tasks,
            settings.num_samples,
            tokenizer,
            turn,
            rollout.max_turns,
            context_length(model),
            settings.max_new_tokens,
            system_prompt,
        )
    n = settings.num_samples
    samples = [_episode_sample(e) for e in episodes]
    statuses = [sample["judge"] for sample in samples]
    correct = [statuses[i * n : (i + 1) * n].count("passed") for i in range(len(tasks))]
    return Evaluation(
        pass_at={k: float(np.mean([pass_at_k(n, c, k) for c in correct])) for k in settings.k},
        num_problems=len(tasks),
        num_samples=n,
        status_counts=dict(Counter(statuses)),
        per_problem={task.id: c for task, c in zip(tasks, correct, strict=True)},
        samples=samples,
        wall_s=time.monotonic() - started,
        feedback=episode_metrics([e.environment for e in episodes], [e.messages for e in episodes]),
        generated_tokens=generated.tokens,
        generation_s=generated.seconds,
    )


def _episode_sample(episode: Episode) -> dict[str, Any]:
    """An agent's episode as its eval file records it: the task, the verdict, what the agent did and said."""
    from codegrpo.agents.rewards import flags, trajectory

    environment, judgment = episode.environment, episode.environment.judgment
    status = judgment.status.value if judgment is not None else "infra"
    return {
        "problem_id": environment.task.id if environment.task else "",
        "status": _JUDGED[status].value,
        "judge": status,
        "failing": list(judgment.failing) if judgment is not None else [],
        "turns": episode.turns,
        "cut": episode.cut,
        "flags": flags(environment),
        "trajectory": trajectory(environment.calls),
        "reply": str(episode.messages[-1].get("content") or "")[:REPLY_CHARS] if episode.turns else "",
    }
