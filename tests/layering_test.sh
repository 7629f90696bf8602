#!/usr/bin/env bash
# The layering: every dependency between graphstore's packages is an arrow that
# docs/architecture.md allows ($1: the dependency graph, $2: the document, $3: the checker),
# and none of the core libraries reaches gRPC (the rest: one query output each, which must be
# empty).
status=0
graph=$1 doc=$2 checker=$3
shift 3
python3 "$checker" "$graph" "$doc" || status=1
for f in "$@"; do
  if [ -s "$f" ]; then
    echo "forbidden dependency path in $f:"
    cat "$f"
    status=1
  fi
done
exit $status
