#!/usr/bin/env python3
"""docs/architecture.md's layer table names the tree as it is.

The table is the first markdown table after the heading "## Layers": its first column names one
folder per row (`src/core/`, `tools/fast/`, ...), its second the libraries built there (`fast_core`).
Checked:
  - every folder the table names exists;
  - every folder under src/ that holds a file (src/runtime/, src/runtime/engine/, src/adapters/torch/;
    not src/adapters/, which holds only folders) is named by a row;
  - every library named `fast_...` in the second column is a target some CMakeLists.txt of the tree
    defines (add_library, fast_layer, fast_runtime_target).
A folder added or renamed under src/ without a row, or a row left naming a folder that moved, fails.

Usage: docs_layers_test.py [--root DIR]. Prints every finding, then a summary; exit 0 when there is
none, 1 otherwise. Reads files only; runs in well under a second.
"""
import os
import re
import sys

from docs_common import lines_outside_fences, parse_root, report

FOLDER = re.compile(r"`([\w./-]+/)`")
LIBRARY = re.compile(r"`(fast_\w+)`")
# The ways the tree's CMakeLists.txt define a library: add_library(NAME ...), fast_layer(name ...)
# (the library fast_<name>), fast_runtime_target(NAME ...), pybind11_add_module(NAME ...).
DEFINITIONS = [
    (re.compile(r"\badd_library\(\s*([\w-]+)"), ""),
    (re.compile(r"\bpybind11_add_module\(\s*(\w+)"), ""),
    (re.compile(r"\bfast_layer\(\s*(\w+)"), "fast_"),
    (re.compile(r"\bfast_runtime_target\(\s*(\w+)"), ""),
]
SKIP_DIRS = {"build", ".git", "third_party"}


def layer_rows(path):
    """(line, first cell, second cell) of each body row of the table under '## Layers'."""
    rows = []
    in_section = False
    header_seen = False
    for n, line in lines_outside_fences(path):
        if line.startswith("## "):
            if in_section:
                break
            in_section = line.startswith("## Layers")
            continue
        if not in_section:
            continue
        s = line.strip()
        if not s.startswith("|"):
            if rows or header_seen:
                break  # the table ended
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if not header_seen:
            header_seen = True  # the header row
            continue
        if set(cells[0]) <= set("-: "):
            continue  # the separator row
        rows.append((n, cells[0], cells[1] if len(cells) > 1 else ""))
    return rows


def source_folders(root):
    """Every folder below src/ that directly holds a file, as 'src/a/b/' (src/ itself, which holds
    the CMakeLists.txt that lists them, is not a layer)."""
    out = []
    top = os.path.join(root, "src")
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        if files and d != top:
            out.append(os.path.relpath(d, root).replace(os.sep, "/") + "/")
    return sorted(out)


def cmake_libraries(root):
    """The library targets the tree's CMakeLists.txt and cmake/*.cmake define."""
    names = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")]
        for f in files:
            if f != "CMakeLists.txt" and not f.endswith(".cmake"):
                continue
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                text = fh.read()
            for pattern, prefix in DEFINITIONS:
                names.update(prefix + m.group(1) for m in pattern.finditer(text))
    return names


def findings(root):
    doc = os.path.join(root, "docs", "architecture.md")
    rows = layer_rows(doc)
    if not rows:
        return ["docs/architecture.md: no layer table under '## Layers'"]
    out = []
    named = set()
    libraries = cmake_libraries(root)
    for n, first, second in rows:
        folders = FOLDER.findall(first)
        if not folders:
            out.append(f"docs/architecture.md:{n}: expected a folder such as `src/core/` in the first cell, got '{first}'")
        for folder in folders:
            named.add(folder)
            if not os.path.isdir(os.path.join(root, folder)):
                out.append(f"docs/architecture.md:{n}: folder {folder}: not in the tree")
        for lib in LIBRARY.findall(second):
            if lib not in libraries:
                out.append(f"docs/architecture.md:{n}: library {lib}: no CMakeLists.txt defines it")
    for folder in source_folders(root):
        if folder not in named:
            out.append(f"{folder}: holds files but has no row in docs/architecture.md's layer table")
    return out


def main():
    root = parse_root()
    found = findings(root)
    return report(found, f"docs_layers_test: {len(found)} finding(s)")


if __name__ == "__main__":
    sys.exit(main())
