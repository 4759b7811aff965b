"""From a completion to a reward: extraction, programs, verdicts, the checker, the scorer, the monitor."""
