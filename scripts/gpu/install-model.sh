#!/usr/bin/env bash
# GPU sitting, call (a), on the GPU machine after receive.sh of every .gpuN folder: install vLLM
# 0.21.0, the missing packages and this checkout's sm121 into $SITE, then write the random-weight
# Llama-8B shape with `sm121 model random`. About 1 minute (install 30 s, model 30 s on an H200).
# Comes back: $OUT/install-model.log, $OUT/conditions.txt
source "$(dirname "$0")/lib.sh"
exec > >(tee -a "$OUT/install-model.log") 2>&1
root=$(cd "$GPU_SCRIPTS/../.." && pwd)
if python3 -c 'import vllm' 2> /dev/null; then
    say "vLLM already importable: keeping it"
else
    name=$(cat "$GPU_DIR/vllm.name")
    wheel="$GPU_DIR/$name"
    cat $(ls "$GPU_DIR"/vllm.part* | sort) > "$wheel"
    echo "$(cat "$GPU_DIR/vllm.sha256")  $wheel" | sha256sum -c -
    say "installing vLLM and $(ls "$GPU_DIR"/*.whl | grep -vc "$name") wheels into $SITE"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" "$wheel" $(ls "$GPU_DIR"/*.whl | grep -v "$name")
fi
say "installing sm121 from $root"
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --upgrade \
    --target "$SITE" "$root"
mkdir -p "$SITE/bin"
printf '#!/usr/bin/env bash\nexec python3 -c "import sys; from sm121.cli.main import run; sys.argv[0]=\\"sm121\\"; run()" "$@"\n' > "$SITE/bin/sm121"
chmod +x "$SITE/bin/sm121"
python3 -c 'import vllm, sm121; print("vllm", vllm.__version__, "sm121 ok")'
sm model random --shape "${MODEL_SHAPE:-llama-8b}"
conditions | tee "$OUT/conditions.txt"
say "done"
