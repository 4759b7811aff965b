"""codegrpo: GRPO training of code-writing language models with sandboxed test rewards."""

__version__ = "0.1.0"
