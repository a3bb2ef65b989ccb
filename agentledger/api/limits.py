"""A hard cap on request bodies, enforced before any handler parses one; and the headers every
page carries (no framing, no third-party script, nothing cached).

Checked on the declared ``Content-Length`` and again on the bytes actually received (a chunked
body declares nothing), so no client can make the service buffer more than the cap.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentledger.api.problems import ApiProblem, problem_response

DEFAULT_MAX_BODY_BYTES = 64 * 1024
"""Every legitimate body (a decision, a reply, a policy revision) is far smaller."""


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._declared(scope) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        messages, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                messages.append(message)
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            messages.append(message)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(messages, receive), send)

    @staticmethod
    def _declared(scope: Scope) -> int:
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return 0
        return 0

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = ApiProblem(
            413, "payload-too-large", f"request bodies are limited to {self.max_bytes} bytes"
        )
        await problem_response(problem)(scope, receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """The body already read, then the connection's own messages (a disconnect, for SSE)."""
    pending: list[Any] = list(messages)

    async def replayed() -> Message:
        if pending:
            message: Message = pending.pop(0)
            return message
        return await receive()

    return replayed


_PAGE_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class PageHeaders:
    """Pages (the UI, the login form and the API's docs) may run only this origin's script and
    never be framed (clickjacking an Approve button); approvals and tokens are never cached."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path.startswith("/ui/") or path in ("/login", "/logout", "/docs")):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_PAGE_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)
