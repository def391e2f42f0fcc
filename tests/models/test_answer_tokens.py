"""The Yes/No token rule per tokenizer (spatial_tasks.models.answer_tokens): byte-level BPE
(Qwen-based tiny builds) and SentencePiece-style "▁" pieces (the tiny Gemma 3)."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoTokenizer

from spatial_tasks.models.answer_tokens import YesNoTokenError, answer_tokens, spellings


@pytest.fixture(scope="module")
def gemma_tokenizer(tiny_family_dirs):
    return AutoTokenizer.from_pretrained(tiny_family_dirs("gemma3"))


@pytest.fixture(scope="module")
def qwen_tokenizer(tiny_qwen_dir):
    return AutoTokenizer.from_pretrained(tiny_qwen_dir)


def test_spellings_are_case_then_leading_space_variants():
    assert spellings("Yes") == ["Yes", "yes", "YES", " Yes", " yes", " YES"]


def test_exact_rule_is_the_word_as_one_token(qwen_tokenizer, gemma_tokenizer):
    for tokenizer in (qwen_tokenizer, gemma_tokenizer):
        tokens = answer_tokens(tokenizer)
        assert tokens.rule == "exact" and tokens.yes_tokens == ("Yes",) and tokens.no_tokens == ("No",)
        assert tokens.yes_ids == tuple(tokenizer.encode("Yes", add_special_tokens=False))


def test_variants_take_every_single_token_spelling_and_only_those(qwen_tokenizer, gemma_tokenizer):
    for tokenizer in (qwen_tokenizer, gemma_tokenizer):
        tokens = answer_tokens(tokenizer, rule="variants")
        expected = [tokenizer.encode(s, add_special_tokens=False) for s in spellings("Yes")]
        expected = list(dict.fromkeys(ids[0] for ids in expected if len(ids) == 1))
        assert list(tokens.yes_ids) == expected and tokens.yes_ids[0] == answer_tokens(tokenizer).yes_ids[0]
    # the tiny Gemma spells " Yes" as two pieces ("▁", "Yes"): it is left out, "yes" is in
    gemma = answer_tokens(gemma_tokenizer, rule="variants")
    assert len(gemma_tokenizer.encode(" Yes", add_special_tokens=False)) == 2
    assert "yes" in gemma.yes_tokens and not any(t.startswith("▁") and t[1:] == "Yes" for t in gemma.yes_tokens)


def test_variants_pool_the_logits_by_logsumexp(qwen_tokenizer):
    tokens = answer_tokens(qwen_tokenizer, rule="variants")
    row = torch.zeros(len(qwen_tokenizer))
    row[list(tokens.yes_ids)] = torch.arange(len(tokens.yes_ids), dtype=torch.float32)
    row[tokens.no_ids[0]] = 5.0
    logit_yes, logit_no = tokens.logits(row)
    assert logit_yes == pytest.approx(math.log(sum(math.exp(k) for k in range(len(tokens.yes_ids)))))
    assert logit_no == pytest.approx(float(torch.logsumexp(row[list(tokens.no_ids)], 0)))
    assert answer_tokens(qwen_tokenizer).logits(row) == (0.0, 5.0)


def test_a_word_that_is_not_one_token_names_its_pieces(gemma_tokenizer):
    with pytest.raises(YesNoTokenError, match=r"' Yes' is not a single token .*2 tokens \['▁', 'Yes'\].*"
                                              r"single-token spellings here: \['Yes', 'yes'"):
        answer_tokens(gemma_tokenizer, yes_text=" Yes")


def test_shared_ids_and_unknown_rules_are_refused(qwen_tokenizer):
    with pytest.raises(YesNoTokenError, match="share the same token id"):
        answer_tokens(qwen_tokenizer, "Yes", "yes", rule="variants")
    with pytest.raises(YesNoTokenError, match="answer_rule='any': choose one of exact, variants"):
        answer_tokens(qwen_tokenizer, rule="any")
