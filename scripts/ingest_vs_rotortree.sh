#!/usr/bin/env bash
# Whole-process durable ingest, as a new user would run it: `cairn init` +
# `cairn ingest` of a file of LEAVES random 32-byte leaves (N = 4, BLAKE3,
# the nullifier set on, blocks of 1M leaves) against rotortree 0.20
# ingesting the same file (`rotor_ingest`: insert_many and a wait per 1M
# block, no duplicate check), as it leaves its store by default (the log
# only, replayed at the next open) and checkpointed before it closes (as
# `cairn ingest` leaves its database), ROUNDS interleaved rounds (the
# order rotates), page cache warm; prints each run, the medians and the
# ratios cairn / rotortree (below 1: cairn is faster). The roots must be
# equal.
#
#   scripts/ingest_vs_rotortree.sh [LEAVES] [ROUNDS]   (default 10000000 3;
#   release builds: cargo build --release --bin cairn -p cairn-bench --bin rotor_ingest)
set -euo pipefail
cd "$(dirname "$0")/.."
leaves="${1:-10000000}"
rounds="${2:-3}"
bin=target/release
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -c "
import hashlib, sys
out = sys.stdout.buffer
for i in range($leaves):
    out.write(hashlib.blake2s(i.to_bytes(8, 'little')).digest())
" > "$work/leaves.bin"
cat "$work/leaves.bin" > /dev/null

now() { python3 -c 'import time; print(time.monotonic())'; }
run_cairn() {
  rm -rf "$work/c"
  local t0 t1
  t0=$(now)
  "$bin/cairn" init "$work/c" --arity 4 --hash blake3 > /dev/null
  "$bin/cairn" ingest "$work/c" "$work/leaves.bin" > /dev/null
  t1=$(now)
  python3 -c "print(f'{$t1-$t0:.3f}')"
}
run_rotor() {
  rm -rf "$work/r"
  local t0 t1
  t0=$(now)
  "$bin/rotor_ingest" "$work/r" "$work/leaves.bin" --arity 4 "$@" > "$work/rotor.out"
  t1=$(now)
  python3 -c "print(f'{$t1-$t0:.3f}')"
}

cairn_times=()
rotor_times=()
rotor_cp_times=()
check_roots() {
  cairn_root="$("$bin/cairn" root "$work/c")"
  rotor_root="$(sed -n 's/.*root //p' "$work/rotor.out")"
  [ "$cairn_root" = "$rotor_root" ] || { echo "roots differ: cairn $cairn_root, rotortree $rotor_root" >&2; exit 1; }
}
for round in $(seq "$rounds"); do
  case $(( round % 3 )) in
    1) c=$(run_cairn); r=$(run_rotor); check_roots; rc=$(run_rotor --checkpoint) ;;
    2) r=$(run_rotor); rc=$(run_rotor --checkpoint); c=$(run_cairn) ;;
    0) rc=$(run_rotor --checkpoint); c=$(run_cairn); r=$(run_rotor) ;;
  esac
  check_roots
  echo "round $round: cairn ingest $c s, rotortree $r s, rotortree + checkpoint $rc s"
  cairn_times+=("$c"); rotor_times+=("$r"); rotor_cp_times+=("$rc")
done
python3 - "$leaves" "${cairn_times[*]}" "${rotor_times[*]}" "${rotor_cp_times[*]}" <<'EOF'
import statistics, sys
leaves = int(sys.argv[1])
c, r, rc = ([float(x) for x in arg.split()] for arg in sys.argv[2:5])
mc, mr, mrc = (statistics.median(x) for x in (c, r, rc))
rate = lambda t: f"{leaves / t / 1e6:.2f}M leaves/s"
print(f"median: cairn {mc:.3f} s ({rate(mc)}), rotortree {mr:.3f} s ({rate(mr)}), rotortree + checkpoint {mrc:.3f} s ({rate(mrc)})")
print(f"ratio cairn/rotortree: median {mc / mr:.2f}, per round {', '.join(f'{a / b:.2f}' for a, b in zip(c, r))}")
print(f"ratio cairn/(rotortree + checkpoint): median {mc / mrc:.2f}, per round {', '.join(f'{a / b:.2f}' for a, b in zip(c, rc))}")
EOF
