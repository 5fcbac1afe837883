#!/usr/bin/env bash
# GPU sitting (issue 44): the capacity model against the measured cliff on the GPU recipe.
#   ARM=tuned     agent-admission at chunk 4096, threshold 1024, max-num-seqs 41 (the H200
#                 tune's pick, the profile the H100 check ran)
#   ARM=baseline  agent-admission at chunk 2048, threshold 1024, max-num-seqs 41
#   WORKLOADS     presets with their turns, measured in this order on one boot (default
#                 coding-agent-with-batch:5,long-session:6: sessions near 20K and 59K tokens)
# It runs benchmarks/capacity_cliff.py: the pool from the engine's /metrics or, where vLLM 0.21
# does not say it there, the run's boot log; the prediction (`sm121 memory plan --solve
# agents=1,workload=W`); `sm121 bench agents` at the prediction plus OFFSETS (default -1,0,1),
# then one agent more at a time while the runs still meet (to at most +3); each run's verdict.
# The predicted cliff is one agent past what the pool holds; the measured cliff is the smallest
# N tested with goodput under 95%.
# A device call runs 600 s at most: the script starts no run that would not end inside the call
# and leaves the engine running (it was started in its own session, so it outlives the call
# while the machine is held). Run the same command again, back to back: it reuses the engine,
# skips the runs already measured and goes on. Another ARM stops the engine of the last one.
# Comes back: $OUT/capacity.log, $OUT/capacity-$ARM.json (the cliff against the prediction, so
# far) and $OUT/capacity-$ARM.tar.gz (every run's results file).
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/capacity.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
ARM=${ARM:-tuned}
WORKLOADS=${WORKLOADS:-coding-agent-with-batch:5,long-session:6}
SLO=${SLO:-ttft_p95=2s}
OFFSETS=${OFFSETS:--1,0,1}
case $ARM in
    tuned) chunk=4096 ;;
    baseline) chunk=2048 ;;
    *) echo "ARM=$ARM: use tuned or baseline" >&2; exit 2 ;;
esac
dest=$SITTING/capacity-$ARM
# Keep 45 s of the call for packing what comes back.
deadline=$(( CALL_STARTED + CALL_BUDGET_S - 45 ))
cmd=(python3 benchmarks/capacity_cliff.py --recipe "$RECIPE" --profile agent-admission
     --blocks 0 --max-model-len 0 --chunk "$chunk" --threshold 1024 --max-num-seqs 41
     --slo "$SLO" --offsets="$OFFSETS" --workloads "$WORKLOADS" --port "$PORT"
     --out "$dest" --engine-state "$SITTING/capacity-engine.json" --deadline "$deadline"
     --first-run-s "${FIRST_RUN_S:-120}")
say "${cmd[*]}"
if [ "$DRY_RUN" = 1 ]; then exit 0; fi
conditions > "$OUT/conditions-capacity.txt" 2>&1 || true
rc=0
timeout $(( deadline - $(date +%s) + 20 )) "${cmd[@]}" || rc=$?
case $rc in
    0) say "capacity $ARM complete" ;;
    3) say "capacity $ARM stopped at the call's deadline: run the same command again to go on" ;;
    *) say "capacity_cliff ended with $rc (an error above, or the call's time)" ;;
esac
[ -f "$dest/capacity.json" ] && cp "$dest/capacity.json" "$OUT/capacity-$ARM.json"
tar -C "$SITTING" -czf "$OUT/capacity-$ARM.tar.gz" "capacity-$ARM" 2> /dev/null || true
say "status: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("complete" if d["complete"] else "partial", [(w["workload"], len(w["runs"])) for w in d["workloads"]])' "$dest/capacity.json" 2> /dev/null || echo 'no capacity.json yet')"
