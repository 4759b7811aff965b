"""The GPU path's own errors (codegrpo.training.devices): one line each, before the model loads. Machines this
suite cannot run on (a GPU without bf16, one with it, vLLM installed) are facts built by hand; this machine's
own facts are checked against torch, and check_devices against what TRL's GRPOConfig itself accepts here."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.training import devices
from codegrpo.training.devices import DeviceFacts, DeviceKind, check_devices, read_facts

NO_GPU = DeviceFacts(DeviceKind.cpu, "", bf16=False, torch_version="2.13.0+cpu", cuda_build=False, vllm=False)
GPU_WITHOUT_BF16 = DeviceFacts(
    DeviceKind.cuda, "Tesla P100-PCIE-16GB", bf16=False, torch_version="2.13.0+cu126", cuda_build=True, vllm=True
)
GPU_WITH_BF16 = dataclasses.replace(GPU_WITHOUT_BF16, name="NVIDIA H100 80GB HBM3", bf16=True)


def _refusal(cfg, facts: DeviceFacts) -> str:
    with pytest.raises(UsageError) as refused:
        check_devices(cfg, facts)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_trainer_gpu_without_a_gpu_names_trainer_cpu(compose_cfg):
    message = _refusal(compose_cfg("trainer=gpu"), NO_GPU)
    assert message.startswith("trainer.bf16=true with trainer.use_cpu=false")
    assert "torch 2.13.0+cpu is a CPU-only build" in message
    assert "use trainer=cpu (or trainer.use_cpu=true trainer.bf16=false)" in message
    assert "make setup TORCH=cu" in message


def test_a_cuda_torch_that_sees_no_gpu_says_so(compose_cfg):
    hidden = dataclasses.replace(NO_GPU, torch_version="2.13.0+cu126", cuda_build=True)
    message = _refusal(compose_cfg("trainer=gpu"), hidden)
    assert "torch 2.13.0+cu126 sees none (check nvidia-smi and CUDA_VISIBLE_DEVICES)" in message
    assert "trainer=cpu" in message and "make setup" not in message


def test_trl_default_bf16_counts_as_asked(compose_cfg):
    # GRPOConfig's bf16=None means bf16 unless fp16: the same refusal, naming the unset field.
    message = _refusal(compose_cfg("trainer=gpu", "trainer.bf16=null"), NO_GPU)
    assert message.startswith("trainer.bf16 (unset: TRL's default, true) with trainer.use_cpu=false")


def test_a_gpu_without_bf16_names_fp32_and_fp16(compose_cfg):
    message = _refusal(compose_cfg("trainer=gpu"), GPU_WITHOUT_BF16)
    assert message.startswith("trainer.bf16=true: this GPU (Tesla P100-PCIE-16GB) cannot compute in bf16")
    assert "trainer.bf16=false for fp32" in message
    assert "trainer.bf16=false trainer.fp16=true for fp16 mixed precision" in message


def test_another_accelerator_without_bf16_is_named_by_its_type(compose_cfg):
    old_mac = DeviceFacts(DeviceKind.mps, "mps", bf16=False, torch_version="2.13.0", cuda_build=False, vllm=False)
    message = _refusal(compose_cfg("trainer=gpu"), old_mac)
    assert "this mps device cannot compute in bf16" in message and "Ampere" not in message


def test_bf16_full_eval_alone_is_named(compose_cfg):
    cfg = compose_cfg("trainer=gpu", "trainer.bf16=false", "trainer.bf16_full_eval=true")
    assert _refusal(cfg, GPU_WITHOUT_BF16).startswith("trainer.bf16_full_eval=true: this GPU")


def test_the_gpu_path_passes_where_it_can_run(compose_cfg):
    check_devices(compose_cfg("trainer=gpu"), GPU_WITH_BF16)
    check_devices(compose_cfg("trainer=gpu", "vllm=colocate"), GPU_WITH_BF16)
    check_devices(compose_cfg("trainer=gpu", "trainer.bf16=false", "trainer.fp16=true"), GPU_WITHOUT_BF16)
    # Off the CPU without bf16 TRL trains on the CPU in fp32: slow, but it runs, so it is not refused.
    check_devices(compose_cfg("trainer=gpu", "trainer.bf16=false"), NO_GPU)


@pytest.fixture
def unread(monkeypatch):
    """check_devices must decide without this machine's facts (no torch import, no CUDA initialized)."""

    def untouched() -> DeviceFacts:
        raise AssertionError("the device facts were read")

    monkeypatch.setattr(devices, "read_facts", untouched)


def test_trainer_cpu_reads_no_device_facts(compose_cfg, unread):
    # bf16 on the CPU is bf16 autocast, which TRL accepts; and trainer=cpu never touches CUDA, as TRL's check.
    check_devices(compose_cfg())
    check_devices(compose_cfg("trainer.bf16=true"))


def test_fp16_and_bf16_together_are_refused_before_the_device(compose_cfg, unread):
    with pytest.raises(UsageError) as refused:
        check_devices(compose_cfg("trainer=gpu", "trainer.fp16=true"))
    assert str(refused.value) == (
        "trainer.fp16=true and trainer.bf16=true: pick one precision "
        "(trainer=gpu sets bf16; add trainer.bf16=false for fp16)"
    )


def test_fp16_on_the_cpu_warns_that_it_computes_in_fp32(compose_cfg, caplog):
    with caplog.at_level(logging.WARNING, logger=devices.__name__):
        check_devices(compose_cfg("trainer.fp16=true"))
        check_devices(compose_cfg("trainer=gpu", "trainer.bf16=false", "trainer.fp16=true"), NO_GPU)
    assert [r.getMessage().startswith("trainer.fp16=true on the CPU") for r in caplog.records] == [True, True]
    caplog.clear()
    check_devices(compose_cfg("trainer=gpu", "trainer.bf16=false", "trainer.fp16=true"), GPU_WITHOUT_BF16)
    assert not caplog.records


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_vllm_without_the_package_names_the_extra(compose_cfg, mode):
    facts = dataclasses.replace(GPU_WITH_BF16, vllm=False)
    message = _refusal(compose_cfg("trainer=gpu", f"vllm={mode}"), facts)
    assert message.startswith(f"vllm={mode} (trainer.use_vllm=true) needs the vllm package, which is not installed")
    assert "pip install -e '.[vllm]'" in message and "trainer.use_vllm=false" in message


def test_no_gpu_is_named_before_vllm(compose_cfg):
    # Installing vLLM (and the CUDA torch it pins) on a machine without a GPU would not help.
    assert "trainer=cpu" in _refusal(compose_cfg("trainer=gpu", "vllm=colocate"), NO_GPU)


def test_this_machines_facts_are_torchs():
    import torch

    facts = read_facts()
    assert facts.torch_version == torch.__version__
    # The build's own word (a +cpu wheel has no CUDA), not read_facts' expressions again.
    assert facts.cuda_build is ("+cpu" not in torch.__version__ and torch.backends.cuda.is_built())
    assert facts.vllm is (subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True).returncode == 0)
    # torch.accelerator came in torch 2.6; before it, only CUDA is an accelerator to read_facts.
    available = torch.accelerator.is_available() if hasattr(torch, "accelerator") else torch.cuda.is_available()
    assert (facts.kind is DeviceKind.cpu) == (not available)
    if not available:
        assert (facts.name, facts.bf16) == ("", False)
    if torch.cuda.is_available():
        assert facts.kind is DeviceKind.cuda and facts.bf16 == torch.cuda.is_bf16_supported()


def test_check_devices_refuses_exactly_what_grpo_config_refuses_here(compose_cfg, tmp_path):
    # On this machine, whatever it has: every mix of device and precision check_devices lets through,
    # GRPOConfig accepts, and every one it refuses, GRPOConfig raises on (a traceback, before this check).
    from codegrpo import build

    facts = read_facts()
    outcomes = set()
    for use_cpu, bf16, fp16 in itertools.product(["true", "false"], ["true", "false", "null"], ["true", "false"]):
        cfg = compose_cfg("trainer=gpu", f"trainer.use_cpu={use_cpu}", f"trainer.bf16={bf16}", f"trainer.fp16={fp16}")
        try:
            check_devices(cfg, facts)
            refused = None
        except UsageError as error:
            refused = error
        try:
            build.grpo_config(cfg, tmp_path)
            rejected = None
        except UsageError as error:  # GRPOConfig's ValueError, as build.grpo_config reports it: one line
            rejected = error
        assert (refused is None) == (rejected is None), (use_cpu, bf16, fp16, refused, rejected)
        outcomes.add(refused is None)
    assert outcomes == {True, False}  # fp16 with bf16 is refused on any machine; plain fp32 runs on any


def _train(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    # No GPU, whatever the machine has: CUDA_VISIBLE_DEVICES hides every CUDA device from torch.
    environment = os.environ | {"CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "train.py", f"hydra.run.dir={run_dir}", "debug=fast", "logger=none", *overrides],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def test_train_py_trainer_gpu_without_a_gpu_is_one_line(tmp_path):
    done = _train(tmp_path / "run", "trainer=gpu")
    assert done.returncode == 2, done.stderr[-4000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: trainer.bf16=true with trainer.use_cpu=false (as trainer=gpu sets) needs a GPU")
    assert "use trainer=cpu (or trainer.use_cpu=true trainer.bf16=false)" in line
    assert not (tmp_path / "run").exists()  # stopped before the run's first step: no run dir left


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_train_py_vllm_without_vllm_is_one_line(tmp_path):
    done = _train(tmp_path / "run", "vllm=colocate")
    assert done.returncode == 2, done.stderr[-4000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: vllm=colocate (trainer.use_vllm=true) needs the vllm package")
    assert "pip install -e '.[vllm]'" in line
    assert not (tmp_path / "run").exists()
