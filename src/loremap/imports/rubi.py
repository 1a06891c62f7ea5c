"""The Rubi reader: a `.rubi/` folder (or a personal `_pessoal` folder) as importer items.

A Rubi vault keeps one markdown file per knowledge node in `conhecimento/` and the sessions'
handoffs in `handoffs/`. A node's YAML frontmatter says (in Portuguese) what it is:

```markdown
---
id: usar-jwt                       # optional: the file name's stem otherwise
tipo: decisao                      # decisao, armadilha, conceito, bug, procedimento, erro, ...
titulo: Usar JWT em vez de cookies # optional: the first `# ` heading, else the id
status: ativo                      # ativo, substituido, arquivado, ...
arquivos: [src/auth/login.ts]
liga:
  - {rel: sobre, alvo: conceito-autenticacao}
substitui: usar-cookies-de-sessao
commit: a1b2c3d
criado: 2026-03-01
tags: [auth]
---
# Usar JWT em vez de cookies

Sem estado: roda na borda sem guardar sessões.

## Ligações
- sobre [[conceito-autenticacao]]
- causa [[bug-sessao-expirada]]
```

Each node becomes an `Item` (its id kept as the slug it asks for); each handoff an episode
note (loremap's handoffs are the one open hand-over between sessions of this clone, while an
imported handoff is history: what a past session did and left, found by search with its
date). A node of an unknown `tipo` is skipped with the reason; a file that is a symlink is
refused (never followed, inside the folder or out of it), as is a folder linked out of the
source; malformed YAML is one line naming the file, the rest imported; a file over
`markdown.MAX_FILE_BYTES` is not read.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loremap.errors import InvalidInput
from loremap.imports.items import Item, Skipped
from loremap.imports.markdown import read_markdown

if TYPE_CHECKING:
    from loremap.imports.run import Entry

TOOL = "rubi"
TYPES = {
    "decisao": "decision", "decision": "decision", "convencao": "decision",
    "armadilha": "gotcha", "gotcha": "gotcha", "licao": "gotcha", "cuidado": "gotcha",
    "conceito": "concept", "concept": "concept", "padrao": "concept", "arquitetura": "concept",
    "glossario": "concept", "bug": "bug", "defeito": "bug",
    "procedimento": "procedure", "procedure": "procedure", "receita": "procedure",
    "como_fazer": "procedure", "erro": "error", "error": "error",
    "episodio": "episode", "episode": "episode", "sessao": "episode",
    "preferencia": "preference", "preference": "preference",
}
STATUSES = {
    "ativo": "active", "ativa": "active", "active": "active", "vigente": "active",
    "rascunho": "active", "substituido": "superseded", "substituida": "superseded",
    "superseded": "superseded", "obsoleto": "superseded", "arquivado": "archived",
    "arquivada": "archived", "archived": "archived", "descartado": "archived",
    "resolvido": "archived", "quarentena": "quarantined", "quarantined": "quarantined",
}
RELATIONS = {
    "sobre": "about", "about": "about", "afeta": "affects", "affects": "affects",
    "substitui": "supersedes", "supersedes": "supersedes", "causa": "causes",
    "causes": "causes", "corrige": "fixes", "conserta": "fixes", "resolve": "fixes",
    "fixes": "fixes", "depende": "depends_on", "depende_de": "depends_on",
    "depends_on": "depends_on", "parte_de": "part_of", "part_of": "part_of",
    "relaciona": "relates", "relacionado": "relates", "relacionada": "relates",
    "ver": "relates", "veja": "relates", "relates": "relates",
}
_LINK_LINE = re.compile(r"-\s+([\w-]+)\s+\[\[([^\]|]+)(?:\|[^\]]*)?\]\]\s*")
_HEADING = re.compile(r"#\s+(.+)")
_LIGACOES = "ligacoes"


def fold(word: str) -> str:
    """`word` lowercased without accents, spaces and `-` as `_` ("Decisão" -> "decisao")."""
    text = unicodedata.normalize("NFKD", str(word).strip().lower())
    return "".join(c for c in text if not unicodedata.combining(c)).replace("-", "_").replace(
        " ", "_")


def read_vault(path: Path) -> Iterator[Entry]:
    """Every node and handoff of the Rubi vault at `path` (a repository holding `.rubi/`, the
    `.rubi/` folder itself, or a `_pessoal` folder, whose notes are personal)."""
    root = path / ".rubi" if (path / ".rubi").is_dir() else path
    if not root.is_dir():
        raise InvalidInput(f"{path} is not a folder (give a .rubi/ folder or a repository "
                           "holding one)")
    personal = root.name == "_pessoal" or "_pessoal" in root.parts
    nodes = root / "conhecimento"
    if not nodes.is_dir() and not (root / "handoffs").is_dir():
        if not personal:
            raise InvalidInput(f"{root} is not a Rubi vault: it has no conhecimento/ or "
                               "handoffs/ folder")
        nodes = root
    for folder, handoff in ((nodes, False), (root / "handoffs", True)):
        if not folder.is_dir() and not folder.is_symlink():
            continue
        where = _rel(folder, root)
        if folder.is_symlink() or _outside(folder, root):
            yield Skipped(where, f"refused: a symlink to {os.readlink(folder)}; loremap does "
                          "not follow links out of the source folder")
            continue
        for file in sorted(folder.iterdir()):
            if file.suffix == ".md" and not file.name.startswith("."):
                yield from _read_file(file, root, handoff, personal)


def _outside(folder: Path, root: Path) -> bool:
    real, base = os.path.realpath(folder), os.path.realpath(root)
    return not (real == base or real.startswith(base.rstrip(os.sep) + os.sep))


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:  # pragma: no cover - every path listed is under root
        return str(path)


def _read_file(file: Path, root: Path, handoff: bool, personal: bool) -> Iterator[Entry]:
    where = _rel(file, root)
    read = read_markdown(file, where)
    if isinstance(read, Skipped):
        yield read
        return
    meta, rest = read
    yield from (_handoff(meta, rest, file, where, personal) if handoff
                else _node(meta, rest, file, where, personal))

def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(s for s in (_text(v) for v in value) if s)
    return tuple(s.strip() for s in str(value).split(",") if s.strip())


def _split(rest: str) -> tuple[str | None, str, list[tuple[str, str]]]:
    """(the first `# ` heading, the body without it and without `## Ligações`, the section's
    (relation, target) lines)."""
    lines = rest.strip("\n").split("\n")
    title = None
    if lines and (heading := _HEADING.fullmatch(lines[0].strip())):
        title, lines = heading[1].strip(), lines[1:]
    links: list[tuple[str, str]] = []
    kept: list[str] = []
    in_links = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("## "):
            in_links = fold(stripped[3:]) == _LIGACOES
            if in_links:
                continue
        if in_links:
            match = _LINK_LINE.fullmatch(stripped)
            if match:
                links.append((match[1], match[2].strip()))
                continue
            if not stripped:
                continue
        kept.append(line)
    return title, "\n".join(kept).strip(), links


def _node(meta: dict[str, Any], rest: str, file: Path, where: str, personal: bool
          ) -> Iterator[Entry]:
    slug = _text(meta.get("id")) or file.stem
    heading, body, section = _split(rest)
    title = _text(meta.get("titulo") or meta.get("title")) or heading or slug
    tipo = _text(meta.get("tipo") or meta.get("type"))
    kind = TYPES.get(fold(tipo))
    if kind is None:
        known = "decisao, armadilha, conceito, bug, procedimento, erro, episodio, preferencia"
        yield Skipped(where, f"unknown tipo {tipo!r} (" + ("none given" if not tipo else
                      "no loremap type for it") + f"): use one of {known} (docs/import.md)", slug)
        return
    raw_status = _text(meta.get("status")) or "ativo"
    status = STATUSES.get(fold(raw_status))
    if status is None:
        yield Skipped(where, f"unknown status {raw_status!r}: imported as active", slug)
        status = "active"
    links: list[tuple[str, str]] = []
    declared = meta.get("liga") or meta.get("links") or []
    pairs = [(_text(link.get("rel")), _text(link.get("alvo") or link.get("target")))
             for link in declared if isinstance(link, dict)] if isinstance(declared, list) else []
    if not isinstance(declared, list) or len(pairs) != len(declared):
        yield Skipped(where, "liga: each link is {rel: ..., alvo: ...} (the others are "
                      "left out)", slug)
    supersedes = _text(meta.get("substitui")) or None
    for rel, target in [*pairs, *section]:
        relation = RELATIONS.get(fold(rel))
        if not target:
            continue
        if relation is None:
            yield Skipped(where, f"unknown relation {rel!r} -> {target}: kept as relates",
                          slug)
            relation = "relates"
        if relation == "supersedes":
            supersedes = supersedes or target
            continue
        links.append((relation, target))
    mine = _personal_origin if personal else _same
    links = [(rel, mine(target)) for rel, target in links]
    yield Item(TOOL, mine(slug), kind, title, body=body, status=status,
               files=_strings(meta.get("arquivos") or meta.get("files")),
               links=tuple(dict.fromkeys(links)),
               supersedes=mine(supersedes) if supersedes else None,
               tags=_strings(meta.get("tags")), recorded_at=_text(meta.get("criado")
                                                                  or meta.get("data")) or None,
               commit=_text(meta.get("commit")) or None,
               successes=_count(meta.get("sucessos")), failures=_count(meta.get("falhas")),
               error=_text(meta.get("mensagem") or meta.get("erro")) if kind == "error" else "",
               remedy=_text(meta.get("remedio") or meta.get("solucao")) or None
               if kind == "error" else None,
               slug=slug, where=where, personal=personal)


def _same(origin: str) -> str:
    return origin


def _personal_origin(origin: str) -> str:
    """A personal node's origin: its own namespace (a project node may have its slug)."""
    return origin if "/" in origin or "." in origin else f"_pessoal/{origin}"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _handoff(meta: dict[str, Any], rest: str, file: Path, where: str, personal: bool
             ) -> Iterator[Entry]:
    heading, body, _ = _split(rest)
    day = _text(meta.get("data") or meta.get("criado")) or None
    title = _text(meta.get("titulo")) or heading or f"Handoff {day or file.stem}"
    slug = f"handoff-{file.stem}"
    origin = f"_pessoal/handoffs/{file.stem}" if personal else f"handoffs/{file.stem}"
    yield Item(TOOL, origin, "episode", title, body=body,
               tags=("handoff", *_strings(meta.get("tags"))), recorded_at=day,
               commit=_text(meta.get("commit")) or None,
               files=_strings(meta.get("arquivos")), slug=slug.lower(), where=where,
               personal=personal)
