"""A fake LLM upstream on loopback for the API proxy's tests: it records every request it
receives (method, path, headers, body) and answers with a canned JSON body."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CANNED = {"content": [{"type": "text", "text": "Looks fine.\nVERDICT: APPROVE"}]}


def chat_completion(content: str, usage: Any = None) -> bytes:
    """An OpenAI-compatible ``/chat/completions`` answer whose message is ``content``
    (for kdev's ``openai`` reviewer pointed at :func:`fake_upstream`), with ``usage`` as
    its ``usage`` field when given (:func:`openai_usage` builds the documented one)."""
    answer: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        answer["usage"] = usage
    return json.dumps(answer).encode()


def openai_usage(prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
    """The ``usage`` of an OpenAI chat completion: ``prompt_tokens`` (the cached ones
    among them), ``completion_tokens``, ``total_tokens``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes


@dataclass
class FakeUpstream:
    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    answer: bytes = json.dumps(CANNED).encode()
    answer_size: int | None = None  # send this many bytes instead of ``answer``
    chunked: bool = False  # answer without Content-Length, in chunks
    delay: float = 0.0  # seconds before answering

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@contextmanager
def fake_upstream() -> Iterator[FakeUpstream]:
    state = FakeUpstream()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            state.seen.append(Seen(self.command, self.path, headers, body))
            time.sleep(state.delay)
            answer = state.answer if state.answer_size is None else b"x" * state.answer_size
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Upstream", "fake")
            if state.chunked:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for start in range(0, len(answer), 1000):
                    piece = answer[start : start + 1000]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that hung up (the proxy's timeout tests)

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
