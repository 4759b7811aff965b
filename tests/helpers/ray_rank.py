"""One rank of the shared-pool test (tests/sandbox/test_ray_cluster.py), run by torchrun or alone:
``python tests/helpers/ray_rank.py ADDRESS OUT_DIR``. It scores sleepers that print when they ran, through
sandbox=ray at ADDRESS (2 actors, 2 programs at once), and writes what it saw to OUT_DIR/rank<RANK>.json."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from codegrpo.config.sandbox import RaySandboxConfig
from codegrpo.sandbox.base import Program
from codegrpo.sandbox.ray_cluster import RaySandbox

SLEEPER = "import time\nstart = time.time()\ntime.sleep(0.6)\nprint(start, time.time())"


async def main(address: str, out: Path) -> None:
    sandbox = RaySandbox(RaySandboxConfig(address=address, actors=2, max_concurrency=2))
    async with sandbox:
        results = await sandbox.run_many([Program(SLEEPER, timeout_s=10.0) for _ in range(8)])
        seen = {
            "pool": sandbox.job.pool,
            "actors": [actor._actor_id.hex() for actor in sandbox._actors],
            "limits": sandbox.limits()[0][1],
            "ran": [[float(t) for t in result.stdout.split()] for result in results],
        }
    rank = os.environ.get("RANK", str(os.getpid()))
    (out / f"rank{rank}.json").write_text(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
