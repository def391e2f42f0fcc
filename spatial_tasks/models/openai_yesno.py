"""``openai_yesno``: the first-token Yes/No protocol against a served model, as an lmms-eval model.

Every logit task (``spatialtunnel_logit`` and its variants) runs against a vLLM, SGLang or other
OpenAI-compatible server exactly as it runs in-process with ``hf_yesno``: one request per question,
``max_tokens=1``, the images then the question in one user turn, and the same logged payload
(``encode_payload``) with the label tokens, the dialect and any censored label. How the values are
asked for, cached and retried: ``spatial_tasks.models.served``.

    vllm serve Qwen/Qwen3-VL-235B-A22B-Instruct --tensor-parallel-size 8 --port 8000
    lmms-eval --model openai_yesno --tasks spatialtunnel_logit \\
        --model_args model_version=Qwen/Qwen3-VL-235B-A22B-Instruct,base_url=http://127.0.0.1:8000/v1,num_concurrent=32

model_args: lmms-eval's ``openai`` names -- ``model_version`` (or ``model``), ``base_url`` (else
``$OPENAI_API_BASE``), ``api_key`` (else ``$OPENAI_API_KEY``), ``num_concurrent`` (default 8),
``timeout`` (seconds per request, default 120), ``max_retries`` (default 6), ``retry_backoff_s``
(default 1) -- and ours: ``dialect`` (auto | top_logprobs | vllm | sglang; auto reads the server's
``/v1/models``), ``top_logprobs`` (default 20), ``tokenizer`` (path or Hub id: the label ids, and
the chat template the sglang dialect renders), ``yes_text``/``no_text``/``answer_rule`` (as
``hf_yesno``), ``system_prompt``, ``cache`` (a folder, or ``off``; default
``$SPATIAL_TASKS_SERVED_CACHE`` or ``~/.cache/spatial-tasks/served``), ``httpx_trust_env``
(default false: proxies from the environment are ignored, as a local server needs; true for an
API behind a proxy).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

import httpx
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from PIL import Image
from tqdm import tqdm

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.validate import flag, http_url
from spatial_tasks.common.yesno import encode_payload, warn_on_label_mass
from spatial_tasks.models import served
from spatial_tasks.models.arguments import AnswerOptions, model_id
from spatial_tasks.models.lmms_requests import image_key, refuse_text_tasks, request_item, request_name

@dataclass(frozen=True)
class Settings:
    """openai_yesno's --model_args, each with its default, checked where they enter (``from_args``: one line
    naming the bad one, before any question is asked). ``answer`` holds yes_text, no_text and answer_rule
    (read as every first-token scorer reads them, ``AnswerOptions``)."""

    model_version: str | None = None  # the served model's id (required; ``model`` says the same)
    base_url: str | None = None  # else $OPENAI_API_BASE
    api_key: str | None = None  # else $OPENAI_API_KEY
    num_concurrent: int = 8
    timeout: float = 120
    max_retries: int = 6
    retry_backoff_s: float = 1.0
    dialect: str = "auto"
    top_logprobs: int = served.OPENAI_TOP_LOGPROBS
    tokenizer: str | None = None
    answer: AnswerOptions = field(default_factory=AnswerOptions)
    system_prompt: str | None = None
    cache: str | None = None
    httpx_trust_env: bool = False

    @classmethod
    def from_args(cls, args: dict[str, Any], who: str) -> Settings:
        """``who``: the --model id, for messages."""
        unknown = sorted(set(args) - set(KNOWN_ARGS))
        if unknown:
            raise served.ServedError(f"unknown --model_args {unknown}; it takes {', '.join(KNOWN_ARGS)}")
        args = dict(args)
        answer = AnswerOptions.take(who, args)  # read as every first-token scorer reads them
        get = {f.name: f.default for f in fields(cls)} | args
        model_version = get.get("model") or get["model_version"]
        if not model_version:
            raise served.ServedError("pass model_version=<the served model's id> in --model_args")
        base_url = get["base_url"] or os.environ.get("OPENAI_API_BASE")
        try:
            base_url = http_url(base_url, "base_url")
        except ValueError:
            raise served.ServedError(f"base_url={base_url!r}: pass the server's OpenAI base URL, e.g. "
                                     "http://127.0.0.1:8000/v1 (or set OPENAI_API_BASE)") from None
        for name in ("num_concurrent", "max_retries", "top_logprobs"):
            if not str(get[name]).isdigit():
                raise served.ServedError(f"{name}={get[name]!r}: give a whole number")
        if int(get["num_concurrent"]) < 1 or not 1 <= int(get["top_logprobs"]) <= 128:
            raise served.ServedError("num_concurrent must be >= 1 and top_logprobs between 1 and 128")
        try:
            timeout, backoff = float(get["timeout"]), float(get["retry_backoff_s"])
        except ValueError as exc:
            raise served.ServedError(f"timeout and retry_backoff_s take seconds: {exc}") from None
        if not timeout > 0 or not backoff >= 0:
            raise served.ServedError("timeout must be > 0 and retry_backoff_s >= 0 seconds")
        return cls(str(model_version), str(base_url), get["api_key"] or os.environ.get("OPENAI_API_KEY"),
                   int(get["num_concurrent"]), timeout, int(get["max_retries"]), backoff, str(get["dialect"]),
                   int(get["top_logprobs"]), get["tokenizer"] or None, answer, get["system_prompt"] or None, get["cache"],
                   flag(get["httpx_trust_env"], "httpx_trust_env"))


# The --model_args it takes: each field of Settings (``answer`` as its three arguments), ``model`` for
# model_version, and what lmms-eval adds to every model (taken, unused).
KNOWN_ARGS = tuple(name for f in fields(Settings) for name in (
    [*(a.name for a in fields(AnswerOptions))] if f.name == "answer" else
    [f.name, "model"] if f.name == "model_version" else [f.name])) + ("batch_size", "max_batch_size", "device")


class OpenAIYesNo(lmms):
    """First-token Yes/No log-probabilities from an OpenAI-compatible server (module docstring)."""

    MODEL_ARGS = KNOWN_ARGS  # the --model_args it takes (arguments.accepted_args)

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """Every argument checked before the server is asked anything (``models.arguments``); no
        torch device here: the server holds the model."""
        from spatial_tasks.models.arguments import create_checked

        return create_checked(cls, arg_string, additional_config, torch_device=False)

    def __init__(self, **args: Any) -> None:
        super().__init__()
        try:
            self._setup(Settings.from_args(args, model_id(type(self))))
        except (UserError, ValueError) as exc:  # one line, before any question is asked
            served.stop(str(exc))

    def _setup(self, settings: Settings) -> None:
        api_key, timeout, trust_env = settings.api_key, settings.timeout, settings.httpx_trust_env
        tokenizer = settings.tokenizer
        yes_text, no_text, answer_rule = settings.answer.yes_text, settings.answer.no_text, settings.answer.answer_rule
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        with httpx.Client(timeout=min(timeout, 60.0), headers=headers, trust_env=trust_env) as client:
            server = served.discover(client, settings.base_url, settings.model_version)
            chosen = served.choose_dialect(settings.dialect, server)
            local = None
            if tokenizer:
                from transformers import AutoProcessor

                local = AutoProcessor.from_pretrained(tokenizer)
            if local is not None:
                labels = served.labels_from_tokenizer(getattr(local, "tokenizer", local), yes_text, no_text, answer_rule)
            elif server.tokenizes:
                labels = served.labels_from_tokenizer(served.ServerTokenizer(client, server.root, server.model_version),
                                                      yes_text, no_text, answer_rule)
            else:
                labels = served.labels_by_text(yes_text, no_text, answer_rule)
        render = None
        if local is not None and hasattr(local, "apply_chat_template"):
            from spatial_tasks.models import families

            def render(question: str, n_images: int, system: str | None) -> str:
                return local.apply_chat_template(families.chat_messages(question, [None] * n_images, system),
                                                 tokenize=False, add_generation_prompt=True)
        self.dialect = served.dialect_for(chosen, server.model_version, labels, settings.top_logprobs,
                                          settings.system_prompt, render)
        if self.dialect.by_token_id:
            labels.ids  # noqa: B018  (fails now, naming tokenizer=, when the ids are unknown)
        cache = settings.cache
        self.cache = None if str(cache).lower() == "off" else served.ReplyCache(
            served.default_cache_dir() if cache in (None, "") else os.path.expanduser(str(cache)))
        self.scorer = served.Scorer(server, self.dialect, api_key, settings.num_concurrent, timeout,
                                    served.RetryPolicy(settings.max_retries, settings.retry_backoff_s), self.cache,
                                    trust_env)
        self.server = server
        self.batch_size_per_gpu = 1

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """One ``encode_payload`` string per request, in request order."""
        refuse_text_tasks("openai_yesno", requests)  # before anything is sent
        questions = [self._question(request) for request in requests]
        bar = tqdm(total=len(questions), disable=(self.rank != 0), desc=f"Yes/No first-token logprobs ({self.dialect.name})")
        try:
            readings = self.scorer.score(questions, bar.update)
        except served.ServerFailed as failed:
            served.stop(failed)  # printed last: stop_run closes the open progress bars first
        bar.close()
        fields = self.dialect.labels.log_fields() | {"dialect": self.dialect.name,
                                                     "served_model": self.server.identity}
        responses = []
        for request, reading in zip(requests, readings, strict=True):
            payload = encode_payload(reading.logits, **fields, **reading.payload_fields())
            self.cache_hook.add_partial("generate_until", (request.args[0], request.args[1]), payload)
            responses.append(payload)
        from loguru import logger

        logger.info(f"openai_yesno ({self.dialect.name}, {self.server.base_url}): {self.scorer.summary(readings)}")
        warn_on_label_mass([r.logits for r in readings], f"openai_yesno ({self.dialect.name})")
        return responses

    def _question(self, request: Instance) -> served.Question:
        context, visuals = request_item("openai_yesno", request, self.task_dict)
        name = request_name(request)
        if not all(isinstance(v, Image.Image) for v in visuals):
            kinds = sorted({type(v).__name__ for v in visuals if not isinstance(v, Image.Image)})
            served.stop(f"{name}: openai_yesno sends images only; this request has visuals of type {kinds}")

        def images() -> list[Image.Image]:  # loaded again when its request is built: none is held meanwhile
            return [v.convert("RGB") for v in request_item("openai_yesno", request, self.task_dict)[1]]

        keys = [image_key(v.convert("RGB")) for v in visuals]
        return served.Question(name, context.replace("<image>", "").strip(), keys, images)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("openai_yesno scores yes/no questions through generate_until; it has no loglikelihood")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("openai_yesno scores single-turn yes/no questions only")
