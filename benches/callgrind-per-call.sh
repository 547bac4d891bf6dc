#!/usr/bin/env bash
# Instructions the gateway runs per relayed call, counted by callgrind (repeatable for
# the same binary and inputs, whatever else the machine does): a run of 3,000 calls minus
# one of 1,000, halved by 2,000, so start-up cancels out. One host, one call in flight,
# 64-byte payloads, the perf harness's rmcp echo upstream.
#
#   benches/callgrind-per-call.sh GATEWAY_BINARY [legacy|modern] [extra gateway JSON]
#
# Needs valgrind and the perf harness built (PERF, default /tmp/perf:
# `cp -r ../shared/perf /tmp/perf && (cd /tmp/perf && cargo build --release)`).
set -euo pipefail
GW="$1"; era="${2:-legacy}"; extra="${3:-}"
PERF="${PERF:-/tmp/perf}"
flag=(); [[ $era == modern ]] && flag=(--modern)
count() {
  local work; work="$(mktemp -d)"
  # The configuration in a folder of its own: the gateway watches its folder.
  mkdir "$work/config"
  printf '{"mcpServers":{"up":{"command":"%s","args":[]}}%s}\n' \
    "$PERF/target/release/echo-upstream" "$extra" >"$work/config/config.json"
  taskset -c 0 "$PERF/target/release/loadgen" --calls "$1" --concurrency 1 --payload-bytes 64 \
    --warmup 20 --timeout-s 300 --tool up__echo "${flag[@]}" -- \
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$GW" --config "$work/config/config.json" \
    >/dev/null 2>&1
  callgrind_annotate "$work/cg.out" 2>/dev/null | grep -m1 "PROGRAM TOTALS" | awk '{print $1}' | tr -d ,
  rm -rf "$work"
}
few="$(count 1000)"; many="$(count 3000)"
echo "$era: $(( (many - few) / 2000 )) instructions per relayed call"
