"""VAGUE prompts are the authors' exact wording (utils/exp_prompts.py), pinned by golden files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spatial_tasks.vague import load, records
from spatial_tasks.vague import tasks as T

GOLDEN = Path(__file__).with_name("golden")
CAPTION = "Two people stand next to a sedan."


@pytest.fixture(scope="module")
def doc():
    docs = load.docs_from_folder(Path("tasks/vague/sample/github"))
    return next(d for d in docs if d["item_id"] == "vcr-00000")


PROMPTS = {
    "vlm": lambda d: T.doc_to_text_vlm(d),
    "lm": lambda d: T.doc_to_text_lm(d),
    "sm_gpt": lambda d: T.doc_to_text_sm_gpt(d),
    "sm": lambda d: T.mcq_prompt(d, "sm", caption=CAPTION),
    "vlm_cot": lambda d: T.doc_to_text_vlm_cot(d),
    "sm_cot": lambda d: T.mcq_prompt(d, "sm_cot", caption=CAPTION),
    "freeform": lambda d: T.doc_to_text_freeform(d),
    "freeform_cot": lambda d: T.doc_to_text_freeform_cot(d),
}


@pytest.mark.parametrize("setting", list(PROMPTS))
def test_golden(doc, setting):
    text = PROMPTS[setting](doc)
    path = GOLDEN / f"{setting}.txt"
    if os.environ.get("SPATIAL_TASKS_WRITE_GOLDEN"):
        path.write_text(text + "\n", encoding="utf-8")
    assert text == path.read_text(encoding="utf-8").removesuffix("\n")


def test_exact_lines_of_the_authors(doc):
    vlm = T.doc_to_text_vlm(doc)
    assert vlm.startswith("Select the option that best explains the underlying intention of the speaker's utterance "
                          "based on the given image. \nMake sure any possible situation outside of the image SHOULD "
                          "NOT affect your choice.\n")
    assert vlm.endswith("\n\nYour answer : (Output only the letter among A,B,C and D)")
    assert "[Choices]\nA: " in vlm and T.choices(doc).count("\n") == 3
    lm = T.doc_to_text_lm(doc)
    assert "Make sure" not in lm and lm.startswith("Select the option that best explains the intention of the "
                                                   "speaker's utterance. \nWe assume that the speaker wants the listener "
                                                   "to take a specific action. \n\nUtterance : ")
    assert f"Scene Description : {doc['caption']}\nUtterance : " in T.doc_to_text_sm_gpt(doc)
    cot = T.doc_to_text_vlm_cot(doc)
    assert "Also, explain reasoning process of your answer.\n" in cot and cot.endswith(
        "Your answer2 (intention) : (Output only the letter among A,B,C and D)")
    free = T.doc_to_text_freeform(doc)
    assert free.endswith('Your answer : (Start your sentence with "The speaker wants person1 to...")')
    assert "Your answer SHOULD NOT exceed 15 words." in free


def test_prompt_parameters(doc):
    assert T.doc_to_text_vlm(doc, {"pre_prompt": "<image>\n"}).startswith("<image>\nSelect the option")
    assert T.doc_to_text_sm(doc, {"caption_prompt": "Caption this."}) == "Caption this."
    assert T.doc_to_text_sm(doc) == "Describe the provided image in 2~3 sentences."


def test_socratic_rounds(doc):
    visuals, context, terminal, outputs, info = T.doc_to_text_sm(doc, None, previous_output=[CAPTION], round_idx=1)
    assert visuals == [] and not terminal and info is None  # round 2 is text only
    assert context == T.mcq_prompt(doc, "sm", caption=CAPTION)
    visuals, context, terminal, outputs, info = T.doc_to_text_sm(doc, None, previous_output=[CAPTION, "B"], round_idx=2)
    assert terminal and records.socratic_parts(outputs[-1]) == (CAPTION, "B")


@pytest.mark.parametrize("said", [[""], [None], []], ids=["empty caption", "None", "no output"])
def test_a_socratic_caption_round_that_said_nothing_is_answered_from_an_empty_description(doc, said):
    """Issue 32, item 10: an empty or None caption (or no output at all) raised an IndexError, or an
    error naming the SM_gpt setting; the answer round now sees an empty description, as the model
    gave none, and the record keeps an empty caption."""
    _, context, terminal, _, _ = T.doc_to_text_sm(doc, None, previous_output=said, round_idx=1)
    assert context == T.mcq_prompt(doc, "sm", caption="") and not terminal
    if said:  # both rounds answered: the caption kept as "" beside the answer
        _, _, terminal, outputs, _ = T.doc_to_text_sm_cot(doc, None, previous_output=[*said, "B"], round_idx=2)
        assert terminal and records.socratic_parts(outputs[-1]) == ("", "B")
    with pytest.raises(ValueError, match=r"the sm setting answers from the model's own caption"):
        T.mcq_prompt(doc, "sm", caption=None)


def test_sm_gpt_needs_the_stored_caption(doc):
    with pytest.raises(load.SourceError, match="needs the stored caption meta.caption"):
        T.doc_to_text_sm_gpt({**doc, "caption": None})
