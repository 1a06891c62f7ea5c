"""JavaScript and TypeScript imports to files, the way TypeScript and Node find them.

A relative specifier is probed with the extensions and `index` files a bundler would try
(including a `.ts` source behind a `.js` specifier). A bare one goes through the nearest
tsconfig.json/jsconfig.json `paths` and `baseUrl` (following relative `extends`), then through
the workspace packages of package.json `workspaces` and pnpm-workspace.yaml with their
`exports`, `module`, `main` and `types` entries. Anything else is a package from node_modules,
which is not indexed, and resolves to nothing.
"""

from __future__ import annotations

import posixpath
import re
from functools import cached_property
from typing import NamedTuple

from loremap.codemap.repofiles import RepoFiles, ancestors, child_path, join_path, parent_dir

_MAX_EXTENDS = 16
_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_TS_FOR_JS = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_PNPM_ENTRY = re.compile(r"^\s*-\s*[\"']?([^\"'#\s]+)", re.MULTILINE)


class _TsOptions(NamedTuple):
    """The effective `compilerOptions` of a tsconfig after `extends`; dirs repository-relative."""

    base_url: str | None
    paths: tuple[tuple[str, tuple[str, ...]], ...] | None
    paths_dir: str  # where `paths` targets start when there is no baseUrl

    def merged(self, child: _TsOptions) -> _TsOptions:
        return _TsOptions(
            child.base_url if child.base_url is not None else self.base_url,
            child.paths if child.paths is not None else self.paths,
            child.paths_dir if child.paths is not None else self.paths_dir)


_NO_TS = _TsOptions(None, None, "")


def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = [".*" if seg == "**" else "[^/]*".join(re.escape(x) for x in seg.split("*"))
             for seg in pattern.removeprefix("./").strip("/").split("/")]
    return re.compile("/".join(parts))


def _export_targets(value: object, depth: int = 0) -> list[str]:
    """The file targets of a package.json `exports` entry, conditions in document order."""
    if isinstance(value, str):
        return [value]
    if depth > 4:
        return []
    if isinstance(value, list):
        return [t for v in value for t in _export_targets(v, depth + 1)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _export_targets(v, depth + 1)]
    return []


class JsImports:
    """JavaScript/TypeScript import specifiers of one repository snapshot."""

    def __init__(self, repo: RepoFiles) -> None:
        self._repo = repo
        self._ts_by_dir: dict[str, _TsOptions] = {}
        self._ts_by_config: dict[str, _TsOptions] = {}

    def resolve(self, importer: str, spec: str) -> tuple[str, ...]:
        """The file `spec` names, seen from `importer` (loader prefixes and queries dropped)."""
        spec = spec.rpartition("!")[2].partition("?")[0]
        here = parent_dir(importer)
        if spec in (".", "..") or spec.startswith(("./", "../")):
            return self._probe(join_path(here, spec))
        if not spec or spec.startswith("/") or ":" in spec.split("/")[0]:
            return ()
        opts = self._tsconfig_for(here)
        found = self._ts_paths(opts, spec)
        if not found and opts.base_url is not None:
            found = self._probe(join_path(opts.base_url, spec))
        return found or self._workspace_import(spec)

    def _probe(self, path: str | None) -> tuple[str, ...]:
        if path is None:
            return ()
        if path in self._repo.files:
            return (path,)
        stem, ext = posixpath.splitext(path)
        found = self._repo.first(stem + alt for alt in _TS_FOR_JS.get(ext, ()))
        return (found or self._repo.first(path + e for e in _JS_EXTS)
                or self._repo.first(child_path(path, "index" + e) for e in _JS_EXTS))

    def _tsconfig_for(self, directory: str) -> _TsOptions:
        """The options of the nearest tsconfig.json (or jsconfig.json) above `directory`."""
        if directory not in self._ts_by_dir:
            opts = _NO_TS
            for d in ancestors(directory):
                config = self._repo.first((child_path(d, "tsconfig.json"),
                                           child_path(d, "jsconfig.json")))
                if config:
                    if config[0] not in self._ts_by_config:
                        self._ts_by_config[config[0]] = self._tsconfig(config[0], frozenset())
                    opts = self._ts_by_config[config[0]]
                    break
            self._ts_by_dir[directory] = opts
        return self._ts_by_dir[directory]

    def _tsconfig(self, path: str, seen: frozenset[str]) -> _TsOptions:
        data, here = self._repo.json(path), parent_dir(path)
        opts = _TsOptions(None, None, here)
        if path in seen or len(seen) > _MAX_EXTENDS:
            return opts
        extends = data.get("extends")
        for parent in extends if isinstance(extends, list) else [extends]:
            # Trigger: `extends` names a package (`@tsconfig/node20`). Why: node_modules is not
            # indexed. Outcome: only relative parents are followed.
            if isinstance(parent, str) and parent.startswith(("./", "../")):
                target = join_path(here, parent)
                if target is not None and target not in self._repo.files:
                    target += ".json"
                if target is not None:
                    opts = opts.merged(self._tsconfig(target, seen | {path}))
        options = data.get("compilerOptions")
        if not isinstance(options, dict):
            return opts
        base_url = options.get("baseUrl")
        paths = options.get("paths")
        own = _TsOptions(join_path(here, base_url) if isinstance(base_url, str) else None,
                         None, here)
        if isinstance(paths, dict):
            own = own._replace(paths=tuple(
                (k, tuple(t for t in v if isinstance(t, str)))
                for k, v in paths.items() if isinstance(v, list)))
        return opts.merged(own)

    def _ts_paths(self, opts: _TsOptions, spec: str) -> tuple[str, ...]:
        """TypeScript's rule: an exact pattern wins, else the `*` pattern of longest prefix."""
        best: tuple[tuple[str, ...], str] | None = None
        best_len = -1
        for pattern, targets in opts.paths or ():
            pre, star, suf = pattern.partition("*")
            if not star and pattern == spec:
                best = (targets, "")
                break
            if (star and len(pre) > best_len and spec.startswith(pre) and spec.endswith(suf)
                    and len(spec) >= len(pre) + len(suf)):
                best, best_len = (targets, spec[len(pre):len(spec) - len(suf)]), len(pre)
        if best is None:
            return ()
        base = opts.base_url if opts.base_url is not None else opts.paths_dir
        for target in best[0]:
            found = self._probe(join_path(base, target.replace("*", best[1], 1)))
            if found:
                return found
        return ()

    def _workspace_globs(self) -> list[str]:
        spaces = self._repo.json("package.json").get("workspaces")
        if isinstance(spaces, dict):
            spaces = spaces.get("packages")
        globs = [g for g in spaces if isinstance(g, str)] if isinstance(spaces, list) else []
        pnpm = self._repo.read("pnpm-workspace.yaml")
        return globs + (_PNPM_ENTRY.findall(pnpm) if pnpm else [])

    @cached_property
    def _workspaces(self) -> dict[str, str]:
        """Workspace package name -> its folder (package.json `workspaces`, pnpm-workspace)."""
        globs = self._workspace_globs()
        include = [_glob_regex(g) for g in globs if not g.startswith("!")]
        exclude = [_glob_regex(g[1:]) for g in globs if g.startswith("!")]
        found: dict[str, str] = {}
        for f in self._repo.by_name.get("package.json", ()):
            d = parent_dir(f)
            if (d and any(r.fullmatch(d) for r in include)
                    and not any(r.fullmatch(d) for r in exclude)):
                name = self._repo.json(f).get("name")
                if isinstance(name, str) and name:
                    found.setdefault(name, d)
        return found

    def _workspace_import(self, spec: str) -> tuple[str, ...]:
        parts = spec.split("/")
        name = "/".join(parts[:2]) if spec.startswith("@") else parts[0]
        directory = self._workspaces.get(name)
        if directory is None:
            return ()
        manifest = self._repo.json(child_path(directory, "package.json"))
        exports = manifest.get("exports")
        sub = spec[len(name) + 1:]
        if sub:
            entry = exports.get("./" + sub) if isinstance(exports, dict) else None
            targets = _export_targets(entry) + [sub, "src/" + sub]
        else:
            if isinstance(exports, dict) and any(k.startswith(".") for k in exports):
                exports = exports.get(".")
            targets = _export_targets(exports) + [
                v for k in ("module", "main", "types", "typings")
                if isinstance(v := manifest.get(k), str)] + ["index", "src/index"]
        for target in targets:
            found = self._probe(join_path(directory, target))
            if found:
                return found
        return ()
