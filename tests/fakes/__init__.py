"""Test doubles shipped with the package, for tests, benchmarks and offline demos.

Nothing here is used by training. They live in the package (not under tests/) so that
``python -m tests.fakes.superserve_demo`` and the benchmark scripts can use them too.
"""

from __future__ import annotations

from tests.fakes.superserve_api import FAKE_API_KEY, FakeSuperserve, Fault

__all__ = ["FAKE_API_KEY", "FakeSuperserve", "Fault"]
