"""Go, PHP, Dart and Swift imports to files, through the package names their manifests declare.

In these languages an import names a package that a manifest maps to a folder: a go.mod
`module` path, a composer.json PSR-4 namespace prefix, a pubspec.yaml `name`, a SwiftPM target
folder under `Sources/`. The manifests are read once per snapshot; a name no manifest declares
is a third-party or platform package and resolves to nothing. (PHP `require` of a path and Dart
relative URIs are plain relative paths.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cached_property

from loremap.codemap.repofiles import RepoFiles, child_path, join_path, parent_dir

_GO_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"/]+[^\s\"]*)", re.MULTILINE)
_PUBSPEC_NAME = re.compile(r"^name:\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


class PackageImports:
    """Go, PHP, Dart and Swift import specifiers of one repository snapshot."""

    def __init__(self, repo: RepoFiles) -> None:
        self._repo = repo

    @cached_property
    def _go_modules(self) -> tuple[tuple[str, str], ...]:
        """(module path, folder) of every go.mod, longest module path first."""
        found = []
        for f in self._repo.by_name.get("go.mod", ()):
            match = _GO_MODULE.search(self._repo.read(f) or "")
            if match:
                found.append((match.group(1), parent_dir(f)))
        return tuple(sorted(found, key=lambda m: (-len(m[0]), m[1])))

    def go(self, importer: str, spec: str) -> tuple[str, ...]:
        """The non-test .go files of the package at import path `spec`."""
        for module, directory in self._go_modules:
            if spec == module or spec.startswith(module + "/"):
                package = join_path(directory, spec[len(module) + 1:])
                files = self._repo.by_dir.get(package, ()) if package is not None else ()
                return tuple(f for f in files if f.endswith(".go") and not f.endswith("_test.go"))
        return ()

    @cached_property
    def _psr4(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(namespace prefix, folders) from every composer.json, longest prefix first."""
        found: dict[str, list[str]] = defaultdict(list)
        for f in self._repo.by_name.get("composer.json", ()):
            data = self._repo.json(f)
            for section in ("autoload", "autoload-dev"):
                autoload = data.get(section)
                psr4 = autoload.get("psr-4") if isinstance(autoload, dict) else None
                for prefix, dirs in psr4.items() if isinstance(psr4, dict) else ():
                    key = prefix.strip("\\") + "\\" if prefix.strip("\\") else ""
                    for d in dirs if isinstance(dirs, list) else [dirs]:
                        folder = join_path(parent_dir(f), d) if isinstance(d, str) else None
                        if folder is not None:
                            found[key].append(folder)
        return tuple(sorted(((k, tuple(v)) for k, v in found.items()), key=lambda p: -len(p[0])))

    def php(self, importer: str, spec: str) -> tuple[str, ...]:
        """The file of a `require`d path, or of a class by PSR-4 autoloading."""
        if "/" in spec or spec.endswith((".php", ".inc", ".phtml")):
            return self._repo.relative(importer, spec)
        name = spec.lstrip("\\")
        for prefix, dirs in self._psr4:
            if name.startswith(prefix):
                rel = name[len(prefix):].replace("\\", "/") + ".php"
                found = self._repo.first(join_path(d, rel) for d in dirs)
                if found:
                    return found
        return ()

    @cached_property
    def _dart_packages(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for f in self._repo.by_name.get("pubspec.yaml", ()):
            match = _PUBSPEC_NAME.search(self._repo.read(f) or "")
            if match:
                found.setdefault(match.group(1), parent_dir(f))
        return found

    def dart(self, importer: str, spec: str) -> tuple[str, ...]:
        """The file of a `package:` URI of this repository, or of a relative one."""
        if spec.startswith("package:"):
            name, _, rest = spec[8:].partition("/")
            directory = self._dart_packages.get(name)
            if directory is None or not rest:
                return ()
            return self._repo.first([join_path(child_path(directory, "lib"), rest)])
        return () if ":" in spec else self._repo.relative(importer, spec, also_root=False)

    @cached_property
    def _swift_modules(self) -> dict[str, tuple[str, ...]]:
        """SwiftPM module name -> its .swift files (`Sources/<Name>/...`)."""
        found: dict[str, list[str]] = defaultdict(list)
        for f in self._repo.files:
            if f.endswith(".swift"):
                parts = f.split("/")
                for i, part in enumerate(parts[:-2]):
                    if part == "Sources":
                        found[parts[i + 1]].append(f)
        return {k: tuple(v) for k, v in found.items()}

    def swift(self, importer: str, spec: str) -> tuple[str, ...]:
        """The files of the SwiftPM module `spec`."""
        return self._swift_modules.get(spec, ())
