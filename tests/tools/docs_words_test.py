#!/usr/bin/env python3
"""Reference text, not a work log: docs/, README.md and the comments of the sources hold no dates
outside result tables, no tracker numbers and no account of who ran what when.

Checked, in README.md and docs/*.md (CHANGELOG.md is the one place for dated history):
  - a date (YYYY-MM-DD or YYYY-MM) anywhere but in the cells of a markdown table's column headed
    "date";
  - a tracker number ("issue 12", "stop 53", "#12"), the words "session", "superseded" and
    "kept as history", "paper 001"-style citations (docs/references.md names the papers) and
    DESIGN.md, which is not in the repository (docs/architecture.md is).
Checked in the comments of src/ include/ tools/ python/ bench/ tests/ (// and /* */ in C++ and
JavaScript, # in Python, shell, CMake and TOML, and Python docstrings): the same words and dates.
Code itself is not checked: `start_new_session=True` or a struct named Session are not prose.

Usage: docs_words_test.py [--root DIR]. Prints every finding as FILE:LINE: what: the line; exit 0
when there is none, 1 otherwise. Reads files only; runs in well under a second.
"""
import os
import re
import sys

from docs_common import markdown_files, parse_root, report

DATE = re.compile(r"\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])(?:-\d\d)?\b")
WORDS = [
    ("tracker number", re.compile(r"\b(?:issue|stop)s? #?\d+\b", re.IGNORECASE)),
    ("tracker number", re.compile(r"(?<![\w&{:#/'\"])#\d+\b(?![\w-])")),
    ("'session'", re.compile(r"\bsessions?\b(?!\.(?:hpp|cpp)\b)", re.IGNORECASE)),
    ("'superseded'", re.compile(r"\bsuperseded\b", re.IGNORECASE)),
    ("'kept as history'", re.compile(r"\bkept as history\b", re.IGNORECASE)),
    ("paper number (cite docs/references.md by name)", re.compile(r"\bpapers? 00\d\b", re.IGNORECASE)),
    ("DESIGN.md is not in the repository (docs/architecture.md is)", re.compile(r"\bDESIGN\.md\b")),
]
CODE_DIRS = ["src", "include", "tools", "python", "bench", "tests"]
C_LIKE = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".js", ".c"}
HASH_LIKE = {".py", ".sh", ".cmake", ".toml", ".txt"}


def table_cells(line):
    """The cells of a markdown table row, or None when the line is not one."""
    s = line.strip()
    if not s.startswith("|"):
        return None
    return [c.strip() for c in s.strip("|").split("|")]


def markdown_findings(path, rel):
    """Findings in one markdown file; dates are allowed only in a column headed 'date'."""
    out = []
    date_cols = None      # column indices headed "date" in the current table
    in_fence = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        cells = None if in_fence else table_cells(line)
        if cells is None:
            date_cols = None
            text = line
        else:
            if date_cols is None:   # the header row
                date_cols = {i for i, c in enumerate(cells) if c.lower().strip("* ") == "date"}
            text = " | ".join(c for i, c in enumerate(cells) if i not in date_cols)
        out += findings_in(rel, n, text, line, "a date outside a result table's date column")
    return out


def findings_in(rel, n, dated, worded, date_what):
    """FILE:LINE findings for a date in `dated` (named date_what) and a forbidden word in `worded`."""
    out = [f"{rel}:{n}: {date_what}: {worded.strip()}"] if DATE.search(dated) else []
    return out + [f"{rel}:{n}: {what}: {worded.strip()}" for what, rx in WORDS if rx.search(worded)]


def comments(path, ext):
    """Yields (line number, comment text) for the comments of one source file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    if ext in C_LIKE:
        in_block = False
        for n, line in enumerate(lines, 1):
            if in_block:
                end = line.find("*/")
                yield n, line if end < 0 else line[:end]
                in_block = end < 0
                continue
            m = re.search(r"(?<![:\"'\\])//(.*)", line)
            if m:
                yield n, m.group(1)
            b = line.find("/*")
            if b >= 0 and (not m or b < m.start()):
                end = line.find("*/", b + 2)
                yield n, line[b + 2:] if end < 0 else line[b + 2:end]
                in_block = end < 0
    else:
        quote = None      # the delimiter of an open Python docstring
        for n, line in enumerate(lines, 1):
            if ext == ".py":
                s = line.strip()
                if quote:
                    yield n, line
                    if quote in s:
                        quote = None
                    continue
                for q in ('"""', "'''"):
                    if s.startswith(q) or re.match(r"^[rRuUbB]?" + q, s):
                        yield n, line
                        if s.count(q) == 1:
                            quote = q
                        break
            m = re.search(r"(?:^|\s)#(?![!{]).*$", line)
            if m:
                yield n, m.group(0)


def source_findings(path, rel, ext):
    out = []
    for n, text in comments(path, ext):
        out += findings_in(rel, n, text, text, "a date in a comment")
    return out


def main():
    root = parse_root()
    findings = []
    md = markdown_files(root)
    for path in md:
        findings += markdown_findings(path, os.path.relpath(path, root))
    for d in CODE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
            dirnames[:] = sorted(x for x in dirnames if not x.startswith(".") and x != "__pycache__")
            for name in sorted(filenames):
                ext = os.path.splitext(name)[1]
                if name == "CMakeLists.txt":
                    ext = ".cmake"
                elif ext == ".txt" or ext not in C_LIKE | HASH_LIKE:
                    continue
                path = os.path.join(dirpath, name)
                if os.path.samefile(path, __file__):
                    continue      # this file names the words it looks for
                findings += source_findings(path, os.path.relpath(path, root), ext)
    return report(findings,
                  f"{len(findings)} finding(s) in {len(md)} markdown files and the comments under {', '.join(CODE_DIRS)}")


if __name__ == "__main__":
    sys.exit(main())
