"""Claude Code: where its settings are and when it compacts (`settings`), loremap's hooks and
MCP server in its settings (`install`, `loremap hooks`), and early compaction (`compaction`,
`loremap compaction`).

This package's own module stays empty: the meter hook imports `settings` on every tool call.
"""
