"""The model group (codegrpo.config.model): the offline model by default, a Hub model by option, and the cache
the offline model is converted into."""

from __future__ import annotations


def test_mission_example_composes(compose_cfg):
    cfg = compose_cfg("model=qwen0.5b", "reward=partial")
    assert cfg.model.name_or_path == "Qwen/Qwen2.5-0.5B-Instruct"
    assert cfg.reward.kind == "partial"


def test_the_offline_models_cache_is_codegrpo_cache_where_set(compose_cfg, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEGRPO_CACHE", str(tmp_path))
    assert compose_cfg().model.cache_dir == str(tmp_path)
    monkeypatch.delenv("CODEGRPO_CACHE")
    monkeypatch.setenv("HOME", "/home/someone")
    assert compose_cfg().model.cache_dir == "/home/someone/.cache/codegrpo"
