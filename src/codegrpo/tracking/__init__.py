"""What a run reports: W&B, the console line, run info, plots, sweep summaries."""
