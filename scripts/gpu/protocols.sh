#!/usr/bin/env bash
# GPU sitting, one call (issue 21): every agent protocol on the GPU recipe, direct and through
# the gateway, in one boot of the agent-admission profile (the one whose long input failed
# direct in the first sittings).
#   1. `bench agent-check --api chat|messages|responses`, direct (engine port) and through the
#      gateway: six reports, packed into one tarball (JSON + Markdown each);
#   2. `bench agents --api chat|messages|responses` through the gateway (8 agents x 6 turns,
#      coding-agent): three results and one table beside each other (goodput, usage check);
#   0. first, keepalive_probe.py: whether the engine closes a kept-alive connection after an
#      answer (the long input's ServerDisconnectedError of the first sittings: the engine, or
#      the client reusing the connection?);
#   3. the engine log's error lines and its tail.
# One call of at most 9.5 minutes (CALL_BUDGET_S=570). Comes back (7 files):
#   $OUT/protocols.log, $OUT/keepalive.txt, $OUT/agent-check.tar.gz, $OUT/agents-table.md,
#   $OUT/agents-results.tar.gz, $OUT/engine-log-tail.txt, $OUT/conditions.txt
# DRY_RUN=1 prints the commands; RECIPE=tiny-cpu PROFILE=agent AGENTS=2 TURNS=2
# LONG_TOKENS=4096 rehearses it against the CPU engine.
export CALL_BUDGET_S=${CALL_BUDGET_S:-570}
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/protocols.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
PROFILE=${PROFILE:-agent-admission}
GATEWAY_PORT=${GATEWAY_PORT:-8100}
AGENTS=${AGENTS:-8} TURNS=${TURNS:-6} WORKLOAD=${WORKLOAD:-coding-agent}
SLO=${SLO:-ttft_p95=2s} LABEL=${LABEL:-gpu-h200}
work="$SITTING/protocols"
mkdir -p "$work/agent-check" "$work/agents"
[ "$DRY_RUN" = 1 ] || conditions > "$OUT/conditions.txt"

# Runs an sm121 command for at most $2 s and within what is left of the call, keeping $1 s for
# what follows.
within() {
    local keep=$1 cap=$2; shift 2
    local left=$(( $(seconds_left) - keep ))
    [ "$left" -gt "$cap" ] && left=$cap
    if [ "$left" -lt 20 ]; then say "no time left for: sm121 $*"; return 0; fi
    say "sm121 $* (at most ${left}s)"
    [ "$DRY_RUN" = 1 ] && return 0
    timeout -s TERM -k 15 "$left" sm121 "$@" || say "exited $?"
}

sm serve "$RECIPE" --profile "$PROFILE" --port "$PORT" --gateway --gateway-port "$GATEWAY_PORT" \
    --timeout $(( $(seconds_left) - 360 ))
run=$(last_run || true)
model=$( [ "$DRY_RUN" = 1 ] && echo MODEL || python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$SM121_HOME/runs/$run/run.json")
direct="http://127.0.0.1:$PORT" gateway="http://127.0.0.1:$GATEWAY_PORT"

# Does the engine close a kept-alive connection after an answer (the 400 to a big body before
# the long input)? Stdlib, seconds.
say "keepalive_probe.py $direct"
if [ "$DRY_RUN" != 1 ]; then
    max_len=$(python3 -c 'import json,sys,urllib.request; d=json.load(urllib.request.urlopen(sys.argv[1] + "/v1/models")); print(d["data"][0].get("max_model_len") or 131072)' "$direct")
    timeout 120 python3 "$GPU_SCRIPTS/keepalive_probe.py" "$direct" "$model" "$max_len" \
        > "$OUT/keepalive.txt" 2>&1 || say "probe exited $?"
    cat "$OUT/keepalive.txt"
fi

for api in chat messages responses; do
    for target in direct gateway; do
        url=$direct; [ "$target" = gateway ] && url=$gateway
        within 240 90 bench agent-check --url "$url" --model "$model" --api "$api" \
            --label "$LABEL-$target-$api" --out "$work/agent-check/$target-$api.json" \
            ${LONG_TOKENS:+--long-tokens "$LONG_TOKENS"}
    done
done
tar -C "$work" -czf "$OUT/agent-check.tar.gz" agent-check 2> /dev/null || true

for api in chat messages responses; do
    within 40 150 bench agents --url "$gateway" --model "$model" --api "$api" --agents "$AGENTS" \
        --turns "$TURNS" --workload "$WORKLOAD" --slo "$SLO" \
        --out "$work/agents/agents-$api.json"
done
if [ "$DRY_RUN" != 1 ]; then
    python3 "$GPU_SCRIPTS/protocols_table.py" "$work"/agents/agents-*.json > "$OUT/agents-table.md" \
        || say "table exited $?"
    tar -C "$work" -czf "$OUT/agents-results.tar.gz" agents 2> /dev/null || true
    log="$SM121_HOME/runs/$run/engine.log"
    { grep -n -i -E "error|exception|traceback|disconnect|timeout|killed" "$log" | tail -40
      echo "--- last 40 lines"; tail -40 "$log"; } > "$OUT/engine-log-tail.txt" 2> /dev/null || true
fi
sm stop "$run"
say "done"
