#!/usr/bin/env bash
# GPU sitting: `sm121 tune` of the GPU recipe, repeated until it prints "tune complete":
#   sm121 tune gpu-llama --workload coding-agent-with-batch --slo ttft_p95=2s --agents 8
#         --budget $BUDGET --out $SITTING/tune
# It boots the recipe for its knee (prefill rate by tokens per step, decode rate by batch),
# derives candidates (the recipe's agent and agent-admission, thresholds around the knee,
# max-num-seqs at decode saturation, vLLM 0.21's partial prefills), A/Bs them on 8 agents
# beside a 100K-class background prefill with 3 repetitions per boot, sweeps N on each boot,
# and writes profile `tuned` into $SM121_HOME/recipes/gpu-llama.yaml. BUDGET (default 17m)
# is the whole tune's, over every call; its plan fits candidates and reps to it.
# Each call stops tune before the call's limit (SIGTERM: the current engine is stopped, what
# was measured is kept in $SITTING/tune) and the next call resumes it.
# Comes back: $OUT/tune.log, tune-status.txt, tune-results.tar.gz; when complete also
# tune-report.tar.gz (report.md, PNGs, tune.json, conditions.txt) and tuned-recipe.yaml
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/tune.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
WORKLOAD=${WORKLOAD:-coding-agent-with-batch}
SLO=${SLO:-ttft_p95=2s}
AGENTS=${AGENTS:-8}
TURNS=${TURNS:-5}
BUDGET=${BUDGET:-17m}
# agent-admission is the reference the tuned profile must match (largest N, goodput); `agent`
# is left out on the GPU for time (the CPU testbed's tune ranks agent against agent-admission).
BASELINES=${BASELINES:-agent-admission}
TUNE_DIR=$SITTING/tune
# Extra tune options (e.g. TUNE_ARGS='--steps 128,512,2048 --batches 1,2 --knee-reps 1').
read -ra extra <<< "${TUNE_ARGS:-}"
mkdir -p "$TUNE_DIR"
left=$(( $(seconds_left) - 20 ))
say "tune $RECIPE: $WORKLOAD, $SLO, $AGENTS agents x $TURNS turns, budget $BUDGET; ${left}s for this call"
rc=0
args=(tune "$RECIPE" --workload "$WORKLOAD" --slo "$SLO" --agents "$AGENTS" --turns "$TURNS"
      --budget "$BUDGET" --baselines "$BASELINES" --sweep-points "${SWEEP_POINTS:-1}"
      --boot-estimate "${BOOT_ESTIMATE:-55}" --rep-estimate "${REP_ESTIMATE:-60}"
      --out "$TUNE_DIR" --port "$PORT" "${extra[@]}")
if [ "$DRY_RUN" = 1 ]; then
    sm "${args[@]}"
else
    timeout -s TERM -k 40 "$left" sm121 "${args[@]}" || rc=$?
fi
say "sm121 tune exited $rc"
status=$(python3 - "$TUNE_DIR/tune.json" <<'PY'
import json, sys
from pathlib import Path
path = Path(sys.argv[1])
state = json.loads(path.read_text()) if path.is_file() else {}
if state.get("status") == "complete":
    result = state.get("result") or {}
    print(f"tune complete: chosen {result.get('chosen')}; {(result.get('binding') or {}).get('text', '')}")
else:
    print(f"tune partial: {'knee measured' if (path.parent / 'knee.json').is_file() else 'no knee yet'}"
          f", plan {state.get('plan')}, spent {state.get('elapsed_s', 0):.0f} s")
PY
)
say "$status"
echo "$status" > "$OUT/tune-status.txt"
tar -C "$SITTING" -czf "$OUT/tune-results.tar.gz" tune 2> /dev/null || true
case $status in "tune complete"*) ;; *) say "run tune.sh again to resume"; exit 0 ;; esac
conditions > "$TUNE_DIR/conditions.txt"
tar -C "$TUNE_DIR" -czf "$OUT/tune-report.tar.gz" report.md tune-knee.png tune-candidates.png \
    tune.json conditions.txt
[ "$DRY_RUN" = 1 ] || cp "$SM121_HOME/recipes/$RECIPE.yaml" "$OUT/tuned-recipe.yaml" || true
say "done"
