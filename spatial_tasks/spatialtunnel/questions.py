"""The four SpatialTunnel questions per image (paper §3), polarity balanced.

obj1 is always the farther object. The answer-format suffix is not part of these questions: the
prompt templates under tasks/spatialtunnel/prompts/ add it as a parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class QuestionTemplate:
    template_id: int
    text: str  # with {obj1}/{obj2} placeholders
    subject: str  # "obj1" | "obj2": the object the question asks about
    relation: str  # "closer" | "farther"
    answer: str  # "Yes" | "No", given that obj1 is farther


TEMPLATES: tuple[QuestionTemplate, ...] = (
    QuestionTemplate(1, "Is the {obj1} closer to the camera than the {obj2}?", "obj1", "closer", "No"),
    QuestionTemplate(2, "Is the {obj2} closer to the camera than the {obj1}?", "obj2", "closer", "Yes"),
    QuestionTemplate(3, "Is the {obj2} farther from the camera than the {obj1}?", "obj2", "farther", "No"),
    QuestionTemplate(4, "Is the {obj1} farther from the camera than the {obj2}?", "obj1", "farther", "Yes"),
)
TEMPLATE_BY_ID = {t.template_id: t for t in TEMPLATES}


def render_question(template_id: int, obj1: str, obj2: str) -> str:
    return TEMPLATE_BY_ID[template_id].text.format(obj1=obj1, obj2=obj2)


def questions_for(obj1: str, obj2: str) -> list[dict]:
    """The four question records of one image: template_id, question, answer."""
    return [
        {"template_id": t.template_id, "question": t.text.format(obj1=obj1, obj2=obj2), "answer": t.answer}
        for t in TEMPLATES
    ]


_PATTERN = re.compile(
    r"^Is the (?P<a>.+?) (?P<rel>closer to|farther from) the camera than the (?P<b>.+?)\?"
)


def resolve_template(text: str, answer: str) -> tuple[int, str, str] | None:
    """(template_id, obj1, obj2) of a question in the official wording whose answer is known.

    "closer"+Yes means the subject is the nearer object (template 2, subject obj2); "closer"+No
    template 1; "farther"+Yes template 4 (subject obj1); "farther"+No template 3. None when the
    text is not in the official wording.
    """
    m = _PATTERN.match(text.strip())
    if m is None or answer not in ("Yes", "No"):
        return None
    a, b = m.group("a"), m.group("b")
    if m.group("rel") == "closer to":
        return (2, b, a) if answer == "Yes" else (1, a, b)
    return (4, a, b) if answer == "Yes" else (3, b, a)
