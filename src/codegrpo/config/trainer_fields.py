"""The trainer group's fields: every trl.GRPOConfig field, as a name, a type OmegaConf can validate and a default.

Reflecting GRPOConfig imports trl, and with it transformers and torch: seconds, which ``python train.py
--help`` or a misspelt key should not wait for. So the field list is cached in ``grpo_fields.json`` beside
this module, for the trl and transformers versions it was reflected from, and read from there when those
are the installed versions (importlib.metadata reads them without importing either). Other versions are
reflected live, as before the cache. After an upgrade, regenerate it (tests/config/test_trainer_fields.py checks it
against the live GRPOConfig)::

    python -m codegrpo.config.trainer_fields

Types are strings: ``bool``, ``int``, ``float``, ``str``, ``list[T]`` and ``Optional[T]`` of those, and
``Any`` for the rest (a dict, a union of several kinds, a class of transformers'), which OmegaConf takes
unchecked. ``python_type`` turns one back into the annotation the trainer schema uses.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.metadata
import json
import logging
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Optional

log = logging.getLogger(__name__)

CACHE = Path(__file__).with_name("grpo_fields.json")
REGENERATE = "python -m codegrpo.config.trainer_fields"
# The packages whose versions decide GRPOConfig's fields: trl's GRPOConfig extends transformers' TrainingArguments.
PACKAGES = ("trl", "transformers")
# output_dir is always the Hydra run dir; seed is the top-level `seed`.
EXCLUDED = frozenset({"output_dir", "seed"})
PRIMITIVES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str}


@dataclasses.dataclass(frozen=True)
class TrainerField:
    name: str
    type: str  # bool | int | float | str | list[T] | Optional[T] | Any (see python_type)
    default: Any  # JSON data: a scalar, None, a list or a dict


def installed_versions() -> dict[str, str | None]:
    """The installed trl and transformers versions (None: not installed), read without importing them."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def type_name(hint: Any) -> str:
    """A GRPOConfig field's type hint as a type OmegaConf can validate, written as a string."""
    for name, primitive in PRIMITIVES.items():
        if hint is primitive:
            return name
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        optional = type(None) in args
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            inner = type_name(non_none[0])
            return f"Optional[{inner}]" if inner != "Any" and optional else inner
        if str in non_none and all(isinstance(a, type) and issubclass(a, (str, enum.Enum)) for a in non_none):
            return "Optional[str]" if optional else "str"  # an enum's values are strings: TRL takes either
        return "Any"
    if origin is list and len(args) == 1 and type_name(args[0]) in PRIMITIVES:
        return f"list[{type_name(args[0])}]"
    return "Any"


def python_type(name: str) -> Any:
    """The annotation ``type_name`` wrote as ``name``: ``Optional[list[float]]`` -> typing.Optional[list[float]]."""
    if name in PRIMITIVES:
        return PRIMITIVES[name]
    if name == "Any":
        return Any
    if name.startswith("Optional[") and name.endswith("]"):
        inner = python_type(name[len("Optional[") : -1])
        return Optional[inner]  # type: ignore[valid-type]  # noqa: UP045 (OmegaConf 2.3 takes no X | None)
    if name.startswith("list[") and name.endswith("]"):
        return list[python_type(name[len("list[") : -1])]  # type: ignore[misc]
    raise ValueError(f"not a trainer field type: {name!r} (regenerate the cache: {REGENERATE})")


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        raise ValueError(f"GRPOConfig.{f.name} has no default: the trainer group could not leave it out")
    return value.value if isinstance(value, enum.Enum) else value


def reflect() -> list[TrainerField]:
    """Every field of the installed trl.GRPOConfig but output_dir and seed (imports trl: seconds)."""
    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    return [
        TrainerField(f.name, type_name(hints[f.name]), _default(f))
        for f in dataclasses.fields(GRPOConfig)
        if f.init and f.name not in EXCLUDED
    ]


def read_cache(path: Path = CACHE) -> tuple[dict[str, str | None], list[TrainerField]] | None:
    """(the versions it was reflected from, the fields), or None when there is no readable cache."""
    try:
        data = json.loads(path.read_text())
        return (
            {name: data["versions"].get(name) for name in PACKAGES},
            [TrainerField(f["name"], f["type"], f["default"]) for f in data["fields"]],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        log.debug("no usable trainer field cache at %s: %s", path, error)
        return None


def trainer_fields(path: Path = CACHE) -> list[TrainerField]:
    """The cached fields when they were reflected from the installed trl and transformers; else reflected live."""
    cached = read_cache(path)
    versions = installed_versions()
    if cached is not None and cached[0] == versions:
        return cached[1]  # read afresh: no caller shares its defaults
    log.info(
        "the trainer field cache %s is for %s, not the installed %s: reading trl.GRPOConfig itself (slower "
        "start; `%s` regenerates it)",
        path.name,
        cached[0] if cached else None,
        versions,
        REGENERATE,
    )
    return reflect()


def write_cache(path: Path = CACHE) -> list[TrainerField]:
    """Reflect the installed GRPOConfig and write its fields, with trl's and transformers' versions, to ``path``."""
    fields = reflect()
    rows = ",\n".join(f"  {json.dumps(dataclasses.asdict(f), allow_nan=False)}" for f in fields)  # a line each
    path.write_text(
        f'{{"generated_by": {json.dumps(REGENERATE)},\n "versions": {json.dumps(installed_versions())},\n'
        f' "fields": [\n{rows}\n]}}\n'
    )
    return fields


# transformers marks a renamed field by its help text ("Deprecated alias of `activation_checkpointing`, ...").
ALIAS_HELP = re.compile(r"Deprecated alias of `(\w+)`")


def renamed_fields(config_class: type) -> dict[str, str]:
    """{old name: current name} for each field that ``config_class`` (GRPOConfig, TrainingArguments) or a base
    class of it calls a deprecated alias of another of its fields. Read from the installed classes, so a
    version without the rename (transformers 5.17 has only gradient_checkpointing) translates nothing. The
    bases count because a subclass may redeclare the alias with its own help (TRL's GRPOConfig redeclares
    gradient_checkpointing to default it to True)."""
    names = {f.name for f in dataclasses.fields(config_class)}
    renamed: dict[str, str] = {}
    for cls in config_class.__mro__:
        for f in getattr(cls, "__dataclass_fields__", {}).values():
            match = ALIAS_HELP.search(str(f.metadata.get("help", "")))
            if match and match.group(1) in names and match.group(1) != f.name:
                renamed.setdefault(f.name, match.group(1))
    return renamed


def current_names(args: dict[str, Any], config_class: type) -> dict[str, Any]:
    """Keyword arguments for ``config_class`` with its deprecated aliases moved to their current names.

    The current name wins when set; otherwise the alias's value (a class default such as GRPOConfig's
    gradient_checkpointing=True, or the user's trainer.gradient_checkpointing=...) carries over, so the
    behaviour is the alias's and nothing warns. Fields the installed class has no alias for pass as they are.
    """
    args = dict(args)
    for old, new in renamed_fields(config_class).items():
        if old in args:
            value = args.pop(old)
            if args.get(new) is None and value is not None:
                args[new] = value
    return args


def main() -> None:
    fields = write_cache()
    versions = ", ".join(f"{name} {version}" for name, version in installed_versions().items())
    print(f"{CACHE}: {len(fields)} GRPOConfig fields ({versions})", file=sys.stderr)


if __name__ == "__main__":
    main()
