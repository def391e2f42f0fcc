"""``publish`` against a local stand-in for the Hub (no network).

The Hub itself is unreachable here, so a small HTTP server on 127.0.0.1 (started in this test)
plays the Hub endpoints an upload uses, and records every request: repository creation
(``POST /api/repos/create``), the card's metadata check (``POST /api/validate-yaml``), the
pre-upload check (``POST /api/datasets/<repo>/preupload/main``,
answered "regular" for every file so contents travel inline), the commit
(``POST /api/datasets/<repo>/commit/main``, NDJSON) and the listing of what the repo already
holds (``POST /api/datasets/<repo>/paths-info/main``, from the files committed so far). The real huggingface_hub client code runs
unchanged against it (``publish(..., endpoint=<local URL>)``); what is mocked is the remote
endpoint only. The tests check what would reach the Hub: the card and parquet shards, byte for
byte, and nothing from ``_work/`` or logs; the token goes only into the Authorization header.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import datasets
import huggingface_hub.constants
import pytest
import yaml
from lmms import SPATIAL_TASKS, run_cli
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.publish import PublishError, publish, upload_list

TOKEN = "hf_localtesttoken0123456789"


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """Records requests; answers like the Hub for create / preupload / commit. ``fail_with``
    answers every request with that HTTP status instead (401, 403, 404 ...)."""

    def __init__(self, repo_exists: bool = False, fail_with: int | None = None,
                 fail_after_commits: int | None = None) -> None:
        self.requests: list[dict] = []
        self.repo_exists = repo_exists
        self.fail_with = fail_with
        self.fail_after_commits = fail_after_commits  # later commits answer 503 (a cut-off upload)
        self.stored: dict[str, bytes] = {}  # what the repo holds after the commits so far
        self.commits = 0
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hub.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                path = self.path.split("?")[0]
                if hub.fail_with is not None:
                    return self._json(hub.fail_with, {"error": f"status {hub.fail_with}"})
                if path == "/api/repos/create":
                    payload = json.loads(body)
                    url = f"{hub.url}/datasets/{payload['organization']}/{payload['name']}"
                    if hub.repo_exists:  # the Hub answers 409 with the existing repo's url
                        return self._json(409, {"error": "You already created this dataset repo", "url": url})
                    return self._json(200, {"url": url})
                if path == "/api/validate-yaml":  # the client checks README.md's metadata first
                    content = json.loads(body)["content"]
                    try:
                        header = yaml.safe_load(content.split("---")[1])
                        assert isinstance(header, dict) and "configs" in header
                    except Exception as err:  # noqa: BLE001 - reported like the Hub does
                        return self._json(400, {"errors": [{"message": repr(err)}]})
                    return self._json(200, {"errors": [], "warnings": []})
                if "/preupload/" in path:
                    files = json.loads(body)["files"]
                    return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                       "shouldIgnore": False, "oid": None} for f in files]})
                if "/paths-info/" in path:
                    wanted = urllib.parse.parse_qs(body.decode()).get("paths", [])
                    if not hub.stored:
                        return self._json(404, {"error": "Revision Not Found"},
                                          {"X-Error-Code": "RevisionNotFound"})
                    return self._json(200, [{"type": "file", "path": name, "size": len(hub.stored[name]),
                                             "oid": _git_sha1(hub.stored[name])} for name in wanted if name in hub.stored])
                if "/commit/" in path:
                    if hub.fail_after_commits is not None and hub.commits >= hub.fail_after_commits:
                        return self._json(503, {"error": "Service Unavailable"})
                    hub.commits += 1
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "file":
                            hub.stored[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                    repo = path.removeprefix("/api/datasets/").split("/commit/")[0]
                    return self._json(200, {"commitUrl": f"{hub.url}/datasets/{repo}/commit/{'a' * 40}",
                                            "commitOid": "a" * 40, "success": True})
                return self._json(404, {"error": f"unexpected {path}"})

            def do_GET(self):
                hub.requests.append({"path": self.path, "headers": dict(self.headers), "body": b""})
                self._json(404, {"error": "not found"})

            def _json(self, status, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def committed_files(self) -> dict[str, bytes]:
        files = {}
        for request in self.requests:
            if "/commit/" in request["path"]:
                for line in request["body"].decode().splitlines():
                    item = json.loads(line)
                    if item["key"] == "file":
                        files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
        return files


@pytest.fixture
def online(monkeypatch):
    """The suite runs with HF_HUB_OFFLINE=1; lift it for requests to the local server only."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture
def dataset_dir(tmp_path) -> Path:
    """A small generated-style dataset folder plus files that must stay local."""
    root = tmp_path / "tunnel"
    features = datasets.Features({"image_id": datasets.Value("string"), "x": datasets.Value("int32")})
    (root / "phase_variation").mkdir(parents=True)
    ds.write_parquet([{"image_id": f"i{k}", "x": k} for k in range(3)], features,
                     root / "phase_variation" / "test-00000-of-00001.parquet", {"seed": 0})
    (root / "README.md").write_text("---\nconfigs:\n- config_name: phase_variation\n  data_files:\n"
                                    "  - split: test\n    path: phase_variation/test-*.parquet\n---\n# card\n")
    (root / "_work" / "phase_variation").mkdir(parents=True)
    (root / "_work" / "phase_variation" / "phase-r00-c00-k00.png").write_bytes(b"png")
    (root / "_work" / "generate.log").write_text("log\n")
    (root / "generate.log").write_text("log\n")
    (root / "phase_variation" / ".test-00001-of-00001.abc.parquet.tmp").write_bytes(b"partial")
    return root


def load_fresh(path: Path, config: str) -> datasets.Dataset:
    """load_dataset with its own cache (datasets caches local folders by path only)."""
    cache = tempfile.mkdtemp(dir=Path(path).parent, prefix=".hf-cache-")
    return datasets.load_dataset(str(path), config, split="test", cache_dir=cache)


def test_local_round_trip(dataset_dir):
    rows = load_fresh(dataset_dir, "phase_variation")
    assert rows["image_id"] == ["i0", "i1", "i2"]


def test_publish_uploads_card_and_shards_only(online, dataset_dir, capsys, caplog):
    with FakeHub() as hub:
        url = publish(dataset_dir, "my-org/spatialtunnel", private=True, endpoint=hub.url, token=TOKEN)
    assert url == f"{hub.url}/datasets/my-org/spatialtunnel"

    create = next(r for r in hub.requests if r["path"] == "/api/repos/create")
    payload = json.loads(create["body"])
    assert {k: payload.get(k) for k in ("name", "organization", "type")} == {
        "name": "spatialtunnel", "organization": "my-org", "type": "dataset"}
    assert payload.get("visibility") == "private" or payload.get("private") is True
    validated = [json.loads(r["body"])["content"] for r in hub.requests if r["path"] == "/api/validate-yaml"]
    assert validated == [(dataset_dir / "README.md").read_text()]
    preupload = [r for r in hub.requests if "/api/datasets/my-org/spatialtunnel/preupload/main" in r["path"]]
    assert preupload
    assert sorted(hub.committed_files()) == ["README.md", "phase_variation/test-00000-of-00001.parquet"]
    for name, content in hub.committed_files().items():
        assert content == (dataset_dir / name).read_bytes()
    assert all(r["headers"].get("authorization") == f"Bearer {TOKEN}" for r in hub.requests)
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err + caplog.text


def test_publish_to_an_existing_repo(online, dataset_dir):
    with FakeHub(repo_exists=True) as hub:
        publish(dataset_dir, "my-org/spatialtunnel", endpoint=hub.url, token=TOKEN)
    assert "README.md" in hub.committed_files()


@pytest.mark.parametrize("repo", ["noslash", "a/b/c", "/x", "", "my--org/st", "org/st..x", "org/-st", "org/st.",
                                  "org/" + "x" * 97, "org/s t", "org/st%"])
def test_bad_repo_id(dataset_dir, repo):
    with pytest.raises(ValueError, match="--repo"):
        publish(dataset_dir, repo)


@pytest.mark.parametrize("repo", ["my--org/st", "a/b/c", "org/st."])
def test_a_dry_run_checks_the_repo_id_too(dataset_dir, repo):
    out = run_cli([SPATIAL_TASKS, "publish", str(dataset_dir), "--repo", repo, "--dry-run"],
                  capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith(f"error: --repo {repo!r}") or out.stderr.startswith("error: --repo must be ORG/NAME")


def test_only_the_card_and_the_declared_data_files_are_uploaded(online, dataset_dir):
    """An allowlist: files the card does not declare stay local, whatever they are called."""
    (dataset_dir / "phase_variation" / "notes.parquet").write_bytes(b"not declared")  # no test-* name
    (dataset_dir / "secrets.env").write_text("HF_TOKEN=hf_x\n")
    (dataset_dir / "phase_variation" / "test-99999-of-00001.parquet").symlink_to("/etc/hostname")
    assert upload_list(dataset_dir) == ["README.md", "phase_variation/test-00000-of-00001.parquet"]
    with FakeHub() as hub:
        publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN)
    assert sorted(hub.committed_files()) == ["README.md", "phase_variation/test-00000-of-00001.parquet"]


CARD_CASES = [
    ("no card", None, r"README\.md: missing"),
    ("no YAML header", "# just text\n", r"README\.md: no YAML header"),
    ("header that does not parse", "---\nconfigs: [\n---\n", r"the YAML header does not parse"),
    ("no configs", "---\nlicense: mit\n---\n", r"declares no configs"),
    ("a config without data files", "---\nconfigs:\n- config_name: a\n---\n", r"config 'a' declares no data_files"),
    ("a pattern that matches nothing", "---\nconfigs:\n- config_name: a\n  data_files:\n  - split: test\n"
     "    path: a/*.parquet\n---\n", r"config 'a' declares 'a/\*\.parquet', which matches no file"),
    ("a path leaving the folder", "---\nconfigs:\n- config_name: a\n  data_files: ../other/x.parquet\n---\n",
     r"data file path '\.\./other/x\.parquet' points outside the dataset folder"),
]


@pytest.mark.parametrize(("case", "card", "message"), CARD_CASES, ids=[c[0] for c in CARD_CASES])
def test_a_card_that_declares_nothing_usable_is_refused(tmp_path, case, card, message):
    folder = tmp_path / "ds"
    folder.mkdir()
    if card is not None:
        (folder / "README.md").write_text(card)
    with pytest.raises(PublishError, match=message):
        upload_list(folder)


HUB_FAILURES = [
    (401, r"refused the credentials for my-org/st: run `hf auth login`, or set HF_TOKEN"),
    (403, r"the token may not write to my-org/st: check its write scope"),
    (404, r"my-org/st was not found on http://127\.0\.0\.1:\d+: check the name"),
]


@pytest.mark.parametrize(("status", "message"), HUB_FAILURES, ids=[str(s) for s, _ in HUB_FAILURES])
def test_hub_failures_say_what_to_do(online, dataset_dir, status, message):
    with FakeHub(fail_with=status) as hub, pytest.raises(PublishError, match=message) as err:
        publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN)
    assert "\n" not in str(err.value) and TOKEN not in str(err.value)


def test_an_unreachable_hub_says_so(online, dataset_dir):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(PublishError, match=rf"cannot reach the Hub at http://127\.0\.0\.1:{port}"):
        publish(dataset_dir, "my-org/st", endpoint=f"http://127.0.0.1:{port}", token=TOKEN)


def test_cli_dry_run_lists_the_files_and_sends_nothing(dataset_dir):
    cli = Path(sys.executable).with_name("spatial-tasks")
    out = subprocess.run([str(cli), "publish", str(dataset_dir), "--repo", "my-org/st", "--dry-run"],
                         capture_output=True, text=True, env={**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["  README.md", "  phase_variation/test-00000-of-00001.parquet",
                                       "dry run: 2 file(s) would go to my-org/st; nothing uploaded"]


def test_cli_failure_is_one_line(dataset_dir):
    cli = Path(sys.executable).with_name("spatial-tasks")
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0", "HF_TOKEN": TOKEN,
           "NO_PROXY": "127.0.0.1"}
    out = subprocess.run([str(cli), "publish", str(dataset_dir), "--repo", "my-org/st"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 2
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot reach the Hub" in errors[0] and "Traceback" not in out.stderr


def _commit_count(hub: FakeHub) -> int:
    return sum(1 for r in hub.requests if "/commit/" in r["path"])


def test_a_cut_off_upload_resumes_without_sending_anything_twice(online, dataset_dir):
    """Commits of at most ``batch_bytes``; the second commit fails; the same call again sends only
    what is missing, the card last, and the repo ends up with every file."""
    features = datasets.Features({"image_id": datasets.Value("string"), "x": datasets.Value("int32")})
    for k in range(3):  # three shards instead of one
        ds.write_parquet([{"image_id": f"s{k}", "x": k}], features,
                         dataset_dir / "phase_variation" / f"test-0000{k}-of-00003.parquet", {"seed": k})
    (dataset_dir / "phase_variation" / "test-00000-of-00001.parquet").unlink()
    expected = {name: (dataset_dir / name).read_bytes() for name in upload_list(dataset_dir)}
    assert len(expected) == 4
    with FakeHub(fail_after_commits=1) as hub:
        with pytest.raises(PublishError, match="503"):
            publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN, batch_bytes=1)
        first = dict(hub.stored)
        assert len(first) == 1 and "README.md" not in first  # data first: no card without its files
        hub.fail_after_commits = None
        sent_before = len(hub.requests)
        publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN, batch_bytes=1)
        assert hub.stored == expected
        resent = [json.loads(line)["value"]["path"] for r in hub.requests[sent_before:] if "/commit/" in r["path"]
                  for line in r["body"].decode().splitlines() if json.loads(line)["key"] == "file"]
        assert sorted(resent) == sorted(set(expected) - set(first))  # nothing sent twice
        assert resent[-1] == "README.md"
        before = _commit_count(hub)
        publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN)  # all there: no commit at all
        assert _commit_count(hub) == before


def test_a_repo_file_this_folder_did_not_upload_is_never_replaced(online, dataset_dir):
    """Issue 50: nothing of the user's is overwritten, on the Hub too. A card written on the Hub stops
    the upload (nothing sent) unless --replace; a file this folder uploaded is replaced freely."""
    with FakeHub(repo_exists=True) as hub:
        hub.stored["README.md"] = b"---\nconfigs: []\n---\nthe card I wrote on the Hub\n"
        with pytest.raises(PublishError, match=r"my-org/st holds README\.md, which this folder did not upload .*"
                                               r"nothing was uploaded\. Pass --replace"):
            publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN)
        assert _commit_count(hub) == 0 and hub.stored["README.md"].endswith(b"the card I wrote on the Hub\n")
        publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN, replace=True)
        assert hub.stored["README.md"] == (dataset_dir / "README.md").read_bytes()
        card = dataset_dir / "README.md"
        card.write_text(card.read_text() + "\nA line added locally.\n")
        publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN)  # ours on the Hub: replaced, no flag
        assert hub.stored["README.md"] == card.read_bytes()
        hub.stored["README.md"] = b"edited on the Hub since"
        card.write_text(card.read_text() + "\nAnother.\n")
        with pytest.raises(PublishError, match="changed on the Hub since"):
            publish(dataset_dir, "my-org/st", endpoint=hub.url, token=TOKEN)
        assert hub.stored["README.md"] == b"edited on the Hub since"
