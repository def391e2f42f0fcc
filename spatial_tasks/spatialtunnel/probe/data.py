"""Contrastive-probing pairs (SpatialTunnel paper §5): where probing data enters, checked once.

A pair is one image, one spatial question about two objects and its object-swapped twin. The
questions use the probing code's three templates (the paper states no wording):

    H  "Is the {query} to the left or right of the {reference}? Answer with only one word."
    V  "Is the {query} above or below the {reference}? Answer with only one word."
    D  "Compared to {reference}, is {query} far or close from you? Answer with only one word."

``label`` is the original question's answer (left/right, above/below, far/close); the swapped
question's answer is its opposite.

Layouts accepted (``load_probe_pairs`` decides per source; every row is checked and an error
names the file, row and field):

1. Prompt layout -- columns ``index, image, question, answer``: the question is one of the three
   templates, the answer the endpoint word. This is how ``cubec/spatialtunnel``'s
   ``contrastive_probing`` config reads when converted to parquet (200 rows per endpoint) and
   what our generator's ``probing`` variant writes.
2. Object layout -- EmbSpatial-style TSV columns ``index, category, image, answer, A, B, ...``:
   for left/right/above/below rows A and B name the two objects and ``answer`` is the category
   itself (A is ``answer`` of B); for far/close rows ``answer`` is the letter of the option
   that is far/close. This is the ``contrastive_probing.tsv`` file of ``cubec/spatialtunnel``.
3. MCQ layout (App. D.1) -- EmbSpatial-Bench's TSV (``index, question_id, category, question,
   image, answer, A, B, C, D``): far/close pairs take the target from the correct option and the
   reference uniformly from the remaining options (``seed``); left/right/above/below pairs take
   the two objects from the question ("... of the X and the Y in ...") in the order the correct
   option names them (the authors' code assumes question order; the option text decides here
   when it names both). ``under``/``beneath`` are ``below``.

Rows whose distance target or every candidate reference is empty or "unknown" are skipped and
counted in ``ProbeData.skipped`` (``empty_options="skip"``, the default). The authors' code does
otherwise: it reads the TSV with pandas, where an empty cell (or "n/a", "NA", "None" ...: pandas'
missing-value strings) becomes NaN, and its filter (empty, "unknown", "n/a") lets NaN through as
the text "nan" -- so a far/close row whose options C and D are empty may ask "Compared to nan, is
chair far or close from you?". ``empty_options="as-nan"`` does exactly that, for matching the
paper's Coh_D pair for pair: such cells read "nan" and are candidates, "unknown" is not, and a
candidate equal to the target is kept (the authors do not drop it); the reference is drawn from
the same ``random.Random(seed)`` stream in the same row order. One difference stays: a pair whose two
objects are the same text is skipped in both modes (swapping them changes nothing; its delta is
zero). A row that cannot make a pair --
a question in none of the templates, an unknown category or answer, the same object twice: the
authors' code skips such rows with a warning, and one odd row must not stop a 1,200-row run. The
first of them are named (``ProbeData.skipped_rows``); ``strict`` refuses such a file instead.
Anything else wrong (a missing column, a duplicate index, a damaged image) is an error.

Pairs are capped at ``per_category`` per answer (default 200, the authors' default), drawn as the
authors draw them: one ``random.Random(42)``, the answers in CATEGORY_ORDER, ``sample`` only where
there are more pairs than the cap (the source order is kept). ``per_category=0`` keeps every pair.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets

from spatial_tasks.common import images
from spatial_tasks.common.origin import Origin
from spatial_tasks.common.validate import SourceError, short
from spatial_tasks.spatialtunnel.probe.metrics import AXES, AXIS_OF

TEMPLATES = {
    "H": "Is the {query} to the left or right of the {reference}? Answer with only one word.",
    "V": "Is the {query} above or below the {reference}? Answer with only one word.",
    "D": "Compared to {reference}, is {query} far or close from you? Answer with only one word.",
}
_TEMPLATE_PATTERNS = {
    axis: re.compile("^" + re.escape(text).replace(r"\{query\}", "(?P<query>.+?)")
                     .replace(r"\{reference\}", "(?P<reference>.+?)") + "$")
    for axis, text in TEMPLATES.items()
}
OPPOSITE = {a: b for pair in AXES.values() for a, b in (pair, pair[::-1])}
CATEGORY_ORDER = ("left", "right", "above", "below", "far", "close")
ALIASES = {"under": "below", "beneath": "below", "near": "close", "closer": "close", "farther": "far"}
OFFICIAL_REPO = "cubec/spatialtunnel"
OFFICIAL_FILE = "contrastive_probing.tsv"
PER_CATEGORY = 200  # the authors' --max-samples-per-category default (0: no limit)
CAP_SEED = 42  # the authors' random.Random(42) for the cap, whatever --seed says
NAMED_SKIPS = 5  # skipped rows named in messages
_UNKNOWN = {"", "unknown", "n/a"}  # as the authors filter: "None" may name an object
EMPTY_OPTIONS = ("skip", "as-nan")
# pandas.read_csv's default missing-value strings (its documentation, na_values): what the authors'
# pandas turns into NaN, which their code then formats as "nan".
PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                       "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
# "... (the) X and (the) Y in/positioned/..." -- the two objects of an EmbSpatial relation question.
_OBJECT_PAIR = re.compile(r"\b(?:of|between|are)\s+(?:the\s+)?(?P<a>.+?)\s+and\s+(?:the\s+)?(?P<b>.+?)\s+"
                          r"(?:in\b|positioned|interact|located|placed|relative|arranged)", re.IGNORECASE)


class ProbeDataError(SourceError):
    """Probing data that cannot be used; the message names the file, row and field."""


@dataclass(frozen=True)
class ProbePair:
    pair_id: str
    label: str  # the original question's answer
    query: str
    reference: str
    image: bytes = field(repr=False)
    where: str = ""

    @property
    def axis(self) -> str:
        return AXIS_OF[self.label]

    def question(self) -> str:
        return TEMPLATES[self.axis].format(query=self.query, reference=self.reference)

    def swapped_question(self) -> str:
        return TEMPLATES[self.axis].format(query=self.reference, reference=self.query)


@dataclass
class ProbeData:
    pairs: list[ProbePair]
    source: str
    layout: str
    skipped: Counter = field(default_factory=Counter)
    skipped_rows: list[str] = field(default_factory=list)  # the first rows skipped: "FILE, row K: why"
    capped: int = 0  # pairs left out by the per-category cap

    def counts(self) -> dict[str, int]:
        found = Counter(pair.label for pair in self.pairs)
        return {label: found.get(label, 0) for label in CATEGORY_ORDER}


def question_pair(question: str) -> tuple[str, str, str] | None:
    """(axis, query, reference) of a question in one of the three templates, else None."""
    for axis, pattern in _TEMPLATE_PATTERNS.items():
        match = pattern.match(question.strip())
        if match:
            return axis, match["query"], match["reference"]
    return None


# ------------------------------------------------------------------------------------------
# Sources


def load_probe_pairs(source: str | Path, *, per_category: int = PER_CATEGORY, seed: int = 42,
                     strict: bool = False, empty_options: str = "skip") -> ProbeData:
    """Every pair of ``source`` (a parquet/TSV file, a folder of them, or a Hub dataset id, see
    ``resolve_source``), checked; at most ``per_category`` per answer (0: all), drawn as the
    authors draw them (module docstring). ``seed`` draws the distance references; ``strict``
    refuses rows that cannot make a pair instead of skipping them; ``empty_options``: "skip" (ours)
    or "as-nan" (the authors' code: empty options become the candidate "nan"; module docstring)."""
    if not isinstance(per_category, int) or isinstance(per_category, bool) or per_category < 0:
        raise ValueError(f"--per-category must be an integer >= 0 (0: every pair), got {per_category!r}")
    if empty_options not in EMPTY_OPTIONS:
        raise ValueError(f"--empty-options must be one of {', '.join(EMPTY_OPTIONS)}, not {empty_options!r}")
    files = resolve_source(source)
    rng = random.Random(seed)
    pairs: list[ProbePair] = []
    skipped: Counter = Counter()
    skipped_rows: list[str] = []
    layouts = set()
    for path in files:
        dataset, origin = _read(path)
        layout = detect_layout(dataset.column_names, origin)
        layouts.add(layout)
        pairs += pairs_of_table(dataset, origin, layout, rng, skipped, skipped_rows, strict, empty_options)
    if not pairs:
        named = f"; first: {'; '.join(skipped_rows)}" if skipped_rows else ""
        raise ProbeDataError(f"{source}: no usable probing pair ({dict(skipped) or 'no rows'}){named}")
    seen: dict[str, str] = {}
    for pair in pairs:
        if pair.pair_id in seen:
            raise ProbeDataError(f"{pair.where}, field 'index': duplicate index {pair.pair_id!r} "
                                 f"(also at {seen[pair.pair_id]})")
        seen[pair.pair_id] = pair.where
    same: dict[tuple[bytes, str], str] = {}  # one image and question under two indexes would count twice
    for pair in pairs:
        key = (hashlib.sha256(pair.image).digest(), pair.question())
        if key in same:
            raise ProbeDataError(f"{pair.where}: the same image and question as {same[key]} (another index); "
                                 "a pair must appear once, or it counts twice in the coherence")
        same[key] = pair.where
    total = len(pairs)
    if per_category:
        pairs = cap_per_category(pairs, per_category)
    return ProbeData(pairs=pairs, source=str(source), layout="+".join(sorted(layouts)), skipped=skipped,
                     skipped_rows=skipped_rows, capped=total - len(pairs))


def cap_per_category(pairs: Sequence[ProbePair], per_category: int, seed: int = CAP_SEED) -> list[ProbePair]:
    """At most ``per_category`` pairs per answer, as the authors draw them (module docstring)."""
    if per_category < 1:
        raise ValueError(f"per_category must be >= 1, got {per_category}")
    rng = random.Random(seed)
    keep: set[int] = set()
    for label in CATEGORY_ORDER:
        rows = [i for i, pair in enumerate(pairs) if pair.label == label]
        keep |= set(rows if len(rows) <= per_category else rng.sample(rows, per_category))
    return [pair for i, pair in enumerate(pairs) if i in keep]


def resolve_source(source: str | Path) -> list[Path]:
    """The data files of ``source``: a .parquet/.tsv file; a folder (its parquet files, else its TSV
    files, recursively, sorted); or ``cubec/spatialtunnel`` (its ``contrastive_probing.tsv``) or
    ``OWNER/NAME:FILE`` on the Hugging Face Hub."""
    path = Path(source).expanduser()
    if path.is_file():
        if path.suffix not in (".parquet", ".tsv"):
            raise ProbeDataError(f"{path}: probing data must be a .parquet or .tsv file")
        return [path]
    if path.is_dir():
        found = sorted(path.rglob("*.parquet")) or sorted(path.rglob("*.tsv"))
        if not found:
            raise ProbeDataError(f"{path}: no .parquet or .tsv file in this folder")
        return found
    text = str(source)
    repo, _, filename = text.partition(":")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", repo) and not path.exists():
        if not filename and repo != OFFICIAL_REPO:
            raise ProbeDataError(f"{text}: name the file of this Hub dataset as {repo}:FILE.tsv")
        from huggingface_hub import hf_hub_download

        name = filename or OFFICIAL_FILE
        try:
            return [Path(hf_hub_download(repo, name, repo_type="dataset"))]
        except Exception as err:  # noqa: BLE001 - offline, missing repo or file: say which
            reason = " ".join(str(err).split())[:300]
            raise ProbeDataError(f"{text}: could not get {name} of the Hub dataset {repo} ({reason})") from None
    raise ProbeDataError(f"{text}: no such file or folder (nor a Hub dataset id OWNER/NAME)")


def _read(path: Path) -> tuple[datasets.Dataset, Origin]:
    from spatial_tasks.common.validate import data_file_problem

    problem = data_file_problem(path)  # datasets would say only "DatasetGenerationError"
    if problem:
        raise ProbeDataError(problem)
    if path.suffix == ".parquet":
        dataset = datasets.load_dataset("parquet", data_files=str(path), split="train")
    else:  # every column as text: object names such as "None" or "1" must stay names
        with open(path, encoding="utf-8", newline="") as handle:
            header = handle.readline().rstrip("\r\n").split("\t")
        if len(set(header)) != len(header) or not all(header):
            raise ProbeDataError(f"{path}, line 1: the header has empty or repeated column names {header}")
        features = datasets.Features({name: datasets.Value("string") for name in header})
        dataset = datasets.load_dataset("csv", data_files=str(path), split="train", delimiter="\t",
                                        keep_default_na=False, na_filter=False, features=features)
    return dataset, Origin(label=str(path), files=((str(path), len(dataset)),), root=path.parent)


def detect_layout(columns: Sequence[str], origin: Origin) -> str:
    names = set(columns)
    if "image" not in names:
        raise ProbeDataError(f"{origin.where}: no 'image' column; found columns {sorted(names)}")
    if "category" in names:
        missing = sorted({"answer", "A", "B"} - names)
        if missing:
            raise ProbeDataError(f"{origin.where}: a 'category' table needs columns {missing} "
                                 f"(EmbSpatial-style layout); found {sorted(names)}")
        return "objects"
    missing = sorted({"question", "answer"} - names)
    if missing:
        raise ProbeDataError(f"{origin.where}: missing column(s) {missing}: probing data has either "
                             "index/image/question/answer (prompt layout) or index/category/image/answer/A/B "
                             f"(EmbSpatial-style layout); found {sorted(names)}")
    return "prompts"


class _Skip(ProbeDataError):
    """A row that cannot make a pair (skipped, or an error under ``strict``)."""


def pairs_of_table(dataset: datasets.Dataset, origin: Origin, layout: str, rng: random.Random,
                   skipped: Counter, skipped_rows: list[str], strict: bool, empty_options: str = "skip"
                   ) -> list[ProbePair]:
    """The pairs of one table in ``layout``; rows that cannot make a pair are counted in ``skipped``
    and named in ``skipped_rows`` (``strict``: refused)."""
    text_columns = [c for c in dataset.column_names if c != "image"]
    table = dataset.select_columns(text_columns).with_format("arrow")[:].to_pydict()
    encoding = "base64" if isinstance(dataset.features["image"], datasets.Value) else "image"
    cells = images.ImageTable(dataset, "image", origin, encoding=encoding)
    options = [c for c in ("A", "B", "C", "D", "E", "F") if c in table]
    out = []
    for row in images.progress(range(len(dataset)), "reading probing pairs"):
        get = {name: values[row] for name, values in table.items()}

        def bad(name: str, problem: str, row: int = row) -> ProbeDataError:
            return _Skip(f"{origin.locate(row)}, field {name!r}: {problem}")

        try:
            if layout == "prompts":
                made = _from_prompt(get, bad)
            else:
                made = _from_objects(get, options, rng, bad, skipped, empty_options)
            if made is not None and made[1].strip().lower() == made[2].strip().lower():
                raise bad("question", f"the two objects are the same ({short(made[1])}): swapping them changes nothing")
        except _Skip as err:
            if strict:
                raise ProbeDataError(f"{err} (--strict refuses rows that cannot make a pair)") from None
            skipped["cannot make a pair"] += 1
            if len(skipped_rows) < NAMED_SKIPS:
                skipped_rows.append(str(err))
            continue
        if made is None:
            continue
        label, query, reference = made
        image = cells.encoded(row)
        images.check_image(image, cells.where(row))
        pair_id = str(get.get("index", get.get("question_id", row)))
        out.append(ProbePair(pair_id=pair_id, label=label, query=query.strip(), reference=reference.strip(),
                             image=image, where=origin.locate(row)))
    return out


def _label(value: object, name: str, bad) -> str:
    text = str(value).strip().lower() if value is not None else ""
    text = ALIASES.get(text, text)
    if text not in AXIS_OF:
        raise bad(name, f"{short(value)} is not one of {list(CATEGORY_ORDER)}")
    return text


def _from_prompt(get: Mapping, bad) -> tuple[str, str, str]:
    label = _label(get.get("answer"), "answer", bad)
    question = get.get("question")
    parsed = question_pair(question) if isinstance(question, str) else None
    if parsed is None:
        raise bad("question", f"{short(question)} is none of the three probing templates "
                              f"({' | '.join(TEMPLATES.values())})")
    axis, query, reference = parsed
    if AXIS_OF[label] != axis:
        raise bad("answer", f"{label!r} does not answer a {axis}-axis question ({short(question)})")
    return label, query, reference


def _known(value: object) -> bool:
    return value is not None and str(value).strip().lower() not in _UNKNOWN


def _as_the_authors_read(value: object) -> str:
    """A cell as the authors' code sees it: pandas' missing values become NaN, formatted "nan"."""
    return "nan" if value is None or str(value) in PANDAS_NA else str(value)


def _authors_valid(value: str) -> bool:
    return bool(value) and value.strip().lower() not in {"unknown", "n/a"}


def _from_objects(get: Mapping, options: Sequence[str], rng: random.Random, bad,
                  skipped: Counter, empty_options: str = "skip") -> tuple[str, str, str] | None:
    category = _label(get.get("category"), "category", bad)
    answer = str(get.get("answer") or "").strip()
    if AXIS_OF[category] == "D" and empty_options == "as-nan":
        if answer not in options:
            raise bad("answer", f"{short(answer)} is not an option letter {list(options)} of a {category} row")
        target = _as_the_authors_read(get.get(answer))
        others = [_as_the_authors_read(get.get(o)) for o in options if o != answer]
        others = [o for o in others if _authors_valid(o)]
        if not _authors_valid(target) or not others:
            skipped["distance target unknown" if not _authors_valid(target) else "no distance reference"] += 1
            return None
        return category, target, rng.choice(others)
    if AXIS_OF[category] == "D":
        if answer not in options:
            raise bad("answer", f"{short(answer)} is not an option letter {list(options)} of a {category} row")
        target = get.get(answer)
        if not _known(target):
            skipped["distance target unknown"] += 1
            return None
        others = [get[o] for o in options if o != answer and _known(get.get(o))]
        others = [o for o in others if str(o).strip().lower() != str(target).strip().lower()]
        if not others:
            skipped["no distance reference"] += 1
            return None
        return category, str(target), str(rng.choice(others))
    if ALIASES.get(answer.lower(), answer.lower()) == category:  # object layout: A is `category` of B
        for name in ("A", "B"):
            if not _known(get.get(name)):
                raise bad(name, f"empty object name {short(get.get(name))}")
        return category, str(get["A"]), str(get["B"])
    if answer in options:  # MCQ layout: the objects come from the question
        question = str(get.get("question") or "")
        match = _OBJECT_PAIR.search(question)
        if match is None:
            raise bad("question", f"cannot find the two objects (\"... of X and Y in ...\") in {short(question)}")
        first, second = match["a"].strip(), match["b"].strip()
        correct = str(get.get(answer) or "").lower()
        at_first, at_second = correct.find(first.lower()), correct.find(second.lower())
        if at_first >= 0 and at_second >= 0 and at_second < at_first:
            first, second = second, first
        return category, first, second
    raise bad("answer", f"{short(answer)} is neither the category {category!r} nor an option letter {list(options)}")
