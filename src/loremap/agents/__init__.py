"""Integrations with the agents: Claude Code's settings, hooks and compaction, the connectors
that register loremap with other agents, and `slim` for their instruction files.

Everything here edits files the user owns, so every writer keeps a backup, offers a dry run and
changes nothing when it refuses. The config formats' parsers (tomlkit, ruamel.yaml) are
imported inside the functions that need them.
"""
