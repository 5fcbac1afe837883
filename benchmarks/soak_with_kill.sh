#!/bin/sh
# A supervised soak with one injected engine kill, as committed in
# docs/results/cpu-testbed/soak/:
#   sh benchmarks/soak_with_kill.sh OUT_DIR [DURATION] [KILL_AFTER_S] [AGENTS]
# It serves tiny-cpu with --supervise behind the gateway, records `sm121 top`, runs
# `sm121 bench soak` through the gateway, kill -9s the engine's process group after
# KILL_AFTER_S seconds, waits for the soak to end, writes the report and stops everything.
set -eu
OUT=${1:?usage: soak_with_kill.sh OUT_DIR [DURATION] [KILL_AFTER_S] [AGENTS]}
DURATION=${2:-35m}
KILL_AFTER_S=${3:-720}
AGENTS=${4:-3}
ENGINE_PORT=${ENGINE_PORT:-8000}
GATEWAY_PORT=${GATEWAY_PORT:-8100}
SM121=${SM121:-sm121}
mkdir -p "$OUT"
if [ -z "${RUN:-}" ]; then  # RUN=ID soaks a run already served with --supervise --gateway
    $SM121 serve tiny-cpu --profile agent --port "$ENGINE_PORT" --supervise \
        --gateway --gateway-port "$GATEWAY_PORT" --timeout 1800 > "$OUT/serve.txt"
    RUN=$(sed -n 's/^ready \([^:]*\):.*/\1/p' "$OUT/serve.txt" | head -1)
fi
echo "run $RUN" >&2
run_json() { $SM121 status --json | python3 -c "import json, sys
row = [r for r in json.load(sys.stdin) if r['run_id'] == '$RUN'][0]
print($1)"; }
$SM121 top "$RUN" --json --interval 10 --record "$OUT/top.jsonl" > /dev/null &
TOP=$!
$SM121 bench soak --url "http://127.0.0.1:$GATEWAY_PORT" --workload coding-agent \
    --agents "$AGENTS" --duration "$DURATION" --report-every 30s --run "$RUN" \
    --out "$OUT/soak.jsonl" --json > "$OUT/soak-summary.json" 2> "$OUT/soak-progress.txt" &
SOAK=$!
sleep "$KILL_AFTER_S"
PGID=$(run_json "row['nodes'][0]['pgid']")
echo "$(date -u +%FT%TZ) kill -9 of the engine's process group $PGID" | tee "$OUT/kill.txt" >&2
python3 -c "import os, signal; os.killpg($PGID, signal.SIGKILL)"  # the whole group
wait "$SOAK" || true
kill "$TOP" || true
$SM121 logs "$RUN" --crash > "$OUT/crashes.txt"
$SM121 status --json | python3 -c "import json, sys
row = [r for r in json.load(sys.stdin) if r['run_id'] == '$RUN'][0]
keep = ('run_id', 'recipe', 'profile', 'status', 'restarts', 'crashes', 'timings', 'boot')
print(json.dumps({k: row[k] for k in keep}, indent=2))" > "$OUT/run.json"
$SM121 stop "$RUN"
$SM121 startup --json --last 0 | python3 -c "import json, sys
print(json.dumps([r for r in json.load(sys.stdin) if r['run_id'] == '$RUN'], indent=2))" \
    > "$OUT/startup.json"
$SM121 bench report "$OUT/soak.jsonl" "$OUT/top.jsonl" --out "$OUT" --title "sm121 soak, tiny-cpu"
# Results carry no machine path: the sm121 home is written as $SM121_HOME.
HOME_DIR=${SM121_HOME:-$HOME/.sm121}
for f in "$OUT"/*.txt "$OUT"/*.json "$OUT"/*.jsonl "$OUT"/*.md; do
    sed -i "s#$HOME_DIR#\$SM121_HOME#g" "$f"
done
