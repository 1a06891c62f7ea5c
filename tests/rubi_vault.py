"""A Rubi vault for the tests, written in Rubi's documented format (Rubi has no installable
release): `conhecimento/*.md` nodes with Portuguese frontmatter and a `## Ligações` section,
`handoffs/*.md`; a superseded decision and its successor among them."""

from __future__ import annotations

from pathlib import Path

NODES = {
    "usar-cookies-de-sessao": """---
tipo: decisao
titulo: Usar cookies de sessão para autenticação
status: substituido
arquivos: [src/auth/login.ts]
criado: 2026-01-10
commit: 1a2b3c4
tags: [auth]
---
# Usar cookies de sessão para autenticação

As sessões ficam guardadas no servidor, num armazenamento compartilhado.
""",
    "usar-jwt": """---
tipo: decisão
titulo: Usar JWT em vez de cookies de sessão
status: ativo
arquivos: [src/auth/login.ts]
liga:
  - {rel: sobre, alvo: conceito-autenticacao}
substitui: usar-cookies-de-sessao
criado: 2026-03-01
commit: 5d6e7f8
tags: [auth, jwt]
---
# Usar JWT em vez de cookies de sessão

Sem estado: o serviço roda na borda sem guardar sessões em lugar nenhum.

## Ligações
- causa [[armadilha-relogio-do-token]]
""",
    "conceito-autenticacao": """---
tipo: conceito
titulo: Autenticação do painel
status: ativo
---
# Autenticação do painel

O painel autentica cada requisição pelo cabeçalho Authorization.
""",
    "armadilha-relogio-do-token": """---
tipo: armadilha
status: ativo
arquivos: [src/auth/login.ts]
---
# Relógio do servidor adianta e o token expira cedo

Com o relógio adiantado, tokens recém-emitidos já chegam expirados: sincronize o NTP.
""",
    "Procedimento_Publicar": """---
tipo: procedimento
titulo: Publicar uma versão nova
sucessos: 3
falhas: 1
---
Rode `make release`, confira o changelog e empurre a tag.
""",
}

HANDOFFS = {
    "2026-03-02T18-00-00Z": """---
data: 2026-03-02T18:00:00Z
---
# Migração do login para JWT

Feito: o login emite JWT. Falta: revogar os tokens antigos nas sessões abertas.
""",
}


def write_vault(root: Path, nodes: dict[str, str] | None = None,
                handoffs: dict[str, str] | None = None) -> Path:
    """A `.rubi/` folder under `root` with `nodes` (file stem -> text) and `handoffs`."""
    rubi = root / ".rubi"
    (rubi / "conhecimento").mkdir(parents=True, exist_ok=True)
    (rubi / "handoffs").mkdir(parents=True, exist_ok=True)
    for stem, text in (NODES if nodes is None else nodes).items():
        (rubi / "conhecimento" / f"{stem}.md").write_text(text, encoding="utf-8")
    for stem, text in (HANDOFFS if handoffs is None else handoffs).items():
        (rubi / "handoffs" / f"{stem}.md").write_text(text, encoding="utf-8")
    return rubi


def node(slug: str, tipo: str, title: str, body: str, **keys: str) -> tuple[str, str]:
    """One node file's (stem, text)."""
    extra = "".join(f"{key}: {value}\n" for key, value in keys.items())
    return slug, f"---\ntipo: {tipo}\ntitulo: {title}\n{extra}---\n# {title}\n\n{body}\n"
