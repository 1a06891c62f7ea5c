"""A BERT-family encoder run in numpy, from a model folder in the Hugging Face layout
(`config.json`, `model.safetensors`, `tokenizer.json`, `1_Pooling/config.json`): `Encoder` is
the stack (the hidden states), `BertEncoder` the sentence vectors of the embeddings, and
`nli.py` a cross-encoder's classification head over the same stack.

Why not sentence-transformers: it needs torch, and on Linux the index's torch wheel pulls in
the CUDA libraries (gigabytes) for a model of 22M parameters. The forward pass of a BERT encoder
is six matrix products per layer, which numpy hands to the same BLAS torch uses on a CPU; the
tokenizer is the Hugging Face `tokenizers` library itself, and the weights are read by
`safetensors`. Measured against sentence-transformers 5 on torch 2.13 (CPU) with the shipped
all-MiniLM-L6-v2, over 64 texts of 3 to 250 word pieces: the lowest cosine between the two
implementations' vectors is 0.9999976 (GELU by its tanh form; `tests/test_embed_local.py` holds
reference values taken from sentence-transformers). The 64 texts took 4.9 s here and 5.5 s with
torch on the same loaded machine; a short question takes ~12 ms warm (its dozen matrix
products read the 90 MB of weights), a 256-piece window ~0.07 s on one core (`bench/embed.py`).

Only BERT-shaped encoders load: BERT (MiniLM, bge, e5, gte) and RoBERTa (XLM-RoBERTa too: the
same stack with positions counted from the padding id + 1 and one token type), with absolute
positions, post-layer-norm and GELU; others (ALiBi, rotary positions, DeBERTa) are refused in
one line. The RoBERTa positions are held by a test to the BERT stack's own output (the same
weights with the position table shifted give the same states). A model whose
`config_sentence_transformers.json` names prompts (`{"prompts": {"query": "query: "}}`, as
e5-style models want) gets its query prompt before every question and its document prompt
before every text it embeds.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loremap.errors import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Matrix = NDArray[np.float32]

BATCH = 32  # texts per forward pass (sorted by length, so a batch pads little)


def _one_blas_thread() -> None:
    """One BLAS thread unless the user chose (before numpy loads: it reads these once).

    Measured on the two-core machine beside other busy processes (an agent, its tests): 64
    texts took 24.3 s with OpenBLAS's two spinning threads and 10.3 s with one, and a query
    105 ms against 21 ms; BLAS threads that wait for a busy core lose more than they gain.
    """
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def _gelu(x: Matrix) -> Matrix:
    """GELU by its tanh form, in place over one temporary: numpy has no erf, and a polynomial
    erf over the (batch, tokens, 1536) activations cost four times the layer's matrix products.
    The two forms differ by at most 5e-4 per activation; the sentence vectors by a cosine of
    1 - 1e-6 (the module docstring's measure)."""
    import numpy as np

    inner = x * x
    inner *= 0.044715
    inner += 1.0
    inner *= x
    inner *= math.sqrt(2.0 / math.pi)
    np.tanh(inner, out=inner)
    inner += 1.0
    inner *= x
    inner *= 0.5
    return inner


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (var + eps) ** 0.5 * weight + bias  # type: ignore[no-any-return]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"model folder {path.parent}: cannot read {path.name} "
                                  f"({exc})") from exc
    if not isinstance(data, dict):
        raise EmbedderUnavailable(f"model folder {path.parent}: {path.name} is not a JSON "
                                  "object")
    return data


class Encoder:
    """The encoder stack of a BERT-family model: its config, weights, tokenizer and hidden
    states. BERT counts positions from 0; RoBERTa from its padding id + 1 (a padded position
    takes the padding id, as `transformers` does) and has one token type."""

    def __init__(self, folder: Path, name: str, max_tokens: int = 256) -> None:
        _one_blas_thread()
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = _read_json(folder / "config.json")
        self.config = config
        kind = str(config.get("model_type", ""))
        position = str(config.get("position_embedding_type", "absolute"))
        if kind not in ("bert", "roberta", "xlm-roberta", "") or position != "absolute":
            raise EmbedderUnavailable(f"model {name}: a {kind or 'unknown'} encoder "
                               f"({position} positions); only BERT- and RoBERTa-shaped models "
                               "load")
        self.name = name
        self.folder = folder
        self.roberta = kind in ("roberta", "xlm-roberta")
        self.pad_id = int(config.get("pad_token_id", 1 if self.roberta else 0) or 0)
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.layers = int(config["num_hidden_layers"])
        try:
            weights = load_file(str(folder / "model.safetensors"))
            self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # safetensors and tokenizers raise their own types
            raise EmbedderUnavailable(f"model {name}: cannot load {folder} ({exc})") from exc
        prefix = next((f"{p}." for p in ("bert", "roberta")
                       if f"{p}.embeddings.word_embeddings.weight" in weights), "")
        # Dense weights are stored transposed once (x @ W, a contiguous BLAS operand).
        self.w = {k[len(prefix):]: (np.ascontiguousarray(v.T) if v.ndim == 2 and ".layer." in k
                                    else v).astype(np.float32)
                  for k, v in weights.items() if k.startswith(prefix)}
        # What lies outside the encoder's prefix: a task head (`classifier.*`).
        self.head = {k: v.astype(np.float32) for k, v in weights.items()
                     if prefix and not k.startswith(prefix)}
        if "embeddings.word_embeddings.weight" not in self.w:
            raise EmbedderUnavailable(f"model {name}: {folder} holds no BERT weights")
        offset = self.pad_id + 1 if self.roberta else 0
        limit = min(max_tokens, int(config.get("max_position_embeddings", 512)) - offset)
        self.tokenizer.no_padding()
        self.dim = int(self.w["embeddings.word_embeddings.weight"].shape[1])
        self.max_tokens = limit
        self.tokenizer.enable_truncation(max_length=limit)

    def hidden(self, batch: Sequence[Sequence[int]],
               types: Sequence[Sequence[int]] | None = None) -> tuple[Matrix, Matrix]:
        """The last layer's states of token-id sequences (padded here to the longest), with
        their mask; `types` are the token types of sentence pairs (none: all 0)."""
        import numpy as np

        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        kinds = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1.0
            if types is not None and not self.roberta:
                kinds[row, :len(seq)] = types[row]
        w = self.w
        if self.roberta:
            positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + self.pad_id
        else:
            positions = np.broadcast_to(np.arange(width), (len(batch), width))
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][positions]
             + w["embeddings.token_type_embeddings.weight"][kinds])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"],
                        self.eps)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        return x, mask

    def _layer(self, x: Matrix, bias: Matrix, p: str) -> Matrix:
        import numpy as np

        w = self.w
        n, t, d = x.shape
        h = self.heads
        hd = d // h

        def dense(v: Matrix, name: str) -> Matrix:
            out = v.reshape(n * t, -1) @ w[f"{p}{name}.weight"] + w[f"{p}{name}.bias"]
            return out.reshape(n, t, -1)

        def split(v: Matrix) -> Matrix:
            # (batch x heads, tokens, head dim), contiguous: numpy's matmul hands a 3-D stack
            # of contiguous matrices to BLAS, and a 4-D or strided one takes a loop ten times
            # slower.
            return np.ascontiguousarray(
                v.reshape(n, t, h, hd).transpose(0, 2, 1, 3)).reshape(n * h, t, hd)

        q = split(dense(x, "attention.self.query"))
        k = split(dense(x, "attention.self.key"))
        v = split(dense(x, "attention.self.value"))
        scores = (q @ np.ascontiguousarray(k.transpose(0, 2, 1))).reshape(n, h, t, t)
        scores *= 1.0 / math.sqrt(hd)
        scores += bias
        # exp below -80 goes subnormal, and x86 arithmetic on subnormals is a hundredfold slower.
        scores -= scores.max(axis=-1, keepdims=True)
        np.maximum(scores, -80.0, out=scores)
        probs = np.exp(scores, out=scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        ctx = (probs.reshape(n * h, t, t) @ v).reshape(n, h, t, hd).transpose(0, 2, 1, 3
                                                                           ).reshape(n, t, d)
        x = _layer_norm(dense(ctx, "attention.output.dense") + x,
                        w[f"{p}attention.output.LayerNorm.weight"],
                        w[f"{p}attention.output.LayerNorm.bias"], self.eps)
        inner = _gelu(dense(x, "intermediate.dense"))
        return _layer_norm(dense(inner, "output.dense") + x, w[f"{p}output.LayerNorm.weight"],
                           w[f"{p}output.LayerNorm.bias"], self.eps)


class BertEncoder(Encoder):
    """Sentence vectors of a BERT-shaped encoder: mean (or CLS) pooling, unit length."""

    def __init__(self, folder: Path, name: str, max_tokens: int = 256) -> None:
        super().__init__(folder, name, max_tokens)
        pooling = folder / "1_Pooling" / "config.json"
        self.cls = bool(_read_json(pooling).get("pooling_mode_cls_token")) \
            if pooling.is_file() else False
        prompts = folder / "config_sentence_transformers.json"
        named = _read_json(prompts).get("prompts") if prompts.is_file() else None
        named = named if isinstance(named, dict) else {}
        self.query_prompt = str(named.get("query", ""))
        self.document_prompt = str(named.get("document", named.get("passage", "")))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> Matrix:
        """One unit vector per document text (float32 rows)."""
        if self.document_prompt:
            texts = [self.document_prompt + text for text in texts]
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Matrix:
        import numpy as np

        encoded = self.token_ids(texts)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        out = np.zeros((len(encoded), self.dim), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start:start + BATCH]
            out[chunk] = self.forward([encoded[i] for i in chunk])
        return out

    def embed_query(self, text: str) -> Matrix:
        vector: Matrix = self._embed([self.query_prompt + text])[0]
        return vector

    def forward(self, batch: Sequence[Sequence[int]]) -> Matrix:
        """Pooled, normalised vectors of token-id sequences."""
        import numpy as np

        x, mask = self.hidden(batch)
        if self.cls:
            pooled = x[:, 0, :]
        else:
            pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)  # type: ignore[no-any-return]
