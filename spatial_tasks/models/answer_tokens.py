"""Which vocabulary entries are "Yes" and "No" for first-token scoring, per tokenizer.

The protocol (SpatialTunnel paper §4) is p = sigma(l_Yes - l_No) over the logits of the first
generated token. Tokenizers spell the answer words differently -- byte-level BPE has "Yes" and
" Yes" (leading space) as different entries, SentencePiece-style vocabularies write "▁Yes", some
split a word into pieces -- so the ids are chosen by one documented rule:

* ``exact`` (default, the paper's protocol): l_Yes is the logit of the ONE token that the
  tokenizer produces for ``yes_text`` ("Yes") on its own, without special tokens -- which is how
  the model starts an answer right after the generation prompt. A word that encodes to more than
  one token is an error naming the pieces and listing the spellings that are single tokens.
* ``variants``: every single-token spelling among the case variants (as given, lower, upper,
  capitalised) and their leading-space forms (" Yes"; SentencePiece's "▁Yes" is what " Yes"
  encodes to) counts, and l_Yes = logsumexp of their logits, so sigma(l_Yes - l_No) is the
  probability of the Yes spellings against the No spellings. The given spelling must itself be
  a single token.

Either way the two sets must be disjoint. The chosen ids and tokens are logged with every
scored sample (``AnswerTokens.log_fields``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from spatial_tasks.common.errors import UserError

RULES = ("exact", "variants")


class YesNoTokenError(UserError, ValueError):
    """An answer word is not a single token of the model's tokenizer."""


def _name(tokenizer: Any) -> str:
    return getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__


def _encode(tokenizer: Any, text: str) -> list[int]:
    return [int(i) for i in tokenizer.encode(text, add_special_tokens=False)]


def spellings(word: str) -> list[str]:
    """The case and leading-space variants of ``word`` that the ``variants`` rule tries, in order."""
    cases = dict.fromkeys([word, word.lower(), word.upper(), word.capitalize()])
    return [*cases, *(" " + c for c in cases)]


def single_token_id(tokenizer: Any, text: str) -> int:
    """The id of ``text`` as ONE token of ``tokenizer``, or a YesNoTokenError naming its pieces."""
    ids = _encode(tokenizer, text)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids) if ids else []
        single = [s for s in spellings(text.strip() or text) if len(_encode(tokenizer, s)) == 1]
        hint = (f"single-token spellings here: {single}" if single
                else "none of its case or leading-space spellings is a single token either")
        raise YesNoTokenError(
            f"{text!r} is not a single token of the tokenizer {_name(tokenizer)!r}: it encodes to {len(ids)} tokens "
            f"{pieces} (ids {ids}). First-token Yes/No scoring compares the logits of single tokens; {hint}. Pass yes_text=/no_text= in --model_args with words "
            "this tokenizer keeps whole."
        )
    return ids[0]


@dataclass(frozen=True)
class AnswerTokens:
    """The Yes and No token ids (first = the given spelling) and the rule that chose them."""

    yes_ids: tuple[int, ...]
    no_ids: tuple[int, ...]
    yes_tokens: tuple[str, ...]
    no_tokens: tuple[str, ...]
    rule: str

    def logits(self, row: torch.Tensor) -> tuple[float, float]:
        """(l_Yes, l_No) of one 1-D logit row: the token's logit, or the logsumexp of the set."""
        def pick(ids: tuple[int, ...]) -> float:
            values = row[list(ids)].float()
            return float(values[0] if len(ids) == 1 else torch.logsumexp(values, 0))
        return pick(self.yes_ids), pick(self.no_ids)

    def log_fields(self) -> dict[str, Any]:
        """What every logged sample records about the answer tokens."""
        return {"yes_ids": list(self.yes_ids), "no_ids": list(self.no_ids), "yes_tokens": list(self.yes_tokens),
                "no_tokens": list(self.no_tokens), "answer_rule": self.rule}


def answer_tokens(tokenizer: Any, yes_text: str = "Yes", no_text: str = "No", rule: str = "exact") -> AnswerTokens:
    """The answer tokens of ``tokenizer`` under ``rule`` (module docstring); YesNoTokenError when
    a word is not a single token or the two sets share an id."""
    if rule not in RULES:
        raise YesNoTokenError(f"answer_rule={rule!r}: choose one of {', '.join(RULES)}")
    chosen = []
    for word in (yes_text, no_text):
        ids = [single_token_id(tokenizer, word)]
        if rule == "variants":
            for spelling in spellings(word)[1:]:
                encoded = _encode(tokenizer, spelling)
                if len(encoded) == 1 and encoded[0] not in ids:
                    ids.append(encoded[0])
        chosen.append(tuple(ids))
    shared = set(chosen[0]) & set(chosen[1])
    if shared:
        raise YesNoTokenError(f"{yes_text!r} and {no_text!r} share the same token id(s) {sorted(shared)} in the tokenizer "
                              f"{_name(tokenizer)!r}: the two answers cannot be told apart")
    yes_ids, no_ids = chosen
    return AnswerTokens(yes_ids, no_ids, tuple(tokenizer.convert_ids_to_tokens(list(yes_ids))),
                        tuple(tokenizer.convert_ids_to_tokens(list(no_ids))), rule)


def yes_no_token_ids(tokenizer: Any, yes_text: str = "Yes", no_text: str = "No") -> tuple[int, int]:
    """The single-token ids of the two answer words under the ``exact`` rule."""
    tokens = answer_tokens(tokenizer, yes_text, no_text, "exact")
    return tokens.yes_ids[0], tokens.no_ids[0]
