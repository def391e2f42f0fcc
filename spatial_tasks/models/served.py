"""First-token Yes/No log-probabilities from a served model: vLLM, SGLang or any OpenAI-compatible API.

The protocol is the in-process one (``hf_yesno``, SpatialTunnel paper §4): p = sigma(l_Yes - l_No)
over the model's FIRST generated token. A server returns log-probabilities, log softmax of the
logits; the softmax's normaliser cancels in l_Yes - l_No, so p is the same number. Each question
is one request with ``max_tokens=1`` whose user turn holds the images (lossless PNG data URLs,
never resized), then the question: the order of ``hf_yesno``'s chat template.

Dialects -- how the label tokens' values are asked for and read back:

* ``top_logprobs`` (any OpenAI-compatible chat endpoint): the ``top_logprobs`` most likely first
  tokens (at most 20 on OpenAI's API). A label outside them is **censored**: its value is only
  known to be at most the last one listed, and that bound stands in for it (``Reading.censored``
  names the label). A censored label's p is therefore an upper bound for Yes (lower for No); when
  both labels are censored p is 1/2. ``rescore`` counts censored questions.
* ``vllm``: vLLM's ``logprob_token_ids`` on its chat endpoint, with ``return_tokens_as_token_ids``:
  the exact values of the label tokens, whatever their rank.
* ``sglang``: SGLang's native ``/generate`` with ``token_ids_logprob``: exact values. ``/generate``
  takes a rendered prompt, so the model's chat template is applied here (``tokenizer=``).

Every reading also carries the label mass m = p(Yes) + p(No) (summed over the spellings under
``answer_rule=variants``): exact in the ``vllm`` and ``sglang`` dialects; from ``top_logprobs`` it
counts the listed labels only, a lower bound where a label is censored.

Label tokens follow ``hf_yesno``'s rule (``answer_tokens``: ``exact`` or ``variants``); their
ids come from the server's ``/tokenize`` (vLLM, SGLang) or a ``tokenizer=`` path or Hub id. An API
that shares no tokenizer is read by token text.

Replies are cached on disk (``ReplyCache``), keyed by the server's model identity, the
model_version asked for, the dialect and the request body, so that an interrupted run resumes
with only the missing questions. Up to ``num_concurrent`` requests are in flight; 429s, 5xx,
timeouts and dropped connections are retried with backoff, honouring ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import hashlib
import io
import json
import math
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import httpx
from PIL import Image

from spatial_tasks.common.errors import RunStopped, UserError, stop_run
from spatial_tasks.common.yesno import YesNoLogits, label_mass

OPENAI_TOP_LOGPROBS = 20  # the most OpenAI's API returns; vLLM's default --max-logprobs is also 20
CACHE_ENV = "SPATIAL_TASKS_SERVED_CACHE"
RETRIED_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


class ServedError(UserError, ValueError):
    """A setting or a server that the served protocol cannot use (one line)."""


class ServerFailed(RunStopped):
    """The run stops: a bad setting, or a question without a usable reply (one line, exit status 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("spatial-tasks: openai_yesno: " + message)


def stop(failure: str | ServerFailed) -> NoReturn:
    """End the run with this failure as the terminal's last line (exit status 2)."""
    stop_run(failure if isinstance(failure, ServerFailed) else ServerFailed(failure))


class _Failed(Exception):
    """A question failed for good inside the event loop (turned into ServerFailed outside it:
    asyncio must not see a SystemExit)."""


class MalformedReply(ValueError):
    """A 200 reply that does not hold what the dialect asked for (no logprobs, wrong shape, HTML)."""


# --- labels ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Labels:
    """The Yes and No label tokens: ids where a tokenizer is known, and their texts (how a
    ``top_logprobs`` reply spells them). ``log_fields`` go into every logged sample."""

    yes_texts: tuple[str, ...]
    no_texts: tuple[str, ...]
    yes_ids: tuple[int, ...] | None = None
    no_ids: tuple[int, ...] | None = None
    rule: str = "exact"

    @property
    def ids(self) -> list[int]:
        if self.yes_ids is None or self.no_ids is None:
            raise ServedError("this dialect asks for the label tokens by id, and no tokenizer is known: pass "
                              "tokenizer=<path or Hub id> in --model_args, or use dialect=top_logprobs")
        return [*self.yes_ids, *self.no_ids]

    def log_fields(self) -> dict[str, Any]:
        return {"yes_ids": list(self.yes_ids or ()), "no_ids": list(self.no_ids or ()),
                "yes_tokens": list(self.yes_texts), "no_tokens": list(self.no_texts), "answer_rule": self.rule}


def labels_from_tokenizer(tokenizer: Any, yes_text: str, no_text: str, rule: str) -> Labels:
    """``hf_yesno``'s label ids for this tokenizer (``answer_tokens``) and their decoded texts."""
    from spatial_tasks.models.answer_tokens import answer_tokens

    tokens = answer_tokens(tokenizer, yes_text, no_text, rule)
    decode = getattr(tokenizer, "decode_one", None) or (lambda i: tokenizer.decode([i]))
    return Labels(tuple(decode(i) for i in tokens.yes_ids), tuple(decode(i) for i in tokens.no_ids),
                  tokens.yes_ids, tokens.no_ids, rule)


def labels_by_text(yes_text: str, no_text: str, rule: str) -> Labels:
    """Labels read by token text alone (an API that shares no tokenizer): the word itself under
    ``exact``; under ``variants`` every case and leading-space spelling."""
    from spatial_tasks.models.answer_tokens import RULES, spellings

    if rule not in RULES:
        raise ServedError(f"answer_rule={rule!r}: choose one of {', '.join(RULES)}")
    if rule == "exact":
        return Labels((yes_text,), (no_text,), rule=rule)
    return Labels(tuple(spellings(yes_text)), tuple(spellings(no_text)), rule=rule)


class ServerTokenizer:
    """The server's own tokenizer through ``/tokenize`` and ``/detokenize`` (vLLM, SGLang), shaped
    like the part of a transformers tokenizer that ``answer_tokens`` uses."""

    def __init__(self, client: httpx.Client, root: str, model: str) -> None:
        self.client, self.root, self.model = client, root, model
        self.name_or_path = f"{model} at {root}"

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        body = _post_json(self.client, f"{self.root}/tokenize",
                          {"model": self.model, "prompt": text, "add_special_tokens": add_special_tokens})
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ServedError(f"{self.root}/tokenize did not return a token id list: {str(body)[:120]!r}")
        return tokens

    def decode_one(self, token_id: int) -> str:
        body = _post_json(self.client, f"{self.root}/detokenize", {"model": self.model, "tokens": [token_id]})
        text = body.get("prompt", body.get("text")) if isinstance(body, dict) else None
        if not isinstance(text, str):
            raise ServedError(f"{self.root}/detokenize did not return text: {str(body)[:120]!r}")
        return text

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.decode_one(i) for i in ids]


def _post_json(client: httpx.Client, url: str, body: dict) -> Any:
    try:
        response = client.post(url, json=body)
    except httpx.HTTPError as exc:
        raise ServedError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise ServedError(f"{url} answered HTTP {response.status_code}: {response.text[:160]!r}")
    try:
        return response.json()
    except ValueError as exc:
        raise ServedError(f"{url} did not answer JSON: {response.text[:120]!r}") from exc


# --- the server --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Server:
    """Where the model is served and what it is: ``identity`` (id, root, owned_by of ``/v1/models``)
    keys the cache, ``kind`` (vllm, sglang or other) picks the ``auto`` dialect."""

    base_url: str  # the OpenAI base URL, ending in /v1
    model_version: str
    identity: dict[str, Any]
    kind: str

    @property
    def root(self) -> str:
        """The server's root, where vLLM and SGLang keep /tokenize and /generate."""
        return self.base_url.removesuffix("/v1")

    @property
    def tokenizes(self) -> bool:
        """Whether it offers ``/tokenize`` (the engines a dialect of ours ``serves``: vLLM, SGLang)."""
        return any(d.serves == self.kind for d in DIALECT_CLASSES.values())


def discover(client: httpx.Client, base_url: str, model_version: str) -> Server:
    """Ask ``/v1/models`` what is served. A server without that endpoint (some APIs) is taken at its
    word; one that serves other models is an error listing them."""
    base_url = base_url.rstrip("/")
    try:
        response = client.get(f"{base_url}/models")
    except httpx.HTTPError as exc:
        raise ServedError(f"cannot reach the server at {base_url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code in (401, 403):
        raise ServedError(f"{base_url}/models refused the API key (HTTP {response.status_code}): pass api_key= or set "
                          "OPENAI_API_KEY")
    try:
        cards = response.json().get("data") if response.status_code == 200 else None
    except (ValueError, AttributeError):
        cards = None
    if not isinstance(cards, list) or not all(isinstance(c, dict) for c in cards):
        return Server(base_url, model_version, {"id": model_version}, "other")
    card = next((c for c in cards if c.get("id") == model_version), None)
    if card is None:
        served = sorted(str(c.get("id")) for c in cards)
        raise ServedError(f"{base_url} serves {served}, not model_version={model_version!r}: pass one of those")
    owner = str(card.get("owned_by", "")).lower()
    kind = owner if owner in {d.serves for d in DIALECT_CLASSES.values()} else "other"
    identity = {key: card.get(key) for key in ("id", "root", "owned_by", "max_model_len") if key in card}
    return Server(base_url, model_version, identity, kind)


def choose_dialect(requested: str, server: Server) -> str:
    """``auto``: the dialect that serves this server's kind, else ``top_logprobs``."""
    if requested == "auto":
        return next((d.name for d in DIALECT_CLASSES.values() if d.serves == server.kind), TopLogprobs.name)
    if requested not in DIALECTS:
        raise ServedError(f"dialect={requested!r}: choose auto or one of {', '.join(DIALECTS)}")
    return requested


# --- questions and requests ----------------------------------------------------------------------

@dataclass
class Question:
    """One question to score: ``name`` says which (errors name it), ``images`` loads its images
    when its request is built (so only the images in flight are held), ``image_keys`` says which
    are the same image (``hf_yesno.image_key``: the decoded pixels)."""

    name: str
    text: str
    image_keys: list[str]
    images: Callable[[], list[Image.Image]]


def png_data_url(image: Image.Image) -> str:
    """The image, losslessly, as a PNG data URL (never resized: the server sees these pixels)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # lossless at any level; 1 is the fastest
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def chat_messages(question: str, image_urls: Sequence[str], system_prompt: str | None) -> list[dict]:
    """One user turn: the images, then the question (``families.chat_messages``' order)."""
    content: list[dict] = [{"type": "image_url", "image_url": {"url": url}} for url in image_urls]
    content.append({"type": "text", "text": question})
    messages: list[dict] = [{"role": "user", "content": content}]
    if system_prompt:
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


@dataclass
class Dialect:
    """How one dialect asks for the label values and reads them back: each dialect a subclass owning
    its endpoint (``url``), request ``body`` and reply reader (``read``). ``dialect_for`` picks one by
    name; nothing else asks a dialect its name (the cache key and the logs print it)."""

    name: ClassVar[str]
    serves: ClassVar[str | None] = None  # the engine (its /v1/models owned_by) that ``auto`` picks it for
    by_token_id: ClassVar[bool] = False  # it asks for the labels by token id (their ids must be known)
    model_version: str
    labels: Labels
    top_logprobs: int = OPENAI_TOP_LOGPROBS
    system_prompt: str | None = None
    render_prompt: Callable[[str, int, str | None], str] | None = None  # sglang: (question, n images, system)

    def url(self, server: Server) -> str:
        return server.base_url + "/chat/completions"

    def body(self, question: str, image_urls: Sequence[str]) -> dict:
        return {"model": self.model_version, "messages": chat_messages(question, image_urls, self.system_prompt),
                "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": self.top_logprobs}

    def read(self, reply: Any) -> Reading:
        """The label values in a reply; MalformedReply saying what is missing."""
        return Reading.from_top(self.labels, _top_values(reply), _text_of(reply))


class TopLogprobs(Dialect):
    """Any OpenAI-compatible chat endpoint: the labels read from the top list (censored when absent)."""

    name = "top_logprobs"


class VllmDialect(Dialect):
    """vLLM's chat endpoint with ``logprob_token_ids``: the labels' exact values, whatever their rank."""

    name = "vllm"
    serves = "vllm"
    by_token_id = True

    def body(self, question: str, image_urls: Sequence[str]) -> dict:
        return super().body(question, image_urls) | {"logprob_token_ids": self.labels.ids,
                                                      "return_tokens_as_token_ids": True}

    def read(self, reply: Any) -> Reading:
        by_id = {}
        for token, value in _top_values(reply).items():
            if token.startswith("token_id:") and token[9:].lstrip("-").isdigit():
                by_id[int(token[9:])] = value
        missing = [i for i in self.labels.ids if i not in by_id]
        if missing:
            raise MalformedReply(f"the label token ids {missing} are not in its logprobs: the server ignores "
                                 "logprob_token_ids (vLLM 0.32 honours it; an older or another server may "
                                 "not); use dialect=top_logprobs")
        return Reading.exact(self.labels, by_id, _text_of(reply))


class SglangDialect(Dialect):
    """SGLang's native ``/generate`` with ``token_ids_logprob``: a rendered prompt, exact values."""

    name = "sglang"
    serves = "sglang"
    by_token_id = True

    def url(self, server: Server) -> str:
        return server.root + "/generate"

    def body(self, question: str, image_urls: Sequence[str]) -> dict:
        if self.render_prompt is None:
            raise ServedError("dialect=sglang sends a rendered prompt to /generate: pass tokenizer=<path or Hub "
                              "id> of the served model, whose chat template renders it")
        return {"text": self.render_prompt(question, len(image_urls), self.system_prompt),
                "image_data": list(image_urls),
                "sampling_params": {"max_new_tokens": 1, "temperature": 0.0},
                "return_logprob": True, "logprob_start_len": -1, "token_ids_logprob": self.labels.ids}

    def read(self, reply: Any) -> Reading:
        meta = reply.get("meta_info") if isinstance(reply, dict) else None
        rows = meta.get("output_token_ids_logprobs") if isinstance(meta, dict) else None
        if not isinstance(rows, list) or not rows or not isinstance(rows[0], list):
            raise MalformedReply("its meta_info has no output_token_ids_logprobs")
        by_id: dict[int, float] = {}
        for entry in rows[0]:
            if not isinstance(entry, (list, tuple)) or len(entry) < 2 or not isinstance(entry[1], int):
                raise MalformedReply(f"an output_token_ids_logprobs entry is not [logprob, id, ...]: {str(entry)[:80]!r}")
            by_id[entry[1]] = _logprob(entry[0])
        missing = [i for i in self.labels.ids if i not in by_id]
        if missing:
            raise MalformedReply(f"the label token ids {missing} are not in output_token_ids_logprobs")
        text = reply.get("text") if isinstance(reply.get("text"), str) else ""
        return Reading.exact(self.labels, by_id, text)


# Every dialect: adding one is a subclass of Dialect listed here.
DIALECT_CLASSES: dict[str, type[Dialect]] = {d.name: d for d in (TopLogprobs, VllmDialect, SglangDialect)}
DIALECTS = tuple(DIALECT_CLASSES)


def dialect_for(name: str, model_version: str, labels: Labels, top_logprobs: int = OPENAI_TOP_LOGPROBS,
                system_prompt: str | None = None,
                render_prompt: Callable[[str, int, str | None], str] | None = None) -> Dialect:
    """The dialect called ``name`` (one of DIALECTS)."""
    if name not in DIALECT_CLASSES:
        raise ServedError(f"dialect={name!r}: choose one of {', '.join(DIALECTS)}")
    return DIALECT_CLASSES[name](model_version, labels, top_logprobs, system_prompt, render_prompt)


def _top_values(reply: Any) -> dict[str, float]:
    """{token text: logprob} of a chat reply's first position's top list (a text listed twice: the likelier)."""
    top = _first_chat_position(reply).get("top_logprobs")
    if not isinstance(top, list) or not top:
        raise MalformedReply("its first token has no top_logprobs")
    values: dict[str, float] = {}
    for entry in top:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            raise MalformedReply(f"a top_logprobs entry is not {{token, logprob}}: {str(entry)[:80]!r}")
        values.setdefault(entry["token"], _logprob(entry.get("logprob")))
    return values


def _first_chat_position(reply: Any) -> dict:
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedReply("it has no choices")
    logprobs = choices[0].get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        raise MalformedReply("it has no logprobs (does the server support logprobs for this model?)")
    return content[0]


def _text_of(reply: dict) -> str:
    message = reply["choices"][0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _logprob(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-6:
        raise MalformedReply(f"a logprob is not a number <= 0: {value!r}")
    return float(value)


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))


@dataclass(frozen=True)
class Reading:
    """A reply read: the two label values (log-probabilities), the decoded first token, and which
    labels are censored (outside a ``top_logprobs`` list, so bounded by its last value)."""

    logits: YesNoLogits
    censored: tuple[str, ...] = ()
    # under answer_rule=exact, spellings the rule does not read that the top list holds for a censored
    # label ("yes", " No"): the model answers, in a spelling answer_rule=variants would count
    other_spellings: tuple[str, ...] = ()

    @classmethod
    def exact(cls, labels: Labels, by_id: dict[int, float], text: str) -> Reading:
        """The labels' own log-probabilities (requested by id): their values and label mass are exact."""
        yes = _logsumexp([by_id[i] for i in labels.yes_ids or ()])
        no = _logsumexp([by_id[i] for i in labels.no_ids or ()])
        return cls(YesNoLogits(yes, no, text, label_mass(yes, no)))

    @classmethod
    def from_top(cls, labels: Labels, values: dict[str, float], text: str) -> Reading:
        """Each label's value from a top list: the logsumexp of its spellings listed there; a label
        with none listed is censored and takes the list's smallest value, its upper bound."""
        bound = min(values.values())
        out, listed_mass, censored = [], [], []
        for name, texts in (("Yes", labels.yes_texts), ("No", labels.no_texts)):
            listed = [values[t] for t in dict.fromkeys(texts) if t in values]
            if listed:
                out.append(_logsumexp(listed))
                listed_mass.append(out[-1])
            else:
                out.append(bound)
                censored.append(name)
        # the label mass counts the listed labels only: a lower bound where a label is censored
        mass = label_mass(*(listed_mass + [-math.inf] * (2 - len(listed_mass))))
        other: list[str] = []
        if labels.rule == "exact":
            from spatial_tasks.models.answer_tokens import spellings

            for name, texts in (("Yes", labels.yes_texts), ("No", labels.no_texts)):
                if name in censored:
                    other += [t for t in spellings(texts[0].strip() or texts[0]) if t in values and t not in texts]
        return cls(YesNoLogits(out[0], out[1], text, mass), tuple(censored), tuple(other))

    def payload_fields(self) -> dict[str, Any]:
        return {"censored": list(self.censored)}


# --- the cache ------------------------------------------------------------------------------------

def default_cache_dir() -> Path:
    """``$SPATIAL_TASKS_SERVED_CACHE``, else ``$XDG_CACHE_HOME/spatial-tasks/served`` (~/.cache/...)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spatial-tasks" / "served"


class ReplyCache:
    """Replies on disk (SQLite, one row per request, committed as it arrives, so a kill -9 loses
    at most the replies in flight). The key covers everything that changes a reply: the server's
    model identity, the model_version asked for, the dialect and the request body."""

    COLUMNS = ("key", "reply", "saved")

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / "replies.sqlite3"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            # the layout is checked before anything is written: a file that is not ours stays as it was
            columns = [row[1] for row in self.db.execute("PRAGMA table_info(replies)")]
            if columns and columns != list(self.COLUMNS):
                self.db.close()
                raise ServedError(f"cannot use the reply cache {self.path}: its table 'replies' has the columns "
                                  f"{columns}, not {list(self.COLUMNS)} (not a spatial-tasks reply cache); it was left "
                                  "as it is: cache=DIR puts the cache elsewhere, cache=off turns it off")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL, "
                            "saved REAL NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise ServedError(f"cannot use the reply cache {self.path}: {exc} (cache=off turns it off)") from exc
        self.unreadable = 0  # stored replies that were not JSON: asked again, and replaced

    @staticmethod
    def key(server: Server, dialect: str, body_digest: str) -> str:
        """The reply's key. A server that names its weights (``root`` in ``/v1/models``, as vLLM and SGLang
        do) is the same model at any address, so a restart on another port still finds its replies; one
        that says no more than a model id could be any model, so its address is part of the key."""
        scope = {"server": server.identity, "model_version": server.model_version, "dialect": dialect,
                 "body": body_digest}
        if not server.identity.get("root"):
            scope["base_url"] = server.base_url
        return hashlib.sha256(json.dumps(scope, sort_keys=True).encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        """The stored reply, or None: not stored, or stored as something that is not JSON (counted in
        ``unreadable``; the question is asked again and its reply replaces it)."""
        row = self.db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            self.unreadable += 1
            return None

    def put(self, key: str, reply: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", (key, json.dumps(reply), time.time()))

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        self.db.close()


def body_digest(body: dict, image_digests: dict[str, str]) -> str:
    """The request body's SHA-256, with each image data URL stood for by its own digest (computed
    once per image, not once per question)."""
    def swap(value: Any) -> Any:
        if isinstance(value, str) and value in image_digests:
            return "sha256:" + image_digests[value]
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        return value
    return hashlib.sha256(json.dumps(swap(body), sort_keys=True).encode()).hexdigest()


# --- scoring ---------------------------------------------------------------------------------------

@dataclass
class RetryPolicy:
    max_retries: int = 6
    backoff_s: float = 1.0
    max_wait_s: float = 120.0

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before try ``attempt + 1``: the server's Retry-After when it gave one, else
        exponential backoff (backoff_s, 2x, 4x ...), both capped at max_wait_s."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait_s)
        return min(self.backoff_s * 2 ** (attempt - 1), self.max_wait_s)


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


class _Transient(Exception):
    def __init__(self, what: str, retry_after: float | None = None, cause: str = "other") -> None:
        super().__init__(what)
        self.retry_after = retry_after
        self.cause = cause  # what the closing line counts retries by: "timeout", "connection", "HTTP 429" ...


@dataclass
class Scorer:
    """Scores questions against one server in one dialect: concurrent, retried, cached."""

    server: Server
    dialect: Dialect
    api_key: str | None = None
    num_concurrent: int = 8
    timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache: ReplyCache | None = None
    trust_env: bool = False  # httpx: read HTTP(S)_PROXY etc. from the environment
    sent: int = 0  # requests sent this run (retries included)
    answered_from_cache: int = 0
    retries: Counter = field(default_factory=Counter)  # retried requests, by cause

    def summary(self, readings: Sequence[Reading]) -> str:
        """The closing line of a run: questions, requests sent, answered from the cache, retries by
        cause, censored labels."""
        retried = sum(self.retries.values())
        causes = ", ".join(f"{cause} {n}" for cause, n in sorted(self.retries.items()))
        censored = sum(bool(r.censored) for r in readings)
        line = (f"{len(readings)} questions: {self.sent} requests sent, {self.answered_from_cache} answered from the "
                f"cache, {retried} retried{f' ({causes})' if causes else ''}, {censored} with a censored label")
        spelt = [r for r in readings if r.other_spellings]
        if spelt:  # a censored label the model did give, in a spelling answer_rule=exact does not read
            seen = sorted({t for r in spelt for t in r.other_spellings})
            line += (f"; {len(spelt)} of them list a label only as {', '.join(map(repr, seen[:4]))}: the model answers "
                     "in a spelling answer_rule=exact does not read (answer_rule=variants reads it)")
        return line

    def score(self, questions: Sequence[Question], progress: Callable[[int], None] | None = None) -> list[Reading]:
        """One Reading per question, in question order; ServerFailed (not yet printed: ``stop``
        prints) when a question gets no usable reply."""
        before = self.cache.unreadable if self.cache is not None else 0
        try:
            return asyncio.run(self._score(questions, progress))
        except _Failed as exc:
            raise ServerFailed(str(exc)) from None
        finally:
            if self.cache is not None and (unread := self.cache.unreadable - before):
                from loguru import logger

                logger.warning(f"the reply cache {self.cache.path}: {unread} stored replies did not read (not JSON, "
                               "or not this dialect's reply); those questions were asked again")

    async def _score(self, questions: Sequence[Question], progress) -> list[Reading]:
        results: list[Reading | None] = [None] * len(questions)
        # Questions on one image go together (sorted by image), so that an image is encoded once
        # and held only while its questions are being sent.
        order = sorted(range(len(questions)), key=lambda i: (questions[i].image_keys, i))
        uses = Counter(key for q in questions for key in q.image_keys)
        urls: dict[str, tuple[str, str]] = {}  # image key -> (data URL, its digest)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        slots = asyncio.Semaphore(self.num_concurrent)
        limits = httpx.Limits(max_connections=self.num_concurrent, max_keepalive_connections=self.num_concurrent)
        url = self.dialect.url(self.server)
        async with httpx.AsyncClient(timeout=self.timeout_s, limits=limits, headers=headers,
                                     trust_env=self.trust_env) as client:
            tasks: list[asyncio.Task] = []
            started: list[asyncio.Task] = []  # every task, so that each one's outcome is retrieved
            try:
                for i in order:
                    question = questions[i]
                    missing = [k for k in dict.fromkeys(question.image_keys) if k not in urls]
                    if missing:
                        images = await asyncio.to_thread(question.images)
                        for key, image in zip(question.image_keys, images, strict=True):
                            if key in missing and key not in urls:
                                data_url = await asyncio.to_thread(png_data_url, image)
                                urls[key] = (data_url, hashlib.sha256(data_url.encode()).hexdigest())
                    image_urls = [urls[k][0] for k in question.image_keys]
                    body = self.dialect.body(question.text, image_urls)
                    key = ReplyCache.key(self.server, self.dialect.name, body_digest(body, dict(urls.values())))
                    for k in question.image_keys:  # an image goes after its last question's body is built
                        uses[k] -= 1
                        if uses[k] == 0:
                            urls.pop(k, None)
                    cached = self._cached(key)
                    if cached is not None:
                        results[i] = cached
                        self.answered_from_cache += 1
                        if progress:
                            progress(1)
                        continue
                    await slots.acquire()
                    tasks.append(asyncio.create_task(self._one(client, url, question, body, key, i, results, slots,
                                                               progress)))
                    started.append(tasks[-1])
                    done = [t for t in tasks if t.done()]
                    tasks = [t for t in tasks if not t.done()]
                    for task in done:
                        task.result()  # a failed question stops the run now
                await asyncio.gather(*tasks)
            finally:
                # A stop leaves questions in flight: cancel them, and retrieve every task's outcome (a
                # failure not retrieved is printed by asyncio as a traceback, one per question)
                for task in started:
                    task.cancel()
                await asyncio.gather(*started, return_exceptions=True)
        lost = [questions[i].name for i, r in enumerate(results) if r is None]
        if lost:  # cannot happen unless the loop above is wrong; never let a question vanish
            raise _Failed(f"{len(lost)} questions were not scored (first: {lost[0]})")
        return results  # type: ignore[return-value]

    async def _one(self, client, url, question, body, key, i, results, slots, progress) -> None:
        try:
            reply = await self._request(client, url, question, body)
            results[i] = self._read(question, reply, url)
            if self.cache is not None:
                self.cache.put(key, reply)  # only a reply that reads well is kept
            if progress:
                progress(1)
        finally:
            slots.release()

    def _cached(self, key: str) -> Reading | None:
        """The reading of a stored reply; None where none is stored, or the stored one does not read
        (not JSON, or not a reply of this dialect: ``cache.unreadable`` counts it; it is asked again)."""
        reply = self.cache.get(key) if self.cache is not None else None
        if reply is None:
            return None
        try:
            return self.dialect.read(reply)
        except MalformedReply:
            self.cache.unreadable += 1
            return None

    def _read(self, question: Question, reply: Any, url: str) -> Reading:
        try:
            return self.dialect.read(reply)
        except MalformedReply as exc:
            raise _Failed(f"{question.name}: the reply of {url} is not a first-token logprob reply in the "
                               f"{self.dialect.name} dialect: {exc}: {json.dumps(reply)[:160]}") from None

    async def _request(self, client: httpx.AsyncClient, url: str, question: Question, body: dict) -> Any:
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._post(client, url, question, body)
            except _Transient as exc:
                if attempt <= self.retry.max_retries:
                    self.retries[exc.cause] += 1
                if attempt > self.retry.max_retries:
                    raise _Failed(f"{question.name}: no usable reply from {url} after {attempt} tries; last: {exc}. "
                                       "Replies received so far are cached: the same command resumes.") from None
                await asyncio.sleep(self.retry.wait(attempt, exc.retry_after))

    async def _post(self, client: httpx.AsyncClient, url: str, question: Question, body: dict) -> Any:
        self.sent += 1
        try:
            response = await client.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise _Transient(f"timed out after {self.timeout_s:g} s ({type(exc).__name__})", cause="timeout") from exc
        except httpx.TransportError as exc:  # refused, reset, dropped mid-reply
            raise _Transient(f"{type(exc).__name__}: {exc or 'connection lost'}", cause="connection") from exc
        if response.status_code in RETRIED_STATUS:
            after = retry_after_seconds(response.headers.get("retry-after"))
            said = f", Retry-After {response.headers['retry-after']}" if "retry-after" in response.headers else ""
            raise _Transient(f"HTTP {response.status_code}{said}: {_short(response.text)}", after,
                             cause=f"HTTP {response.status_code}")
        if response.status_code != 200:
            raise _Failed(f"{question.name}: {url} refused the request with HTTP {response.status_code}: "
                               f"{_short(response.text)}")
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "?")
            raise _Failed(f"{question.name}: the reply of {url} is not JSON ({kind}): "
                               f"{_short(response.text)}") from None


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return repr(text[:limit] + ("…" if len(text) > limit else ""))
