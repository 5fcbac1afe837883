#!/usr/bin/env bash
# GPU sitting, call (d), optional, if device time is left: serve the GPU recipe's agent profile
# and run other checks against it. EXTRA_CMDS holds sm121 command lines separated by ';', with
# {url} and {model} filled in, e.g.
#   EXTRA_CMDS='agent-check {url} --model {model}; bench agents {url} --model {model}'
# Without EXTRA_CMDS it lists which such commands this sm121 has (their --help) and serves
# nothing. Comes back: $OUT/extras.log
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/extras.log") 2>&1
[ "$DRY_RUN" = 1 ] || need_install
if [ -z "${EXTRA_CMDS:-}" ]; then
    for cmd in "agent-check" "bench agents"; do
        # shellcheck disable=SC2086
        if sm121 $cmd --help > /dev/null 2>&1; then say "available: sm121 $cmd"; sm121 $cmd --help | head -30
        else say "not in this sm121: $cmd"; fi
    done
    exit 0
fi
sm serve "$RECIPE" --profile "${PROFILE:-agent}" --port "$PORT" --timeout $(( $(seconds_left) - 60 ))
run=$(last_run)
url="http://127.0.0.1:$PORT" model=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$SM121_HOME/runs/$run/run.json" 2> /dev/null || echo llama8b-random)
IFS=';' read -ra commands <<< "$EXTRA_CMDS"
for line in "${commands[@]}"; do
    line=${line//\{url\}/$url}; line=${line//\{model\}/$model}
    left=$(( $(seconds_left) - 30 ))
    [ "$left" -gt 30 ] || { say "no time left for: $line"; continue; }
    # shellcheck disable=SC2086
    say "sm121 $line"; timeout -s TERM -k 20 "$left" sm121 $line || say "exited $?"
done
sm stop "$run"
say "done"
