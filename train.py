"""Train a code LLM with GRPO and sandboxed test rewards: python train.py [group=option ...] [key=value ...]"""

from codegrpo.commands.train import main

if __name__ == "__main__":
    main()
