"""O3-D prompt space: the paper's 1,026 prompts, their tags, parsing back, sampling, ICL+CoT."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from spatial_tasks.common.prompts import PromptError, render
from spatial_tasks.o3d import prompts as P
from spatial_tasks.o3d.parse import parse_answer

RELEASED = Path(__file__).with_name("data") / "released_outputs_5models.jsonl.gz"  # tests/o3d/data/README.md


def test_space_has_the_papers_1026_unique_prompts():
    space = P.prompt_space()
    assert len(space) == 1026 == 9 * 14 * 4 * 2 + 9 * 1 * 1 * 2
    assert len({p.text for p in space}) == 1026
    assert len({p.tags for p in space}) == 1026
    assert Counter(p.tags.clarity_level for p in space) == {
        "low": 504,
        "medium": 360,
        "high": 144,
        "highest": 18,
    }
    assert Counter(p.tags.body for p in space) == {b: 114 for b in range(1, 10)}


def test_golden_texts():
    space = P.prompt_space()
    assert space[0].text == (
        "Is the salient object closer to or farther away from the viewer than the other "
        "objects? A. Closer. B. Farther. Answer A or B."
    )
    assert space[-1].text == (
        "True or False: the object marked with a red circle is located in front of the "
        "objects marked with a blue square. A. False. B. True. Answer A or B."
    )
    assert P.render_question(6, "the center object", "the remaining objects", reversed_order=True) == (
        "Does the center object feel farther or nearer than the remaining objects? A. Farther. B. Nearer. "
        "Answer A or B."
    )
    assert P.render_question(
        11, "", "the other similar objects", preamble="In this image, one object stands out."
    ) == (
        "In this image, one object stands out. Is the object closer to the viewer or farther away than the other "
        "similar objects? A. closer. B. farther. Answer A or B."
    )


def test_no_trailing_or_double_spaces():
    for p in (*P.prompt_space(), *P.real_prompt_space()):
        assert p.text == p.text.strip() and "  " not in p.text and "\n" not in p.text


@pytest.mark.parametrize(
    ("body", "vocabulary", "formality", "query"),
    [
        (1, "close-far", "regular", "mcq"),
        (2, "close-far", "regular", "mcq"),
        (3, "front-rear", "regular", "mcq"),
        (4, "close-far", "formal", "mcq"),
        (5, "before-after", "casual", "mcq"),
        (6, "close-far", "casual", "mcq"),
        (7, "before-after", "formal", "mcq"),
        (8, "front-rear", "regular", "yes-no"),
        (9, "front-rear", "regular", "yes-no"),
    ],
)
def test_body_tags(body, vocabulary, formality, query):
    tags = {
        (p.tags.vocabulary, p.tags.formality, p.tags.query) for p in P.prompt_space() if p.tags.body == body
    }
    assert tags == {(vocabulary, formality, query)}


def test_option_order_follows_the_authors_rule():
    for p in P.prompt_space():
        reversed_ = p.tags.option_a in ("Farther", "In front of", "After", "No", "False")
        assert p.tags.order == ("reversed" if reversed_ else "normal")
        assert f"A. {p.tags.option_a}. B. {p.tags.option_b}. Answer A or B." in p.text
    assert Counter(p.tags.order for p in P.prompt_space()) == {"normal": 513, "reversed": 513}


def test_clarity_levels_and_markers():
    for p in P.prompt_space():
        assert p.tags.ques_clarity == {"low": 2, "medium": 3, "high": 3.5, "highest": 4}[p.tags.clarity_level]
        marked = "red circle" in p.text
        assert marked == (p.tags.clarity_level == "highest") == ("blue square" in p.text)


def test_42_language_groups_at_clarity_3_and_above():
    tags = {
        (p.tags.query, p.tags.order, p.tags.formality, p.tags.vocabulary, p.tags.clarity_level)
        for p in P.prompt_space()
        if p.tags.ques_clarity >= 3
    }
    assert len(tags) == 42
    values = {
        (name, getattr(p.tags, name))
        for p in P.prompt_space()
        for name in ("query", "order", "formality", "vocabulary", "clarity_level")
    }
    assert len(values) == 14


def test_parse_prompt_round_trips_every_prompt():
    for p in (*P.prompt_space(), *P.real_prompt_space()):
        assert P.parse_prompt(p.text) == p.tags
    text = P.prompt_space()[7].text
    assert P.parse_prompt("  " + text.replace(" ", "\n  ", 3) + "\n") == P.prompt_space()[7].tags
    assert P.parse_prompt(text.upper()) == P.prompt_space()[7].tags


@pytest.mark.parametrize(
    "text",
    [
        None,
        7,
        "",
        "Is it closer? A. Yes. B. No.",
        "Question 1 ... (Let's think step by step.) A. Is the center object closer?",
    ],
)
def test_parse_prompt_rejects_other_text(text):
    assert P.parse_prompt(text) is None


def test_every_released_question_parses():
    with gzip.open(RELEASED, "rt", encoding="utf-8") as fh:
        questions = {json.loads(line)["ques"] for line in fh}
    assert len(questions) == 1058
    parsed = {q: P.parse_prompt(q) for q in questions}
    assert all(t is not None for t in parsed.values())
    synthetic = {q for q, t in parsed.items() if t.family == "synthetic"}
    assert synthetic == {p.text for p in P.prompt_space()}  # all 1,026, nothing else
    assert {q for q, t in parsed.items() if t.family == "real"} == {p.text for p in P.real_prompt_space()}


def test_sampling_is_deterministic_and_respects_marking():
    a = P.sample_questions("260108182401_far_HP.png", True, k=3, seed=0)
    assert a == P.sample_questions("260108182401_far_HP.png", True, k=3, seed=0)
    assert all(p.tags.clarity_level == "highest" for p in a)
    assert len({p.text for p in a}) == 3
    unmarked = P.sample_questions("260108182401_far_HP.png", False, k=50, seed=1)
    assert all(p.tags.clarity_level != "highest" for p in unmarked)
    assert P.sample_questions("x.png", False, k=5, clarities=["high"])[0].tags.clarity_level == "high"
    draws = {P.sample_questions(f"img{i}.png", False, seed=0)[0].text for i in range(40)}
    assert len(draws) > 30


def test_sampling_is_pinned_across_processes():
    # a stable hash (sha256), not Python's salted hash(): this value must never change
    assert P.stable_seed("o3d-questions", 0, "a.png", True) == 0x5B66052DDE1A8B84
    first = P.sample_questions("260108182401_far_HP.png", True, k=1, seed=0)[0]
    assert first.text == (
        "Is the object marked with a red circle at the rear of the objects marked with a blue "
        "square? A. Yes. B. No. Answer A or B."
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be"),
        ({"k": 19, "is_marked": True}, "k must be"),
        ({"clarities": ["highest"]}, "not used for unmarked"),
        ({"clarities": ["huge"]}, "unknown clarity"),
    ],
)
def test_sampling_errors(kwargs, message):
    args = {"image_name": "a.png", "is_marked": False, **kwargs}
    with pytest.raises(ValueError, match=message):
        P.sample_questions(**args)


def test_cot_answer_text():
    """The authors' wording (specs/o3d.md): the second cue of a pair gets its own sentence."""
    assert P.cot_answer(["RS", "OC"], "far", "B") == (
        "(Let's think step by step. The object of interest looks smaller than the rest. Additionally, the object "
        "is occluded by the other objects. Based on the relative size and interposition pictorial cues, it is "
        "likely that the object is farther away than the other objects.) B."
    )
    assert P.cot_answer(["HP"], "near", "A") == (
        "(Let's think step by step. The object of interest appears lower than the others. Based on the "
        "height-in-plane pictorial cues, it is likely that the object is closer than the other objects.) A."
    )
    assert P.cot_answer(["LP"], "far", "A").startswith(
        "(Let's think step by step. The object of interest is  situated on a ground with some regular patterns.")


def test_every_cue_has_both_descriptions_and_no_bracket():
    for code in P.CUE_CODES:
        for position in ("near", "far"):
            assert ")" not in P.CUE_DESCRIPTIONS[code][position]  # the parser cuts a CoT answer at ")"
    assert P.CUE_DESCRIPTIONS["LS"]["near"] == "does not have any shadow casted on its front face"


def test_demonstration_questions_are_fresh_and_keep_the_clarity():
    marked = next(p for p in P.prompt_space() if p.tags.clarity_level == "highest")
    drawn = {P.demonstration_question(marked.text, ("q", k)) for k in range(60)}
    assert marked.text not in drawn and len(drawn) > 5
    assert all(P.parse_prompt(t).clarity_level == "highest" for t in drawn)
    assert P.demonstration_question(marked.text, ("q", 1)) == P.demonstration_question(marked.text, ("q", 1))


@pytest.mark.parametrize("position", ["near", "far"])
def test_icl_demonstrations_parse_to_their_own_truth(position):
    for p in P.prompt_space()[::37]:
        question, answer = P.icl_demonstration(p.text, ["HP", "SA"], position)
        assert question == p.text
        assert parse_answer(answer, question) == ("closer" if position == "near" else "farther")


def test_cot_errors():
    with pytest.raises(ValueError, match="unknown cue"):
        P.cot_answer(["XX"], "near", "A")
    with pytest.raises(ValueError, match="position"):
        P.cot_answer(["HP"], "middle", "A")
    with pytest.raises(ValueError, match="official form"):
        P.icl_demonstration("Is it closer?", ["HP"], "near")
    with pytest.raises(ValueError, match="one or two cues"):
        P.cot_answer(["HP", "SA", "OC"], "near", "A")


def test_templates_are_strict():
    with pytest.raises(PromptError, match="no_such_o3d_question_body"):
        render("o3d", P.QUESTION_TEMPLATE, body=42, target="t", distractors="d", option_a="A", option_b="B")
    with pytest.raises(PromptError, match="option_b"):
        render("o3d", P.QUESTION_TEMPLATE, body=1, target="t", distractors="d", option_a="A")
    with pytest.raises(ValueError, match="body"):
        P.render_question(12, "t", "d")


def test_write_out(tmp_path):
    n = P.write_out(tmp_path / "prompts.tsv", n=10)
    lines = (tmp_path / "prompts.tsv").read_text(encoding="utf-8").splitlines()
    assert n == 10 and len(lines) == 11 and lines[0].startswith("body\tclarity")
