"""`loremap sync`: reconcile this machine's project vault with a shared database, three-way.

The three states of a note are its file here (L), the database's text or tombstone (R), and the
BASE (the merge base): the hash both sides agreed on at this vault's last sync with this
database (`merge_base.py`).
`plan.py` decides, from hashes alone, what a push or a pull would move; `run.py` applies it: the
database side in one transaction, the files one atomic write each, the base last.
"""

from loremap.sync.run import NEEDS_SHARED, Report, Sync

__all__ = ["NEEDS_SHARED", "Report", "Sync"]
