# Shared by the sitting's scripts: environment, a call budget, what goes back under $OUT.
# shellcheck shell=bash
set -euo pipefail
GPU_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$GPU_SCRIPTS/env.sh"
OUT=${OUT:-$SITTING/out}
mkdir -p "$OUT" "$SITTING"
# A call that runs several scripts exports CALL_STARTED once, so the budget is the call's.
CALL_STARTED=${CALL_STARTED:-$(date +%s)}
# A device call may run 600 s; keep 60 s for stopping an engine and packing what comes back.
CALL_BUDGET_S=${CALL_BUDGET_S:-540}
RECIPE=${RECIPE:-gpu-llama}
PORT=${PORT:-8000}
DRY_RUN=${DRY_RUN:-0}
# Tables written to files under $OUT stay readable (rich wraps at 80 columns without a tty).
export COLUMNS=${COLUMNS:-160}

say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - CALL_STARTED ))s] $*"; }

# Run an sm121 command, or print it under DRY_RUN=1.
sm() {
    say "sm121 $*"
    if [ "$DRY_RUN" = 1 ]; then return 0; fi
    sm121 "$@"
}

seconds_left() { echo $(( CALL_BUDGET_S - ($(date +%s) - CALL_STARTED) )); }

need_install() {
    command -v sm121 > /dev/null && python3 -c 'import vllm' 2> /dev/null || {
        echo "vLLM and sm121 are not installed on this machine (a fresh machine?): run" \
             "install-model.sh first (after receive.sh of every .gpuN folder)" >&2
        exit 3
    }
}

# The GPU's total memory in GiB as vLLM sees it (torch.cuda.mem_get_info), for the planner;
# nothing without a GPU (a CPU rehearsal), and the planner then uses the log's own figure.
node_gib() {
    if [ "$DRY_RUN" = 1 ]; then echo 140.4; return; fi
    python3 -c 'import torch; print(round(torch.cuda.mem_get_info()[1] / 2**30, 2))' \
        2> /dev/null || true
}

# The newest run id of this recipe (the one a serve just started).
last_run() {
    ls -1t "$SM121_HOME/runs" 2> /dev/null | grep "^$RECIPE-" | head -1
}

# Runs' small files (run.json, plan.json, startup.json, engine logs) as one tarball in $OUT.
pack_runs() {
    local name=$1
    [ -d "$SM121_HOME/runs" ] || return 0
    tar -C "$SM121_HOME" -czf "$OUT/$name" --exclude='*.pid' runs startup-history.jsonl \
        calibration 2> /dev/null || true
}

conditions() {
    {
        echo "date_utc: $(date -u +%FT%TZ)"
        echo "sm121: $(sm121 --version 2> /dev/null || echo '?')"
        python3 -c 'import vllm, torch; print("vllm:", vllm.__version__); print("torch:", torch.__version__, "cuda", torch.version.cuda)' 2> /dev/null || true
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null | sed 's/^/gpu: /' || true
        echo "cpus: $(nproc)"
        echo "node_gib (torch total): $(node_gib 2> /dev/null || echo '?')"
    }
}
