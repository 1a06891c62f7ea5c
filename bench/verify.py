"""How right `loremap verify`'s verdicts are, per judge available here, on 100 labelled claims.

    python bench/verify.py [--json OUT]

A project's memory holds 30 facts as decision notes (tests/nli_model.py: a title, and a body
that restates the fact and adds an unrelated sentence). The 100 claims: for each fact, one it
supports (a paraphrase, "It is true that ..."), one it contradicts (a negation) and one on the
same subject that it neither supports nor contradicts — 90 — and 10 claims about nothing in
the memory. Each is verified through `use/verify.verify`, the path of the CLI and the MCP tool.

The judges:
- `none` — no judge, the default install: every verdict is `unknown` with the evidence;
- `device` — the tests' judge (tests/nli_model.py): MiniLM with a classifier fitted on the
  pairs of the first 8 facts. Its figures on those 8 (held in) and on the other 22 (held out)
  are printed apart: held in, it checks the judge's path; held out, it shows what a probe
  over a frozen sentence encoder is worth as a judge (nothing to ship).
A real NLI cross-encoder (`loremap judge enable --model cross-encoder/nli-distilroberta-base`)
or the client's own model through MCP sampling are the judges a user runs; neither can be
fetched or asked here, so neither is scored.

Per judge and split: precision and recall of `supports` and of `contradicts` (with counts),
and the share of verdicts `unknown`. The build of the device is timed; so is a verify (median).
Exit status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from nli_model import FACTS, TESTED, build, claims, fact_body, fact_title, labelled  # noqa: E402

OFF_TOPIC = ["The moon is made of cheese.", "Tulips bloom in April.",
             "A marathon is forty-two kilometres long.", "Cats purr when they are calm.",
             "Green tea is brewed below boiling.", "Saturn has rings of ice.",
             "The bicycle was invented in Germany.", "Bees make honey from nectar.",
             "Chess openings start with the pawns.", "Sea turtles live for decades."]


def labelled_claims() -> list[tuple[str, str, str]]:
    """(claim, truth, split) for the 100 claims."""
    out = []
    for fact in FACTS:
        split = "held in" if fact in TESTED else "held out"
        out += [(claim, truth, split) for truth, claim in claims(fact).items()]
    return out + [(claim, "unknown", "off topic") for claim in OFF_TOPIC]


def score(rows: Sequence[tuple[str, str]]) -> dict[str, object]:
    """(truth, verdict) pairs -> precision/recall of supports and contradicts, unknown share."""
    out: dict[str, object] = {"claims": len(rows)}
    for verdict in ("supports", "contradicts"):
        said = [t for t, v in rows if v == verdict]
        true = [v for t, v in rows if t == verdict]
        hits = sum(1 for t in said if t == verdict)
        out[verdict] = {"said": len(said), "right": hits,
                        "precision": round(hits / len(said), 3) if said else None,
                        "recall": round(hits / len(true), 3) if true else None}
    out["unknown"] = round(sum(1 for _, v in rows if v == "unknown") / len(rows), 3)
    return out


def project(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {**os.environ, "LOREMAP_HOME": str(root.parent / "home"), "LOREMAP_DAEMON": "off"}
    run = [sys.executable, "-m", "loremap"]
    subprocess.run([*run, "init"], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    for fact in FACTS:
        subprocess.run([*run, "remember", "-t", "decision", "--title", fact_title(fact),
                        "-m", fact_body(fact)], cwd=root, env=env, check=True,
                       stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="loremap-bench-verify-"))
    os.environ.update(LOREMAP_HOME=str(work / "home"), LOREMAP_DAEMON="off")
    started = time.perf_counter()
    device = build(work / "judge", labelled(TESTED))
    built = time.perf_counter() - started
    project(work / "repo")

    from loremap.app import App
    from loremap.config import Settings
    from loremap.use.fresh import NEVER
    from loremap.use.verify import verify

    figures: dict[str, object] = {"device_build_s": round(built, 1)}
    cases = labelled_claims()
    for judge in ("none", "device"):
        rows: dict[str, list[tuple[str, str]]] = {}
        seconds = []
        with App.open(work / "repo") as app:
            app.settings = Settings({**app.settings.values,
                                     "verify.judge": str(device) if judge == "device" else ""})
            verify(app, cases[0][0], NEVER)  # the judge loads once, as in a server
            for claim, truth, split in cases:
                t0 = time.perf_counter()
                done = verify(app, claim, NEVER)
                seconds.append(time.perf_counter() - t0)
                rows.setdefault(split, []).append((truth, done.verdict))
                rows.setdefault("all", []).append((truth, done.verdict))
        figures[judge] = {"verify_p50_ms": round(statistics.median(seconds) * 1000, 1),
                          **{split: score(r) for split, r in rows.items()}}
    print(f"device built in {built:.1f} s (fitted on the pairs of {len(TESTED)} facts)")
    for judge in ("none", "device"):
        data = figures[judge]
        assert isinstance(data, dict)
        print(f"\njudge {judge}: verify p50 {data['verify_p50_ms']} ms")
        for split in ("held in", "held out", "off topic", "all"):
            s = data[split]
            parts = [f"{split:>9} ({s['claims']} claims):"]
            for verdict in ("supports", "contradicts"):
                v = s[verdict]
                p = "-" if v["precision"] is None else f"{v['precision']:.0%}"
                r = "-" if v["recall"] is None else f"{v['recall']:.0%}"
                parts.append(f"{verdict} precision {p} ({v['right']}/{v['said']}) recall {r};")
            parts.append(f"unknown {s['unknown']:.0%}")
            print(" ".join(parts))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
