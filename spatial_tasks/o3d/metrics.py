"""O3-D metrics: pure functions over per-question records (no lmms-eval, no pandas).

A record is a mapping with these fields (extra fields are ignored):

=============== ======================================================================== ========
field           meaning                                                                  used by
=============== ======================================================================== ========
correct         bool, the parsed label matches the ground truth                          all
gt_position     "near" | "far" | "none"; "none" (0-cue image without odd object) is      all
                excluded from every metric
label           "closer" | "farther" | "unparseable" (only counted)                      accuracy
cues            sequence of cue codes, e.g. ["HP", "OC"]; [] for 0-cue images            by cue, SDGM-V
cue_strength    float or None; regular strength is 0.9 <= s <= 1.0. Sets rendered at a  by #cues, SDGM
                single strength (FS, the 2-cue sets) must carry 1.0
ques_clarity    2 | 3 | 3.5 | 4 (numeric clarity of the question)                       SDGM
icl             bool, the question had in-context demonstrations                        SDGM
is_real         bool, a photograph (real-012cue, its crops, real-mcue); without it the  domain, SDGM
                canonical doc's ``synthetic`` is used (is_real = not synthetic)
query, order,   the question's tags (``prompts.PromptTags``): mcq|yes-no, normal|        SDGM-L,
formality,      reversed, casual|formal|regular, close-far|front-rear|before-after,     Eq. 3
vocabulary,     low|medium|high|highest
clarity_level
=============== ======================================================================== ========

Accuracies come as ``{"acc", "n", "se", "n_unparseable"}`` (acc/se NaN when n = 0; se is the
binomial standard error sqrt(p(1-p)/n)). Every undefined figure is NaN (``common.stats``).

Standard deviations: the paper's Eq. 2 is the population standard deviation
sqrt(1/|Omega| sum_g (mu_g - mu_bar)^2) -- ``ddof=0``, the default everywhere. The authors'
analysis notebook uses pandas' ``.std()``, the sample standard deviation (divides by |Omega|-1;
``ddof=1``). For 36 vision groups the sample value is sqrt(36/35) = 1.014x the population value,
for 42 language groups sqrt(42/41) = 1.012x. In the modified SDGM (Eq. 3) the two also differ in
how a group with a single level of the varied tag counts: its population std is 0 and it is
averaged in; its sample std is undefined (pandas NaN) and it is skipped.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from spatial_tasks.benchmark import Headline, Scorecard
from spatial_tasks.common.intervals import GroupedMeans

Record = Mapping[str, object]

REGULAR_STRENGTH = (0.9, 1.0)
VISION_CUES = ("HP", "OC", "RS", "TG", "SA", "LS", "FO", "FS")  # Table 12's column order
LANGUAGE_TAGS = ("query", "order", "formality", "vocabulary", "clarity_level")
MIN_SDGM_CLARITY = 3.0


# ---------------------------------------------------------------------------------------------
# Basics
# ---------------------------------------------------------------------------------------------


def scored(records: Iterable[Record]) -> list[Record]:
    """Records with an odd object (gt_position near or far)."""
    return [r for r in records if r.get("gt_position") in ("near", "far")]


def accuracy(records: Iterable[Record]) -> dict:
    """Share correct among scored records (Table 12's cell), with n, binomial se and the count of
    unparseable answers (scored wrong)."""
    rows = scored(records)
    n = len(rows)
    k = sum(1 for r in rows if r.get("correct"))
    unparseable = sum(1 for r in rows if r.get("label") == "unparseable")
    if n == 0:
        return {"acc": math.nan, "n": 0, "se": math.nan, "n_unparseable": 0}
    p = k / n
    return {"acc": p, "n": n, "se": math.sqrt(p * (1 - p) / n), "n_unparseable": unparseable}


def accuracy_by(records: Iterable[Record], key: str | Callable[[Record], Hashable | None]) -> dict:
    """Accuracy per group; ``key`` is a field name or a function (None drops the record)."""
    get = (lambda r: r.get(key)) if isinstance(key, str) else key
    groups: dict[Hashable, list[Record]] = defaultdict(list)
    for r in records:
        g = get(r)
        if g is not None:
            groups[g].append(r)
    return {g: accuracy(rows) for g, rows in groups.items()}


def is_regular_strength(record: Record) -> bool:
    s = record.get("cue_strength")
    return isinstance(s, (int, float)) and REGULAR_STRENGTH[0] <= s <= REGULAR_STRENGTH[1]


def is_real(record: Record) -> bool:
    """``is_real`` when present, else the canonical doc's ``not synthetic``, else False."""
    if "is_real" in record:
        return bool(record["is_real"])
    if "synthetic" in record:
        return not record["synthetic"]
    return False


def _cues(record: Record) -> tuple[str, ...]:
    return tuple(record.get("cues") or ())


# ---------------------------------------------------------------------------------------------
# Table 12 breakdowns
# ---------------------------------------------------------------------------------------------


def accuracy_by_cue(records: Iterable[Record]) -> dict[str, dict]:
    """Table 12's cue columns (HP ... FS): single-cue records grouped by their cue, all strengths."""
    out = accuracy_by(records, lambda r: _cues(r)[0] if len(_cues(r)) == 1 else None)
    return {c: out[c] for c in (*VISION_CUES, *sorted(set(out) - set(VISION_CUES))) if c in out}


def accuracy_by_num_cues(records: Iterable[Record]) -> dict[int, dict]:
    """Table 12's "0cue / 1cue / 2cue" columns: grouped by number of cues; 1- and 2-cue records
    only at regular strength (0.9 <= s <= 1.0), 0-cue records all (gt none already excluded)."""
    def key(r: Record) -> int | None:
        n = len(_cues(r))
        return n if n == 0 or is_regular_strength(r) else None
    out = accuracy_by(records, key)
    return dict(sorted(out.items()))


def accuracy_by_domain(records: Iterable[Record]) -> dict[str, dict]:
    """Synthetic vs real accuracy."""
    out = accuracy_by(records, lambda r: "real" if is_real(r) else "synthetic")
    return {d: out[d] for d in ("synthetic", "real") if d in out}


def overall_accuracy(synthetic: Iterable[Record], real: Iterable[Record]) -> dict:
    """Table 12's "Overall": the mean of a synthetic half and a real half (each the accuracy of
    its own rows), so the 37K synthetic questions do not drown the real ones."""
    s, r = accuracy(synthetic), accuracy(real)
    return {"acc": (s["acc"] + r["acc"]) / 2, "synthetic": s, "real": r}  # NaN when a half has no rows


def answered(records: Iterable[Record]) -> bool:
    """Whether any record has a parseable answer (records without a label count as answered).
    A figure that compares accuracies (a bias, an SDGM) says nothing about a model none of whose
    answers could be read: it is undefined (NaN), not a neutral 0 or a perfect 1."""
    return any(r.get("label") != "unparseable" for r in records)


def near_far_bias(records: Iterable[Record]) -> dict:
    """Near-far bias (paper Eq. 1): bias_NF = Acc_F - Acc_N; +1 when a model always answers
    "farther", -1 when it always answers "closer", 0 when it treats both alike. NaN without
    near and far rows, or without any parseable answer."""
    rows = scored(records)
    far = accuracy([r for r in rows if r["gt_position"] == "far"])
    near = accuracy([r for r in rows if r["gt_position"] == "near"])
    bias = far["acc"] - near["acc"] if answered(rows) else math.nan  # NaN without near or far rows too
    return {"bias": bias, "acc_far": far["acc"], "acc_near": near["acc"],
            "n_far": far["n"], "n_near": near["n"]}


# ---------------------------------------------------------------------------------------------
# SDGM (Eq. 2) and the modified SDGM (Eq. 3)
# ---------------------------------------------------------------------------------------------


def std(values: Sequence[float], ddof: int = 0) -> float:
    """Population (ddof=0, the paper) or sample (ddof=1, the authors' pandas) standard
    deviation; NaN when there are not more than ``ddof`` values."""
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (paper) or 1 (authors' pandas), not {ddof!r}")
    n = len(values)
    if n - ddof <= 0:
        return math.nan
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - ddof))


def sdgm(group_means: Iterable[float], ddof: int = 0) -> float:
    """SDGM (paper Eq. 2): sigma_Omega(mu) = sqrt(1/|Omega| sum_g (mu_g - mu_bar)^2), the standard
    deviation of the group means mu_g over the groups Omega. ``ddof=1``: the authors' notebook.
    NaN for fewer than two groups (a spread across one group is not defined)."""
    means = list(group_means)
    return std(means, ddof) if len(means) >= 2 else math.nan


def sdgm_population(records: Iterable[Record]) -> list[Record]:
    """The rows of the paper's SDGM analysis: synthetic, regular cue strength (0.9 <= s <= 1.0),
    no ICL, clarity >= 3, with an odd object. (Both target positions; Acc_N keeps the near ones.)"""
    return [r for r in records if in_sdgm_population(r)]


def in_sdgm_population(record: Record) -> bool:
    """One row's membership of ``sdgm_population`` (a row-wise rule: the bootstrap relies on it)."""
    return (record.get("gt_position") in ("near", "far") and not is_real(record) and not record.get("icl")
            and is_regular_strength(record)
            and isinstance(record.get("ques_clarity"), (int, float)) and record["ques_clarity"] >= MIN_SDGM_CLARITY)


def cue_group(record: Record) -> str | None:
    """"HP" for a single cue, "HP+OC" for a pair (in ``VISION_CUES`` order); None for 0 cues,
    3+ cues or a cue outside the 8 of the vision analysis (e.g. LP)."""
    cues = _cues(record)
    if not 1 <= len(cues) <= 2 or not set(cues) <= set(VISION_CUES) or len(set(cues)) != len(cues):
        return None
    return "+".join(sorted(cues, key=VISION_CUES.index))


def question_group(record: Record) -> tuple | None:
    """The five tags (query, order, formality, vocabulary, clarity_level); None if any is missing."""
    key = tuple(record.get(t) for t in LANGUAGE_TAGS)
    return None if any(v is None for v in key) else key


def cue_group_accuracy(records: Iterable[Record], population: bool = True) -> dict[str, dict]:
    """Accuracy per cue group (8 single cues + 28 pairs; the paper's Fig. 5 cells) over the SDGM
    population (``population=False``: over the records as given)."""
    rows = sdgm_population(records) if population else scored(records)
    return accuracy_by(rows, cue_group)


def _acc_n_groups(records: Iterable[Record], key: Callable[[Record], Hashable | None],
                  population: bool) -> dict[Hashable, dict]:
    rows = sdgm_population(records) if population else scored(records)
    return accuracy_by([r for r in rows if r["gt_position"] == "near"], key)


def _sdgm_result(groups: dict[Hashable, dict], ddof: int) -> dict:
    means = [g["acc"] for g in groups.values()]
    readable = any(g["n_unparseable"] < g["n"] for g in groups.values())
    return {"sdgm": sdgm(means, ddof) if readable else math.nan, "ddof": ddof, "n_groups": len(groups),
            "n": sum(g["n"] for g in groups.values()),
            "groups": {_key_str(k): g["acc"] for k, g in groups.items()}}


def _key_str(key: Hashable) -> str:
    return "|".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def sdgm_vision(records: Iterable[Record], ddof: int = 0, population: bool = True) -> dict:
    """Vision influence (paper Eq. 2 over Omega_V): SDGM of target-near accuracy Acc_N across the
    36 cue groups (8 single cues + 28 pairs), on the SDGM population (regular strength, no ICL,
    clarity >= 3). Returns sdgm, n_groups, n (rows) and the group means (keyed "HP", "HP+OC")."""
    return _sdgm_result(_acc_n_groups(records, cue_group, population), ddof)


def sdgm_language(records: Iterable[Record], ddof: int = 0, population: bool = True) -> dict:
    """Language influence (paper Eq. 2 over Omega_L): SDGM of Acc_N across the question groups,
    a group being one combination of the five tags (query, order, formality, vocabulary,
    clarity_level). The 9 bodies give 7 (query, formality, vocabulary) combinations; x 2 orders x the 3
    clarity levels >= 3 that is the paper's 42 groups (of 14 tag values: 2+2+3+3+4). Group means
    are keyed "query|order|formality|vocabulary|clarity_level"."""
    return _sdgm_result(_acc_n_groups(records, question_group, population), ddof)


def language_consistency(records: Iterable[Record], ddof: int = 0, population: bool = True) -> float:
    """C = 1 - sigma_Omega_L(Acc_N) (paper §language influence)."""
    return 1 - sdgm_language(records, ddof, population)["sdgm"]


def modified_sdgm(records: Iterable[Record], variation: str, ddof: int = 0, population: bool = True) -> dict:
    """Modified SDGM (paper Eq. 3) for one variation type q (one of ``LANGUAGE_TAGS``): Acc_N per
    combination of all five tags, then for every combination of the other four the SDGM across
    q's levels, then the mean of those. Same as pandas
    ``groupby(five).mean().groupby(other four).std(ddof).mean()``: with ddof=0 a combination that
    has a single level of q contributes 0; with ddof=1 it is skipped (NaN). NaN when no
    combination has two levels of q (nothing varies q) or no answer is parseable."""
    if variation not in LANGUAGE_TAGS:
        raise ValueError(f"variation must be one of {LANGUAGE_TAGS}, not {variation!r}")
    groups = _acc_n_groups(records, question_group, population)
    return _modified_from_means(groups, variation, ddof)


def _modified_from_means(groups: Mapping[tuple, dict], variation: str, ddof: int) -> dict:
    i = LANGUAGE_TAGS.index(variation)
    by_rest: dict[tuple, list[float]] = defaultdict(list)
    for key, group in groups.items():
        by_rest[key[:i] + key[i + 1:]].append(group["acc"])
    spreads = [std(vals, ddof) for vals in by_rest.values()]
    used = [s for s in spreads if not math.isnan(s)]
    varied = any(len(v) >= 2 for v in by_rest.values())
    readable = any(g["n_unparseable"] < g["n"] for g in groups.values())
    value = sum(used) / len(used) if used and varied and readable else math.nan
    return {"sdgm": value, "ddof": ddof, "variation": variation,
            "n_groups": len(used), "n_single_level": sum(1 for v in by_rest.values() if len(v) == 1)}


def modified_sdgm_all(records: Iterable[Record], ddof: int = 0,
                      population: bool = True) -> dict[str, float]:
    """Eq. 3 for each of the five variation types (group means computed once)."""
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (paper) or 1 (authors' pandas), not {ddof!r}")
    groups = _acc_n_groups(records, question_group, population)
    return {t: _modified_from_means(groups, t, ddof)["sdgm"] for t in LANGUAGE_TAGS}


# ---------------------------------------------------------------------------------------------
# The scorecard: accuracy on the marked images, the near-far bias (Eq. 1), SDGM vision and
# language (Eq. 2), each defined once here; the tests check each equals the live task metric.
# ---------------------------------------------------------------------------------------------

def _correct(row: dict) -> float:
    return float(bool(row.get("correct")))


def _readable(row: dict) -> bool:
    return row.get("label") != "unparseable"


def _marked(rows) -> bool:
    return all(r.get("is_marked") for r in rows)


# Eq. 2's Omega_L: 7 question bodies x 2 option orders x the 3 clarity levels >= 3 (3, 3.5 and 4, the
# marked images' level) = the paper's 42 question groups.
SDGM_L_CLARITIES = frozenset({3.0, 3.5, 4.0})


def _language(rows) -> bool:
    """SDGM L's scope: synthetic rows spanning every clarity level of Omega_L (a single clarity task
    holds 14 of the 42 groups, another quantity than the paper's)."""
    levels = {float(r["ques_clarity"]) for r in rows if isinstance(r.get("ques_clarity"), (int, float))}
    return bool(rows) and not any(r.get("is_real") for r in rows) and SDGM_L_CLARITIES <= levels


def _accuracy(rows) -> float:
    """Accuracy over the scored rows (Table 12's cells); unparseable answers are wrong."""
    return accuracy(rows)["acc"]


def _scored_counts(rows) -> tuple[float, int]:
    rows = scored(rows)
    return sum(bool(r.get("correct")) for r in rows), len(rows)


def _acc_n_sdgm(group: Callable[[dict], Hashable | None]) -> GroupedMeans:
    """Eq. 2: the SDGM of target-near accuracy Acc_N over the groups, on the SDGM population."""
    return GroupedMeans(lambda r: group(r) if in_sdgm_population(r) and r["gt_position"] == "near" else None,
                        _correct, lambda means: sdgm(list(means.values())), _readable)


SCORECARD = Scorecard(
    unit=lambda r: (r.get("subset_name"), r.get("image_name")),  # a scene's near/far and question rows
    headlines=(
        Headline("acc", "marked acc", _accuracy, _scored_counts, scope=_marked),
        Headline("bias_nf", "bias", GroupedMeans(  # Eq. 1: Acc_F - Acc_N
            lambda r: r["gt_position"] if r.get("gt_position") in ("near", "far") else None,
            _correct, lambda means: means.get("far", math.nan) - means.get("near", math.nan), _readable),
            scope=_marked),
        Headline("sdgm_vision", "SDGM V", _acc_n_sdgm(cue_group), scope=_marked),
        Headline("sdgm_language", "SDGM L", _acc_n_sdgm(question_group), scope=_language),
    ))
