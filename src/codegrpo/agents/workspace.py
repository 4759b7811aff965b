"""An episode's workspace: the task's files, kept on the host between tool calls, and the tools that act on it.

Files live here, not in a sandbox: each shell command runs in a fresh sandbox run that is handed the files and
hands them back (harness/workspace.py), so one episode sees its own files from call to call and never another
episode's, and a process the command leaves behind dies with its run. Reading and writing a file need no
sandbox. Every call counts against the episode's Budgets; a call past one is refused with a clear status.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import posixpath
from dataclasses import dataclass, field

from codegrpo.config.rollout import Budgets
from codegrpo.config.sandbox import LocalSandboxConfig, SandboxConfig
from codegrpo.harness import sandbox_source
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend


class ToolStatus(enum.StrEnum):
    ok = "ok"
    failed = "failed"  # the command exited non-zero, or a file could not be read or written
    timeout = "timeout"
    budget = "budget"  # a budget of the episode is spent: the call did nothing
    infra = "infra"  # the sandbox failed: not the agent's doing


@dataclass(frozen=True)
class ToolCall:
    """One call and what came of it, as the trajectory records it."""

    tool: str
    argument: str
    status: ToolStatus
    observation: str
    seconds: float = 0.0


@dataclass
class Workspace:
    """The files of one episode (relative POSIX path -> bytes), the calls made on them and what they cost."""

    files: dict[str, bytes]
    budgets: Budgets
    site: str  # pytest's folder in the sandbox (sandbox.pytest_site)
    calls: list[ToolCall] = field(default_factory=list)
    sandbox_s: float = 0.0

    def exhausted(self) -> str | None:
        """The budget this episode has spent, or None."""
        if len(self.calls) >= self.budgets.tool_calls:
            return f"tool calls ({self.budgets.tool_calls})"
        if self.sandbox_s >= self.budgets.sandbox_s:
            return f"sandbox seconds ({self.budgets.sandbox_s:g})"
        return None

    def _record(self, tool: str, argument: str, status: ToolStatus, text: str, seconds: float = 0.0) -> str:
        limit = self.budgets.output_chars
        if len(text) > limit:
            text = text[:limit] + f"\n[... {len(text) - limit} more characters cut]"
        while "<|im_end|>" in text or "<|im_start|>" in text:  # chat control tokens are not output, however nested
            text = text.replace("<|im_end|>", "").replace("<|im_start|>", "")
        self.calls.append(ToolCall(tool, argument, status, text, seconds))
        return text

    def refuse_if_spent(self, tool: str, argument: str) -> str | None:
        spent = self.exhausted()
        if spent is None:
            return None
        text = f"budget exhausted: {spent}; the episode's calls do nothing now"
        return self._record(tool, argument, ToolStatus.budget, text)

    def read(self, path: str) -> str:
        if (refused := self.refuse_if_spent("read_file", path)) is not None:
            return refused
        name = normal_path(path)
        if name is None or name not in self.files:
            return self._record("read_file", path, ToolStatus.failed, f"no such file: {path}")
        return self._record("read_file", path, ToolStatus.ok, self.files[name].decode("utf-8", "replace"))

    def write(self, path: str, content: str) -> str:
        if (refused := self.refuse_if_spent("write_file", path)) is not None:
            return refused
        name = normal_path(path)
        if name is None:
            return self._record("write_file", path, ToolStatus.failed, f"not a path inside the workspace: {path}")
        data = content.encode("utf-8")
        after = {**self.files, name: data}
        if len(after) > self.budgets.workspace_files or sum(map(len, after.values())) > self.budgets.workspace_bytes:
            return self._record("write_file", path, ToolStatus.budget, "the workspace would be over its size budget")
        self.files = after
        return self._record("write_file", path, ToolStatus.ok, f"wrote {len(data)} bytes to {name}")

    async def shell(self, backend: SandboxBackend, command: str) -> str:
        """Run ``command`` in this workspace in a fresh sandbox run: the observation the model gets."""
        if (refused := self.refuse_if_spent("bash", command)) is not None:
            return refused
        [result] = await backend.run_many([self.shell_program(command)])
        return self.take(command, result)

    def shell_program(self, command: str) -> Program:
        """The sandbox program that runs ``command`` in this workspace."""
        timeout = min(self.budgets.command_s, max(0.1, self.budgets.sandbox_s - self.sandbox_s))
        request = {
            "mode": "shell",
            "files": encode_files(self.files),
            "command": command,
            "site": self.site,
            "timeout_s": timeout,
            "max_output": self.budgets.output_chars * 4,
            "max_files": self.budgets.workspace_files,
            "max_bytes": self.budgets.workspace_bytes,
        }
        return workspace_program(request, timeout + 5.0)

    def take(self, command: str, result: RunResult) -> str:
        """What a shell command's run did to the workspace, and the observation the model gets."""
        self.sandbox_s += result.duration_s
        report = read_report(result)
        if report is None:
            status = ToolStatus.timeout if result.outcome is Outcome.TIMEOUT else ToolStatus.infra
            why = "the command ran past its time" if status is ToolStatus.timeout else "the sandbox failed"
            return self._record("bash", command, status, f"{why}; the workspace is as it was", result.duration_s)
        if report["over"] is not None:
            over = {"files": "files", "bytes": "bytes"}[report["over"]]
            text = f"the command left the workspace over its budget of {over}: its changes are dropped"
            return self._record("bash", command, ToolStatus.budget, text, result.duration_s)
        self.files = decode_files(report["files"])
        status = ToolStatus.ok if report["exit_code"] == 0 else ToolStatus.failed
        status = ToolStatus.timeout if report["timed_out"] else status
        head = "timed out" if report["timed_out"] else f"exit code {report['exit_code']}"
        output = report["output"] or "(no output)"
        return self._record("bash", command, status, f"{head}\n{output}", result.duration_s)


def sandbox_config(cfg: SandboxConfig, budgets: Budgets, site: str) -> SandboxConfig:
    """``cfg`` for workspaces: room in a run's output and /tmp for the whole workspace (a shell command's report
    carries its files as base64), and the local sandbox's (and Ray's) pytest folder bound read-only. A cloud VM
    has no host folder to bind: its image brings pytest (docs/agents.md)."""
    roomy = dataclasses.replace(
        cfg,
        stdout_limit_bytes=max(cfg.stdout_limit_bytes, 2 * budgets.workspace_bytes),
        tmpfs_limit_bytes=max(cfg.tmpfs_limit_bytes, 4 * budgets.workspace_bytes),
    )
    if isinstance(roomy, LocalSandboxConfig) and site not in roomy.extra_ro_paths:
        roomy = dataclasses.replace(roomy, extra_ro_paths=[*roomy.extra_ro_paths, site])
    return roomy


def workspace_program(request: dict, timeout_s: float) -> Program:
    source = sandbox_source("workspace")
    return Program(source=source, timeout_s=timeout_s, inputs=(json.dumps(request),), prelude_chars=len(source))


def read_report(result: RunResult) -> dict | None:
    """The workspace program's report (its stdout's one line), or None where the run did not end with one.
    Whatever the line holds (nested past the parser's depth, not JSON), it is None, never an error here."""
    run = result.runs[0] if result.runs else result
    if run.outcome is not Outcome.EXITED or run.exit_code != 0:
        return None
    lines = run.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if len(lines) == 1 else None
    except Exception:  # RecursionError too: a report is plain data, a few levels deep
        return None
    return report if isinstance(report, dict) else None


def normal_path(path: str) -> str | None:
    """``path`` as a workspace path (relative, no ``..``), or None where it leaves the workspace."""
    name = posixpath.normpath(path.strip().removeprefix("./"))
    if not name or name == "." or name.startswith(("/", "../")) or name == ".." or "\x00" in name:
        return None
    return name


def encode_files(files: dict[str, bytes]) -> dict[str, str]:
    return {name: base64.b64encode(data).decode("ascii") for name, data in files.items()}


def decode_files(files: dict[str, str]) -> dict[str, bytes]:
    decoded = {}
    for name, data in files.items():
        if (path := normal_path(name)) is not None:
            decoded[path] = base64.b64decode(data)
    return decoded
