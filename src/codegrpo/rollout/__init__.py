"""The multi-turn stage: episodes of model turns and what the model is told between them (feedback.py),
for training and evaluation alike, independent of the trainer."""
