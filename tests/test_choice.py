"""The one multiple-choice reader (spatial_tasks/common/choice.py) every benchmark uses: the letter
the answer opens with wins, then explicit markers, option text, one tagged letter; "cannot be
determined", "I don't know" and refusals are counted, never read as a letter. Never raises."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from spatial_tasks.common import choice as choice_module
from spatial_tasks.common.choice import DECLINED, OUTCOMES, REFUSED, SELECTED, UNPARSEABLE, read_choice

OPTIONS = ["90 degrees clockwise", "90 degrees counterclockwise", "180 degrees clockwise", "Cannot be determined"]
VAGUE_OPTIONS = ["Move the sedan out of the handicapped spot.", "Admire the parking lot's design.",
                 "Park closer to the entrance.", "Move the truck out of the spot."]


@pytest.mark.parametrize(("response", "index"), [
    ("B", 1), ("B.", 1), ("(C)", 2), ("C) because the back is visible", 2), ("**A**", 0),
    ("Answer: C", 2), ("The answer is (B).", 1), ("Selection - A\nReason: the front points right.", 0),
    ("I choose B since the chair turned the other way.", 1),
    ("B. 90 degrees counterclockwise -- its front now points left.", 1),
    ("90 degrees counterclockwise, because the marker moved left.", 1),   # text only; not "clockwise" inside it
    ("The object turned 180 degrees clockwise.", 2),
    ("Looking at both images, the rotation is (A).", 0),
    ("A 90 degrees clockwise turn explains the change.", 0),               # the article "A" is not read; the text is
    # The prompt asks for the letter first: a letter named later in the reasoning never overrides it.
    ("B. The front points right; option A would be wrong.", 1),
    ("A. 90 degrees clockwise (answer B is the opposite direction).", 0),
    ("C: the answer is not A.", 2),
    ("D. Cannot be determined", 3),
    ("It cannot be determined from the image.", 3),   # the words select the option that says them
])
def test_selection(response, index):
    choice = read_choice(response, OPTIONS)
    assert (choice.outcome, choice.index) == (SELECTED, index)


def test_an_explicit_letter_wins_over_option_text():
    assert read_choice("Answer: A (not 180 degrees clockwise)", OPTIONS).index == 0


@pytest.mark.parametrize("response", ["It cannot be determined from the image.", "I don't know.",
                                      "I'm not sure which one."])
def test_declining_without_such_an_option(response):
    assert read_choice(response, OPTIONS[:3]).outcome == DECLINED


@pytest.mark.parametrize("response", ["I'm sorry, I can't help with that.", "As an AI, I am unable to see images."])
def test_refusals_are_counted(response):
    assert read_choice(response, OPTIONS).outcome == REFUSED


@pytest.mark.parametrize("response", ["", "   ", None, "hmm", "E", "90 degrees", "clockwise or counterclockwise",
                                      "(A) or (B)", "A/B", 12, b"B"])
def test_unparseable(response):
    assert read_choice(response, OPTIONS).outcome == UNPARSEABLE


def test_letters_beyond_the_options_are_not_selections():
    assert read_choice("Answer: Z", OPTIONS[:2]).outcome == UNPARSEABLE
    assert read_choice("C", OPTIONS[:2]).outcome == UNPARSEABLE


def test_no_options_is_unparseable():
    assert read_choice("A", []).outcome == UNPARSEABLE


@pytest.mark.parametrize(("response", "index"), [
    ("C", 2), ("C: Park closer to the entrance.", 2), ("Your answer : B", 1), ("**D**", 3),
    ("The speaker wants them to move the sedan out of the handicapped spot.", 0),
    ("A. Move the sedan. Option D mentions a truck, which is not there.", 0),
])
def test_vague_style_answers(response, index):
    choice = read_choice(response, VAGUE_OPTIONS)
    assert (choice.outcome, choice.index) == (SELECTED, index)


@pytest.mark.fuzz
@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.none(), st.integers()),
       st.lists(st.text(min_size=0, max_size=30), max_size=16))
def test_never_raises(response, options):
    choice = read_choice(response, options)
    assert choice.outcome in OUTCOMES
    assert choice.index is None or 0 <= choice.index < len(options)


@settings(max_examples=1000, deadline=None)
@given(st.integers(min_value=0, max_value=3), st.text(max_size=60))
@example(0, "ANSWERB")  # found by this test on a random run: "A. ANSWERB" was once read as B
@example(1, "The front points right; option A would be wrong.")
def test_a_leading_letter_with_any_reasoning_is_read(k, reason):
    letter = "ABCD"[k]
    assert read_choice(f"{letter}. {reason}", OPTIONS).index == k


WORDISH = st.text(st.sampled_from("ab a.1\n-Kİé"), max_size=30)  # letters, digits, boundaries, case folds


@settings(max_examples=1000, deadline=None)
@given(WORDISH, st.text(st.sampled_from("ab a.1-K"), min_size=1, max_size=4), st.integers(0, 70))
@example("a" * 70, "a", 0)  # more than 64 candidates: the regex engine's path
@example("ab a", "a", 0)
def test_option_text_occurrences_are_the_regex_definitions(text, needle, repeat):
    """Option text is found where ``(?<![a-z0-9])NEEDLE(?![a-z0-9])`` finds it, left to right without
    overlaps, on both of its paths (few candidates: str.find; many: the regex itself)."""
    text = text + (needle + " ") * repeat
    expected = [m.start() for m in re.finditer(r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])", text)]
    assert choice_module._word_occurrences(text, needle) == expected
