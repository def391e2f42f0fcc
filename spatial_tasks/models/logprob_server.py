"""A small local server that speaks the served protocols' dialects, for tests and benchmarks.

It stands where vLLM or SGLang would, on 127.0.0.1, in front of a transformers image-text model
(the tiny random ones of ``tiny_models`` in tests): it applies the model's own chat template to a
chat request exactly as ``hf_yesno`` does (``families.chat_inputs``), decodes the images, runs the
model and answers with real log-probabilities of the first token. It is not for serving real
models (no batching across requests, one forward pass at a time); use vLLM or SGLang for those.

What it serves, by ``kind``:

* every kind: ``GET /v1/models`` (``owned_by`` = kind) and ``POST /v1/chat/completions`` with
  ``logprobs``/``top_logprobs`` (at most 20, as OpenAI's API), or greedy generation when
  ``max_tokens`` > 1;
* ``vllm``: also ``logprob_token_ids`` and ``return_tokens_as_token_ids`` on chat requests, and
  ``/tokenize``, ``/detokenize``;
* ``sglang``: also ``POST /generate`` (a rendered prompt, ``image_data``, ``token_ids_logprob``),
  and ``/tokenize``, ``/detokenize``.

Without a model (``model_dir=None``) every question gets the same fixed reply after ``latency_s``:
what ``benchmarks/server_throughput.py`` measures the client against. ``faults`` scripts the next
replies of the scoring endpoints (``Fault``): a status with Retry-After, a slow reply, a dropped
connection, an HTML page, a reply without logprobs.

    python -m spatial_tasks.models.logprob_server --model DIR --kind vllm --port 8000
"""

from __future__ import annotations

import argparse
import base64
import binascii
import io
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from PIL import Image

from spatial_tasks.common.errors import UserError

KINDS = ("vllm", "sglang", "openai")
MAX_TOP_LOGPROBS = 20
_DATA_URL = re.compile(r"^data:image/[\w.+-]+;base64,(?P<data>.+)$", re.DOTALL)
# The fixed reply of a server without a model: these tokens, in this order of likelihood.
_FIXED = {"Yes": -0.2, "No": -1.8, "The": -4.0}
_FIXED_IDS = {"Yes": 1, "No": 2, "The": 3}
_FIXED_BY_ID = {i: _FIXED[t] for t, i in _FIXED_IDS.items()}


@dataclass
class Fault:
    """One scripted reply: ``status`` (with ``retry_after`` seconds), ``slow`` (wait ``seconds``
    first), ``drop`` (close the connection without a reply), ``html``, ``no_logprobs``."""

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0


class BadRequest(ValueError):
    pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # 64 clients connecting at once must not wait on a full backlog


class ServerSetupError(UserError, ValueError):
    """A server that cannot start as asked (the model folder, the port, a setting): one line, no traceback."""


MAX_LATENCY_S = 600.0


class ModelBackend:
    """A transformers image-text model answering first-token log-probabilities (float32)."""

    def __init__(self, model_dir: str | Path) -> None:
        import torch

        from spatial_tasks.models import families

        model_type = families.read_model_type(str(model_dir))  # a missing folder or config.json: named
        if not families.is_image_text(model_type):
            raise ServerSetupError(f"--model {model_dir}: a {model_type!r} checkpoint, not an image-text model "
                                   "(the server runs checkpoints that AutoModelForImageTextToText loads)")
        self.torch = torch
        self.model, self.processor = families.family_of(model_type).load(str(model_dir), torch.float32)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        # One request at a time, inputs included: a processor shared by threads is not safe (the
        # tokenizer and the image processor keep state between calls).
        self.lock = threading.Lock()

    def chat_inputs(self, system: str | None, question: str, images: list[Image.Image]):
        from spatial_tasks.models import families

        return families.chat_inputs(self.processor, [(question, images)], system)

    def prompt_inputs(self, text: str, images: list[Image.Image]):
        kwargs: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
        if images:
            kwargs["images"] = [[image.convert("RGB") for image in images]]
        return self.processor(**kwargs)

    def first_token_logprobs(self, inputs) -> Any:
        with self.torch.inference_mode():
            logits = self.model(**inputs, use_cache=False).logits[0, -1].float()
        return self.torch.log_softmax(logits, dim=-1)

    def generate(self, inputs, max_tokens: int) -> str:
        with self.torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False)
        return self.tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    def decode(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id])

    def encode(self, text: str, add_special_tokens: bool) -> list[int]:
        return [int(i) for i in self.tokenizer.encode(text, add_special_tokens=add_special_tokens)]


class LocalServer:
    """An HTTP server on 127.0.0.1 at a free port, serving from a thread: ``start``/``stop`` or a
    ``with`` block. Subclasses give ``_handler_class`` (this one, and the tests' OpenAI stub)."""

    def _serve(self, host: str = "127.0.0.1", port: int = 0) -> None:
        try:
            self._httpd = _HTTPServer((host, port), self._handler_class())
        except OSError as err:
            raise ServerSetupError(f"cannot listen on {host}:{port}: {err.strerror or err} (another server there? "
                                   "--port 0 picks a free one)") from None
        self._thread: threading.Thread | None = None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of this server (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LogprobServer(LocalServer):
    """The server (module docstring). ``requests`` holds the bodies its scoring endpoints received."""

    def __init__(self, model_dir: str | Path | None = None, kind: str = "vllm", model_id: str = "tiny",
                 latency_s: float = 0.0, host: str = "127.0.0.1", port: int = 0, root: str | None = None) -> None:
        if kind not in KINDS:
            raise ServerSetupError(f"kind must be one of {KINDS}, not {kind!r}")
        if not 0.0 <= latency_s <= MAX_LATENCY_S:  # NaN fails too
            raise ServerSetupError(f"--latency must be a number of seconds from 0 to {MAX_LATENCY_S:g}, got {latency_s}")
        self.backend = ModelBackend(model_dir) if model_dir is not None else None
        self.kind, self.model_id, self.latency_s = kind, model_id, latency_s
        self.root = root or f"/models/{model_id}"  # what /v1/models says the weights are
        self.faults: deque[Fault] = deque()
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._serve(host, port)

    def scored(self) -> int:
        with self._lock:
            return len(self.requests)

    # --- answers
    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def models(self) -> dict:
        card = {"id": self.model_id, "object": "model", "owned_by": self.kind, "root": self.root,
                "max_model_len": 32768}
        return {"object": "list", "data": [card]}

    def chat(self, body: dict) -> dict:
        system, question, images = _read_messages(body.get("messages"))
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        wants = bool(body.get("logprobs"))
        if self.backend is None:
            return self._fixed_chat(body)
        inputs = self.backend.chat_inputs(system, question, images)
        if max_tokens > 1 or not wants:
            text = self.backend.generate(inputs, max_tokens)
            return _chat_reply(self.model_id, text, None)
        logprobs = self.backend.first_token_logprobs(inputs)
        as_ids = self.kind == "vllm" and bool(body.get("return_tokens_as_token_ids"))
        name = (lambda i: f"token_id:{i}") if as_ids else self.backend.decode
        top = int(body.get("top_logprobs") or 0)
        if top > MAX_TOP_LOGPROBS:
            raise BadRequest(f"top_logprobs must be at most {MAX_TOP_LOGPROBS}")
        asked = body.get("logprob_token_ids") if self.kind == "vllm" else None
        if asked is not None:
            if not isinstance(asked, list) or len(asked) > 128 or not all(isinstance(i, int) for i in asked):
                raise BadRequest("logprob_token_ids must be a list of at most 128 token ids")
            ids = asked
        else:
            ids = [int(i) for i in logprobs.topk(top).indices] if top else []
        best = int(logprobs.argmax())
        entries = [{"token": name(i), "logprob": float(logprobs[i])} for i in ids]
        first = {"token": name(best), "logprob": float(logprobs[best]), "top_logprobs": entries}
        return _chat_reply(self.model_id, self.backend.decode(best), first)

    def _fixed_chat(self, body: dict) -> dict:
        asked = body.get("logprob_token_ids") if self.kind == "vllm" else None
        if asked is not None:
            entries = [{"token": f"token_id:{i}", "logprob": _FIXED_BY_ID.get(i, -20.0)} for i in asked]
        else:
            entries = [{"token": t, "logprob": v} for t, v in _FIXED.items()]
        first = {"token": "Yes", "logprob": _FIXED["Yes"], "top_logprobs": entries}
        return _chat_reply(self.model_id, "Yes", first)

    def generate(self, body: dict) -> dict:
        text = body.get("text")
        if not isinstance(text, str):
            raise BadRequest("/generate takes a rendered prompt in 'text'")
        urls = body.get("image_data") or []
        images = [_decode_image(u) for u in ([urls] if isinstance(urls, str) else urls)]
        asked = body.get("token_ids_logprob") or []
        if self.backend is None:
            rows = [[_FIXED_BY_ID.get(i, -20.0), i, None] for i in asked]
            return {"text": "Yes", "meta_info": {"output_token_ids_logprobs": [rows]}}
        logprobs = self.backend.first_token_logprobs(self.backend.prompt_inputs(text, images))
        best = int(logprobs.argmax())
        rows = [[float(logprobs[i]), int(i), None] for i in asked]
        return {"text": self.backend.decode(best),
                "meta_info": {"completion_tokens": 1, "output_token_logprobs": [[float(logprobs[best]), best, None]],
                              "output_token_ids_logprobs": [rows]}}

    def tokenize(self, body: dict) -> dict:
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise BadRequest("/tokenize takes 'prompt'")
        if self.backend is None:
            tokens = [_FIXED_IDS[prompt]] if prompt in _FIXED_IDS else [ord(c) + 100 for c in prompt]
        else:
            tokens = self.backend.encode(prompt, bool(body.get("add_special_tokens", True)))
        return {"tokens": tokens, "count": len(tokens), "max_model_len": 32768}

    def detokenize(self, body: dict) -> dict:
        tokens = body.get("tokens")
        if not isinstance(tokens, list):
            raise BadRequest("/detokenize takes 'tokens'")
        if self.backend is None:
            names = {i: t for t, i in _FIXED_IDS.items()}
            text = "".join(names.get(i, chr(max(i - 100, 32))) for i in tokens)
        else:
            text = self.backend.tokenizer.decode(tokens)
        return {"prompt": text} if self.kind == "vllm" else {"text": text}

    def routes(self) -> dict[str, Callable[[dict], dict]]:
        """POST paths this kind serves: chat for every kind, /generate for SGLang, the tokenizer's for both engines."""
        routes = {"/v1/chat/completions": self.chat}
        if self.kind == "sglang":
            routes["/generate"] = self.generate
        if self.kind in ("vllm", "sglang"):
            routes |= {"/tokenize": self.tokenize, "/detokenize": self.detokenize}
        return routes

    def answer(self, route: Callable[[dict], dict], body: dict) -> dict:
        """One route's reply, one model call at a time (the backend is not thread-safe)."""
        if self.backend is None:
            return route(body)
        with self.backend.lock:
            return route(body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, server.models())
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                route = server.routes().get(self.path.rstrip("/"))
                if route is None:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"error": {"message": "the body is not JSON"}})
                    return
                scoring, fault = route in (server.chat, server.generate), None
                if scoring:
                    with server._lock:
                        server.requests.append(body)
                    fault = server._next_fault()
                    if fault is not None and self._fault(fault):
                        return
                    if server.latency_s:
                        time.sleep(server.latency_s)
                try:
                    reply = server.answer(route, body)
                except BadRequest as exc:
                    self._send(400, {"error": {"message": str(exc)}})
                    return
                if scoring and fault is not None and fault.kind == "no_logprobs":
                    for choice in reply.get("choices", []):
                        choice["logprobs"] = None
                    reply.get("meta_info", {}).pop("output_token_ids_logprobs", None)
                self._send(200, reply)

            def _fault(self, fault: Fault) -> bool:
                """Answer with the fault; True when nothing else is to be sent."""
                if fault.kind == "status":
                    headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                    self._send(fault.status, {"error": {"message": "scripted failure"}}, headers)
                    return True
                if fault.kind == "slow":
                    time.sleep(fault.seconds)
                    return False
                if fault.kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return True
                if fault.kind == "html":
                    self._send(200, "<html><body>502 Bad Gateway</body></html>", content_type="text/html")
                    return True
                return False  # no_logprobs: the reply is stripped after it is made

            def _send(self, status: int, body: Any, headers: dict | None = None,
                      content_type: str = "application/json") -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _chat_reply(model: str, text: str, first: dict | None) -> dict:
    choice = {"index": 0, "message": {"role": "assistant", "content": text},
              "logprobs": {"content": [first]} if first is not None else None, "finish_reason": "length"}
    return {"id": "chatcmpl-local", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [choice]}


def _read_messages(messages: Any) -> tuple[str | None, str, list[Image.Image]]:
    """(system prompt, question, images) of an OpenAI chat request's messages."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    system, texts, images = None, [], []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list):
            raise BadRequest("a message's content must be text or a list of parts")
        if message.get("role") == "system":
            system = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            continue
        for part in parts:
            if not isinstance(part, dict):
                raise BadRequest("a content part must be an object")
            if part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif part.get("type") == "image_url":
                url = part.get("image_url")
                images.append(_decode_image(url.get("url") if isinstance(url, dict) else url))
    return system, "\n".join(texts), images


def _decode_image(url: Any) -> Image.Image:
    match = _DATA_URL.match(url) if isinstance(url, str) else None
    if match is None:
        raise BadRequest("an image must be a base64 data URL")
    try:
        image = Image.open(io.BytesIO(base64.b64decode(match["data"], validate=True)))
        image.load()
    except (binascii.Error, OSError) as exc:
        raise BadRequest(f"an image cannot be decoded: {exc}") from exc
    return image.convert("RGB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a transformers image-text model folder (none: the fixed reply)")
    parser.add_argument("--kind", choices=KINDS, default="vllm")
    parser.add_argument("--model-id", default="tiny")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each scoring reply waits")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        server = LogprobServer(args.model, args.kind, args.model_id, args.latency, port=args.port).start()
    except UserError as err:  # a setting, the model folder or the port: one line, exit 2
        parser.exit(2, f"error: {err}\n")
    print(server.base_url, flush=True)  # the caller reads the port from this line
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
