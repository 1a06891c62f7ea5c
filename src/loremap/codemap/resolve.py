"""Import specifiers to repository files: the edges of the code map's import graph.

The parser sees one file at a time and hands over import specifiers as written (`..models`,
`@app/ui`, `github.com/acme/shop/cart`, `crate::db`). Turning them into files needs the whole
file list and each ecosystem's own configuration (tsconfig `paths`, package.json workspaces,
go.mod, Cargo.toml, composer.json PSR-4, pubspec.yaml), so it is a stage of its own.

`Resolver` builds path tables once, reads configuration files lazily (only files in the list,
only inside the root, tolerant of comments and malformed content) and memoises answers per
(importer directory, language, specifier). An import that leaves the repository (standard
library, third-party package) or cannot be resolved statically resolves to no files, and
`resolve` never raises. What each language misses is listed in docs/code-map.md.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

_MAX_CONFIG_BYTES = 1 << 20
_MAX_SPEC = 1024
_MAX_EXTENDS = 16
_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_TS_FOR_JS = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_CSS_EXTS = (".scss", ".sass", ".css", ".less")
_JVM_EXTERNAL = ("java.", "javax.", "jdk.", "sun.", "kotlin.", "kotlinx.", "scala.", "android.")
_DOTNET_EXTERNAL = ("System", "Microsoft")
_RUST_IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
_GO_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"/]+[^\s\"]*)", re.MULTILINE)
_PUBSPEC_NAME = re.compile(r"^name:\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
_PNPM_ENTRY = re.compile(r"^\s*-\s*[\"']?([^\"'#\s]+)", re.MULTILINE)

Handler = Callable[[str, str], Iterable[str]]


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


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _child(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _join(base: str, rel: str) -> str | None:
    """`rel` from directory `base`, normalised; None when absolute or leaving the root."""
    if rel.startswith("/") or "\x00" in rel:
        return None
    if not rel:
        return base
    joined = posixpath.normpath(f"{base}/{rel}" if base else rel)
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith(("../", "/")):
        return None
    return joined


def _ancestors(directory: str) -> Iterator[str]:
    """`directory`, its parent, ... up to the root ("")."""
    while True:
        yield directory
        if not directory:
            return
        directory = _parent(directory)


def _clean(path: object) -> str | None:
    if not isinstance(path, str) or not path or len(path) > 4096:
        return None
    return _join("", path) or None


def _skip_blank(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


def loads_jsonc(text: str) -> object:
    """JSON with `//` and `/* */` comments and trailing commas (tsconfig.json); None when
    malformed."""
    text = text.lstrip("\ufeff")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif ch in " \t\r\n/":
            j = _skip_blank(text, i)
            out.append(" " if j > i else ch)
            i = max(j, i + 1)
        elif ch == ",":
            j = _skip_blank(text, i + 1)
            if j >= n or text[j] not in "}]":
                out.append(",")
            i = j
        else:
            out.append(ch)
            i += 1
    try:
        return json.loads("".join(out))
    except (ValueError, RecursionError):
        return None


def _split_top(text: str) -> list[str]:
    """`a, b::{c, d}` -> [`a`, `b::{c, d}`]: commas outside braces."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return [*items, text[start:]]


def _expand_braces(spec: str) -> list[str] | None:
    """Group imports (`a.b.{C, D => E}`, `a::{b, self}`) as one path each; None if not a group."""
    i = spec.find("{")
    if i < 0 or not spec.endswith("}"):
        return None
    prefix, out = spec[:i], []
    for raw in _split_top(spec[i + 1:-1])[:64]:
        item = raw.split("=>")[0].split(" as ")[0].strip()
        if item == "self":
            out.append(prefix.rstrip(":.\\"))
        elif item:
            out.append(prefix + item)
    return out


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


class Resolver:
    """Resolves import specifiers of one repository snapshot to repository files."""

    def __init__(self, root: Path, files: Iterable[str]) -> None:
        self._root = Path(root)
        self._real_root = os.path.realpath(self._root)
        clean = {c for c in map(_clean, files) if c}
        self._files = frozenset(clean)
        by_dir: dict[str, list[str]] = defaultdict(list)
        by_name: dict[str, list[str]] = defaultdict(list)
        dirs = {""}
        for f in clean:
            d, _, name = f.rpartition("/")
            by_dir[d].append(f)
            by_name[name].append(f)
            while d not in dirs:
                dirs.add(d)
                d = _parent(d)
        self._by_dir = {d: tuple(sorted(fs)) for d, fs in by_dir.items()}
        self._by_name = {n: tuple(sorted(fs)) for n, fs in by_name.items()}
        self._dirs = frozenset(dirs)
        self._memo: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self._json_cache: dict[str, object] = {}
        self._ts_by_dir: dict[str, _TsOptions] = {}
        self._ts_by_config: dict[str, _TsOptions] = {}
        self._suffixes: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
        self._handlers: dict[str, Handler] = {
            "python": self._python, "javascript": self._js, "typescript": self._js,
            "tsx": self._js, "go": self._go, "rust": self._rust, "java": self._java,
            "kotlin": self._kotlin, "scala": self._scala, "c": self._c, "cpp": self._c,
            "csharp": self._csharp, "ruby": self._ruby, "php": self._php, "dart": self._dart,
            "swift": self._swift, "css": self._css, "scss": self._css, "less": self._css,
            "shell": self._shell,
        }

    def resolve(self, importer: str, language: str, spec: str) -> tuple[str, ...]:
        """The repository files `spec`, imported by `importer` in `language`, refers to (sorted;
        empty when external, standard library or not resolvable)."""
        handler = self._handlers.get(language) if isinstance(language, str) else None
        path = _clean(importer)
        if handler is None or path is None or not isinstance(spec, str):
            return ()
        spec = spec.strip()
        if not spec or len(spec) > _MAX_SPEC or "\x00" in spec:
            return ()
        # Rust `mod`/`self`/`super` depend on the file's own name; everything else on its folder.
        key = (path if language == "rust" else _parent(path), language, spec)
        found = self._memo.get(key)
        if found is None:
            found = tuple(sorted({f for f in handler(path, spec) if f in self._files}))
            self._memo[key] = found
        return tuple(f for f in found if f != path) if path in found else found

    # -- reading configuration -------------------------------------------------------------

    def _read(self, rel: str) -> str | None:
        """A listed file's text; None for unlisted files, symlinks out of the root, big files."""
        if rel not in self._files:
            return None
        try:
            real = os.path.realpath(self._root / rel)
            if not real.startswith(self._real_root.rstrip(os.sep) + os.sep):
                return None
            with open(real, "rb") as fh:
                data = fh.read(_MAX_CONFIG_BYTES + 1)
        except (OSError, ValueError):
            return None
        return data.decode("utf-8", "replace") if len(data) <= _MAX_CONFIG_BYTES else None

    def _json(self, rel: str) -> dict[str, object]:
        if rel not in self._json_cache:
            text = self._read(rel)
            self._json_cache[rel] = loads_jsonc(text) if text is not None else None
        data = self._json_cache[rel]
        return data if isinstance(data, dict) else {}

    def _toml(self, rel: str) -> dict[str, object]:
        text = self._read(rel)
        try:
            return tomllib.loads(text) if text is not None else {}
        except (ValueError, RecursionError):
            return {}

    def _first(self, candidates: Iterable[str | None]) -> tuple[str, ...]:
        for c in candidates:
            if c is not None and c in self._files:
                return (c,)
        return ()

    # -- Python ----------------------------------------------------------------------------

    def _is_package(self, directory: str) -> bool:
        return _child(directory, "__init__.py") in self._files or (
            _child(directory, "__init__.pyi") in self._files)

    @cached_property
    def _python_roots(self) -> tuple[str, ...]:
        """Folders that hold top-level packages: the parent of every outermost package."""
        roots = set()
        for name in ("__init__.py", "__init__.pyi"):
            for f in self._by_name.get(name, ()):
                top = _parent(f)
                while top and self._is_package(_parent(top)):
                    top = _parent(top)
                roots.add(_parent(top))
        return tuple(sorted(roots))

    def _python(self, importer: str, spec: str) -> tuple[str, ...]:
        here = _parent(importer)
        if spec.startswith("."):
            dots = len(spec) - len(spec.lstrip("."))
            for _ in range(dots - 1):
                if not here:
                    return ()
                here = _parent(here)
            rest = spec[dots:]
            return self._python_module(here, rest.split(".") if rest else [], relative=True)
        if self._is_package(here):
            top = here
            while self._is_package(_parent(top)) and top:
                top = _parent(top)
            first = _parent(top)
        else:
            first = here  # a script: its own folder is sys.path[0]
        for root in dict.fromkeys((first, "src", "", *self._python_roots)):
            found = self._python_module(root, spec.split("."), relative=False)
            if found:
                return found
        return ()

    def _python_module(self, base: str, parts: list[str], relative: bool) -> tuple[str, ...]:
        """The longest prefix of `parts` that is a module under `base` (`from . import y` may
        name an attribute of the package, so a relative import falls back to `__init__`)."""
        if any(not p or "/" in p for p in parts):
            return ()
        for k in range(len(parts), -1 if relative else 0, -1):
            path = _child(base, "/".join(parts[:k])) if k else base
            if k:
                found = self._first((f"{path}.py", f"{path}/__init__.py", f"{path}.pyi",
                                     f"{path}/__init__.pyi"))
                if found or path in self._dirs:
                    return found  # a namespace package has no file of its own
            else:
                return self._first((_child(base, "__init__.py"), _child(base, "__init__.pyi")))
        return ()

    # -- JavaScript, TypeScript ------------------------------------------------------------

    def _js(self, importer: str, spec: str) -> tuple[str, ...]:
        spec = spec.rpartition("!")[2].partition("?")[0]
        here = _parent(importer)
        if spec in (".", "..") or spec.startswith(("./", "../")):
            return self._probe_js(_join(here, spec))
        if not spec or spec.startswith("/") or ":" in spec.split("/")[0]:
            return ()
        opts = self._tsconfig_for(here)
        found = self._ts_paths(opts, spec)
        if not found and opts.base_url is not None:
            found = self._probe_js(_join(opts.base_url, spec))
        return found or self._workspace_import(spec)

    def _probe_js(self, path: str | None) -> tuple[str, ...]:
        if path is None:
            return ()
        if path in self._files:
            return (path,)
        stem, ext = posixpath.splitext(path)
        found = self._first(stem + alt for alt in _TS_FOR_JS.get(ext, ()))
        return (found or self._first(path + e for e in _JS_EXTS)
                or self._first(_child(path, "index" + e) for e in _JS_EXTS))

    def _tsconfig_for(self, directory: str) -> _TsOptions:
        """The options of the nearest tsconfig.json (or jsconfig.json) above `directory`."""
        if directory not in self._ts_by_dir:
            opts = _NO_TS
            for d in _ancestors(directory):
                config = self._first((_child(d, "tsconfig.json"), _child(d, "jsconfig.json")))
                if config:
                    if config[0] not in self._ts_by_config:
                        self._ts_by_config[config[0]] = self._tsconfig(config[0], frozenset())
                    opts = self._ts_by_config[config[0]]
                    break
            self._ts_by_dir[directory] = opts
        return self._ts_by_dir[directory]

    def _tsconfig(self, path: str, seen: frozenset[str]) -> _TsOptions:
        data, here = self._json(path), _parent(path)
        opts = _TsOptions(None, None, here)
        if path in seen or len(seen) > _MAX_EXTENDS:
            return opts
        extends = data.get("extends")
        for parent in extends if isinstance(extends, list) else [extends]:
            # Trigger: `extends` names a package (`@tsconfig/node20`). Why: node_modules is not
            # indexed. Outcome: only relative parents are followed.
            if isinstance(parent, str) and parent.startswith(("./", "../")):
                target = _join(here, parent)
                if target is not None and target not in self._files:
                    target += ".json"
                if target is not None:
                    opts = opts.merged(self._tsconfig(target, seen | {path}))
        options = data.get("compilerOptions")
        if not isinstance(options, dict):
            return opts
        base_url = options.get("baseUrl")
        paths = options.get("paths")
        own = _TsOptions(_join(here, base_url) if isinstance(base_url, str) else None,
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
            found = self._probe_js(_join(base, target.replace("*", best[1], 1)))
            if found:
                return found
        return ()

    def _workspace_globs(self) -> list[str]:
        spaces = self._json("package.json").get("workspaces")
        if isinstance(spaces, dict):
            spaces = spaces.get("packages")
        globs = [g for g in spaces if isinstance(g, str)] if isinstance(spaces, list) else []
        pnpm = self._read("pnpm-workspace.yaml")
        return globs + (_PNPM_ENTRY.findall(pnpm) if pnpm else [])

    @cached_property
    def _workspaces(self) -> dict[str, str]:
        """Workspace package name -> its folder (package.json `workspaces`, pnpm-workspace)."""
        globs = self._workspace_globs()
        include = [_glob_regex(g) for g in globs if not g.startswith("!")]
        exclude = [_glob_regex(g[1:]) for g in globs if g.startswith("!")]
        found: dict[str, str] = {}
        for f in self._by_name.get("package.json", ()):
            d = _parent(f)
            if (d and any(r.fullmatch(d) for r in include)
                    and not any(r.fullmatch(d) for r in exclude)):
                name = self._json(f).get("name")
                if isinstance(name, str) and name:
                    found.setdefault(name, d)
        return found

    def _workspace_import(self, spec: str) -> tuple[str, ...]:
        parts = spec.split("/")
        name = "/".join(parts[:2]) if spec.startswith("@") else parts[0]
        directory = self._workspaces.get(name)
        if directory is None:
            return ()
        manifest = self._json(_child(directory, "package.json"))
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
            found = self._probe_js(_join(directory, target))
            if found:
                return found
        return ()

    # -- Go --------------------------------------------------------------------------------

    @cached_property
    def _go_modules(self) -> tuple[tuple[str, str], ...]:
        """(module path, folder) of every go.mod, longest module path first."""
        found = []
        for f in self._by_name.get("go.mod", ()):
            match = _GO_MODULE.search(self._read(f) or "")
            if match:
                found.append((match.group(1), _parent(f)))
        return tuple(sorted(found, key=lambda m: (-len(m[0]), m[1])))

    def _go(self, importer: str, spec: str) -> tuple[str, ...]:
        for module, directory in self._go_modules:
            if spec == module or spec.startswith(module + "/"):
                package = _join(directory, spec[len(module) + 1:])
                files = self._by_dir.get(package, ()) if package is not None else ()
                return tuple(f for f in files if f.endswith(".go") and not f.endswith("_test.go"))
        return ()

    # -- Rust ------------------------------------------------------------------------------

    def _rust_crate_root(self, path: str) -> bool:
        d, _, name = path.rpartition("/")
        if name in ("lib.rs", "main.rs", "build.rs") and _child(d, "Cargo.toml") in self._files:
            return True
        tail = d.rpartition("/")[2]
        if tail == "bin" and _parent(d).rpartition("/")[2] == "src":
            crate = _parent(_parent(d))
        elif tail in ("tests", "examples", "benches"):
            crate = _parent(d)
        else:
            return False
        return _child(crate, "Cargo.toml") in self._files

    def _rust_children(self, path: str) -> str:
        """The folder where the submodules of the module in `path` live."""
        d, _, name = path.rpartition("/")
        if name in ("mod.rs", "lib.rs", "main.rs") or self._rust_crate_root(path):
            return d
        return _child(d, name.removesuffix(".rs"))

    def _rust_child(self, directory: str, name: str) -> str | None:
        found = self._first((_child(directory, name + ".rs"), _child(directory, name + "/mod.rs")))
        return found[0] if found else None

    def _rust_module_file(self, directory: str) -> tuple[str, ...]:
        return self._first((directory + ".rs", _child(directory, "mod.rs"),
                            _child(directory, "lib.rs"), _child(directory, "main.rs")))

    def _rust_src(self, importer: str) -> str | None:
        """The source folder of the crate `importer` belongs to (nearest Cargo.toml)."""
        for d in _ancestors(_parent(importer)):
            if _child(d, "Cargo.toml") in self._files:
                return _child(d, "src")
        for d in _ancestors(_parent(importer)):
            if self._first((_child(d, "lib.rs"), _child(d, "main.rs"))):
                return d
        return None

    @cached_property
    def _rust_crates(self) -> dict[str, str]:
        """Crate name (as written in paths) -> source folder, for every Cargo.toml [package]."""
        found: dict[str, str] = {}
        for f in self._by_name.get("Cargo.toml", ()):
            data = self._toml(f)
            package, lib = data.get("package"), data.get("lib")
            name = package.get("name") if isinstance(package, dict) else None
            lib_path = lib.get("path") if isinstance(lib, dict) else None
            if isinstance(lib, dict) and isinstance(lib.get("name"), str):
                name = lib["name"]
            src = _join(_parent(f), _parent(lib_path) if isinstance(lib_path, str) else "src")
            if isinstance(name, str) and src is not None:
                found.setdefault(name.replace("-", "_"), src)
        return found

    def _rust(self, importer: str, spec: str) -> Iterable[str]:
        if spec.startswith("mod "):
            name = spec[4:].strip()
            if not _RUST_IDENT.fullmatch(name):
                return ()
            child = self._rust_child(self._rust_children(importer), name.removeprefix("r#"))
            return (child,) if child else ()
        group = _expand_braces(spec)
        if group is not None:
            return [f for item in group for f in self._rust(importer, item)]
        parts = [p.strip() for p in spec.split(" as ")[0].removeprefix("::").split("::")]
        here: str | None
        if parts[0] in ("self", "super"):
            here = self._rust_children(importer)
            while parts and parts[0] in ("self", "super"):
                here = _parent(here) if parts[0] == "super" else here
                parts = parts[1:]
            return self._rust_walk(here, parts)
        if parts[0] == "crate":
            here = self._rust_src(importer)
        else:  # `extern crate x`, `x::y` of a crate in this workspace; else an external crate
            here = self._rust_crates.get(parts[0])
        return self._rust_walk(here, parts[1:]) if here is not None else ()

    def _rust_walk(self, here: str, parts: list[str]) -> tuple[str, ...]:
        """The deepest module file along `parts`; the module's own file when it names an item."""
        found: tuple[str, ...] = ()
        for seg in parts:
            child = self._rust_child(here, seg) if _RUST_IDENT.fullmatch(seg) else None
            if child is None:
                break
            found, here = (child,), _child(here, seg)
        return found or self._rust_module_file(here)

    # -- Java, Kotlin, Scala, C# ------------------------------------------------------------

    def _suffix_index(self, exts: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Dotted folder suffix (`com.acme.cart`, `Acme.Shop.Models`) -> folders ending so,
        over the folders holding a file with one of `exts`."""
        if exts not in self._suffixes:
            index: dict[str, list[str]] = defaultdict(list)
            for d, files in self._by_dir.items():
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
                for f in self._by_dir[d] if f.endswith(exts)]

    def _class_files(self, package: str, name: str, exts: tuple[str, ...]) -> list[str]:
        return [f for d in self._suffix_index(exts).get(package, ())
                for e in exts if (f := f"{d}/{name}{e}") in self._files]

    def _jvm(self, spec: str, exts: tuple[str, ...], wildcard: str) -> list[str]:
        group = _expand_braces(spec)
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

    def _java(self, importer: str, spec: str) -> list[str]:
        return self._jvm(spec, (".java", ".kt"), "*")

    def _kotlin(self, importer: str, spec: str) -> list[str]:
        return self._jvm(spec, (".kt", ".java"), "*")

    def _scala(self, importer: str, spec: str) -> list[str]:
        return self._jvm(spec, (".scala", ".java"), "_")

    def _csharp(self, importer: str, spec: str) -> list[str]:
        spec = spec.removeprefix("global::")
        if spec.split(".")[0] in _DOTNET_EXTERNAL:
            return []
        found = self._package_files(spec, (".cs",))
        package, _, name = spec.rpartition(".")
        return found or (self._class_files(package, name, (".cs",)) if package else [])

    # -- C, C++ ----------------------------------------------------------------------------

    @cached_property
    def _include_dirs(self) -> tuple[str, ...]:
        return tuple(d for d in sorted(self._dirs) if d.rpartition("/")[2] == "include")

    def _c(self, importer: str, spec: str) -> tuple[str, ...]:
        here = _parent(importer)
        if spec.startswith("<"):
            name = spec.strip("<>").strip()
            return self._first(_join(d, name) for d in self._include_dirs)
        name = spec.strip('"')
        near = [_child(d, "include") for d in _ancestors(here)]
        found = self._first(_join(d, name) for d in (here, *near, *self._include_dirs, ""))
        if found or name.startswith("../"):
            return found
        # Build-system include paths (-Isrc) are unknown: a unique path ending in `name` is used.
        same = [f for f in self._by_name.get(name.rpartition("/")[2], ())
                if f == name or f.endswith("/" + name)]
        return tuple(same) if len(same) == 1 else ()

    # -- Ruby, PHP, Dart, Swift, CSS, shell ------------------------------------------------

    def _relative(self, importer: str, rel: str, also_root: bool = True) -> tuple[str, ...]:
        here = _parent(importer)
        return self._first((_join(here, rel), _join("", rel) if also_root else None))

    def _ruby(self, importer: str, spec: str) -> tuple[str, ...]:
        name = spec if spec.endswith(".rb") else spec + ".rb"
        if spec.startswith(("./", "../")):
            return self._relative(importer, name)
        return self._first(c for d in _ancestors(_parent(importer)) for c in (
            _join(d, "lib/" + name), _join(d, name) if d.rpartition("/")[2] == "lib" else None))

    @cached_property
    def _psr4(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(namespace prefix, folders) from every composer.json, longest prefix first."""
        found: dict[str, list[str]] = defaultdict(list)
        for f in self._by_name.get("composer.json", ()):
            data = self._json(f)
            for section in ("autoload", "autoload-dev"):
                autoload = data.get(section)
                psr4 = autoload.get("psr-4") if isinstance(autoload, dict) else None
                for prefix, dirs in psr4.items() if isinstance(psr4, dict) else ():
                    key = prefix.strip("\\") + "\\" if prefix.strip("\\") else ""
                    for d in dirs if isinstance(dirs, list) else [dirs]:
                        folder = _join(_parent(f), d) if isinstance(d, str) else None
                        if folder is not None:
                            found[key].append(folder)
        return tuple(sorted(((k, tuple(v)) for k, v in found.items()), key=lambda p: -len(p[0])))

    def _php(self, importer: str, spec: str) -> tuple[str, ...]:
        if "/" in spec or spec.endswith((".php", ".inc", ".phtml")):
            return self._relative(importer, spec)
        name = spec.lstrip("\\")
        for prefix, dirs in self._psr4:
            if name.startswith(prefix):
                rel = name[len(prefix):].replace("\\", "/") + ".php"
                found = self._first(_join(d, rel) for d in dirs)
                if found:
                    return found
        return ()

    @cached_property
    def _dart_packages(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for f in self._by_name.get("pubspec.yaml", ()):
            match = _PUBSPEC_NAME.search(self._read(f) or "")
            if match:
                found.setdefault(match.group(1), _parent(f))
        return found

    def _dart(self, importer: str, spec: str) -> tuple[str, ...]:
        if spec.startswith("package:"):
            name, _, rest = spec[8:].partition("/")
            directory = self._dart_packages.get(name)
            if directory is None or not rest:
                return ()
            return self._first([_join(_child(directory, "lib"), rest)])
        return () if ":" in spec else self._relative(importer, spec, also_root=False)

    @cached_property
    def _swift_modules(self) -> dict[str, tuple[str, ...]]:
        """SwiftPM module name -> its .swift files (`Sources/<Name>/...`)."""
        found: dict[str, list[str]] = defaultdict(list)
        for f in self._files:
            if f.endswith(".swift"):
                parts = f.split("/")
                for i, part in enumerate(parts[:-2]):
                    if part == "Sources":
                        found[parts[i + 1]].append(f)
        return {k: tuple(v) for k, v in found.items()}

    def _swift(self, importer: str, spec: str) -> tuple[str, ...]:
        return self._swift_modules.get(spec, ())

    def _css(self, importer: str, spec: str) -> tuple[str, ...]:
        spec = spec.removeprefix("url(").removesuffix(")").strip("'\" ")
        if not spec or spec.startswith(("/", "~")) or ":" in spec:
            return ()  # sass:math, http://..., ~node_module
        for base in (_parent(importer), ""):
            path = _join(base, spec)
            if path is None:
                continue
            d, _, name = path.rpartition("/")
            found = self._first([path, *(c for e in _CSS_EXTS for c in (
                path + e, _child(d, f"_{name}{e}"))), *(c for e in _CSS_EXTS for c in (
                    _child(path, "index" + e), _child(path, "_index" + e)))])
            if found:
                return found
        return ()

    def _shell(self, importer: str, spec: str) -> tuple[str, ...]:
        spec = spec.strip("'\"")
        if spec.startswith("$"):
            # `$DIR/lib.sh`, `$(dirname "$0")/lib.sh`, `${BASH_SOURCE%/*}/lib.sh`: taken as
            # relative to the script's folder, which is what such prefixes almost always are.
            cut = max(spec.rfind(")/"), spec.rfind("}/"))
            spec = spec[cut + 2:] if cut >= 0 else spec.partition("/")[2]
        if not spec or spec.startswith("~"):
            return ()
        return self._relative(importer, spec)
