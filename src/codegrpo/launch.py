"""Around a training run: checks that fail in a second, before any heavy import, and a run dir that a
failure does not leave looking like a run.

- ``preflight(cfg)``: every mandatory value is set (``problems=jsonl`` needs ``problems.path``), and a
  Hub model is reachable or already cached: one connection attempt, not transformers' retries.
- ``settle_failed_run(run_dir, error)``: a run that failed before its first step leaves no run dir (when
  it holds only what the run itself wrote); any other failed run gets a ``FAILED`` file saying why.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
from pathlib import Path
from urllib.parse import urlsplit

from omegaconf import DictConfig, OmegaConf

from codegrpo.cli import UsageError

log = logging.getLogger(__name__)

HUB_TIMEOUT_S = 3.0
# What a run writes before its first step (Hydra's files included): a dir holding only these is removed.
BEFORE_FIRST_STEP = {".hydra", "train.log", "config.yaml", "run_info.json", "git.diff", "wandb_run_id.txt",
                     "wandb", "completions"}
HINTS = {"problems.path": "problems=jsonl reads a file: add problems.path=/path/to/problems.jsonl"}


def check_mandatory(cfg: DictConfig) -> None:
    """Every ``???`` value is set, or one line naming each missing key."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        hints = "; ".join(HINTS.get(key, f"set {key}=...") for key in missing)
        raise UsageError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set ({hints})")


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def hub_reachable(endpoint: str, timeout: float = HUB_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the Hub opens within ``timeout``; else why not."""
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except OSError as error:
        return f"{parts.hostname} is unreachable: {error}"


def check_hub_model(model_cfg) -> None:
    """A Hub model must be reachable or cached; with the Hub down and the files cached, go offline so
    transformers does not retry. Raises ModelNotFoundError with one message otherwise."""
    from codegrpo.models import ModelNotFoundError

    name = model_cfg.name_or_path
    if model_cfg.gguf_package or not name or Path(name).expanduser().exists():
        return  # an offline package or a local directory: loading it says what is wrong, at once
    advice = ("the offline default is model=smollm2-135m; a Hub model needs network access, or its files "
              "in the Hugging Face cache (download them once, then HF_HUB_OFFLINE=1)")
    if _truthy("HF_HUB_OFFLINE") or _truthy("TRANSFORMERS_OFFLINE"):
        if not _cached(name):
            raise ModelNotFoundError(f"model {name!r} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
                                     f"{advice}")
        return
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return  # behind a proxy a direct connection proves nothing; let the Hub client try
    why = hub_reachable(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    if why is None:
        return
    if _cached(name):
        log.warning("the Hugging Face Hub is out of reach (%s): loading %s from the local cache", why, name)
        os.environ["HF_HUB_OFFLINE"] = "1"
        return
    raise ModelNotFoundError(f"cannot load model {name!r} from the Hugging Face Hub ({why}) and it is not in "
                             f"the local cache; {advice}")


def preflight(cfg: DictConfig) -> None:
    """The checks that need no model, no trl and no sandbox: they answer in about a second."""
    check_mandatory(cfg)
    check_hub_model(cfg.model)


def settle_failed_run(run_dir: Path, error: BaseException) -> None:
    """Remove a run dir that never reached a step and holds only what the run wrote; else mark it FAILED."""
    if not run_dir.is_dir():
        return
    entries = {p.name for p in run_dir.iterdir()}
    tables = list(run_dir.glob("completions/*.parquet"))
    if entries <= BEFORE_FIRST_STEP and not tables:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    message = str(error) or type(error).__name__
    (run_dir / "FAILED").write_text(f"{type(error).__name__}: {message}\n")
    log.error("run failed; %s says why", run_dir / "FAILED")


def run_training(cfg: DictConfig) -> dict[str, float]:
    """preflight, then train; a failure settles the run dir (see the module docstring) and propagates."""
    run_dir = Path(cfg.run_dir)
    try:
        preflight(cfg)
        from codegrpo.train import train

        return train(cfg)
    except BaseException as error:
        settle_failed_run(run_dir, error)
        raise
