"""Import specifiers to repository files: the edges of the code map's import graph.

The parser sees one file at a time and hands over import specifiers as written (`..models`,
`@app/ui`, `github.com/acme/shop/cart`, `crate::db`). Turning them into files needs the whole
file list and each ecosystem's own configuration (tsconfig `paths`, package.json workspaces,
go.mod, Cargo.toml, composer.json PSR-4, pubspec.yaml), so it is a stage of its own.

`Resolver` is the one entry point: it builds the path tables once (`RepoFiles`, which also reads
configuration files lazily: only files in the list, only inside the root, tolerant of comments
and malformed content), hands each language to its ecosystem's resolver (this package's
modules `python`, `js`, `rust`, `jvm`, `packages`, `includes`) and memoises answers per
(importer directory, language, specifier). An import that leaves the repository (standard
library, third-party package) or cannot be resolved statically resolves to no files, and
`resolve` never raises. What each language misses is listed in docs/code-map.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from loremap.codemap.repofiles import RepoFiles, clean_path, parent_dir
from loremap.codemap.resolve.includes import IncludeImports
from loremap.codemap.resolve.js import JsImports
from loremap.codemap.resolve.jvm import JvmImports
from loremap.codemap.resolve.packages import PackageImports
from loremap.codemap.resolve.python import PythonImports
from loremap.codemap.resolve.rust import RustImports

__all__ = ["Handler", "Resolver"]

_MAX_SPEC = 1024

Handler = Callable[[str, str], Iterable[str]]


class Resolver:
    """Resolves import specifiers of one repository snapshot to repository files."""

    def __init__(self, root: Path, files: Iterable[str]) -> None:
        repo = RepoFiles(root, files)
        self._files = repo.files
        self._memo: dict[tuple[str, str, str], tuple[str, ...]] = {}
        python, js, rust = PythonImports(repo), JsImports(repo), RustImports(repo)
        jvm, packages, includes = JvmImports(repo), PackageImports(repo), IncludeImports(repo)
        self._handlers: dict[str, Handler] = {
            "python": python.resolve, "javascript": js.resolve, "typescript": js.resolve,
            "tsx": js.resolve, "go": packages.go, "rust": rust.resolve, "java": jvm.java,
            "kotlin": jvm.kotlin, "scala": jvm.scala, "c": includes.c, "cpp": includes.c,
            "csharp": jvm.csharp, "ruby": includes.ruby, "php": packages.php,
            "dart": packages.dart, "swift": packages.swift, "css": includes.css,
            "scss": includes.css, "less": includes.css, "shell": includes.shell,
        }

    def resolve(self, importer: str, language: str, spec: str) -> tuple[str, ...]:
        """The repository files `spec`, imported by `importer` in `language`, refers to (sorted;
        empty when external, standard library or not resolvable)."""
        handler = self._handlers.get(language) if isinstance(language, str) else None
        path = clean_path(importer)
        if handler is None or path is None or not isinstance(spec, str):
            return ()
        spec = spec.strip()
        if not spec or len(spec) > _MAX_SPEC or "\x00" in spec:
            return ()
        # Rust `mod`/`self`/`super` depend on the file's own name; everything else on its folder.
        key = (path if language == "rust" else parent_dir(path), language, spec)
        found = self._memo.get(key)
        if found is None:
            found = tuple(sorted({f for f in handler(path, spec) if f in self._files}))
            self._memo[key] = found
        return tuple(f for f in found if f != path) if path in found else found
