"""k. feedback: rollout=feedback's own overhead in one step (8 episodes, one each of 8 problems=feedback tasks across
its levels, up to 3 turns of 96 tokens, the offline model): the episodes are generated once, then replayed with the
same tokens, so the replay's time is the loop alone: the public tests run after each turn and the feedback messages
built and templated; beside a single-turn step's scoring of the same final code, and as a share of the rollout
(`--only feedback`; not in the default run)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from benchmarks.common import Row, offline_model, timed
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.files import load_problems
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.sandbox.local import LocalSandbox

TITLE = "k. rollout=feedback's own overhead per step"


def bench_feedback(episodes: int = 8, new_tokens: int = 96, rounds: int = 3) -> list[Row]:
    """rollout=feedback's loop without its generation: one step's episodes generated live (recorded), then
    replayed token for token; the replay's time is the loop's own (public runs, messages, templating)."""

    from codegrpo.config.choices import Split
    from codegrpo.config.evaluation import EvaluationConfig
    from codegrpo.config.problem_set import ProblemsConfig
    from codegrpo.config.rollout import RolloutConfig
    from codegrpo.data.prompts import messages_for
    from codegrpo.data.public_tests import sides_of
    from codegrpo.data.sets import select_split
    from codegrpo.evaluation.evaluator import generate_ids, set_torch_threads
    from codegrpo.models.loading import load_model_and_tokenizer
    from codegrpo.reward.checker import same_test
    from codegrpo.rollout.chat import Chat
    from codegrpo.rollout.engine import play
    from codegrpo.rollout.episode import Episode
    from codegrpo.rollout.feedback import Feedback

    model, tokenizer = load_model_and_tokenizer(offline_model())
    model.eval()
    problems_cfg = ProblemsConfig(name="feedback", path="problems/feedback.jsonl")
    train = [p for p in select_split(load_problems(problems_cfg.path), Split.train, 0.3) if p.public_tests]
    chosen = train[:: max(1, len(train) // episodes)][:episodes]  # every level: some pass at once, some revise
    settings = RolloutConfig(max_turns=3, truncate_chars=160)
    sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency=2))
    sides = sides_of(chosen, same_test())  # the reward's defaults, as rollout=feedback splits the tests
    scorer = Scorer(sides.hidden, sandbox, get_language("python"), "binary", timeout_s=5.0)
    eos = {tokenizer.eos_token_id}
    chat = Chat(tokenizer, eos, 576, None)
    # The typed settings, as the evaluate task passes them: every field the generation reads has its default.
    sampling = EvaluationConfig(num_samples=1, temperature=0.7, max_new_tokens=new_tokens, batch_size=episodes)
    set_torch_threads()

    def fresh() -> list[Episode]:
        pairs = zip(chosen, sides.public, strict=True)
        return [Episode(shown, chat.prompt_ids(messages_for(p, problems_cfg))) for p, shown in pairs]

    live, recorded, generating = fresh(), [], generate_ids(model, tokenizer, sampling, eos)
    spent = {"generation": 0.0, "public": 0.0}

    def record(batch: list[list[int]]) -> tuple[list[list[int]], None]:
        seconds, (replies, _) = timed(lambda: generating(batch))
        spent["generation"] += seconds
        recorded.append(replies)
        return replies, None

    def timed_run(coroutine):
        seconds, result = timed(lambda: asyncio.run(coroutine))
        spent["public"] += seconds
        return result

    rollout_s, _ = timed(lambda: play(live, record, Feedback(scorer, settings), chat, settings.max_turns))
    turns = sum(len(e.codes) for e in live)
    print(
        f"[feedback] live: {len(live)} episodes, {turns} turns, generation {spent['generation']:.1f} s of "
        f"{rollout_s:.1f} s",
        file=sys.stderr,
    )
    best = {"loop": float("inf"), "public": float("inf"), "single": float("inf")}
    for round_ in range(rounds):
        replies = iter(recorded)
        replay = fresh()
        spent["public"] = 0.0
        loop_s, _ = timed(
            lambda replies=replies, replay=replay: play(
                replay,
                lambda _: (next(replies), None),
                Feedback(scorer, settings),
                chat,
                settings.max_turns,
                run=timed_run,
            )
        )
        assert [e.codes for e in replay] == [e.codes for e in live], "the replay diverged from the live episodes"
        finals = [e.texts[-1] for e in replay]
        single_s, _ = timed(lambda finals=finals: asyncio.run(scorer.score([e.problem.id for e in live], finals)))
        best = {
            "loop": min(best["loop"], loop_s),
            "public": min(best["public"], spent["public"]),
            "single": min(best["single"], single_s),
        }
        print(
            f"[feedback] replay {round_ + 1}: loop {loop_s:.2f} s (public runs {spent['public']:.2f} s), "
            f"single-turn scoring {single_s:.2f} s",
            file=sys.stderr,
        )
    asyncio.run(sandbox.aclose())
    generation = spent["generation"]
    return [
        (
            "generation of the step's turns, s",
            generation,
            f"{len(live)} episodes, {turns} turns of <= {new_tokens} tokens, the offline model on this CPU",
        ),
        ("the loop's own time per step, s (best replay)", best["loop"], "public runs, messages, templating"),
        ("  of which the public tests' runs, s", best["public"], f"{turns} runs of one public test"),
        (
            "  of which messages and templating, s",
            best["loop"] - best["public"],
            f"{sum(len(e.messages) for e in live)} feedback messages",
        ),
        ("a single-turn step's scoring of the same final code, s", best["single"], "the hidden tests, both rollouts"),
        (
            "the loop's share of the rollout, %",
            100 * best["loop"] / (generation + best["loop"]),
            "target < 5%; a step's backward pass only shrinks it",
        ),
    ]


def run(args: argparse.Namespace) -> list[Row]:
    return bench_feedback()
