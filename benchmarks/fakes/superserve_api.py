"""An in-process fake of the Superserve HTTP API that really runs the programs, in the local sandbox.

TEST DOUBLE, not Superserve. It lets tests, benchmarks and the demo drive the real ``superserve``
SDK (the sync ``Sandbox`` and the async ``AsyncSandbox``) with no account and no network. Inside
``with FakeSuperserve(...) as fake:`` every httpx request of the process to the Superserve hosts is
answered here, whichever thread or event loop sends it; other hosts pass through untouched, and any
other ``*.superserve.ai`` host is refused, so nothing can reach the real service by mistake.

What it mirrors (superserve 0.11):

- Control plane at ``base_url`` (https://api.superserve.ai), authenticated by ``X-API-Key``:
  POST /sandboxes, GET /sandboxes (``metadata.<key>=<value>`` and ``status`` filters),
  GET and DELETE /sandboxes/{id}, POST /sandboxes/{id}/activate.
  Errors are ``{"error": {"code": ..., "message": ...}}``.
- Data plane at the host the SDK derives (https://sandbox.superserve.ai with an
  ``X-Superserve-Sandbox-Id`` header, or https://boxd-<id>.<host>), authenticated by the sandbox's
  ``X-Access-Token``: POST and GET /files?path=..., POST /exec. Errors are ``{"error": "<message>"}``.
- The status codes the SDK maps onto its exceptions: 401 AuthenticationError, 404 NotFoundError,
  429 RateLimitError (code ``rate_limited`` or ``too_many_sandboxes``), 5xx ServerError.

POST /exec runs the command in a fresh bubblewrap sandbox (``codegrpo.sandbox.local``): a leading
``timeout [-s SIGNAL] N`` sets the time limit, the file the command names is the one written with
files.write under /tmp, ``env`` is added to the command's environment, and a program that runs out
of time exits 137, as under ``timeout -s KILL``. As in a VM, the command may run other processes
(the local sandbox's limits cover them all); unlike a VM, it runs as uid 0 with no capabilities
(so it cannot change uid), as pid 1 of its pid namespace, with the written file read-only and /tmp
the only writable place.

Faults: ``inject(route, fault, times=, after=)`` queues exact faults for one route; ``fault_rates``
draws them at random from a seeded generator. ``latency`` delays each route's answer; the work is
done first, so a client that gives up on a slow create leaves a live sandbox behind, as it would
with the real service.

Not modelled: streaming exec, template builds, snapshots, pause and resume, preview ports, secrets.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import json
import os
import random
import re
import shlex
import threading
import time
import uuid
from collections.abc import Collection, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlparse

import httpx

from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.sandbox.base import Outcome, Program, RunResult
from codegrpo.sandbox.local import LocalSandbox

FAKE_API_KEY = "ss_live_codegrpo-fake-key-not-a-secret"
DEFAULT_BASE_URL = "https://api.superserve.ai"
DEFAULT_SANDBOX_HOST = "sandbox.superserve.ai"
ROUTES = ("create", "list", "get", "kill", "activate", "write", "read", "exec")
KILLED_EXIT_CODE = 128 + 9  # what `timeout -s KILL` exits with when the time runs out
DEFAULT_EXEC_TIMEOUT_S = 60.0
VM_FILES = {"file_size_limit_bytes": 256 << 20, "tmpfs_limit_bytes": 256 << 20}

T = TypeVar("T")


class Fault(str, enum.Enum):
    RATE_LIMITED = "rate_limited"  # 429, code rate_limited
    TOO_MANY_SANDBOXES = "too_many_sandboxes"  # 429, code too_many_sandboxes
    SERVER_ERROR = "server_error"  # 500
    UNAVAILABLE = "unavailable"  # 503
    UNAUTHORIZED = "unauthorized"  # 401
    TIMEOUT = "timeout"  # the server never answers and does nothing: the client's read times out
    LOST_RESPONSE = "lost_response"  # the server does the work, then the client's read times out
    RESET = "reset"  # the connection is reset before the server sees the request
    SLOW = "slow"  # a normal answer, ``slow_s`` seconds late


_STATUS_FAULTS: dict[Fault, tuple[int, str, str]] = {
    Fault.RATE_LIMITED: (429, "rate_limited", "Rate limit exceeded"),
    Fault.TOO_MANY_SANDBOXES: (429, "too_many_sandboxes", "Team has reached its active sandbox limit"),
    Fault.SERVER_ERROR: (500, "internal_error", "Internal server error"),
    Fault.UNAVAILABLE: (503, "service_unavailable", "Service temporarily unavailable"),
    Fault.UNAUTHORIZED: (401, "unauthorized", "Invalid API key"),
}

_CONTROL_PATH = re.compile(r"/sandboxes(?:/(?P<id>[^/]+)(?P<activate>/activate)?)?")


@dataclass
class FakeSandbox:
    """One sandbox as the fake server sees it; kept after deletion, for assertions."""

    id: str
    request: dict[str, Any]  # the create body exactly as the SDK sent it
    access_token: str
    created_at: str
    status: str = "active"
    files: dict[str, bytes] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    @property
    def metadata(self) -> dict[str, str]:
        return self.request.get("metadata") or {}

    def info(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.request["name"],
            "status": self.status,
            "vcpu_count": 1,
            "memory_mib": 1024,
            "created_at": self.created_at,
            "timeout_seconds": self.request.get("timeout_seconds"),
            "auto_delete_seconds": self.request.get("auto_delete_seconds"),
            "network": self.request.get("network"),
            "metadata": self.metadata,
            "preview_access": "legacy_public",
        }


@dataclass
class _Call:
    request: httpx.Request
    route: str | None
    sandbox_id: str | None
    fault: Fault | None
    delay_s: float


@dataclass
class _QueuedFault:
    fault: Fault
    skip: int
    remaining: int


_active_lock = threading.Lock()
_active: FakeSuperserve | None = None


class FakeSuperserve:
    """The fake server; a context manager that routes the process's Superserve traffic to it.

    Counters (read them at any time): ``created``, ``killed``, ``alive``, ``max_alive``, ``executed``
    (programs run to the end), ``requests`` (per route), ``faults`` (per (route, fault)),
    ``rejected_by_limit`` (creates refused because ``max_sandboxes`` were alive), ``unhandled``
    (requests for routes the fake lacks) and ``sandboxes`` (every sandbox ever created, by id).
    """

    def __init__(
        self,
        *,
        latency: Mapping[str, float] | None = None,
        fault_rates: Mapping[str, Mapping[Fault | str, float]] | None = None,
        seed: int = 0,
        api_key: str = FAKE_API_KEY,
        base_url: str = DEFAULT_BASE_URL,
        sandbox_host: str = DEFAULT_SANDBOX_HOST,
        max_sandboxes: int | None = None,
        templates: Collection[str] | None = None,
        slow_s: float = 1.0,
        retry_after_s: float | None = None,
        local_cfg: LocalSandboxConfig | None = None,
    ) -> None:
        """``latency`` and ``fault_rates`` are keyed by route (see ``ROUTES``).

        ``max_sandboxes`` is the team's limit on live sandboxes (429 too_many_sandboxes past it);
        ``templates`` the names ``from_template`` may use (None: any); ``retry_after_s`` the
        Retry-After header sent with every 429 (the SDK honours it when it retries GET and DELETE).
        """
        self.latency = dict(latency or {})
        self.fault_rates = {
            route: {Fault(k): p for k, p in rates.items()} for route, rates in (fault_rates or {}).items()
        }
        for route in [*self.latency, *self.fault_rates]:
            if route not in ROUTES:
                raise ValueError(f"unknown route {route!r}; routes are {', '.join(ROUTES)}")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        parsed = urlparse(self.base_url)
        self._control_host = parsed.hostname or ""
        self._base_path = parsed.path
        self.sandbox_host = sandbox_host
        self.max_sandboxes = max_sandboxes
        self.templates = None if templates is None else set(templates)
        self.slow_s = slow_s
        self.retry_after_s = retry_after_s
        # Each exec gets a fresh sandbox, as each cloud sandbox is its own VM: no warm workers shared between them.
        # A VM's files are as large as its disk: only the exec's output keeps the local sandbox's cap.
        self._local = LocalSandbox(local_cfg or LocalSandboxConfig(warm=False, vm_root=True, **VM_FILES))
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._queued: dict[str, collections.deque[_QueuedFault]] = collections.defaultdict(collections.deque)
        self._originals: tuple[Any, Any] | None = None

        self.sandboxes: dict[str, FakeSandbox] = {}
        self.created = 0
        self.killed = 0
        self.max_alive = 0
        self.executed = 0
        self.rejected_by_limit = 0
        self.requests: collections.Counter[str] = collections.Counter()
        self.faults: collections.Counter[tuple[str, str]] = collections.Counter()
        self.unhandled: list[str] = []

    # ----------------------------------------------------------------------------------- public

    @property
    def alive(self) -> int:
        return self.created - self.killed

    def alive_ids(self) -> list[str]:
        with self._lock:
            return [s.id for s in self.sandboxes.values() if s.status != "deleted"]

    def inject(self, route: str, fault: Fault | str, *, times: int = 1, after: int = 0) -> None:
        """Fail requests ``after + 1`` to ``after + times`` of ``route``, counted from now."""
        if route not in ROUTES:
            raise ValueError(f"unknown route {route!r}; routes are {', '.join(ROUTES)}")
        with self._lock:
            self._queued[route].append(_QueuedFault(Fault(fault), after, times))

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "created": self.created,
                "killed": self.killed,
                "alive": self.alive,
                "max_alive": self.max_alive,
                "executed": self.executed,
                "rejected_by_limit": self.rejected_by_limit,
                "requests": dict(self.requests),
                "faults": {f"{route}/{fault}": n for (route, fault), n in sorted(self.faults.items())},
                "unhandled": list(self.unhandled),
            }

    def start(self) -> FakeSuperserve:
        """Route Superserve traffic here until ``stop()``; prefer ``with FakeSuperserve() as fake``."""
        global _active
        with _active_lock:
            if _active is not None:
                raise RuntimeError("a FakeSuperserve is already active in this process")
            _active = self
        fake = self
        sync_original = httpx.HTTPTransport.handle_request
        async_original = httpx.AsyncHTTPTransport.handle_async_request

        def handle_request(transport: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
            if not fake._intercepts(request):
                return sync_original(transport, request)
            return fake._serve_sync(request)

        async def handle_async_request(transport: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
            if not fake._intercepts(request):
                return await async_original(transport, request)
            return await fake._serve_async(request)

        # Patching the transport classes catches every client, including those the SDK made earlier.
        self._originals = (sync_original, async_original)
        httpx.HTTPTransport.handle_request = handle_request  # type: ignore[method-assign]
        httpx.AsyncHTTPTransport.handle_async_request = handle_async_request  # type: ignore[method-assign]
        return self

    def stop(self) -> None:
        global _active
        if self._originals is None:
            return
        httpx.HTTPTransport.handle_request, httpx.AsyncHTTPTransport.handle_async_request = self._originals  # type: ignore[method-assign]
        self._originals = None
        with _active_lock:
            _active = None

    def __enter__(self) -> FakeSuperserve:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------------------------- serving

    def _serve_sync(self, request: httpx.Request) -> httpx.Response:
        request.read()
        call = self._begin(request)
        outcome = self._early(call) or self._work(call)
        if isinstance(outcome, Program):
            outcome = self._exec_response(_run_blocking(self._local.run(outcome)))
        if call.delay_s:
            time.sleep(call.delay_s)
        return self._finish(call, outcome)

    async def _serve_async(self, request: httpx.Request) -> httpx.Response:
        # Like a real connection: the async client resolves the host on the loop's default executor,
        # which no longer takes work once the interpreter is exiting.
        await asyncio.get_running_loop().run_in_executor(None, _resolve_host, request.url.host)
        await request.aread()
        call = self._begin(request)
        outcome = self._early(call) or self._work(call)
        if isinstance(outcome, Program):
            outcome = self._exec_response(await self._local.run(outcome))
        if call.delay_s:
            await asyncio.sleep(call.delay_s)
        return self._finish(call, outcome)

    def _intercepts(self, request: httpx.Request) -> bool:
        host = request.url.host
        if host in (self._control_host, self.sandbox_host) or self._subdomain_id(host) is not None:
            return True
        if host == "superserve.ai" or host.endswith(".superserve.ai"):
            raise httpx.ConnectError(f"FakeSuperserve is active and refuses to reach {host}", request=request)
        return False

    def _subdomain_id(self, host: str) -> str | None:
        suffix = "." + self.sandbox_host
        if host.startswith("boxd-") and host.endswith(suffix):
            return host[len("boxd-") : -len(suffix)]
        return None

    def _begin(self, request: httpx.Request) -> _Call:
        route, sandbox_id = self._route(request)
        with self._lock:
            self.requests[route or "unhandled"] += 1
            fault = self._draw_fault(route) if route else None
            if fault is not None:
                self.faults[(route or "", fault.value)] += 1
        delay = self.latency.get(route or "", 0.0) + (self.slow_s if fault is Fault.SLOW else 0.0)
        return _Call(request, route, sandbox_id, fault, delay)

    def _route(self, request: httpx.Request) -> tuple[str | None, str | None]:
        url, method = request.url, request.method
        if url.host == self._control_host:
            path = url.path[len(self._base_path) :] if url.path.startswith(self._base_path) else url.path
            match = _CONTROL_PATH.fullmatch(path)
            if match is None:
                return None, None
            sandbox_id = match["id"]
            if sandbox_id is None:
                return {"POST": "create", "GET": "list"}.get(method), None
            if match["activate"]:
                return ("activate" if method == "POST" else None), sandbox_id
            return {"GET": "get", "DELETE": "kill"}.get(method), sandbox_id
        sandbox_id = self._subdomain_id(url.host) or request.headers.get("X-Superserve-Sandbox-Id")
        route = {("POST", "/files"): "write", ("GET", "/files"): "read", ("POST", "/exec"): "exec"}
        return route.get((method, url.path)), sandbox_id

    def _draw_fault(self, route: str) -> Fault | None:
        queue = self._queued.get(route)
        if queue:
            head = queue[0]
            if head.skip:
                head.skip -= 1
                return None
            head.remaining -= 1
            if head.remaining <= 0:
                queue.popleft()
            return head.fault
        draw = self._rng.random()
        for fault, rate in self.fault_rates.get(route, {}).items():
            if draw < rate:
                return fault
            draw -= rate
        return None

    def _early(self, call: _Call) -> httpx.Response | Exception | None:
        """What a fault answers before the server does any work; None when the work goes ahead."""
        request, fault = call.request, call.fault
        if call.route is None:
            with self._lock:
                self.unhandled.append(f"{request.method} {request.url}")
            return self._error(
                call, 404, "not_found", f"FakeSuperserve does not implement {request.method} {request.url.path}"
            )
        if fault is Fault.TIMEOUT:
            return httpx.ReadTimeout("timed out", request=request)
        if fault is Fault.RESET:
            return httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
        if fault in _STATUS_FAULTS:
            status, code, message = _STATUS_FAULTS[fault]
            return self._error(call, status, code, message)
        return None

    @staticmethod
    def _finish(call: _Call, outcome: httpx.Response | Exception) -> httpx.Response:
        if isinstance(outcome, Exception):
            raise outcome
        if call.fault is Fault.LOST_RESPONSE:
            raise httpx.ReadTimeout("timed out", request=call.request)
        return outcome

    def _error(self, call: _Call, status: int, code: str, message: str) -> httpx.Response:
        headers = {}
        if status == 429 and self.retry_after_s is not None:
            headers["Retry-After"] = f"{self.retry_after_s:g}"
        if call.request.url.host == self._control_host:
            return httpx.Response(status, json={"error": {"code": code, "message": message}}, headers=headers)
        return httpx.Response(status, json={"error": message}, headers=headers)

    # ------------------------------------------------------------------------------------ work

    def _work(self, call: _Call) -> httpx.Response | Program:
        if call.request.url.host == self._control_host:
            if call.request.headers.get("X-API-Key") != self.api_key:
                return self._error(call, 401, "unauthorized", "Invalid API key")
            handler = {
                "create": self._create,
                "list": self._list,
                "get": self._get,
                "kill": self._kill,
                "activate": self._activate,
            }[call.route or ""]
            return handler(call)
        with self._lock:
            sandbox = self.sandboxes.get(call.sandbox_id or "")
        if sandbox is None or sandbox.status == "deleted":
            return self._error(call, 404, "not_found", "sandbox not found")
        if call.request.headers.get("X-Access-Token") != sandbox.access_token:
            return self._error(call, 401, "unauthorized", "invalid or expired access token")
        return {"write": self._write, "read": self._read, "exec": self._exec}[call.route or ""](call, sandbox)

    def _create(self, call: _Call) -> httpx.Response:
        body = json.loads(call.request.content or b"{}")
        if not isinstance(body.get("name"), str) or not body["name"]:
            return self._error(call, 400, "invalid_request", "name is required")
        template = body.get("from_template")
        if template is not None and self.templates is not None and template not in self.templates:
            return self._error(call, 404, "not_found", f"template {template!r} not found")
        with self._lock:
            if self.max_sandboxes is not None and self.alive >= self.max_sandboxes:
                self.rejected_by_limit += 1
                return self._error(call, 429, "too_many_sandboxes", "Team has reached its active sandbox limit")
            sandbox = FakeSandbox(
                id=str(uuid.uuid4()),
                request=body,
                access_token=uuid.uuid4().hex,
                created_at=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            )
            self.sandboxes[sandbox.id] = sandbox
            self.created += 1
            self.max_alive = max(self.max_alive, self.alive)
        return httpx.Response(201, json={**sandbox.info(), "access_token": sandbox.access_token})

    def _list(self, call: _Call) -> httpx.Response:
        params = call.request.url.params
        wanted = {k.removeprefix("metadata."): v for k, v in params.multi_items() if k.startswith("metadata.")}
        statuses = params["status"].split(",") if "status" in params else None
        with self._lock:
            found = [
                s.info()
                for s in self.sandboxes.values()
                if s.status != "deleted"
                and all(s.metadata.get(k) == v for k, v in wanted.items())
                and (statuses is None or s.status in statuses)
            ]
        offset = int(params.get("offset", 0))
        limit = int(params["limit"]) if "limit" in params else None
        return httpx.Response(200, json=found[offset : None if limit is None else offset + limit])

    def _live(self, sandbox_id: str | None) -> FakeSandbox | None:
        sandbox = self.sandboxes.get(sandbox_id or "")
        return sandbox if sandbox is not None and sandbox.status != "deleted" else None

    def _get(self, call: _Call) -> httpx.Response:
        with self._lock:
            sandbox = self._live(call.sandbox_id)
        if sandbox is None:
            return self._error(call, 404, "not_found", "Sandbox not found")
        return httpx.Response(200, json=sandbox.info())

    def _kill(self, call: _Call) -> httpx.Response:
        with self._lock:
            sandbox = self._live(call.sandbox_id)
            if sandbox is not None:
                sandbox.status = "deleted"
                self.killed += 1
        if sandbox is None:
            return self._error(call, 404, "not_found", "Sandbox not found")
        return httpx.Response(204)

    def _activate(self, call: _Call) -> httpx.Response:
        with self._lock:
            sandbox = self._live(call.sandbox_id)
            if sandbox is not None:
                sandbox.access_token = uuid.uuid4().hex  # activation rotates the data-plane token
        if sandbox is None:
            return self._error(call, 404, "not_found", "Sandbox not found")
        return httpx.Response(200, json={**sandbox.info(), "access_token": sandbox.access_token})

    def _write(self, call: _Call, sandbox: FakeSandbox) -> httpx.Response:
        path = call.request.url.params.get("path", "")
        if not path.startswith("/"):
            return self._error(call, 400, "invalid_request", "path must be absolute")
        with self._lock:
            sandbox.files[path] = call.request.content
        return httpx.Response(204)

    def _read(self, call: _Call, sandbox: FakeSandbox) -> httpx.Response:
        content = sandbox.files.get(call.request.url.params.get("path", ""))
        if content is None:
            return self._error(call, 404, "not_found", "file not found")
        return httpx.Response(200, content=content, headers={"Content-Type": "application/octet-stream"})

    def _exec(self, call: _Call, sandbox: FakeSandbox) -> httpx.Response | Program:
        body = json.loads(call.request.content or b"{}")
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            return self._error(call, 400, "invalid_request", "command is required")
        with self._lock:
            sandbox.commands.append(command)
        argv = shlex.split(command)
        limit = float(body.get("timeout_s") or DEFAULT_EXEC_TIMEOUT_S)
        if argv[0] == "timeout":
            try:
                wrapper_limit, argv = _strip_timeout(argv)
            except ValueError as error:
                return self._error(call, 400, "invalid_request", str(error))
            limit = min(limit, wrapper_limit)
        if not argv:
            return self._error(call, 400, "invalid_request", "nothing to run")
        env = body.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            return self._error(call, 400, "invalid_request", "env must map strings to strings")
        if any(not k or "=" in k for k in env):
            return self._error(call, 400, "invalid_request", "invalid env name")
        if env:  # set for the command only, as the server does: `env` execs it with them added
            argv = ["env", "--", *(f"{k}={v}" for k, v in env.items()), *argv]
        path = next((arg for arg in argv if arg in sandbox.files), None)
        if path is None:  # a command that runs no written file, such as `echo hi`
            return Program(source="", filename=".empty", command=tuple(argv), timeout_s=limit)
        if os.path.dirname(path) != "/tmp":
            return self._error(
                call, 400, "invalid_request", "FakeSuperserve runs only files written directly under /tmp"
            )
        source = sandbox.files[path].decode("utf-8", "replace")
        return Program(source=source, filename=os.path.basename(path), command=tuple(argv), timeout_s=limit)

    def _exec_response(self, result: RunResult) -> httpx.Response:
        with self._lock:
            self.executed += 1
        if result.outcome is Outcome.SANDBOX_ERROR:
            return httpx.Response(500, json={"error": f"exec failed: {result.error}"})
        if result.outcome is Outcome.TIMEOUT or result.exit_code is None:
            exit_code = KILLED_EXIT_CODE
        else:
            exit_code = result.exit_code if result.exit_code >= 0 else 128 - result.exit_code
        truncated = result.outcome is Outcome.OUTPUT_LIMIT
        stderr = result.stderr + ("\n[output truncated]\n" if truncated else "")
        payload = {"stdout": result.stdout, "stderr": stderr, "exit_code": exit_code, "truncated": truncated}
        return httpx.Response(200, json=payload)


def _strip_timeout(argv: list[str]) -> tuple[float, list[str]]:
    """Parse ``timeout [-s SIGNAL] [-k DURATION] DURATION COMMAND...`` into (seconds, COMMAND...)."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in ("-s", "--signal", "-k", "--kill-after") else 1
    if i >= len(argv):
        raise ValueError(f"cannot parse timeout command {shlex.join(argv)!r}")
    duration = argv[i].removesuffix("s")
    try:
        return float(duration), argv[i + 1 :]
    except ValueError:
        raise ValueError(f"cannot parse timeout duration {argv[i]!r}") from None


def _resolve_host(host: str) -> str:
    return host


def _run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, even from a thread that already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
