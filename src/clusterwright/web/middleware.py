"""ASGI middleware: the allowed Host names, the same-origin rule for writes, defensive headers,
and the request body limit.

The body limit checks Content-Length first and then counts the bytes as they arrive, so a
chunked upload without a length is cut off too.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clusterwright.web.hosts import host_name, split_host

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_PORTS = {"http": 80, "https": 443}
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


class HostOriginMiddleware:
    """The outermost guard (why: ``web/hosts.py``). A request whose Host is not one of
    ``allowed_hosts`` gets 400. A write (POST, PUT, PATCH, DELETE) gets 403 unless its Origin,
    or when it has none its Referer, names this server's host and port as the Host header
    does. Every answer, refusals included, carries the defensive headers."""

    def __init__(self, app: ASGIApp, allowed_hosts: frozenset[str]) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                message = {**message, "headers": headers}
            await send(message)

        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, with_headers)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # policy violation
        else:
            await _plain(with_headers, *refusal)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        raw = _header(scope, b"host")
        if raw is None:
            return 400, "the request has no Host header"
        try:
            host = split_host(raw)
        except ValueError as exc:
            return 400, f"malformed Host header: {exc}"
        if host[0] not in self.allowed_hosts:
            # What a DNS-rebinding page gets: its own name is still in Host.
            return 400, (f"Host {_short(raw)} is not a name this server answers to; "
                         "`clusterwright web --allowed-host NAME` adds one")
        if scope["type"] != "http" or scope["method"] not in UNSAFE_METHODS:
            return None
        origin = _header(scope, b"origin")
        if origin is not None:
            # "null" (a sandboxed frame, a file, a redirect from elsewhere) is another site too;
            # a present but foreign Origin is final, a Referer cannot overrule it.
            if not _same_authority(origin, host):
                return 403, f"cross-origin request from Origin {_short(origin)} refused"
            return None
        referer = _header(scope, b"referer")
        if referer is None:
            # Browsers send Origin with every form post and fetch of our pages, and Referer
            # too (the pages ask for it with Referrer-Policy: same-origin); a write with
            # neither did not come from them.
            return 403, ("a write must carry an Origin or Referer header naming this server; "
                         "send it from the workbench's own pages")
        if not _same_authority(referer, host):
            return 403, f"cross-origin request from Referer {_short(referer)} refused"
        return None


def _short(text: str, limit: int = 100) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _same_authority(url: str, host: tuple[str, int | None]) -> bool:
    """True when ``url`` (an Origin or a Referer) is http(s) on the host and port of the Host
    header ``host``. A port left out is the default of the URL's scheme on both sides, so a
    page served as https by a TLS proxy in front of this plain-http server still matches."""
    try:
        parts = urlsplit(url)
        port = parts.port
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            return False
        name = host_name(parts.hostname)
    except ValueError:
        return False
    default = DEFAULT_PORTS[parts.scheme]
    return name == host[0] and (port or default) == (host[1] or default)
