"""YAML double-quoted scalars, written without PyYAML.

Note frontmatter (`frontmatter.py`) and handoff files (`sessions/handoff_file.py`, read on the
hook path, where PyYAML is not imported) both write strings this way, so both read back the
same with any YAML reader.
"""

from __future__ import annotations


def double_quoted(value: str) -> str:
    """`value` as a YAML double-quoted scalar; unprintable characters escaped the YAML way
    (`\\xNN`, `\\uNNNN`, `\\UNNNNNNNN`; JSON's surrogate pairs are not YAML escapes)."""
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code <= 0xFF else
                       f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)
