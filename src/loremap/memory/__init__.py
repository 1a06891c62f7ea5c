"""Services over the vault and the index: remember, supersede, forget, reconcile, doctor."""

from __future__ import annotations
