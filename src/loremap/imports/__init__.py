"""Importers: notes from other memory tools (Rubi, cuba-memorys, basic-memory) into the vault."""
