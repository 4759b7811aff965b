"""A config that cannot work, as the config tests meet it: refused in one line when it is read."""

from __future__ import annotations

import pytest

from codegrpo.errors import UsageError


def refusal(compose_cfg, *overrides: str) -> str:
    """The one-line UsageError composing ``overrides`` is refused with."""
    with pytest.raises(UsageError) as raised:
        compose_cfg(*overrides)
    message = str(raised.value)
    assert "\n" not in message
    return message
