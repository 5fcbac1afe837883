#!/usr/bin/env bash
# Run HERE, in the project's checkout (not on the GPU machine): download vLLM 0.21.0 and the
# packages the GPU machine's image lacks (requirements-device.txt) and pack them into ignored
# folders .gpu1, .gpu2, ... of at most GPU_PACK_BYTES each, so that each folder plus the
# checkout fits one 64 MiB transfer. Then, on the GPU machine, one call per folder:
#   bash scripts/gpu/receive.sh .gpuN        (with .gpuN carried)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git rev-parse --show-toplevel); cd "$root"
# 64 MiB = 67.1 MB per transfer; the checkout is about 1.5 MB.
LIMIT=${GPU_PACK_BYTES:-63000000}
rm -rf .gpu[0-9]*
tmp=$(mktemp -d)
P="--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_26_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_35_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 --platform any"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $P -d "$tmp/whl" -r "$here/requirements-device.txt"
whl=$(ls "$tmp"/whl/vllm-0.21.0-*.whl)
mkdir -p "$tmp/files"
basename "$whl" > "$tmp/files/vllm.name"
sha256sum "$whl" | cut -c1-64 > "$tmp/files/vllm.sha256"
(cd "$tmp/files" && split -b "$LIMIT" -d -a 1 "$whl" vllm.part) && rm "$whl"
mv "$tmp"/whl/*.whl "$tmp/files/"
# Greedy packing, largest first, into folders under LIMIT bytes.
python3 - "$tmp/files" "$LIMIT" <<'PY'
import os, shutil, sys
src, limit = sys.argv[1], int(sys.argv[2])
files = sorted(os.listdir(src), key=lambda f: -os.path.getsize(os.path.join(src, f)))
bins = []
for f in files:
    size = os.path.getsize(os.path.join(src, f))
    for b in bins:
        if b[0] + size <= limit:
            b[0] += size; b[1].append(f); break
    else:
        bins.append([size, [f]])
for i, (_, names) in enumerate(bins, 1):
    os.makedirs(f".gpu{i}")
    for f in names:
        shutil.move(os.path.join(src, f), f".gpu{i}/{f}")
print(len(bins), "folders")
PY
exclude=$(git rev-parse --git-path info/exclude)
for d in .gpu[0-9]*; do grep -qx "/$d/" "$exclude" 2>/dev/null || echo "/$d/" >> "$exclude"; done
rm -rf "$tmp"
du -sh .gpu[0-9]*
