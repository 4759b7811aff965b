"""The GRPO training step: the run, the TRL adapter, sampling, checkpoints, preemption."""
