"""The offline Superserve demo (python -m tests.fakes.superserve_demo); the fake it drives is benchmarks.fakes."""
