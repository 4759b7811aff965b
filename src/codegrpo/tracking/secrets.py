"""The one secrets boundary: what counts as a secret, and how every writer keeps it out.

A secret is known by its key's name (``hub_token``, ``api_key``, ``password``: the name's last word), by its
shape (a Hugging Face token ``hf_...``, a W&B API key, a Superserve or GitHub key, a URL with
``user:password@``), or by being the value of a secret-named environment variable (``HF_TOKEN``,
``WANDB_API_KEY``, ...). Two rules follow (docs/security.md, "The trainer's secrets"):

- a secret never enters a config: one given on the command line is refused before Hydra writes anything
  (``refuse_overrides``, from ``codegrpo.commands.entry_point``, reading each override as Hydra's grammar
  does: dicts, lists and sweeps), one a config file or an ``${oc.env:...}`` brings is refused before the
  task starts (``refuse_config``, from ``codegrpo.commands.run``), each in one line naming the environment
  variable to use instead; a refusal carries what it refused (``Refused.values``), and ``run`` scrubs
  Hydra's files of it, so no file keeps it, in a fresh run dir or an existing one;
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
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegrpo.errors import UsageError

if TYPE_CHECKING:
    from hydra.core.override_parser.overrides_parser import OverridesParser

MASK = "***"
# The last word of a key's name that makes its value a secret. `api_key_env` (a variable's name) and
# `max_new_tokens` end in other words, so they stay.
SECRET_WORDS = frozenset({"token", "key", "apikey", "secret", "password", "passwd", "credential", "credentials"})
# A legacy W&B key has the shape of a commit: under a key whose name has one of these words, such a value is
# what the name says (a revision, a digest, a run named, tagged or annotated with its commit), not a key.
DIGEST_WORDS = frozenset({"revision", "commit", "sha", "sha1", "sha256", "hash", "digest", "checksum"})
DESCRIBED_WORDS = DIGEST_WORDS | {"tag", "tags", "name", "note", "notes"}
# A SHA-256 or SHA-512 hex digest: no W&B key has that shape (a legacy one is 40 hex digits, a SHA-1's).
HEX_DIGEST = re.compile(r"[0-9a-fA-F]{64}|[0-9a-fA-F]{128}")
NULLS = frozenset({"", "null", "none", "~", "''", '""'})
# An environment variable's value shorter than this is not looked for in text (a "1" would mask every 1).
MIN_ENV_SECRET = 12
# A refused value shorter than this is not scrubbed from Hydra's files as text (its own words would go with
# it); its key's name or shape masks it there.
MIN_SCRUBBED = 6

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
    # W&B's keys since wandb 0.22.3: 86 characters, wandb_v1_ first.
    Shape(re.compile(r"\bwandb_v\d+_[A-Za-z0-9_-]{40,}"), "a W&B API key", "export WANDB_API_KEY instead"),
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
# A legacy W&B key (40+ letters and digits, an on-prem one after a `name-` prefix): only a whole item (a
# value, or one item of a list, a sweep or words) is taken for one, and not under DESCRIBED_WORDS.
BARE_KEY = Shape(re.compile(r"(?:[A-Za-z0-9]+-)?[A-Za-z0-9]{40,}"), "a W&B API key", "export WANDB_API_KEY instead")
ITEMS = re.compile(r"[,\[\]\s]+")
# key=value in a command line, an override, a log line or Hydra's override_dirname. The value runs to a space
# or to the next `,key=` (override_dirname joins so), so a swept `db_password=abc,def` is masked whole.
_KEY = r"[A-Za-z_][\w.@/-]*"
ASSIGNMENT = re.compile(
    rf"(?P<key>{_KEY})=(?P<value>(?:'[^']*'|\"[^\"]*\"|\S)*?)(?=,?(?:\s|$)|,[+~]?{_KEY}=)", re.MULTILINE
)
# key: value in a flow mapping (an override's `{token:abc}`) or a YAML line (a diff's `+  password: abc`).
FIELD = re.compile(
    r"(?:(?<=[{,])|^[ \t+-]*)(?P<key>[A-Za-z_][\w-]*)[ \t]*:[ \t]*"
    r"(?P<value>'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\{[^}]*\}|[^\s,}\]]*)",
    re.MULTILINE,
)
# Where a secret-named key belongs instead, by a word of its name.
NAMED = {"hub": "leave it unset and export HF_TOKEN (the Hub client reads it)", "wandb": "export WANDB_API_KEY instead"}


def _words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.rsplit(".", 1)[-1])
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def secret_name(name: str) -> bool:
    """The key's name says its value is a secret: ``trainer.hub_token``, ``WANDB_API_KEY``, ``db_password``."""
    words = _words(name)
    return bool(words) and words[-1] in SECRET_WORDS


def _bare_keys(value: str, name: str) -> list[str]:
    """The items of ``value`` (itself, or those of a list, a sweep or words) shaped as a legacy W&B key."""
    if DESCRIBED_WORDS & set(_words(name)):
        return []
    # A `key=value` inside (a command line in a record) is judged under its own key: `logger.tags=[x,<sha>]`.
    value = ASSIGNMENT.sub(lambda m: "" if DESCRIBED_WORDS & set(_words(m["key"])) else f" {m['value']} ", value)
    items = (item.strip("'\"") for item in ITEMS.split(value))
    return [item for item in items if BARE_KEY.pattern.fullmatch(item) and not HEX_DIGEST.fullmatch(item)]


def _environment_secrets() -> dict[str, str]:
    """The secret-named environment variables' values (longest first, so none is masked half)."""
    found = {value: name for name, value in os.environ.items() if secret_name(name) and len(value) >= MIN_ENV_SECRET}
    return {value: found[value] for value in sorted(found, key=len, reverse=True)}


def _null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in NULLS)


def _mask_assignment(match: re.Match[str]) -> str:
    key, value = match["key"], match["value"]
    if not _null(value) and (secret_name(key) or _bare_keys(value, key)):
        return f"{key}={MASK}"
    return match[0]


def _mask_field(match: re.Match[str]) -> str:
    if secret_name(match["key"]) and not _null(match["value"]):
        return match[0][: match.start("value") - match.start()] + MASK
    return match[0]


def mask_text(text: str) -> str:
    """Text (a log line, a command line, a diff, a card) with every secret in it replaced by ``***``."""
    text = FIELD.sub(_mask_field, ASSIGNMENT.sub(_mask_assignment, text))
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
        masked = mask_text(value)
        for item in _bare_keys(value, name):
            masked = masked.replace(item, MASK)
        return masked
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


class Refused(UsageError):
    """A secret refused, in a message that never repeats it; ``values`` holds what was refused, so that what
    Hydra wrote before the refusal can be scrubbed of it (``codegrpo.commands.run``)."""

    def __init__(self, message: str, values: Sequence[str]) -> None:
        super().__init__(message)
        self.values = tuple(values)


def _shape(value: str, name: str, bare: bool = True) -> tuple[Shape, str] | None:
    """(the shape, the secret text) when the value holds a secret, else None; ``bare``: a legacy W&B key too."""
    for shape in (*SHAPES, URL_CREDENTIALS):
        match = shape.pattern.search(value)
        if match:
            return shape, match[0]
    keys = _bare_keys(value, name) if bare else []
    if keys:
        return BARE_KEY, keys[0]
    for secret, variable in _environment_secrets().items():
        if secret in value:
            where = Shape(
                re.compile(re.escape(secret)), f"the value of {variable}", f"leave it to {variable} in the environment"
            )
            return where, secret
    return None


def _by_name(key: str) -> str:
    if key.startswith("hydra.job.env_set."):
        return f"export {key.rsplit('.', 1)[-1]} in the shell instead"
    return next(
        (advice for word, advice in NAMED.items() if word in _words(key)), "pass it in an environment variable instead"
    )


def _leaves(value: Any) -> list[str]:
    """Every scalar in a value, as text: what a refusal scrubs from Hydra's files."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [] if _null(value) or isinstance(value, bool) else [str(value)]


@dataclasses.dataclass(frozen=True)
class Found:
    key: str  # where the secret is: trainer.hub_token, trainer.model_init_kwargs.token
    shape: Shape | None  # what it looks like; None where the key's name says it is a secret
    values: list[str]  # the secret itself, never shown


def _find(value: Any, path: str) -> Found | None:
    """The first secret in a value (a config, an override's value), or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if secret_name(str(key)) and not _null(item):
                return Found(where, None, _leaves(item))
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
            return Found(path, shape[0], [shape[1]])
    return None


@cache
def _override_parser() -> OverridesParser:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def _plain(value: Any) -> Any:
    """An override's parsed value as plain data: a sweep as the list of what it sweeps."""
    from hydra.core.override_parser.types import ChoiceSweep, Glob, QuotedString, Sweep

    if isinstance(value, QuotedString):
        return value.text
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, ChoiceSweep):
        return [_plain(v) for v in value.list]
    if isinstance(value, Glob):
        return [*value.include, *value.exclude]
    return None if isinstance(value, Sweep) else value  # a range or an interval: numbers


def _parsed(arg: str) -> tuple[str, Any] | None:
    """An override as Hydra reads it, (key, plain value), or None where its grammar cannot (Hydra says so)."""
    from hydra.errors import HydraException

    try:
        override = _override_parser().parse_override(arg)
    except HydraException:
        return None
    return override.key_or_group, _plain(override.value())


def _refuse_argument(arg: str, bare: bool) -> None:
    found = _shape(arg, "", bare)
    if found:
        raise Refused(
            f"an argument looks like {found[0].what}, which would be written to {ELSEWHERE}: "
            f"secrets stay off the command line; {found[0].instead}",
            [found[1]],
        )


def refuse_overrides(overrides: Sequence[str]) -> None:
    """Raise Refused, in one line that never repeats the value, for a secret among command-line overrides
    (in a dict's key, a list, a sweep): Hydra would write it to .hydra/, and the run to run_info.json, W&B
    and the model card."""
    for arg in overrides:
        key, is_override, text = arg.partition("=")
        if not is_override or arg.startswith("-"):  # a flag, or a stray argument
            _refuse_argument(arg, bare=True)
            continue
        # As Hydra reads it (a dict, a list, a sweep), or as text where its grammar cannot (Hydra will say so).
        key, value = _parsed(arg) or (key.lstrip("+~"), text)
        if not _null(value):
            found = Found(key, None, _leaves(value)) if secret_name(key) else _find(value, key)
            if found:
                looks = "" if found.shape is None else f"=... looks like {found.shape.what}, which"
                instead = _by_name(found.key) if found.shape is None else found.shape.instead
                raise Refused(
                    f"{found.key}{looks} would be written to {ELSEWHERE}: secrets stay off the command line; {instead}",
                    found.values,
                )
        _refuse_argument(arg, bare=False)  # the override as given: a secret in its key (a legacy key's shape: above)


def refuse_config(config: dict[str, Any]) -> None:
    """Raise Refused for a secret in a composed config (a config file, an ``${oc.env:...}``): the config
    is copied to the run dir, W&B, every checkpoint (TRL pickles its arguments) and the model card."""
    found = _find(config, "")
    if found:
        holds, instead = (
            ("is set", _by_name(found.key))
            if found.shape is None
            else (f"looks like {found.shape.what}", found.shape.instead)
        )
        raise Refused(
            f"{found.key} in the config {holds}: secrets stay out of configs, which are copied to the run "
            f"dir, W&B, every checkpoint and the model card; {instead}",
            found.values,
        )


def _without(value: Any, refused: Sequence[str]) -> Any:
    """``value`` with each of ``refused`` in its strings replaced by ``***``."""
    if isinstance(value, dict):
        return {k: _without(v, refused) for k, v in value.items()}
    if isinstance(value, list):
        return [_without(v, refused) for v in value]
    if isinstance(value, str):
        for secret in refused:
            value = value.replace(secret, MASK)
    return value


def scrub_hydra_files(directory: Path, refused: Sequence[str] = ()) -> list[Path]:
    """Mask the YAML files Hydra wrote before the task started (.hydra/, multirun.yaml), and take out each of
    ``refused`` (values a refusal names, in any shape); returns the files changed. A secret refused later
    still reached them: Hydra writes before any task runs."""
    from omegaconf import OmegaConf

    scrubbed = sorted({value for value in refused if len(value) >= MIN_SCRUBBED}, key=len, reverse=True)
    changed = []
    paths = sorted(directory.glob("*.yaml")) if directory.is_dir() else [directory] if directory.is_file() else []
    for path in paths:
        data = _settled(path)
        masked = _without(mask(data), scrubbed)
        if masked != data:
            written = path.with_name(f".{path.name}.{os.getpid()}")
            OmegaConf.save(OmegaConf.create(masked), written)
            os.replace(written, path)  # whole: another rank may be reading it
            changed.append(path)
    return changed


SETTLE_TRIES, SETTLE_PAUSE_S = 40, 0.05


def _settled(path: Path) -> object:
    """A YAML file's contents. The ranks of a distributed launch share one run dir and each one's Hydra writes
    these files as it starts: a file caught half written is read again, for two seconds at most."""
    import time

    import yaml  # type: ignore[import-untyped]
    from omegaconf import OmegaConf

    for attempt in range(SETTLE_TRIES):
        try:
            return OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        except yaml.YAMLError:
            if attempt == SETTLE_TRIES - 1:
                raise
            time.sleep(SETTLE_PAUSE_S)
    return None  # not reached: the last try raises


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
