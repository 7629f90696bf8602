#!/usr/bin/env bash
# The lock analysis ran (its genrule fails the build otherwise) over the units whose locks are
# annotated: the service core's, the scheduler's and the trainer's.
set -euo pipefail
checked=$1
for unit in scheduler/backend.cc server/service/channels.cc server/service/streams.cc server/service/teardown.cc \
            client/delivery.cc client/owner_rows.cc client/stripe_reader.cc; do
  grep -qx "$unit" "$checked" || { echo "$unit was not analysed"; exit 1; }
done
echo "$(wc -l < "$checked") sources analysed"
