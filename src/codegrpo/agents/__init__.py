"""Agents that work in the sandbox: an episode's workspace and its tools (workspace.py), the hidden tests'
verdict on the host (judge.py), and the environment TRL's GRPOTrainer drives (environment.py)."""
