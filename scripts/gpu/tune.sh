#!/usr/bin/env bash
# GPU sitting: `sm121 tune` of the GPU recipe by measured capacity, repeated until it prints
# "tune complete":
#   sm121 tune gpu-llama --workload coding-agent-with-batch --slo ttft_p95=2s --agents 16
#         --max-agents 40 --reps 1 --sweep-points 2 --boots 3 --budget $BUDGET --out $SITTING/tune
# Every arm (the baseline agent-admission with max-num-seqs raised to 41, the reference
# chunk 8192 without threshold, max-num-seqs alone, each threshold and chunk alone, vLLM's
# defaults) gets one boot: one run of 16 agents x 5 turns beside the 100K-class background
# prefill, then a capacity bisection on the same boot; what the budget leaves buys interleaved
# confirmation boots of the two finalists. BUDGET (default 50m) is the whole tune's, over every
# call and every sitting; tune re-plans before every boot from the measured times.
# Each call stops tune before the call's limit (SIGTERM: the current engine is stopped, what
# was measured is kept in $SITTING/tune) and the next call resumes it.
# Across sittings (a fresh machine): commit the last call's tune-results.tar.gz and pass it as
#   RESUME=docs/results/gpu-h200/tune-capacity/tune-results.tar.gz bash scripts/gpu/tune.sh
# (it is unpacked only when $SITTING/tune holds no tune yet).
# KNEE: a knee results file shown in the report (it prices nothing); default: the knee of the
# 2026-12-02 sitting, so no boot is spent on it. KNEE=measure boots for a fresh one.
# Comes back: $OUT/tune.log, tune-status.txt, tune-results.tar.gz; when complete also
# tune-report.tar.gz (report.md, PNGs, tune.json, conditions.txt) and tuned-recipe.yaml
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/tune.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
WORKLOAD=${WORKLOAD:-coding-agent-with-batch}
SLO=${SLO:-ttft_p95=2s}
AGENTS=${AGENTS:-16}
MAX_AGENTS=${MAX_AGENTS:-40}
TURNS=${TURNS:-5}
REPS=${REPS:-1}
BUDGET=${BUDGET:-50m}
# agent-admission is the baseline every one-knob arm changes; the recipe's other profiles are
# left out on the GPU for time (the CPU testbed's tune ranks agent against agent-admission).
BASELINES=${BASELINES:-agent-admission}
TUNE_DIR=$SITTING/tune
if [ -n "${RESUME:-}" ] && [ ! -f "$TUNE_DIR/tune.json" ]; then
    say "resuming the tune of an earlier sitting from $RESUME"
    tar -C "$SITTING" -xzf "$RESUME"
fi
KNEE=${KNEE:-docs/results/gpu-h200/tune/tune-results.tar.gz}
knee=()
if [ "$KNEE" != measure ] && [ ! -f "$TUNE_DIR/knee.json" ]; then
    case $KNEE in
        *.tar.gz) mkdir -p "$SITTING/knee" && tar -C "$SITTING/knee" -xzf "$KNEE" tune/knee.json
                  knee=(--knee "$SITTING/knee/tune/knee.json") ;;
        *) knee=(--knee "$KNEE") ;;
    esac
fi
# Extra tune options (e.g. TUNE_ARGS='--steps 128,512,2048 --batches 1,2 --knee-reps 1').
read -ra extra <<< "${TUNE_ARGS:-}"
mkdir -p "$TUNE_DIR"
left=$(( $(seconds_left) - 20 ))
say "tune $RECIPE: $WORKLOAD, $SLO, $AGENTS agents (search up to $MAX_AGENTS) x $TURNS turns, budget $BUDGET; ${left}s for this call"
rc=0
args=(tune "$RECIPE" --workload "$WORKLOAD" --slo "$SLO" --agents "$AGENTS"
      --max-agents "$MAX_AGENTS" --turns "$TURNS" --reps "$REPS" --budget "$BUDGET"
      --baselines "$BASELINES" --sweep-points "${SWEEP_POINTS:-2}" --boots "${BOOTS:-3}"
      --boot-estimate "${BOOT_ESTIMATE:-55}" --rep-estimate "${REP_ESTIMATE:-60}"
      --out "$TUNE_DIR" --port "$PORT" "${knee[@]}" "${extra[@]}")
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
