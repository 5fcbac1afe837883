#!/bin/sh
# Cold boots become warm: tiny-cpu's agent-compiled profile (torch.compile on) booted cold
# with an empty compile cache (node 1), its cache staged to a second, empty cache folder the
# way a second node receives it (`sm121 stage --what cache`, the two "nodes" are this machine
# with their own compile_cache), then booted from that folder. `sm121 startup` shows the two
# waterfalls side by side. Run from the repository root with the engine extra installed.
#   sh docs/results/cpu-testbed/stage/cache-demo.sh WORK_DIR
set -eu
work=${1:?usage: cache-demo.sh WORK_DIR}
mkdir -p "$work"
export SM121_HOME="$work/home"
sm121="python -m sm121.cli.main"
cat > "$work/two-nodes.yaml" <<YAML
name: cache-demo
head: node1
topology: single
nodes:
  - {name: node1, compile_cache: $work/node1-cache, hf_cache: $work/node1-hf}
  - {name: node2, compile_cache: $work/node2-cache, hf_cache: $work/node2-hf, fabric_ip: 127.0.0.1}
YAML
# Every cache of a "node" lives in its own folder: vLLM's (VLLM_CACHE_ROOT) and torch's
# inductor and triton caches, which would otherwise be shared through /tmp by both "nodes" of
# this one machine. vLLM 0.32's AOT-compiled artifacts fail to load on the CPU build
# ("'function' object has no attribute 'finalize_loading'", on the node that wrote them too),
# so VLLM_USE_AOT_COMPILE=0 takes vLLM's other compile cache (torch_compile_cache/HASH/...).
boot() {
  VLLM_CACHE_ROOT="$1" TORCHINDUCTOR_CACHE_DIR="$1/inductor" TRITON_CACHE_DIR="$1/triton" \
    VLLM_USE_AOT_COMPILE=0 \
    $sm121 serve tiny-cpu --profile agent-compiled --port "$2" --timeout 1200
  $sm121 stop --all
}
boot "$work/node1-cache" 8311                       # cold: compiles, fills node1's cache
$sm121 stage tiny-cpu --profile agent-compiled --cluster "$work/two-nodes.yaml" \
  --what cache --from node1                         # node1's cache -> node2's empty folder
boot "$work/node2-cache" 8312                       # node2's first boot, from the staged cache
boot "$work/node1-cache" 8313                       # node1 again: a warm boot, for reference
$sm121 startup --recipe tiny-cpu --last 3 --steps
$sm121 startup --recipe tiny-cpu --last 3 --json > "$work/startup.json"
