"""HTTP front of the simulator: auth, faults, rate limits, ETags, the request log, sockets.

:func:`dispatch` turns one request into an :class:`Outgoing` under the simulator lock (the
routes themselves live in :mod:`ghsim.routes`); the handler only does socket I/O and
sleeps for injected delays outside the lock.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import time
import traceback
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from ghsim.apps import AppAuthFailed, jwt_route, looks_like_jwt
from ghsim.core import GhsimError, token_digest
from ghsim.faults import gzip_bomb, plain_chunks
from ghsim.gitops import GitError
from ghsim.model import (
    Fault,
    RequestRecord,
    TokenInfo,
    iso,
    parse_iso,
)
from ghsim.payloads import DOCS, Renderer, error_body
from ghsim.routes import Ctx, HttpError, serve_route

if TYPE_CHECKING:
    from ghsim.state import SimState as GitHubSim

PRIMARY_MESSAGE = (
    "API rate limit exceeded for user ID {user_id}. If you reach out to GitHub Support for "
    "help, please include the request ID {request_id} and timestamp {stamp}."
)
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
    "again. If you reach out to GitHub Support for help, please include the request ID "
    "{request_id}."
)
RATE_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
HIDDEN_HEADERS = {"authorization", "cookie", "proxy-authorization"}

# Methods of GitHubSim callable through POST /_ghsim/rpc (for out-of-process scenarios).
RPC_METHODS = frozenset(
    """add_token remove_token user create_repo fork_repo add_collaborator commit_to_base
    open_pr push force_push merge_base_into_head edit_pr label unlabel set_draft
    set_auto_merge set_review_decision set_merge_state close reopen merge comment
    edit_comment set_comment_user_null review set_check_run set_status set_rate_limit
    inject_fault inject_secondary_limit inject_body_fault inject_redirect clear_faults
    set_pr_user_null set_head_repo_null
    set_time advance use_real_time sync branch_sha repo_path pull pulls clear_requests
    thread_resolved minimized protect_branch unprotect_branch add_ruleset grant_admin
    add_review_bot review_bots create_review review_comments create_status apply_suggestion
    create_app add_app_key revoke_app_key install_app suspend_installation unsuspend_installation
    set_token_lifetime enforce_secondary_limits secondary_usage reset_secondary_usage
    """.split()
)


@dataclass
class Outgoing:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False
    # An answer-bound fault (faults.inject_body_fault): ``huge`` sends ``size`` plain
    # bytes instead of ``body``; ``drip`` sends ``body`` a byte every ``drip`` seconds.
    huge: int | None = None
    drip: float | None = None
    holder: str | None = None  # the secondary-limit holder in flight (ghsim/secondary.py)


# == dispatch ================================================================================


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    wanted = etag.removeprefix("W/")
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == wanted:
            return True
    return False


def _encode(value: Any) -> bytes:
    """Compact JSON, as api.github.com sends it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _token_from(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    return ""  # present but unusable -> bad credentials


def _rpc(sim: GitHubSim, raw: bytes) -> Outgoing:
    def reply(status: int, value: Any) -> Outgoing:
        return Outgoing(status, _encode(value), {"content-type": "application/json"})

    if not sim.admin_rpc:
        return reply(404, error_body("Not Found"))
    try:
        call = json.loads(raw or b"{}")
        method = call["method"]
        if method not in RPC_METHODS:
            return reply(400, {"error": f"not an RPC method: {method}"})
        kwargs = call.get("kwargs") or {}
        for key in ("when", "reset_at"):
            if isinstance(kwargs.get(key), str):
                kwargs[key] = parse_iso(kwargs[key])
        result = getattr(sim, method)(*(call.get("args") or []), **kwargs)
    except Exception as exc:  # the caller gets the reason; the sim keeps serving
        return reply(400, {"error": f"{type(exc).__name__}: {exc}"})
    return reply(200, {"result": _jsonable(result)})


def _jsonable(value: Any) -> Any:
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "__fspath__"):
        return str(value)
    if hasattr(value, "isoformat"):
        return iso(value)
    if value is None or isinstance(value, str | int | float | bool | dict):
        return value
    return repr(value)


@dataclass
class _Exchange:
    """One request on its way through :func:`dispatch`."""

    method: str
    path: str
    query: dict[str, str]
    query_pairs: list[tuple[str, str]]
    headers: dict[str, str]
    json: Any
    host: str
    request_id: str = field(default_factory=lambda: secrets.token_hex(8).upper())
    info: TokenInfo | None = None
    app: Any = None  # the App of a verified JWT (ghsim/apps.py)
    counted: bool = False
    delay: float = 0.0
    truncate: bool = False
    malformed: bool = False
    body_fault: Fault | None = None
    out_headers: dict[str, str] = field(default_factory=dict)
    holder: str | None = None

    @property
    def resource(self) -> str | None:
        """The rate-limit resource this request counts against (None: free)."""
        if self.path == "/rate_limit":
            return None
        return "graphql" if self.path == "/graphql" else "core"


Answer = tuple[int, Any]


def _authenticate(sim: GitHubSim, ex: _Exchange) -> Answer | None:
    token = _token_from(ex.headers.get("authorization"))
    if token is None:
        if sim.anonymous:
            return None
        return 401, error_body("Requires authentication", DOCS, 401)
    if looks_like_jwt(token) and jwt_route(ex.path):
        try:
            ex.app = sim.verify_jwt(token)
        except AppAuthFailed as exc:
            return exc.status, error_body(exc.message, DOCS, exc.status)
        ex.info = ex.app.jwt_info
        return None
    ex.info = sim._tokens.get(token_digest(token))
    if ex.info is None:
        return 401, error_body("Bad credentials", DOCS, 401)
    refused = sim.token_refusal(ex.info, ex.path)  # an installation token's limits
    if refused is not None:
        return refused[0], error_body(refused[1], DOCS, refused[0])
    return None


def _injected_fault(sim: GitHubSim, ex: _Exchange) -> Answer | None:
    fault = sim._take_fault(ex.method, ex.path)
    if fault is None:
        return None
    ex.delay = fault.delay or 0.0
    ex.truncate, ex.malformed = fault.truncate, fault.malformed
    if fault.location is not None:
        return _redirect(ex, fault.location, fault.status or 301)
    if fault.body_kind is not None:
        ex.body_fault = fault
        return None  # answer normally, then replace or drip the body (_finish)
    if fault.secondary:
        if fault.retry_after is not None:
            ex.out_headers["retry-after"] = str(fault.retry_after)
        message = SECONDARY_MESSAGE.format(request_id=ex.request_id)
        return fault.status or 403, error_body(message, RATE_DOCS)
    if fault.status is not None:
        known = fault.status in HTTPStatus._value2member_map_
        phrase = HTTPStatus(fault.status).phrase if known else "Error"
        return fault.status, fault.body or error_body(phrase, DOCS, fault.status)
    return None  # delay / truncate / malformed: answer normally, then mangle


def _redirect(ex: _Exchange, location: str, status: int) -> Answer:
    """GitHub's answer for a moved resource (a renamed repository)."""
    if "?" not in location and ex.query_pairs:
        location = f"{location}?{urlencode(ex.query_pairs)}"
    ex.out_headers["location"] = location
    phrase = HTTPStatus(status).phrase
    return status, {"message": phrase, "url": location, "documentation_url": DOCS}


def _mangled(ex: _Exchange, out: Outgoing) -> Outgoing:
    """``out`` with the exchange's answer-bound fault applied."""
    fault = ex.body_fault
    if fault is None:
        return out
    if fault.body_kind == "gzip_bomb":
        out.body = gzip_bomb(fault.size or 1)
        out.headers["content-encoding"] = "gzip"
        out.headers.pop("etag", None)
    elif fault.body_kind == "huge":
        out.huge = fault.size or 0
        out.headers.pop("etag", None)
    else:
        out.drip = fault.drip_seconds
    return out


def _secondary_limit(sim: GitHubSim, ex: _Exchange) -> Answer | None:
    """Charge the request's points to its holder; refuse it over an enforced limit."""
    if ex.resource is None:
        return None
    ex.holder = sim.charge_secondary(ex.info, ex.method)
    if ex.holder is not None:
        return None
    ex.out_headers["retry-after"] = "60"
    return 403, error_body(SECONDARY_MESSAGE.format(request_id=ex.request_id), RATE_DOCS)


def _primary_limit(sim: GitHubSim, ex: _Exchange) -> Answer | None:
    if ex.resource is None or sim._bucket(ex.info, ex.resource).remaining > 0:
        return None
    message = PRIMARY_MESSAGE.format(
        user_id=ex.info.user.id if ex.info else 0,
        request_id=ex.request_id,
        stamp=iso(sim.now()),
    )
    return 403, error_body(message, RATE_DOCS)


def _routed(sim: GitHubSim, ex: _Exchange) -> Answer:
    ctx = Ctx(
        sim=sim,
        method=ex.method,
        path=ex.path,
        query=ex.query,
        query_pairs=ex.query_pairs,
        json=ex.json,
        base_url=f"http://{ex.host}",
        render=Renderer(f"http://{ex.host}"),
        user=ex.info.user if ex.info else None,
        token=ex.info,
        app=ex.app,
    )
    try:
        payload = serve_route(ctx)
        status = ctx.status
        ex.out_headers.update(ctx.headers)
    except HttpError as exc:
        status, payload = exc.status, exc.body
    except (GhsimError, GitError, ValueError, KeyError) as exc:
        traceback.print_exc(file=sys.stderr)
        status, payload = 500, error_body(f"ghsim: {type(exc).__name__}: {exc}", DOCS, 500)
    if ex.method == "GET" and 200 <= status < 300:
        etag = _etag(_encode(payload))
        ex.out_headers["etag"] = etag
        if _etag_matches(ex.headers.get("if-none-match"), etag):
            return 304, None  # unchanged: free of charge
    if ex.resource is not None:
        bucket = sim._bucket(ex.info, ex.resource)
        bucket.remaining = max(0, bucket.remaining - 1)
        ex.counted = True
    return status, payload


def _finish(sim: GitHubSim, ex: _Exchange, status: int, payload: Any) -> Outgoing:
    bucket = sim._bucket(ex.info, ex.resource or "core")
    headers = {
        "content-type": "application/json; charset=utf-8",
        "x-github-request-id": ex.request_id,
        "x-github-media-type": "github.v3; format=json",
        "x-github-api-version-selected": "2022-11-28",
        "vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
        "x-ratelimit-limit": str(bucket.limit),
        "x-ratelimit-remaining": str(bucket.remaining),
        "x-ratelimit-used": str(bucket.used),
        "x-ratelimit-reset": str(bucket.reset_at),
        "x-ratelimit-resource": ex.resource or "core",
        **ex.out_headers,
    }
    body = b"" if status == 304 else _encode(payload)
    if ex.malformed and body:
        body = body[: max(1, len(body) // 2)]
    sim._record(
        RequestRecord(
            method=ex.method,
            path=ex.path,
            query=ex.query,
            status=status,
            headers={k: v for k, v in ex.headers.items() if k not in HIDDEN_HEADERS},
            response_headers=dict(headers),
            body=ex.json if ex.method != "GET" else None,
            user=ex.info.user.login if ex.info else None,
            resource=ex.resource if ex.counted else None,
            counted=ex.counted,
            at=sim.now(),
        )
    )
    return _mangled(ex, Outgoing(status, body, headers, ex.delay, ex.truncate))


def dispatch(
    sim: GitHubSim, method: str, target: str, headers: dict[str, str], raw: bytes, host: str
) -> Outgoing:
    """Serve one request (``headers`` have lower-case names): auth, faults, limits, route."""
    split = urlsplit(target)
    path = split.path.rstrip("/") or "/"
    if path == "/_ghsim/rpc" and method == "POST":
        return _rpc(sim, raw)
    try:
        body_json = json.loads(raw) if raw else None
    except ValueError:
        body_json = None
    pairs = parse_qsl(split.query, keep_blank_values=True)
    ex = _Exchange(method, path, dict(pairs), pairs, headers, body_json, host)
    with sim.lock:
        answer = (
            _authenticate(sim, ex)
            or _injected_fault(sim, ex)
            or _primary_limit(sim, ex)
            or _secondary_limit(sim, ex)
            or _routed(sim, ex)
        )
        out = _finish(sim, ex, *answer)
        out.holder = ex.holder
        return out


# == socket side =============================================================================


class _Handler(BaseHTTPRequestHandler):
    # Headers and body go out in two writes; without TCP_NODELAY every keep-alive
    # response waits ~40 ms for the peer's delayed ACK.
    disable_nagle_algorithm = True

    protocol_version = "HTTP/1.1"
    server_version = "ghsim"
    sys_version = ""
    timeout = 60
    server: _Server

    def version_string(self) -> str:
        return "ghsim"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Quiet: the request log lives in ``GitHubSim.requests``."""

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        host = headers.get("host") or f"{self.server.sim.host}:{self.server.server_address[1]}"
        try:
            out = dispatch(self.server.sim, self.command, self.path, headers, raw, host)
        except Exception:  # never leave a client hanging
            traceback.print_exc(file=sys.stderr)
            out = Outgoing(500, _encode(error_body("ghsim internal error")), {})
        if out.delay:
            time.sleep(out.delay)
        try:
            self.send_response(out.status)
            for name, value in out.headers.items():
                self.send_header(name, value)
            if out.status != 304:
                size = out.huge if out.huge is not None else len(out.body)
                self.send_header("content-length", str(size))
            if out.truncate:
                self.send_header("connection", "close")
            self.end_headers()
            if out.truncate:
                self.wfile.write(out.body[: len(out.body) // 2])
                self.wfile.flush()
                self.close_connection = True
            elif out.status != 304:
                self._write_body(out)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            if out.holder is not None:
                self.server.sim.secondary_done(out.holder)

    def _write_body(self, out: Outgoing) -> None:
        if out.huge is not None:
            for piece in plain_chunks(out.huge):
                self.wfile.write(piece)
        elif out.drip is not None:
            for index in range(len(out.body)):
                if index:
                    time.sleep(out.drip)
                self.wfile.write(out.body[index : index + 1])
                self.wfile.flush()
        else:
            self.wfile.write(out.body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, sim: GitHubSim, address: tuple[str, int]) -> None:
        self.sim = sim
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about a client that hung up (one refusing a bomb or a drip, say)."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def make_server(sim: GitHubSim, host: str, port: int) -> _Server:
    return _Server(sim, (host, port))
