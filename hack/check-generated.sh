#!/usr/bin/env bash
# Regenerates into the working tree and fails if anything under the given
# paths changed, showing what. Committed generated code must be current.
set -euo pipefail
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
for p in "$@"; do
  mkdir -p "$snap/$(dirname "$p")"
  if [ -e "$p" ]; then cp -a "$p" "$snap/$p"; fi
done
make --no-print-directory generate >/dev/null
status=0
for p in "$@"; do
  if ! diff -ru "$snap/$p" "$p"; then status=1; fi
done
if [ "$status" -ne 0 ]; then
  echo "generated files are out of date: run 'make generate' and commit the result" >&2
fi
exit "$status"
