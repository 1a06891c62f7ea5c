"""C/C++ includes, Ruby requires, CSS imports and shell `source` to files, by path.

These languages include a file by (partial) path rather than by package name, so resolving one
is probing candidate paths: next to the importer, in `include/` and `lib/` folders above it, at
the repository root, with the partial-file and extension conventions of Sass and Less. Build
system include paths (`-Isrc`) are unknown; a C include that matches one listed file by suffix
is taken.
"""

from __future__ import annotations

from functools import cached_property

from loremap.codemap.repofiles import RepoFiles, ancestors, child_path, join_path, parent_dir

_CSS_EXTS = (".scss", ".sass", ".css", ".less")


class IncludeImports:
    """C/C++, Ruby, CSS/SCSS/Less and shell import specifiers of one repository snapshot."""

    def __init__(self, repo: RepoFiles) -> None:
        self._repo = repo

    @cached_property
    def _include_dirs(self) -> tuple[str, ...]:
        return tuple(d for d in sorted(self._repo.dirs) if d.rpartition("/")[2] == "include")

    def c(self, importer: str, spec: str) -> tuple[str, ...]:
        """The header of `#include "x"` or `#include <x>` (given with its brackets)."""
        here = parent_dir(importer)
        if spec.startswith("<"):
            name = spec.strip("<>").strip()
            return self._repo.first(join_path(d, name) for d in self._include_dirs)
        name = spec.strip('"')
        near = [child_path(d, "include") for d in ancestors(here)]
        found = self._repo.first(join_path(d, name)
                                 for d in (here, *near, *self._include_dirs, ""))
        if found or name.startswith("../"):
            return found
        # Build-system include paths (-Isrc) are unknown: a unique path ending in `name` is used.
        same = [f for f in self._repo.by_name.get(name.rpartition("/")[2], ())
                if f == name or f.endswith("/" + name)]
        return tuple(same) if len(same) == 1 else ()

    def ruby(self, importer: str, spec: str) -> tuple[str, ...]:
        """The file of a `require` (from a `lib/` folder above) or `require_relative`."""
        name = spec if spec.endswith(".rb") else spec + ".rb"
        if spec.startswith(("./", "../")):
            return self._repo.relative(importer, name)
        return self._repo.first(c for d in ancestors(parent_dir(importer)) for c in (
            join_path(d, "lib/" + name),
            join_path(d, name) if d.rpartition("/")[2] == "lib" else None))

    def css(self, importer: str, spec: str) -> tuple[str, ...]:
        """The stylesheet of an `@import`/`@use`/`@forward`, Sass partials included."""
        spec = spec.removeprefix("url(").removesuffix(")").strip("'\" ")
        if not spec or spec.startswith(("/", "~")) or ":" in spec:
            return ()  # sass:math, http://..., ~node_module
        for base in (parent_dir(importer), ""):
            path = join_path(base, spec)
            if path is None:
                continue
            d, _, name = path.rpartition("/")
            found = self._repo.first([path, *(c for e in _CSS_EXTS for c in (
                path + e, child_path(d, f"_{name}{e}"))), *(c for e in _CSS_EXTS for c in (
                    child_path(path, "index" + e), child_path(path, "_index" + e)))])
            if found:
                return found
        return ()

    def shell(self, importer: str, spec: str) -> tuple[str, ...]:
        """The script a `source` / `.` names."""
        spec = spec.strip("'\"")
        if spec.startswith("$"):
            # `$DIR/lib.sh`, `$(dirname "$0")/lib.sh`, `${BASH_SOURCE%/*}/lib.sh`: taken as
            # relative to the script's folder, which is what such prefixes almost always are.
            cut = max(spec.rfind(")/"), spec.rfind("}/"))
            spec = spec[cut + 2:] if cut >= 0 else spec.partition("/")[2]
        if not spec or spec.startswith("~"):
            return ()
        return self._repo.relative(importer, spec)
