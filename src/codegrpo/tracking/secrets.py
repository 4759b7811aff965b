"""The one secrets boundary: what counts as a secret, and how every writer keeps it out.

A secret is known by its key's name (``hub_token``, ``api_key``, ``password``: the name's last word), by its
shape (a Hugging Face token ``hf_...``, a W&B API key, a Superserve or GitHub key, a URL with
``user:password@``), or by being the value of a secret-named environment variable (``HF_TOKEN``,
``WANDB_API_KEY``, ...). Two rules follow (docs/security.md, "The trainer's secrets"):

- a secret never enters a config: one given on the command line is refused before Hydra writes anything
  (``refuse_overrides``, from ``codegrpo.commands.entry_point``), one a config file or an ``${oc.env:...}``
  brings is refused before the task starts (``refuse_config``, from ``codegrpo.commands.run``), each in one
  line naming the environment variable to use instead;
- every writer masks anyway (library use, and what a rule cannot refuse): ``mask`` for structured records
  (a secret-named key is left out, a secret-shaped value becomes ``***``), ``mask_text`` for text,
  ``mask_argv`` for a command line, ``scrub_hydra_files`` for Hydra's own files, ``MaskingFilter`` for the
  console and train.log, ``masked_argv`` around what reads ``sys.argv`` itself (W&B's recorded arguments).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codegrpo.errors import UsageError

MASK = "***"
# The last word of a key's name that makes its value a secret. `api_key_env` (a variable's name) and
# `max_new_tokens` end in other words, so they stay.
SECRET_WORDS = frozenset({"token", "key", "apikey", "secret", "password", "passwd", "credential", "credentials"})
# A bare W&B key has the shape of a commit or a file's hash: under these names such a value is what it says.
DIGEST_WORDS = frozenset({"revision", "commit", "sha", "sha1", "sha256", "hash", "digest", "checksum"})
NULLS = frozenset({"", "null", "none", "~", "''", '""'})
# An environment variable's value shorter than this is not looked for in text (a "1" would mask every 1).
MIN_ENV_SECRET = 12

ELSEWHERE = "the run dir, W&B and the model card"  # where a config and the command line are copied


@dataclasses.dataclass(frozen=True)
class Shape:
    pattern: re.Pattern[str]
    what: str  # "a Hugging Face token"
    instead: str  # where it belongs


# Shapes no ordinary value has, looked for anywhere in a value or a text.
SHAPES = (
    Shape(re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "a Hugging Face token", "export HF_TOKEN instead"),
    Shape(re.compile(r"\blocal-[A-Za-z0-9_]{40,}"), "a W&B API key", "export WANDB_API_KEY instead"),
    Shape(
        re.compile(r"\bss_(?:live|test)_[A-Za-z0-9_-]{16,}"),
        "a Superserve API key",
        "export SUPERSERVE_API_KEY (or the variable sandbox.api_key_env names) instead",
    ),
    Shape(
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
        "a GitHub token",
        "pass it in an environment variable instead",
    ),
)
URL_CREDENTIALS = Shape(
    re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]*:[^\s/@]*@"),
    "a URL with credentials",
    "give the URL without user:password@ and put them in ~/.netrc",
)
# W&B's key (40+ letters and digits, an on-prem one after a `name-` prefix): only a whole value is taken for
# one, and not under a digest's name (a 40-hex model.revision is a commit).
BARE_KEY = Shape(re.compile(r"(?:[A-Za-z0-9]+-)?[A-Za-z0-9]{40,}"), "a W&B API key", "export WANDB_API_KEY instead")
# key=value in a command line, an override, a log line or Hydra's override_dirname.
ASSIGNMENT = re.compile(r"(?P<key>[A-Za-z_][\w.@/-]*)=(?P<value>'[^']*'|\"[^\"]*\"|[^\s,]*)")
# Where a secret-named key belongs instead, by a word of its name.
NAMED = {"hub": "leave it unset and export HF_TOKEN (the Hub client reads it)", "wandb": "export WANDB_API_KEY instead"}


def _words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.rsplit(".", 1)[-1])
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def secret_name(name: str) -> bool:
    """The key's name says its value is a secret: ``trainer.hub_token``, ``WANDB_API_KEY``, ``db_password``."""
    words = _words(name)
    return bool(words) and words[-1] in SECRET_WORDS


def _bare_key(value: str, name: str) -> bool:
    unquoted = value.strip("'\"")
    return bool(BARE_KEY.pattern.fullmatch(unquoted)) and not DIGEST_WORDS & set(_words(name))


def _environment_secrets() -> dict[str, str]:
    """The secret-named environment variables' values (longest first, so none is masked half)."""
    found = {value: name for name, value in os.environ.items() if secret_name(name) and len(value) >= MIN_ENV_SECRET}
    return {value: found[value] for value in sorted(found, key=len, reverse=True)}


def _null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in NULLS)


def _mask_assignment(match: re.Match[str]) -> str:
    key, value = match["key"], match["value"]
    if not _null(value) and (secret_name(key) or _bare_key(value, key)):
        return f"{key}={MASK}"
    return match[0]


def mask_text(text: str) -> str:
    """Text (a log line, a command line, a diff, a card) with every secret in it replaced by ``***``."""
    text = ASSIGNMENT.sub(_mask_assignment, text)
    for shape in SHAPES:
        text = shape.pattern.sub(MASK, text)
    text = URL_CREDENTIALS.pattern.sub(rf"\g<1>{MASK}@", text)
    for value in _environment_secrets():
        text = text.replace(value, MASK)
    return text


def mask(value: Any, name: str = "") -> Any:
    """A record (config, run info, checkpoint state, W&B metadata) without its secrets: a secret-named key
    is left out (as no value at all says least), a secret-shaped string becomes ``***``."""
    if isinstance(value, dict):
        return {k: mask(v, str(k)) for k, v in value.items() if not secret_name(str(k))}
    if isinstance(value, (list, tuple)):
        return [mask(v, name) for v in value]
    if isinstance(value, str):
        return MASK if _bare_key(value, name) else mask_text(value)
    return value


def mask_argv(argv: Sequence[str]) -> list[str]:
    """A command line as it may be recorded (run_info.json, the model card, W&B's arguments)."""
    return [mask_text(str(arg)) for arg in argv]


@contextmanager
def masked_argv() -> Iterator[None]:
    """``sys.argv`` masked for what reads it itself (wandb records its arguments at init)."""
    saved = sys.argv[:]
    sys.argv[:] = mask_argv(saved)
    try:
        yield
    finally:
        sys.argv[:] = saved


def _shape(value: str, name: str) -> tuple[str, str] | None:
    """(what the value looks like, where it belongs instead) when it holds a secret, else None."""
    for shape in (*SHAPES, URL_CREDENTIALS):
        if shape.pattern.search(value):
            return shape.what, shape.instead
    if any(_bare_key(item, name) for item in re.split(r"[,\[\]\s]+", value)):
        return BARE_KEY.what, BARE_KEY.instead
    for secret, variable in _environment_secrets().items():
        if secret in value:
            return f"the value of {variable}", f"leave it to {variable} in the environment"
    return None


def _by_name(key: str) -> str:
    if key.startswith("hydra.job.env_set."):
        return f"export {key.rsplit('.', 1)[-1]} in the shell instead"
    return next(
        (advice for word, advice in NAMED.items() if word in _words(key)), "pass it in an environment variable instead"
    )


def refuse_overrides(overrides: Sequence[str]) -> None:
    """Raise UsageError, in one line that never repeats the value, for a secret among command-line
    overrides: Hydra would write it to .hydra/, and the run to run_info.json, W&B and the model card."""
    for arg in overrides:
        key, is_override, value = arg.partition("=")
        if not is_override or arg.startswith("-"):
            found = _shape(arg, "")
            if found:
                raise UsageError(
                    f"an argument looks like {found[0]}, which would be written to {ELSEWHERE}: "
                    f"secrets stay off the command line; {found[1]}"
                )
            continue
        key = key.lstrip("+~")
        if _null(value):
            continue
        if secret_name(key):
            raise UsageError(
                f"{key} would be written to {ELSEWHERE}: secrets stay off the command line; {_by_name(key)}"
            )
        found = _shape(value, key)
        if found:
            raise UsageError(
                f"{key}=... looks like {found[0]}, which would be written to {ELSEWHERE}: secrets "
                f"stay off the command line; {found[1]}"
            )


def _find(value: Any, path: str) -> tuple[str, str, str] | None:
    """(the key, what it holds, where that belongs instead) for the first secret in a config, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if secret_name(str(key)) and not _null(item):
                return where, "is set", _by_name(where)
            found = _find(item, where)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for item in value:
            found = _find(item, path)
            if found:
                return found
    elif isinstance(value, str):
        shape = _shape(value, path)
        if shape:
            return path, f"looks like {shape[0]}", shape[1]
    return None


def refuse_config(config: dict[str, Any]) -> None:
    """Raise UsageError for a secret in a composed config (a config file, an ``${oc.env:...}``): the config
    is copied to the run dir, W&B, every checkpoint (TRL pickles its arguments) and the model card."""
    found = _find(config, "")
    if found:
        key, holds, instead = found
        raise UsageError(
            f"{key} in the config {holds}: secrets stay out of configs, which are copied to the run "
            f"dir, W&B, every checkpoint and the model card; {instead}"
        )


def scrub_hydra_files(directory: Path) -> list[Path]:
    """Mask the YAML files Hydra wrote before the task started (.hydra/, multirun.yaml); returns those changed.
    A secret refused later still reached them: Hydra writes before any task runs."""
    from omegaconf import OmegaConf

    changed = []
    paths = sorted(directory.glob("*.yaml")) if directory.is_dir() else [directory] if directory.is_file() else []
    for path in paths:
        data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        masked = mask(data)
        if masked != data:
            OmegaConf.save(OmegaConf.create(masked), path)
            changed.append(path)
    return changed


class MaskingFilter(logging.Filter):
    """A handler filter that masks each record's message and traceback (the console and train.log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_text(logging.Formatter().formatException(record.exc_info))
        return True


def mask_logging(logger: logging.Logger | None = None) -> None:
    """Put a MaskingFilter on every handler of ``logger`` (the root: Hydra's console and job log file)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, MaskingFilter) for f in handler.filters):
            handler.addFilter(MaskingFilter())
