"""b. superserve: the Superserve backend vs the guide's approach, both against the fake API with latency.

The guide's approach, rebuilt here for comparison: the sync SDK, one sandbox per completion
(create, files.write, commands.run under `timeout -s KILL`, kill in a finally), and a
ThreadPoolExecutor of MAX_SANDBOXES. Ours: SuperserveSandbox behind the Scorer, at the same cap, once
with a sandbox per program (programs_per_sandbox=1) and once with the default (several programs per
sandbox, run one after another by the trusted runner).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import Row
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve
from codegrpo.config.sandbox import SuperserveSandboxConfig
from codegrpo.data.files import load_problems
from codegrpo.reward.programs import build_program, get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.sandbox.superserve import SuperserveSandbox

TITLE = "b. superserve path vs the guide (completions/s)"
KEY_ENV = "CODEGRPO_FAKE_SUPERSERVE_KEY"  # never the user's real key
LATENCY = {"create": 0.4, "write": 0.05, "exec": 0.05, "kill": 0.05}
CAP = 8


def _corpus(groups: int, duplicates: bool) -> list[tuple[str, str]]:
    """GRPO-shaped batches over the basics set: 8 completions per problem, right and wrong ones.

    With ``duplicates``, each group repeats completions as small models do (4 distinct of 8);
    without, every completion is distinct.
    """
    problems = load_problems("problems/basics.jsonl")[:groups]
    corpus = []
    for problem in problems:
        wrong = [f"{problem.reference}\n# variant {i}\n" for i in range(8)] if not duplicates else None
        if duplicates:
            group = [problem.reference] * 3 + ["def nothing():\n    pass\n"] * 3 + ["x = (", "no code at all"]
        else:
            group = [w if i % 2 else w.replace("return", "return None and", 1) for i, w in enumerate(wrong)]
        corpus += [(problem.id, f"```python\n{c}\n```" if "def" in c else c) for c in group]
    return corpus


def run_as_the_guide(source: str, base_url: str) -> str:
    """One completion the guide's way: a sandbox of its own through the sync SDK, killed in a finally."""
    from superserve import NetworkConfig, Sandbox

    sandbox = Sandbox.create(
        name="grpo-reward",
        network=NetworkConfig(deny_out=["0.0.0.0/0"]),
        timeout_seconds=300,
        auto_delete_seconds=0,
        api_key=FAKE_API_KEY,
        base_url=base_url,
    )
    try:
        sandbox.files.write("/tmp/solution.py", source)
        return sandbox.commands.run("timeout -s KILL 10 python3 -I /tmp/solution.py", timeout_seconds=30).stdout
    finally:
        sandbox.kill()


def _guide(corpus: list[tuple[str, str]], base_url: str) -> float:
    problems = {p.id: p for p in load_problems("problems/basics.jsonl")}
    language = get_language("python")

    def run_one(pair: tuple[str, str]) -> str:
        problem_id, completion = pair
        program = build_program(problems[problem_id], completion.strip("`").removeprefix("python\n"), language, 10)
        return run_as_the_guide(program.source, base_url)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CAP) as pool:
        list(pool.map(run_one, corpus))
    return time.perf_counter() - started


def _ours(corpus: list[tuple[str, str]], base_url: str, **overrides: int) -> tuple[float, dict[str, float]]:
    os.environ[KEY_ENV] = FAKE_API_KEY
    cfg = SuperserveSandboxConfig(api_key_env=KEY_ENV, base_url=base_url, max_concurrency=CAP, **overrides)
    backend = SuperserveSandbox(cfg)
    scorer = Scorer(load_problems("problems/basics.jsonl"), backend, get_language("python"))

    async def score() -> None:
        try:
            await scorer.score([p for p, _ in corpus], [c for _, c in corpus])
        finally:
            await backend.aclose()

    started = time.perf_counter()
    asyncio.run(score())
    return time.perf_counter() - started, backend.stats()


def bench_superserve(groups: int = 16) -> list[Row]:
    """``groups`` GRPO groups of 8 completions each (128 by default) per corpus."""
    default = SuperserveSandboxConfig().programs_per_sandbox
    rows = []
    for label, duplicates in (("distinct completions", False), ("GRPO groups with duplicates", True)):
        corpus = _corpus(groups, duplicates)
        n = len(corpus)
        with FakeSuperserve(latency=LATENCY, max_sandboxes=CAP) as fake:
            guide_s = _guide(corpus, fake.base_url)
            guide_sandboxes = fake.created
        note = f"{n} completions, {guide_sandboxes} sandboxes, cap {CAP}"
        rows.append((f"guide approach, {label}", n / guide_s, note))
        for per_sandbox in (1, default):
            with FakeSuperserve(latency=LATENCY, max_sandboxes=CAP) as fake:
                ours_s, stats = _ours(corpus, fake.base_url, programs_per_sandbox=per_sandbox)
                assert fake.alive == 0 and fake.max_alive <= CAP, fake.summary()
                assert stats["sandbox/infra_failures"] == 0, stats
                ours_sandboxes = fake.created
            name = f"codegrpo superserve, programs_per_sandbox={per_sandbox}, {label}"
            print(
                f"[superserve] {name}: guide {guide_s:.1f}s ({guide_sandboxes} sandboxes), "
                f"ours {ours_s:.1f}s ({ours_sandboxes} sandboxes) {json.dumps(stats)}",
                file=sys.stderr,
            )
            rows += [
                (name, n / ours_s, f"{ours_sandboxes} sandboxes, cap {CAP}"),
                (
                    f"ratio codegrpo / guide, programs_per_sandbox={per_sandbox}, {label}",
                    guide_s / ours_s,
                    "target >= 8.0 (issue 22)",
                ),
            ]
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return bench_superserve()
