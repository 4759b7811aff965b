"""A safe Hub push: only the final model, its tokenizer and a model card, from a clean staging folder.

TRL's own push uploads the whole output_dir, which here is the run dir (git.diff, W&B files, completion
tables, logs). So the trainer's GRPOConfig always has push_to_hub=False and, after training, the run
calls push_final_model: the files of final_model that make up the model (an allow-list), plus a README.md
card with the base model, the config, the problem-set hash, the eval results and the command, every secret
masked (codegrpo.tracking.secrets). `trainer.hub_model_id`, `trainer.hub_private_repo` and
`trainer.hub_revision` apply as in TRL; the token is the Hub client's own (``HF_TOKEN``, or ``hf auth login``),
since the commands refuse ``trainer.hub_token`` in a config (it is still used when set from Python).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import shutil
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml  # type: ignore[import-untyped]

from codegrpo.config.model import ModelConfig
from codegrpo.config.runs import TrainConfig, to_plain
from codegrpo.errors import ModelNotFoundError, UsageError
from codegrpo.models.loading import ModelSource, model_choice
from codegrpo.tracking import secrets
from codegrpo.tracking.runinfo import EVAL_FILES

log = logging.getLogger(__name__)

# What a model (full or adapter) and its tokenizer are made of; anything else in final_model stays home.
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "*.safetensors",
    "model.safetensors.index.json",
    "adapter_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "vocab.json",
    "merges.txt",
    "*.model",
)


def check_push(cfg: TrainConfig) -> None:
    """Before the model loads: a push needs a repo id and a saved model."""
    if not cfg.trainer.push_to_hub:
        return
    if not cfg.trainer.hub_model_id:
        raise UsageError("trainer.push_to_hub=true needs trainer.hub_model_id=<user or org>/<name>")
    if not cfg.save_model:
        raise UsageError("trainer.push_to_hub=true needs save_model=true (the pushed model is final_model)")


def _base_model(cfg: TrainConfig) -> tuple[str, str | None]:
    """(how the card names the base model, its Hub id for the card's metadata when it has one)."""
    model = cfg.model
    choice = model_choice(model)
    if choice.source is ModelSource.gguf:
        return f"{model.gguf_file} from the Python package {model.gguf_package}", None
    return model.name_or_path, choice.name if choice.source is ModelSource.hub else None


def _eval_section(run_dir: Path) -> str:
    lines = []
    for name in EVAL_FILES:
        path = run_dir / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        # The headline numbers; per-problem detail stays in the run dir.
        summary = {k: v for k, v in data.items() if not isinstance(v, dict)}
        lines.append(f"- `{name}`: " + ", ".join(f"{k} = {v}" for k, v in summary.items()))
    return "\n".join(lines) if lines else "No evaluation was run (evaluation.before / evaluation.after)."


def model_card(cfg: TrainConfig, run_dir: Path, repo_id: str) -> str:
    """README.md for the pushed model."""
    info_path = run_dir / "run_info.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    base, hub_id = _base_model(cfg)
    lora = cfg.peft
    adapter = lora is not None and not lora.merge_on_save
    metadata: dict[str, Any] = {
        "library_name": "peft" if adapter else "transformers",
        "tags": ["codegrpo", "grpo", "trl", "code"],
    }
    if hub_id:
        metadata["base_model"] = hub_id
    if adapter and lora is not None:
        weights = (
            f"a LoRA adapter (r={lora.r}, alpha={lora.lora_alpha}, "
            f"modules {list(lora.target_modules)}) over the base model"
        )
    else:
        weights = f"the full model in {cfg.model.save_dtype}"
    config = secrets.mask(to_plain(cfg))
    command = " ".join(secrets.mask_argv(info.get("command") or []))  # a run_info.json from before the masking
    return secrets.mask_text(
        "\n".join(
            [  # the card is public: nothing in it may hold a secret
                "---",
                yaml.safe_dump(metadata, sort_keys=False).strip(),
                "---",
                "",
                f"# {repo_id.split('/')[-1]}",
                "",
                "Trained with GRPO ([TRL](https://huggingface.co/docs/trl)) by codegrpo: the reward runs each "
                "generated program against the problem's tests in a sandbox.",
                "",
                f"- **Base model:** {base}",
                f"- **Weights:** {weights}",
                f"- **Problem set:** {cfg.problems.name} (`{cfg.problems.path}`, split {cfg.problems.split}), "
                f"SHA-256 `{info.get('problems_sha256', 'unknown')}`",
                f"- **Rewards:** {', '.join(cfg.reward.functions)} (code_reward: {cfg.reward.kind})",
                f"- **Code:** codegrpo at commit `{info.get('git_commit')}`"
                + (" (dirty tree)" if info.get("git_dirty") else ""),
                f"- **Command:** `{command}`",
                "",
                "## Evaluation",
                "",
                _eval_section(run_dir),
                "",
                "## Config",
                "",
                "```yaml",
                yaml.safe_dump(config, sort_keys=False).strip(),
                "```",
                "",
            ]
        )
    )


def stage(cfg: TrainConfig, run_dir: Path, model_dir: Path, staging: Path) -> list[str]:
    """Fill an empty staging folder with the model files and the card; return the file names."""
    staging.mkdir(parents=True)
    for path in sorted(model_dir.iterdir()):
        if not path.is_file() or not any(fnmatch.fnmatch(path.name, pattern) for pattern in MODEL_FILES):
            continue
        try:
            os.link(path, staging / path.name)  # no copy of the weights when on the same filesystem
        except OSError:
            shutil.copy2(path, staging / path.name)
    (staging / "README.md").write_text(model_card(cfg, run_dir, _repo_id(cfg)))
    return sorted(p.name for p in staging.iterdir())


def _repo_id(cfg: TrainConfig) -> str:
    if not cfg.trainer.hub_model_id:  # check_push refuses this before the model loads
        raise UsageError("trainer.push_to_hub=true needs trainer.hub_model_id")
    return cfg.trainer.hub_model_id


def push_final_model(cfg: TrainConfig, run_dir: Path, model_dir: Path) -> list[str]:
    """Upload final_model's model files and a card to trainer.hub_model_id; return the uploaded names."""
    import huggingface_hub

    trainer = cfg.trainer
    staging = run_dir / ".hub_staging"
    shutil.rmtree(staging, ignore_errors=True)
    repo_id = _repo_id(cfg)
    try:
        names = stage(cfg, run_dir, model_dir, staging)
        repo = huggingface_hub.create_repo(
            repo_id, token=trainer.hub_token, private=trainer.hub_private_repo, exist_ok=True
        )
        huggingface_hub.upload_folder(
            repo_id=repo_id,
            folder_path=str(staging),
            token=trainer.hub_token,
            revision=trainer.hub_revision,
            commit_message=f"codegrpo: {run_dir.name}",
        )
        log.info("pushed %s to %s", ", ".join(names), getattr(repo, "url", trainer.hub_model_id))
        return names
    finally:
        shutil.rmtree(staging, ignore_errors=True)


HUB_TIMEOUT_S = 3.0


def truthy(name: str) -> bool:
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


def check_hub_model(model_cfg: ModelConfig) -> None:
    """A Hub model must be reachable or cached; with the Hub down and the files cached, go offline so
    transformers does not retry. Raises ModelNotFoundError with one message otherwise."""
    choice = model_choice(model_cfg)  # a named directory that is missing: one line, here
    if choice.source is not ModelSource.hub:
        return  # an offline package or a local directory: loading it says what is wrong, at once
    name = choice.name
    advice = (
        "the offline default is model=smollm2-135m; a Hub model needs network access, or its files "
        "in the Hugging Face cache (download them once, then HF_HUB_OFFLINE=1)"
    )
    if truthy("HF_HUB_OFFLINE") or truthy("TRANSFORMERS_OFFLINE"):
        if not _cached(name):
            raise ModelNotFoundError(
                f"model {name!r} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; {advice}"
            )
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
    raise ModelNotFoundError(
        f"cannot load model {name!r} from the Hugging Face Hub ({why}) and it is not in the local cache; {advice}"
    )
