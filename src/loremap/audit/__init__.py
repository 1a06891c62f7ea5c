"""The audit chain: one record per change to the notes, each holding the hash of the one before.

Every change (remember, supersede, archive, purge, quarantine, outcome, merge, sync push and
pull) is recorded by the one path that makes it (`memory.service.Memory`, `sync.run.Sync`),
never by a front end; the front ends only say who is acting (`acting_as`). Records live beside
the index, never in it: the index is derived, the chain is not (docs/audit.md).

Why a plain SHA-256 chain and not HMAC-SHA-256: on a shared database every machine that writes
must be able to append, so every one of them would hold an HMAC key, and anyone who can write
the table could then forge a valid MAC as easily as a valid hash. A key would only stop
someone who can rewrite the table but holds no key, and on PostgreSQL that is the tables'
owner, who a trigger already stops unless they turn maintenance on. What neither a hash nor a
shared key can stop is someone with write access rewriting the chain from record K to the head
and recomputing every hash after it. Only a copy of the head kept somewhere they cannot write
catches that: `loremap audit verify` prints the head (record number and hash), and `--anchor
SEQ:HASH` checks a head recorded earlier (in a commit, a CI log, a ticket) is still in the
chain. So: a plain chain, which anyone can verify without a secret, plus anchoring.
"""

from loremap.audit.actor import Actor, acting_as, current_actor, whoami
from loremap.audit.chain import Break, Entry, Record, Stamp, Verdict, seal, verify

__all__ = ["Actor", "Break", "Entry", "Record", "Stamp", "Verdict", "acting_as",
           "current_actor", "seal", "verify", "whoami"]
