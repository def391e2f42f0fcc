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


def _truth(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes")


def _lower(value: object) -> str:
    return str(value).strip().lower()


def _whole(value: object) -> int:
    return int(str(value).strip())


# argument -> (the check, what it takes, how a value that passed is read: what the model gets)
RULES: dict[str, tuple[Callable[[object], bool], str, Callable[[object], object]]] = {
    "packed": (lambda v: _boolean(v) or _choice("auto")(v), "true, false or auto",
               lambda v: "auto" if _lower(v) == "auto" else _truth(v)),
    "dtype": (_choice(*DTYPES), ", ".join(DTYPES), _lower),
    "batch_size": (_positive_int, "a whole number >= 1", _whole),
    "group_window": (_positive_int, "a whole number >= 1", _whole),
    "group_images": (_boolean, "true or false", _truth),
    "share_prefix": (_boolean, "true or false", _truth),
    "trust_remote_code": (_boolean, "true or false", _truth),
    "answer_rule": (_choice(*ANSWER_RULES), " or ".join(ANSWER_RULES), _lower),
    "image_first": (_boolean, "true or false", _truth),  # vllm_yesno
    "window": (_positive_int, "a whole number >= 1", _whole),  # vllm_yesno: questions per engine call
}


def create_checked(cls: type, arg_string: str, additional_config: Mapping | None, *, torch_device: bool = True):
    """``cls.create_from_arg_string`` for our scorers: --model_args read with lmms-eval's own parser,
    a name given twice or one ``cls`` does not take refused, every value checked and read as checked
    (``check_model_args``) before anything loads, ``device`` implying ``device_map`` (``torch_device``:
    the model runs here), and a setting the model turns down while it loads ends the run in one
    line, exit 2 -- not lmms-eval's traceback and exit 0. lmms-eval passes its CLI's ``--batch_size``
    and ``--device`` beside --model_args (an error there names the CLI flag); --model_args, more
    specific, wins (lmms-eval itself would fail on the name given twice)."""
    from spatial_tasks.common.errors import stop_run

    name = model_id(cls)
    try:
        given = parse_model_args(name, arg_string)
        accepted = accepted_args(cls)
        unknown = sorted(set(given) - set(accepted)) if accepted is not None else []
        if unknown:
            raise ModelArgsError(f"{name}: unknown --model_args {unknown}; it takes {', '.join(accepted)}")
        cli = {k: v for k, v in (additional_config or {}).items() if v is not None}
        args = {**check_model_args(name, cli, torch_device=torch_device, from_cli=True),
                **check_model_args(name, given, torch_device=torch_device)}
        return cls(**(with_device_map(args) if torch_device else args))
    except (UserError, ValueError) as error:
        text = str(error)
        stop_run(f"spatial-tasks: {text}" if text.startswith(name) else f"spatial-tasks: {name}: {text}")


def parse_model_args(model: str, arg_string: str | None) -> dict[str, object]:
    """--model_args as lmms-eval reads them (its own split and value parser), but a piece that is
    not ``name=value``, or a name given twice (lmms-eval keeps the last silently), is refused."""
    from lmms_eval.utils import handle_arg_string

    from spatial_tasks.harness.upstream import split_model_args

    out: dict[str, object] = {}
    for piece in split_model_args((arg_string or "").strip()):
        key, equals, value = piece.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ModelArgsError(f"{model}: {piece!r} in --model_args is not name=value")
        if key in out:
            raise ModelArgsError(f"{model}: {key} is given twice in --model_args ({key}={out[key]!r} and "
                                 f"{key}={handle_arg_string(value)!r}); give it once")
        out[key] = handle_arg_string(value)
    return out


def accepted_args(cls: type) -> tuple[str, ...] | None:
    """The --model_args ``cls`` takes (None: it hands any others on to an engine that checks them):
    ``MODEL_ARGS`` where the class lists them (in its order), else, sorted, the named parameters of every ``__init__`` in its
    classes (the host's, lmms-eval's) and the options it reads (``AnswerOptions``/``ScoringOptions``)."""
    listed = getattr(cls, "MODEL_ARGS", ())
    if listed is None or listed:
        return None if listed is None else tuple(listed)
    import inspect

    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        names.update(p.name for p in inspect.signature(init).parameters.values()
                     if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
    options = getattr(cls, "OPTIONS", ScoringOptions)
    return tuple(sorted(names | {f.name for f in fields(options)} | {"max_batch_size"}))


def model_id(cls: type) -> str:
    """The --model name lmms-eval knows ``cls`` by: its entry in ``model_table`` (its host, or a base's)."""
    from spatial_tasks.models.model_table import entry_of

    entry = entry_of(cls)
    return entry.id if entry else cls.__name__


def check_model_args(model: str, args: Mapping[str, object], *, torch_device: bool = True,
                     from_cli: bool = False) -> dict[str, object]:
    """``args`` with each value of ``RULES`` read as it was checked (``dtype=Float32`` is float32);
    ``ModelArgsError`` (one line) for the first that ``model`` cannot use: a value outside ``RULES``,
    or (``torch_device``) a ``device`` this machine does not have. ``from_cli``: lmms-eval's own
    flags (``--batch_size``, ``--device``), named as such."""
    def where(name: str, value: object) -> str:
        return f"--{name} {value}" if from_cli else f"{name}={value!r} in --model_args"

    out = dict(args)
    for name, (ok, takes, read) in RULES.items():
        if name in args and args[name] is not None:
            if not ok(args[name]):
                raise ModelArgsError(f"{model}: {where(name, args[name])}; it takes {takes}")
            out[name] = read(args[name])
    device = args.get("device")
    if torch_device and device not in (None, "", "auto"):
        from spatial_tasks.models.hidden_states import TorchDeviceError, check_torch_device

        try:
            check_torch_device(str(device), name="device")
        except TorchDeviceError as err:
            raise ModelArgsError(f"{model}: {err} in {'--device' if from_cli else '--model_args'}") from None
    return out


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
        and read as ``RULES`` says (the rest as text)."""
        given = {f.name: kwargs.pop(f.name) for f in fields(cls) if kwargs.get(f.name) is not None}
        read = check_model_args(model, given, torch_device=False)
        return cls(**{name: value if name in RULES else str(value) for name, value in read.items()})


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


