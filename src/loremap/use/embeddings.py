"""Embeddings as a user manages them: `enable` (a model on request included), `status`,
`reembed`, `disable`, and `embed_for_recall`, the bounded step a search takes before it answers.

The CLI (`loremap embed ...`, `loremap reembed`, `loremap index`) and the recall path call
these; each covers the project's index and, on a shared database, the personal notes' own.
Switching models (`embed enable`) and a full `reembed` drop the other models' vectors (derived
data, never compared with another model's); `reembed --stale-only`, `index` and a search never
do, so on a shared database a clone that names another model wipes nobody's. A vector of the
wrong dimension is refused by the store, which names `loremap reembed`. Long jobs run the model
in a worker per core (`embed/pooled.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from loremap.config import CONFIG_FILE, Settings
from loremap.errors import EmbedderUnavailable, InvalidInput, NotFound
from loremap.use.settings import write_setting

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.embed.pooled import Pooled
    from loremap.search.embed import Embedder, Source
    from loremap.store import IndexStore

Progress = Callable[[int, int], None]


class Coverage(NamedTuple):
    """One index's vectors as `loremap embed status` shows them."""

    scope: str  # "project" or "personal"
    nodes: int
    embedded: int  # nodes with a vector of the configured model
    others: list[tuple[str, int, int]]  # (model, dim, nodes) of other models
    broken: int
    dim: int | None


class Status(NamedTuple):
    embedder: str  # the setting, "" when off
    model: str | None  # the name recorded with its vectors
    problem: str | None  # why it cannot be used here, if it cannot
    coverage: list[Coverage]


class Embedded(NamedTuple):
    model: str
    nodes: int
    seconds: float
    warnings: tuple[str, ...] = ()  # what enabling it left to say (a folder of this machine)
    embedder: str = ""  # the setting `enable` wrote (a folder as it is named from the root)


def status(app: App) -> Status:
    spec = app.settings.get_str("search.embedder")
    embedder, problem = None, None
    if spec:
        try:
            embedder = _load(app)
        except (EmbedderUnavailable, InvalidInput) as exc:
            problem = str(exc)
    model = embedder.name if embedder is not None else None
    coverage = []
    for label, store in _stores(app, reconcile=True):
        models = store.vector_models()
        mine = [m for m in models if m[0] == model]
        coverage.append(Coverage(label, store.node_count(), mine[0][2] if mine else 0,
                                 [m for m in models if m[0] != model], store.broken_vectors(),
                                 mine[0][1] if mine else None))
    return Status(spec, model, problem, coverage)


def enable(app: App, model: str | None, progress: Progress | None = None,
           download_progress: bool = True) -> Embedded:
    """Turn the vector list on with `model` (None: `local`), downloading a Hub model first
    when one is named, and embed every note and file. The setting is written to the project's
    config.toml only once the model has answered."""
    spec = (model or "local").strip()
    if app.loremap_dir is None:
        raise NotFound("no loremap project here: run `loremap init` in the repository")
    from loremap.embed import is_hub_name, portable

    if is_hub_name(spec):
        from loremap.embed.hub import fetch

        fetch(spec, app.user.models, progress=download_progress)
    # The setting (and the vectors' model name) is committed: a folder is named from the
    # project's root when it is in it, so every clone finds it and shares the vectors.
    spec, warning = portable(spec, app.root)
    embedder = _load(app, spec)
    embedder.embed_query("loremap")  # it loads and answers, or the setting stays as it was
    write_setting(app.loremap_dir / CONFIG_FILE, "search.embedder", spec)
    app.settings = _with(app, spec)
    app.reset_embedder()
    done = reembed(app, stale_only=True, progress=progress, embedder=embedder,
                   drop_others=True)
    return done._replace(embedder=spec, warnings=(warning,) if warning else ())


def disable(app: App) -> int:
    """Turn the vector list off and drop every vector; returns how many nodes had one."""
    if app.loremap_dir is None:
        raise NotFound("no loremap project here: run `loremap init` in the repository")
    write_setting(app.loremap_dir / CONFIG_FILE, "search.embedder", "")
    dropped = 0
    for _, store in _stores(app):
        dropped += sum(n for _, _, n in store.vector_models())
        with store.write():
            store.drop_vectors(None)
    app.settings = _with(app, "")
    app.reset_embedder()
    return dropped


def reembed(app: App, stale_only: bool = False, progress: Progress | None = None,
            embedder: Embedder | None = None, drop_others: bool | None = None) -> Embedded:
    """Embed every node again with the configured model (`stale_only`: only the nodes that
    have no vector of it; `embedder`: that model already loaded). Other models' vectors are
    dropped by a full reembed and by `embed enable` (`drop_others`), never by `--stale-only`
    alone: on a shared database a teammate whose clone names another model must not wipe the
    project's vectors with a `loremap index`. Nothing is dropped before the model has
    answered (a server down drops nothing)."""
    if drop_others is None:
        drop_others = not stale_only
    if embedder is None:
        embedder = _load(app)
        embedder.embed_query("loremap")
    started = time.perf_counter()
    stores = [store for _, store in _stores(app, reconcile=True)]
    for store in stores:
        with store.write():
            for other, _, _ in store.vector_models():
                if other == embedder.name and not stale_only or \
                        other != embedder.name and drop_others:
                    store.drop_vectors(other)
    pooled = _pooled(app, embedder, stores)
    done = 0
    try:
        for store in stores:
            done += _embed_all(store, pooled or embedder, progress, app.source())
    finally:
        if pooled is not None:
            pooled.close()
    return Embedded(embedder.name, done, time.perf_counter() - started)


POOL_FROM = 256  # nodes waiting before a reembed runs the model in a process per core


def _pooled(app: App, embedder: Embedder, stores: list[IndexStore]) -> Pooled | None:
    """A pool of the model's workers when there is enough to embed and more than one core."""
    import os

    from loremap.embed.bert import BertEncoder

    if not isinstance(embedder, BertEncoder):
        return None  # hash is instant; an endpoint waits on its server, not on our cores
    workers = app.settings.get_int("embed.workers") or min(4, os.cpu_count() or 1)
    if workers < 2 or sum(_missing(store, embedder.name) for store in stores) < POOL_FROM:
        return None
    from loremap.embed.pooled import Pooled

    return Pooled(embedder, app.settings.get_str("search.embedder"), app.embed_settings(),
                  workers)


def _embed_all(store: IndexStore, embedder: Embedder, progress: Progress | None,
               read: Source | None) -> int:
    from loremap.search.embed import embed_pending

    total = _missing(store, embedder.name)
    counted = [0]

    def step(n: int) -> None:
        counted[0] += n
        if progress is not None:
            progress(counted[0], total)

    return embed_pending(store, embedder, progress=step, source=read)


def embed_new(app: App, progress: Progress | None = None) -> tuple[int, list[str]]:
    """After `loremap index`: embed what has no vector yet when vectors are on; a model that
    cannot answer is a warning, not a failed index."""
    if not app.settings.get_str("search.embedder"):
        return 0, []
    try:
        return reembed(app, stale_only=True, progress=progress).nodes, []
    except (EmbedderUnavailable, InvalidInput) as exc:
        return 0, [f"degraded: nothing embedded ({exc})"]


def embed_for_recall(app: App) -> list[str]:
    """Before a search answers: embed up to `embed.recall_batch` nodes that have no vector
    (a note just written, a file just indexed); say so when more are left. The embedder's
    own failures become the answer's `degraded` warning (`App.embed_degraded`)."""
    embedder = app.embedder()
    if embedder is None:
        return []
    from loremap.search.embed import embed_pending

    most = app.settings.get_int("embed.recall_batch")
    left = 0
    for _, store in _stores(app):
        if not store.missing_vectors(embedder.name, 1):
            continue
        try:
            embed_pending(store, embedder, most=most, source=app.source())
        except EmbedderUnavailable:
            return []
        left += _missing(store, embedder.name)
    if left:
        return [f"{left} notes and files have no vector yet (the vector list leaves them "
                "out): `loremap reembed --stale-only` embeds them"]
    return []


def overridden(spec: str) -> list[str]:
    """A warning when the environment's `LOREMAP_EMBEDDER` outranks the setting just written."""
    import os

    value = os.environ.get("LOREMAP_EMBEDDER", "")
    if value and value.strip() != spec:
        return [f"LOREMAP_EMBEDDER={value} in this environment overrides the setting"]
    return []


def _missing(store: IndexStore, model: str) -> int:
    have = sum(n for name, _, n in store.vector_models() if name == model)
    return max(0, store.node_count() - have)


def _stores(app: App, reconcile: bool = False) -> Iterator[tuple[str, IndexStore]]:
    """The project's index and the personal notes' own (on a shared database), the latter
    first brought in line with its files when `reconcile` (a recall has done that already)."""
    yield "project", app.store
    personal = app.personal_index()
    if personal is not None:
        if reconcile:
            personal.reconcile()
        yield "personal", personal.store


def _load(app: App, spec: str | None = None) -> Embedder:
    """The embedder `spec` (default: the setting) names, errors raised (not degraded)."""
    from loremap.embed import make_embedder

    spec = app.settings.get_str("search.embedder") if spec is None else spec
    embedder = make_embedder(spec, app.memory.analyzer, app.embed_settings())
    if embedder is None:
        raise InvalidInput("no embedder is configured: run `loremap embed enable` (the "
                           "shipped model) or `loremap embed enable --model NAME`")
    return embedder


def _with(app: App, spec: str) -> Settings:

    values = dict(app.settings.values)
    values["search.embedder"] = spec
    return Settings(values)
