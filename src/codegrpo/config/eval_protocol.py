"""The protocol group (codegrpo-evaluate): a paper's benchmark, evaluated as the paper does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from codegrpo.config.choices import ProblemAttribute, Protocol
from codegrpo.config.values import MISSING


@dataclass
class ProtocolConfig:
    """protocol=livecodebench | humaneval_plus | codecontests (codegrpo-evaluate; conf/protocol/): a benchmark
    evaluated as its paper does. The group also sets the problem set, its window and the sampling."""

    name: Protocol = MISSING
    source: str = ""  # where its settings are stated
    # The benchmark's own problems (its problems.data_files, or problems.hub_path where it has none): another set
    # (a local file) is said beside the paper's figure as standing in for it.
    benchmark: str = ""
    needs: list[ProblemAttribute] = field(default_factory=list)  # every problem must have these
    breakdown: Optional[ProblemAttribute] = None  # pass@1 is also reported per value of this attribute
