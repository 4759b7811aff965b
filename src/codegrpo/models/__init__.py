"""Models: loading, the offline model's conversion, saving and the Hub."""
