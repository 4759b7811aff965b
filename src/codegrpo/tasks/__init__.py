"""The tasks: each a function of the typed config that builds its pieces (codegrpo.build) and runs them;
the commands are their Hydra entry points. train.py: prepare, fit, finalize."""
