"""Test doubles for tests, benchmarks and offline demos; nothing here is used by training.

They live under benchmarks/ (not tests/) because the benchmarks use them too and import nothing from tests/.
"""

from __future__ import annotations

from benchmarks.fakes.superserve_api import FAKE_API_KEY, FakeSuperserve, Fault

__all__ = ["FAKE_API_KEY", "FakeSuperserve", "Fault"]
