#!/usr/bin/env python3
"""Checks that every relative link in the repository's Markdown files
resolves: the file or folder exists and, for a link into a Markdown file
with #anchor, that file has a heading with that anchor (GitHub's rule).
Usage: check_links.py SOURCE_ROOT. Exits 1 and lists every broken link."""
import os
import re
import sys

SKIP_DIRS = {".git", "build", "out", "node_modules"}
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def prose_lines(path):
    """The file's lines outside fenced code blocks, inline code removed."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if not in_fence:
                yield number, re.sub(r"`[^`]*`", "", line)


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to
    hyphens, a repeated anchor numbered -1, -2, ..."""
    seen, result = {}, set()
    for _, line in prose_lines(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
        slug = slug.replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    broken, checked = [], 0
    for md in markdown_files(root):
        for number, line in prose_lines(md):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto: ...
                checked += 1
                where = f"{os.path.relpath(md, root)}:{number}: '{target}'"
                path, _, anchor = target.partition("#")
                dest = (os.path.normpath(os.path.join(os.path.dirname(md), path))
                        if path else md)
                if not os.path.exists(dest):
                    broken.append(f"{where}: no such file")
                elif anchor and dest.endswith(".md") and \
                        anchor not in anchors(dest):
                    broken.append(f"{where}: {os.path.relpath(dest, root)} "
                                  f"has no heading '#{anchor}'")
    for b in broken:
        print(b)
    print(f"{checked} relative links checked, {len(broken)} broken")
    return 1 if broken or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
