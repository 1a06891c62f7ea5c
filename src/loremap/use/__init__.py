"""The use cases: one function per thing a person or an agent does with the memory.

`recall`, `remember`, `read`, `forget`, `list_notes` and `refresh` live here, directly under the
front ends (the CLI, the MCP server, the hooks). Each takes typed values, owns its freshness
step (how recently the index must have been reconciled with the note files), its federation
with the personal vault, its argument normalisation and its warnings, and returns a typed
result. A front end only translates its arguments into these values and formats the result;
none builds a search `Request`, normalises a path or reconciles the index itself.

Standard library and our light layers only at import: the prompt hook runs `recall`.
"""
