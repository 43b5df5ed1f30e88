"""ASGI middleware: the request body limit, the same-origin rule for writes, and headers.

The body limit checks Content-Length first and then counts the bytes as they arrive, so a
chunked upload without a length is cut off too.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


async def _plain(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k.lower() == name:
            return str(v.decode("latin-1"))
    return None


class BodyLimitMiddleware:
    """Answer 413 to a request whose body is larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return (f"request body is larger than this server's limit of {self.max_bytes:,} bytes; "
                "paste a smaller scenario")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _plain(send, 400, "Content-Length is not a number")
                return
            if declared > self.max_bytes:
                await _plain(send, 413, self._message())
                return
        seen = 0
        started = False
        rejected = False

        async def limited_receive() -> Message:
            # Answer 413 ourselves and tell the app the client left: an exception raised here
            # would be turned into a 400 by the form parser.
            nonlocal seen, rejected
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    rejected = True
                    if not started:
                        await _plain(send, 413, self._message())
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if rejected:
                return  # the 413 has been sent; drop whatever the app answers
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, limited_receive, tracking_send)


class SameOriginMiddleware:
    """Refuse a write whose Origin header names another site (a page elsewhere posting a form
    to this local server), and add defensive headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] in UNSAFE_METHODS:
            origin = _header(scope, b"origin")
            host = _header(scope, b"host")
            # "null" (a sandboxed frame or a file) is another site too.
            if origin is not None and urlsplit(origin).netloc != host:
                await _plain(send, 403, f"cross-origin request from {origin} refused")
                return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
