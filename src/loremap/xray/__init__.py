"""The X-ray: where an agent's tokens went, read from its own transcripts (Claude Code first),
and what early compaction and a slimmer fixed context would have saved."""
