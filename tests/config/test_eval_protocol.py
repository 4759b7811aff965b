"""The protocol group (codegrpo.config.eval_protocol): codegrpo-evaluate composes a paper's benchmark as its
typed settings, and none by default."""

from __future__ import annotations

from codegrpo.config.choices import ProblemAttribute, Protocol
from codegrpo.config.eval_protocol import ProtocolConfig


def test_a_protocol_composes_as_its_settings_and_none_is_the_default(compose_cfg):
    protocol = compose_cfg("protocol=livecodebench", config_name="evaluate").protocol
    assert isinstance(protocol, ProtocolConfig) and protocol.name is Protocol.livecodebench
    assert protocol.needs == [ProblemAttribute.released, ProblemAttribute.difficulty]
    assert protocol.breakdown is ProblemAttribute.difficulty
    assert compose_cfg(config_name="evaluate").protocol is None
