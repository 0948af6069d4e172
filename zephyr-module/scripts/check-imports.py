#!/usr/bin/env python3
"""Fails when two modules of the Zephyr staticlib (zephyr-module/src/*.rs) import each other,
directly or through others: two modules that need each other are one concept split wrongly, or
share a third that wants its own place.

A module's imports are the `crate::NAME` paths in its code (comments left out); `sys` and
`config`, generated into lib.rs, import nothing.

Usage: check-imports.py   (exit status 1 with each circle found)
"""

import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def imports():
    graph = {}
    for name in sorted(os.listdir(SRC)):
        if not name.endswith(".rs") or name == "lib.rs":
            continue
        module = name[:-3]
        with open(os.path.join(SRC, name), encoding="utf-8") as f:
            code = "\n".join(line.split("//")[0] for line in f)
        graph[module] = {m for m in re.findall(r"\bcrate::(\w+)", code) if m != module}
    return graph


def circles(graph):
    """Each circle once, as the list of its modules from its smallest name."""
    found = set()

    def walk(path):
        for nxt in sorted(graph.get(path[-1], ())):
            if nxt == path[0]:
                found.add(tuple(path))
            elif nxt not in path and nxt > path[0]:
                walk(path + [nxt])

    for start in sorted(graph):
        walk([start])
    return sorted(found)


def main():
    graph = imports()
    found = circles(graph)
    for circle in found:
        print("imports: circle " + " -> ".join(circle + (circle[0],)), file=sys.stderr)
    if found:
        return 1
    print(f"imports: no circle among the {len(graph)} modules of zephyr-module/src")
    return 0


if __name__ == "__main__":
    sys.exit(main())
