"""The X-ray's numbers as words, formatted once for the terminal and the HTML page alike.

The two views used to format money and shares each their own way, and drifted: the text said
`$0.00` for a model the price table does not know where the page said "not priced", and one
saving read "1%" in the terminal and "0.6%" on the page. Every figure either view prints goes
through these functions, so the same report reads the same in both.
"""

from __future__ import annotations

from loremap.xray.records import Cost, Recommendation


def count(value: float) -> str:
    """A whole count with thousands separators: 1,234."""
    return f"{value:,.0f}"


def money(usd: float | None) -> str:
    """Dollars; "not priced" when there is no price (never `$0.00` for an unknown model)."""
    if usd is None:
        return "not priced"
    if 0 < abs(usd) < 0.005:
        # Trigger: a real amount that rounds to zero cents. Why: "$0.00" would read as free.
        # Outcome: "< $0.01".
        return "< $0.01"
    return f"${usd:,.2f}"


def dollars(cost: Cost) -> str:
    """The dollars of `cost`, saying so when some or all of its calls have no price."""
    usd, unpriced = cost.priced_usd, cost.unpriced_calls
    if usd is None:
        return money(None)
    return money(usd) + (f" + {unpriced:,} unpriced calls" if unpriced else "")


def percent(share: float) -> str:
    """A share (0.006) as a percentage with one decimal (0.6%), the same in every view."""
    return f"{share:.1%}"


def saving(rec: Recommendation, unit: str) -> str:
    """What a recommendation saves, in words (`unit`: what the view calls an equivalent)."""
    if not rec.saving_equiv:
        return "saving unknown"
    return (f"saves {percent(rec.saving_share)} ({count(rec.saving_equiv)} {unit}, "
            f"{money(rec.saving_usd)})")
