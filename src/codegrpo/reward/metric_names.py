"""The keys under which TRL logs codegrpo's reward: ``rewards/<the reward function's __name__>/mean``."""

CODE_REWARD = "code_reward"  # CodeReward's __name__
REWARD_MEAN = f"rewards/{CODE_REWARD}/mean"
