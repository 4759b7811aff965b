"""Fixtures of the sandbox tests: one way to make each backend (the local one: tests/helpers/sandbox.py)."""

from __future__ import annotations

import pytest
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve

from codegrpo.config.sandbox import SuperserveSandboxConfig
from codegrpo.sandbox.superserve import SuperserveSandbox

KEY_ENV = "CODEGRPO_TEST_SUPERSERVE_KEY"


@pytest.fixture
def make_backend(monkeypatch: pytest.MonkeyPatch):
    """make_backend(fake, **overrides) -> a Superserve backend talking to ``fake`` through the real SDK."""
    monkeypatch.setenv(KEY_ENV, FAKE_API_KEY)

    def make(fake: FakeSuperserve, **overrides) -> SuperserveSandbox:
        fields = {
            "api_key_env": KEY_ENV,
            "base_url": fake.base_url,
            "max_concurrency": 4,
            "max_retries": 3,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            **overrides,
        }
        return SuperserveSandbox(SuperserveSandboxConfig(**fields))

    return make
