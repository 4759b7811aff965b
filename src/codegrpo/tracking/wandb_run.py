"""Experiment tracking (W&B), resolved the way W&B users expect, and never a login prompt.

Mode, first match wins:
  1. ``logger.mode`` (online | offline | disabled);
  2. ``WANDB_MODE``, or a mode in wandb's settings files (``wandb offline``);
  3. online when wandb finds credentials: ``WANDB_API_KEY``, ``WANDB_IDENTITY_TOKEN_FILE``, the netrc
     entry that ``wandb login`` writes for the server (``WANDB_BASE_URL``), or wandb's settings;
  4. offline inside the run dir, with one line saying so (``wandb sync`` uploads it later).

Offline sends nothing over the network: wandb's own telemetry (OpenTelemetry metrics it POSTs to
the server with the API key) is switched off. The other ``WANDB_*`` variables (``WANDB_PROJECT``,
``WANDB_ENTITY``, ``WANDB_RUN_GROUP``, ``WANDB_NAME``, ``WANDB_TAGS``, ``WANDB_NOTES``,
``WANDB_JOB_TYPE``) apply unless the matching ``logger.*`` key is set. What the run records goes through
codegrpo.tracking.secrets: the config and the model's metadata masked, and the arguments wandb records
itself (``sys.argv``) masked while it reads them.
"""

from __future__ import annotations

import logging
import netrc
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from codegrpo.config.choices import LoggerBackend, WandbMode
from codegrpo.config.logger import LoggerConfig
from codegrpo.errors import UsageError
from codegrpo.tracking import secrets

if TYPE_CHECKING:  # wandb is imported when a run starts
    from wandb import Artifact
    from wandb.sdk.wandb_run import Run

log = logging.getLogger(__name__)

NO_CREDENTIALS = "no W&B credentials found"
DEFAULT_BASE_URL = "https://api.wandb.ai"
# wandb's older spellings of the modes (WANDB_MODE and its settings files still take them).
MODE_ALIASES = {"dryrun": WandbMode.offline, "run": WandbMode.online}


def _normalise_mode(mode: str, source: str) -> WandbMode:
    name = mode.strip().lower()
    try:
        return MODE_ALIASES.get(name) or WandbMode(name)
    except ValueError:
        raise UsageError(f"{source} must be one of {', '.join(WandbMode)}, not {mode!r}") from None


def _wandb_settings() -> Any | None:
    """wandb's global settings (environment and settings files), without starting its service."""
    # wandb reads WANDB_SILENT once, when these settings load: our one line replaces its banner.
    os.environ.setdefault("WANDB_SILENT", "true")
    try:
        from wandb.sdk import wandb_setup
    except ImportError:  # a wandb without wandb_setup.singleton (older than this project supports)
        return None
    return wandb_setup.singleton().settings


def find_credentials() -> str | None:
    """Where wandb would take its credentials from, in its own order, or None when it finds none.

    Mirrors wandb's system authentication (environment, then netrc for the server's host, then its
    settings) so that a key saved by ``wandb login`` counts, without asking the server anything.
    """
    if os.environ.get("WANDB_API_KEY"):
        return "WANDB_API_KEY"
    if os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return "WANDB_IDENTITY_TOKEN_FILE"
    settings = _wandb_settings()
    base_url = getattr(settings, "base_url", None) or os.environ.get("WANDB_BASE_URL") or DEFAULT_BASE_URL
    try:
        from wandb.errors import AuthenticationError
        from wandb.sdk.lib.wbauth import HostUrl, wbnetrc
    except ImportError:
        return _netrc_source(base_url)
    try:
        found = wbnetrc.read_netrc_auth_with_source(host=HostUrl(base_url))
    except AuthenticationError:
        # A malformed key is still the user's intent to log online; wandb.init then says what is wrong.
        return "netrc (malformed key)"
    if found is not None:
        return found.source
    if getattr(settings, "api_key", None):
        return "wandb settings"
    return None


def _netrc_source(base_url: str) -> str | None:
    """The netrc lookup for wandb versions without wbauth: the entry for the server's host."""
    path = Path(os.environ.get("NETRC") or "~/.netrc").expanduser()
    try:
        entry = netrc.netrc(str(path)).authenticators(urlsplit(base_url).netloc)
    except (OSError, netrc.NetrcParseError):
        return None
    return str(path) if entry and entry[2] else None


def resolve_mode(cfg: LoggerConfig) -> tuple[WandbMode, str]:
    """The W&B mode for this run and why (for the one line that says it)."""
    if cfg.mode:
        return WandbMode(cfg.mode), "logger.mode"
    if os.environ.get("WANDB_MODE"):
        return _normalise_mode(os.environ["WANDB_MODE"], "WANDB_MODE"), "WANDB_MODE"
    settings_mode = _normalise_mode(getattr(_wandb_settings(), "mode", None) or "online", "wandb's settings mode")
    if settings_mode is not WandbMode.online:  # `wandb offline` or a settings file chose it
        return settings_mode, "wandb settings"
    source = find_credentials()
    if source:
        return WandbMode.online, f"credentials from {source}"
    return WandbMode.offline, NO_CREDENTIALS


def start_run(
    cfg: LoggerConfig,
    run_dir: Path,
    config: dict[str, Any],
    run_id: str | None = None,
    job_type: str = "train",
) -> Run | None:
    """Start the W&B run that TRL's callback then reuses; None when ``logger.backend=none``.

    A disabled run is still started (as wandb's no-op run) so that TRL's callback reuses it instead of
    starting its own. ``job_type`` is what the command is (train, eval); ``logger.job_type`` and
    ``WANDB_JOB_TYPE`` override it.
    """
    if cfg.backend is LoggerBackend.none:
        return None
    os.environ.setdefault("WANDB_SILENT", "true")
    mode, why = resolve_mode(cfg)
    if mode in (WandbMode.offline, WandbMode.disabled):
        # wandb reads this when its telemetry starts (at init): offline must not reach any server.
        os.environ["WANDB_ERROR_REPORTING"] = "false"
        if mode is WandbMode.disabled:
            log.info("W&B: disabled (%s)", why)
        elif why == NO_CREDENTIALS:
            log.warning(
                "W&B: offline (no credentials: set WANDB_API_KEY or run `wandb login`); the run is saved in "
                "%s/wandb, upload it later with `wandb sync %s/wandb/offline-run-*`",
                run_dir,
                run_dir,
            )
        else:
            log.info("W&B: offline (%s); upload later with `wandb sync %s/wandb/offline-run-*`", why, run_dir)
    else:
        log.info("W&B: %s (%s)", mode, why)
    import wandb

    # None lets wandb apply its own variable (WANDB_RUN_GROUP, WANDB_TAGS, ...) when logger.* is unset.
    name = cfg.name or (None if os.environ.get("WANDB_NAME") else run_dir.name)
    with secrets.masked_argv():  # wandb records sys.argv[1:] as the run's `args` (no setting replaces it)
        return wandb.init(
            project=cfg.project,
            entity=cfg.entity,
            group=cfg.group,
            name=name,
            tags=list(cfg.tags) or None,
            job_type=getattr(cfg, "job_type", None) or os.environ.get("WANDB_JOB_TYPE") or job_type,
            dir=str(run_dir),
            mode=mode.value,  # wandb validates a plain string
            config=secrets.mask(config),
            id=run_id,
            resume="allow" if run_id else None,
            settings=wandb.Settings(login_timeout=10, console="off"),
        )


def log_model(
    run: Run | None, cfg: LoggerConfig, model_dir: Path, metadata: dict[str, Any] | None = None
) -> Artifact | None:
    """Log the saved model dir as a W&B artifact of type ``model`` when ``logger.log_model`` is true.

    Returns the artifact, or None when there is no run, logging the model is off, or the dir is missing.
    Call it on the main process after the final model is saved.
    """
    if run is None or not getattr(cfg, "log_model", False):
        return None
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        log.warning("W&B: no model to log at %s (save_model=false?)", model_dir)
        return None
    import wandb

    # model-<run id> is the name transformers' own W&B callback uses, so both land in one collection.
    artifact = wandb.Artifact(f"model-{run.id}", type="model", metadata=secrets.mask(metadata or {}))
    artifact.add_dir(str(model_dir))
    run.log_artifact(artifact, aliases=["latest", "final"])
    return artifact


def finish_run(run: Run | None) -> None:
    if run is not None:
        run.finish()
