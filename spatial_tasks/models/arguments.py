"""The model arguments of our first-token scorers, checked before any model loads.

lmms-eval builds a model with ``create_from_arg_string``; a bad value found later, inside the
model's ``__init__`` or its first batch, comes out as lmms-eval's traceback and exit status 0, and
some never come out at all (``device=cuda`` on a machine without CUDA scored on the CPU). So every
``_yesno`` twin, ``hf_yesno`` and ``spatial-tasks probe`` read their settings through
``check_model_args`` first: each value that is set is checked against one table (``RULES``), the
device against this machine, and a bad one is one line naming the argument, the value and what it
takes. ``with_device_map`` makes ``device`` imply the matching ``device_map`` (lmms-eval's classes
default to ``device_map=auto``, which the padded path reads as "the inputs go to cuda"), so every
scoring path takes the same arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from spatial_tasks.common.errors import UserError

DTYPES = ("bfloat16", "float16", "float32")
ANSWER_RULES = ("exact", "variants")  # spatial_tasks.models.answer_tokens.RULES
BOOLEAN = ("true", "false")


class ModelArgsError(UserError, ValueError):
    """A --model_args value a scorer cannot use; the message is one line."""


def _choice(*allowed: str) -> Callable[[object], bool]:
    return lambda value: str(value).strip().lower() in allowed


def _boolean(value: object) -> bool:
    return isinstance(value, bool) or str(value).strip().lower() in ("1", "0", "true", "false", "yes", "no")


def _positive_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    try:
        return int(str(value).strip()) >= 1 and float(str(value).strip()) == int(str(value).strip())
    except ValueError:
        return False


# argument -> (the check, what it takes)
RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "packed": (lambda v: _boolean(v) or _choice("auto")(v), "true, false or auto"),
    "dtype": (_choice(*DTYPES), ", ".join(DTYPES)),
    "batch_size": (_positive_int, "a whole number >= 1"),
    "group_window": (_positive_int, "a whole number >= 1"),
    "group_images": (_boolean, "true or false"),
    "share_prefix": (_boolean, "true or false"),
    "trust_remote_code": (_boolean, "true or false"),
    "answer_rule": (_choice(*ANSWER_RULES), " or ".join(ANSWER_RULES)),
    "image_first": (_boolean, "true or false"),  # vllm_yesno
    "window": (_positive_int, "a whole number >= 1"),  # vllm_yesno: questions per engine call
}


def create_checked(cls: type, arg_string: str, additional_config: Mapping | None, *, torch_device: bool = True):
    """``cls.create_from_arg_string`` for our scorers: --model_args read with lmms-eval's own parser,
    every value checked (``check_model_args``) before anything loads, ``device`` implying
    ``device_map`` (``torch_device``: the model runs here), and a setting the model turns down while
    it loads ends the run in one line, exit 2 -- not lmms-eval's traceback and exit 0. lmms-eval
    passes its CLI's ``--batch_size`` and ``--device`` beside --model_args; the latter, more
    specific, wins (lmms-eval itself would fail on the name given twice)."""
    from lmms_eval.utils import simple_parse_args_string

    from spatial_tasks.common.errors import stop_run

    name = model_id(cls)
    given = simple_parse_args_string(arg_string or "")
    cli = {k: v for k, v in (additional_config or {}).items() if v is not None}
    try:
        check_model_args(name, given, torch_device=torch_device)
        check_model_args(name, cli, torch_device=torch_device)
        args = {**cli, **given}
        return cls(**(with_device_map(args) if torch_device else args))
    except (UserError, ValueError) as error:
        text = str(error)
        stop_run(f"spatial-tasks: {text}" if text.startswith(name) else f"spatial-tasks: {name}: {text}")


def model_id(cls: type) -> str:
    """The --model name lmms-eval knows ``cls`` by (``spatial_tasks.harness.MODELS``)."""
    from spatial_tasks.harness import MODELS

    return next((name for name, path in MODELS.items() if path.rsplit(".", 1)[-1] == cls.__name__), cls.__name__)


def check_model_args(model: str, args: Mapping[str, object], *, torch_device: bool = True) -> None:
    """Raise ``ModelArgsError`` (one line) for the first argument of ``args`` that ``model`` cannot
    use: a value outside ``RULES``, or (``torch_device``) a ``device`` this machine does not have."""
    for name, (ok, takes) in RULES.items():
        if name in args and args[name] is not None and not ok(args[name]):
            raise ModelArgsError(f"{model}: {name}={args[name]!r} in --model_args; it takes {takes}")
    device = args.get("device")
    if torch_device and device not in (None, "", "auto"):
        from spatial_tasks.models.hidden_states import TorchDeviceError, check_torch_device

        try:
            check_torch_device(str(device), name="device")
        except TorchDeviceError as err:
            raise ModelArgsError(f"{model}: {err} in --model_args") from None


def with_device_map(args: Mapping[str, object]) -> dict:
    """``args`` with ``device_map`` set to ``device`` when a device is given and no device_map is."""
    out = dict(args)
    if out.get("device") not in (None, "") and not out.get("device_map"):
        out["device_map"] = out["device"]
    return out


GROUP_WINDOW = 256  # requests whose visuals are loaded and ordered by image at a time (group_window)


@dataclass(frozen=True)
class AnswerOptions:
    """The model_args every first-token scorer takes, in-process, served (``openai_yesno``) or
    through vLLM (``vllm_yesno``): the answer words and the rule (``answer_tokens``). Read here,
    once, by every one of them (``take``)."""

    yes_text: str = "Yes"
    no_text: str = "No"
    answer_rule: str = "exact"

    @classmethod
    def take(cls, model: str, kwargs: dict) -> AnswerOptions:
        """Pop this class's options out of ``kwargs`` (what is left is the host's), each checked
        (``RULES``) and read (``_READ``)."""
        given = {f.name: kwargs.pop(f.name) for f in fields(cls) if kwargs.get(f.name) is not None}
        check_model_args(model, given, torch_device=False)
        return cls(**{name: _READ.get(name, str)(value) for name, value in given.items()})


@dataclass(frozen=True)
class ScoringOptions(AnswerOptions):
    """The model_args every in-process first-token scorer adds to its host class's, read here once
    for every twin and ``hf_yesno``: the answer words and rule (``AnswerOptions``), how questions are
    scored (``group_images``, ``group_window``, ``share_prefix``, ``packed``: ``scoring_paths.choose``)
    and ``dtype`` (the twins cast the model after their host's load; ``hf_yesno`` loads in it)."""

    group_images: bool = True
    group_window: int = GROUP_WINDOW
    share_prefix: bool = True
    packed: bool | str = "auto"  # true, false or "auto"
    dtype: str | None = None


def _truth(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes")


# how each option is read once its value passed RULES (anything not listed: as text)
_READ: dict[str, Callable[[object], object]] = {
    "group_images": _truth, "share_prefix": _truth, "group_window": lambda v: int(str(v).strip()),
    "packed": lambda v: "auto" if str(v).strip().lower() == "auto" else _truth(v),
    "answer_rule": lambda v: str(v).strip(), "dtype": lambda v: str(v).strip()}
