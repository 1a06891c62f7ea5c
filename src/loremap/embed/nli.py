"""A natural-language-inference cross-encoder run in numpy: how much a premise entails or
contradicts a hypothesis, the local judge of `loremap verify` (use/verify.py).

The model is a BERT- or RoBERTa-shaped `*ForSequenceClassification` in the Hugging Face layout
(`config.json` with its `id2label`, `model.safetensors`, `tokenizer.json`), such as the
sentence-transformers cross-encoders `cross-encoder/nli-distilroberta-base` or
`cross-encoder/nli-MiniLM2-L6-H768`, downloaded only when the user names it
(`loremap judge enable --model NAME`), or a folder of one. The pair is encoded as the model's
tokenizer pairs it (`[CLS] premise [SEP] hypothesis [SEP]`, `<s> premise </s></s> hypothesis
</s>`), truncated longest first; the stack is `bert.Encoder`'s; the head is the one the
architecture names: BERT's pooler (tanh of a dense layer over the first token) then its
classifier, RoBERTa's `classifier.dense` (tanh) then `classifier.out_proj`. The labels are read
from `id2label` (an `entailment` and a `contradiction` label are required; DeBERTa models, the
other common NLI family, are refused by the stack in one line).

No NLI model ships in a Python package, so the tests run this on a judge they convert from the
shipped MiniLM: its encoder and pooler, and a classifier fitted in the test on labelled pairs
(`tests/nli_model.py`). The head's arithmetic is also held to a RoBERTa copy of the same weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.embed.bert import BATCH, Encoder, _read_json
from loremap.errors import EmbedderUnavailable

if TYPE_CHECKING:
    from loremap.embed.bert import Matrix

MAX_TOKENS = 320  # a premise sentence or two and a claim


class Inference(NamedTuple):
    """Probabilities that the premise entails / contradicts the hypothesis."""

    entailment: float
    contradiction: float


class NliModel:
    """A cross-encoder's entailment and contradiction probabilities for sentence pairs."""

    def __init__(self, folder: Path, name: str) -> None:
        config = _read_json(folder / "config.json")
        kinds = [str(a) for a in config.get("architectures") or []]
        if not any(a.endswith("ForSequenceClassification") for a in kinds):
            raise EmbedderUnavailable(f"judge {name}: not a sequence classifier "
                                      f"({', '.join(kinds) or 'no architecture'}); an NLI "
                                      "cross-encoder is (e.g. cross-encoder/nli-distilroberta-"
                                      "base)")
        named = config.get("id2label") or {}
        labels = {str(v).lower(): int(k) for k, v in named.items()}
        self.labels = tuple(str(named[k]) for k in sorted(named, key=int))
        self.entail = next((i for label, i in labels.items() if label.startswith("entail")),
                           None)
        self.contra = next((i for label, i in labels.items() if label.startswith("contra")),
                           None)
        if self.entail is None or self.contra is None:
            raise EmbedderUnavailable(f"judge {name}: its labels ({', '.join(labels) or 'none'}) "
                                      "name no entailment and contradiction: not an NLI model")
        self.encoder = Encoder(folder, name, MAX_TOKENS)
        self.encoder.tokenizer.enable_truncation(max_length=self.encoder.max_tokens,
                                                 strategy="longest_first")
        self.name = name
        head, w = self.encoder.head, self.encoder.w
        try:
            if self.encoder.roberta:
                self.dense = (head["classifier.dense.weight"], head["classifier.dense.bias"])
                self.out = (head["classifier.out_proj.weight"], head["classifier.out_proj.bias"])
            else:
                self.dense = (w["pooler.dense.weight"], w["pooler.dense.bias"])
                self.out = (head["classifier.weight"], head["classifier.bias"])
        except KeyError as exc:
            raise EmbedderUnavailable(f"judge {name}: {folder} has no classification head "
                                      f"({exc.args[0]} is missing)") from None
        if self.out[0].shape[0] != len(labels):
            raise EmbedderUnavailable(f"judge {name}: {self.out[0].shape[0]} outputs for "
                                      f"{len(labels)} labels")

    def infer(self, pairs: Sequence[tuple[str, str]]) -> list[Inference]:
        """(premise, hypothesis) pairs -> their entailment and contradiction probabilities."""
        import numpy as np

        encoded = self.encoder.tokenizer.encode_batch([tuple(p) for p in pairs])
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
        probs = np.zeros((len(encoded), self.out[0].shape[0]), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start:start + BATCH]
            x, _ = self.encoder.hidden([encoded[i].ids for i in chunk],
                                       [encoded[i].type_ids for i in chunk])
            probs[chunk] = self._softmax(self._logits(x[:, 0, :]))
        return [Inference(float(row[self.entail]), float(row[self.contra])) for row in probs]

    def _logits(self, first: Matrix) -> Matrix:
        import numpy as np

        pooled = np.tanh(first @ self.dense[0].T + self.dense[1])
        logits: Matrix = pooled @ self.out[0].T + self.out[1]
        return logits

    @staticmethod
    def _softmax(logits: Matrix) -> Matrix:
        import numpy as np

        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        out: Matrix = shifted / shifted.sum(axis=1, keepdims=True)
        return out


_LOADED: dict[tuple[str, int], NliModel] = {}  # a long-lived server loads a judge once


def judge_folder(spec: str, models: Path, root: Path | None = None) -> Path:
    """The folder of the judge `spec` names: a Hub name downloaded into `models`, or a
    model folder's path (a relative one read from the project's `root`)."""
    from loremap.embed import named_folder

    return named_folder(spec, models, root, "judge", "loremap judge enable", "verify")


def load_judge(spec: str, models: Path, root: Path | None = None) -> NliModel:
    """The NLI model `spec` names, loaded once per process (again when its files change)."""
    folder = judge_folder(spec, models, root)
    try:
        key = (str(folder.resolve()), (folder / "model.safetensors").stat().st_mtime_ns)
    except OSError as exc:
        raise EmbedderUnavailable(f"judge {spec}: {folder} has no model.safetensors "
                                  f"({exc.strerror})") from None
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = NliModel(folder, spec)
    return _LOADED[key]
