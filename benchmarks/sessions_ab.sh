#!/bin/sh
# Session admission A/B, as committed in docs/results/cpu-testbed/sessions/:
#   sh benchmarks/sessions_ab.sh OUT_DIR [AGENTS] [TURNS] [ARMS] [POOL_BLOCKS]
# One engine (by default tiny-cpu with its KV pool made small on purpose: num-gpu-blocks-override,
# blocks of 128 tokens), then for each arm in ARMS (default "off auto off auto": interleaved) a
# fresh `sm121 gateway --sessions ARM` in front of it and `sm121 bench agents` through it with
# the workload benchmarks/sessions_workload.yaml; the engine's /metrics and the gateway's
# /sm121/sessions are saved around each run. Stops what it started.
# The GPU run (RECIPE, PROFILE, WORKLOAD, POOL_BLOCKS "" for the engine's own pool, BOOT_EACH=1
# for a fresh engine per arm):
#   RECIPE=gpu-llama PROFILE=tuned WORKLOAD=coding-agent-with-batch SLO=ttft_p95=2s \
#   IDLE_S=10 BOOT_EACH=1 sh benchmarks/sessions_ab.sh docs/results/gpu-h100/sessions 24 6 \
#   "off auto off auto" ""
set -eu
OUT=${1:?usage: sessions_ab.sh OUT_DIR [AGENTS] [TURNS] [ARMS] [POOL_BLOCKS]}
AGENTS=${2:-8}
TURNS=${3:-6}
ARMS=${4:-off auto off auto}
POOL_BLOCKS=${5-340}
RECIPE=${RECIPE:-tiny-cpu}
PROFILE=${PROFILE:-agent}
BOOT_EACH=${BOOT_EACH:-0}  # 1: a fresh engine for every arm (interleaved boots)
ENGINE_PORT=${ENGINE_PORT:-8501}
GATEWAY_PORT=${GATEWAY_PORT:-8502}
SLO=${SLO:-ttft_p95=1s}
START=${START:-together}  # bench agents --session-start: together | stagger
IDLE_S=${IDLE_S:-3}
SM121=${SM121:-sm121}
HERE=$(cd "$(dirname "$0")" && pwd)
WORKLOAD=${WORKLOAD:-$HERE/sessions_workload.yaml}
mkdir -p "$OUT/gateway"  # the gateway's own files: its log, /metrics, /sm121/sessions
ENGINE=http://127.0.0.1:$ENGINE_PORT
GATEWAY=http://127.0.0.1:$GATEWAY_PORT
RUN=""
trap '[ -z "$RUN" ] || $SM121 stop "$RUN" > /dev/null 2>&1 || true' EXIT
boot() {  # $1: where its start-up goes
    if [ -n "$POOL_BLOCKS" ]; then
        set -- "$1" --set num-gpu-blocks-override="$POOL_BLOCKS" --set max-model-len=16384
    fi
    out=$1
    shift
    $SM121 serve "$RECIPE" --profile "$PROFILE" --port "$ENGINE_PORT" --timeout 1800 "$@" > "$out"
    RUN=$(sed -n 's/^ready \([^:]*\):.*/\1/p' "$out" | head -1)
    echo "run $RUN" >&2
    $SM121 logs "$RUN" 2>/dev/null | grep -E "KV cache|num_gpu_blocks|[Cc]oncurrency" \
        > "${out%serve.txt}engine-pool.txt" || true
}
[ "$BOOT_EACH" = 1 ] || boot "$OUT/serve.txt"
get() { python3 -c "import sys, urllib.request
sys.stdout.write(urllib.request.urlopen('$1', timeout=10).read().decode())"; }
i=0
for ARM in $ARMS; do
    i=$((i + 1))
    NAME="$i-$ARM"
    [ "$BOOT_EACH" != 1 ] || boot "$OUT/$NAME-serve.txt"
    $SM121 gateway --upstream "$ENGINE" --recipe tiny-cpu --listen "127.0.0.1:$GATEWAY_PORT" \
        --sessions "$ARM" --session-idle "$IDLE_S" --session-wait 900 \
        > "$OUT/gateway/$NAME-gateway.log" 2>&1 &
    GW=$!
    for _ in $(seq 1 100); do get "$GATEWAY/sm121/sessions" > "$OUT/gateway/$NAME-sessions-before.json" 2>/dev/null && break; sleep 0.5; done
    sleep 2  # the health round that reads the engine's pool
    get "$GATEWAY/sm121/sessions" > "$OUT/gateway/$NAME-sessions-before.json"
    get "$ENGINE/metrics" > "$OUT/$NAME-engine-before.prom"
    echo "$(date -u +%FT%TZ) arm $NAME, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/arms.txt" >&2
    $SM121 bench agents --url "$GATEWAY" --agents "$AGENTS" --turns "$TURNS" \
        --workload "$WORKLOAD" --slo "$SLO" --session-start "$START" \
        --out "$OUT/$NAME.json" \
        > "$OUT/$NAME-console.txt" 2> "$OUT/$NAME-progress.txt"
    get "$ENGINE/metrics" > "$OUT/$NAME-engine-after.prom"
    get "$GATEWAY/metrics" > "$OUT/gateway/$NAME-gateway.prom"
    get "$GATEWAY/sm121/sessions" > "$OUT/gateway/$NAME-sessions-after.json"
    echo "$(date -u +%FT%TZ) arm $NAME done, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/arms.txt" >&2
    kill "$GW"
    wait "$GW" || true
    gzip -9f "$OUT/$NAME.json" "$OUT/$NAME"-*.prom "$OUT/gateway/$NAME-gateway.prom"
    if [ "$BOOT_EACH" = 1 ]; then
        $SM121 stop "$RUN" > /dev/null
        RUN=""
    fi
done
