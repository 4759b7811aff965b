"""The GPU path's own checks: the device, its precision and vLLM, in one line each before the model loads.

TRL only finds these out deep inside ``GRPOConfig`` or ``GRPOTrainer``, with a traceback (``trainer=gpu``
on a machine without a GPU: "Your setup doesn't support bf16/gpu"). ``check_devices`` asks the same
questions of the same facts first, so it refuses exactly what TRL would refuse, with the fix in its line:

- bf16 off the CPU (``trainer=gpu``) where torch has no accelerator, or one that cannot compute in bf16;
- ``trainer.fp16=true`` and ``trainer.bf16=true`` together;
- ``vllm=colocate`` or ``vllm=server`` without the vllm package.

bf16 on the CPU (``trainer.use_cpu=true trainer.bf16=true``) is bf16 autocast, which TRL accepts and this
leaves alone. fp16 on the CPU is accepted too, but accelerate has no fp16 autocast there: a warning says
the run computes in fp32.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import logging
from typing import TYPE_CHECKING

from codegrpo.errors import UsageError
from codegrpo.evaluation.vllm_engine import VLLM_EXTRA

if TYPE_CHECKING:
    from codegrpo.config.runs import TrainConfig
    from codegrpo.config.trainer import TrainerConfig

log = logging.getLogger(__name__)

CPU_ONLY = "trainer=cpu (or trainer.use_cpu=true trainer.bf16=false)"


class DeviceKind(enum.StrEnum):
    """What training runs on when trainer.use_cpu is false: torch's accelerator, or the CPU without one."""

    cpu = "cpu"  # no accelerator: a CPU build of torch, or a CUDA build that sees no GPU
    cuda = "cuda"  # NVIDIA GPUs (and AMD's, under ROCm)
    mps = "mps"  # Apple silicon
    xpu = "xpu"  # Intel GPUs
    other = "other"  # any other accelerator torch or transformers knows (npu, hpu, an XLA TPU, ...)


NAMED = frozenset({DeviceKind.cuda.value, DeviceKind.mps.value, DeviceKind.xpu.value})  # torch device types


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What this machine offers training; ``read_facts`` reads them, tests build them by hand."""

    kind: DeviceKind
    name: str  # the accelerator's name for messages ("NVIDIA A100-SXM4-80GB", "mps"); "" on the CPU
    bf16: bool  # the accelerator computes in bf16: transformers' own test, the one GRPOConfig applies
    torch_version: str  # "2.13.0+cpu"
    cuda_build: bool  # torch was built for CUDA or ROCm (a CPU build never sees a GPU, whatever the machine)
    vllm: bool  # the vllm package is installed


@dataclasses.dataclass(frozen=True)
class Wanted:
    """What the trainer group asks of the device: the trl.GRPOConfig fields that decide it, TRL's defaults
    where a trainer config leaves one out."""

    use_cpu: bool = False
    bf16: bool | None = None  # None: TRL's default, bf16 unless fp16
    fp16: bool = False
    bf16_full_eval: bool = False
    use_vllm: bool = False
    vllm_mode: str = "colocate"

    @classmethod
    def of(cls, trainer: TrainerConfig) -> Wanted:
        # The trainer schema is made from GRPOConfig's fields at run time: TrainerConfig types only a few.
        defaults = cls()
        return cls(**{f.name: getattr(trainer, f.name, getattr(defaults, f.name)) for f in dataclasses.fields(cls)})

    @property
    def mixed_bf16(self) -> bool:
        return self.bf16 if self.bf16 is not None else not self.fp16

    @property
    def bf16_setting(self) -> str:
        """The setting that asks for bf16, as the user would write it."""
        if self.bf16 is None:
            return "trainer.bf16 (unset: TRL's default, true)"
        return "trainer.bf16=true" if self.bf16 else "trainer.bf16_full_eval=true"


def read_facts() -> DeviceFacts:
    """This machine's facts (imports torch and transformers; on a GPU, torch initializes CUDA, as
    GRPOConfig would a few seconds later)."""
    import torch
    from transformers.utils.import_utils import is_torch_bf16_gpu_available, is_torch_xla_available

    cuda_build = torch.version.cuda is not None or torch.version.hip is not None
    vllm = importlib.util.find_spec("vllm") is not None
    # torch.accelerator came in torch 2.6 (before it, only CUDA is told apart). Its current_accelerator() is
    # the build's accelerator, a CUDA build's even where no GPU is visible: is_available() says whether one is.
    current = getattr(torch, "accelerator", None)
    if current is not None:
        device = current.current_accelerator() if current.is_available() else None
    else:
        device = torch.device("cuda") if torch.cuda.is_available() else None
    # transformers lets bf16 through on any XLA device (a TPU), whatever else is there.
    xla = is_torch_xla_available()
    if device is None and not xla:
        return DeviceFacts(DeviceKind.cpu, "", False, torch.__version__, cuda_build, vllm)
    if device is None:
        return DeviceFacts(DeviceKind.other, "xla", True, torch.__version__, cuda_build, vllm)
    kind = DeviceKind(device.type) if device.type in NAMED else DeviceKind.other
    name = torch.cuda.get_device_name() if kind is DeviceKind.cuda else device.type
    return DeviceFacts(kind, name, xla or is_torch_bf16_gpu_available(), torch.__version__, cuda_build, vllm)


def check_devices(cfg: TrainConfig, facts: DeviceFacts | None = None) -> None:
    """Raise UsageError, in one line naming the fix, where TRL would refuse the trainer group's device,
    precision or vLLM on this machine (``facts``: read here when the group runs off the CPU or with vLLM)."""
    wanted = Wanted.of(cfg.trainer)
    if wanted.fp16 and wanted.mixed_bf16:
        raise UsageError(
            f"trainer.fp16=true and {wanted.bf16_setting}: pick one precision "
            "(trainer=gpu sets bf16; add trainer.bf16=false for fp16)"
        )
    if wanted.use_cpu and not wanted.use_vllm:
        # trainer=cpu touches no accelerator (TRL's check does not either): no torch import here.
        if wanted.fp16:
            _warn_fp16_on_cpu()
        return
    facts = facts if facts is not None else read_facts()
    on_cpu = wanted.use_cpu or facts.kind is DeviceKind.cpu
    if not wanted.use_cpu and (wanted.mixed_bf16 or wanted.bf16_full_eval) and not facts.bf16:
        raise UsageError(_no_bf16(wanted, facts))
    if wanted.use_vllm and not facts.vllm:
        mode = wanted.vllm_mode
        raise UsageError(
            f"vllm={mode} (trainer.use_vllm=true) needs the vllm package, which is not installed: "
            f"{VLLM_EXTRA} on the GPU machine, or trainer.use_vllm=false to generate with transformers"
        )
    if wanted.fp16 and on_cpu:
        _warn_fp16_on_cpu()


def _no_bf16(wanted: Wanted, facts: DeviceFacts) -> str:
    """Why bf16 off the CPU cannot run here, and what to set instead."""
    asked = f"{wanted.bf16_setting} with trainer.use_cpu=false (as trainer=gpu sets)"
    if facts.kind is DeviceKind.cpu and not facts.cuda_build:
        return (
            f"{asked} needs a GPU, but torch {facts.torch_version} is a CPU-only build: use {CPU_ONLY}, or on "
            "a GPU machine install a CUDA build of torch (rm .venv/.installed && make setup TORCH=cu128)"
        )
    if facts.kind is DeviceKind.cpu:
        return (
            f"{asked} needs a GPU, but torch {facts.torch_version} sees none (check nvidia-smi and "
            f"CUDA_VISIBLE_DEVICES): use {CPU_ONLY}"
        )
    device = f"this GPU ({facts.name})" if facts.kind is DeviceKind.cuda else f"this {facts.name} device"
    ampere = " (NVIDIA's need Ampere or newer)" if facts.kind is DeviceKind.cuda else ""
    return (
        f"{wanted.bf16_setting}: {device} cannot compute in bf16{ampere}: set trainer.bf16=false for fp32, "
        "or trainer.bf16=false trainer.fp16=true for fp16 mixed precision"
    )


def _warn_fp16_on_cpu() -> None:
    log.warning(
        "trainer.fp16=true on the CPU: accelerate has no fp16 autocast there, so this run computes "
        "in fp32 (trainer.bf16=true gives bf16 autocast on the CPU)"
    )
