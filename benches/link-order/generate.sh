#!/usr/bin/env bash
# Writes benches/link-order/link-order.txt: the functions the gateway runs to start and to relay
# calls (legacy and 2026-07-28 hosts, stdio; legacy hosts with `legacySession` too), in the order it first runs them, traced
# with valgrind's lackey. benches/link-order/build.rs (the examples' build script) hands the list to the linker, which puts
# those functions side by side (see there for why). Run it after a change of
# dependencies, of the start-up path, or of where relay functions live (a function moved
# to another module or renamed has a new symbol name), then rebuild and compare peak RSS
# with ../shared/perf/run.sh.
#
# Needs: valgrind, python3, nm, and the perf harness built (PERF, default /tmp/perf:
# `cp -r ../shared/perf /tmp/perf && (cd /tmp/perf && cargo build --release)`).
set -euo pipefail
cd "$(dirname "$0")/../.."
PERF="${PERF:-/tmp/perf}"
CALLS="${CALLS:-300}"
# The functions' names do not depend on their order, so any release build will do.
[[ -n "${SKIP_BUILD:-}" ]] || cargo build --release --example gateway
GW="${CARGO_TARGET_DIR:-$PWD/target}/release/examples/gateway"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# The configuration in a folder of its own: the gateway watches its folder for changes,
# and the traces written next to it would wake it at every line.
mkdir "$WORK/config"
printf '{"mcpServers":{"up":{"command":"%s","args":[]}}}\n' "$PERF/target/release/echo-upstream" >"$WORK/config/config.json"
printf '{"mcpServers":{"up":{"command":"%s","args":[],"legacySession":true}}}\n' "$PERF/target/release/echo-upstream" >"$WORK/config/both.json"
for era in legacy modern both; do
  flag=(); [[ $era == modern ]] && flag=(--modern)
  config=config; [[ $era == both ]] && config=both
  "$PERF/target/release/loadgen" --calls "$CALLS" --concurrency 1 --payload-bytes 64 \
    --warmup 20 --timeout-s 120 --tool up__echo "${flag[@]}" -- \
    valgrind --tool=lackey --trace-mem=yes --log-file="$WORK/trace-$era.txt" \
    "$GW" --config "$WORK/config/$config.json" >/dev/null
done
nm -n "$GW" | awk '$2 ~ /^[tT]$/ {print $1, $3}' >"$WORK/symbols.txt"
# valgrind maps a position-independent executable at 0x108000.
python3 - "$WORK" >benches/link-order/link-order.txt <<'PY'
import bisect, sys
work = sys.argv[1]
addrs, names = [], []
for line in open(f"{work}/symbols.txt"):
    a, n = line.split()
    addrs.append(int(a, 16)); names.append(n)
base, seen, order = 0x108000, set(), []
for era in ("legacy", "modern", "both"):
    for line in open(f"{work}/trace-{era}.txt"):
        if not line.startswith("I"):
            continue
        a = int(line[3:].split(",")[0], 16) - base
        i = bisect.bisect_right(addrs, a) - 1
        if 0 <= a < 0x4000000 and i >= 0 and i not in seen:
            seen.add(i); order.append(names[i])
print("\n".join(order))
PY
echo "benches/link-order/link-order.txt: $(wc -l <benches/link-order/link-order.txt) functions" >&2
