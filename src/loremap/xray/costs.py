"""What tokens cost: input-token equivalents (model-independent) and dollars (per model).

An input-token equivalent weighs each kind of token by its price relative to plain input,
the same for every Claude model: a cache read 0.1, a 5-minute cache write 1.25, a 1-hour write
2, an output token 5. It answers "where did the cost go" without a price table; dollars need
one (`prices.toml`, shipped; `--prices FILE` replaces it).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from loremap.errors import InvalidInput
from loremap.xray.transcripts import Usage

READ = 0.1
WRITE_5M = 1.25
WRITE_1H = 2.0
OUTPUT = 5.0


def equivalents(u: Usage) -> float:
    """Cost of `u` in input-token equivalents."""
    return (u.input + READ * u.cache_read + WRITE_5M * u.cache_write_5m
            + WRITE_1H * u.cache_write_1h + OUTPUT * u.output)


class Price(NamedTuple):
    input: float  # dollars per million input tokens
    output: float


class Prices:
    """Dollars per model; `dollars` is None for a model the table does not know."""

    def __init__(self, table: Mapping[str, Price], origin: str) -> None:
        self.table = dict(table)
        self.origin = origin
        self._keys = sorted(self.table, key=len, reverse=True)

    @classmethod
    def load(cls, path: Path | None = None) -> Prices:
        """The shipped table, or the TOML file at `path` (`[models."<id>"] input/output`)."""
        if path is None:
            text = resources.files("loremap.xray").joinpath("prices.toml").read_text("utf-8")
            origin = "shipped prices.toml"
        else:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput(f"cannot read the price file {path}: {exc}") from None
            origin = str(path)
        try:
            models = tomllib.loads(text).get("models", {})
            table = {str(name): Price(float(row["input"]), float(row["output"]))
                     for name, row in models.items()}
        except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(f"{origin}: write [models.\"<id>\"] with input and output "
                               f"(dollars per million tokens): {exc}") from None
        return cls(table, origin)

    def price(self, model: str) -> Price | None:
        found = self.table.get(model)
        if found is not None:
            return found
        name = model.lower()
        for key in self._keys:
            if name.startswith(key.lower()):
                return self.table[key]
        return None

    def dollars(self, model: str, u: Usage) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        prompt = u.input + READ * u.cache_read + WRITE_5M * u.cache_write_5m \
            + WRITE_1H * u.cache_write_1h
        return (prompt * price.input + u.output * price.output) / 1e6
