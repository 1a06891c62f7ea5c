"""The shared index on PostgreSQL + pgvector (`loremap[postgres]`); imported only when a
database URL is configured."""
