"""The credential-injecting proxy of a command reviewer's leg (``reviewer.api_proxy``).

A reviewer under prompt injection prints whatever it holds, in any encoding; so it holds
no API key. kdev reads the key from its own environment and runs this proxy for the leg:
the reviewer is told a base URL on loopback (``base_url_env``), and every request it
makes there is forwarded to the one configured ``upstream`` origin with the reviewer's
own auth headers stripped and the key header added (``x-api-key: KEY``, or
``Authorization: Bearer KEY``). It accepts origin-form requests only; ``CONNECT``, an
absolute-form target, a path outside the upstream's prefix, a ``Host`` other than its own
and an ``Upgrade`` get 403 and a logged reason, and the upstream never sees them. Each
request is bounded (``max_request_bytes``, ``max_response_bytes``,
``request_timeout_seconds``) and logged at INFO (method, path without query, status,
bytes in and out; never a header value); :class:`ProxyStats` counts the leg.

It listens on a UNIX socket in the leg's private directory when the reviewer runs in
bubblewrap (the sandbox has no network; :mod:`wrapper.review.bridge` carries loopback
TCP inside to the socket), else on an ephemeral port of host loopback. Why: D65.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from wrapper.config import ApiProxy
from wrapper.errors import ReviewerSpawnError
from wrapper.review.sandbox import ProxyEndpoint, Sandbox

log = logging.getLogger("kdev.proxy")

# Never forwarded: hop-by-hop headers, what httpx sets itself, and any credential the
# reviewer sends (it has none that matter, and the key header is kdev's alone).
_DROPPED_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "host",
        "content-length",
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
    }
)
_DROPPED_ANSWER_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "set-cookie",
    }
)
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes
CLIENT_IDLE_SECONDS = 120.0
CONNECT_TIMEOUT_SECONDS = 30.0
_CHUNK = 64 * 1024


class Refused(Exception):
    """A request the proxy does not forward: its status and the logged reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class ProxyStats:
    """What one leg's proxy forwarded and refused."""

    requests: int = 0
    refused: int = 0
    bytes_in: int = 0  # request bodies from the reviewer
    bytes_out: int = 0  # answer bodies to the reviewer
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, *, refused: bool, bytes_in: int, bytes_out: int) -> None:
        with self._lock:
            self.requests += 1
            self.refused += int(refused)
            self.bytes_in += bytes_in
            self.bytes_out += bytes_out


@dataclass(frozen=True)
class Upstream:
    """The one origin requests go to, and the path prefix they must stay under."""

    scheme: str
    host: str
    port: int | None
    prefix: str

    @classmethod
    def parse(cls, url: str) -> Upstream:
        parts = urlsplit(url)
        assert parts.hostname is not None  # ApiProxy validated it
        return cls(parts.scheme, parts.hostname, parts.port, parts.path.rstrip("/"))

    def url(self, target: str) -> httpx.URL:
        return httpx.URL(
            scheme=self.scheme, host=self.host, port=self.port, raw_path=target.encode("ascii")
        )

    def covers(self, path: str) -> bool:
        return not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CLIENT_IDLE_SECONDS
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server API
        pass  # every request is logged once, by _handle

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # http.server's own refusals (bad request line, unknown method): one log line too.
        log.info("api proxy refused a request: HTTP %d (%s)", code, message or "malformed")
        self.server.proxy.stats.count(refused=True, bytes_in=0, bytes_out=0)
        self.close_connection = True
        self._answer(code, (message or "refused").encode())

    def do_CONNECT(self) -> None:  # noqa: N802 - http.server API
        self._handle()

    def do_GET(self) -> None:  # noqa: N802
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET  # noqa: N815

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _handle(self) -> None:
        proxy = self.server.proxy
        path = self.path.split("?", 1)[0]
        try:
            proxy.check(self.command, self.path, self.headers.get_all("Host") or [], self.headers)
            body = self._body(proxy.config.max_request_bytes)
        except Refused as refused:
            log.info(
                "api proxy refused %s %s: HTTP %d (%s)",
                self.command,
                path[:200],
                refused.status,
                refused.reason,
            )
            proxy.stats.count(refused=True, bytes_in=0, bytes_out=0)
            self._answer(refused.status, f"kdev api proxy: {refused.reason}\n".encode())
            return
        status, sent, note = proxy.forward(self, body)
        log.info(
            "api proxy %s %s -> %d (in %d B, out %d B)%s",
            self.command,
            path,
            status,
            len(body),
            sent,
            note,
        )
        proxy.stats.count(refused=False, bytes_in=len(body), bytes_out=sent)

    def _body(self, limit: int) -> bytes:
        coding = self.headers.get("Transfer-Encoding", "").strip().lower()
        if coding == "chunked":
            return self._chunked(limit)
        if coding:
            raise Refused(501, f"transfer-encoding {coding[:40]!r} is not supported")
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise Refused(400, "bad Content-Length") from None
        if length < 0:
            raise Refused(400, "bad Content-Length")
        if length > limit:
            raise Refused(413, f"request body over {limit} bytes")
        return self.rfile.read(length)

    def _chunked(self, limit: int) -> bytes:
        body = bytearray()
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise Refused(400, "bad chunk size") from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers are dropped
                return bytes(body)
            if len(body) + size > limit:
                raise Refused(413, f"request body over {limit} bytes")
            body += self.rfile.read(size)
            self.rfile.readline(8)


class _ProxyServer(socketserver.ThreadingMixIn, socketserver.BaseServer):
    """Either socket family; the handler reaches the proxy through ``self.proxy``."""

    daemon_threads = True
    block_on_close = False
    proxy: ApiProxyServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        kind = sys.exc_info()[0]
        log.warning("api proxy: a connection failed (%s)", kind.__name__ if kind else "?")


class _UnixServer(_ProxyServer, socketserver.UnixStreamServer):
    pass


class _TcpServer(_ProxyServer, socketserver.TCPServer):
    allow_reuse_address = False

    def get_request(self) -> tuple[Any, Any]:
        # Headers and body go out in two writes: no Nagle wait for a delayed ACK.
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class ApiProxyServer:
    """One leg's proxy. ``socket_path``: listen there (bwrap), else on 127.0.0.1:0.
    ``own_port`` is the port the reviewer's base URL names (the bridge's, under bwrap);
    ``transport`` replaces httpx's network transport (tests)."""

    def __init__(
        self,
        config: ApiProxy,
        key: str,
        *,
        socket_path: Path | None = None,
        own_port: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = config
        self.upstream = Upstream.parse(config.upstream)
        self.stats = ProxyStats()
        value = f"Bearer {key}" if config.header == "authorization" else key
        self._key_header = (config.header, value)
        # Building the client (its TLS context) takes a while: it is built beside the
        # reviewer's own start (__enter__), and the first request waits for it.
        self._clients: list[httpx.Client] = []
        self._client_problem = ""
        self._building = threading.Thread(
            target=self._build_client, args=(transport,), name="kdev-proxy-client", daemon=True
        )
        server: _ProxyServer
        port = own_port or 0
        if socket_path is not None:
            server = _UnixServer(str(socket_path), _Handler)
            socket_path.chmod(0o600)
        else:
            tcp = _TcpServer(("127.0.0.1", 0), _Handler)
            server, port = tcp, int(tcp.socket.getsockname()[1])
        server.proxy = self
        self._server = server
        self.socket_path = socket_path
        self.port = port
        self._own_hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="kdev-api-proxy", daemon=True
        )

    @property
    def base_url(self) -> str:
        """What the reviewer is told (each name in ``base_url_env``)."""
        return f"http://127.0.0.1:{self.port}{self.upstream.prefix}"

    def __enter__(self) -> ApiProxyServer:
        self._building.start()
        self._thread.start()
        return self

    def _build_client(self, transport: httpx.BaseTransport | None) -> None:
        timeout = httpx.Timeout(
            self.config.request_timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS
        )
        try:
            client = httpx.Client(transport=transport, timeout=timeout, follow_redirects=False)
        except Exception as exc:  # e.g. an unreadable SSL_CERT_FILE: every request is a 502
            self._client_problem = type(exc).__name__
            log.error("api proxy: cannot build its HTTP client (%s)", self._client_problem)
            return
        self._clients.append(client)

    def _client(self) -> httpx.Client | None:
        self._building.join()
        return self._clients[0] if self._clients else None

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        client = self._client()
        if client is not None:
            client.close()
        stats = self.stats
        log.info(
            "api proxy: %d requests (%d refused), %d B in, %d B out",
            stats.requests,
            stats.refused,
            stats.bytes_in,
            stats.bytes_out,
        )

    def check(self, method: str, target: str, hosts: list[str], headers: Any) -> None:
        """Raise :class:`Refused` unless the request may go upstream."""
        if method == "CONNECT":
            raise Refused(403, "CONNECT is not forwarded")
        if not target.startswith("/"):
            raise Refused(403, "only origin-form request targets are forwarded")
        if len(hosts) != 1 or hosts[0].strip().lower() not in self._own_hosts:
            raise Refused(403, "the Host header names another origin")
        if headers.get("Upgrade") is not None:
            raise Refused(403, "protocol upgrades are not forwarded")
        if not self.upstream.covers(target.split("?", 1)[0]):
            raise Refused(403, f"path outside the upstream prefix {self.upstream.prefix}")
        if any(ord(c) < 33 or ord(c) > 126 for c in target):
            raise Refused(400, "request target with spaces or non-ASCII")

    def _headers(self, received: Any) -> list[tuple[str, str]]:
        dropped = _DROPPED_HEADERS | {self.config.header}
        headers = [(n, v) for n, v in received.items() if n.lower() not in dropped]
        if received.get("Accept-Encoding") is None:
            # Else httpx asks for gzip, and the raw answer would reach a client that
            # cannot read it.
            headers.append(("Accept-Encoding", "identity"))
        headers.append(self._key_header)
        return headers

    def forward(self, handler: _Handler, body: bytes) -> tuple[int, int, str]:
        """Send one request upstream and stream the answer back: (status, bytes sent,
        a note for the log)."""
        deadline = time.monotonic() + self.config.request_timeout_seconds
        url = self.upstream.url(handler.path)
        client = self._client()
        if client is None:
            handler._answer(502, b"kdev api proxy: no HTTP client\n")
            return 502, 0, f" (no HTTP client: {self._client_problem})"
        request = client.build_request(
            handler.command, url, headers=self._headers(handler.headers), content=body
        )
        try:
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            handler._answer(504, b"kdev api proxy: upstream timed out\n")
            return 504, 0, " (upstream timed out)"
        except httpx.HTTPError as exc:
            handler._answer(502, b"kdev api proxy: upstream unreachable\n")
            return 502, 0, f" (upstream unreachable: {type(exc).__name__})"
        try:
            return self._relay(handler, response, deadline)
        finally:
            response.close()

    def _relay(
        self, handler: _Handler, response: httpx.Response, deadline: float
    ) -> tuple[int, int, str]:
        length = response.headers.get("Content-Length")
        limit = self.config.max_response_bytes
        if length is not None and length.isdigit() and int(length) > limit:
            handler._answer(502, b"kdev api proxy: the upstream's answer is over the cap\n")
            return 502, 0, f" (upstream answered {length} bytes, over {limit})"
        handler.send_response_only(response.status_code, response.reason_phrase)
        for raw_name, raw_value in response.headers.raw:
            name = raw_name.decode("latin-1")
            if name.lower() not in _DROPPED_ANSWER_HEADERS:
                handler.send_header(name, raw_value.decode("latin-1"))
        bodiless = handler.command == "HEAD" or response.status_code in (204, 304)
        chunked = length is None and not bodiless
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            handler.send_header("Content-Length", length)
        handler.end_headers()
        sent, note = 0, ""
        try:
            for whole in response.iter_raw(_CHUNK):
                chunk = whole[: limit - sent]
                if len(chunk) < len(whole):
                    note = f" (answer cut at {limit} bytes)"
                if chunk:
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    sent += len(chunk)
                if note:
                    break
                if time.monotonic() > deadline:
                    note = " (answer cut at the request deadline)"
                    break
            else:
                if chunked:
                    handler.wfile.write(b"0\r\n\r\n")
        except httpx.HTTPError as exc:
            note = f" (upstream broke off: {type(exc).__name__})"
        except OSError:
            note = " (the reviewer hung up)"
        if note:
            handler.close_connection = True  # the client sees a truncated answer
        return response.status_code, sent, note


def proxy_key(config: ApiProxy, environ: Mapping[str, str]) -> str:
    """The key from kdev's own environment; ``reviewer_key_missing`` when unset."""
    key = environ.get(config.key_env, "")
    if not key:
        raise ReviewerSpawnError(
            f"the API key variable {config.key_env} (api_proxy.key_env) is not set",
            "reviewer_key_missing",
        )
    return key


@contextmanager
def leg_proxy(
    config: ApiProxy,
    environ: Mapping[str, str],
    private: Path,
    sandbox: Sandbox,
    *,
    transport: httpx.BaseTransport | None = None,
) -> Iterator[tuple[dict[str, str], ProxyEndpoint | None]]:
    """The proxy of one leg, running while the block runs: what the reviewer's
    environment gains (base URLs, placeholders) and, under bwrap, the endpoint to bind."""
    key = proxy_key(config, environ)
    endpoint = None
    if sandbox.kind == "bwrap":
        endpoint = ProxyEndpoint(private / "api.sock")
        if len(str(endpoint.socket)) > MAX_SOCKET_PATH:
            raise ReviewerSpawnError(
                f"the proxy socket path {endpoint.socket} is too long; set TMPDIR shorter",
                "reviewer_spawn_failed",
            )
    server = ApiProxyServer(
        config,
        key,
        socket_path=endpoint.socket if endpoint else None,
        own_port=endpoint.port if endpoint else None,
        transport=transport,
    )
    with server:
        env = dict(config.placeholder_env)
        env.update(dict.fromkeys(config.base_url_env, server.base_url))
        yield env, endpoint
