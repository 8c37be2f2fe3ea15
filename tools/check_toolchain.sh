#!/usr/bin/env bash
# One line, and a non-zero exit, if bmv2 or p4c is missing: make test must not run without them.
missing=()
for tool in p4c-bm2-ss simple_switch; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "make: missing ${missing[*]} (bmv2/p4c): run 'make deps' (it builds the pinned toolchain); no test was run"
  exit 1
fi
