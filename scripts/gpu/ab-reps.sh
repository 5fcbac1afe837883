#!/usr/bin/env bash
# GPU sitting, optional: the overlap A/B of ab.sh with 3 repetitions on each boot,
#   sm121 bench ab gpu-llama --profiles batch,agent,agent-admission,lpt-512,lpt-256
#         --scenario overlap -L 100000 --reps 3 --reps-per-boot 3 --resume
# 5 boots (about 50 s warm each) and 15 repetitions (about 50 s each, 5 s rest between those
# of one boot): about 18 minutes in two or three calls, each stopped before the call's limit
# and resumed by the next. When complete it prints the medians and spread and the test of the
# second repetition on a boot against the first (ab-reps-boot-effect.txt).
# Comes back: $OUT/ab-reps.log, ab-reps-status.txt, ab-reps-results.tar.gz; when complete
# also ab-reps-boot-effect.txt, report-reps.tar.gz, calibration-ab.txt, calibration-ab.json
export AB_NAME=${AB_NAME:-ab-reps} REPS=${REPS:-3} REPS_PER_BOOT=${REPS_PER_BOOT:-3}
exec bash "$(dirname "$0")/ab.sh" "$@"
