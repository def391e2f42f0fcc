"""``vllm_yesno``: the first-token Yes/No protocol in-process through vLLM's engine.

The ``_yesno`` twin of lmms-eval's own ``vllm`` model (``lmms_eval.models.simple.vllm.VLLM``): the
same loading (``vllm.LLM`` with every extra model_arg passed through -- ``tensor_parallel_size``,
``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ``enforce_eager`` ...), the same chat
template handling (the model's own, or ``chat_template=``) and the same image handling (each image
as a lossless PNG data URL, small Qwen-VL images enlarged to ``min_image_pixels``). What differs:

- each question is one request with ``max_tokens=1`` and the Yes/No label token ids as
  ``logprob_token_ids`` (vLLM >= 0.32): their full-vocabulary log-probabilities whatever their rank,
  so the label mass is exact and nothing is censored. Never ``prompt_logprobs``, which turns off
  prefix-cache reads for its request;
- a run's questions go to the engine together (in windows of ``window`` questions, default 1024,
  so that only a window's images are held), so vLLM's scheduler, prefix cache and encoder cache
  share the work; ``batch_size`` is not used (vLLM's ``max_num_seqs`` bounds a step);
- the images come first in the user turn (``image_first=true``), as ``hf_yesno`` and
  ``openai_yesno`` send them (the papers' layout); lmms-eval's ``vllm`` puts the text first.

    lmms-eval --model vllm_yesno --tasks spatialtunnel_logit \\
        --model_args model=Qwen/Qwen2.5-VL-7B-Instruct,tensor_parallel_size=2,gpu_memory_utilization=0.85

Each logged sample holds l_Yes and l_No (log-probabilities), p, the label mass, the label tokens,
``answer_rule`` and ``engine`` (vLLM's version); the run logs one closing line. Extra model_args:
``yes_text``/``no_text``/``answer_rule`` (as ``hf_yesno``), ``window``.
"""

from __future__ import annotations

import time
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.models.simple.vllm import VLLM
from PIL import Image

from spatial_tasks.common.environment import vllm_version
from spatial_tasks.common.errors import UserError, stop_run
from spatial_tasks.common.yesno import encode_payload, label_mass_median, warn_on_label_mass
from spatial_tasks.models import served
from spatial_tasks.models.lmms_requests import refuse_text_tasks, request_item, request_name

WINDOW = 1024  # questions handed to the engine per call: enough for its scheduler, bounded image memory
# lmms-eval passes these beside --model_args; vLLM's LLM() takes none of them (its platform picks the
# device, and the engine schedules a whole window itself, so there is no batch size)
NOT_FOR_THE_ENGINE = ("max_batch_size", "device", "batch_size")


class VLLMYesNo(VLLM):
    """lmms-eval's ``vllm`` answering with first-token Yes/No log-probabilities (module docstring)."""

    is_simple = True
    MODEL_ARGS = None  # any other --model_args go to vLLM's engine, which names one it does not take

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """Our arguments checked before vLLM loads anything (``models.arguments``); the device is vLLM's."""
        from spatial_tasks.models.arguments import create_checked

        return create_checked(cls, arg_string, additional_config, torch_device=False)

    def __init__(self, model: str = "Qwen/Qwen2.5-VL-3B-Instruct", image_first: bool | str = True,
                 window: int | str = WINDOW, pretrained: str | None = None, **kwargs: Any) -> None:
        from spatial_tasks.common.validate import flag
        from spatial_tasks.models.arguments import AnswerOptions, model_id

        answer = AnswerOptions.take(model_id(type(self)), kwargs)  # read as every first-token scorer reads them
        if vllm_version() is None:
            raise UserError("vllm_yesno runs vLLM's engine in this process, and vLLM is not installed here: install "
                            "spatial-tasks beside vLLM (docs/served.md, 'Scoring through vLLM'), or serve the model and use "
                            "openai_yesno")
        for name in NOT_FOR_THE_ENGINE:
            kwargs.pop(name, None)
        super().__init__(model=pretrained or model, image_first=flag(image_first, "image_first"), **kwargs)
        self.window = int(window)
        tokenizer = self.client.get_tokenizer()
        self.labels = served.labels_from_tokenizer(tokenizer, answer.yes_text, answer.no_text, answer.answer_rule)
        self.engine = f"vllm {vllm_version()}"

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """One ``encode_payload`` string per request, in request order."""
        refuse_text_tasks("vllm_yesno", requests)  # before the engine runs
        try:
            return self._score(requests)
        except UserError as error:  # one line naming the doc, not lmms-eval's traceback and exit status 0
            stop_run(f"spatial-tasks: {error}")

    def _score(self, requests: list[Instance]) -> list[str]:
        from loguru import logger
        from vllm import SamplingParams

        # Every question asks for the same label ids, so no row's logprob_token_ids can change another's.
        params = SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=self.labels.ids)
        fields = self.labels.log_fields() | {"engine": self.engine}
        responses, readings, started = [], [], time.perf_counter()
        for first in range(0, len(requests), self.window):
            window = requests[first:first + self.window]
            conversations = [self._conversation(request) for request in window]
            outputs = self._run_tp_synced(conversations, lambda items: self._chat(items, params))
            for request, output in zip(window, outputs, strict=True):
                reading = self._read(request, output)
                payload = encode_payload(reading.logits, **fields)
                self.cache_hook.add_partial("generate_until", (request.args[0], request.args[1]), payload)
                responses.append(payload)
                readings.append(reading.logits)
        seconds = time.perf_counter() - started
        median = label_mass_median([{"label_mass": r.label_mass} for r in readings])
        logger.info(f"vllm_yesno ({self.engine}, {self.model}): {len(readings)} questions in "
                    f"{-(-len(requests) // self.window)} engine call(s), {seconds:.1f} s "
                    f"({len(readings) / max(seconds, 1e-9):.1f} questions/s), label mass median "
                    f"{'?' if median is None else f'{median:.3f}'}, 0 censored (label ids asked for)")
        warn_on_label_mass(readings, "vllm_yesno")
        return responses

    def _chat(self, conversations: list[list[dict]], params: Any) -> list[Any]:
        return self.client.chat(conversations, sampling_params=params, chat_template=self.chat_template,
                                use_tqdm=self.rank == 0)

    def _conversation(self, request: Instance) -> list[dict]:
        """The user turn lmms-eval's ``vllm`` builds (its ``encode_image``: PNG, enlarged where a
        Qwen-VL image is under ``min_image_pixels``), images first unless ``image_first=false``."""
        context, visuals = request_item("vllm_yesno", request, self.task_dict)
        if not all(isinstance(v, Image.Image) for v in visuals):
            kinds = sorted({type(v).__name__ for v in visuals if not isinstance(v, Image.Image)})
            raise UserError(f"{request_name(request)}: vllm_yesno scores images only; this request has visuals "
                            f"of type {kinds}")
        images = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + self.encode_image(v.convert("RGB"))}}
                  for v in visuals]
        text = [{"type": "text", "text": context.replace("<image>", "").strip()}]
        return [{"role": "user", "content": images + text if self.image_first else text + images}]

    def _read(self, request: Instance, output: Any) -> served.Reading:
        """The label values of one engine output: its first generated position's logprobs, which hold
        the sampled token and every requested label id."""
        completion = output.outputs[0] if output.outputs else None
        first = completion.logprobs[0] if completion is not None and completion.logprobs else None
        by_id = {int(token): float(value.logprob) for token, value in (first or {}).items()}
        missing = [i for i in self.labels.ids if i not in by_id]
        if missing:
            raise UserError(f"{request_name(request)}: vLLM returned no logprob for the label token ids {missing}; "
                            f"{self.engine} does not honour logprob_token_ids (0.32 and later do)")
        return served.Reading.exact(self.labels, by_id, completion.text)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("vllm_yesno scores yes/no questions through generate_until; it has no loglikelihood")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("vllm_yesno scores single-turn yes/no questions only")
