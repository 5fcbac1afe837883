#!/usr/bin/env bash
# GPU sitting, call (c): boot the GPU recipe at each CONFIGS entry (GMU:chunk), stop it, and set
# the memory planner's prediction beside the KV pool vLLM logged (`sm121 memory calibrate`,
# uncalibrated prediction). The first boot of a fresh machine is the cold one (compile and
# kernel caches empty, about 170 s); later ones 50-60 s. Default: GMU 0.60 at chunk 2048 (the
# cold boot, about 3 minutes with its stop); the A/B's boots (ab.sh) give GMU 0.78 at chunks
# 2048 and 8192. With time left after the A/B: CONFIGS=0.60:8192 (about 1.5 minutes).
# Comes back: $OUT/calibrate.log, calibration.txt, calibration.json, startup.txt,
# startup.png, runs-calibrate.tar.gz
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/calibrate.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
CONFIGS=${CONFIGS:-"0.60:2048"}
GIB=$(node_gib)
gib=()
if [ -n "$GIB" ]; then gib=(--node-gib "$GIB"); fi
say "node: ${GIB:-unknown} GiB; configs: $CONFIGS"
runs=()
for config in $CONFIGS; do
    gmu=${config%%:*} chunk=${config##*:}
    case $chunk in 2048) profile=agent ;; 8192) profile=batch ;;
        *) echo "chunk $chunk: use 2048 (agent) or 8192 (batch)" >&2; exit 2 ;; esac
    left=$(seconds_left)
    if [ "$left" -lt 240 ]; then say "skipping $config: ${left}s left in this call"; continue; fi
    sm serve "$RECIPE" --profile "$profile" --set "gpu-memory-utilization=$gmu" --port "$PORT" \
        --timeout $(( left - 60 )) || { say "boot $config failed (see the log above)"; continue; }
    [ "$DRY_RUN" = 1 ] && continue
    run=$(last_run)
    runs+=("$run")
    sm stop "$run"
done
if [ "${#runs[@]}" -gt 0 ]; then
    sm memory calibrate "${runs[@]}" "${gib[@]}" | tee "$OUT/calibration.txt"
    sm memory calibrate "${runs[@]}" "${gib[@]}" --json > "$OUT/calibration.json"
fi
sm startup --recipe "$RECIPE" --last 10 --plot "$OUT/startup.png" > "$OUT/startup.txt" || true
pack_runs runs-calibrate.tar.gz
say "done"
