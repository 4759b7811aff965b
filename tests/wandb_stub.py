"""A local stand-in for the W&B server: answers just enough of its API for the real wandb library to
start, log to and finish an online run, and records every request (method, path, Authorization).

Point ``WANDB_BASE_URL`` at ``server.url``. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    method: str
    path: str
    authorization: str | None
    body: bytes

    def api_key(self) -> str | None:
        """The key of a Basic ``api:<key>`` (or ``<user>:<key>``) Authorization header."""
        if not self.authorization or not self.authorization.startswith("Basic "):
            return None
        return base64.b64decode(self.authorization[len("Basic ") :]).decode().partition(":")[2]

    def graphql(self) -> dict:
        return json.loads(self.body) if self.path == "/graphql" and self.body else {}


@dataclass
class StubServer:
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def netloc(self) -> str:
        return self.url.removeprefix("http://")

    def start(self) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep the test output clean
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path, self.headers.get("Authorization"), body)
                stub.requests.append(request)
                payload = json.dumps(stub.respond(request)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def respond(self, request: Request) -> dict:
        """The smallest answers wandb-core accepts; anything else gets an empty GraphQL result."""
        if request.path != "/graphql":
            return {}  # file_stream and file uploads: an empty JSON object is success
        query = request.graphql().get("query", "")
        variables = request.graphql().get("variables") or {}
        if "upsertBucket" in query:
            return {
                "data": {
                    "upsertBucket": {
                        "inserted": True,
                        "bucket": {
                            "id": "UnVuOjE=",
                            "name": variables.get("name") or "stubrun",
                            "displayName": variables.get("displayName") or "stub",
                            "description": "",
                            "config": "{}",
                            "sweepName": None,
                            "historyLineCount": 0,
                            "project": {
                                "id": "UHJvamVjdDox",
                                "name": variables.get("project") or "p",
                                "entity": {"id": "RW50aXR5OjE=", "name": "stub-entity"},
                            },
                        },
                    }
                }
            }
        if "createRunFiles" in query:
            files = variables.get("files") or []
            return {
                "data": {
                    "createRunFiles": {
                        "runID": "UnVuOjE=",
                        "uploadHeaders": [],
                        "files": [{"name": name, "uploadUrl": f"{self.url}/upload/{name}"} for name in files],
                    }
                }
            }
        return {"data": {}}
