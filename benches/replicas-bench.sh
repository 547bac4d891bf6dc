#!/bin/bash
# Run from anywhere with the perf harness built (/tmp/perf) and haproxy installed:
#   GW=target/release/examples/gateway benches/replicas-bench.sh
# replicas: the cost of a forward, and 3 replicas vs 1 behind HAProxy (release gateway, perf echo upstream)
GW=${GW:-/tmp/gw-new}; D=/tmp/repbench; rm -rf $D; mkdir -p $D
head -c 48 /dev/urandom | base64 > $D/key
P=(0 18921 18922 18923); PH=18920; PH1=18924
for n in 1 2 3; do
cat > $D/gw$n.json <<JSON
{"mcpServers":{"up":{"command":"/tmp/perf/target/release/echo-upstream","args":[]}},
 "gateway":{"cluster":{"replica":$n,"keys":[{"name":"k","secretFile":"$D/key"}],
  "peers":{"1":"http://127.0.0.1:${P[1]}","2":"http://127.0.0.1:${P[2]}","3":"http://127.0.0.1:${P[3]}"}}}}
JSON
$GW --config $D/gw$n.json --http 127.0.0.1:${P[$n]} > /dev/null 2> $D/gw$n.err &
done
hap() { # name port backends...
  local name=$1 port=$2; shift 2
  { printf 'global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\nfrontend f\n  bind 127.0.0.1:%s\n  default_backend b\nbackend b\n  balance roundrobin\n' $port
    for p in "$@"; do printf '  server s%s 127.0.0.1:%s\n' $p $p; done; } > $D/$name.cfg
  haproxy -f $D/$name.cfg -db > $D/$name.log 2>&1 &
}
hap three $PH ${P[1]} ${P[2]} ${P[3]}
hap one $PH1 ${P[1]}
sleep 2
export TOOL=up__echo
lat() { grep -E "Requests/sec|^ +50%" | tr -s ' ' | tr '\n' ' '; echo; }
# a legacy session held by replica 1
hdrs="$(curl -s -D - -o /dev/null -X POST http://127.0.0.1:${P[1]}/mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"p","version":"0.1.0"}}}')"
sid="$(printf '%s' "$hdrs" | tr -d '\r' | sed -n 's/^[Mm][Cc][Pp]-[Ss][Ee][Ss][Ss][Ii][Oo][Nn]-[Ii][Dd]: *//p' | head -1)"
curl -s -o /dev/null -X POST http://127.0.0.1:${P[1]}/mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
export MCP_SESSION_ID=$sid
for c in 1 16; do for round in 1 2; do
  echo -n "legacy c$c at the owner:     "; wrk -t1 -c$c -d4s --latency -s /tmp/perf/http/call-legacy.lua http://127.0.0.1:${P[1]}/mcp 2>&1 | lat
  echo -n "legacy c$c via replica 2:    "; wrk -t1 -c$c -d4s --latency -s /tmp/perf/http/call-legacy.lua http://127.0.0.1:${P[2]}/mcp 2>&1 | lat
done; done
for c in 16 64; do for round in 1 2; do
  echo -n "2026 c$c haproxy, 1 replica:  "; wrk -t1 -c$c -d4s --latency -s /tmp/perf/http/call2026.lua http://127.0.0.1:$PH1/mcp 2>&1 | lat
  echo -n "2026 c$c haproxy, 3 replicas: "; wrk -t1 -c$c -d4s --latency -s /tmp/perf/http/call2026.lua http://127.0.0.1:$PH/mcp 2>&1 | lat
done; done
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
