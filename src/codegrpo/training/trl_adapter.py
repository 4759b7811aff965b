"""The one adapter between codegrpo and TRL: the GRPOTrainer codegrpo trains with, TRL's plus what a long run needs.

- the learning-signal metrics on every logged step (how far the weights moved; groups without spread);
- the run's story on the console (codegrpo.tracking.console), and the completions tables every
  ``completions_every`` steps (TRL's ``log_completions``, which only this module changes);
- checkpoints written whole or not at all, with the run's state beside them (codegrpo.training.checkpoints);
- a signal saves after the current optimizer step and stops, every rank agreeing (codegrpo.training.preemption);
- each epoch's prompt order drawn from (seed, epoch), so a resumed run sees the prompts an uninterrupted
  one would (TRL's sampler draws every epoch from one generator, which a resume starts afresh).
- sampler=difficulty's draw by recent pass rate, and the pass rates' sampler/* metrics (codegrpo.training.sampling).
- where each logged step's time went: generation, reward, update, the rest (timing/*, codegrpo.training.timing).

Every method of TRL's or transformers' that is not public and that the trainer overrides is here, and in
``PRIVATE_OVERRIDES`` with the class it comes from and the parameters the override expects;
tests/training/test_trl_adapter.py checks each against the installed TRL and transformers, whose versions
pyproject.toml bounds for that reason. This module imports TRL (seconds, with torch): codegrpo.build
imports it when it builds a trainer, and nothing imports it earlier.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import torch
from accelerate.utils import gather_object
from torch import nn
from torch.utils.data import Sampler
from transformers import PreTrainedModel, TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from trl import GRPOConfig, GRPOTrainer

from codegrpo.config.sampler import SamplerConfig
from codegrpo.reward.metric_names import (
    CODE_REWARD,
    DYNAMIC_FILLER_SHARE,
    DYNAMIC_ROUNDS,
    DYNAMIC_SPREAD_SHARE,
    FRAC_REWARD_ZERO_STD,
    LOSS,
    RELATIVE_NORM,
    SAMPLER_PASS_RATE_HIST,
    TRAIN_RUNTIME,
    TRL_STEP_TIME,
)
from codegrpo.tracking import console
from codegrpo.training import checkpoints
from codegrpo.training.dynamic_sampling import DynamicSampling
from codegrpo.training.preemption import Guard
from codegrpo.training.sampling import Online
from codegrpo.training.timing import GENERATION, REWARD, SAVE, UPDATE, Clock

if TYPE_CHECKING:
    from datasets import Dataset

log = logging.getLogger(__name__)


class Override(NamedTuple):
    """A method of TRL's or transformers' that is not public, overridden by CodeGRPOTrainer."""

    owner: str  # the class whose method the override calls with super(): the first in GRPOTrainer's MRO with it
    parameters: tuple[str, ...]  # its parameters, as the override takes and passes them
    relies_on: str  # what else the override assumes of it (tests/training/test_trl_adapter.py checks this too)


PRIVATE_OVERRIDES: dict[str, Override] = {
    "_get_train_sampler": Override(
        "trl.GRPOTrainer",
        ("self", "dataset"),
        "it returns trl's RepeatSampler, whose batch_size, mini_repeat_count, repeat_count, shuffle, seed and "
        "generator the override reads",
    ),
    "_generate_and_score_completions": Override(
        "trl.GRPOTrainer",
        ("self", "inputs"),
        "it is called once per generation batch, with the model in training mode while training, and returns "
        "the batch's tensors in its rows' order (each group's completions together), the keys "
        "train/dynamic_sampling.py pads",
    ),
    "_generate": Override(
        "trl.GRPOTrainer",
        ("self", "prompts"),
        "it samples a generation batch's completions (rollout_func's turns included) and nothing else, and returns "
        "(prompt_ids, completion_ids, tool_mask, ...): tool_mask None or 1 on the model's own tokens",
    ),
    "_calculate_rewards": Override(
        "trl.GRPOTrainer",
        ("self", "inputs", "prompts", "completions", "completion_ids_list"),
        "it runs every reward function, the async ones on TRL's loop while it waits, and gathers their rewards "
        "(one row per completion of every process, process by process; a column per reward function)",
    ),
    "_get_output_dir": Override(
        "transformers.Trainer",
        ("self", "trial"),
        "transformers.Trainer._save_checkpoint writes the checkpoint into self._get_output_dir(trial=trial)",
    ),
    "_save_checkpoint": Override(
        "trl.GRPOTrainer",
        ("self", "model", "trial"),
        "it writes one checkpoint-<global_step> and nothing else into the output dir",
    ),
    "_issue_warnings_after_load": Override(
        "transformers.Trainer",
        ("self", "load_result"),
        "a resume calls it with load_state_dict's result (missing_keys, unexpected_keys) and only warns",
    ),
}


class LearningSignal(TrainerCallback):
    """A TrainerCallback that measures, for each optimizer step, the relative size of the update
    ||delta theta|| / ||theta|| of the trainable weights, and warns when no group has had any reward
    spread for `patience` logged steps in a row (GRPO then has no advantage to learn from)."""

    def __init__(self, patience: int = 3) -> None:
        self.patience = patience
        self.before: list[torch.Tensor] | None = None
        self.ratios: list[float] = []
        self.flat_steps = 0

    def on_pre_optimizer_step(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> None:
        if model is None:
            return
        with torch.no_grad():
            self.before = [p.detach().float().clone() for p in model.parameters() if p.requires_grad]

    def on_optimizer_step(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> None:
        if self.before is None or model is None:
            return
        with torch.no_grad():
            params = [p for p in model.parameters() if p.requires_grad]
            delta = sum(float((p.detach().float() - b).pow(2).sum()) for p, b in zip(params, self.before, strict=True))
            norm = sum(float(b.pow(2).sum()) for b in self.before)
        self.before = None
        self.ratios.append((delta / norm) ** 0.5 if norm > 0 else 0.0)

    def metrics(self) -> dict[str, float]:
        """The mean relative update since the last log (popped)."""
        if not self.ratios:
            return {}
        value = sum(self.ratios) / len(self.ratios)
        self.ratios = []
        return {RELATIVE_NORM: value}

    def check_spread(self, logs: dict[str, Any]) -> None:
        frac = logs.get(FRAC_REWARD_ZERO_STD)
        if frac is None:
            return
        self.flat_steps = self.flat_steps + 1 if frac >= 1.0 else 0
        if self.flat_steps == self.patience or (self.flat_steps > self.patience and self.flat_steps % 10 == 0):
            log.warning(
                "no learning signal: for %d logged steps in a row every group's rewards were identical "
                "(frac_reward_zero_std=1), so every advantage is 0 and the weights only move by weight decay. "
                "Use easier problems (problems=trivial), reward=partial, more trainer.num_generations or a "
                "higher trainer.temperature.",
                self.flat_steps,
            )


class StopOnSignal(TrainerCallback):
    """At each optimizer step's end: did any rank get a signal? Then save and stop, on every rank."""

    def __init__(self, trainer: CodeGRPOTrainer, guard: Guard) -> None:
        self.trainer = trainer
        self.guard = guard
        self.stopped_at: int | None = None

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        accelerator = self.trainer.accelerator
        flag = torch.tensor([0 if self.guard.received is None else 1], device=accelerator.device)
        if accelerator.num_processes > 1:
            flag = accelerator.gather(flag).max()
        if int(flag):
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = state.global_step


def _reseed(sampler: Any, epoch: int) -> None:
    sampler.generator.manual_seed(sampler.seed + epoch)


def _log_histogram(counts: Any) -> None:
    """The pass-rate histogram to W&B (a wandb.Histogram cannot go into log_history.json), merged into
    the trainer's next log row."""
    import sys

    wandb = sys.modules.get("wandb")  # only when the W&B callback imported it
    if wandb is None or wandb.run is None:
        return
    edges = [i / len(counts) for i in range(len(counts) + 1)]
    wandb.run.log({SAMPLER_PASS_RATE_HIST: wandb.Histogram(np_histogram=(list(counts), edges))}, commit=False)


class StepClock(TrainerCallback):
    """Starts the trainer's clock when training starts, so the first step counts from there."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.clock.start()


class CodeGRPOTrainer(GRPOTrainer):
    args: GRPOConfig
    model: PreTrainedModel | nn.Module  # GRPOTrainer always holds one (transformers' Trainer allows None)

    def __init__(
        self,
        *args: Any,
        completions_every: int = 1,
        guard: Guard | None = None,
        checkpoint_state: dict[str, Any] | None = None,
        online: Online | None = None,
        dynamic: SamplerConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.clock = Clock()  # timing/*; rollout=feedback books its public tests as reward here (train/rollout_func.py)
        self._timed_optimizer: torch.optim.Optimizer | None = None
        self.add_callback(StepClock(self.clock))
        self.online = online  # the pass rates and the sampler= choice (codegrpo.training.sampling)
        self.learning_signal = LearningSignal()
        self.add_callback(self.learning_signal)
        console.install(self)  # one line per step
        self.completions_every = max(1, completions_every)
        self.checkpoint_state = checkpoint_state
        self.stop_on_signal = StopOnSignal(self, guard) if guard is not None else None
        if self.stop_on_signal is not None:
            self.add_callback(self.stop_on_signal)
        self._staging = False
        # sampler.dynamic: DAPO's dynamic sampling (codegrpo.training.dynamic_sampling); the correctness rewards of the
        # last generation on this process, which it keeps or drops groups by.
        self.dynamic = (
            None
            if dynamic is None
            else DynamicSampling(
                dynamic,
                int(self.args.num_generations or 0),  # GRPOConfig sets it
                len(self.train_dataset),  # type: ignore[arg-type]  # a datasets.Dataset: sized
                self.args.seed,
                self.accelerator.process_index,
                self.processing_class.pad_token_id,  # type: ignore[union-attr]
                None if online is None else online.weights,  # refills follow sampler=difficulty's weights
            )
        )
        self._correctness: torch.Tensor | None = None

    @property
    def stopped_at(self) -> int | None:
        """The step after which a signal (this rank's or another's: they agree) stopped training, or None."""
        return self.stop_on_signal.stopped_at if self.stop_on_signal is not None else None

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        logs.update(self.learning_signal.metrics())  # empty when no step ran since the last log
        if LOSS in logs:  # a training step's row (not an evaluation's, nor the end-of-training summary)
            logs.update(self.clock.lap())
        # TRL's step_time times training_step alone (not the optimizer's step, callbacks or saves): beside
        # timing/step_s, which sums to train_runtime, it would be a second step duration that disagrees.
        self._metrics["train"].pop(TRL_STEP_TIME, None)
        if self.online is not None and TRAIN_RUNTIME not in logs:  # not the end-of-training summary
            logs.update(self.online.rates.metrics())
            _log_histogram(self.online.rates.histogram())
        # TRL writes (and prints) a completions table at every log when log_completions: here only every
        # completions_every steps, and not with the end-of-training summary, which would sample the last
        # step's completions anew and write them a second time.
        self.log_completions = (
            self.args.log_completions
            and TRAIN_RUNTIME not in logs
            and self.state.global_step % self.completions_every == 0
        )
        super().log(logs, start_time)
        self.learning_signal.check_spread(logs)

    # -- where a step's time goes (codegrpo.training.timing): generation and reward inside the update's training_step
    # are booked to themselves, so update is the forward and backward passes, plus the optimizer's step.

    def training_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor | Any],
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor:
        with self.clock.phase(UPDATE):
            loss = super().training_step(model, inputs, num_items_in_batch)
            wait_for(self.accelerator.device)
            return loss

    def create_optimizer(self, *args: Any, **kwargs: Any) -> torch.optim.Optimizer:
        # transformers 5.0 takes no argument here, later 5.x an optional model: pass on whatever it was given.
        optimizer = super().create_optimizer(*args, **kwargs)
        # torch's step hooks time exactly optimizer.step(); the callbacks around it also run the learning signal's
        # copies of the weights. Once per optimizer: transformers calls this again when it already has one.
        if optimizer is not self._timed_optimizer and hasattr(optimizer, "register_step_pre_hook"):
            device, clock = self.accelerator.device, self.clock

            def end_update(*_: Any) -> None:
                wait_for(device)
                clock.exit(UPDATE)

            optimizer.register_step_pre_hook(lambda *_: clock.enter(UPDATE))
            optimizer.register_step_post_hook(end_update)
            self._timed_optimizer = optimizer
        return optimizer

    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        with self.clock.phase(GENERATION):
            output = super()._generate(prompts)
        completion_ids, model_mask = output[1], output[2]  # the mask: 1 on the model's tokens, 0 on feedback
        self.clock.generated(sum(map(sum, model_mask)) if model_mask is not None else sum(map(len, completion_ids)))
        return output

    def _calculate_rewards(
        self,
        inputs: list[dict[str, Any]],
        prompts: list[Any],
        completions: list[Any],
        completion_ids_list: list[list[int]],
    ) -> torch.Tensor:
        wait_for(self.accelerator.device)  # the old and reference log-prob passes TRL queued are the update's
        with self.clock.phase(REWARD):
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.dynamic is not None:  # this process's rows of the gathered rewards, by the correctness reward's
            rank, local = self.accelerator.process_index, len(prompts)
            column = self.reward_func_names.index(CODE_REWARD) if CODE_REWARD in self.reward_func_names else None
            mine = rewards[rank * local : (rank + 1) * local]
            self._correctness = mine[:, column] if column is not None else torch.nansum(mine, dim=1)
        return rewards

    def _get_train_sampler(self, dataset: Dataset | None = None) -> Sampler:
        sampler = super()._get_train_sampler(dataset)
        chosen = self.online.sampler(sampler) if self.online is not None else sampler
        if chosen is not sampler:
            return chosen  # sampler=difficulty, in TRL's layout
        if getattr(sampler, "shuffle", False) and getattr(sampler, "seed", None) is not None:
            # The trainer calls set_epoch at each epoch when a sampler has one; TRL's RepeatSampler has none.
            sampler.set_epoch = functools.partial(_reseed, sampler)  # type: ignore[attr-defined]
        return sampler

    def _generate_and_score_completions(
        self, inputs: list[dict[str, torch.Tensor | Any]]
    ) -> dict[str, torch.Tensor | Any]:
        output = self.generate_and_score(inputs)
        if self.dynamic is None or not self.model.training:
            return output
        assert self._correctness is not None  # _calculate_rewards kept it
        filled = self.dynamic.fill(
            output,
            self._correctness,
            self.generate_more,
            self.fewest_over_processes,
            self.total_over_processes,
            self.state.global_step,
        )
        last = self.dynamic.last
        assert last is not None
        metrics = self._metrics["train"]
        metrics[DYNAMIC_ROUNDS].append(float(last.rounds))
        metrics[DYNAMIC_SPREAD_SHARE].append(last.spread / max(1, last.groups))
        metrics[DYNAMIC_FILLER_SHARE].append(last.filler * self.dynamic.num_generations / len(inputs))
        return filled

    def generate_and_score(self, inputs: list[dict[str, torch.Tensor | Any]]) -> dict[str, torch.Tensor | Any]:
        self.rollout_inputs = inputs  # rollout=feedback reads each prompt's problem_id here (train/rollout_func.py)
        output = super()._generate_and_score_completions(inputs)
        if self.online is not None and self.model.training:  # one generation batch scored on every rank
            many = self.accelerator.num_processes > 1
            self.online.rates.end_generation(gather_object if many else None)
        return output

    def generate_more(self, indices: list[int]) -> tuple[dict[str, Any], torch.Tensor]:
        """sampler.dynamic's next round: the training rows at ``indices`` generated and scored, with their
        correctness rewards."""
        output = self.generate_and_score([self.train_dataset[index] for index in indices])  # type: ignore[index]
        assert self._correctness is not None
        return output, self._correctness

    def fewest_over_processes(self, count: int) -> int:
        """The least of ``count`` over the processes (each takes another round while any is short)."""
        if self.accelerator.num_processes == 1:
            return count
        return int(self.accelerator.gather(torch.tensor([count], device=self.accelerator.device)).min().item())

    def total_over_processes(self, tokens: torch.Tensor) -> torch.Tensor:
        """Loss tokens summed over the processes, as TRL counts num_items_in_batch."""
        return self.accelerator.gather(tokens.reshape(1)).sum()

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """None: TRL writes its card into the run dir at every checkpoint, and it is boilerplate ("a
        fine-tuned version of [None]"); a push writes codegrpo's own (codegrpo.models.hub.model_card)."""

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        # A model whose output layer is its embeddings (SmolLM2, Qwen2.5-0.5B) saves the tensor once: on
        # resume the other name is missing by design, and transformers warned `missing keys ['lm_head.weight']`.
        tied = getattr(self.model, "all_tied_weights_keys", None) or {}
        if load_result.missing_keys and set(load_result.missing_keys) <= set(tied):
            cast(PreTrainedModel, self.model).tie_weights()
            load_result = load_result._replace(missing_keys=[])
        super()._issue_warnings_after_load(load_result)

    def _get_output_dir(self, trial: Any) -> str:
        # While a checkpoint is saved, the trainer writes it into the staging dir.
        run_dir = super()._get_output_dir(trial)
        return str(checkpoints.staging_dir(Path(run_dir))) if self._staging else run_dir

    def _save_checkpoint(self, model: nn.Module, trial: Any) -> None:
        run_dir = Path(super()._get_output_dir(trial))
        with self.clock.phase(SAVE):
            self._staging = True
            try:
                super()._save_checkpoint(model, trial)
                self.accelerator.wait_for_everyone()  # every rank wrote its part (RNG states, shards)
                if self.args.should_save:
                    staged = checkpoints.staging_dir(run_dir) / f"checkpoint-{self.state.global_step}"
                    if self.checkpoint_state is not None:
                        checkpoints.write_state(staged, **self.checkpoint_state)
                    if self.online is not None:  # every rank holds the same state
                        self.online.save(staged)
                    checkpoints.publish(staged, run_dir)
                    checkpoints.rotate(run_dir, self.args.save_total_limit)
            except BaseException:
                if self.args.should_save:
                    checkpoints.discard_staging(run_dir)
                raise
            finally:
                self._staging = False
            self.accelerator.wait_for_everyone()


def wait_for(device: torch.device) -> None:
    """CUDA runs behind the CPU: without a wait where the update's work ends (the optimizer's step, and the
    log-prob passes TRL queues just before the rewards), its tail would be booked to whatever phase next waits
    for the GPU. Once a micro-batch: negligible."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_trainer_class() -> type[CodeGRPOTrainer]:
    """The trainer class codegrpo.build instantiates (a function, so a test can observe what is built)."""
    return CodeGRPOTrainer
