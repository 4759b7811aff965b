"""The keys under which TRL logs codegrpo's reward: ``rewards/<the reward function's __name__>/mean``."""

CODE_REWARD = "code_reward"  # the __name__ of the reward function make_code_reward returns
REWARD_MEAN = f"rewards/{CODE_REWARD}/mean"
