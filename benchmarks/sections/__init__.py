"""The bench's sections, a module each: its TITLE and run(args), the rows of its table (benchmarks/bench.py's
SECTIONS says which run for each --only name)."""
