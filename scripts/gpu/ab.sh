#!/usr/bin/env bash
# GPU sitting, call (b), repeated until it prints "A/B complete": the overlap A/B of the GPU
# recipe's profiles with sm121's own command,
#   sm121 bench ab gpu-llama --profiles batch,agent,agent-admission,lpt-512,lpt-256
#         --scenario overlap -L 100000 --reps $REPS --resume
# Each (rep, profile) boots its own server (warm boot about 50 s) and measures one overlap
# repetition (about 50 s): about 105 s a pair. REPS=2 is 10 pairs, about 18 minutes in two
# or three calls; REPS=3 would be 15 pairs, about 27 minutes, more than the sitting's device time.
# Each call stops itself (SIGTERM: the current pair is stopped, results kept) before the call's
# limit; the next call resumes. When complete: report, calibration of every A/B boot, startup.
# Comes back: $OUT/ab.log, ab-results.tar.gz, ab-status.txt; when complete also
# report.tar.gz, calibration-ab.txt, calibration-ab.json, startup.txt, startup.png
# AB_NAME (default ab) names the folder and the files that come back, REPS_PER_BOOT (default 1)
# the repetitions one boot measures (ab-reps.sh sets both).
source "$(dirname "$0")/lib.sh"
AB_NAME=${AB_NAME:-ab}
REPS_PER_BOOT=${REPS_PER_BOOT:-1}
exec > >(tee -a "$OUT/$AB_NAME.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
PROFILES=${PROFILES:-batch,agent,agent-admission,lpt-512,lpt-256}
REPS=${REPS:-2}
L=${L:-100000}
AB_DIR=$SITTING/$AB_NAME
AB=$AB_DIR/ab-overlap.json
mkdir -p "$AB_DIR"
left=$(( $(seconds_left) - 20 ))
say "A/B of $PROFILES, reps $REPS ($REPS_PER_BOOT per boot), -L $L; ${left}s for this call"
rc=0
if [ "$DRY_RUN" = 1 ]; then
    sm bench ab "$RECIPE" --profiles "$PROFILES" --scenario overlap -L "$L" --reps "$REPS" \
        --reps-per-boot "$REPS_PER_BOOT" --port "$PORT" --out "$AB" --resume
else
    timeout -s TERM -k 40 "$left" sm121 bench ab "$RECIPE" --profiles "$PROFILES" --scenario overlap \
        -L "$L" --reps "$REPS" --reps-per-boot "$REPS_PER_BOOT" --port "$PORT" --out "$AB" \
        --resume || rc=$?
fi
say "bench ab exited $rc"
status=$(python3 - "$AB" "$PROFILES" "$REPS" <<'PY'
import json, sys
from pathlib import Path
path, profiles, reps = Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
samples = json.loads(path.read_text())["samples"] if path.is_file() else []
done = {(s["rep"], s["profile"]) for s in samples if not s.get("error")}
failed = [f'{s["rep"] + 1}:{s["profile"]}' for s in samples if s.get("error")]
total = reps * len(profiles)
print(("A/B complete" if len(done) == total else f"A/B partial: {len(done)} of {total} pairs")
      + (f"; failed attempts: {', '.join(failed)}" if failed else ""))
PY
)
say "$status"
echo "$status" > "$OUT/$AB_NAME-status.txt"
tar -C "$SITTING" -czf "$OUT/$AB_NAME-results.tar.gz" "$AB_NAME" 2> /dev/null || true
case $status in "A/B complete"*) ;; *) say "run ab.sh again to resume"; exit 0 ;; esac
if [ "$REPS_PER_BOOT" -gt 1 ]; then
    # Everything is measured, so this only prints the comparison and the boot-effect test
    # (the second repetition on a boot against the first).
    sm bench ab "$RECIPE" --profiles "$PROFILES" --scenario overlap -L "$L" --reps "$REPS" \
        --reps-per-boot "$REPS_PER_BOOT" --port "$PORT" --out "$AB" --resume \
        | tee "$OUT/$AB_NAME-boot-effect.txt"
fi
REPORT=report${AB_NAME#ab}  # report (ab.sh), report-reps (ab-reps.sh)
sm bench report "$AB" --out "$SITTING/$REPORT" \
    --title "${TITLE:-GPU A/B: overlap, $RECIPE, $PROFILES, $REPS reps, -L $L}"
conditions > "$SITTING/$REPORT/conditions.txt"
tar -C "$SITTING" -czf "$OUT/$REPORT.tar.gz" "$REPORT"
runs=$(python3 -c 'import json,sys; print(" ".join(dict.fromkeys(s["run_id"] for s in json.load(open(sys.argv[1]))["samples"] if s.get("run_id"))))' "$AB")
GIB=$(node_gib)
gib=()
if [ -n "$GIB" ]; then gib=(--node-gib "$GIB"); fi
# shellcheck disable=SC2086  # run ids: one word each
sm memory calibrate $runs "${gib[@]}" | tee "$OUT/calibration-ab.txt"
# shellcheck disable=SC2086
sm memory calibrate $runs "${gib[@]}" --json > "$OUT/calibration-ab.json"
# (With reps per boot the warm boots are those ab.sh measured: at most 8 files come back.)
[ "$REPS_PER_BOOT" -gt 1 ] || \
    sm startup --recipe "$RECIPE" --last 6 --plot "$OUT/startup.png" > "$OUT/startup.txt" || true
say "done"
