"""Holds graphstore's dependency graph against the arrows docs/architecture.md allows.

The document's "What may depend on what" block lists, one line per package, the packages it
may depend on ("server/cluster ─▶ common, proto, server/sampling, server/util"). Every edge
between two packages in the graph (a bazel query of the programs' dependencies, as edges)
must be one of those arrows, and every package in the graph must have its line: a forbidden
dependency, or a new package the document does not show, fails with what to change.

Python sources are outside Bazel's graph: each one given after the document (a path inside its
package, such as tools/count_tests.py) that imports the graphstore package is an edge from its
package to `python`, held against the same arrows.
"""

import re
import sys

HEADING = "### What may depend on what"


def allowed_arrows(doc_path):
    text = open(doc_path, encoding="utf-8").read()
    start = text.index(HEADING)
    block = re.search(r"```\n(.*?)```", text[start:], re.S).group(1)
    arrows = {}
    for line in block.splitlines():
        if not line.strip():
            continue
        src, _, targets = line.partition("─▶")
        if not targets:
            raise SystemExit(f"{doc_path}: '{line}' is not of the form 'package ─▶ a, b'")
        arrows[src.strip()] = {t.strip() for t in targets.split(",") if t.strip() and t.strip() != "(nothing)"}
    return arrows


def package_edges(graph_path):
    edges = set()
    packages = set()
    for line in open(graph_path, encoding="utf-8"):
        labels = re.findall(r'"//([^":]*):[^"]*"', line)
        packages.update(labels)
        if "->" in line and len(labels) == 2 and labels[0] != labels[1]:
            edges.add((labels[0], labels[1]))
    return packages, edges


IMPORTS_GRAPHSTORE = re.compile(r"^\s*(import|from)\s+graphstore(\.|\s|$)", re.M)


def python_edges(paths):
    edges = set()
    for path in paths:
        package = path.rsplit("/", 1)[0] if "/" in path else ""
        if IMPORTS_GRAPHSTORE.search(open(path, encoding="utf-8").read()):
            edges.add((package, "python"))
    return edges


def main(graph_path, doc_path, python_paths=()):
    arrows = allowed_arrows(doc_path)
    packages, edges = package_edges(graph_path)
    edges |= python_edges(python_paths)
    if not edges:
        raise SystemExit(f"{graph_path}: no dependencies read; the query's output changed")
    problems = []
    for p in sorted(packages - set(arrows)):
        problems.append(f"package {p} is not in {doc_path}'s '{HEADING}'; add its line")
    for src, dst in sorted(edges):
        if src in arrows and dst not in arrows[src]:
            problems.append(f"{src} depends on {dst}, which {doc_path} does not allow "
                            f"({src} ─▶ {', '.join(sorted(arrows[src])) or '(nothing)'})")
    for line in problems:
        print(line)
    print(f"{len(edges)} package dependencies, {len(packages)} packages: "
          f"{'all allowed' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
