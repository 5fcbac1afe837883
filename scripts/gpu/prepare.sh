#!/usr/bin/env bash
# Run HERE, in the project's checkout (not on the GPU machine): download vLLM 0.21.0 and the
# packages the GPU machine's image lacks (requirements-device.txt) and pack them into ignored
# folders .gpu1, .gpu2, ... so that each folder plus the working tree fits one 64 MiB transfer
# (budget.py: each folder may hold 64 MiB less the tree as it is now, less a 2 MiB margin).
# Then, on the GPU machine, one call per folder:
#   bash scripts/gpu/receive.sh .gpuN        (with .gpuN carried)
# `bash scripts/gpu/prepare.sh --check` downloads nothing: it prints what each call carries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git rev-parse --show-toplevel); cd "$root"
if [ "${1:-}" = "--check" ]; then exec python3 "$here/budget.py" check; fi
rm -rf .gpu[0-9]*
# Sized from the tree without old folders (they are ignored, so they never counted anyway).
LIMIT=${GPU_PACK_BYTES:-$(python3 "$here/budget.py" limit)}
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
python3 "$here/budget.py" pack "$tmp/files" "$LIMIT"
exclude=$(git rev-parse --git-path info/exclude)
for d in .gpu[0-9]*; do grep -qx "/$d/" "$exclude" 2>/dev/null || echo "/$d/" >> "$exclude"; done
rm -rf "$tmp"
du -sh .gpu[0-9]*
# Every call, as it will travel: exit 1 if one would not fit.
python3 "$here/budget.py" check
