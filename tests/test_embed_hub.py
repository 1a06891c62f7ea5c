"""Models on request, through huggingface_hub's real download code against a stand-in hub: an
http.server on 127.0.0.1 that answers the calls `fetch` makes (the model's listing, its file
tree, a HEAD and a GET per file) for a tiny fake repository made here. Each download runs in
a fresh Python with `HF_ENDPOINT` and `HF_HOME` set, since huggingface_hub reads them once, at
import: nothing can reach the real hub."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import pytest

from httpstub import Quiet, serve
from loremap.embed.hub import ENCODER_FILES, fetch, slug
from loremap.errors import EmbedderUnavailable, InvalidInput

ENCODER = {
    "config.json": b'{"model_type": "bert", "hidden_size": 4}',
    "tokenizer.json": b'{"version": "1.0", "model": {"type": "WordPiece"}}',
    "vocab.txt": b"[PAD]\n[UNK]\nhello\n",
    "model.safetensors": bytes(range(256)) * 8,
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
}
EXTRAS = {  # what a real repository also holds and an encoder does not read
    "README.md": b"# tiny\n",
    "pytorch_model.bin": b"\x80\x02" * 600,
    "onnx/model.onnx": b"onnx" * 300,
    "tf_model.h5": b"h5" * 300,
}


class Repo(NamedTuple):
    sha: str
    files: dict[str, bytes]
    gated: bool = False


class Hub:
    """The stand-in hub's repositories, what it was asked, and its failure switch."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[str] = []
        self.listing_status = 200
        self.missing: set[str] = set()  # listed files the hub fails to serve
        self.url = ""

    def add(self, name: str, files: dict[str, bytes], *, gated: bool = False) -> Repo:
        sha = hashlib.sha1(json.dumps(sorted(files)).encode() + b"".join(files.values()))
        repo = Repo(sha.hexdigest(), dict(files), gated)
        self.repos[name] = repo
        return repo

    def answer(self, path: str) -> Answer:
        """What the hub says to a GET (or HEAD) of `path`."""
        for name, repo in self.repos.items():
            if path == f"/api/models/{name}":
                return self._listing(name, repo)
            if path.startswith(f"/api/models/{name}/tree/{repo.sha}"):
                return _json([{"type": "file", "path": p, "size": len(b),
                               "oid": hashlib.sha1(b).hexdigest()} for p, b in repo.files.items()])
            prefix = f"/{name}/resolve/{repo.sha}/"
            if path.startswith(prefix) and path[len(prefix):] in self.missing:
                return 404, b'{"error": "entry not found"}', {"X-Error-Code": "EntryNotFound"}
            if path.startswith(prefix) and path[len(prefix):] in repo.files:
                return _file(repo, repo.files[path[len(prefix):]])
        if path.startswith("/api/models/"):  # what the real hub says to an unknown repository
            return 401, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}
        return 404, b'{"error": "not found"}', {}

    def _listing(self, name: str, repo: Repo) -> Answer:
        if self.listing_status != 200:
            return self.listing_status, b'{"error": "the hub is down"}', {}
        return _json({"id": name, "sha": repo.sha,
                      "siblings": [{"rfilename": p} for p in repo.files]})


Answer = tuple[int, bytes, dict[str, str]]


def _json(value: object) -> Answer:
    return 200, json.dumps(value).encode(), {"Content-Type": "application/json"}


def _file(repo: Repo, body: bytes) -> Answer:
    if repo.gated:
        return 403, b'{"error": "gated"}', {"X-Error-Code": "GatedRepo"}
    return 200, body, {"ETag": f'"{hashlib.sha1(body).hexdigest()}"', "X-Repo-Commit": repo.sha}


@pytest.fixture
def hub() -> Iterator[Hub]:
    state = Hub()

    class Handler(Quiet):
        def do_GET(self) -> None:
            state.requests.append(f"{self.command} {self.path}")
            status, body, headers = state.answer(unquote(urlsplit(self.path).path))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_HEAD = do_GET

    with serve(Handler) as url:
        state.url = url
        yield state


class Outcome(NamedTuple):
    folder: Path | None
    error: str  # "Type: message" of a refusal
    stderr: str


_RUN = """
import json, sys
from pathlib import Path
from loremap.embed.hub import fetch
from loremap.errors import UserError
try:
    print(json.dumps({"folder": str(fetch(sys.argv[1], Path(sys.argv[2]),
                                          progress=sys.argv[3] == "1"))}))
except UserError as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def _fetch(endpoint: str, name: str, into: Path, tmp_path: Path, *, progress: bool = True,
           **env: str) -> Outcome:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("HF_") and not k.lower().endswith("_proxy")}
    environ.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf-home"), **env)
    done = subprocess.run([sys.executable, "-c", _RUN, name, str(into), "1" if progress else "0"],
                          env=environ, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    folder = Path(answer["folder"]) if "folder" in answer else None
    return Outcome(folder, answer.get("error", ""), done.stderr)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file() and ".cache" not in p.parts}


def test_a_model_downloads_only_the_files_an_encoder_reads_with_a_progress_bar(
        hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER | EXTRAS)
    models = tmp_path / "models"

    outcome = _fetch(hub.url, "org/tiny-encoder", models, tmp_path)

    assert outcome.error == ""
    assert outcome.folder == models / "org--tiny-encoder"
    assert _files(outcome.folder) == ENCODER
    assert sorted(p.name for p in models.iterdir()) == ["org--tiny-encoder"]  # no .partial
    assert "Fetching 5 files" in outcome.stderr
    assert not [r for r in hub.requests if "README" in r or ".bin" in r or "onnx" in r]


def test_without_progress_nothing_is_drawn(hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER)

    outcome = _fetch(hub.url, "org/tiny-encoder", tmp_path / "models", tmp_path, progress=False)

    assert outcome.folder is not None and _files(outcome.folder) == ENCODER
    assert "Fetching" not in outcome.stderr and "%|" not in outcome.stderr


def test_fetching_again_brings_the_folder_up_to_date(hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER)
    models = tmp_path / "models"
    first = _fetch(hub.url, "org/tiny-encoder", models, tmp_path, progress=False)
    newer = ENCODER | {"model.safetensors": b"\x01" * 512, "config.json": b'{"hidden_size": 8}'}
    hub.add("org/tiny-encoder", newer)

    second = _fetch(hub.url, "org/tiny-encoder", models, tmp_path, progress=False)

    assert second.folder == first.folder
    assert second.folder is not None and _files(second.folder) == newer


def test_a_static_model_of_a_sharded_layout_downloads_every_shard(hub: Hub,
                                                                  tmp_path: Path) -> None:
    shards = {"config.json": b"{}", "tokenizer.json": b"{}",
              "model-00001-of-00002.safetensors": b"a" * 300,
              "model-00002-of-00002.safetensors": b"b" * 300,
              "model.safetensors.index.json": b'{"weight_map": {}}'}
    hub.add("minishlab/potion-tiny", shards)

    outcome = _fetch(hub.url, "minishlab/potion-tiny", tmp_path / "models", tmp_path,
                     progress=False)

    assert outcome.folder is not None and _files(outcome.folder) == shards


def test_a_name_that_is_not_a_repository_is_one_line_and_writes_nothing(
        hub: Hub, tmp_path: Path) -> None:
    outcome = _fetch(hub.url, "org/no-such-model", tmp_path / "models", tmp_path)

    assert outcome.error.startswith("InvalidInput: no model repository named org/no-such-model")
    assert "\n" not in outcome.error
    assert not (tmp_path / "models").exists()


def test_a_repository_without_safetensors_is_refused_before_any_download(
        hub: Hub, tmp_path: Path) -> None:
    hub.add("org/torch-only", {"config.json": b"{}", "pytorch_model.bin": b"x" * 100,
                               "README.md": b"#"})

    outcome = _fetch(hub.url, "org/torch-only", tmp_path / "models", tmp_path)

    assert outcome.error.startswith("InvalidInput: org/torch-only has no .safetensors weights "
                                    "(it has pytorch_model.bin)")
    assert not [r for r in hub.requests if "/resolve/" in r]
    assert not (tmp_path / "models").exists()


def test_a_gated_model_says_how_to_get_access_and_installs_nothing(hub: Hub,
                                                                   tmp_path: Path) -> None:
    hub.add("org/gated", ENCODER, gated=True)
    models = tmp_path / "models"

    outcome = _fetch(hub.url, "org/gated", models, tmp_path, progress=False)

    assert outcome.error.startswith("InvalidInput: org/gated is a gated model")
    assert "HF_TOKEN" in outcome.error and "\n" not in outcome.error
    assert not (models / slug("org/gated")).exists()


def test_a_hub_that_answers_an_error_is_one_line(hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER)
    hub.listing_status = 503

    outcome = _fetch(hub.url, "org/tiny-encoder", tmp_path / "models", tmp_path)

    assert outcome.error.startswith(f"EmbedderUnavailable: {hub.url} answered HTTP 503 for "
                                    "org/tiny-encoder")
    assert "\n" not in outcome.error


def test_a_download_cut_short_leaves_no_model_folder_and_a_retry_completes_it(
        hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER)
    hub.missing = {"model.safetensors"}
    models = tmp_path / "models"

    failed = _fetch(hub.url, "org/tiny-encoder", models, tmp_path, progress=False)

    assert failed.error.startswith(f"EmbedderUnavailable: {hub.url} answered HTTP 404 for "
                                   "org/tiny-encoder")
    assert not (models / "org--tiny-encoder").exists()
    hub.missing = set()
    retried = _fetch(hub.url, "org/tiny-encoder", models, tmp_path, progress=False)
    assert retried.folder is not None and _files(retried.folder) == ENCODER


def test_a_models_folder_that_cannot_be_written_is_one_line(hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER)
    blocker = tmp_path / "models"
    blocker.write_text("a file where the models folder should be\n", encoding="utf-8")

    outcome = _fetch(hub.url, "org/tiny-encoder", blocker, tmp_path, progress=False)

    assert outcome.error.startswith("EmbedderUnavailable: cannot download org/tiny-encoder into ")
    assert "\n" not in outcome.error
    assert blocker.read_text(encoding="utf-8").startswith("a file where")


def test_no_network_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there

    outcome = _fetch(f"http://127.0.0.1:{port}", "org/tiny-encoder", tmp_path / "models",
                     tmp_path)

    assert outcome.error.startswith(f"EmbedderUnavailable: cannot reach http://127.0.0.1:{port} "
                                    "to download org/tiny-encoder")
    assert "\n" not in outcome.error


def test_offline_mode_says_so(hub: Hub, tmp_path: Path) -> None:
    hub.add("org/tiny-encoder", ENCODER)

    outcome = _fetch(hub.url, "org/tiny-encoder", tmp_path / "models", tmp_path,
                     HF_HUB_OFFLINE="1")

    assert outcome.error == ("EmbedderUnavailable: HF_HUB_OFFLINE is set: unset it to download "
                             "org/tiny-encoder")
    assert hub.requests == []


@pytest.mark.parametrize("name", ["", "../etc/passwd", "org/../x", "a/b/c", "org/my--model",
                                  "org/ name", "-org/x", "org/" + "x" * 97])
def test_a_malformed_name_is_refused_before_the_hub_is_asked(name: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="owner/name") as caught:
        fetch(name, tmp_path)
    assert "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_without_the_extra_it_says_which_command_installs_it(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails as if absent

    with pytest.raises(EmbedderUnavailable, match=r"pip install 'loremap\[embed\]'"):
        fetch("BAAI/bge-small-en-v1.5", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_patterns_keep_other_checkpoint_formats_out() -> None:
    from fnmatch import fnmatch

    wanted = [p for p in ENCODER | EXTRAS if any(fnmatch(p, pat) for pat in ENCODER_FILES)]
    assert sorted(wanted) == sorted(ENCODER)


def test_embed_enable_with_a_model_name_downloads_it_then_searches_with_it(
        hub: Hub, project: Path, tmp_path: Path) -> None:
    """The whole path a user takes: `loremap embed enable --model NAME` fetches the model from
    the (stand-in) hub with its progress bar, loads it, embeds the project and writes the
    setting; a search then runs on it without asking the hub again. The repository served is
    the shipped all-MiniLM-L6-v2, so what loads is a real encoder."""
    from loremap.embed import local_model_folder

    shipped = local_model_folder(tmp_path / "unpacked")
    hub.add("test-org/minilm", {str(p.relative_to(shipped)): p.read_bytes()
                                for p in shipped.rglob("*") if p.is_file()
                                and not p.name.startswith(".")})
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("HF_") and not k.lower().endswith("_proxy")}
    environ.update(HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf-home"))
    cli = [sys.executable, "-m", "loremap"]
    done = subprocess.run([*cli, "remember", "-t", "gotcha", "--title", "Coupon applied twice",
                           "-m", "The discount code was counted two times on reload."],
                          cwd=project, env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([*cli, "embed", "enable", "--model", "test-org/minilm"], cwd=project,
                          env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "vectors are on with test-org/minilm" in done.stdout
    config = (project / ".loremap" / "config.toml").read_text(encoding="utf-8")
    assert 'embedder = "test-org/minilm"' in config
    asked = len(hub.requests)
    done = subprocess.run([*cli, "search", "a promo voucher got deducted repeatedly", "--json",
                           "--tuning", "bm25=0,entities=0,ppr=0,sections=0,notes=0,title=0"],
                          cwd=project, env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"][0]["id"] == "gotcha-coupon-applied-twice"
    assert len(hub.requests) == asked  # search never asks the hub
