"""`loremap daemon`: one warm process per user that answers hooks and MCP sessions.

Every hook event and every `loremap serve` would otherwise start Python, import loremap (and,
for MCP, the SDK) and open the index again. The daemon keeps the Apps, their indexes and any
embedding model open and answers over a private Unix socket (`loremap.wire` is the client side,
on the standard library). It starts on first need, exits when idle, and is never the only
holder of anything: notes stay files, the index is derived, writes take the vault's lock.
"""
