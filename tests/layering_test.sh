#!/usr/bin/env bash
# Fails when any of the given query outputs lists a dependency path (it should be empty).
status=0
for f in "$@"; do
  if [ -s "$f" ]; then
    echo "forbidden dependency path in $f:"
    cat "$f"
    status=1
  fi
done
exit $status
