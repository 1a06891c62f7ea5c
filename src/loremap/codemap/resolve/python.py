"""Python imports to files: relative imports by package, absolute ones by import root.

An absolute import is looked for where Python would find it without an installed environment:
the folder above the importer's outermost package (or a script's own folder), `src/`, the
repository root, then every folder that holds a top-level package. Namespace packages (a folder
without `__init__.py`) resolve to nothing rather than to a wrong file.
"""

from __future__ import annotations

from functools import cached_property

from loremap.codemap.repofiles import RepoFiles, child_path, parent_dir


class PythonImports:
    """Python import specifiers (`a.b`, `.m`, `..m.k`) of one repository snapshot."""

    def __init__(self, repo: RepoFiles) -> None:
        self._repo = repo

    def _is_package(self, directory: str) -> bool:
        return child_path(directory, "__init__.py") in self._repo.files or (
            child_path(directory, "__init__.pyi") in self._repo.files)

    @cached_property
    def _roots(self) -> tuple[str, ...]:
        """Folders that hold top-level packages: the parent of every outermost package."""
        roots = set()
        for name in ("__init__.py", "__init__.pyi"):
            for f in self._repo.by_name.get(name, ()):
                top = parent_dir(f)
                while top and self._is_package(parent_dir(top)):
                    top = parent_dir(top)
                roots.add(parent_dir(top))
        return tuple(sorted(roots))

    def resolve(self, importer: str, spec: str) -> tuple[str, ...]:
        """The module file `spec` names, seen from `importer`."""
        here = parent_dir(importer)
        if spec.startswith("."):
            dots = len(spec) - len(spec.lstrip("."))
            for _ in range(dots - 1):
                if not here:
                    return ()
                here = parent_dir(here)
            rest = spec[dots:]
            return self._module(here, rest.split(".") if rest else [], relative=True)
        if self._is_package(here):
            top = here
            while self._is_package(parent_dir(top)) and top:
                top = parent_dir(top)
            first = parent_dir(top)
        else:
            first = here  # a script: its own folder is sys.path[0]
        for root in dict.fromkeys((first, "src", "", *self._roots)):
            found = self._module(root, spec.split("."), relative=False)
            if found:
                return found
        return ()

    def _module(self, base: str, parts: list[str], relative: bool) -> tuple[str, ...]:
        """The longest prefix of `parts` that is a module under `base` (`from . import y` may
        name an attribute of the package, so a relative import falls back to `__init__`)."""
        if any(not p or "/" in p for p in parts):
            return ()
        for k in range(len(parts), -1 if relative else 0, -1):
            path = child_path(base, "/".join(parts[:k])) if k else base
            if k:
                found = self._repo.first((f"{path}.py", f"{path}/__init__.py", f"{path}.pyi",
                                          f"{path}/__init__.pyi"))
                if found or path in self._repo.dirs:
                    return found  # a namespace package has no file of its own
            else:
                return self._repo.first((child_path(base, "__init__.py"),
                                         child_path(base, "__init__.pyi")))
        return ()
