"""What `loremap import rubi` costs on a large vault, beside a `loremap reindex` of the same notes.

    python bench/imports.py [--nodes 2000] [--rounds 3]

A Rubi vault of `--nodes` generated nodes (Portuguese text, links between them, one node in
ten superseding another, a handoff for every fifty) is imported into a fresh project each
round, through the CLI as a person runs it: the dry run, the first import, a second import of
the unchanged vault (which writes nothing), and, as the baseline measured in the same round,
`loremap reindex` of the vault the import wrote (the index rebuilt from the same notes). The
medians are printed with their ratio to the reindex. Nothing here is a test: no time is
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("sessão token cookie borda servidor cliente banco índice consulta cache fila "
         "mensagem erro falha deploy versão tag relógio assinatura chave rota painel "
         "usuário permissão lote arquivo registro migração esquema coluna tabela").split()
TIPOS = ("decisao", "armadilha", "conceito", "bug", "procedimento")
RELS = ("sobre", "causa", "corrige", "depende_de", "relaciona")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(root: Path, nodes: int, seed: int = 7) -> Path:
    """A `.rubi/` vault of `nodes` nodes and `nodes // 50` handoffs under `root`."""
    rng = random.Random(seed)
    rubi = root / ".rubi"
    (rubi / "conhecimento").mkdir(parents=True)
    (rubi / "handoffs").mkdir()
    for i in range(nodes):
        tipo = TIPOS[i % len(TIPOS)]
        links = "".join(f"  - {{rel: {rng.choice(RELS)}, alvo: no-{rng.randrange(nodes)}}}\n"
                        for _ in range(rng.randrange(3)))
        supersedes = f"substitui: no-{i - 1}\n" if i % 10 == 9 and tipo == TIPOS[(i - 1) % 5] \
            else ""
        status = "substituido" if i % 10 == 8 else "ativo"
        title = f"{sentence(rng, 5)[:-1]} {i}"
        body = "\n\n".join(sentence(rng, 18) for _ in range(3))
        (rubi / "conhecimento" / f"no-{i}.md").write_text(
            f"---\ntipo: {tipo}\ntitulo: {title}\nstatus: {status}\n"
            + (f"liga:\n{links}" if links else "") + supersedes
            + f"criado: 2026-0{1 + i % 9}-1{i % 10}\ntags: [{rng.choice(WORDS)}]\n---\n"
            + f"# {title}\n\n{body}\n\n## Ligações\n- relaciona [[no-{rng.randrange(nodes)}]]\n",
            encoding="utf-8")
    for i in range(nodes // 50):
        (rubi / "handoffs" / f"2026-03-{1 + i % 28:02d}T1{i % 10}-00-00Z-{i}.md").write_text(
            f"---\ndata: 2026-03-{1 + i % 28:02d}\n---\n# Sessão {i}\n\n{sentence(rng, 30)}\n",
            encoding="utf-8")
    return rubi


def loremap(cwd: Path, env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "loremap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"loremap {' '.join(args)} failed: {done.stderr.strip()}")
    return seconds, done.stdout


def one_round(work: Path, rubi: Path) -> dict[str, float]:
    repo = work / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {**os.environ, "LOREMAP_HOME": str(work / "home"), "LOREMAP_DAEMON": "off"}
    loremap(repo, env, "init")
    out: dict[str, float] = {}
    out["dry run"], text = loremap(repo, env, "import", "rubi", str(rubi), "--dry-run",
                                   "--json")
    planned = json.loads(text)["counts"]["new"]
    out["first import"], text = loremap(repo, env, "import", "rubi", str(rubi), "--json")
    assert json.loads(text)["counts"]["new"] == planned
    out["re-import"], text = loremap(repo, env, "import", "rubi", str(rubi), "--json")
    assert json.loads(text)["counts"]["unchanged"] == planned
    out["reindex (baseline)"], _ = loremap(repo, env, "reindex")
    out["notes"] = planned
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loremap-bench-imports-") as tmp:
        rubi = generate(Path(tmp) / "source", args.nodes)
        rounds = []
        for n in range(args.rounds):
            work = Path(tmp) / f"round-{n}"
            work.mkdir()
            rounds.append(one_round(work, rubi))
    notes = int(rounds[0]["notes"])
    base = statistics.median(r["reindex (baseline)"] for r in rounds)
    print(f"Rubi vault: {args.nodes} nodes + {args.nodes // 50} handoffs -> {notes} notes; "
          f"median of {args.rounds} rounds, each in a fresh project, CLI process included")
    for key in ("dry run", "first import", "re-import", "reindex (baseline)"):
        median = statistics.median(r[key] for r in rounds)
        print(f"  {key:<20} {median:7.2f} s  {notes / median:8.0f} notes/s  "
              f"{median / base:5.2f} x reindex")


if __name__ == "__main__":
    main()
