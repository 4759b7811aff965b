"""l. ray: completions/s scoring the local section's HumanEval corpus through sandbox=ray on a two-node Ray cluster
started on this machine (one sandbox actor per node, placed by a custom resource) against sandbox=local with the
same concurrency, in one run: the hop's overhead, as a ratio; and the latency a batch of one program gains."""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import time

from benchmarks.common import BENCH_TIMEOUT_S, Row, timed
from benchmarks.sections.local import humaneval_corpus
from codegrpo.config.sandbox import LocalSandboxConfig, RaySandboxConfig
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.sandbox.base import Program, SandboxBackend
from codegrpo.sandbox.local import LocalSandbox
from codegrpo.sandbox.ray_cluster import RaySandbox

TITLE = "l. ray: the local sandbox on a two-node Ray cluster vs sandbox=local (completions/s, one machine)"
CONCURRENCY = 2  # programs at once on either side: one per core here, one actor of one program on each node
LATENCY_ROUNDS = 20


def _score(sandbox: SandboxBackend, problems, corpus) -> list[bool]:
    scorer = Scorer(problems, sandbox, get_language("python"), "binary", timeout_s=BENCH_TIMEOUT_S)
    scored = asyncio.run(scorer.score([p for p, _ in corpus], [c for _, c in corpus]))
    return [s.verdict.reward == 1.0 for s in scored]


def _latency(sandbox: SandboxBackend, rounds: int) -> float:
    """The median seconds of a batch of one trivial program, over ``rounds`` batches."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        asyncio.run(sandbox.run_many([Program("print(1)", timeout_s=BENCH_TIMEOUT_S)]))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_ray(limit: int | None = None, rounds: int = LATENCY_ROUNDS) -> list[Row]:
    """``limit``: only the corpus's first completions, and ``rounds`` latency batches (a test's smallest run)."""
    import ray
    from ray.cluster_utils import Cluster

    problems, corpus = humaneval_corpus()
    corpus = corpus[:limit]
    kept = signal.getsignal(signal.SIGTERM)  # Ray's node and ray.init set SIGTERM to exit: the caller's comes back
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"sandbox": 1}})
    try:
        cluster.add_node(num_cpus=1, resources={"sandbox": 1})
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        local = LocalSandbox(LocalSandboxConfig(max_concurrency=CONCURRENCY, timeout_s=BENCH_TIMEOUT_S))
        remote = RaySandbox(
            RaySandboxConfig(
                max_concurrency=CONCURRENCY, actors=CONCURRENCY, resources={"sandbox": 1}, timeout_s=BENCH_TIMEOUT_S
            )
        )
        rows: list[Row] = []
        rates, verdicts, latencies = {}, {}, {}
        with local, remote:
            print(f"[ray] actors on {len(set(remote._nodes))} node name(s): {remote._nodes}", file=sys.stderr)
            for label, sandbox in (("sandbox=local", local), ("sandbox=ray, two nodes", remote)):
                seconds, passed = timed(lambda sandbox=sandbox: _score(sandbox, problems, corpus))
                rates[label], verdicts[label] = len(corpus) / seconds, passed
                latencies[label] = _latency(sandbox, rounds)
                print(f"[ray] {label}: {rates[label]:.1f}/s, {sum(passed)} passed", file=sys.stderr)
                rows.append((f"{label}, {CONCURRENCY} at once", rates[label], f"{sum(passed)}/{len(corpus)} passed"))
        (a, b) = verdicts.values()
        disagree = sum(x != y for x, y in zip(a, b, strict=True))
        (local_rate, ray_rate), (local_s, ray_s) = rates.values(), latencies.values()
        rows.append(("ratio ray / local", ray_rate / local_rate, f"verdicts differ on {disagree}"))
        rows.append(("batch of one program, local (ms, median)", 1000 * local_s, f"{rounds} batches"))
        rows.append(("batch of one program, ray (ms, median)", 1000 * ray_s, "the hop: a remote call and back"))
        rows.append(("latency ray adds per batch (ms)", 1000 * (ray_s - local_s), ""))
        return rows
    finally:
        ray.shutdown()
        cluster.shutdown()
        signal.signal(signal.SIGTERM, kept)


def run(args: argparse.Namespace) -> list[Row]:
    return bench_ray()
