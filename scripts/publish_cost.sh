#!/usr/bin/env bash
# Publishing cost of a tile store: BLAKE3 N = 4, LEAVES random leaves
# published to a directory in one publication, then in steps of STEP
# leaves (a publisher that follows a growing tree); per run the PUTs
# (objects `cairn publish --json` wrote, summed), the bytes put, and what
# the store holds at the end (objects, bytes; of them the leaf level:
# bundles and leaf tiles).
#
#   scripts/publish_cost.sh [LEAVES] [STEP]   (defaults 1000000, 10000;
#   CAIRN=path/to/cairn, default target/release/cairn)
set -euo pipefail
cd "$(dirname "$0")/.."
leaves=${1:-1000000}
step=${2:-10000}
cairn=$(realpath "${CAIRN:-target/release/cairn}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c $((leaves * 32)) /dev/urandom > "$work/leaves.bin"

run() { # NAME STEP
  local name=$1 by=$2 at=0 puts=0 put_bytes=0 out
  "$cairn" init "$work/$name-db" --arity 4 --hash blake3 > /dev/null
  while [ "$at" -lt "$leaves" ]; do
    dd if="$work/leaves.bin" of="$work/chunk.bin" bs=32 skip="$at" count="$by" status=none
    "$cairn" ingest "$work/$name-db" "$work/chunk.bin" > /dev/null
    out=$("$cairn" publish "$work/$name-db" --to "$work/$name-tiles" --json)
    puts=$((puts + $(sed 's/.*"objects":\([0-9]*\).*/\1/' <<< "$out")))
    put_bytes=$((put_bytes + $(sed 's/.*"bytes":\([0-9]*\).*/\1/' <<< "$out")))
    at=$((at + by))
  done
  local stored leaf_level
  stored=$(find "$work/$name-tiles" -type f -printf '%s\n' | awk '{n++; s+=$1} END {printf "%d objects, %d bytes", n, s}')
  leaf_level=$(find "$work/$name-tiles/bundle" "$work/$name-tiles/tile/0" -type f -printf '%s\n' 2>/dev/null | awk '{n++; s+=$1} END {printf "%d objects, %d bytes", n, s}')
  echo "$name (steps of $by): $puts PUTs, $put_bytes bytes put; stored $stored (leaf level: $leaf_level)"
}
run one "$leaves"
run steps "$step"
