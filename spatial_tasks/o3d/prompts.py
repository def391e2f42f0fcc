"""O3-D question space: the paper's 1,026 depth-order prompts, their variation tags, seeded
question sampling for new images, and the ICL+CoT demonstration answers.

Wording lives in two places only: the Jinja templates under ``tasks/o3d/prompts/``
(``question.jinja``: the question bodies, options and instruction; ``cot_answer.jinja``: the
worked answer of a demonstration) and the constants at the top of this module (references,
option pairs, real-subset preambles, cue names and cue descriptions).

A question is ``"{body} A. {option_a}. B. {option_b}. Answer A or B."`` -- checked against every
``ques`` string in the authors' released model outputs: references are inserted verbatim (all
lower case), options keep their capitals, one space between the parts.

Tags (the paper's language analysis, §"language influence"):

* clarity (``clarity_level``) -- how clearly the target is referred to: low / medium / high /
  highest (``ques_clarity`` 2 / 3 / 3.5 / 4 in the official data; highest = marked images only);
* vocabulary -- close-far (closer / farther / nearer), front-rear (behind / in front of /
  at the rear of), before-after;
* formality -- casual ('feel', 'come before'), formal ('along the line of sight',
  'relative to the camera'), regular otherwise;
* order -- the authors' rule: "reversed" when option A is one of Farther, In front of, After,
  No, False; "normal" otherwise;
* query -- mcq (two depth words) or yes-no (bodies 8 and 9: Yes/No, True/False).

That is 4 + 3 + 3 + 2 + 2 = 14 tag values. Only 7 (query, formality, vocabulary) combinations
occur among the 9 bodies; with 2 orders and the 3 clarity levels >= 3 used by the SDGM analysis
that gives the paper's 42 question groups (see ``metrics.sdgm_language``).

The authors' real-photo subsets (real-012cue, its crops, real-mcue) use two further bodies
with a preamble sentence instead of an inline target reference; they are bodies 10 and 11 here
(``real_prompt_space``) so that ``parse_prompt`` covers every question of the official data.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spatial_tasks.common import prompts as _templates

BENCHMARK = "o3d"
QUESTION_TEMPLATE = "question.jinja"
COT_TEMPLATE = "cot_answer.jinja"

# ---------------------------------------------------------------------------------------------
# Wording constants (everything that is not in the templates)
# ---------------------------------------------------------------------------------------------

CLARITY_LEVELS: dict[str, float] = {"low": 2.0, "medium": 3.0, "high": 3.5, "highest": 4.0}
ANSWER_INSTRUCTION = "Answer A or B."  # how every official question ends
CLARITY_BY_LEVEL: dict[float, str] = {v: k for k, v in CLARITY_LEVELS.items()}

TARGET_REFERENCES: dict[str, tuple[str, ...]] = {
    "low": (
        "the salient object",
        "the object that stands out",
        "the uniquely positioned object",
        "the special object",
        "the most interesting object",
        "the object that is different",
        "the visually distinct object",
    ),
    "medium": (
        "the salient object due to its unique distance in the image",
        "the object that stands out because it is at a different depth",
        "the object positioned at a different distance",
        "the special object breaking the depth pattern",
        "the object that is different from the rest in terms of its depth",
    ),
    "high": ("the object in the middle", "the center object"),
    "highest": ("the object marked with a red circle",),
}

_PLAIN_DISTRACTORS = ("the other objects", "the other similar objects", "the rest of the objects",
                      "the remaining objects")
DISTRACTOR_REFERENCES: dict[str, tuple[str, ...]] = {
    "low": _PLAIN_DISTRACTORS,
    "medium": _PLAIN_DISTRACTORS,
    "high": _PLAIN_DISTRACTORS,
    "highest": ("the objects marked with a blue square",),
}


@dataclass(frozen=True)
class Body:
    """One question body: its options in the paper's normal order and its fixed tags."""

    options: tuple[str, str]
    vocabulary: str  # close-far | front-rear | before-after
    formality: str  # casual | formal | regular
    query: str  # mcq | yes-no


# Bodies 1-9: the paper's synthetic prompt space. 10-11: the authors' real-photo questions.
BODIES: dict[int, Body] = {
    1: Body(("Closer", "Farther"), "close-far", "regular", "mcq"),
    2: Body(("Closer", "Farther"), "close-far", "regular", "mcq"),
    3: Body(("Behind", "In front of"), "front-rear", "regular", "mcq"),
    4: Body(("Closer", "Farther"), "close-far", "formal", "mcq"),
    5: Body(("Before", "After"), "before-after", "casual", "mcq"),
    6: Body(("Nearer", "Farther"), "close-far", "casual", "mcq"),
    7: Body(("Before", "After"), "before-after", "formal", "mcq"),
    8: Body(("Yes", "No"), "front-rear", "regular", "yes-no"),
    9: Body(("True", "False"), "front-rear", "regular", "yes-no"),
    10: Body(("Yes", "No"), "front-rear", "regular", "yes-no"),
    11: Body(("closer", "farther"), "close-far", "regular", "mcq"),
}
SYNTHETIC_BODIES = tuple(range(1, 10))
REAL_BODIES = (10, 11)

# The authors' order rule (case-insensitive here because the real questions use lower case).
REVERSED_IF_OPTION_A = frozenset({"farther", "in front of", "after", "no", "false"})

# What each option means for the target. Yes/No and True/False depend on the body's relation:
# body 8 and 10 ask "at the rear of" / "behind" (yes = farther), body 9 "in front of" (true = closer).
_OPTION_MEANING = {"closer": "closer", "nearer": "closer", "before": "closer", "in front of": "closer",
                   "farther": "farther", "behind": "farther", "after": "farther"}
_AFFIRMATIVE_MEANING = {8: "farther", 9: "closer", 10: "farther"}

# Real-photo subsets: (preamble, clarity). Crops name the side of the target instead.
REAL_PREAMBLES: tuple[tuple[str, str], ...] = (
    ("In this image, one object stands out.", "low"),
    ("There is a salient object in the image.", "low"),
    ("In this image, one object stands out because it's at a different distance than the rest.", "medium"),
    ("There is a salient object due to its unique distance in the image.", "medium"),
    ("In this image, one object is in the middle of other objects.", "high"),
    ("Answer a question about the left object.", "high"),
    ("Answer a question about the right object.", "high"),
    ("In this image, there is an object marked with a red circle.", "highest"),
)
REAL_DISTRACTORS = {"low": "the other similar objects", "medium": "the other similar objects",
                    "high": "the other similar objects", "highest": "the objects marked with a blue square"}

# ICL+CoT demonstrations: the authors' wording (specs/o3d.md, "ICL/CoT demonstration text" [code]).
# A description completes "The object of interest ..." (first cue) and "Additionally, the object ..."
# (second cue of a 2-cue demonstration); the cue names are joined with " and ". LP's description is
# the same for both positions and keeps the code's double space. None contains ")" (the parser cuts
# a CoT answer at the first ")").
CUE_CODES = ("HP", "OC", "RS", "TG", "SA", "LS", "FO", "FS", "LP")
CUE_NAMES: dict[str, str] = {
    "HP": "height-in-plane",
    "LS": "shadow",
    "OC": "interposition",
    "TG": "texture density",
    "RS": "relative size",
    "FS": "familiar size",
    "FO": "focus",
    "SA": "aerial perspective",
    "LP": "linear perspective",
}
CUE_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "HP": {"near": "appears lower than the others", "far": "appears higher than the others"},
    "OC": {"near": "is occluding the other objects", "far": "is occluded by the other objects"},
    "RS": {"near": "looks larger than the rest", "far": "looks smaller than the rest"},
    "TG": {"near": "has lower texture density than the others", "far": "has higher texture density than the others"},
    "FS": {"near": "is usually smaller than the other objects", "far": "is usually larger than the other objects"},
    "FO": {"near": "is more focused than the others", "far": "is less focused than the others"},
    "SA": {"near": "is more saturated than the rest", "far": "is less saturated than the rest"},
    "LS": {"near": "does not have any shadow casted on its front face",
           "far": "has some shadow casted potentially by the other objects"},
    "LP": {"near": "is  situated on a ground with some regular patterns",
           "far": "is  situated on a ground with some regular patterns"},
}
COT_RELATION = {"near": "closer than", "far": "farther away than"}


# ---------------------------------------------------------------------------------------------
# Prompt space
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptTags:
    """The variation tags of one question (and what identifies it)."""

    body: int
    target: str
    distractors: str
    clarity_level: str  # low | medium | high | highest (the canonical doc's name)
    ques_clarity: float  # 2 | 3 | 3.5 | 4 (the official data's number)
    vocabulary: str  # close-far | front-rear | before-after
    formality: str  # casual | formal | regular
    order: str  # normal | reversed
    query: str  # mcq | yes-no
    option_a: str
    option_b: str
    family: str = "synthetic"  # synthetic (bodies 1-9) | real (bodies 10-11)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def with_answer_instruction(question: str, instruction: str | None) -> str:
    """``question`` with its closing "Answer A or B." replaced by ``instruction``.

    The paper prompted every model with the dataset's question as it is, except Kosmos2, which
    got "Answer:" instead ("otherwise ~70% of its answers are meaningless"). None keeps the
    question unchanged; "" drops the instruction. A question that does not end with the
    instruction cannot be rewritten and raises ValueError.
    """
    if instruction is None or instruction == ANSWER_INSTRUCTION:
        return question
    if not question.endswith(ANSWER_INSTRUCTION):
        raise ValueError(f"answer_instruction {instruction!r}: the question does not end with "
                         f"{ANSWER_INSTRUCTION!r}, so its instruction cannot be replaced: {question!r}")
    return (question[: -len(ANSWER_INSTRUCTION)] + instruction).rstrip()


@dataclass(frozen=True)
class Prompt:
    text: str
    tags: PromptTags


def option_order(option_a: str) -> str:
    """The authors' tag: reversed when option A is Farther, In front of, After, No or False."""
    return "reversed" if option_a.strip().lower() in REVERSED_IF_OPTION_A else "normal"


def render_question(body: int, target: str, distractors: str, reversed_order: bool = False,
                    preamble: str | None = None, instruction: str = ANSWER_INSTRUCTION) -> str:
    """The question text of ``body`` (1-11) with the given references, option order and closing
    instruction."""
    if body not in BODIES:
        raise ValueError(f"O3-D question body must be one of {sorted(BODIES)}, not {body!r}")
    a, b = BODIES[body].options
    if reversed_order:
        a, b = b, a
    fields: dict[str, object] = {"body": body, "target": target, "distractors": distractors,
                                 "option_a": a, "option_b": b, "instruction": instruction}
    if body in REAL_BODIES:
        if preamble is None:
            raise ValueError(f"O3-D real-subset body {body} needs a preamble")
        fields["preamble"] = preamble
    return _templates.render(BENCHMARK, QUESTION_TEMPLATE, **fields)


def _make(body: int, target: str, distractors: str, clarity: str, reversed_order: bool,
          family: str, preamble: str | None = None) -> Prompt:
    spec = BODIES[body]
    a, b = spec.options[::-1] if reversed_order else spec.options
    text = render_question(body, target, distractors, reversed_order, preamble)
    tags = PromptTags(body=body, target=target if preamble is None else preamble, distractors=distractors,
                      clarity_level=clarity, ques_clarity=CLARITY_LEVELS[clarity], vocabulary=spec.vocabulary,
                      formality=spec.formality, order=option_order(a), query=spec.query,
                      option_a=a, option_b=b, family=family)
    return Prompt(text, tags)


@functools.cache
def prompt_space() -> tuple[Prompt, ...]:
    """The paper's 1,026 unique prompts: 9 bodies x (14 targets x 4 distractor references
    + the marked target x the marked distractors) x 2 option orders, in a fixed order."""
    out: list[Prompt] = []
    for body in SYNTHETIC_BODIES:
        for clarity in CLARITY_LEVELS:
            for target in TARGET_REFERENCES[clarity]:
                for distractors in DISTRACTOR_REFERENCES[clarity]:
                    for reversed_order in (False, True):
                        out.append(_make(body, target, distractors, clarity, reversed_order, "synthetic"))
    return tuple(out)


@functools.cache
def tagged_prompt_space() -> Iterable[dict]:
    """The whole prompt space as ``spatial-tasks prompts`` lists it: {prompt, tags} (1,026 questions)."""
    for prompt in prompt_space():
        yield {"prompt": prompt.text, "tags": prompt.tags.as_dict()}


def real_prompt_space() -> tuple[Prompt, ...]:
    """Questions of the authors' real-photo subsets: 8 preambles x bodies 10-11 x 2 orders = 32,
    all of which occur in the authors' released outputs."""
    out: list[Prompt] = []
    for preamble, clarity in REAL_PREAMBLES:
        for body in REAL_BODIES:
            for reversed_order in (False, True):
                distractors = REAL_DISTRACTORS[clarity]
                out.append(_make(body, "", distractors, clarity, reversed_order, "real", preamble))
    return tuple(out)


_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@functools.cache
def _lookup() -> tuple[dict[str, PromptTags], dict[str, PromptTags]]:
    exact: dict[str, PromptTags] = {}
    folded: dict[str, PromptTags] = {}
    for prompt in (*prompt_space(), *real_prompt_space()):
        key = _normalise(prompt.text)
        exact[key] = prompt.tags
        folded.setdefault(key.casefold(), prompt.tags)
    return exact, folded


def parse_prompt(text: object) -> PromptTags | None:
    """The tags of a question in the official data's form (any whitespace, any case), or None.

    Covers the 1,026 synthetic prompts and the real-subset questions; anything else (an ICL
    prompt with demonstrations prepended, a CoT instruction, free text) gives None.
    """
    if not isinstance(text, str):
        return None
    exact, folded = _lookup()
    key = _normalise(text)
    return exact.get(key) or folded.get(key.casefold())


def correct_letter(tags: PromptTags, position: str) -> str:
    """The option letter (A/B) that is right when the target is ``position`` (near | far)."""
    if position not in ("near", "far"):
        raise ValueError(f"position must be 'near' or 'far', not {position!r}")
    wanted = "closer" if position == "near" else "farther"
    for letter, option in (("A", tags.option_a), ("B", tags.option_b)):
        word = option.lower()
        if word in _OPTION_MEANING:
            meaning = _OPTION_MEANING[word]
        else:  # yes / no / true / false
            affirmative = _AFFIRMATIVE_MEANING[tags.body]
            negative = "closer" if affirmative == "farther" else "farther"
            meaning = affirmative if word in ("yes", "true") else negative
        if meaning == wanted:
            return letter
    raise AssertionError(f"no option of body {tags.body} means {wanted}")  # unreachable for BODIES


# ---------------------------------------------------------------------------------------------
# Seeded sampling for new images
# ---------------------------------------------------------------------------------------------


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from ``parts`` that is the same in every process (unlike hash())."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def sample_questions(image_name: str, is_marked: bool, k: int = 1, seed: int = 0,
                     clarities: Iterable[str] | None = None) -> list[Prompt]:
    """``k`` distinct prompts for one image, the same for the same (image, marking, seed).

    Marked images draw from the 18 highest-clarity prompts (red circle / blue squares), unmarked
    images from the 1,008 others, as in the official data; ``clarities`` narrows the pool (e.g.
    ``["high"]`` to mimic one of the authors' per-clarity question sets).
    """
    allowed = {"highest"} if is_marked else {"low", "medium", "high"}
    if clarities is not None:
        wanted = set(clarities)
        unknown = wanted - set(CLARITY_LEVELS)
        if unknown:
            raise ValueError(f"unknown clarity {sorted(unknown)}; choose from {list(CLARITY_LEVELS)}")
        if not wanted <= allowed:
            kind = "marked" if is_marked else "unmarked"
            raise ValueError(f"clarity {sorted(wanted - allowed)} is not used for {kind} images")
        allowed = wanted
    pool = [p for p in prompt_space() if p.tags.clarity_level in allowed]
    if not 1 <= k <= len(pool):
        raise ValueError(f"k must be between 1 and {len(pool)} for this image, not {k}")
    rng = random.Random(stable_seed("o3d-questions", seed, image_name, bool(is_marked)))
    return rng.sample(pool, k)


# ---------------------------------------------------------------------------------------------
# ICL + CoT demonstrations
# ---------------------------------------------------------------------------------------------


def cot_answer(cues: Sequence[str], position: str, letter: str) -> str:
    """The worked answer of one demonstration (the authors' code): "(Let's think step by step. The
    object of interest {d1}. [Additionally, the object {d2}.] Based on the {names} pictorial cues, it
    is likely that the object is {closer than|farther away than} the other objects.) X." -- the
    bracketed sentence only for a 2-cue demonstration."""
    if position not in COT_RELATION:
        raise ValueError(f"position must be 'near' or 'far', not {position!r}")
    if letter not in ("A", "B"):
        raise ValueError(f"letter must be 'A' or 'B', not {letter!r}")
    codes = list(cues)
    if not 1 <= len(codes) <= 2:
        raise ValueError(f"a CoT demonstration has one or two cues, not {codes}")
    unknown = [c for c in codes if c not in CUE_NAMES]
    if unknown:
        raise ValueError(f"unknown cue code(s) {unknown}; choose from {list(CUE_CODES)}")
    return _templates.render(
        BENCHMARK, COT_TEMPLATE,
        cue_description=CUE_DESCRIPTIONS[codes[0]][position],
        second_description=CUE_DESCRIPTIONS[codes[1]][position] if len(codes) == 2 else None,
        cue_names=" and ".join(CUE_NAMES[c] for c in codes),
        relation=COT_RELATION[position],
        letter=letter,
    )


def demonstration_question(query: str, key: object, seed: int = 0) -> str:
    """A demonstration's question: freshly drawn (seeded by ``key``) from the prompts of the query's
    clarity level (marked queries: the 18 red-circle prompts), never the query's own text."""
    tags = parse_prompt(query)
    if tags is None:
        raise ValueError(f"not an O3-D question in the official form: {query!r}")
    pool = [p.text for p in (real_prompt_space() if tags.family == "real" else prompt_space())
            if p.tags.clarity_level == tags.clarity_level and p.text != query.strip()]
    return random.Random(stable_seed("o3d-demo-question", seed, key)).choice(pool)


def icl_demonstration(question: str, cues: Sequence[str], position: str) -> tuple[str, str]:
    """(question, worked answer) of one demonstration image whose target is ``position``; the
    answer's letter is the question's correct option. The question must be in the official form."""
    tags = parse_prompt(question)
    if tags is None:
        raise ValueError(f"not an O3-D question in the official form: {question!r}")
    return question, cot_answer(cues, position, correct_letter(tags, position))


def write_out(path, n: int | None = None, seed: int = 0) -> int:
    """Write ``n`` prompts (all when None; a seeded sample otherwise) with their tags as TSV, for a
    person to read before a run. Returns the number written."""
    from pathlib import Path

    prompts = list(prompt_space())
    if n is not None:
        prompts = random.Random(stable_seed("o3d-write-out", seed)).sample(prompts, min(n, len(prompts)))
    cols = ("body", "clarity_level", "ques_clarity", "vocabulary", "formality", "order", "query")
    lines = ["\t".join((*cols, "text"))]
    for p in prompts:
        lines.append("\t".join([*(str(getattr(p.tags, c)) for c in cols), p.text]))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(prompts)
