"""codegrpo's declared dependencies against what is installed: the check every command makes before it
starts (``check_dependencies``), and the table ``codegrpo-env`` prints (``declared``).

The ranges are pyproject's, read back from codegrpo's installed metadata (importlib.metadata), so they
cannot drift from what pip was told. Nothing is imported to learn a version: the check costs a few
milliseconds, and a transformers or trl out of range fails with one line naming it, not with an
AttributeError deep in the trainer. CODEGRPO_SKIP_VERSION_CHECK=1 skips it (for trying another version).
"""

from __future__ import annotations

import enum
import importlib.metadata
import os
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from codegrpo.errors import UsageError

DISTRIBUTION = "codegrpo"
SKIP_ENV = "CODEGRPO_SKIP_VERSION_CHECK"
# How a range reads best: lower bounds first (">=4.56,<6", where packaging's own order is "<6,>=4.56").
_OPERATOR_ORDER = {"===": 0, "==": 0, "~=": 1, ">=": 1, ">": 1, "<=": 2, "<": 2, "!=": 3}


class Verdict(enum.Enum):
    IN_RANGE = "in range"
    OUT_OF_RANGE = "OUT OF RANGE"
    NOT_INSTALLED = "not installed"
    UNKNOWN = "not comparable"  # an installed version that is not PEP 440: nothing to say either way


@dataclass(frozen=True)
class Dependency:
    name: str  # as declared ("huggingface-hub")
    specifier: SpecifierSet
    extra: str | None  # the codegrpo extra that brings it (through another package's extra, too); None: required
    installed: str | None  # the installed version; None when it is not installed

    @property
    def range(self) -> str:
        """The declared range, lower bounds first; "any" when unbounded."""
        specs = sorted(self.specifier, key=lambda spec: (_OPERATOR_ORDER.get(spec.operator, 4), str(spec)))
        return ",".join(str(spec) for spec in specs) or "any"

    @property
    def requirement(self) -> str:
        return self.name if not len(self.specifier) else f"{self.name}{self.range}"

    @property
    def verdict(self) -> Verdict:
        if self.installed is None:
            return Verdict.NOT_INSTALLED
        try:
            version = Version(self.installed)
        except InvalidVersion:
            return Verdict.UNKNOWN
        # An installed pre-release (a dev build of transformers) is judged by its number like any other.
        return Verdict.IN_RANGE if self.specifier.contains(version, prereleases=True) else Verdict.OUT_OF_RANGE

    @property
    def wrong(self) -> bool:
        """Out of range or missing: what the check refuses in a required dependency."""
        return self.verdict in (Verdict.OUT_OF_RANGE, Verdict.NOT_INSTALLED)


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requires(distribution: str) -> list[str]:
    try:
        return importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return []  # codegrpo run from src/ without being installed: nothing is declared


def _provided_extras(distribution: str) -> list[str]:
    try:
        return importlib.metadata.metadata(distribution).get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        return []


def _applies(marker: Marker | None, extra: str) -> bool:
    """Whether a requirement with ``marker`` holds here (this Python, this platform) for ``extra``
    ("" for a plain install)."""
    return marker is None or marker.evaluate({"extra": extra})


def _parsed(lines: Iterable[str]) -> list[Requirement]:
    requirements = []
    for line in lines:
        try:
            requirements.append(Requirement(line))
        except InvalidRequirement:
            continue  # metadata pip itself would have refused; not ours to judge
    return requirements


def declared(requirements: Iterable[str] | None = None, extras_too: bool = True) -> list[Dependency]:
    """Each dependency codegrpo declares, with its installed version: the required ones first, then (with
    ``extras_too``) those of its extras, including what an extra brings through another package's extra
    (``trl[vllm]``: vllm).

    ``requirements`` are Requires-Dist lines (codegrpo's installed metadata by default)."""
    extras = _provided_extras(DISTRIBUTION)
    own = _parsed(_requires(DISTRIBUTION) if requirements is None else requirements)
    found: dict[str, Dependency] = {}
    nested: list[tuple[Requirement, str | None]] = []

    def add(requirement: Requirement, extra: str | None) -> None:
        key = canonicalize_name(requirement.name)
        if key != DISTRIBUTION and key not in found:
            found[key] = Dependency(requirement.name, requirement.specifier, extra, installed_version(requirement.name))

    for requirement in own:
        extra: str | None = None
        if not _applies(requirement.marker, ""):
            extra = next((name for name in extras if _applies(requirement.marker, name)), None)
            if extra is None or not extras_too:
                continue  # for another platform or Python, or an extra's that is not asked for
        add(requirement, extra)
        if requirement.extras and canonicalize_name(requirement.name) != DISTRIBUTION:
            for inner in _parsed(_requires(requirement.name)):
                if not _applies(inner.marker, "") and any(_applies(inner.marker, x) for x in requirement.extras):
                    nested.append((inner, extra))
    for requirement, extra in nested:
        add(requirement, extra)
    return sorted(found.values(), key=lambda dependency: dependency.extra is not None)


def mismatch_line(wrong: list[Dependency]) -> str:
    """One line for the required dependencies that are out of range or missing, and the pip command that
    installs them in range."""
    found = ", ".join(
        f"{d.name} {d.installed} is installed" if d.installed is not None else f"{d.name} is not installed"
        for d in wrong
    )
    needs = " and ".join(d.requirement for d in wrong)
    fix = "pip install " + " ".join(f"'{d.requirement}'" for d in wrong)
    return f"{found}; codegrpo needs {needs} ({fix} fixes it; {SKIP_ENV}=1 runs anyway)"


def skipped() -> bool:
    return os.environ.get(SKIP_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def check_dependencies(requirements: Iterable[str] | None = None) -> None:
    """Every required dependency is installed and inside its declared range, or UsageError with one line
    naming each that is not. Skipped when CODEGRPO_SKIP_VERSION_CHECK=1."""
    if skipped():
        return
    wrong = [d for d in declared(requirements, extras_too=False) if d.wrong]
    if wrong:
        raise UsageError(mismatch_line(wrong))
