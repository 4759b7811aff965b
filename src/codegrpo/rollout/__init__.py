"""The multi-turn stage, for training and evaluation alike and independent of the trainer: episodes of model
turns (episode.py), the engine that plays them to their declared stop conditions (engine.py), how an episode
becomes tokens (chat.py), the environment protocol that says what the model is told after each turn
(environment.py) with the feedback on public tests as one environment (feedback.py), and the episodes'
metrics (metrics.py). codegrpo.training.rollout_func binds the engine to TRL's GRPOTrainer."""
