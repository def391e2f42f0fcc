"""Jinja prompt templates under tasks/<benchmark>/prompts/, rendered with StrictUndefined.

A missing field is an error naming the template and the field, never an empty string; a field
that is None is an error too, never the word "None" in a prompt.
"""

from __future__ import annotations

import functools

import jinja2

from spatial_tasks.common.errors import UserError
from spatial_tasks.paths import benchmark_tasks_dir


class PromptError(UserError, ValueError):
    pass


class _NonePrinted(Exception):
    pass


def _refuse_none(value: object) -> object:
    """Jinja's ``finalize``: every printed expression passes here."""
    if value is None:
        raise _NonePrinted
    return value


@functools.cache
def _environment(benchmark: str) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(benchmark_tasks_dir(benchmark) / "prompts"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
        finalize=_refuse_none,
    )


def render(benchmark: str, template: str, **fields: object) -> str:
    """Render tasks/<benchmark>/prompts/<template> with ``fields``; strips the final newline."""
    try:
        text = _environment(benchmark).get_template(template).render(**fields)
    except jinja2.UndefinedError as err:
        raise PromptError(f"prompt template {benchmark}/prompts/{template}: {err.message}") from err
    except jinja2.TemplateNotFound as err:
        raise PromptError(f"no prompt template {benchmark}/prompts/{err.name}") from err
    except _NonePrinted:
        empty = sorted(name for name, value in fields.items() if value is None)
        raise PromptError(f"prompt template {benchmark}/prompts/{template}: a field it prints is None "
                          f"({', '.join(empty) or 'an item of a list or mapping field'}); give it a value") from None
    return text.rstrip("\n")


def text_arguments(benchmark: str, arguments: dict, names: tuple[str, ...]) -> dict:
    """``arguments`` (a task's lmms_eval_specific_kwargs over its defaults) with ``names`` checked to be
    text: a prompt piece joined outside a template is held to the templates' rule (None, or any other
    non-text value, is an error naming the argument, never the word "None" in a prompt)."""
    for name in names:
        value = arguments.get(name)
        if not isinstance(value, str):
            raise PromptError(f"{benchmark}: the task argument {name} is {value!r}, not text; write \"\" for none "
                              "(a YAML key with no value is None)")
    return arguments
