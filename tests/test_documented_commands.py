"""Every documented command works as written (issue 40, item 3).

The commands are read from the fenced code blocks of README.md and docs/*.md (a shell block's lines, a
console block's ``$ `` lines, a bare block that starts with a command, and every Python block), so a command
added to a doc is tested without touching this file. Each one is classified by a rule below; a command that
matches no rule fails, so a new kind of command forces a decision here.

* Every Hydra command (``python train.py``, ``codegrpo-train`` and the companion commands) is first composed as
  written with ``--cfg job``, in the fast part of the suite: a misspelt key, a stale option or a value the
  config refuses fails here.
* Then it runs at a tiny scale (slow): one GRPO step of 2 completions of 16 tokens of the tiny random model
  (tests/helpers/tiny_model.py: the command's settings are under test, not the model; on 2 problems, nothing
  saved, no logger), evaluations (of the tiny model too, or of a tiny run's checkpoint) of 1 problem and 16
  tokens; the documented overrides stay, the tiny ones are appended after them and win. One run per program
  and set of group choices (``Runs``): a command whose groups a run already had is only composed (which checks
  its own values), and is that run.
* It is only composed where the composed config needs what no test machine has (``NEEDS``: a Hub model or
  dataset, a GPU, a Superserve account, SLURM, a checkpoint of a long run), read from the composed config
  itself, not from the command's text.
* Commands that are not Hydra's run as written where cheap (``--help``, ``codegrpo-env``, the Python
  snippets); the rest (installs, make targets, the Superserve SDK) are the short table ``EXCEPTIONS``, each
  with its reason and a cheap check of what it can check here.

Placeholders and files a command names (``<run>``, ``completions.jsonl``, ``mypkg.rewards:brevity``) are made
in the command's own working directory (``PROPS``), where it runs: a user's project, not the checkout.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from codegrpo.commands import CONFIG_DIR
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.tiny_model import tiny_model_overrides

DOC_FILES = ["README.md", *sorted(str(p.relative_to(PROJECT_ROOT)) for p in (PROJECT_ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", "zsh", "shell-session"}
# A bare block (no language) holds commands when its first line starts with one.
COMMAND_START = re.compile(r"^(\$ )?(python3? |codegrpo-|make |pip |accelerate |srun |sbatch |export |[A-Z_]+=\S+ )")
SCRIPTS = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
PLAIN_COMMANDS = {"codegrpo-env", "codegrpo-model-path"}  # no Hydra: run as written
# Each Hydra program's config (its @hydra.main's config_name).
CONFIG_NAMES = {
    "codegrpo-train": "train",
    "codegrpo-evaluate": "evaluate",
    "codegrpo-score": "score",
    "codegrpo-validate": "validate",
    "codegrpo-limits": "limits",
    "codegrpo-pass-rates": "pass_rates",
}
STAMP = "2026-01-01_00-00-00"  # what $(date +%F_%H-%M-%S) prints
ENV = {"SLURM_JOB_ID": "4242"}  # the variables a documented command reads from its shell


# -- extraction ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snippet:
    """One documented command (a logical shell line, its continuation lines joined), one shell script (a block
    that starts with #!) or one Python block, at its first line."""

    file: str
    line: int
    kind: str  # "shell", "script" or "python"
    text: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def _blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(line of the first content line, language, lines) of every fenced block; a fence closes on a fence of
    the same character at least as long (so a ````text block may hold ``` lines)."""
    blocks, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        opening = re.match(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)", lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, language = len(opening[1]), opening[2], opening[3].lower()
        body, index = [], index + 1
        while index < len(lines) and not re.fullmatch(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*", lines[index]):
            line = lines[index]
            body.append(line[indent:] if not indent or line[:indent].isspace() else line.lstrip())
            index += 1
        blocks.append((index - len(body) + 1, language, body))
        index += 1
    return blocks


def extract(file: str, text: str | None = None) -> list[Snippet]:
    snippets = []
    for first, language, body in _blocks((PROJECT_ROOT / file).read_text() if text is None else text):
        if language in ("python", "py"):
            snippets.append(Snippet(file, first, "python", "\n".join(body)))
            continue
        content = [(first + i, line) for i, line in enumerate(body) if line.strip()]
        if not content or (
            language not in SHELL_LANGUAGES and not (language == "" and COMMAND_START.match(content[0][1]))
        ):
            continue  # output, a layout, JSON, a config: not a command
        if content[0][1].startswith("#!"):
            snippets.append(Snippet(file, content[0][0], "script", "\n".join(body)))
            continue
        prompted = language == "console" or any(line.startswith("$ ") for _, line in content)
        pending: list[str] = []
        start = 0
        for number, line in content:
            if not pending:
                if prompted and not line.startswith("$ "):
                    continue  # a console block's output
                line = line.removeprefix("$ ")
                if line.lstrip().startswith("#"):
                    continue  # a comment line
                start = number
            pending.append(line)
            if line.rstrip().endswith("\\"):
                continue
            joined = " ".join(part.rstrip().removesuffix("\\").strip() for part in pending)
            snippets.append(Snippet(file, start, "shell", joined))
            pending = []
    return snippets


SNIPPETS = [snippet for file in DOC_FILES for snippet in extract(file)]


def _words(text: str) -> list[str]:
    """A command line's words as the shell splits them (comments dropped; $(...) and $VAR expanded)."""
    text = re.sub(r"\$\(date [^)]*\)", STAMP, text)
    return [os.path.expandvars(w) if "$" in w else w for w in shlex.split(text, comments=True)]


# -- the commands' parts ------------------------------------------------------------------------------------------

# Hydra's own flags that take a value (hydra/_internal/utils.py get_args_parser), and those that print and exit.
HYDRA_VALUE_FLAGS = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--shell-completion",
    "-sc",
    "--info",
    "-i",
}
PRINTS_AND_EXITS = {
    "--cfg",
    "-c",
    "--help",
    "-h",
    "--hydra-help",
    "--info",
    "-i",
    "--shell-completion",
    "-sc",
    "--version",
}


@dataclass
class Command:
    """A documented command line, parsed: its environment assignments, program and arguments."""

    env: dict[str, str]
    program: str  # "codegrpo-train" for python train.py
    args: list[str]
    launcher: list[str] = field(default_factory=list)  # accelerate launch ... / torchrun ... / srun before train.py

    @property
    def flags(self) -> list[str]:
        return [a for a in self.args if a.startswith("-")]

    @property
    def overrides(self) -> list[str]:
        out, skip = [], False
        for arg in self.args:
            if skip:
                skip = False
            elif arg in HYDRA_VALUE_FLAGS:
                skip = arg not in ("--info", "-i")
            elif not arg.startswith("-"):
                out.append(arg)
        return out


def parse(words: list[str]) -> Command | None:
    """The command a shell line runs, or None when it is no Python/codegrpo command (make, pip, export)."""
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    launcher = []
    if words[:1] == ["srun"]:
        launcher, words = words[:1], words[1:]
    if words[:2] == ["accelerate", "launch"] or words[:1] == ["torchrun"]:
        at = words.index("train.py")
        launcher, words = words[:at], ["python", *words[at:]]
    if words[:2] in (["python", "train.py"], ["python3", "train.py"]):
        return Command(env, "codegrpo-train", words[2:], launcher)
    if words and words[0] in SCRIPTS:
        return Command(env, words[0], words[1:], launcher)
    return None


def program_argv(program: str) -> list[str]:
    """How to start a console script: its installed executable, or its module from this interpreter."""
    if program == "codegrpo-train":
        return [sys.executable, str(PROJECT_ROOT / "train.py")]
    installed = Path(sys.executable).parent / program
    if installed.is_file():
        return [str(installed)]
    module, _, function = SCRIPTS[program].partition(":")
    return [
        sys.executable,
        "-c",
        f"import sys; sys.argv[0] = {program!r}; from {module} import {function}; {function}()",
    ]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a user's shell has here: no keys or tokens, no pinned run dir, the variables above."""
    dropped = ("WANDB_API_KEY", "SUPERSERVE_API_KEY", "HF_TOKEN", "CODEGRPO_RUN_DIR", "HYDRA_FULL_ERROR")
    return {k: v for k, v in os.environ.items() if k not in dropped} | ENV | (extra or {})


def launch(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 900
) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment(env))


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """A --multirun's jobs: every combination of its sweeps' values (Hydra refuses --cfg with --multirun)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    choices = []
    for raw, parsed in zip(overrides, OverridesParser.create().parse_overrides(overrides), strict=True):
        if parsed.is_sweep_override():
            key = raw.split("=", 1)[0]
            choices.append([f"{key}={value}" for value in parsed.sweep_string_iterator()])
        else:
            choices.append([raw])
    return [list(job) for job in itertools.product(*choices)]


# -- placeholders and the files a command names -------------------------------------------------------------------


def _copy_problems(source: str, target: Path, limit: int | None = None) -> None:
    lines = (PROJECT_ROOT / "problems" / source).read_text().splitlines(keepends=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines[:limit]))


def _completions(target: Path) -> None:
    problem = json.loads((PROJECT_ROOT / "problems" / "basics.jsonl").read_text().splitlines()[0])
    rows = [
        {"problem_id": problem["id"], "completion": f"```python\n{problem['reference']}\n```"},
        {"problem_id": problem["id"], "completion": "print(1)"},
    ]
    target.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _reward_module(root: Path) -> None:
    (root / "mypkg").mkdir(exist_ok=True)
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "rewards.py").write_text(
        "def brevity(completions, **columns):\n    return [-len(str(c)) / 1000 for c in completions]\n"
    )


def _recorded_run(run_dir: Path, overrides: list[str]) -> None:
    """A run dir's record as train.py writes it (.hydra/), for composing a command that names a run."""
    (run_dir / ".hydra").mkdir(parents=True, exist_ok=True)
    (run_dir / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (run_dir / ".hydra" / "hydra.yaml").write_text(
        yaml.safe_dump({"hydra": {"job": {"config_name": "train"}, "runtime": {"config_sources": []}}})
    )


class Workspace:
    """The directory a command runs in (the user's project), with what its placeholders and files name.

    ``runs`` is None when the command is only composed: a named run is then its record alone. Otherwise a named
    run is a real one: the tiny run of the documented ``python train.py debug=fast``, with the eval files of the
    documented ``experiment=learn_cpu evaluation.before=true evaluation.after=true`` and, as its final_model,
    the offline model's directory (the same layout: a tiny run saves no 517 MB model)."""

    def __init__(self, root: Path, runs: Runs | None):
        self.root, self.runs, self.env = root, runs, {}
        root.mkdir(parents=True, exist_ok=True)

    def run_dir(self) -> Path:
        target = self.root / "outputs" / "runs" / "demo"
        if target.exists():
            return target
        if self.runs is None:
            _recorded_run(target, ["debug=fast"])
            (target / "final_model").mkdir()
            return target
        source = self.runs.documented_run("python train.py debug=fast")
        shutil.copytree(source, target, symlinks=True)
        for name in ("eval_before.json", "eval_after.json"):
            self.eval_file(target / name)
        if not (target / "final_model").exists():
            import codegrpo

            (target / "final_model").symlink_to(codegrpo.offline_model())
        return target

    def final_model(self, name: str) -> str:
        """A run's final_model, as the documented training command before it writes it: the offline model's
        directory (the same layout; a tiny run saves no model)."""
        target = self.root / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            if self.runs is None:
                target.mkdir()
            else:
                import codegrpo

                target.symlink_to(codegrpo.offline_model())
        return name

    def eval_file(self, target: Path) -> None:
        if self.runs is not None and not target.exists():
            source = self.runs.documented_run("python train.py experiment=learn_cpu evaluation.before=true")
            shutil.copy(source / target.name, target)

    def rates(self) -> Path:
        target = self.root / "outputs" / "pass_rates" / "demo" / "pass_rates.jsonl"
        if self.runs is not None and not target.exists():
            source = self.runs.documented_run("codegrpo-pass-rates problems=basics")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / "pass_rates.jsonl", target)
        return target


def _made(ws: Workspace, path: Path) -> str:
    return str(path.relative_to(ws.root)) if path.is_relative_to(ws.root) else str(path)


# (pattern, what it becomes: the text in its place, with the files it names made in the workspace).
PROPS: list[tuple[str, Any]] = [
    (r"outputs/pass_rates/<run>/pass_rates\.jsonl", lambda ws, m: _made(ws, ws.rates())),
    (r"(?:outputs/runs/)?<run>", lambda ws, m: _made(ws, ws.run_dir())),
    (r"outputs/runs/[\w.-]+/final_model", lambda ws, m: ws.final_model(m[0])),  # the run the line above trains
    (
        r"<the run's overrides>",
        lambda ws, m: " ".join(yaml.safe_load((ws.run_dir() / ".hydra" / "overrides.yaml").read_text())),
    ),
    (r"(?<![\w/.])eval_(?:before|after)\.json", lambda ws, m: ws.eval_file(ws.root / m[0]) or m[0]),
    (
        r"/data/my_problems\.jsonl",
        lambda ws, m: (
            _copy_problems("trivial.jsonl", ws.root / "my_problems.jsonl") or str(ws.root / "my_problems.jsonl")
        ),
    ),  # an absolute path of the user's: one in the workspace
    (r"(?<![\w/.])my\.jsonl", lambda ws, m: _copy_problems("trivial.jsonl", ws.root / m[0]) or m[0]),
    (r"(?<![\w/.])completions\.jsonl", lambda ws, m: _completions(ws.root / m[0]) or m[0]),
    (
        r"problems/basics_learnable\.jsonl",
        lambda ws, m: _copy_problems("basics.jsonl", ws.root / m[0], limit=4) or m[0],
    ),
    (
        r"mypkg\.rewards:brevity",
        lambda ws, m: _reward_module(ws.root) or ws.env.update(PYTHONPATH=str(ws.root)) or m[0],
    ),  # the user's own module, importable where they stand
    (r"<p>", lambda ws, m: "debug"),  # a SLURM partition (composed only)
]
# Files a command reads that only a command of NEEDS writes: it is composed, as that one is.
UNAVAILABLE = {"outputs/taco_filtered.jsonl": "written by the documented codegrpo-validate on TACO, a Hub dataset"}


def prepare(snippet_text: str, ws: Workspace) -> str:
    """The command's text with its placeholders replaced by what the workspace holds."""
    text = snippet_text
    for pattern, make in PROPS:
        text = re.sub(pattern, lambda match, make=make: make(ws, match), text)
    leftover = re.findall(r"<[^<>]*>", text.split(" #")[0])
    assert not leftover, f"placeholder {leftover} has no entry in PROPS: add what it becomes here"
    return text


# -- classification -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    how: str  # "run" (at a tiny scale, slow), "run-as-written" (cheap), "compose" (--cfg job only),
    #           "covered" (another test runs it), "exception" (EXCEPTIONS)
    reason: str
    test: str = ""  # "tests/<file>.py::<function>" for "covered", and for composed commands another test runs


# Commands that are neither Hydra's nor cheap to run as written, by pattern: (pattern, reason, check).
# The check is what can be checked here: "make:<target>" (make -n knows it), "file:<path>" (it exists),
# "compile" (a Python block compiles and its imports resolve).
EXCEPTIONS: list[tuple[str, str, str]] = [
    (
        r"^make (train|test)\b",
        "sets up a machine (apt-get bubblewrap as root, a venv, torch, the project): the suite "
        "runs in what it builds; make test is this suite, and make train's training is python train.py (README)",
        "make",
    ),
    (r"^make bench\b", "the benchmarks take tens of minutes; tests/ cover what each measures", "make"),
    (
        r"^python -m benchmarks\.bench\b",
        "a benchmark runs for minutes; tests/test_bench.py runs each section small",
        "",
    ),
    (r"^pip install ", "installs from a package index; the venv this suite runs in is what it builds", ""),
    (
        r"^export SUPERSERVE_API_KEY=",
        "a real Superserve key (sandbox=superserve is composed below; the sandbox runs "
        "against the fake Superserve API in tests/sandbox/)",
        "",
    ),
    (r"^from superserve import ", "the Superserve SDK against a real account (templates, live sandboxes)", "compile"),
    (
        r"^(RAY_AUTH_MODE=token )?ray start ",
        "starts a node of a Ray cluster that outlives the command; tests/sandbox/test_ray_cluster.py starts Ray "
        "itself and runs sandbox=ray on it",
        "",
    ),
]
# Commands another test already runs verbatim (a Python block the test reads from the README).
COVERED: list[tuple[str, str, str]] = [
    (
        r'model="Qwen/Qwen2.5-0.5B-Instruct"',
        "the guide's script as it is: a Hub model trained 50 steps (a GPU's); the "
        "test checks it is the guide's with one import changed, and runs the CPU version (the next block)",
        "tests/reward/test_code_reward.py::test_the_readme_script_is_the_guides_with_one_import_changed",
    ),
    (
        r"model=codegrpo\.offline_model\(\)",
        "run verbatim in an empty directory: the library on a laptop (slow)",
        "tests/reward/test_code_reward.py::test_the_readmes_laptop_script_trains_as_it_is_written",
    ),
]
# Why a composed config cannot run here, read from the config itself: (what it needs, the test, if any, that
# runs the same thing offline).
NEEDS = {
    "multirun": (
        "a sweep (Hydra refuses --cfg with --multirun: each job composes)",
        "tests/test_experiments.py::test_two_job_multirun_offline",
    ),
    "slurm": (
        "a SLURM cluster (the submitit launcher)",
        "tests/test_workflow.py::test_hparams_search_and_slurm_launcher_compose",
    ),
    "hub-model": (
        "a model from the Hugging Face Hub",
        "tests/tasks/test_train.py::test_mission_example_starts_and_fails_clearly_without_the_hub",
    ),
    "hub-data": (
        "a dataset from the Hugging Face Hub, or its files (data_files) that are not on this machine",
        "tests/data/test_public_datasets.py",
    ),
    "push": ("an upload to the Hugging Face Hub", "tests/models/test_hub.py"),
    "gpu": ("a GPU (trainer.use_cpu=false)", "tests/training/test_devices.py"),
    "vllm": ("vLLM on a GPU (evaluation.backend=vllm)", "tests/evaluation/test_vllm_engine.py"),
    "superserve": ("a real Superserve key and network", "tests/sandbox/"),
    "ray-cluster": (
        "a Ray cluster begun with ray start (sandbox.address=local runs here)",
        "tests/sandbox/test_ray_cluster.py",
    ),
    "resume": (
        "a run's checkpoint (1.6 GB for the offline model); resume=auto from one",
        "tests/test_workflow.py::test_same_seed_same_first_step_reproducibility_record_and_resume_auto",
    ),
    "file": ("a file only a composed command writes", ""),
}


def _hub_model(name: str, ws: Path) -> bool:
    """A Hub id (org/name) that is no directory here or where the command stands."""
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+", name)) and not (ws / name).exists() and not Path(name).exists()


def needs(command: Command, composed: dict[str, Any], ws: Path) -> str | None:
    """What of NEEDS the composed config needs, or None when it runs here."""
    if "--multirun" in command.flags or "-m" in command.flags:
        return "slurm" if any("submitit" in o for o in command.overrides) else "multirun"
    if command.launcher[:1] == ["srun"]:
        return "slurm"
    if composed.get("evaluation", {}).get("backend") == "vllm":
        return "vllm"
    model = composed.get("model", {})
    named = [model.get("name_or_path") or "", str(composed.get("checkpoint") or "")]
    compare = composed.get("compare") or []
    named += [str(c) for c in compare if not str(c).endswith(".json")]
    if any(_hub_model(str(name or ""), ws) for name in named):
        return "hub-model"
    problems = composed.get("problems", {})
    if problems.get("hub_path"):
        files = problems.get("data_files")
        patterns = [files] if isinstance(files, str) else list(files or [])
        if not patterns or not all(list(Path("/").glob(p.lstrip("/"))) for p in patterns):
            return "hub-data"
    trainer = composed.get("trainer", {})
    if trainer.get("push_to_hub"):
        return "push"
    if "use_cpu" in trainer and not trainer["use_cpu"]:
        return "gpu"
    sandbox = composed.get("sandbox", {})
    if "superserve" in str(sandbox.get("_target_", "")).lower():
        return "superserve"
    if "ray_cluster" in str(sandbox.get("_target_", "")) and sandbox.get("address") != "local":
        return "ray-cluster"
    if composed.get("resume"):
        return "resume"
    for path in (problems.get("path"), composed.get("completions"), composed.get("rates")):
        if path in UNAVAILABLE:
            return "file"
    return None


def classify_fixed(snippet: Snippet) -> Plan | None:
    """The plan that needs no composing: tables, scripts, non-Hydra commands; None for a Hydra command."""
    for pattern, reason, test in COVERED:
        if snippet.kind == "python" and re.search(pattern, snippet.text):
            return Plan("covered", reason, test)
    for pattern, reason, _ in EXCEPTIONS:
        if re.search(pattern, snippet.text, re.MULTILINE):
            return Plan("exception", reason)
    if snippet.kind == "python":
        return Plan(
            "run-as-written",
            "a Python snippet: runs in an empty directory; a `# text` after a print is the output it must print",
        )
    if snippet.kind == "script":
        if "#SBATCH" in snippet.text:
            return Plan("compose", "a SLURM batch script: its srun command composes (SLURM itself is not here)")
        return None
    command = parse(_words(re.sub(r"<[^<>]*>", "X", snippet.text)))  # its shape: placeholders are made later
    if command is None:
        return None
    if command.program in PLAIN_COMMANDS:
        return Plan("run-as-written", "not a Hydra command, cheap: runs as written")
    if set(command.flags) & PRINTS_AND_EXITS:
        return Plan("run-as-written", "prints (help, the composed config) and exits: runs as written")
    return Plan("hydra", "")


def snippet_command(snippet: Snippet) -> Command:
    """The Hydra command of a shell line, or of a batch script's srun line."""
    if snippet.kind == "script":
        [line] = [line for line in snippet.text.splitlines() if line.startswith("srun ")]
        command = parse(_words(line))
    else:
        command = parse(_words(snippet.text))
    assert command is not None
    return command


def compose(command: Command, ws: Workspace) -> list[dict[str, Any]]:
    """Compose the command as written (each job of a sweep), --cfg job in its workspace; the configs."""
    if command.launcher[:2] == ["accelerate", "launch"]:
        config_file = command.launcher[command.launcher.index("--config_file") + 1]
        assert (PROJECT_ROOT / config_file).is_file(), f"{config_file}: no such launch config"
    sweep = "--multirun" in command.flags or "-m" in command.flags
    args = [a for a in command.args if a not in ("--multirun", "-m")]
    if sweep:
        flags = [a for a in args if a.startswith("-")]
        jobs = [flags + job for job in sweep_jobs(command.overrides)]
    else:
        jobs = [args]
    composed = []
    for job in jobs:
        config = composed_as_written(command.program, job, ws.root, {**command.env, **ws.env})
        config.pop("hydra")
        composed.append(config)
    return composed


def composed_as_written(program: str, args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """What ``program args --cfg all`` prints (the job's config and Hydra's own node): Hydra's compose API on the
    command's config and overrides, in this process, where a fresh interpreter took 2.6 s a command (the console
    script adds nothing to composing: each program starts in the slow test). A repeat (rerun=, which the script
    reads into its record's config dir and overrides before Hydra starts) composes in its own process."""
    if any(a.startswith("rerun=") for a in args):
        done = launch([*program_argv(program), *args, "--cfg", "all"], cwd, env, timeout=120)
        assert done.returncode == 0, f"{' '.join(args)} --cfg all failed:\n{done.stderr[-3000:]}"
        return yaml.safe_load(done.stdout)
    overrides = [a for a in args if not a.startswith("-")]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            config = hydra_compose(config_name=CONFIG_NAMES[program], overrides=overrides, return_hydra_config=True)
    except Exception as error:  # the command with the error a user would see
        raise AssertionError(f"{' '.join(args)} does not compose: {error}") from error
    finally:
        GlobalHydra.instance().clear()
    container = OmegaConf.to_container(config)
    assert isinstance(container, dict)
    return container


def classify(snippet: Snippet, ws: Workspace) -> tuple[Plan, Command | None, list[dict[str, Any]]]:
    """(the plan, the Hydra command with its placeholders made, its composed configs) of a snippet: a Hydra
    command is composed as written, and what it needs is read from its config."""
    plan = classify_fixed(snippet)
    assert plan is not None, (
        f"{snippet.id}: `{snippet.text}` matches no rule: run it here (a Hydra or codegrpo command), or add it to "
        "EXCEPTIONS or COVERED with the reason it cannot run"
    )
    if plan.how not in ("hydra", "compose"):
        return plan, None, []
    text = prepare(snippet.text, ws)
    command = snippet_command(Snippet(snippet.file, snippet.line, snippet.kind, text))
    configs = compose(command, ws)
    if plan.how == "compose":
        return plan, command, configs
    needed = {needs(command, config, ws.root) for config in configs} - {None}
    if needed:
        reason, test = NEEDS[sorted(needed)[0]]
        return Plan("compose", f"needs {reason}", test), command, configs
    return Plan("run", "runs at a tiny scale"), command, configs


# -- running at a tiny scale --------------------------------------------------------------------------------------

TINY_TRAIN = [
    "trainer.max_steps=1",
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=2",
    "trainer.gradient_accumulation_steps=1",
    "trainer.save_strategy=no",
    "save_model=false",
    "problems.limit=2",
    "plots=false",
    "evaluation.limit=1",
    "evaluation.num_samples=1",
    "evaluation.max_new_tokens=16",
]
TINY_EVALUATE = ["evaluation.limit=1", "evaluation.max_new_tokens=16"]
TINY_PASS_RATES = ["problems.limit=2", "evaluation.max_new_tokens=16"]


def tiny(command: Command, config: dict[str, Any], run_dir: Path) -> list[str]:
    """The overrides appended to a command to run it at a tiny scale (they win over the documented ones)."""
    given = command.overrides
    if command.program == "codegrpo-train":
        if any(o.startswith("rerun=") for o in given):
            return [f"hydra.run.dir={run_dir}"]  # the run it repeats is a tiny one
        feedback = config.get("rollout", {}).get("kind") == "feedback"
        # Under rollout=feedback the episode's budget follows the turn's cap (trainer.generation_kwargs).
        length = "trainer.generation_kwargs={max_new_tokens:16}" if feedback else "trainer.max_completion_length=16"
        logger = [] if any(o.startswith("logger=") for o in given) else ["logger=none"]
        return [*TINY_TRAIN, length, *logger, *tiny_model_overrides(), f"hydra.run.dir={run_dir}"]
    if command.program == "codegrpo-evaluate":
        # A checkpoint (a tiny run's) or two eval files are what it evaluates; else the model group's model.
        model = [] if any(o.startswith(("checkpoint=", "compare=")) for o in given) else tiny_model_overrides()
        return [*TINY_EVALUATE, *model, f"hydra.run.dir={run_dir}"]
    if command.program == "codegrpo-pass-rates":
        return [*TINY_PASS_RATES, *tiny_model_overrides(), f"hydra.run.dir={run_dir}"]
    return []  # score, validate, limits: cheap as they are


@dataclass
class Done:
    process: subprocess.CompletedProcess
    run_dir: Path
    config: dict[str, Any]  # the tiny run's composed config


class Runs:
    """The tiny runs of the session: one run per program and distinct set of group choices (model=, problems=,
    reward=, sandbox=, trainer=, rollout=, sampler=, peft=, experiment=, debug=, ...). A command whose choices a
    run already had is that run: its own values (a learning rate, evaluation.after, a reward function) were
    checked when it composed as written, and the suite runs each code path once, within its time budget. A
    repeat (rerun=) is compared with repeats only; a run another command reads (documented_run) is its own."""

    def __init__(self, root: Path):
        self.root, self.done, self.runs, self.own = root, {}, [], set()

    def run(self, snippet: Snippet, own: bool = False) -> Done:
        if snippet.id in self.done and (not own or snippet.id in self.own):
            return self.done[snippet.id]
        ws = Workspace(self.root / re.sub(r"\W", "_", snippet.id), self)
        plan, command, configs = classify(snippet, ws)
        assert plan.how == "run" and command is not None, f"{snippet.id} does not run here: {plan.reason}"
        run_dir = ws.root / "run"
        overrides = [*command.args, *tiny(command, configs[0], run_dir)]
        argv = [*program_argv(command.program), *overrides]
        env = {**command.env, **ws.env}
        config = composed_as_written(command.program, overrides, ws.root, env)
        choices = {k: v for k, v in config.pop("hydra")["runtime"]["choices"].items() if not k.startswith("hydra/")}
        kind = (command.program, any(a.startswith("rerun=") for a in argv), tuple(sorted(choices.items())))
        if not own:
            for other_kind, done in self.runs:
                if other_kind == kind:
                    self.done[snippet.id] = done  # another documented command's run, with the same groups
                    return done
        process = launch(argv, ws.root, env)
        assert process.returncode == 0, f"{snippet.id}: {' '.join(argv[1:])}\n{process.stderr[-4000:]}"
        self.done[snippet.id] = Done(process, run_dir, config)
        self.own.add(snippet.id)
        self.runs.append((kind, self.done[snippet.id]))
        return self.done[snippet.id]

    def documented_run(self, prefix: str) -> Path:
        """The run dir of the documented command that starts with ``prefix`` (run once, at a tiny scale)."""
        found = [s for s in SNIPPETS if s.kind == "shell" and s.text.startswith(prefix)]
        assert found, f"no documented command starts with `{prefix}`: the docs changed, update this test"
        return self.run(found[0], own=True).run_dir


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("documented"))


def _test_exists(node: str) -> None:
    """A test named by a plan exists (read, not imported: no test module imports another)."""
    path, _, function = node.partition("::")
    assert (PROJECT_ROOT / path).exists(), f"{path} does not exist"
    if function:
        tree = ast.parse((PROJECT_ROOT / path).read_text())
        assert function in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}, node


# -- the tests ----------------------------------------------------------------------------------------------------

IDS = [s.id for s in SNIPPETS]
ANCHORS = {  # the commands the issue names: found in the docs, and run
    "--resolve": "python train.py --cfg job --resolve",
    "multi-turn": "python train.py problems=feedback rollout=feedback",
    "repeat": "python train.py rerun=outputs/runs/<run>",
}


def test_the_docs_commands_are_found():
    texts = [s.text.split(" #")[0].strip() for s in SNIPPETS]
    for name, text in ANCHORS.items():
        assert text in texts, f"the {name} command is not found in the docs' code blocks"
    assert len({s.id for s in SNIPPETS}) == len(SNIPPETS) and len(SNIPPETS) > 40
    library = [s for s in SNIPPETS if s.kind == "python" and "model=codegrpo.offline_model()" in s.text]
    assert library and classify_fixed(library[0]).how == "covered"
    # a fence inside a block of a longer fence, an indented block, a console block and a bare block
    sample = (
        "````text\n```\nx\n```\n````\n  ```python\n  print(1)\n  ```\n```console\n$ codegrpo-env\nout\n```\n"
        "```\npython train.py a=1 \\\n    b=2   # c\n```\n```\nconf/  the configs\n```\n"
    )
    found = [(s.kind, s.text) for s in extract("probe.md", sample)]
    assert found == [("python", "print(1)"), ("shell", "codegrpo-env"), ("shell", "python train.py a=1 b=2   # c")]


def test_every_named_test_exists():
    for _, _, node in COVERED:
        _test_exists(node)
    for _, node in NEEDS.values():
        if node:
            _test_exists(node)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=IDS)
def test_documented_command_is_classified_and_composes(snippet, tmp_path):
    """Fast: every command matches a rule; a Hydra command composes as written (--cfg job); a command that only
    prints runs as written; an exception's check holds."""
    ws = Workspace(tmp_path / "ws", None)
    plan, _, _ = classify(snippet, ws)
    if plan.test:
        _test_exists(plan.test)
    if plan.how == "exception":
        check = next(c for p, _, c in EXCEPTIONS if re.search(p, snippet.text, re.MULTILINE))
        if check == "make":
            target = snippet.text.split()[1]
            done = subprocess.run(["make", "-n", target], cwd=PROJECT_ROOT, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        elif check == "compile":
            _compiles_and_imports(snippet.text)
    elif plan.how == "run-as-written" and snippet.kind == "shell":
        parsed = parse(_words(snippet.text))
        assert parsed is not None
        if parsed.program in PLAIN_COMMANDS:
            return  # imports torch: seconds, in the slow part
        done = launch([*program_argv(parsed.program), *parsed.args], ws.root, parsed.env, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip() and "Traceback" not in done.stderr


# pyproject.toml's extras that [dev] does not bring (vllm, deepspeed): a snippet may import them.
OPTIONAL_EXTRAS = {"vllm", "deepspeed"}


def _compiles_and_imports(code: str) -> None:
    import importlib

    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            try:
                module = importlib.import_module(node.module)
            except ImportError:
                if node.module.partition(".")[0] in OPTIONAL_EXTRAS:
                    continue  # an optional extra not installed here
                raise
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"


def _check_run(snippet: Snippet, command: Command, done: Done) -> None:
    """What a tiny run leaves, by command."""
    if command.program == "codegrpo-train":
        steps = [r for r in json.loads((done.run_dir / "log_history.json").read_text()) if "reward" in r]
        assert len(steps) == 1 and "Traceback" not in done.process.stderr
        if done.config.get("rollout", {}).get("kind") == "feedback":
            # The README's multi-turn command used to stop at turn 1: its budget held no second turn. An episode
            # ends at turn 1 only when its code passes every public test.
            row = steps[0]
            assert row.get("feedback/cut_first_turn", 0.0) < 1, row
            assert row["feedback/turns"] > 1 or row["feedback/public_pass/turn_1"] == 1.0, row
    elif command.program == "codegrpo-evaluate":
        assert {"eval.json", "comparison.json"} & {p.name for p in done.run_dir.iterdir()}
    elif command.program == "codegrpo-pass-rates":
        assert "kept " in done.process.stdout
    elif command.program == "codegrpo-score":
        lines = [json.loads(line) for line in done.process.stdout.splitlines() if line.startswith("{")]
        assert len(lines) == 2 and lines[0]["reward"] == 1.0, done.process.stdout


def _may_run(snippet: Snippet) -> bool:
    """Not settled by the fast test: a Hydra command (it runs unless its config needs what is not here), a
    Python snippet run as written, a plain command (codegrpo-env)."""
    plan = classify_fixed(snippet)
    if plan is None or plan.how in ("exception", "covered", "compose"):
        return False
    return plan.how == "hydra" or snippet.kind == "python" or snippet.text.split()[0] in PLAIN_COMMANDS


SLOW = [s for s in SNIPPETS if _may_run(s)]


@pytest.mark.slow
@pytest.mark.parametrize("snippet", SLOW, ids=[s.id for s in SLOW])
def test_documented_command_runs(snippet, runs, tmp_path):
    """Slow: the command runs at a tiny scale (or as written), exit 0, and leaves what it says."""
    plan = classify_fixed(snippet)
    assert plan is not None
    if plan.how == "run-as-written":
        ws = tmp_path / "ws"
        ws.mkdir()
        if snippet.kind == "python":
            done = launch([sys.executable, "-c", snippet.text], ws, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            for expected in re.findall(r"^\s*print\(.*\)\s*#\s*(.+)$", snippet.text, re.MULTILINE):
                assert expected.strip() in done.stdout, (expected, done.stdout)
            return
        parsed = parse(_words(snippet.text))
        assert parsed is not None
        done = launch([*program_argv(parsed.program), *parsed.args], ws, parsed.env, timeout=300)
        assert done.returncode == 0 and done.stdout.strip(), done.stderr[-3000:]
        return
    plan, command, _ = classify(snippet, Workspace(tmp_path / "probe", None))
    if plan.how != "run":
        pytest.skip(f"{plan.how}: {plan.reason}")
    assert command is not None
    _check_run(snippet, command, runs.run(snippet))
