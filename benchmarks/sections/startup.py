"""g. startup: seconds from launch to the first line on stdout of codegrpo-score, -validate and -limits on small
inputs, of `train.py --help`, `--cfg job` and a misspelt key (its one-line error), and of `import codegrpo` and
`from codegrpo import code_reward` (the library), beside a bare `python -c pass` and `python -c "import hydra"`
(`--only startup`; not in the default run)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import Row, in_scratch
from codegrpo.resources import PROJECT_ROOT

TITLE = "g. startup: companion commands, train.py without training (s)"


def _first_output_s(command: list[str], status: int = 0) -> tuple[float, float]:
    """(seconds to the first byte on stdout, seconds to exit) of one run of ``command``, which must exit with
    ``status`` (a command that prints nothing on stdout: both are its exit)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    process.stdout.read(1)
    first = time.perf_counter() - started
    process.stdout.read()
    if process.wait() != status:
        raise RuntimeError(f"{' '.join(command)} exited with status {process.returncode}, not {status}")
    return first, time.perf_counter() - started


STARTUP_ROUNDS = 5
HYDRA = "python -c 'import hydra'"


def bench_startup(rounds: int, scratch: Path) -> list[Row]:
    """Each command's time to its first output, rounds alternated (ABCDABCD...) so load hits all alike; the
    median of the rounds. The companion commands score real inputs in a real sandbox, as users run them;
    train.py only answers (--help, --cfg job, a misspelt key's one-line error), without torch, beside
    Hydra's own import."""
    completions = scratch / "completions.jsonl"
    completions.write_text(
        json.dumps({"problem_id": "is_prime", "completion": "def is_prime(n):\n    return n > 1"}) + "\n"
    )
    commands = {
        "python -c pass": ([sys.executable, "-c", "pass"], 0),  # no output: its exit
        HYDRA: ([sys.executable, "-c", "import hydra"], 0),
        # the library (issue 34): what `from codegrpo import code_reward` costs a user's TRL script
        "import codegrpo": ([sys.executable, "-c", "import codegrpo; print(1)"], 0),
        "from codegrpo import code_reward": ([sys.executable, "-c", "from codegrpo import code_reward; print(1)"], 0),
        "codegrpo-score (1 completion, problems=seed)": (
            [sys.executable, "-m", "codegrpo.commands.score", f"completions={completions}", "problems=seed"],
            0,
        ),
        "codegrpo-validate problems=seed (4 references)": (
            [sys.executable, "-m", "codegrpo.commands.validate", "problems=seed"],
            0,
        ),
        "codegrpo-limits": ([sys.executable, "-m", "codegrpo.commands.limits"], 0),
        "train.py --help": ([sys.executable, "train.py", "--help"], 0),
        "train.py --cfg job": ([sys.executable, "train.py", "--cfg", "job"], 0),
        "train.py trainer.learning_rte=1 (misspelt)": ([sys.executable, "train.py", "trainer.learning_rte=1"], 2),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, (command, status) in commands.items():
            times[name].append(_first_output_s(command, status))
    rows, firsts = [], {}
    for name, runs in times.items():
        first = firsts[name] = sorted(f for f, _ in runs)[len(runs) // 2]
        total = sorted(t for _, t in runs)[len(runs) // 2]
        note = (
            "the interpreter alone"
            if name == "python -c pass"
            else "Hydra's import alone"
            if name == HYDRA
            else "no torch, transformers or trl"
            if "codegrpo" in name and "-" not in name
            else "its one-line error on stderr; target < 1.5"
            if "misspelt" in name
            else f"target < 1.5; exits after {total:.2f} s"
        )
        rows.append((f"{name}: s to first output (median of {rounds})", first, note))
    for name in commands:
        if name.startswith("train.py"):
            rows.append((f"ratio {name} / {HYDRA}", firsts[name] / firsts[HYDRA], "what train.py adds to Hydra"))
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return in_scratch(lambda scratch: bench_startup(STARTUP_ROUNDS, scratch))
