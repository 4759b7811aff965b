"""The run's configuration: the schemas Hydra checks, the closed choices, the trainer's fields."""
