"""Train a code LLM with GRPO and sandboxed test rewards: python train.py [group=option ...] [key=value ...]"""

import hydra
from omegaconf import DictConfig

from codegrpo.cli import CONFIG_DIR, run_friendly
from codegrpo.config import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def main(cfg: DictConfig) -> float | None:
    from codegrpo.launch import run_training  # checks in a second, then trains; no run dir left by an early failure

    return run_friendly(lambda: run_training(cfg)).get("final_reward_mean")


if __name__ == "__main__":
    main()
