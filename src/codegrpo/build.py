"""The composition root: every piece of a run is built here, from the typed config, and nowhere else.

    problems(cfg.problems)            the problem set, loaded and validated
    eval_problems(cfg)                the problems an evaluation scores (held out by default); eval_tasks(cfg): the
                                      repository tasks of an agents' evaluation (rollout=tools)
    check_evaluate(cfg, items)        an evaluation's checkpoints (and eval files), checked before anything loads
    sandbox(cfg.sandbox, language)    the backend that ``sandbox._target_`` names; open it with
                                      ``with`` / ``async with``, which checks it works and closes it
    scorer(cfg, problems, sandbox)    completions -> programs -> sandbox -> verdicts
    model(cfg.model)                  the model and tokenizer (a checkpoint in place of the model group)
    tracking(cfg, run_dir, job_type)  the W&B run, or None (train_tracking: a training run's, resumed or swept)
    dataset(problems, cfg.problems)   the prompts and test columns GRPOTrainer samples from
    sides(cfg, problems)              what the model may see and what the reward scores (rollout=feedback)
    check_reward_functions(cfg)       reward.functions, their args and weights, checked before the run starts
    sampler_state(cfg, ids)           the sampler's pass rates, fed by the rewards' verdicts (resumed from a checkpoint)
    reward_functions(cfg, scorer)     reward.functions and their weights (codegrpo.reward.functions checks each)
    rollout(cfg, public, scorer)      rollout=feedback's rollout_func (codegrpo.training.rollout_func), or None
    grpo_config(cfg, run_dir)         trl.GRPOConfig from the trainer group
    trainer(cfg, ...)                 the GRPOTrainer over all of the above (training/trl_adapter.py: TRL's adapter)

A training run (codegrpo.tasks.train) adds its own steps, in this order:

    check_train(cfg, ranks)           every check that fails in a second, before anything loads: one line each
    training_set(cfg, ranks, main)    the training problems (a paper recipe names its CPU twin if it cannot load),
                                      or under rollout=tools the repository tasks (repo_tasks)
    resume(cfg, run_dir, sha256)      the checkpoint a run resumes from, checked against this run, or None
    run_sandbox(cfg, ranks)           ``sandbox``, set up for workspaces under rollout=tools
    rewards(cfg, training, sandbox)   what judges the run: the sides, scorer, reward functions, sampler, rollout;
                                      under rollout=tools the agents' environments and their judge
    training_args(cfg, run_dir, ...)  trl.GRPOConfig, with the batch checked against the problems and the sampler

The tasks (codegrpo.tasks) call these; nothing else assembles a run, and what they build is handed on.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegrpo.config.choices import (
    GenerationBackend,
    LanguageName,
    Loader,
    LoggerBackend,
    RewardKind,
    RolloutKind,
    SamplerKind,
    Split,
)
from codegrpo.config.evaluation import EvaluationConfig
from codegrpo.config.model import ModelConfig
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.config.rollout import check_episode_budget
from codegrpo.config.runs import EvaluateConfig, PassRatesConfig, ScoreConfig, TrainConfig, saved_dir, to_plain
from codegrpo.config.sandbox import SandboxConfig
from codegrpo.config.trainer import check_trainer
from codegrpo.config.trainer_fields import current_names
from codegrpo.data.files import load_problems
from codegrpo.data.problems import Problem
from codegrpo.data.prompts import messages_for
from codegrpo.data.public_tests import Sides, sides_of
from codegrpo.data.repo_tasks import RepoTask, load_repo_tasks, task_set_hash
from codegrpo.data.sets import load_problem_set, problem_set_hash, select_split
from codegrpo.errors import UsageError
from codegrpo.reward import functions as reward_entries
from codegrpo.reward import metric_names as keys
from codegrpo.reward.checker import same_test
from codegrpo.reward.metric_names import CODE_REWARD, HACK_PENALTY
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer, make_scorer
from codegrpo.reward.shared_batch import Observer, SharedBatch
from codegrpo.sandbox.base import SandboxBackend, make_backend
from codegrpo.tracking import wandb_run as tracking_runs

if TYPE_CHECKING:  # imported where used: the scoring commands load neither
    from datasets import Dataset
    from transformers import PreTrainedModel, PreTrainedTokenizerBase
    from trl import GRPOConfig
    from wandb.sdk.wandb_run import Run

    from codegrpo.agents.environment import Session
    from codegrpo.training.preemption import Guard
    from codegrpo.training.sampling import Online
    from codegrpo.training.trl_adapter import CodeGRPOTrainer

log = logging.getLogger(__name__)


def problems(cfg: ProblemsConfig) -> list[Problem]:
    return load_problem_set(cfg)


def eval_problems(cfg: TrainConfig | EvaluateConfig) -> list[Problem]:
    """``evaluation.problems_path``, or by default the training problem set's ``evaluation.split`` (its
    held-out eval split), then ``evaluation.limit``."""
    settings = cfg.evaluation
    if settings.problems_path:
        loaded = load_problems(settings.problems_path, language=cfg.problems.language)
        found = select_split(loaded, settings.split, cfg.problems.eval_fraction)
    else:
        found = load_problem_set(dataclasses.replace(cfg.problems, split=settings.split, limit=None))
        if settings.split is not Split.all and cfg.problems.split in (Split.all, settings.split):
            log.warning(
                "the eval problems (split %s) overlap the training problems (problems.split=%s): "
                "set problems.split=train for a held-out evaluation",
                settings.split,
                cfg.problems.split,
            )
    return found[: settings.limit]


def eval_tasks(cfg: EvaluateConfig) -> list[RepoTask]:
    """The repository tasks an agents' evaluation plays (rollout=tools): ``evaluation.split`` of problems.path's
    tasks, then ``evaluation.limit``."""
    settings = cfg.evaluation
    return repo_tasks(dataclasses.replace(cfg.problems, split=settings.split, limit=None))[: settings.limit]


def share_concurrency(value: int, ranks: int) -> int:
    """One of ``ranks`` training processes' share of ``sandbox.max_concurrency`` (at least 1)."""
    return max(1, value // ranks)


def sandbox(cfg: SandboxConfig, language: LanguageName = LanguageName.python, ranks: int = 1) -> SandboxBackend:
    """The backend ``cfg._target_`` names, with this rank's share of the concurrency cap (all of it where the
    backend's cap is the whole job's: sandbox=ray). Raises SandboxFatalError if it cannot work here; opening it
    runs a trivial program of ``language``."""
    if not cfg.cap_is_the_jobs:
        cfg = dataclasses.replace(cfg, max_concurrency=share_concurrency(cfg.max_concurrency, ranks))
    return make_backend(cfg, get_language(language).runtime)


def scorer(
    cfg: TrainConfig | EvaluateConfig | ScoreConfig | PassRatesConfig,
    problem_set: list[Problem],
    backend: SandboxBackend,
    kind: RewardKind | None = None,
) -> Scorer:
    """A Scorer of ``problem_set`` through ``backend``, as ``cfg.reward`` says (``kind`` overrides it:
    evaluation is always binary)."""
    reward = dataclasses.replace(cfg.reward, kind=kind) if kind else cfg.reward
    return make_scorer(problem_set, backend, cfg.problems.language, reward, cfg.sandbox.timeout_s)


def model(
    cfg: ModelConfig, checkpoint: str | None = None, bf16: bool = False, tools: bool = False
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """(model, tokenizer) of the model group, or of ``checkpoint`` (a saved dir; "base" is the group's); with
    ``tools``, a chat template that renders tool calls where model.chat_template=auto."""
    from codegrpo.models.loading import load_model_and_tokenizer

    return load_model_and_tokenizer(_checkpoint_of(cfg, checkpoint), bf16=bf16, tools=tools)


def _checkpoint_of(cfg: ModelConfig, checkpoint: str | None) -> ModelConfig:
    """The model group, or the saved dir ``checkpoint`` names in its place ("base": the group's own)."""
    if (saved := saved_dir(checkpoint)) is not None:
        return dataclasses.replace(cfg, name_or_path=saved, gguf_package="")
    return cfg


def sampling_model(
    cfg: ModelConfig, checkpoint: str | None, settings: EvaluationConfig, tools: bool = False
) -> tuple[Any, Any]:
    """(model, tokenizer) to sample an evaluation with: ``model`` as above under evaluation.backend=transformers,
    the same weights in vLLM's engine under evaluation.backend=vllm."""
    if settings.backend is not GenerationBackend.vllm:
        return model(cfg, checkpoint, tools=tools)
    from codegrpo.evaluation.vllm_engine import load_vllm

    return load_vllm(_checkpoint_of(cfg, checkpoint), settings)


def tracking(cfg: TrainConfig | EvaluateConfig, run_dir: Path, job_type: str, run_id: str | None = None) -> Run | None:
    """The W&B run of this command (``logger=wandb``), or None."""
    return tracking_runs.start_run(cfg.logger, run_dir, to_plain(cfg), run_id, job_type=job_type)


WANDB_ID_FILE = "wandb_run_id.txt"  # in the run dir: a resume without a checkpoint continues the same W&B run


def train_tracking(cfg: TrainConfig, run_dir: Path, checkpoint: Path | None) -> Run | None:
    """A training run's W&B run (rank 0's): a resumed run continues the one its checkpoint names, and a
    multirun job is grouped by its sweep dir and named by its overrides."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from codegrpo.training import checkpoints

    id_file = run_dir / WANDB_ID_FILE
    state = checkpoints.read_state(checkpoint) if checkpoint is not None else None
    run_id = (state or {}).get("wandb_run_id")
    if run_id is None and cfg.resume and id_file.is_file():
        run_id = id_file.read_text().strip()
    group, name = cfg.logger.group, cfg.logger.name
    if HydraConfig.initialized() and (hydra_cfg := HydraConfig.get()).mode == RunMode.MULTIRUN:
        group = group or Path(hydra_cfg.sweep.dir).name
        name = name or hydra_cfg.job.override_dirname or f"job{hydra_cfg.job.num}"
    cfg = dataclasses.replace(cfg, logger=dataclasses.replace(cfg.logger, group=group, name=name))
    run = tracking(cfg, run_dir, "train", run_id)
    if run is not None:
        id_file.write_text(run.id)
    return run


def dataset(problem_set: list[Problem], cfg: ProblemsConfig) -> Dataset:
    """A datasets.Dataset with a chat `prompt` column and the test columns TRL passes to the reward."""
    from datasets import Dataset

    return Dataset.from_list(
        [
            {
                "prompt": messages_for(p, cfg),
                "problem_id": p.id,
                "test": p.test,
                "expected": p.expected,
                "entry_point": p.entry_point,
            }
            for p in problem_set
        ]
    )


def sides(cfg: TrainConfig | EvaluateConfig, problem_set: list[Problem]) -> Sides:
    """What the model may see and what is scored, told apart here alone: under rollout=feedback each problem's
    public and hidden tests (by the run's checker); with one turn nothing is shown and every test is scored."""
    if cfg.rollout.kind is not RolloutKind.feedback:
        return Sides([], problem_set)
    return sides_of(problem_set, same_test(cfg.reward.checker, cfg.reward.float_tolerance))


def check_reward_functions(cfg: TrainConfig) -> list[Callable[..., object] | None]:
    """``reward.functions``, ``reward.args`` and ``reward.weights``: one line each, before the run starts.
    Each entry's function, or None for the two a scorer serves (code_reward, hack_penalty)."""
    entries = list(cfg.reward.functions)
    if not entries:
        raise UsageError("reward.functions is empty: list at least one reward, e.g. [code_reward]")
    unknown_args = set(cfg.reward.args) - {reward_entries.args_key(e) for e in entries}
    if unknown_args:
        raise UsageError(f"reward.args names {sorted(unknown_args)}, which reward.functions does not list")
    checked = [reward_entries.check(entry, cfg) for entry in entries]
    if (weights := _weights(cfg)) is not None and len(weights) != len(entries):
        raise UsageError(
            f"reward.weights has {len(weights)} values for {len(entries)} reward functions ({', '.join(entries)})"
        )
    return checked


def reward_functions(
    cfg: TrainConfig, scorer: Scorer, observers: Sequence[Observer] = ()
) -> tuple[list[Callable[..., object]], list[float] | None]:
    """The reward functions of ``reward.functions`` and their weights (None: TRL's default, all 1.0). The
    ones ``scorer`` serves read one SharedBatch, whose verdicts each of ``observers`` gets once a batch."""
    entries = list(cfg.reward.functions)
    checked = check_reward_functions(cfg)
    batch = SharedBatch(scorer, max(1, checked.count(None)), observers)
    functions = [
        f if f is not None else reward_entries.of_batch(entry, batch) for entry, f in zip(entries, checked, strict=True)
    ]
    if cfg.rollout.kind is RolloutKind.feedback:  # codegrpo's rewards score each episode's final code
        from codegrpo.training.rollout_func import score_final_code

        # code_reward's wrapper writes each turn's columns of the completions table (one writer: a column twice
        # would be twice as long as the table).
        turns = {CODE_REWARD: cfg.rollout.max_turns, HACK_PENALTY: 0}
        functions = [
            score_final_code(f, turns[entry]) if entry in turns else f
            for entry, f in zip(entries, functions, strict=True)
        ]
    names = [reward_entries.reward_name(f) for f in functions]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"reward.functions: two functions log under the same name {duplicates}")
    return functions, None if (weights := _weights(cfg)) is None else [float(w) for w in weights]


def _weights(cfg: TrainConfig) -> list[float] | None:
    return cfg.reward.weights if cfg.reward.weights is not None else cfg.trainer.reward_weights


def grpo_config(cfg: TrainConfig, run_dir: Path, reward_weights: list[float] | None = None) -> GRPOConfig:
    """trl.GRPOConfig from the trainer group, writing into the run dir; W&B is reported to with logger=wandb."""
    from trl import GRPOConfig

    args = dataclasses.asdict(cfg.trainer)
    report_to = args.get("report_to") or []
    report_to = [report_to] if isinstance(report_to, str) else list(report_to)
    report_to = [r for r in report_to if r != "none"]
    if cfg.logger.backend is LoggerBackend.wandb and "wandb" not in report_to:
        report_to.append("wandb")
    args["report_to"] = report_to or "none"
    args["push_to_hub"] = False  # TRL would push the whole run dir; codegrpo.models.hub pushes only the model
    args["hub_token"] = None  # TRL never pushes, and would pickle a token into every training_args.bin
    if reward_weights is not None:
        args["reward_weights"] = reward_weights
    if cfg.rollout.kind is RolloutKind.tools:  # TRL's tool rounds: every model turn after the first
        args["max_tool_calling_iterations"] = cfg.rollout.max_turns - 1
    try:
        return GRPOConfig(output_dir=str(run_dir), seed=cfg.seed, **current_names(args, GRPOConfig))
    except ValueError as error:  # a check of TRL's that codegrpo.config.trainer.check_trainer does not mirror
        raise UsageError(f"trainer: {' '.join(str(error).split())}") from None


def rollout(cfg: TrainConfig, public: list[Problem], scorer: Scorer | None) -> Callable[..., object] | None:
    """TRL's rollout_func for rollout=feedback (the turns, on ``public``: ``sides``' problems with their public
    tests, through ``scorer``'s sandbox), or None for TRL's own single-turn generation."""
    if cfg.rollout.kind is not RolloutKind.feedback:
        return None
    from codegrpo.training.rollout_func import make_feedback_rollout

    if scorer is None:
        raise UsageError("rollout=feedback needs the run's scorer")
    return make_feedback_rollout(public, scorer, cfg.rollout, prompt_of=lambda p: messages_for(p, cfg.problems))


def sampler_state(cfg: TrainConfig, ids: list[str], checkpoint: Path | None = None) -> Online:
    """Each problem's recent pass rate (row i of the dataset is ``ids[i]``'s), restored from ``checkpoint``:
    the rewards' SharedBatch feeds it (``online.rates.observe``), the trainer draws from it."""
    from codegrpo.training.sampling import Online

    state = Online(cfg.sampler, ids, cfg.seed)
    if checkpoint is not None:
        state.load(checkpoint)
    return state


def check_evaluate(cfg: EvaluateConfig, items: Sequence[str | None]) -> list[str | None]:
    """The checkpoints among ``items`` (the checkpoint, or compare's two; the rest are eval files), checked
    with the eval files before anything loads: one line each."""
    if cfg.compare and len(cfg.compare) != 2:
        raise UsageError(f"compare takes two eval files or checkpoints, got {len(cfg.compare)}")
    for item in items:
        if item is not None and item.endswith(".json") and not Path(item).is_file():
            raise UsageError(f"compare: no such eval file {item}")
    checkpoints = [item for item in items if not str(item).endswith(".json")]
    check_agents(cfg)
    check_sampling(cfg.model, cfg.evaluation, checkpoints)
    if cfg.rollout.kind is RolloutKind.tools:  # each checkpoint's template renders tool calls
        for item in checkpoints:
            check_tool_template(_checkpoint_of(cfg.model, item))
    return checkpoints


def agents_run(cfg: TrainConfig | EvaluateConfig) -> bool:
    """Whether this is an agents' run (rollout=tools): rollout=tools and a set of repository tasks go together,
    one line where one comes without the other."""
    tools, tasks = cfg.rollout.kind is RolloutKind.tools, cfg.problems.loader is Loader.repo_tasks
    if tasks and not tools:
        raise UsageError(f"problems={cfg.problems.name} holds repository tasks, for agents: add rollout=tools")
    if tools and not tasks:
        raise UsageError(
            f"rollout=tools works on repository tasks, not problems={cfg.problems.name}: use problems=repo_tasks "
            "(problems.path=<a folder of Harbor-style tasks> for your own)"
        )
    return tools


def check_agents(cfg: EvaluateConfig) -> None:
    """An agents' evaluation (episodes on repository tasks) and what it cannot do: one line each, before a model
    loads."""
    if not agents_run(cfg):
        return
    if cfg.evaluation.backend is GenerationBackend.vllm or cfg.protocol is not None or cfg.evaluation.problems_path:
        raise UsageError(
            "rollout=tools evaluates with evaluation.backend=transformers on problems.path's tasks, without a protocol"
        )


def check_sampling(model_cfg: ModelConfig, settings: EvaluationConfig, checkpoints: Sequence[str | None]) -> None:
    """What ``sampling_model`` loads for each of ``checkpoints`` (None or "base": the model group's), checked
    before anything loads: one line each."""
    from codegrpo.evaluation.vllm_engine import check_vllm
    from codegrpo.models.hub import check_hub_model
    from codegrpo.models.loading import check_checkpoint

    for item in checkpoints:
        check_checkpoint(item)  # a mistyped dir is one line naming it, not the Hub's error
    if checkpoints and settings.backend is GenerationBackend.vllm:
        check_vllm()
    if any(saved_dir(item) is None for item in checkpoints):
        check_hub_model(model_cfg)


def check_train(cfg: TrainConfig, ranks: int) -> None:
    """Every check a training run can fail in a second, before anything heavy (GRPO's constraints again: the
    config may have changed since it was read)."""
    from codegrpo.models.hub import check_hub_model, check_push
    from codegrpo.models.loading import build_peft_config, check_model
    from codegrpo.models.saving import check_save_dtype
    from codegrpo.training.devices import check_devices
    from codegrpo.training.recipe import naming_the_twin

    check_trainer(cfg.trainer)
    check_optimized_metric(cfg)
    check_episode_budget(cfg.trainer, cfg.rollout)
    check_tools(cfg)
    with naming_the_twin(cfg.recipe):  # a paper-scale recipe that cannot start here names its CPU twin
        check_devices(cfg)  # the GPU path: no GPU, no bf16 on it, no vLLM
        check_model(cfg.model)  # a directory that holds no model
        check_hub_model(cfg.model)  # one connection attempt
    if ranks > 1 and not os.environ.get("CODEGRPO_RUN_DIR"):
        raise UsageError(
            "a distributed launch needs one run dir for every rank: set CODEGRPO_RUN_DIR, e.g. "
            "CODEGRPO_RUN_DIR=outputs/runs/$(date +%F_%H-%M-%S) accelerate launch ... train.py"
        )
    check_save_dtype(cfg.model)
    check_push(cfg)
    build_peft_config(cfg.peft)  # peft=lora without peft installed fails here, not after the model loads
    check_reward_functions(cfg)
    if cfg.rollout.kind is RolloutKind.tools:  # the tokenizer alone (a GGUF model is converted once, here)
        check_tool_template(cfg.model)


def check_optimized_metric(cfg: TrainConfig) -> None:
    """``optimized_metric`` names a result metric this run will have (a run may still end without
    final_reward_mean, which needs a logged step: tasks.train.optimized_value says so then)."""
    name = cfg.optimized_metric
    if name is None:
        return
    if name not in keys.RESULT_METRICS:
        raise UsageError(
            f"optimized_metric={name} is not a metric of a training run's result: use one of "
            f"{', '.join(keys.RESULT_METRICS)} (or null)"
        )
    if name == keys.EVAL_CHANGE and not (cfg.evaluation.before and cfg.evaluation.after):
        raise UsageError(
            f"optimized_metric={name} is the change from evaluation.before to evaluation.after: set both to true"
        )


# TRL's environment_factory needs transformers 5.2 (GRPOTrainer refuses older ones once the model has loaded).
TOOLS_TRANSFORMERS = "5.2.0"


def check_tools(cfg: TrainConfig) -> None:
    """An agents' training run and what TRL's environments need: one line each, before anything loads."""
    if not agents_run(cfg):
        return
    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) < Version(TOOLS_TRANSFORMERS):
        raise UsageError(
            f"rollout=tools needs transformers>={TOOLS_TRANSFORMERS} (TRL's environment_factory); this is "
            f"{transformers.__version__}: pip install 'transformers>={TOOLS_TRANSFORMERS}'"
        )
    if cfg.trainer.max_tool_calling_iterations is not None:
        raise UsageError(
            f"trainer.max_tool_calling_iterations={cfg.trainer.max_tool_calling_iterations}: under rollout=tools "
            "set rollout.max_turns (the model's turns an episode; TRL's tool rounds are one fewer)"
        )
    if cfg.sampler.kind is not SamplerKind.uniform or cfg.sampler.dynamic:
        raise UsageError(
            "rollout=tools draws tasks uniformly: sampler=difficulty and sampler.dynamic are not built for agents yet"
        )
    if cfg.evaluation.before or cfg.evaluation.after:
        raise UsageError(
            "rollout=tools: evaluation.before and evaluation.after evaluate problems, not agents' episodes: "
            "set both to false"
        )


def check_tool_template(cfg: ModelConfig) -> None:
    """The model's tokenizer, with model.chat_template applied, renders tool calls (rollout=tools): one line
    naming the setting that fixes it, before the model loads. The model must be resolved (``resolve_model``)."""
    from transformers import AutoTokenizer

    from codegrpo.models.chat_templates import apply_chat_template_choice, check_tool_calling
    from codegrpo.models.loading import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(cfg), trust_remote_code=cfg.trust_remote_code)
    tokenizer = apply_chat_template_choice(tokenizer, cfg.chat_template, tools=True)
    check_tool_calling(tokenizer, f"model {cfg.name_or_path or cfg.gguf_file}", cfg.chat_template)


@dataclasses.dataclass(frozen=True)
class TrainingSet:
    """What a run trains on, a dataset row each: problems, or under rollout=tools repository tasks."""

    problems: list[Problem] = dataclasses.field(default_factory=list)
    tasks: list[RepoTask] = dataclasses.field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.problems] + [t.id for t in self.tasks]

    @property
    def sha256(self) -> str:
        """The content's hash, which run_info.json records and a resume checks."""
        return task_set_hash(self.tasks) if self.tasks else problem_set_hash(self.problems)

    def __len__(self) -> int:
        return len(self.problems) + len(self.tasks)


def training_set(cfg: TrainConfig, ranks: int, main: bool) -> TrainingSet:
    """The training problems, or the repository tasks under rollout=tools; on the main process, a warning where
    a paper recipe's batch is scaled to ``ranks``."""
    from codegrpo.training.recipe import naming_the_twin, warn_if_scaled

    if cfg.rollout.kind is RolloutKind.tools:
        return TrainingSet(tasks=repo_tasks(cfg.problems))
    with naming_the_twin(cfg.recipe):
        problem_set = problems(cfg.problems)
    if main:
        warn_if_scaled(cfg.recipe, cfg.trainer, ranks)
    return TrainingSet(problems=problem_set)


def repo_tasks(cfg: ProblemsConfig) -> list[RepoTask]:
    """The task folders under ``problems.path`` this sandbox can hold (the others skipped, each with its reason
    in the log), then the split and the limit."""
    tasks, skipped = load_repo_tasks(cfg.path)
    for task in skipped:
        log.warning("task %s skipped: %s", task.path, task.reason)
    if not tasks:
        raise UsageError(f"problems.path={cfg.path}: every task was skipped ({len(skipped)}; the log says why)")
    log.info("%d repository tasks from %s, %d skipped", len(tasks), cfg.path, len(skipped))
    chosen = select_split(tasks, cfg.split, cfg.eval_fraction)
    return chosen[: cfg.limit] if cfg.limit else chosen


def resume(cfg: TrainConfig, run_dir: Path, sha256: str) -> Path | None:
    """The checkpoint this run resumes from (resume=auto: the newest complete one in ``run_dir``, None to start
    fresh; else the one given), checked against this run's config and its training set's hash ``sha256``."""
    from codegrpo.training import checkpoints

    if not cfg.resume:
        return None
    if cfg.resume == "auto":
        checkpoint = checkpoints.newest(run_dir)
    else:
        checkpoint = Path(cfg.resume)
        if not checkpoints.is_complete(checkpoint):
            raise UsageError(f"resume={cfg.resume}: not a complete checkpoint-N directory (or use resume=auto)")
    if checkpoint is not None:
        checkpoints.check_resume(checkpoint, to_plain(cfg), sha256, cfg.resume_force)
        log.info("resuming from %s", checkpoint)
    return checkpoint


@dataclasses.dataclass
class Rewards:
    """What judges a training run, made together because the reward functions read the scorer and feed the
    sampler (``rollout_func`` None: TRL's own generation). Under rollout=tools there is no scorer: the reward
    functions judge the episodes of ``environment_factory``'s environments, which share ``session``."""

    scorer: Scorer | None
    functions: list[Callable[..., object]]
    weights: list[float] | None
    online: Online
    rollout_func: Callable[..., object] | None
    environment_factory: Callable[[], object] | None = None
    session: Session | None = None

    def close(self) -> None:
        """Stop the agents' session's loop thread (the sandbox is the run's, closed by whoever opened it)."""
        if self.session is not None:
            self.session.close()


def rewards(
    cfg: TrainConfig, training: TrainingSet, backend: SandboxBackend, checkpoint: Path | None = None
) -> Rewards:
    """The run's Rewards, through ``backend``; the sampler's state resumed from ``checkpoint``."""
    online = sampler_state(cfg, training.ids, checkpoint)
    if cfg.rollout.kind is RolloutKind.tools:
        return tool_rewards(cfg, training.tasks, backend, online)
    public, hidden = sides(cfg, training.problems)
    judge = scorer(cfg, hidden, backend)
    functions, weights = reward_functions(cfg, judge, [online.rates.observe])
    return Rewards(judge, functions, weights, online, rollout(cfg, public, judge))


def tool_rewards(cfg: TrainConfig, tasks: list[RepoTask], backend: SandboxBackend, online: Online) -> Rewards:
    """rollout=tools' Rewards: the environments' Session on ``backend`` (``run_sandbox``'s), and reward.functions,
    whose code_reward and hack_penalty judge the episodes' final workspaces (codegrpo.agents.rewards)."""
    import functools

    from codegrpo.agents.environment import Session, WorkspaceEnvironment
    from codegrpo.agents.rewards import make_tool_rewards

    partial = cfg.reward.kind is RewardKind.partial
    session = Session(tasks, backend, cfg.rollout.budgets, partial)
    served = make_tool_rewards(session, partial)
    checked = check_reward_functions(cfg)
    functions = [f if f is not None else served[e] for e, f in zip(cfg.reward.functions, checked, strict=True)]
    weights = None if (given := _weights(cfg)) is None else [float(w) for w in given]
    factory = functools.partial(WorkspaceEnvironment, session)
    return Rewards(None, functions, weights, online, None, factory, session)


def run_sandbox(cfg: TrainConfig | EvaluateConfig, ranks: int = 1) -> SandboxBackend:
    """``sandbox`` for a training run or an evaluation: under rollout=tools set up for workspaces (room for a
    workspace in a run's output and /tmp, pytest where the sandbox can read it; agents.workspace.sandbox_config)."""
    if cfg.rollout.kind is not RolloutKind.tools:
        return sandbox(cfg.sandbox, cfg.problems.language, ranks)
    from codegrpo.agents.workspace import sandbox_config
    from codegrpo.sandbox.pytest_site import pytest_site

    return sandbox(sandbox_config(cfg.sandbox, cfg.rollout.budgets, str(pytest_site())), cfg.problems.language, ranks)


def training_args(cfg: TrainConfig, run_dir: Path, weights: list[float] | None, problem_count: int) -> GRPOConfig:
    """``grpo_config``, with the batch it makes checked against the problem set and the sampler."""
    from codegrpo.models.loading import resolve_model
    from codegrpo.training import dynamic_sampling
    from codegrpo.training.sampling import check_batch

    # A GGUF model is converted first: once GRPOConfig starts torch.distributed, only rank 0 would save it.
    resolve_model(cfg.model)
    args = grpo_config(cfg, run_dir, weights)
    assert args.generation_batch_size is not None and args.num_generations is not None  # GRPOConfig sets both
    check_batch(cfg.sampler, problem_count, args.generation_batch_size // args.num_generations)
    per_device, steps = args.per_device_train_batch_size, args.steps_per_generation or args.gradient_accumulation_steps
    dynamic_sampling.check(cfg.sampler, per_device, steps, args.num_generations)
    return args


def trainer(
    cfg: TrainConfig,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    training: TrainingSet,
    judged: Rewards,
    args: GRPOConfig,
    guard: Guard | None = None,
    wandb_run_id: str | None = None,
) -> CodeGRPOTrainer:
    """The GRPOTrainer of this run: its checkpoints carry what resume checks (the config, the problem set's
    hash) and the W&B run id; ``guard``'s signals save a checkpoint after the current step."""
    from datasets import Dataset

    from codegrpo.agents.environment import task_dataset_rows
    from codegrpo.models.loading import build_peft_config
    from codegrpo.training.trl_adapter import make_trainer_class

    state = {"config": to_plain(cfg), "problems_sha256": training.sha256, "wandb_run_id": wandb_run_id}
    rows = (
        Dataset.from_list(task_dataset_rows(training.tasks, cfg.problems.system_prompt))
        if training.tasks
        else dataset(training.problems, cfg.problems)
    )
    return make_trainer_class()(
        model=model,
        reward_funcs=judged.functions,
        args=args,
        train_dataset=rows,
        processing_class=tokenizer,
        peft_config=build_peft_config(cfg.peft),
        completions_every=cfg.completions_every,
        guard=guard,
        checkpoint_state=state,
        online=judged.online,
        dynamic=cfg.sampler if cfg.sampler.dynamic else None,
        rollout_func=judged.rollout_func,
        environment_factory=judged.environment_factory,
    )
