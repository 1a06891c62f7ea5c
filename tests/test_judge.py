"""The local judge of `loremap verify`: an NLI cross-encoder (embed/nli.py) set with
`loremap judge enable --model NAME|PATH`, tested on a judge converted from the shipped MiniLM
(tests/nli_model.py: no NLI model ships in a Python package), in both the BERT and the RoBERTa
layouts, through the CLI, the MCP tool and a download from a stand-in hub."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from conftest import git
from loremap.embed.nli import NliModel
from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from nli_model import TESTED as FACTS
from nli_model import build, claims, fact_body, fact_title, labelled, roberta_copy
from test_embed_hub import Hub, hub  # noqa: F401 - the stand-in hub fixture


@pytest.fixture(scope="session")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The converted judge, built once for the whole run (shared by the xdist workers)."""
    base = tmp_path_factory.getbasetemp().parent
    folder = base / "nli-judge"
    with (base / "nli-judge.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "config.json").is_file():
            work = build(base / f"nli-judge.{os.getpid()}", labelled(FACTS))
            work.replace(folder)
    return folder


@pytest.fixture
def facts(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose memory holds the facts as decisions, and no code."""
    root = tmp_path / "facts"
    git(tmp_path, "init", "-q", str(root))
    monkeypatch.chdir(root)
    assert cli("init").code == 0
    for fact in FACTS:
        assert cli("remember", "-t", "decision", "--title", fact_title(fact),
                   "-m", fact_body(fact)).code == 0
    return root


def test_the_judge_reads_the_labels_of_its_config_and_judges_pairs(judge):
    model = NliModel(judge, "judge")
    assert model.labels == ("contradiction", "entailment", "neutral")
    fact = FACTS[0]
    said = claims(fact)
    found = model.infer([(f"{fact_title(fact)}.", said["supports"]),
                         (f"{fact_title(fact)}.", said["contradicts"]),
                         (f"{fact_title(fact)}.", said["unknown"])])
    assert found[0].entailment >= 0.8 and found[1].contradiction >= 0.6
    assert found[2].entailment < 0.8 and found[2].contradiction < 0.6


def test_the_roberta_layout_of_the_same_weights_gives_the_same_states_and_head(judge,
                                                                                tmp_path):
    import numpy as np

    bert = NliModel(judge, "bert")
    roberta = NliModel(roberta_copy(judge, tmp_path / "roberta"), "roberta")
    assert roberta.encoder.roberta and not bert.encoder.roberta
    texts = ["The cache is cleared every night.", "short", "a longer sentence " * 20]
    ids = [bert.encoder.tokenizer.encode(t).ids for t in texts]
    x_bert, mask = bert.encoder.hidden(ids)
    x_roberta, _ = roberta.encoder.hidden(ids)
    for row, seq in enumerate(ids):  # padded positions differ by design; the tokens agree
        np.testing.assert_allclose(x_roberta[row, :len(seq)], x_bert[row, :len(seq)],
                                   atol=2e-5)
    np.testing.assert_allclose(roberta._logits(x_roberta[:, 0]), bert._logits(x_bert[:, 0]),
                               atol=1e-4)
    assert mask.sum() == sum(len(seq) for seq in ids)


def test_verify_with_the_local_judge_supports_contradicts_and_stays_unknown(facts, judge, cli):
    config = facts / ".loremap" / "config.toml"
    done = cli("judge", "enable", "--model", str(judge), "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["labels"] == ["contradiction", "entailment", "neutral"]
    assert f'judge = "{judge}"' in config.read_text(encoding="utf-8")
    status = cli("judge", "status")
    assert status.code == 0 and str(judge) in status.out and "entailment" in status.out
    verdicts = {}
    for fact in FACTS:
        for truth, claim in claims(fact).items():
            found = json.loads(cli("verify", claim, "--json").out)
            assert found["judge"] == f"nli {judge}", claim
            assert found["evidence"] or truth == "unknown", claim  # on topic or not at all
            verdicts[claim] = (truth, found["verdict"], found["reason"])
    wrong = {c: v for c, v in verdicts.items() if v[0] != v[1]}
    assert wrong == {}
    true_claim = claims(FACTS[1])["supports"]
    assert verdicts[true_claim][2].startswith("note decision-the-login-token-expires")
    assert "expires after five minutes" in verdicts[true_claim][2]
    text = cli("verify", claims(FACTS[2])["contradicts"]).out
    assert text.startswith("contradicts (") and f"nli {judge})" in text.splitlines()[0]
    off = json.loads(cli("verify", "the moon is made of cheese", "--json").out)
    assert off["verdict"] == "unknown" and off["evidence"] == []
    assert cli("judge", "disable").code == 0
    assert json.loads(cli("verify", true_claim, "--json").out)["judge"] == "none"


def test_the_mcp_tool_uses_the_local_judge_before_the_client_s_model(facts, judge, cli):
    assert cli("judge", "enable", "--model", str(judge)).code == 0
    asked: list[str] = []
    out: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append("sampled")
        return types.CreateMessageResult(role="assistant", model="scripted",
                                         content=types.TextContent(type="text", text="{}"))

    async def main() -> None:
        async with Client(build_server(Projects(facts), "full"), mode="legacy",
                          sampling_callback=sampling) as c:
            result = await c.call_tool("verify", {"claim": claims(FACTS[0])["supports"]})
            out.append(result.content[0].text)

    anyio.run(main)
    assert out[0].startswith("supports (") and f"nli {judge})" in out[0] and asked == []


def test_a_judge_that_cannot_load_leaves_verify_unknown_and_says_so(facts, judge, cli,
                                                                      tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(judge, broken)
    assert cli("judge", "enable", "--model", str(broken)).code == 0
    (broken / "model.safetensors").write_bytes(b"not weights")
    done = cli("verify", claims(FACTS[0])["supports"], "--json")
    assert done.code == 0
    found = json.loads(done.out)
    assert found["verdict"] == "unknown" and found["judge"] == "none" and found["evidence"]
    assert found["reason"].startswith("the local judge cannot answer")
    assert any(w.startswith("degraded: ") and "cannot load" in w for w in found["warnings"])
    assert "degraded" in cli("judge", "status").out


@pytest.mark.parametrize("case", ["not-nli", "no-labels", "missing", "not-downloaded", "none",
                                  "model-with-status"])
def test_bad_judges_are_one_line_and_change_nothing(facts, judge, cli, tmp_path, case):
    from loremap.embed import local_model_folder

    config = facts / ".loremap" / "config.toml"
    before = config.read_bytes()
    argv = ["judge", "enable", "--model"]
    if case == "not-nli":  # the sentence encoder itself: a BertModel, no classifier
        argv.append(str(local_model_folder(tmp_path / "models")))
    elif case == "no-labels":
        other = tmp_path / "labels"
        shutil.copytree(judge, other)
        data = json.loads((other / "config.json").read_text(encoding="utf-8"))
        data["id2label"] = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
        (other / "config.json").write_text(json.dumps(data), encoding="utf-8")
        argv.append(str(other))
    elif case == "missing":
        argv.append(str(tmp_path / "nowhere"))
    elif case == "not-downloaded":
        argv = ["verify", "x"]
        config.write_text(config.read_text(encoding="utf-8")
                          + '\n[verify]\njudge = "owner/never-fetched"\n', encoding="utf-8")
        before = config.read_bytes()
    elif case == "none":
        argv = ["judge", "enable"]
    else:
        argv = ["judge", "status", "--model", str(judge)]
    done = cli(*argv)
    assert config.read_bytes() == before
    if case == "not-downloaded":  # verify goes on without the judge, and says why
        assert done.code == 0 and "loremap judge enable --model owner/never-fetched" in done.err
        return
    assert done.code == 1 and done.err.count("\n") == 1, done.err
    expected = {"not-nli": "not a sequence classifier", "no-labels": "not an NLI model",
                "missing": "no config.json", "none": "which judge?",
                "model-with-status": "--model goes with `enable`"}[case]
    assert expected in done.err


def test_a_judge_named_on_the_hub_downloads_only_when_enabled(
        facts, judge, hub: Hub, tmp_path):  # noqa: F811 - the fixture imported above
    hub.add("owner/tiny-nli", {p.name: p.read_bytes() for p in judge.iterdir() if p.is_file()})
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HF_") and not k.lower().endswith("_proxy")}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf-home"))

    def loremap(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "loremap", *argv], cwd=facts, env=env,
                              capture_output=True, text=True, timeout=300)

    claim = claims(FACTS[3])["supports"]
    before = len(hub.requests)
    done = loremap("verify", claim, "--json")  # not enabled: nothing downloads
    assert json.loads(done.stdout)["judge"] == "none" and len(hub.requests) == before
    done = loremap("judge", "enable", "--model", "owner/tiny-nli")
    assert done.returncode == 0, done.stderr
    assert "owner/tiny-nli" in done.stdout and len(hub.requests) > before
    found = json.loads(loremap("verify", claim, "--json").stdout)
    assert found["judge"] == "nli owner/tiny-nli" and found["verdict"] == "supports"


def test_a_judge_folder_in_the_project_is_named_from_its_root(facts, judge, cli, monkeypatch):
    shutil.copytree(judge, facts / "models" / "nli")
    done = cli("judge", "enable", "--model", "./models/nli")
    assert done.code == 0, done.err
    assert "a folder of this machine" not in done.err
    config = (facts / ".loremap" / "config.toml").read_text(encoding="utf-8")
    assert 'judge = "./models/nli"' in config
    (facts / "docs").mkdir()
    monkeypatch.chdir(facts / "docs")  # the setting is read from the root, not from here
    found = json.loads(cli("verify", claims(FACTS[1])["supports"], "--json").out)
    assert found["judge"] == "nli ./models/nli" and found["verdict"] == "supports"
    # The judge of the earlier test, outside the project, is named as it is, and said so.
    done = cli("judge", "enable", "--model", str(judge))
    assert done.code == 0 and f"config.toml now names {judge}, a folder of this machine" \
        in done.err
