#!/usr/bin/env python3
"""Every relative link and #anchor of README.md and docs/*.md resolves.

For each markdown link [text](target) and image ![alt](target) outside code (fenced blocks and
`inline code` are skipped), when the target is not an absolute URL (http:, https:, mailto:):
  - its path, relative to the file that holds the link, names a file or a folder of the tree;
  - its #anchor, when there is one and the target is a markdown file (or the same file), is the
    GitHub-style anchor of one of that file's headings: the heading's text lowercased, markdown
    formatting removed, every character but letters, digits, spaces, hyphens and underscores
    dropped, spaces turned into hyphens; the second heading with the same anchor gets "-1", the
    third "-2", and so on. An <a name="..."> or id="..." in the file also counts.

Prose references to a section, as `docs/launch.md, "Across hosts"` (a markdown file's name, an
optional comma, and a quoted title), are checked too: the file must have a heading whose text,
markdown removed, starts with the quoted title (case ignored).

Files of the repository named anywhere in the text, code blocks included (`fast train --config
examples/demo.toml`): a path under examples/, clusters/, bench/, tools/ or tests/ with the
extension of a config, script or source file must name a file of the tree, relative to the root;
a path with a placeholder in capitals (clusters/scale-N.toml, tests/fuzz/fuzz_NAME.cpp) is not
checked.

Usage: docs_links_test.py [--root DIR]. Prints every broken link as FILE:LINE: target: why; exit 0
when there is none, 1 otherwise. Reads files only.
"""
import os
import re
import sys

from docs_common import lines_outside_fences, markdown_files, parse_root, report

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SECTION_REF = re.compile(r"((?:[\w.-]+/)*[\w-]+\.md)(?:'s)?,? (?:section )?\"([^\"]+)\"")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
REPO_FILE = re.compile(r"(?<![\w/.-])((?:examples|clusters|bench|tools|tests)/[\w./-]*\w\.(?:toml|py|json|sh|cpp|hpp|txt))")
PLACEHOLDER = re.compile(r"(?<![a-z])[A-Z]+(?![a-z])")


def strip_inline_code(line):
    return re.sub(r"`+[^`]*`+", "", line)


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)     # images: their alt text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)      # links: their text
    text = re.sub(r"<[^>]+>", "", text)                      # html tags
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*|~~)", "", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_anchor_cache = {}
_title_cache = {}


def titles(path):
    """The headings of a markdown file, markdown removed and lowercased."""
    if path not in _title_cache:
        _title_cache[path] = [plain(m.group(2)) for _, line in lines_outside_fences(path)
                              if (m := HEADING.match(line.rstrip("\n")))]
    return _title_cache[path]


def plain(text):
    """A heading or a quoted title without markdown, lowercased."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"(`|\*\*|__)", "", text).strip().lower()


def anchors(path):
    """The anchors a markdown file defines."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    seen = {}
    result = set()
    for _, line in lines_outside_fences(path):
        for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
            result.add(m.group(1))
        m = HEADING.match(line.rstrip("\n"))
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    _anchor_cache[path] = result
    return result


def check(path, root):
    out = []
    rel = os.path.relpath(path, root)
    for n, line in lines_outside_fences(path):
        line = line.rstrip("\n")
        for m in LINK.finditer(strip_inline_code(line)):
            target = m.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue                                     # http:, https:, mailto:, ...
            file_part, _, anchor = target.partition("#")
            dest = path if file_part == "" else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                out.append(f"{rel}:{n}: {target}: no such file or folder ({os.path.relpath(dest, root)})")
                continue
            if anchor and dest.endswith(".md") and os.path.isfile(dest) and anchor not in anchors(dest):
                out.append(f"{rel}:{n}: {target}: no heading with anchor #{anchor} in {os.path.relpath(dest, root)}")
        for m in SECTION_REF.finditer(line):
            name, title = m.group(1), m.group(2)
            candidates = [os.path.normpath(os.path.join(d, name)) for d in (os.path.dirname(path), root, os.path.join(root, "docs"))]
            dest = next((c for c in candidates if os.path.isfile(c)), None)
            if dest is None:
                out.append(f"{rel}:{n}: {name}, \"{title}\": no such file")
            elif not any(t.startswith(plain(title)) for t in titles(dest)):
                out.append(f"{rel}:{n}: {name}, \"{title}\": no heading starting so in {os.path.relpath(dest, root)}")
    return out


def check_repo_files(path, root):
    """The repository files a markdown file names (code blocks included) that do not exist."""
    out = []
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in REPO_FILE.finditer(line):
                name = m.group(1)
                if not PLACEHOLDER.search(name) and not os.path.exists(os.path.join(root, name)):
                    out.append(f"{rel}:{n}: {name}: no such file in the tree")
    return out


def main():
    root = parse_root()
    files = markdown_files(root)
    broken = []
    for path in files:
        broken += check(path, root) + check_repo_files(path, root)
    return report(broken, f"{len(broken)} broken link(s) in {len(files)} markdown files")


if __name__ == "__main__":
    sys.exit(main())
