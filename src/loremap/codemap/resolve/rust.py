"""Rust `use` paths and `mod` declarations to files, by the module tree of each crate.

`mod x;` is a file next to (or below) the declaring file, so Rust answers depend on the
importer's own name, not just its folder. `crate::`, `self::` and `super::` walk the module tree
of the importer's crate (nearest Cargo.toml); a leading name is a crate of this workspace when a
Cargo.toml `[package]` or `[lib]` names it, else an external crate that resolves to nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property

from loremap.codemap.repofiles import (
    RepoFiles,
    ancestors,
    child_path,
    expand_braces,
    join_path,
    parent_dir,
)

_RUST_IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")


class RustImports:
    """Rust import specifiers (`crate::a::b`, `super::x`, `mod y`) of one repository snapshot."""

    def __init__(self, repo: RepoFiles) -> None:
        self._repo = repo

    def _crate_root(self, path: str) -> bool:
        d, _, name = path.rpartition("/")
        if name in ("lib.rs", "main.rs", "build.rs") and (
                child_path(d, "Cargo.toml") in self._repo.files):
            return True
        tail = d.rpartition("/")[2]
        if tail == "bin" and parent_dir(d).rpartition("/")[2] == "src":
            crate = parent_dir(parent_dir(d))
        elif tail in ("tests", "examples", "benches"):
            crate = parent_dir(d)
        else:
            return False
        return child_path(crate, "Cargo.toml") in self._repo.files

    def _children(self, path: str) -> str:
        """The folder where the submodules of the module in `path` live."""
        d, _, name = path.rpartition("/")
        if name in ("mod.rs", "lib.rs", "main.rs") or self._crate_root(path):
            return d
        return child_path(d, name.removesuffix(".rs"))

    def _submodule(self, directory: str, name: str) -> str | None:
        found = self._repo.first((child_path(directory, name + ".rs"),
                                  child_path(directory, name + "/mod.rs")))
        return found[0] if found else None

    def _module_file(self, directory: str) -> tuple[str, ...]:
        return self._repo.first((directory + ".rs", child_path(directory, "mod.rs"),
                                 child_path(directory, "lib.rs"), child_path(directory, "main.rs")))

    def _src(self, importer: str) -> str | None:
        """The source folder of the crate `importer` belongs to (nearest Cargo.toml)."""
        for d in ancestors(parent_dir(importer)):
            if child_path(d, "Cargo.toml") in self._repo.files:
                return child_path(d, "src")
        for d in ancestors(parent_dir(importer)):
            if self._repo.first((child_path(d, "lib.rs"), child_path(d, "main.rs"))):
                return d
        return None

    @cached_property
    def _crates(self) -> dict[str, str]:
        """Crate name (as written in paths) -> source folder, for every Cargo.toml [package]."""
        found: dict[str, str] = {}
        for f in self._repo.by_name.get("Cargo.toml", ()):
            data = self._repo.toml(f)
            package, lib = data.get("package"), data.get("lib")
            name = package.get("name") if isinstance(package, dict) else None
            lib_path = lib.get("path") if isinstance(lib, dict) else None
            if isinstance(lib, dict) and isinstance(lib.get("name"), str):
                name = lib["name"]
            src = join_path(parent_dir(f),
                            parent_dir(lib_path) if isinstance(lib_path, str) else "src")
            if isinstance(name, str) and src is not None:
                found.setdefault(name.replace("-", "_"), src)
        return found

    def resolve(self, importer: str, spec: str) -> Iterable[str]:
        """The module files `spec` (a `use` path or `mod name`) names, seen from `importer`."""
        if spec.startswith("mod "):
            name = spec[4:].strip()
            if not _RUST_IDENT.fullmatch(name):
                return ()
            child = self._submodule(self._children(importer), name.removeprefix("r#"))
            return (child,) if child else ()
        group = expand_braces(spec)
        if group is not None:
            return [f for item in group for f in self.resolve(importer, item)]
        parts = [p.strip() for p in spec.split(" as ")[0].removeprefix("::").split("::")]
        here: str | None
        if parts[0] in ("self", "super"):
            here = self._children(importer)
            while parts and parts[0] in ("self", "super"):
                here = parent_dir(here) if parts[0] == "super" else here
                parts = parts[1:]
            return self._walk(here, parts)
        if parts[0] == "crate":
            here = self._src(importer)
        else:  # `extern crate x`, `x::y` of a crate in this workspace; else an external crate
            here = self._crates.get(parts[0])
        return self._walk(here, parts[1:]) if here is not None else ()

    def _walk(self, here: str, parts: list[str]) -> tuple[str, ...]:
        """The deepest module file along `parts`; the module's own file when it names an item."""
        found: tuple[str, ...] = ()
        for seg in parts:
            child = self._submodule(here, seg) if _RUST_IDENT.fullmatch(seg) else None
            if child is None:
                break
            found, here = (child,), child_path(here, seg)
        return found or self._module_file(here)
