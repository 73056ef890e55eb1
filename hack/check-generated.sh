#!/usr/bin/env bash
# Regenerates into a copy of the working tree and fails if anything under
# the given paths differs from this tree's, showing what. Committed
# generated code must be current. The copy, not this tree: make test builds
# and vets this tree at the same time, and `make generate` removes the
# protobuf packages before writing them again.
set -euo pipefail
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
tar --exclude=./bin --exclude=./.git -cf - . | tar -C "$tree" -xf -
# The tools make generate runs, built once in bin/.
ln -s "$PWD/bin" "$tree/bin"
make -C "$tree" --no-print-directory generate >/dev/null
status=0
for p in "$@"; do
  if ! diff -ru "$p" "$tree/$p"; then status=1; fi
done
if [ "$status" -ne 0 ]; then
  echo "generated files are out of date: run 'make generate' and commit the result" >&2
fi
exit "$status"
