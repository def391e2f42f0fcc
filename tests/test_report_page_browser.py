"""The report page (``report/index.html``) in a real browser: headless Chromium driven by Playwright,
over a report of real lmms-eval runs (``page_report``: every benchmark's bundled samples, and two
SpatialTunnel runs on the same questions). What the page shows is checked against the files it is a
view of: the leaderboard and the logged samples, read here on their own. Where no Chromium exists
the whole module is skipped, in one line that says so."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

CHROMIUM = os.environ.get("SPATIAL_TASKS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no Chromium on this machine (install Debian's chromium, as .ci/setup does, or set "
                "SPATIAL_TASKS_CHROMIUM): the report page's browser tests are skipped", allow_module_level=True)

from spatial_tasks.catalog import task_config  # noqa: E402
from spatial_tasks.common.environment import DATA_KEY  # noqa: E402
from spatial_tasks.harness import TaskData, load_docs  # noqa: E402
from spatial_tasks.page.images import THUMB_PX  # noqa: E402
from spatial_tasks.registry import read_runs
from spatial_tasks.report import write_report  # noqa: E402

HOSTILE_PROMPT = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> Is it <b>closer</b>?'
HOSTILE_ANSWER = '<img src=x onerror="window.__pwned=3">No & "yes"'


@pytest.fixture(scope="module")
def runs(page_runs) -> Path:
    return page_runs


@pytest.fixture(scope="module")
def report(page_report) -> Path:
    return page_report


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


class Opened:
    """A page opened from disk, with every console message, page error and request it made."""

    def __init__(self, browser, path: Path):
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready='1']")

    def filtered(self) -> list[list]:
        return self.page.evaluate("window.reportPage.filtered()")

    def choose(self, selector: str, label: str | None = None, value: str | None = None) -> None:
        self.page.select_option(selector, label=label) if label is not None else self.page.select_option(selector, value=value)

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def opened(browser, report):
    page = Opened(browser, report / "index.html")
    yield page
    page.close()


def _run(opened: Opened, folder: str) -> str:
    """The run selector's value of the run whose files are under ``folder`` (a folder of ``runs``)."""
    found = [str(i) for i, run in enumerate(opened.page.evaluate("window.reportPage.runs()"))
             if folder in Path(run["folder"]).parts]
    assert len(found) == 1, (folder, found)
    return found[0]


def _benchmark(opened: Opened, title: str) -> str:
    """The benchmark selector's value for ``title`` (its options name each with its count)."""
    options = opened.page.eval_on_selector_all("#filter-benchmark option", "os => os.map(o => [o.textContent, o.value])")
    found = [value for text, value in options if text.rsplit(" (", 1)[0] == title]
    assert len(found) == 1, (title, options)
    return found[0]


def _samples(runs: Path, folder: str) -> dict[str, list[dict]]:
    """task -> the logged samples of the run in ``folder``, read straight from its files."""
    out = {}
    for path in sorted((runs / folder).rglob("*_samples_*.jsonl")):
        task = path.stem.split("_samples_", 1)[1]
        out[task] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def _record(sample: dict) -> dict:
    return next(v for v in sample.values() if isinstance(v, dict) and "benchmark" in v)


def test_the_page_loads_with_no_error_and_fetches_nothing(opened, report):
    assert opened.errors == []
    assert opened.requests and all(url.startswith("file://") for url in opened.requests), opened.requests
    opened.page.goto((report / "index.html").as_uri() + "#figures")  # every figure requested, all from the folder
    opened.page.wait_for_load_state("load")
    assert opened.errors == [] and all(url.startswith("file://") for url in opened.requests)


def test_the_scorecard_is_the_leaderboard(opened, report):
    records = json.loads((report / "leaderboard.json").read_text())["records"]
    shown = opened.page.eval_on_selector_all("#scorecard-table .fig", """figs => figs.map(f => ({
        record: Number(f.dataset.record), value: f.dataset.value, low: f.dataset.low, high: f.dataset.high,
        n: Number(f.dataset.n), protocol: f.dataset.protocol, column: f.closest('td').dataset.column,
        model: f.closest('tr').dataset.model, args: f.closest('tr').dataset.modelArgs}))""")
    assert sorted(s["record"] for s in shown) == list(range(len(records)))
    for s in shown:
        r = records[s["record"]]
        assert float(s["value"]) == r["value"] and s["n"] == r["n"]
        assert (float(s["low"]), float(s["high"])) == (r["ci_low"], r["ci_high"])
        assert s["protocol"] == r["settings"].get("protocol", "exact")
        assert (s["model"], s["args"], s["column"]) == (r["model"], r["model_args"], f"{r['benchmark']}/{r['metric']}")
    rows = opened.page.eval_on_selector_all("#scorecard-table tbody tr", "rows => rows.length")
    assert rows == len({(r["model"], r["model_args"]) for r in records})


def test_every_column_sorts(opened):
    columns = opened.page.eval_on_selector_all("#scorecard-table thead th", "ths => ths.map(t => t.dataset.column)")
    assert columns[0] == "model" and len(columns) > 4
    for column in columns:
        for direction in ("descending", "ascending"):
            opened.page.click(f"#scorecard-table thead th[data-column='{column}']")
            if opened.page.get_attribute(f"#scorecard-table thead th[data-column='{column}']", "aria-sort") != direction:
                opened.page.click(f"#scorecard-table thead th[data-column='{column}']")
            assert opened.page.get_attribute(f"#scorecard-table thead th[data-column='{column}']", "aria-sort") == direction
            if column == "model":
                keys = opened.page.eval_on_selector_all("#scorecard-table tbody tr", "rows => rows.map(r => r.dataset.model + '(' + r.dataset.modelArgs + ')')")
            else:
                keys = opened.page.eval_on_selector_all("#scorecard-table tbody tr", """(rows, column) => rows.map(r => {
                    const cell = [...r.querySelectorAll("td")].find(td => td.dataset.column === column);
                    const f = cell && cell.querySelector(".fig");
                    return f && f.dataset.value !== undefined ? Number(f.dataset.value) : null; })""", column)
            defined = [k for k in keys if k is not None]
            assert keys[: len(defined)] == defined  # undefined figures last
            assert defined == sorted(defined, reverse=direction == "descending"), (column, direction, keys)


def test_each_filter_leaves_the_samples_the_files_say(opened, runs):
    opened.choose("#run-a", value=_run(opened, "spatialtunnel"))
    files = _samples(runs, "spatialtunnel")
    every = {(task, str(s["doc_id"])) for task, samples in files.items() for s in samples}
    assert {(row[1], row[2]) for row in opened.filtered()} == every

    opened.choose("#filter-benchmark", value=_benchmark(opened, "SpatialTunnel"))
    opened.choose("select[data-field='two-way']", value="counter")
    counter = {(task, str(s["doc_id"])) for task, samples in files.items() for s in samples
               if _record(s)["relation_two_way"] == "counter"}
    assert counter and {(row[1], row[2]) for row in opened.filtered()} == counter

    opened.page.check("#wrong-only")  # the shortcut is wrong exactly on the counter pairs
    wrong = {(task, str(s["doc_id"])) for task, samples in files.items() for s in samples
             if _record(s)["relation_two_way"] == "counter" and _record(s)["score"] < 0.5}
    assert wrong == counter and {(row[1], row[2]) for row in opened.filtered()} == wrong
    opened.page.uncheck("#wrong-only")
    opened.choose("select[data-field='two-way']", value="")

    opened.choose("select[data-field='size step']", value="0.1")
    size = {(task, str(s["doc_id"])) for task, samples in files.items() for s in samples
            if _record(s)["variant"] == "size" and _record(s).get("size1_nominal") == 0.1}
    assert size and {(row[1], row[2]) for row in opened.filtered()} == size
    opened.choose("select[data-field='size step']", value="")

    opened.choose("#filter-task", value="spatialtunnel_logit_sample_phase")
    some = files["spatialtunnel_logit_sample_phase"][5]
    wanted = _record(some)["question_id"]
    opened.page.fill("#search", wanted)
    for _ in range(100):  # the search applies once typing pauses (the page's CSP forbids wait_for_function)
        rows = opened.filtered()
        if all(wanted in row[3] for row in rows):
            break
        opened.page.wait_for_timeout(50)
    found = {(row[1], row[2]) for row in rows}
    assert found == {("spatialtunnel_logit_sample_phase", str(s["doc_id"])) for s in files["spatialtunnel_logit_sample_phase"]
                     if wanted in _record(s)["question_id"]}
    count = opened.page.get_attribute("#sample-count", "data-count")
    assert int(count) == len(found) == opened.page.locator("#sample-list article").count()


def test_the_benchmarks_own_fields_are_filters(opened, runs):
    opened.choose("#run-a", value=_run(opened, "dori"))
    files = _samples(runs, "dori")
    offered = opened.page.eval_on_selector_all("#filter-benchmark option", "os => os.map(o => o.textContent)")
    assert offered == ["all", f"DORI ({sum(len(s) for s in files.values())})"]  # what this run answered, no more
    opened.choose("#filter-benchmark", value=_benchmark(opened, "DORI"))
    opened.choose("select[data-field='granularity']", value="granular")
    assert {(row[1], row[2]) for row in opened.filtered()} == {
        (task, str(s["doc_id"])) for task, samples in files.items() for s in samples if _record(s)["granularity"] == "granular"}
    opened.choose("#run-a", value=_run(opened, "o3d"))
    opened.choose("#filter-benchmark", value=_benchmark(opened, "O3-D"))
    fields = opened.page.eval_on_selector_all("#field-filters select", "s => s.map(x => x.dataset.field)")
    assert {"cue", "strength", "clarity"} <= set(fields)
    opened.choose("#run-a", value=_run(opened, "vague"))
    opened.choose("#filter-benchmark", value=_benchmark(opened, "VAGUE"))
    fields = opened.page.eval_on_selector_all("#field-filters select", "s => s.map(x => x.dataset.field)")
    assert {"setting", "failure type"} <= set(fields)


def test_two_runs_side_by_side_pair_the_same_questions_disagreements_first(opened, runs):
    opened.choose("#run-a", value=_run(opened, "spatialtunnel"))
    opened.choose("#run-b", value=_run(opened, "oracle"))
    rows = opened.filtered()
    files = _samples(runs, "spatialtunnel")
    assert len(rows) == sum(len(s) for s in files.values())  # every question, each paired once
    oracle_files = _samples(runs, "oracle")
    by_key = {(task, _record(s)["question_id"]): str(s["doc_id"]) for task, samples in oracle_files.items() for s in samples}
    for run, task, doc, key, other_task, other_doc, differs in rows:
        assert other_task == task and by_key[(task, key)] == other_doc
    wrong = {(task, _record(s)["question_id"]) for task, samples in files.items() for s in samples if _record(s)["score"] < 0.5}
    first = rows[: len(wrong)]
    assert {(r[1], r[3]) for r in first} == wrong and all(r[6] == "differs" for r in first)
    assert not any(r[6] for r in rows[len(wrong):])
    assert opened.page.locator("#sample-list article.disagree").count() == min(50, len(wrong))


def test_images_are_shown_as_the_model_saw_them(opened, report):
    opened.choose("#run-a", value=_run(opened, "o3d"))  # O3-D: the markers drawn on the images
    sources = opened.page.eval_on_selector_all("#sample-list article .images img", "imgs => imgs.map(i => i.getAttribute('src'))")
    assert len(sources) == opened.page.locator("#sample-list article").count() > 0
    for source in sources:
        assert source.startswith("thumbs/") and max(Image.open(report / source).size) <= THUMB_PX
    opened.choose("#run-a", value=_run(opened, "dori"))  # DORI's two-object questions: both images
    counts = opened.page.eval_on_selector_all("#sample-list article", "as => as.map(a => a.querySelectorAll('.images img').length)")
    path, config = task_config("dori_sample")
    data, hook = TaskData.from_config(path, config)
    docs = load_docs(data, hook)
    assert counts == [len(config["doc_to_visual"](docs[i])) for i in range(len(counts))] and 2 in counts
    opened.page.locator("#sample-list article").first.scroll_into_view_if_needed()
    opened.page.wait_for_function("() => { const i = document.querySelector('#sample-list img'); return i.complete && i.naturalWidth > 0; }")
    assert opened.page.locator("text=image could not be read").count() == 0


# ------------------------------------------------------------------------------------------
# Any data: hostile text, an unreadable image, a missing field


@pytest.fixture(scope="module")
def hostile_report(runs, tmp_path_factory) -> Path:
    """The DORI and SpatialTunnel runs with a prompt and an answer made of HTML, a sample without its
    prompt, and the SpatialTunnel size task's data moved away since the run."""
    root = tmp_path_factory.mktemp("hostile_runs")
    for folder in ("dori", "spatialtunnel"):
        shutil.copytree(runs / folder, root / folder)
    (dori,) = (root / "dori").rglob("*_samples_dori_sample.jsonl")
    lines = [json.loads(line) for line in dori.read_text().splitlines()]
    lines[0]["input"] = HOSTILE_PROMPT
    lines[0]["filtered_resps"] = [HOSTILE_ANSWER]
    for key, value in lines[0].items():
        if isinstance(value, dict) and value.get("benchmark") == "dori":
            value["response"] = HOSTILE_ANSWER
    del lines[1]["input"]
    dori.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (results,) = (root / "spatialtunnel").rglob("*_results.json")
    data = json.loads(results.read_text())
    config = data["configs"]["spatialtunnel_sample_size"]
    config["metadata"][DATA_KEY]["kwargs"]["data_files"] = {"test": str(root / "moved-away.parquet")}
    results.write_text(json.dumps(data))
    out = tmp_path_factory.mktemp("hostile_report") / "report"
    write_report(read_runs(root), out)
    return out


def test_text_from_samples_is_shown_as_written_never_run(browser, hostile_report):
    opened = Opened(browser, hostile_report / "index.html")
    opened.choose("#run-a", value=_run(opened, "dori"))
    first = opened.page.locator("#sample-list article").first
    assert first.locator("pre.prompt").inner_text() == HOSTILE_PROMPT
    assert first.locator("pre.answer-text").inner_text() == HOSTILE_ANSWER
    assert opened.page.evaluate("window.__pwned === undefined")
    assert opened.page.locator("#sample-list b, #sample-list script, #sample-list img[src='x']").count() == 0
    second = opened.page.locator("#sample-list article").nth(1)
    assert second.locator("pre.prompt").inner_text() == "—"
    assert opened.errors == [] and all(url.startswith("file://") for url in opened.requests)
    opened.close()


def test_an_image_that_cannot_be_read_is_said_in_its_rows_and_the_rest_renders(browser, hostile_report):
    opened = Opened(browser, hostile_report / "index.html")
    opened.choose("#run-a", value=_run(opened, "spatialtunnel"))
    opened.choose("#filter-task", value="spatialtunnel_sample_size")
    first = opened.page.locator("#sample-list article").first
    assert first.locator(".noimage").inner_text() == "image could not be read"
    assert "moved-away.parquet" in first.locator(".noimage").get_attribute("title")
    assert "spatialtunnel_sample_size" in opened.page.locator("#image-problems").inner_text()
    opened.choose("#filter-task", value="spatialtunnel_sample_phase")
    assert opened.page.locator("#sample-list article .images img").count() > 0
    assert opened.page.locator("#sample-list .noimage").count() == 0
    assert opened.errors == []
    opened.close()
