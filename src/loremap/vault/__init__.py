"""The vault: markdown note files, the canonical record of what the project learned."""

from __future__ import annotations
