#!/usr/bin/env bash
# Prints the notes the tests of `make test` left (internal/testnotes): one line per Redis used, naming
# the packages that used it, and one line per group of tests skipped, with what to install.
# Usage: scripts/test-notes.sh NOTES_FILE
set -euo pipefail
notes=${1:?usage: scripts/test-notes.sh NOTES_FILE}
[ -s "$notes" ] || exit 0
echo "--- make test: what the tests used and skipped"
# Lines are "kind<TAB>package<TAB>text"; group the packages of each distinct (kind, text).
sort -u "$notes" | awk -F '\t' '
  NF == 3 {
    key = $1 "\t" $3
    if (!(key in pkgs)) { order[++n] = key; pkgs[key] = $2 } else { pkgs[key] = pkgs[key] ", " $2 }
  }
  END {
    for (i = 1; i <= n; i++) {
      split(order[i], p, "\t")
      if (p[1] == "redis") printf "Redis: %s (%s)\n", p[2], pkgs[order[i]]
      else printf "Skipped: %s (%s)\n", p[2], pkgs[order[i]]
    }
  }'
