#!/usr/bin/env bash
# The layering: every dependency between graphstore's packages is an arrow that
# docs/architecture.md allows ($1: the dependency graph, $2: the document, $3: the checker,
# $4: the tools' Python sources, space-separated), and none of the core libraries reaches gRPC
# (the rest: one query output each, which must be empty).
status=0
graph=$1 doc=$2 checker=$3 python_sources=$4
shift 4
# shellcheck disable=SC2086  # one path per word
python3 "$checker" "$graph" "$doc" $python_sources || status=1
for f in "$@"; do
  if [ -s "$f" ]; then
    echo "forbidden dependency path in $f:"
    cat "$f"
    status=1
  fi
done
exit $status
