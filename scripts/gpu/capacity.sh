#!/usr/bin/env bash
# GPU sitting (issue 44): the capacity model against the measured cliff on the GPU recipe,
# one arm and one workload per call (a device call runs 600 s at most):
#   ARM=tuned     agent-admission at chunk 4096, threshold 1024, max-num-seqs 41 (the H200
#                 tune's pick, the profile the H100 check ran)
#   ARM=baseline  agent-admission at chunk 2048, threshold 1024, max-num-seqs 41
#   WORKLOAD=coding-agent-with-batch (5 turns, sessions near 20K tokens) or long-session
#                 (6 turns, near 59K)
# It runs benchmarks/capacity_cliff.py: one boot; the pool from the engine's /metrics; the
# prediction (`sm121 memory plan --solve agents=1,workload=W --engine-url`); `sm121 bench
# agents` at the prediction plus OFFSETS (default -1,0,1), then one agent more at a time while
# the runs still meet (to at most +3); each run's verdict. The predicted cliff is one agent past
# what the pool holds; the measured cliff is the smallest N tested with goodput under 95%.
# Comes back: $OUT/capacity.log and $OUT/capacity-$ARM-$WORKLOAD/ (capacity.json when the
# script ended in time, and each run's results file either way).
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/capacity.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
ARM=${ARM:-tuned}
WORKLOAD=${WORKLOAD:-coding-agent-with-batch}
case $WORKLOAD in long-session) turns=6 ;; *) turns=5 ;; esac
TURNS=${TURNS:-$turns}
SLO=${SLO:-ttft_p95=2s}
OFFSETS=${OFFSETS:--1,0,1}
case $ARM in
    tuned) chunk=4096 ;;
    baseline) chunk=2048 ;;
    *) echo "ARM=$ARM: use tuned or baseline" >&2; exit 2 ;;
esac
dest=$OUT/capacity-$ARM-$WORKLOAD
cmd=(python3 benchmarks/capacity_cliff.py --recipe "$RECIPE" --profile agent-admission
     --blocks 0 --max-model-len 0 --chunk "$chunk" --threshold 1024 --max-num-seqs 41
     --turns "$TURNS" --slo "$SLO" --offsets="$OFFSETS" --workloads "$WORKLOAD"
     --port "$PORT" --out "$dest")
say "${cmd[*]}"
if [ "$DRY_RUN" = 1 ]; then exit 0; fi
conditions > "$OUT/conditions-capacity.txt" 2>&1 || true
timeout $(( $(seconds_left) - 30 )) "${cmd[@]}" \
    || say "capacity_cliff stopped early (the call's time, or an error above): the runs it measured are in $dest"
