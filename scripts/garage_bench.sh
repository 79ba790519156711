#!/usr/bin/env bash
# The tile path end to end on Garage, a distributed S3-compatible object
# store: a three-node Garage cluster on 127.0.0.1 (replication factor 3,
# writes need two nodes), then
#   1. a signed publication of a LEAVES-leaf database through node 1;
#   2. proofs from the tiles through node 2, checked against the same
#      proofs from the database;
#   3. a verifying mirror through node 3, root checked against the primary's;
#   4. node faults: node 3 stopped, more leaves published (two nodes are a
#      quorum) and mirrored; node 2 stopped too, a publication refused with
#      the old checkpoint standing; both restarted, published again and
#      mirrored from the checkpoint the faults left;
#   5. how far `cairn serve --publish` lags at 20,000 appends/s
#      (scripts/publish_lag.py against the cluster).
#
#   scripts/garage_bench.sh [LEAVES]   (default 1000000; release builds of
#   cairn and cairn-load; GARAGE=/path/to/garage, else scripts/install-garage)
#
# Everything listens on 127.0.0.1 and stops by itself. Each step prints one
# line; a check that fails stops the script with a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/.."
leaves="${1:-1000000}"
bin=target/release
garage="${GARAGE:-$(scripts/install-garage)}"
work="$(mktemp -d)"
declare -A pids
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

now() { python3 -c 'import time; print(time.monotonic())'; }
elapsed() { python3 -c "print(f'{$2-$1:.2f}')"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() { echo "FAILED: $*" >&2; exit 1; }

echo "garage: $("$garage" --version 2>&1 | head -1)"
secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
for i in 1 2 3; do
  rpc[$i]=$(free_port)
  s3[$i]=$(free_port)
  mkdir -p "$work/n$i"
  cat > "$work/n$i.toml" <<EOF
metadata_dir = "$work/n$i/meta"
data_dir = "$work/n$i/data"
db_engine = "lmdb"
replication_factor = 3
rpc_bind_addr = "127.0.0.1:${rpc[$i]}"
rpc_public_addr = "127.0.0.1:${rpc[$i]}"
rpc_secret = "$secret"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:${s3[$i]}"
EOF
done
g() { "$garage" -c "$work/n1.toml" "$@"; }
start_node() {
  RUST_LOG=warn "$garage" -c "$work/n$1.toml" server >> "$work/n$1.log" 2>&1 &
  pids[$1]=$!
  for _ in $(seq 200); do
    "$garage" -c "$work/n$1.toml" node id -q > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$work/n$1.log" >&2
  fail "garage node $1 did not start"
}
stop_node() { kill "${pids[$1]}"; wait "${pids[$1]}" 2>/dev/null || true; unset "pids[$1]"; }
# A restarted node is connected to node 1 at once, as an operator would
# (left alone, node 1 had not reconnected to restarted nodes 28 s later).
restart_node() { start_node "$1"; g node connect "${id[$1]}" > /dev/null; }

for i in 1 2 3; do start_node "$i"; done
for i in 1 2 3; do id[$i]="$("$garage" -c "$work/n$i.toml" node id -q 2>/dev/null)"; done
g node connect "${id[2]}" > /dev/null
g node connect "${id[3]}" > /dev/null
for i in 1 2 3; do g layout assign -z "dc$i" -c 1G "${id[$i]%%@*}" > /dev/null; done
g layout apply --version 1 > /dev/null
key_id="GK$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
key_secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
g key import --yes -n cairn "$key_id" "$key_secret" > /dev/null
g bucket create tiles > /dev/null
g bucket allow --read --write --owner tiles --key cairn > /dev/null
export AWS_ACCESS_KEY_ID="$key_id" AWS_SECRET_ACCESS_KEY="$key_secret" AWS_REGION=garage
for i in 1 2 3; do endpoint[$i]="http://127.0.0.1:${s3[$i]}"; done
echo "cluster: 3 nodes, replication factor 3, S3 on ${endpoint[*]}"

store=s3://tiles/bench
"$bin/cairn-load" fill --dir "$work/primary" --leaves "$leaves" --arity 4 --hash blake3 > /dev/null
"$bin/cairn" keygen --name bench.example/tiles --out "$work/signer.key" > "$work/verifier.key"

# 1. Publish (signed) through node 1.
t0=$(now)
out="$("$bin/cairn" publish "$work/primary" --to "$store" --s3-endpoint "${endpoint[1]}" --sign-key "$work/signer.key" --json)"
t1=$(now)
echo "publish $leaves leaves through node 1: $(elapsed "$t0" "$t1") s, $out"

# 2. Proofs from the tiles through node 2, each a fresh process (cold cache).
count=20
total=0
for n in $(seq "$count"); do
  index=$(( (n * 7919 * 104729) % leaves ))
  t0=$(now)
  from_tiles="$("$bin/cairn" prove --tiles "$store" --s3-endpoint "${endpoint[2]}" --verify-key "$work/verifier.key" --index "$index")"
  t1=$(now)
  total=$(python3 -c "print($total + $t1 - $t0)")
  from_db="$("$bin/cairn" prove "$work/primary" --index "$index")"
  [ "$from_tiles" = "$from_db" ] || fail "the proof of $index from the tiles differs from the database's"
done
echo "proofs from tiles through node 2: $count, each equal to the database's, $(python3 -c "print(f'{$total/$count*1e3:.1f}')") ms per proof (a process each, cold)"

# 3. A verifying mirror through node 3.
t0=$(now)
"$bin/cairn" mirror --from "$store" --s3-endpoint "${endpoint[3]}" --verify-key "$work/verifier.key" "$work/mirror" > /dev/null
t1=$(now)
root() { "$bin/cairn" root "$1"; }
[ "$(root "$work/mirror")" = "$(root "$work/primary")" ] || fail "the mirror's root differs from the primary's"
echo "mirror through node 3: $(python3 -c "print(f'{$leaves/($t1-$t0):,.0f}')") leaves/s ($(elapsed "$t0" "$t1") s), root equal to the primary's"

# 4. Faults.
more() { python3 -c "import os,sys; sys.stdout.buffer.write(os.urandom(32*$1))" > "$work/more.bin"; "$bin/cairn" ingest "$work/primary" "$work/more.bin" > /dev/null; }
stop_node 3
more 100000
out="$("$bin/cairn" publish "$work/primary" --to "$store" --s3-endpoint "${endpoint[1]}" --sign-key "$work/signer.key" --json)"
echo "node 3 stopped: 100,000 more leaves published through node 1: $out"
"$bin/cairn" mirror --from "$store" --s3-endpoint "${endpoint[2]}" --verify-key "$work/verifier.key" "$work/mirror" > /dev/null
[ "$(root "$work/mirror")" = "$(root "$work/primary")" ] || fail "the mirror did not follow with node 3 down"
echo "node 3 stopped: the mirror followed through node 2"
published_before="$(root "$work/mirror")"
stop_node 2
more 100000
set +e
"$bin/cairn" publish "$work/primary" --to "$store" --s3-endpoint "${endpoint[1]}" --sign-key "$work/signer.key" --retries 2 --retry-seconds 5 > "$work/refused.out" 2> "$work/refused.err"
status=$?
set -e
[ "$status" = 4 ] || { cat "$work/refused.err" >&2; fail "a publication without a write quorum exited $status, not 4"; }
echo "nodes 2 and 3 stopped: publication refused (exit 4): $(head -c 200 "$work/refused.err")"
restart_node 2
restart_node 3
for _ in $(seq 100); do
  "$bin/cairn" mirror --from "$store" --s3-endpoint "${endpoint[3]}" --verify-key "$work/verifier.key" "$work/mirror" > /dev/null 2>&1 && break
  sleep 0.2
done
[ "$(root "$work/mirror")" = "$published_before" ] || fail "the refused publication moved the published checkpoint"
echo "nodes restarted: the checkpoint is still the one before the refused publication"
out="$("$bin/cairn" publish "$work/primary" --to "$store" --s3-endpoint "${endpoint[1]}" --sign-key "$work/signer.key" --json)"
"$bin/cairn" mirror --from "$store" --s3-endpoint "${endpoint[3]}" --verify-key "$work/verifier.key" "$work/mirror" > /dev/null
[ "$(root "$work/mirror")" = "$(root "$work/primary")" ] || fail "the mirror did not catch up after the restart"
echo "nodes restarted: published again ($out) and mirrored through node 3, root equal"

# An outage in the middle of a publication: nodes 2 and 3 stop while the
# bundles and tiles of 4,000,000 more leaves are being written (about 6 s
# of writing on an idle machine: 1M leaves, 15 bundles, publish in about
# 1.5 s) and come back 4 s later; the publisher retries through it, and a
# mirror then verifies every object the new checkpoint names.
more 4000000
t0=$(now)
"$bin/cairn" publish "$work/primary" --to "$store" --s3-endpoint "${endpoint[1]}" --sign-key "$work/signer.key" --json > "$work/outage.out" 2> "$work/outage.err" &
publisher=$!
sleep 0.5
kill -0 "$publisher" 2>/dev/null || fail "the publication ended before the outage began: $(cat "$work/outage.out" "$work/outage.err")"
stop_node 2
stop_node 3
sleep 4
restart_node 2
restart_node 3
wait "$publisher" || fail "the publication did not survive the outage: $(cat "$work/outage.err")"
t1=$(now)
"$bin/cairn" mirror --from "$store" --s3-endpoint "${endpoint[2]}" --verify-key "$work/verifier.key" "$work/mirror" > /dev/null
[ "$(root "$work/mirror")" = "$(root "$work/primary")" ] || fail "the mirror did not verify the publication made through the outage"
echo "outage of nodes 2 and 3 mid-publication: the publisher retried through it ($(elapsed "$t0" "$t1") s in all, $(cat "$work/outage.out")), mirrored through node 2, root equal"

# 5. Publishing lag at 20,000 appends/s through node 1.
python3 scripts/publish_lag.py --cairn "$bin/cairn" --rate 20000 --seconds 20 \
  --s3-endpoint "${endpoint[1]}" --s3-store s3://tiles/lag
