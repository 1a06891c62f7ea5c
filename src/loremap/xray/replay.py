"""The replay: what each session would have cost under "compact when the context passes T".

Every API call re-reads the whole context, so a session's cost grows with the square of its
length; compacting early trades one summarising call for many cheaper ones. The replay re-costs
each chain (a session's main thread, each sub-agent) call by call, in input-token equivalents
(`costs`), against what it really cost:

- call i was sent with prompt p_i (input + cache reads + cache writes), read R_i of it from the
  cache, produced o_i; the conversation grew by d_i = p_i - p_(i-1) (d_1 = p_1);
- under the policy the context s_i = s_(i-1) + d_i. When that would pass T (and the context is
  more than F + H), the session compacts first: one call reads s_(i-1) from the cache (0.1)
  and writes a handoff of H tokens (8,000, as output: 5); the context restarts at F + H + d_i,
  where F is the fixed context (the first call's prompt minus its user message: system prompt,
  tools, CLAUDE.md);
- each call pays its real uncached input at 1, a cached prefix at 0.1, the rest of its prompt
  as a cache write at the chain's own write price (1.25 for 5-minute entries, 2 for 1-hour
  ones, mixed as the chain mixed them), its real output at 5. The cached prefix: where the
  real call hit the cache (it read at least half of the previous prompt), the policy's
  previous context less the same gap the real call left; where it missed (an expired
  cache), what the real call read, within the policy's context; just after a compaction, no
  more than F. A run the policy never changes costs exactly what it really cost;
- a real compaction the session made at fewer tokens than T happens under the policy too (the
  context follows the real one); one made above T never happens (no growth is counted across
  it, and the prefix stays cached); a context that shrank without a compaction shrinks the
  same, down to F.
The saving of T is the real cost minus the policy's cost, summed over chains.
"""

from __future__ import annotations

from loremap.xray.costs import OUTPUT, READ, WRITE_1H, WRITE_5M, equivalents
from loremap.xray.transcripts import Chain

THRESHOLDS = (50_000, 75_000, 100_000, 125_000, 150_000, 200_000, 250_000, 300_000, 400_000)
HANDOFF = 8_000


def write_price(chain: Chain) -> float:
    w5 = sum(c.usage.cache_write_5m for c in chain.calls)
    w1 = sum(c.usage.cache_write_1h for c in chain.calls)
    return (WRITE_5M * w5 + WRITE_1H * w1) / (w5 + w1) if w5 + w1 else WRITE_5M


def fixed_context(chain: Chain) -> int:
    """What every call of the chain starts with: the first prompt minus the user's message."""
    if not chain.calls:
        return 0
    first = chain.calls[0].usage.prompt
    return max(0, min(first, first - chain.first_prompt))


def _call(prompt: int, cached: int, uncached: int, output: int, write: float) -> float:
    cached = min(cached, prompt)
    uncached = min(uncached, prompt - cached)
    return uncached + READ * cached + write * (prompt - cached - uncached) + OUTPUT * output


def real_cost(chain: Chain) -> float:
    """What the chain really cost."""
    return sum(equivalents(c.usage) for c in chain.calls)


def _cached(read: int, previous: int, context: int, first: bool) -> int:
    """The prefix the policy's call finds in the cache. A real hit (it read at least half of
    the previous prompt) leaves the same uncached gap under the policy; a real miss (an
    expired cache) reads what the real call read; the first call of a chain, what it read."""
    if first:
        return read
    if 2 * read >= previous:
        return max(0, min(context, context - (previous - read)))
    return min(read, context)


def policy_cost(chain: Chain, threshold: int, handoff: int = HANDOFF) -> tuple[float, int]:
    """(cost, compactions) of the chain had it compacted whenever its context passed
    `threshold`."""
    if (chain.agent or "").startswith("acompact") and chain.calls:
        # Claude Code's own compaction summariser: under the policy the compaction it served
        # (at about its prompt's size) never happens when that passes T.
        return (0.0, 0) if chain.calls[0].usage.prompt > threshold else (real_cost(chain), 0)
    write, fixed = write_price(chain), fixed_context(chain)
    real_at = {c.after_calls: c.pre_tokens for c in chain.compactions}
    total, context, previous, compactions = 0.0, 0, 0, 0
    for i, call in enumerate(chain.calls):
        u = call.usage
        growth = u.prompt - previous
        cached = _cached(u.cache_read, previous, context, first=i == 0)
        if i in real_at and i > 0:
            if real_at[i] <= threshold:  # it happened under the policy too
                context, growth, cached = 0, u.prompt, u.cache_read
            else:  # it never happened: nothing grew, the prefix stayed cached
                growth, cached = 0, context
        if context + growth > threshold and context > fixed + handoff:
            total += READ * context + OUTPUT * handoff  # the summarising call
            compactions += 1
            context, cached = fixed + handoff, min(cached, fixed)
            growth = max(growth, 0)
        context = max(fixed if i else 0, context + growth)
        total += _call(context, cached, u.input, u.output, write)
        previous = u.prompt
    return total, compactions
