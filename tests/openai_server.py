"""A local, deterministic OpenAI-compatible chat-completions server for tests.

The only fake in the test suite: it stands in for a remote API (GPT, Gemini behind an
OpenAI-compatible endpoint) so that ``lmms-eval --model openai`` runs end to end offline.
It serves ``POST /v1/chat/completions`` (and ``GET /v1/models``) on 127.0.0.1 at a free port,
records every request body, and answers by a fixed rule (``answer_for``), so runs are
reproducible and tests can assert what the client sent (prompt text, images as base64 data
URLs).

    with OpenAIStubServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        client.chat.completions.create(model="stub", messages=[...])
        server.requests[0]["messages"]
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from spatial_tasks.models.logprob_server import LocalServer

DATA_URL = re.compile(r"^data:(?P<mime>image/[\w.+-]+);base64,(?P<data>.+)$", re.DOTALL)
# Objects of these colours count as "closer" under the default rule (see answer_for).
_WARM = ("red", "orange", "yellow", "magenta", "pink")


class StubHTTPError(Exception):
    """Raise from a responder to answer with this HTTP status (429, 500 ...) instead of a reply."""

    def __init__(self, status: int, message: str = "scripted failure") -> None:
        super().__init__(message)
        self.status, self.message = status, message


class RawReply:
    """Return from a responder to send this body as is (an HTML page, ``{}``, a chat completion
    without choices): how a misconfigured endpoint answers."""

    def __init__(self, body: str, content_type: str = "application/json", status: int = 200) -> None:
        self.body, self.content_type, self.status = body, content_type, status


def prompt_text(body: dict) -> str:
    """All text the request's messages carry, in order, joined by newlines."""
    texts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(part.get("text", "") for part in content if part.get("type") == "text")
    return "\n".join(texts)


def image_urls(body: dict) -> list[str]:
    """The ``image_url.url`` of every image part of the request, in order."""
    urls = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "image_url":
                    url = part.get("image_url")
                    urls.append(url.get("url", "") if isinstance(url, dict) else str(url))
    return urls


def decode_data_url(url: str) -> tuple[str, bytes]:
    """(mime type, bytes) of a base64 image data URL; ValueError if it is not one."""
    match = DATA_URL.match(url)
    if match is None:
        raise ValueError(f"not a base64 image data URL: {url[:60]!r}")
    try:
        return match["mime"], base64.b64decode(match["data"], validate=True)
    except binascii.Error as exc:
        raise ValueError(f"bad base64 in data URL: {exc}") from exc


def answer_for(body: dict) -> str:
    """The default deterministic answer: "Yes" iff the first colour word in the prompt text is
    warm (red, orange, yellow, magenta, pink), else "No" (also when no colour is named).

    Depending on the question's wording, not on a counter, makes runs reproducible and gives
    non-trivial accuracies on yes/no tasks.
    """
    text = prompt_text(body).lower()
    colour = re.search(
        r"\b(red|orange|yellow|magenta|pink|green|blue|cyan|black|white|gray|grey|purple|brown)\b", text
    )
    return "Yes" if colour is not None and colour.group(1) in _WARM else "No"


class OpenAIStubServer(LocalServer):
    """A threaded local HTTP server speaking the OpenAI chat-completions protocol.

    ``requests`` holds the JSON bodies received (thread-safe append), ``responder`` maps a
    body to the assistant's text (default ``answer_for``). Use as a context manager or call
    ``start()``/``stop()``. Any API key is accepted; the Authorization header is recorded in
    ``headers``.
    """

    def __init__(self, responder: Callable[[dict], str] = answer_for, host: str = "127.0.0.1") -> None:
        self.responder = responder
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._serve(host)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers.clear()

    def _record(self, body: dict, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

            def _send_json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._send_json(
                    status,
                    {
                        "error": {
                            "message": message,
                            "type": "invalid_request_error",
                            "param": None,
                            "code": None,
                        }
                    },
                )

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send_json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "stub", "object": "model", "created": 0, "owned_by": "tests"}],
                        },
                    )
                else:
                    self._error(404, f"no route GET {self.path}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._error(404, f"no route POST {self.path}")
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError as exc:
                    self._error(400, f"invalid JSON: {exc}")
                    return
                if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                    self._error(400, "body must be a JSON object with a 'messages' list")
                    return
                server._record(body, {k.lower(): v for k, v in self.headers.items()})
                if body.get("stream"):
                    self._error(400, "streaming is not supported by the test server")
                    return
                try:
                    text = server.responder(body)
                except StubHTTPError as err:  # a scripted failure: rate limit, server error
                    self._error(err.status, err.message)
                    return
                if isinstance(text, RawReply):
                    data = text.body.encode()
                    self.send_response(text.status)
                    self.send_header("Content-Type", text.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                prompt_tokens = len(prompt_text(body).split()) + len(image_urls(body))
                completion_tokens = len(text.split())
                self._send_json(
                    200,
                    {
                        "id": f"chatcmpl-stub-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": str(body.get("model", "stub")),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "logprobs": None,
                                "message": {"role": "assistant", "content": text},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens,
                        },
                    },
                )

        return Handler
