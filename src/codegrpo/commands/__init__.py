"""Hydra entry points that have no home module of their own (the console scripts' targets).

Hydra names a job, and so its log file, after the module of the task function: commands/train.py
gives train.log, like `python train.py`.
"""
