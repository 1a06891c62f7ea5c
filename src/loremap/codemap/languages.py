"""Which language a file is in, and how loremap reads it (tree-sitter grammar or regex).

The names here are shared by the parser, the import resolver and the rendered map.
"""

from __future__ import annotations

from typing import NamedTuple


class Language(NamedTuple):
    """A language loremap reads: its grammar (module and function of the official
    `tree-sitter-<lang>` wheel) or None for the regex fallback."""

    name: str
    label: str
    grammar: tuple[str, str] | None


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language("python", "Python", ("tree_sitter_python", "language")),
        Language("javascript", "JavaScript", ("tree_sitter_javascript", "language")),
        Language("typescript", "TypeScript", ("tree_sitter_typescript", "language_typescript")),
        Language("tsx", "TSX", ("tree_sitter_typescript", "language_tsx")),
        Language("go", "Go", ("tree_sitter_go", "language")),
        Language("rust", "Rust", ("tree_sitter_rust", "language")),
        Language("java", "Java", ("tree_sitter_java", "language")),
        Language("kotlin", "Kotlin", ("tree_sitter_kotlin", "language")),
        Language("c", "C", ("tree_sitter_c", "language")),
        Language("cpp", "C++", ("tree_sitter_cpp", "language")),
        Language("csharp", "C#", ("tree_sitter_c_sharp", "language")),
        Language("ruby", "Ruby", ("tree_sitter_ruby", "language")),
        Language("php", "PHP", ("tree_sitter_php", "language_php")),
        Language("dart", "Dart", None),
        Language("swift", "Swift", None),
        Language("scala", "Scala", None),
        Language("css", "CSS", None),
        Language("scss", "SCSS", None),
        Language("less", "Less", None),
        Language("shell", "Shell", None),
    )
}

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin", ".kts": "kotlin",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".dart": "dart",
    ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".css": "css", ".scss": "scss", ".sass": "scss", ".less": "less",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell",
}  # fmt: skip


def language_for(path: str) -> str | None:
    """The language of a repository path by its extension, or None if loremap does not read it."""
    dot = path.rfind(".")
    if dot <= path.rfind("/"):
        return None
    return EXTENSIONS.get(path[dot:].lower())
