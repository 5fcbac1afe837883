#!/usr/bin/env bash
# On the GPU machine: move one carried folder of wheels (.gpuN, made by prepare.sh) into
# $GPU_DIR. One call per folder; the last call can go on with install-model.sh.
set -euo pipefail
source "$(dirname "$0")/env.sh"
mkdir -p "$GPU_DIR"
for folder in "$@"; do
    [ -d "$folder" ] || { echo "no folder $folder here: carry it with the call" >&2; exit 2; }
    mv "$folder"/* "$GPU_DIR"/
done
ls "$GPU_DIR" | wc -l | xargs echo "files in $GPU_DIR:"
du -sh "$GPU_DIR"
