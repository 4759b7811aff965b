"""The package's own names (codegrpo/__init__.py): each public name loads from its module on first use and is
then the package's, importing the package loads none of them, and a name it does not have is an AttributeError."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import codegrpo

EXPECTED = {
    "AsyncCodeReward",
    "CodeReward",
    "LocalSandboxConfig",
    "MemoryBackend",
    "Outcome",
    "Problem",
    "Program",
    "RaySandboxConfig",
    "RunResult",
    "SandboxBackend",
    "SandboxConfig",
    "Scored",
    "Status",
    "SuperserveSandboxConfig",
    "Verdict",
    "code_reward",
    "offline_model",
    "score",
}


def test_the_public_names_are_listed_once_each_with_where_they_live():
    assert set(codegrpo.__all__) == EXPECTED and len(codegrpo.__all__) == len(EXPECTED)
    assert set(codegrpo._WHERE) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_public_name_is_the_object_its_module_defines(name):
    value = getattr(codegrpo, name)
    assert value is getattr(importlib.import_module(codegrpo._WHERE[name]), name)
    assert codegrpo.__dict__[name] is value  # kept: the next lookup does not go through __getattr__


def test_a_name_the_package_does_not_have_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"^module 'codegrpo' has no attribute 'Trainer'$"):
        codegrpo.Trainer  # noqa: B018
    assert not hasattr(codegrpo, "scorer")


def test_dir_lists_every_public_name_sorted():
    listed = dir(codegrpo)
    assert set(listed) >= EXPECTED and "__version__" in listed and listed == sorted(listed)


def test_the_version_is_the_projects():
    from codegrpo.resources import PROJECT_ROOT

    assert f'version = "{codegrpo.__version__}"' in (PROJECT_ROOT / "pyproject.toml").read_text()


def test_importing_the_package_loads_no_module_until_a_name_is_used():
    code = (
        "import sys, codegrpo\n"
        "print(sorted(m for m in sys.modules if m.startswith('codegrpo.')))\n"
        "codegrpo.Problem\n"
        "print('codegrpo.data.problems' in sys.modules, 'codegrpo.reward.code_reward' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True False"]
