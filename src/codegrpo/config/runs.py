"""Each command's whole config, its groups and its own settings; what they share; a config as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, cast

from codegrpo.config.choices import GenerationBackend, Protocol, RecipeScale
from codegrpo.config.eval_protocol import ProtocolConfig
from codegrpo.config.evaluation import EvaluationConfig
from codegrpo.config.logger import LoggerConfig
from codegrpo.config.model import ModelConfig
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.config.reward import RewardConfig
from codegrpo.config.rollout import RolloutConfig, check_episode_budget
from codegrpo.config.sampler import SamplerConfig
from codegrpo.config.sandbox import SandboxConfig
from codegrpo.config.trainer import LoraSchema, TrainerConfig
from codegrpo.config.values import MISSING
from codegrpo.errors import UsageError

# Each command's run dir: Hydra's output dir, or under `--cfg job --resolve` the one a run would get (run_dir).
RUN_DIR = "${codegrpo_run_dir:${hydra:runtime.output_dir},${hydra:run.dir}}"

BASE_CHECKPOINT = "base"  # checkpoint=base, compare=[base, ...]: the model group's own weights


def saved_dir(checkpoint: str | None) -> str | None:
    """The saved model dir ``checkpoint`` names, or None where it names the model group's base (none, or "base")."""
    return None if not checkpoint or checkpoint == BASE_CHECKPOINT else checkpoint


@dataclass
class PreemptionConfig:
    """What a signal during training does (codegrpo.training.preemption): finish the optimizer step, save a
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
class ModelGroups:
    """The groups every command that samples a model composes (train, evaluate, pass-rates), first and in this order."""

    model: ModelConfig = MISSING
    problems: ProblemsConfig = MISSING
    reward: RewardConfig = MISSING
    sandbox: SandboxConfig = MISSING


@dataclass
class TrainConfig(ModelGroups):
    # Composed from its group's schema, grpo_schema.GRPOTrainerConfig: every trl.GRPOConfig field but output_dir
    # and seed, a subclass of TrainerConfig, which types the fields codegrpo reads.
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
class EvaluateConfig(ModelGroups):
    """The evaluate command: a base model (model group) or a run's checkpoint."""

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
class PassRatesConfig(ModelGroups):
    """codegrpo-pass-rates: each problem's pass rate over evaluation.num_samples samples of a model, and the
    problems with lo < rate < hi (the ones GRPO can learn from) as a problem file."""

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


def to_plain(cfg: Any) -> dict[str, Any]:
    """A typed config as plain data (enums as strings): for W&B, model cards and YAML."""
    from omegaconf import OmegaConf  # the tasks' and the run records' alone: the library path has no OmegaConf

    return cast(dict[str, Any], OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True, enum_to_str=True))
