"""Java, Kotlin, Scala and C# imports to files, by package folders found from the path.

These languages name a package or namespace, not a file, and build tools (Maven, Gradle, sbt,
MSBuild) decide where source roots are. So instead of reading build files the resolver indexes
every folder by its dotted suffixes (`src/main/java/com/acme/cart` answers `com.acme.cart`,
`acme.cart` and `cart`) and looks a package or class up there. Imports of the platform
(`java.`, `kotlin.`, `System`, ...) resolve to nothing.
"""

from __future__ import annotations

from collections import defaultdict

from loremap.codemap.repofiles import RepoFiles, expand_braces

_JVM_EXTERNAL = ("java.", "javax.", "jdk.", "sun.", "kotlin.", "kotlinx.", "scala.", "android.")
_DOTNET_EXTERNAL = ("System", "Microsoft")


class JvmImports:
    """JVM and .NET import specifiers of one repository snapshot; one suffix index per set of
    file extensions, shared by the four languages."""

    def __init__(self, repo: RepoFiles) -> None:
        self._repo = repo
        self._suffixes: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}

    def _suffix_index(self, exts: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Dotted folder suffix (`com.acme.cart`, `Acme.Shop.Models`) -> folders ending so,
        over the folders holding a file with one of `exts`."""
        if exts not in self._suffixes:
            index: dict[str, list[str]] = defaultdict(list)
            for d, files in self._repo.by_dir.items():
                if d and any(f.endswith(exts) for f in files):
                    dotted = d.replace("/", ".")
                    index[dotted].append(d)
                    for i, ch in enumerate(dotted):
                        if ch == ".":
                            index[dotted[i + 1:]].append(d)
            self._suffixes[exts] = {k: tuple(sorted(v)) for k, v in index.items()}
        return self._suffixes[exts]

    def _package_files(self, package: str, exts: tuple[str, ...]) -> list[str]:
        return [f for d in self._suffix_index(exts).get(package, ())
                for f in self._repo.by_dir[d] if f.endswith(exts)]

    def _class_files(self, package: str, name: str, exts: tuple[str, ...]) -> list[str]:
        return [f for d in self._suffix_index(exts).get(package, ())
                for e in exts if (f := f"{d}/{name}{e}") in self._repo.files]

    def _jvm(self, spec: str, exts: tuple[str, ...], wildcard: str) -> list[str]:
        group = expand_braces(spec)
        if group is not None:
            return [f for item in group for f in self._jvm(item, exts, wildcard)]
        if spec.startswith(_JVM_EXTERNAL):
            return []
        parts = spec.split(".")
        if parts[-1] == wildcard:
            parts = parts[:-1]
            found = self._package_files(".".join(parts), exts)
            if found or len(parts) < 2:
                return found
        # `a.b.C`, a static member `a.b.C.m` or a nested class `a.b.C.D`: the outermost class.
        for k in range(1, len(parts)):
            found = self._class_files(".".join(parts[:k]), parts[k], exts)
            if found:
                return found
        return []

    def java(self, importer: str, spec: str) -> list[str]:
        """The files of a Java import (a class, a member of one, or `pkg.*`)."""
        return self._jvm(spec, (".java", ".kt"), "*")

    def kotlin(self, importer: str, spec: str) -> list[str]:
        return self._jvm(spec, (".kt", ".java"), "*")

    def scala(self, importer: str, spec: str) -> list[str]:
        return self._jvm(spec, (".scala", ".java"), "_")

    def csharp(self, importer: str, spec: str) -> list[str]:
        """The files of a C# `using`: a namespace's files, else the file of a type."""
        spec = spec.removeprefix("global::")
        if spec.split(".")[0] in _DOTNET_EXTERNAL:
            return []
        found = self._package_files(spec, (".cs",))
        package, _, name = spec.rpartition(".")
        return found or (self._class_files(package, name, (".cs",)) if package else [])
