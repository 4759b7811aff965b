"""Completions shared by the tests and the benchmarks: the attacks and hacks the tests score, which the
benchmarks count (``bench --only hacks``). They live here, not under tests/, because nothing in benchmarks/
imports from tests/."""
