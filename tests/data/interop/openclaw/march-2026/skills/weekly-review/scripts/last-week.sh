#!/usr/bin/env bash
# Print the daily notes of the last 7 days, oldest first.
set -euo pipefail
for offset in 6 5 4 3 2 1 0; do
  day=$(date -d "-${offset} days" +%F)
  note="memory/${day}.md"
  [ -f "$note" ] && { echo "## ${day}"; cat "$note"; }
done
