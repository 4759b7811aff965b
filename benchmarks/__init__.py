"""Benchmarks that print ratios (python -m benchmarks.bench, or make bench); not part of the installed package."""
