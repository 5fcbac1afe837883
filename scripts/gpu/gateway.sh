#!/usr/bin/env bash
# GPU sitting, optional call: what the gateway costs on a host with CPUs to spare (the CPU
# testbed has 2 shared cores, where a proxy's added latency is mostly its wait for a CPU).
#   1. benchmarks/gateway_overhead.py against its fast SSE emitter (direct vs the gateway);
#   2. the recipe's agent profile served with --gateway, then gateway_overhead.py through a
#      second gateway in front of the real engine, and `bench agent-check` through the first.
# LiteLLM is left out: its virtual environment needs the network, which this host lacks.
# Comes back: $OUT/gateway.log, $OUT/overhead-emitter.json, $OUT/overhead-engine.json,
# $OUT/agent-check-gateway.json
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/gateway.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
root=$(cd "$GPU_SCRIPTS/../.." && pwd)
bench() { say "gateway_overhead.py $*"; python3 "$root/benchmarks/gateway_overhead.py" --no-litellm "$@"; }
if [ "${STEP:-all}" != engine ]; then
    bench --json "$OUT/overhead-emitter.json"
fi
[ "${STEP:-all}" = emitter ] && exit 0
sm serve "$RECIPE" --profile "${PROFILE:-agent}" --port "$PORT" --gateway --gateway-port 8100 \
    --timeout $(( $(seconds_left) - 200 ))
run=$(last_run)
model=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$SM121_HOME/runs/$run/run.json")
bench --upstream-url "http://127.0.0.1:$PORT" --model "$model" --chunks 64 --levels 1,16,64 \
    --json "$OUT/overhead-engine.json" || say "overhead exited $?"
sm bench agent-check --url http://127.0.0.1:8100 --model "$model" --label gpu-h200-gateway \
    --out "$OUT/agent-check-gateway.json" || say "agent-check exited $?"
sm stop "$run"
say "done"
