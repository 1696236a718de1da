"""What the docs tests (docs_links_test.py, docs_words_test.py) share: their command line and the
markdown files they read."""
import argparse
import os


def parse_root():
    """--root DIR (default: the repository holding this file), as an absolute path."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    return os.path.abspath(ap.parse_args().root)


def markdown_files(root):
    """README.md, then docs/*.md in name order."""
    docs = os.path.join(root, "docs")
    return [os.path.join(root, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


def lines_outside_fences(path):
    """(line, text) of a markdown file's lines outside fenced code blocks, the fences excluded."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if not in_fence:
                yield n, line


def report(findings, summary):
    """Prints each finding, then `summary`; the exit code: 1 when there is a finding, else 0."""
    for f in findings:
        print(f)
    print(summary)
    return 1 if findings else 0
