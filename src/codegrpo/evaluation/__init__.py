"""Evaluation of a model on held-out problems and the paired comparison of two evaluations."""
