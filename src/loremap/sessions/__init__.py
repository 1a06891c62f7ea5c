"""Sessions: what loremap keeps about agent sessions so that the next one starts informed.

For now, handoffs (`loremap.sessions.handoff`): the goal, state, decisions and next steps one
session leaves for the next, as markdown files in `.loremap/handoffs/`. The package stays on the
standard library and our light modules, because hooks use it on every session start.
"""

from __future__ import annotations
