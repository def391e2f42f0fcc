"""Every public parser and decoder never raises on model output or stored payloads, and stays
linear: 20,000 hypothesis-generated inputs per parser (counted) (text with lone surrogates and control
characters, answer-shaped fragments, deeply nested JSON, huge numbers, long strings), plus
multi-megabyte inputs and a time bound (the curve itself: benchmarks/parsers.py).

Validators (``schema.parse_cues`` ...) may refuse a value, but only with their one-line
SchemaError, never another exception."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spatial_tasks.common.choice import OUTCOMES, read_choice
from spatial_tasks.common.samples import first_response
from spatial_tasks.common.yesno import UNPARSEABLE, decode_payload, parse_yes_no
from spatial_tasks.dori.soft import OPTION_READERS, option_value

pytestmark = pytest.mark.fuzz  # thousands of inputs each: the whole suite's, not the quick tier's
from spatial_tasks.o3d import schema
from spatial_tasks.o3d.parse import LABELS, parse_answer, trace_answer
from spatial_tasks.o3d.prompts import parse_prompt
from spatial_tasks.spatialtunnel.questions import resolve_template
from spatial_tasks.vague.parse import final_part

EXAMPLES = 20_000  # inputs per parser
# Each hypothesis example is a batch of BATCH inputs drawn from the test's strategies: hypothesis's
# cost per example (not the drawing) was most of these tests' time, ~5 minutes of a CI run.
BATCH = 10
FUZZ = settings(max_examples=EXAMPLES // BATCH, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SEEN: Counter[str] = Counter()  # inputs each fuzz test was given


def batch(*strategies):
    """BATCH draws of the strategies (one input: a tuple of one value from each)."""
    return st.lists(st.tuples(*strategies), min_size=BATCH, max_size=BATCH)


def fuzzed(name: str, run) -> None:
    """Run a @given function and check it was given EXAMPLES inputs."""
    SEEN[name] = 0
    run()
    assert SEEN[name] >= EXAMPLES, (name, SEEN[name])
QUESTION = ("Is the object marked with a red circle closer to or farther away from the viewer than the objects "
            "marked with a blue square? A. Closer. B. Farther. Answer A or B.")

ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates, controls, unassigned included


def joined(fragments: list[str], max_size: int = 40):
    """Up to ``max_size`` of ``fragments`` in a row, joined: one byte string drawn, each byte naming a
    fragment. What ``st.lists(st.sampled_from(fragments)).map("".join)`` draws, as one choice instead
    of two per fragment (hypothesis's cost is per choice: 220 instead of 640 us an input); it shrinks
    likewise, to fewer fragments and to the first ones."""
    return st.binary(max_size=max_size).map(lambda picks: "".join(fragments[i % len(fragments)] for i in picks))


FRAGMENTS = joined([
    "A", "B", "C", "D", "a", ".", ". ", " ", "\n", "\n\n", ")", "(", "(Let's think step by step", "(Let me think step by step",
    "Answer: ", "wer is: ", "swer is ", "d say:\n\n", "er is:\n\n", "ons is: ", "itioned ", "x comes ", "Yes", "no",
    "True", "False", "in front of", "behind", "farther", "closer to the viewer", "nearer than", "Answer A",
    "correct answer is B", "\ud800", "\udfff", "\x00", "é", "İ", "\u212a", "\u2028", "spatial_tasks_yesno", "{", "}",
    '"', "1e999", "-0", "NaN", "[", "]"])
TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=200),
    FRAGMENTS,
    st.builds(lambda s, n: s * n, st.text(ANY_CHAR, min_size=1, max_size=4), st.integers(200, 2000)),
)
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-(10**400), 10**400),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(ANY_CHAR, max_size=30))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                                st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                           max_leaves=20)


def _dumps(value) -> str:
    try:
        return json.dumps(value)
    except (ValueError, OverflowError):
        return str(value)


PAYLOADS = st.one_of(
    TEXT,
    st.builds(lambda yes, no, extra: _dumps({"spatial_tasks_yesno": 1, "logit_yes": yes, "logit_no": no, **extra}),
              JSON_VALUES, JSON_VALUES, st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3)),
    st.integers(1, 50_000).map(lambda n: '{"spatial_tasks_yesno": 1, "logit_yes": ' + "[" * n + "]" * n + "}"),
    st.integers(1, 5000).map(lambda n: '{"spatial_tasks_yesno": 1, "logit_yes": 1' + "0" * n + ', "logit_no": 0}'),
    st.sampled_from(['{"spatial_tasks_yesno": 1, "logit_yes": NaN, "logit_no": 0}',
                     '{"spatial_tasks_yesno": 1, "logit_yes": Infinity, "logit_no": Infinity}',
                     '{"spatial_tasks_yesno": 1, "logit_yes": 1e999, "logit_no": -1e999}',
                     '{"spatial_tasks_yesno": 1, "logit_yes": true, "logit_no": 0}',
                     '["spatial_tasks_yesno"]', '"spatial_tasks_yesno"']),
)
ANYTHING = st.one_of(TEXT, JSON_VALUES, st.binary(max_size=20))


# Parsers that take the same kind of input share each generated input: every one of them still
# gets EXAMPLES inputs from the same strategy, and generating them (most of the cost) is paid once.

@FUZZ
@given(cases=batch(st.one_of(TEXT, ANYTHING), st.one_of(TEXT, st.just(QUESTION), ANYTHING),
                   st.one_of(st.sampled_from(["Yes", "No"]), ANYTHING)))
def _text_readers(cases):
    for text, question, answer in cases:
        SEEN["text_readers"] += 1
        _read_text(text, question, answer)


def test_text_readers():
    """O3-D's answer parser (``text`` as the answer), its prompt parser, DORI's option readers and
    SpatialTunnel's template resolver."""
    fuzzed("text_readers", _text_readers)


def _read_text(text, question, answer):
    assert parse_answer(text, question) in LABELS
    assert trace_answer(text, question).label in LABELS
    tags = parse_prompt(text)
    assert tags is None or tags.body in range(1, 12)
    for task in OPTION_READERS:
        option_value(task, text)  # a value or None, never an exception
    resolved = resolve_template(text, answer) if isinstance(text, str) else None
    assert resolved is None or resolved[0] in (1, 2, 3, 4)


DORI_OPTIONS = ["90 degrees clockwise", "90 degrees counterclockwise", "a", "Cannot be determined", "B"]
DORI_FRAGMENTS = joined(["Answer: ", "answer is", "(A)", "(B)", " or ", "/", "**", "A.", "B ", "\n", " ",
                         "clockwise", "counter", "90 degrees ", "cannot be determined", "I'm sorry", "E", "a"])


VAGUE_FRAGMENTS = joined(["Your answer2 (intention) : ", "answer2", "(", ")", "A", "B:", "(C)", "D.", " or ",
                          "Answer: ", "**", "I don't know", "\n", " ", "The speaker wants person1 to "])
VAGUE_OPTIONS = ["Move the car.", "Stay.", "Close the door.", "Buy milk."]


@FUZZ
@given(cases=batch(st.one_of(TEXT, ANYTHING, DORI_FRAGMENTS, VAGUE_FRAGMENTS),
                   st.one_of(st.just(DORI_OPTIONS), st.just(VAGUE_OPTIONS),
                             st.lists(st.one_of(TEXT, ANYTHING), max_size=16))))
def _read_choices(cases):
    for answer, options in cases:
        SEEN["read_choice"] += 1
        for read in (answer, final_part(answer if isinstance(answer, str) else "")):
            choice = read_choice(read, options)
            assert choice.outcome in OUTCOMES
            assert choice.index is None or 0 <= choice.index < len(options)


def test_read_choice_dori_and_vague_style():
    """The multiple-choice reader as DORI calls it (the answer as given) and as VAGUE does (its
    final part, after a chain of thought), on the same inputs: DORI's and VAGUE's answer fragments
    and options, and any list of up to 16 options."""
    fuzzed("read_choice", _read_choices)


@FUZZ
@given(cases=batch(st.one_of(PAYLOADS, ANYTHING)))
def _yes_no(cases):
    for (response,) in cases:
        SEEN["yes_no"] += 1
        assert parse_yes_no(response) in ("Yes", "No", UNPARSEABLE)
        payload = decode_payload(response)
        if payload is not None:
            assert payload.answer in ("Yes", "No", UNPARSEABLE)
            assert payload.answer != "No" or payload.finite  # NaN logits never read as "No"


def test_yes_no_parser_and_payload_decoder():
    fuzzed("yes_no", _yes_no)


@FUZZ
@given(cases=batch(st.one_of(JSON_VALUES, TEXT, st.integers(1, 20_000).map(lambda n: _nested(n)))))
def _stored_values(cases):
    for (value,) in cases:
        SEEN["stored_values"] += 1
        _read_stored(value)


def test_logged_response_reader_and_o3d_stored_value_validators():
    """The logged-response reader always returns text; O3-D's stored-value validators refuse a
    value only with their one-line SchemaError (crop_tag / question_side take text only)."""
    fuzzed("stored_values", _stored_values)


def _read_stored(value):
    assert isinstance(first_response({"filtered_resps": value}), str)
    for validate in (schema.parse_cues, schema.parse_depth_scale, schema.as_bool, schema.crop_tag, schema.question_side):
        try:
            validate(value)
        except schema.SchemaError as err:
            assert str(err) and "\n" not in str(err)
        except (TypeError, AttributeError) as err:
            assert validate in (schema.crop_tag, schema.question_side) and not isinstance(value, str), err


def _nested(depth: int) -> list:
    """``"B"`` inside ``depth`` lists. Every depth is one link of a single chain, built once: building
    and freeing a fresh 10,000-deep list for each draw was a fifth of these tests' time. (The readers
    only read their input.)"""
    return _NESTED[depth]


def _chain(depth: int) -> list:
    links: list[object] = ["B"]
    for _ in range(depth):
        links.append([links[-1]])
    return links


_NESTED = _chain(20_000)


# ---- size and time -------------------------------------------------------------------------------

MB = 1_000_000
# Each hostile shape at any length n: the megabyte is read, and a quarter of it to see how time grows.
SHAPES = {
    "letters": lambda n: "A" * n,
    "leading strings": lambda n: "Answer: " * (n // 8),
    "newlines": lambda n: "\n" * n,
    "phrase-like": lambda n: "closer to th" * (n // 12),
    "surrogates": lambda n: "\ud800" * n,
    "payload marker": lambda n: '{"spatial_tasks_yesno": 1, "text": "' + "y" * n + '"}',
    "answer then spaces": lambda n: "answer" + " " * n,
    "short option everywhere": lambda n: "a " * (n // 2),
    "hedges": lambda n: "A or " * (n // 5),
    "digits": lambda n: "1" * n,  # read from every start, a run of digits was quadratic in DORI's reader
    "operation words": lambda n: "rotate flip " * (n // 12),
    "one long word": lambda n: "rotat" + "e" * n,
}
HOSTILE = {shape: make(MB) for shape, make in SHAPES.items()}
QUARTER = {shape: make(MB // 4) for shape, make in SHAPES.items()}
# A reader is linear in its input when four times the text takes about four times as long: allowed 8x
# (timer noise with both cores busy), plus 0.1 s for readers that stop early. A quadratic reader takes
# 16x and, on a megabyte, seconds; CATASTROPHE bounds any reader on any CPU. Absolute budgets (the
# half a second these tests once asserted) failed on a CPU half as fast, and prove nothing about growth.
GROWTH, SLACK_S, CATASTROPHE_S = 8.0, 0.1, 10.0


def seconds(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def assert_linear(fn, shape: str, what: str = "") -> None:
    fn(QUARTER[shape])  # warm caches
    for _ in range(3):  # measured again when over: a pause of the busy machine is not the reader's time
        quarter, full = seconds(fn, QUARTER[shape]), seconds(fn, HOSTILE[shape])  # a quadratic reader is over each time
        assert full < CATASTROPHE_S, (what, full)
        if full <= GROWTH * quarter + SLACK_S:
            return
    raise AssertionError(f"{what}: {full:.3f} s on 1 MB, {quarter:.3f} s on 1/4 MB (three times over)")


PARSERS = {
    "parse_answer": lambda text: parse_answer(text, QUESTION),
    "parse_answer (as question)": lambda text: parse_answer("A", "? A. xx" * (len(text) // 7)),
    "parse_prompt": parse_prompt,
    "parse_yes_no": parse_yes_no,
    "decode_payload": decode_payload,
    "read_choice": lambda text: read_choice(text, DORI_OPTIONS),
    "read_choice (options)": lambda text: read_choice("A", [text[: len(text) // 2], text]),
    "read_choice (VAGUE options)": lambda text: read_choice(text, ["Move the car.", "Stay.", "Close the door.", "x"]),
    "read_choice (CoT)": lambda text: read_choice(final_part("Your answer2 (intention) : " + text), ["a", "b"]),
}


@pytest.mark.parametrize("parser", list(PARSERS))
@pytest.mark.parametrize("shape", list(HOSTILE))
def test_a_megabyte_parses_in_linear_time(parser, shape):
    assert_linear(PARSERS[parser], shape, parser)


@pytest.mark.parametrize("shape", list(HOSTILE))
def test_every_dori_option_reader_reads_a_megabyte_in_linear_time(shape):
    for task in OPTION_READERS:
        assert_linear(lambda text, task=task: option_value(task, text), shape, task)


@pytest.mark.parametrize("parser", list(PARSERS))
def test_a_typical_answer_takes_well_under_a_millisecond(parser):
    fn = PARSERS[parser]
    texts = ["B", "A. Closer.", "The answer is B.", "(Let's think step by step. It is lower.) A.", "Yes"] * 200
    start = time.perf_counter()
    for text in texts:
        fn(text)
    assert (time.perf_counter() - start) / len(texts) < 2e-4  # 0.2 ms each on average
