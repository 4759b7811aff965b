"""codegrpo-env, the report a bug needs, and the version check every command makes at start
(codegrpo.config.requirements): run as a user runs them, on this machine and on one made broken on purpose
(a package's metadata of another version first on the path, a torch that does not import, no bwrap)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from codegrpo.config.requirements import SKIP_ENV, declared, installed_version
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.commands import command

SECTIONS = (
    "python",
    "dependencies: declared range, installed, verdict",
    "torch",
    "sandbox",
    "optional",
    "network",
    "offline model",
    "verdict",
)
ESPRIMA = installed_version("esprima")
ESPRIMA_LINE = (
    "esprima 1.0 is installed; codegrpo needs esprima>=4.0.1 (pip install 'esprima>=4.0.1' fixes it; "
    f"{SKIP_ENV}=1 runs anyway)"
)


def sections(stdout: str) -> dict[str, list[str]]:
    """The report's lines under each ``[heading]``."""
    found: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("[") and line.endswith("]"):
            lines = found.setdefault(line[1:-1], [])
        elif line.strip():
            lines.append(line)
    return found


def value(lines: list[str], label: str) -> str:
    """The value on the line of ``label`` (indented or not)."""
    [line] = [line.strip() for line in lines if line.strip().split("  ")[0] == label]
    return line[len(label) :].strip()


def dependency_rows(stdout: str) -> dict[str, list[str]]:
    """The dependencies table: each row's words, by its name (and ``[extra]``)."""
    return {line.split("  ")[0].strip(): line.split() for line in sections(stdout)[SECTIONS[1]]}


def old_esprima(directory: Path) -> Path:
    """A directory that, first on PYTHONPATH, makes importlib.metadata see esprima 1.0 (codegrpo needs
    >=4.0.1); the real package still imports from site-packages."""
    dist = directory / "esprima-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: esprima\nVersion: 1.0\n")
    return directory


def run_with(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def report_here() -> subprocess.CompletedProcess:
    """codegrpo-env on this machine, as it is."""
    return command("codegrpo.env_report")


def test_env_reports_each_section_and_that_this_machine_can_train(report_here):
    assert report_here.returncode == 0, report_here.stdout[-3000:] + report_here.stderr[-3000:]
    found = sections(report_here.stdout)
    assert list(found) == list(SECTIONS)
    assert not any(line.startswith("failed ") for line in report_here.stdout.splitlines())
    assert found["verdict"] == ["this environment can train"]
    assert value(found["python"], "python").endswith(f"({sys.executable})")
    # The installed versions as importlib.metadata reads them, not through the report's own installed_version.
    assert value(found["python"], "codegrpo").startswith(metadata.version("codegrpo"))
    assert value(found["torch"], "torch").startswith(metadata.version("torch"))
    assert value(found["torch"], "trl") == f"{metadata.version('trl')} imports"
    sandbox = found["sandbox"]
    assert value(sandbox, "local sandbox") == "runs a Python program"
    assert any(line.split() == ["limit", "value", "enforced", "by"] for line in sandbox)  # codegrpo-limits' table
    assert value(found["optional"], "esprima") == ESPRIMA
    for name in ("Hub", "W&B"):  # each said once, whether the network is here or not
        assert value(found["network"], name).endswith(("reachable", "not contacted")) or "unreachable" in value(
            found["network"], name
        )
    gguf = Path(value(found["offline model"], "GGUF file"))
    assert gguf.is_file() and gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_env_lists_every_declared_dependency_against_its_range(report_here):
    rows = dependency_rows(report_here.stdout)
    dependencies = declared()
    required = [d for d in dependencies if d.extra is None]
    assert {"torch", "transformers", "trl", "hydra-core", "esprima"} <= {d.name for d in required}
    for d in required:
        assert rows[d.name] == [d.name, d.range, d.installed, "in", "range"]
    for d in dependencies:
        if d.extra is not None and d.installed is not None:
            assert rows[f"{d.name} [{d.extra}]"][-3:] == [d.installed, *d.verdict.value.split()]
    absent = [f"{d.name} [{d.extra}]" for d in dependencies if d.extra is not None and d.installed is None]
    if absent:
        assert value(sections(report_here.stdout)[SECTIONS[1]], "extras not installed") == ", ".join(absent)


def test_env_on_a_broken_machine_says_each_reason_last_and_exits_1(tmp_path):
    # esprima's metadata out of range, a torch that raises on import, no bwrap (nor anything) on PATH, and no
    # HOME for the model's cache dir: every section still reports, each failure in its own line.
    fakes = old_esprima(tmp_path / "site")
    (fakes / "torch").mkdir()
    (fakes / "torch" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "CODEGRPO_CACHE", "PYTHONPATH")}
    empty = tmp_path / "bin"
    empty.mkdir()
    env.update(PYTHONPATH=str(fakes), PATH=str(empty), HF_HUB_OFFLINE="1", WANDB_MODE="offline")
    done = run_with(env, "-m", "codegrpo.env_report")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    found = sections(done.stdout)
    assert list(found) == list(SECTIONS)
    assert dependency_rows(done.stdout)["esprima"] == ["esprima", ">=4.0.1", "1.0", "OUT", "OF", "RANGE"]
    assert value(found["torch"], "torch") == "not importable: ImportError: broken on purpose"
    assert value(found["sandbox"], "bwrap") == "not found"
    assert value(found["sandbox"], "local sandbox").startswith("cannot run programs: bubblewrap (bwrap) is required")
    assert value(found["network"], "Hub") == "offline (HF_HUB_OFFLINE is set): https://huggingface.co not contacted"
    assert value(found["network"], "W&B").startswith("offline (WANDB_MODE=offline)")
    assert value(found["offline model"], "failed").startswith("InterpolationResolutionError")
    assert found["verdict"][0] == "this environment cannot train:"
    reasons = [line.strip().removeprefix("- ") for line in found["verdict"][1:]]
    assert reasons[:2] == [ESPRIMA_LINE, "torch is not importable: ImportError: broken on purpose"]
    assert reasons[2].startswith("the local sandbox does not work here: bubblewrap (bwrap) is required")
    assert reasons[2].endswith("(sandbox=superserve runs programs in cloud VMs)") and len(reasons) == 3
    assert "Traceback" not in done.stderr


def test_train_py_with_a_dependency_out_of_range_stops_at_once_with_one_line(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(old_esprima(tmp_path / "site")), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    env.pop(SKIP_ENV, None)
    run_dir = tmp_path / "run"
    done = run_with(env, "train.py", f"hydra.run.dir={run_dir}")
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines() == [f"error: {ESPRIMA_LINE}"]
    assert not run_dir.exists()  # it stopped before its first step: no run dir left
