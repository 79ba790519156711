#!/usr/bin/env bash
# The wallet figures of docs/performance.md ("Keeping witnesses in a
# wallet"), on a Poseidon N = 2 tree of 2^24 leaves published as tiles:
#   cold start  10 notes at pseudo-random positions, one sync: objects and
#               bytes, natively (crates/wallet's follow example reading the
#               directory) and in node (clients/ts/examples/wallet.mjs with
#               the WebAssembly tracker, over HTTP from its static server,
#               which names every object it served);
#   steady      10,000 more leaves in 100 blocks of 100, a native sync and
#               checkpoint after each block (the node wallet syncs every
#               1,000 leaves): tiles and bytes per sync;
#   rewind      back 100 blocks to the cold head: one call, no request.
#
#   cargo build --release -p cairn-cli && cargo build --release -p cairn-wallet --example follow
#   cargo build --release -p cairn-wasm --target wasm32-unknown-unknown && (cd clients/ts && npm run build)
#   scripts/wallet-figures.sh target/tmp/wallet-figures      # then rm -r it (about 2 GB)
#
# WORKDIR/db and WORKDIR/tiles are built once (init, ingest of 1..2^24 as
# decimal leaves, publish: minutes) and grown by the steady phase.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:?usage: scripts/wallet-figures.sh WORKDIR}
cairn=${CAIRN_BIN:-$PWD/target/release/cairn}
follow=$PWD/target/release/examples/follow
example=$PWD/clients/ts/examples/wallet.mjs
leaves=16777216
mkdir -p "$work"
work=$(cd "$work" && pwd)

if [ ! -f "$work/tiles/checkpoint" ]; then
  echo "building $leaves Poseidon leaves and their tiles in $work"
  rm -rf "$work/db" "$work/tiles"
  "$cairn" init "$work/db" --arity 2 --hash poseidon --no-unique >/dev/null
  seq 1 "$leaves" | "$cairn" ingest "$work/db" --format dec --json - >/dev/null
  "$cairn" publish "$work/db" --to "$work/tiles" --json
fi
size=$(sed -n 's/^size //p' "$work/tiles/checkpoint")
rm -f "$work/wallet.bin" "$work/wallet.state"

# Ten notes at positions a seeded generator picks below the current size.
marks=$(python3 -c "import random; r = random.Random(30); print(' '.join(str(r.randrange($size)) for _ in range(10)))")
echo "notes at: $marks"
checkpoint_bytes=$(stat -c %s "$work/tiles/checkpoint")

echo "== cold start at $size leaves (native; + the checkpoint object of $checkpoint_bytes bytes)"
"$follow" "$work/tiles" --state "$work/wallet.bin" $(printf -- '--mark %s ' $marks) --checkpoint 0 >/dev/null
echo "== cold start (node, WebAssembly tracker over HTTP; objects and bytes include the checkpoint)"
(cd "$work" && node "$example" tiles --state wallet.state $marks >/dev/null)

echo "== steady: 100 blocks of 100 leaves"
next=$((size + 1))
for block in $(seq 1 100); do
  seq "$next" $((next + 99)) | "$cairn" ingest "$work/db" --format dec - >/dev/null
  "$cairn" publish "$work/db" --to "$work/tiles" >/dev/null
  next=$((next + 100))
  # Block 100 is synced, not checkpointed: the window holds blocks 0..99.
  if [ "$block" -lt 100 ]; then
    "$follow" "$work/tiles" --state "$work/wallet.bin" --checkpoint "$block" 2>&1 >/dev/null | sed "s/^/block $block: /"
  else
    "$follow" "$work/tiles" --state "$work/wallet.bin" 2>&1 >/dev/null | sed "s/^/block $block: /"
  fi
  if [ $((block % 10)) -eq 0 ]; then
    (cd "$work" && node "$example" tiles --state wallet.state 2>&1 >/dev/null | sed "s/^/node after block $block: /")
  fi
done

echo "== rewind 100 blocks (to block 0, the cold head), offline"
"$follow" "$work/tiles" --state "$work/wallet.bin" --rewind 0 --offline >/dev/null
