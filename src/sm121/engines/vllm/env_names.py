"""The environment variables a recipe that is not built in may set on vLLM's nodes without
--trust: a reviewed allow-list of names, each with the kind of value it takes and one line
of why it is safe. Every other name needs --trust (engines/vllm/trust.py says so, naming the
variable and its value).

Where the names come from: vLLM 0.32's own `vllm/envs.py` (the VLLM_* variables the engine
reads), NCCL's documented environment variables (docs.nvidia.com, NCCL user guide,
"Environment Variables"), UCX's `ucx_info -c` configuration and the CUDA and PyTorch
documented variables. Only tuning and selection knobs are here: a kernel, a transport, a
buffer size, a log level, an interface or HCA to use. Never a name whose value is an address,
a port, a rendezvous or host id, a host name, a file or folder, a plugin, a module, a URL or a
command (REFUSED lists the best known of those with the reason, for the error message).

To extend it: add the name with its kind and why, after reading what the engine or library
does with the value; a name that can load code, read or write a file, reach a host or copy
the launcher's environment never belongs here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class EnvKind(StrEnum):
    """What a value may look like. Each kind's pattern is below; none admits `/`, `$`,
    quotes, spaces or `..`, so a value can never be a path, a reference or a second word."""

    BOOL = "bool"  # 0 or 1: every parser of these names reads both (bool(int(v)), v in (1, true))
    INT = "int"  # a non-negative decimal
    NUMBER = "number"  # a non-negative decimal with an optional fraction
    CHOICE = "choice"  # one of the rule's choices
    WORD = "word"  # one registered name (a backend, a kernel)
    WORDS = "words"  # a comma list of names, each optionally led by ^ + or - (NCCL, TORCH_LOGS)
    INTERFACES = "interfaces"  # NCCL's interface prefix list: ^ and = then names, by commas
    HCAS = "hcas"  # NCCL's / UCX's HCA list: ^ and = then device[:port], by commas
    DEVICES = "devices"  # CUDA device indices or GPU-/MIG- UUIDs, by commas
    CPU_BIND = "cpu-bind"  # vLLM CPU's OpenMP binding: auto, nobind or core ranges per rank
    ALLOC_CONF = "alloc-conf"  # PyTorch allocator options: key:value pairs by commas
    SECRET = "secret"  # the launcher's variable of this name, passed by name (never a value)


_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
PATTERNS: dict[EnvKind, re.Pattern[str]] = {
    EnvKind.BOOL: re.compile(r"[01]"),
    EnvKind.INT: re.compile(r"[0-9]{1,12}"),
    EnvKind.NUMBER: re.compile(r"[0-9]{1,12}(\.[0-9]{1,9})?"),
    EnvKind.WORD: re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,63}"),
    EnvKind.WORDS: re.compile(rf"\^?[+-]?{_NAME}(,[+-]?{_NAME}){{0,31}}"),
    EnvKind.INTERFACES: re.compile(rf"\^?=?{_NAME}(,{_NAME}){{0,31}}"),
    EnvKind.HCAS: re.compile(rf"\^?=?{_NAME}(:[0-9]{{1,3}})?(,{_NAME}(:[0-9]{{1,3}})?){{0,31}}"),
    EnvKind.DEVICES: re.compile(r"([0-9]{1,3}|(GPU|MIG)-[0-9a-fA-F-]{1,64})"
                                r"(,([0-9]{1,3}|(GPU|MIG)-[0-9a-fA-F-]{1,64})){0,63}"),
    EnvKind.CPU_BIND: re.compile(r"auto|nobind|[0-9]{1,4}(-[0-9]{1,4})?"
                                 r"([,|][0-9]{1,4}(-[0-9]{1,4})?){0,255}"),
    EnvKind.ALLOC_CONF: re.compile(r"[a-z_]{1,40}:[A-Za-z0-9_.]{1,40}"
                                   r"(,[a-z_]{1,40}:[A-Za-z0-9_.]{1,40}){0,15}"),
}


@dataclass(frozen=True)
class EnvRule:
    kind: EnvKind
    why: str  # what the variable does, and why a stranger's recipe may set it
    choices: tuple[str, ...] = ()

    def value_problem(self, value: str) -> str | None:
        """Why `value` is not a value of this kind, or None."""
        if self.kind is EnvKind.SECRET:
            return None
        if self.kind is EnvKind.CHOICE:
            return None if value in self.choices else f"takes one of {', '.join(self.choices)}"
        if PATTERNS[self.kind].fullmatch(value):
            return None
        return f"takes a value of kind {self.kind} (matching {PATTERNS[self.kind].pattern})"


def _r(kind: EnvKind, why: str, *choices: str) -> EnvRule:
    return EnvRule(kind, why, choices)


B, INT, N, C, W = EnvKind.BOOL, EnvKind.INT, EnvKind.NUMBER, EnvKind.CHOICE, EnvKind.WORD
_LEVELS = ("0", "1", "2", "3", "4", "5", "LOC", "NVL", "PIX", "PXB", "PHB", "SYS")
_UCX_BOOL = ("y", "n", "yes", "no", "on", "off", "1", "0")

ALLOWED: dict[str, EnvRule] = {
    # --- vLLM (vllm/envs.py of 0.32) ------------------------------------------------------
    "VLLM_CPU_KVCACHE_SPACE": _r(INT, "KV cache size in GiB on the CPU backend"),
    "VLLM_CPU_NUM_OF_RESERVED_CPU": _r(INT, "cores the CPU backend leaves to other threads"),
    "VLLM_CPU_OMP_THREADS_BIND": _r(EnvKind.CPU_BIND, "cores the CPU backend's OpenMP binds"),
    "VLLM_ENFORCE_STRICT_TOOL_CALLING": _r(B, "whether tool calls must match their schema"),
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": _r(B, "lets max-model-len exceed the model config's"),
    "VLLM_USE_FLASHINFER_SAMPLER": _r(B, "sampler kernel choice"),
    "VLLM_USE_V2_MODEL_RUNNER": _r(B, "model runner generation"),
    "VLLM_ENABLE_V1_MULTIPROCESSING": _r(B, "engine core in its own process or not"),
    "VLLM_WORKER_MULTIPROC_METHOD": _r(C, "how workers start", "fork", "spawn"),
    "VLLM_BATCH_INVARIANT": _r(B, "batch-invariant kernels (determinism)"),
    "VLLM_MLA_DISABLE": _r(B, "MLA attention off"),
    "VLLM_DISABLE_COMPILE_CACHE": _r(B, "torch.compile cache off (the cache folder is sm121's)"),
    "VLLM_USE_STANDALONE_COMPILE": _r(B, "compile mode choice"),
    "VLLM_ENABLE_INDUCTOR_MAX_AUTOTUNE": _r(B, "inductor autotuning on or off"),
    "VLLM_ENABLE_INDUCTOR_COORDINATE_DESCENT_TUNING": _r(B, "inductor tuning on or off"),
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": _r(B, "count CUDA graphs in the memory profile"),
    "VLLM_USE_DEEP_GEMM": _r(B, "DeepGEMM kernels on or off"),
    "VLLM_MOE_USE_DEEP_GEMM": _r(B, "DeepGEMM for MoE on or off"),
    "VLLM_USE_DEEP_GEMM_E8M0": _r(B, "DeepGEMM scale format"),
    "VLLM_DEEP_GEMM_WARMUP": _r(C, "DeepGEMM warm-up depth", "skip", "full", "relax"),
    "VLLM_USE_FUSED_MOE_GROUPED_TOPK": _r(B, "fused MoE top-k kernel on or off"),
    "VLLM_MARLIN_USE_ATOMIC_ADD": _r(B, "Marlin kernel reduction mode"),
    "VLLM_MARLIN_INPUT_DTYPE": _r(C, "Marlin activation dtype", "int8", "fp8"),
    "VLLM_USE_TRITON_AWQ": _r(B, "Triton AWQ kernels on or off"),
    "VLLM_B12X_MOE_FP4_FORCE_A16": _r(B, "sm12x FP4 MoE activation precision"),
    "VLLM_USE_FLASHINFER_MOE_INT4": _r(B, "FlashInfer int4 MoE kernels on or off"),
    "VLLM_FLASHINFER_ALLREDUCE_BACKEND": _r(C, "all-reduce kernel", "auto", "trtllm", "mnnvl"),
    "VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE": _r(INT, "FlashInfer workspace bytes"),
    "VLLM_ALLREDUCE_USE_SYMM_MEM": _r(B, "symmetric-memory all-reduce on or off"),
    "VLLM_ALLREDUCE_USE_FLASHINFER": _r(B, "FlashInfer all-reduce on or off"),
    "VLLM_USE_NCCL_SYMM_MEM": _r(B, "NCCL symmetric memory on or off"),
    "VLLM_DISABLE_PYNCCL": _r(B, "vLLM's NCCL wrapper off"),
    "VLLM_GDN_DECODE_KERNEL": _r(C, "gated delta-net decode kernel", "cuda", "triton"),
    "VLLM_KV_CACHE_LAYOUT": _r(C, "KV cache memory layout", "LBNHC", "LBHNC", "LHBNC", "NHD",
                               "HND", "BLHNC", "BLNHC", "BHLNC"),
    "VLLM_FLOAT32_MATMUL_PRECISION": _r(C, "fp32 matmul precision", "highest", "high", "medium"),
    "VLLM_DISABLED_KERNELS": _r(EnvKind.WORDS, "custom kernels to leave unused, by name"),
    "VLLM_USE_RAY_COMPILED_DAG_CHANNEL_TYPE": _r(C, "Ray compiled-graph channel (docker "
                                                    "multi-node)", "auto", "nccl", "shm"),
    "VLLM_MQ_MAX_CHUNK_BYTES_MB": _r(INT, "message-queue chunk size"),
    "VLLM_V1_OUTPUT_PROC_CHUNK_SIZE": _r(INT, "output processing batch size"),
    "VLLM_XGRAMMAR_CACHE_MB": _r(INT, "grammar compiler cache size (memory)"),
    "VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE": _r(INT, "FP4 MoE tokens per expert"),
    "VLLM_DEEPEP_BUFFER_SIZE_MB": _r(INT, "DeepEP buffer size"),
    "VLLM_DBO_COMM_SMS": _r(INT, "SMs given to dual-batch-overlap communication"),
    "VLLM_ENGINE_READY_TIMEOUT_S": _r(INT, "seconds the API server waits for the engine core"),
    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": _r(INT, "seconds a model step may take"),
    "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": _r(INT, "HTTP keep-alive seconds"),
    "VLLM_TOOL_PARSE_REGEX_TIMEOUT_SECONDS": _r(INT, "tool-parser regex time limit"),
    "VLLM_LOG_STATS_INTERVAL": _r(N, "seconds between stats log lines"),
    "VLLM_LOGGING_LEVEL": _r(C, "log level (sm121 reads the boot log; DEBUG only adds lines)",
                             "DEBUG", "INFO"),
    "VLLM_NO_USAGE_STATS": _r(B, "usage reporting off (only ever turns reporting off)"),
    "VLLM_DO_NOT_TRACK": _r(B, "usage reporting off"),
    "VLLM_DISABLE_LOG_LOGO": _r(B, "no banner in the log"),
    # Older releases (before 0.32 made them flags): selections by registered name.
    "VLLM_ATTENTION_BACKEND": _r(W, "attention kernel by registered name (older releases)"),
    "VLLM_USE_V1": _r(B, "engine generation (older releases)"),
    # --- NCCL (NCCL user guide, Environment Variables: system configuration) ---------------
    "NCCL_NET": _r(C, "which network transport NCCL uses", "IB", "Socket"),
    "NCCL_IB_HCA": _r(EnvKind.HCAS, "which RDMA devices and ports NCCL uses"),
    "NCCL_SOCKET_IFNAME": _r(EnvKind.INTERFACES, "which IP interfaces NCCL uses"),
    "NCCL_SOCKET_FAMILY": _r(C, "IPv4 or IPv6 for sockets", "AF_INET", "AF_INET6"),
    "NCCL_IB_ADDR_FAMILY": _r(C, "IPv4 or IPv6 GIDs for RoCE", "AF_INET", "AF_INET6"),
    "NCCL_DEBUG": _r(C, "log level", "VERSION", "WARN", "INFO", "TRACE"),
    "NCCL_DEBUG_SUBSYS": _r(EnvKind.WORDS, "which subsystems log"),
    "NCCL_IB_DISABLE": _r(B, "RDMA off (sockets instead)"),
    "NCCL_P2P_DISABLE": _r(B, "GPU peer-to-peer off"),
    "NCCL_SHM_DISABLE": _r(B, "shared-memory transport off"),
    "NCCL_P2P_LEVEL": _r(C, "how far apart GPUs may use peer-to-peer", *_LEVELS),
    "NCCL_NET_GDR_LEVEL": _r(C, "how far apart NIC and GPU may use GPU Direct RDMA", *_LEVELS),
    "NCCL_NET_GDR_READ": _r(B, "GPU Direct RDMA for sends"),
    "NCCL_NET_GDR_C2C": _r(B, "GPU Direct RDMA over C2C (Grace, GB10)"),
    "NCCL_DMABUF_ENABLE": _r(B, "dma-buf registration on or off"),
    "NCCL_GDRCOPY_ENABLE": _r(B, "GDRCopy on or off"),
    "NCCL_IB_GID_INDEX": _r(INT, "which GID (RoCE version and address type) to use"),
    "NCCL_IB_ROCE_VERSION_NUM": _r(INT, "RoCE version for GID selection"),
    "NCCL_IB_TIMEOUT": _r(INT, "InfiniBand verbs timeout exponent"),
    "NCCL_IB_RETRY_CNT": _r(INT, "InfiniBand retries"),
    "NCCL_IB_SL": _r(INT, "InfiniBand service level"),
    "NCCL_IB_TC": _r(INT, "InfiniBand traffic class"),
    "NCCL_IB_QPS_PER_CONNECTION": _r(INT, "queue pairs per connection"),
    "NCCL_IB_SPLIT_DATA_ON_QPS": _r(B, "how data spreads over queue pairs"),
    "NCCL_IB_PCI_RELAXED_ORDERING": _r(INT, "PCI relaxed ordering (0, 1, 2)"),
    "NCCL_IB_ADAPTIVE_ROUTING": _r(B, "adaptive routing on or off"),
    "NCCL_IB_ECE_ENABLE": _r(B, "enhanced connection establishment on or off"),
    "NCCL_IB_MERGE_NICS": _r(B, "merge a NIC's ports into one device"),
    "NCCL_CROSS_NIC": _r(INT, "whether rings may use different NICs (0, 1, 2)"),
    "NCCL_SOCKET_NTHREADS": _r(INT, "socket helper threads"),
    "NCCL_NSOCKS_PERTHREAD": _r(INT, "sockets per helper thread"),
    "NCCL_ALGO": _r(EnvKind.WORDS, "which collective algorithms NCCL may use"),
    "NCCL_PROTO": _r(EnvKind.WORDS, "which protocols NCCL may use"),
    "NCCL_MIN_NCHANNELS": _r(INT, "fewest channels"), "NCCL_MAX_NCHANNELS": _r(INT, "most channels"),
    "NCCL_MIN_CTAS": _r(INT, "fewest CTAs"), "NCCL_MAX_CTAS": _r(INT, "most CTAs"),
    "NCCL_NTHREADS": _r(INT, "threads per CTA"),
    "NCCL_BUFFSIZE": _r(INT, "buffer bytes per channel"),
    "NCCL_P2P_NET_CHUNKSIZE": _r(INT, "network chunk bytes"),
    "NCCL_P2P_NVL_CHUNKSIZE": _r(INT, "NVLink chunk bytes"),
    "NCCL_P2P_PCI_CHUNKSIZE": _r(INT, "PCI chunk bytes"),
    "NCCL_CUMEM_ENABLE": _r(B, "cuMem allocations on or off"),
    "NCCL_NVLS_ENABLE": _r(B, "NVLink SHARP on or off"),
    "NCCL_COLLNET_ENABLE": _r(B, "CollNet on or off"),
    "NCCL_PXN_DISABLE": _r(B, "PXN off"), "NCCL_P2P_PXN_LEVEL": _r(INT, "PXN use (0, 1, 2)"),
    "NCCL_NVB_DISABLE": _r(B, "NVLink-bridge forwarding off"),
    "NCCL_IGNORE_CPU_AFFINITY": _r(B, "ignore the job's CPU affinity"),
    "NCCL_LAUNCH_MODE": _r(C, "kernel launch mode", "PARALLEL", "GROUP"),
    "NCCL_RUNTIME_CONNECT": _r(B, "connect lazily or at init"),
    "NCCL_SET_THREAD_NAME": _r(B, "name NCCL's threads"),
    # --- UCX (ucx_info -c) ----------------------------------------------------------------
    "UCX_TLS": _r(EnvKind.WORDS, "which UCX transports to use"),
    "UCX_NET_DEVICES": _r(EnvKind.HCAS, "which devices and ports UCX uses"),
    "UCX_IB_GID_INDEX": _r(INT, "which GID UCX uses"),
    "UCX_IB_SL": _r(INT, "InfiniBand service level"),
    "UCX_IB_PCI_RELAXED_ORDERING": _r(C, "PCI relaxed ordering", "on", "off", "try", "auto"),
    "UCX_RNDV_SCHEME": _r(C, "rendezvous protocol", "auto", "get_zcopy", "put_zcopy"),
    "UCX_RNDV_THRESH": _r(W, "rendezvous threshold (bytes, a size like 8k, auto or inf)"),
    "UCX_ZCOPY_THRESH": _r(W, "zero-copy threshold (bytes, a size, auto or inf)"),
    "UCX_MAX_RNDV_RAILS": _r(INT, "rails per rendezvous"),
    "UCX_MEMTYPE_CACHE": _r(C, "memory-type cache", *_UCX_BOOL, "try"),
    "UCX_PROTO_ENABLE": _r(C, "new protocol selection", *_UCX_BOOL),
    "UCX_WARN_UNUSED_ENV_VARS": _r(C, "warn about unknown UCX_ names", *_UCX_BOOL),
    "UCX_LOG_LEVEL": _r(C, "log level", "fatal", "error", "warn", "diag", "info", "debug"),
    # --- CUDA (CUDA C programming guide, environment variables) ---------------------------
    "CUDA_VISIBLE_DEVICES": _r(EnvKind.DEVICES, "which GPUs the engine sees"),
    "CUDA_DEVICE_ORDER": _r(C, "device numbering", "FASTEST_FIRST", "PCI_BUS_ID"),
    "CUDA_DEVICE_MAX_CONNECTIONS": _r(INT, "hardware work queues"),
    "CUDA_LAUNCH_BLOCKING": _r(B, "synchronous kernel launches (debugging speed only)"),
    "CUDA_MODULE_LOADING": _r(C, "lazy or eager module loading", "LAZY", "EAGER"),
    "CUDA_CACHE_DISABLE": _r(B, "JIT cache off"),
    "CUDA_CACHE_MAXSIZE": _r(INT, "JIT cache bytes (the cache folder is the default one)"),
    "CUDA_AUTO_BOOST": _r(B, "GPU boost clocks"),
    "CUDA_DISABLE_PTX_JIT": _r(B, "no PTX JIT"), "CUDA_FORCE_PTX_JIT": _r(B, "always PTX JIT"),
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": _r(INT, "share of SMs under MPS"),
    # --- plain settings outside the families ----------------------------------------------
    "HF_HUB_OFFLINE": _r(B, "no downloads: only ever stops traffic"),
    "HF_HUB_DISABLE_TELEMETRY": _r(B, "no telemetry"),
    "TOKENIZERS_PARALLELISM": _r(C, "tokenizer threads", "true", "false"),
    "OMP_NUM_THREADS": _r(INT, "OpenMP threads"),
    "GLOO_SOCKET_IFNAME": _r(EnvKind.INTERFACES, "which IP interface gloo uses"),
    "PYTORCH_CUDA_ALLOC_CONF": _r(EnvKind.ALLOC_CONF, "allocator options (none names a file)"),
    "TORCH_LOGS": _r(EnvKind.WORDS, "which torch components log (to the engine's log)"),
    # --- secrets: the launcher's variable of that name, which the engine needs -----------
    "HF_TOKEN": _r(EnvKind.SECRET, "gated weights from huggingface.co"),
    "VLLM_API_KEY": _r(EnvKind.SECRET, "the API key the engine checks"),
}

# The families the allow-list draws from: a name in one of them that is not listed gets the
# reason below (or REFUSED's), any other name that it is not an allow-listed variable.
FAMILIES = ("VLLM_", "NCCL_", "UCX_", "CUDA_")

# Reviewed and refused: what each would let a stranger's recipe do on every node.
REFUSED: dict[str, str] = {
    "VLLM_HOST_IP": "sets the address the engine announces (sm121 sets it from the cluster file)",
    "VLLM_PORT": "sets a port the engine opens",
    "VLLM_DP_MASTER_IP": "points data-parallel ranks at a host",
    "VLLM_DP_MASTER_PORT": "sets the data-parallel rendezvous port",
    "VLLM_DP_RANK": "sets a rank id (sm121 renders the parallel layout)",
    "VLLM_DP_SIZE": "sets the data-parallel size (sm121 renders the parallel layout)",
    "VLLM_LOOPBACK_IP": "sets an address the engine binds",
    "VLLM_NIXL_SIDE_CHANNEL_HOST": "points KV transfer at a host",
    "VLLM_RAY_DP_PLACEMENT_NODE_IPS": "names the hosts ranks run on",
    "VLLM_RAY_EXTRA_ENV_VARS_TO_COPY": "copies the launcher's variables (secrets) to workers",
    "VLLM_RAY_EXTRA_ENV_VAR_PREFIXES_TO_COPY": "copies the launcher's variables to workers",
    "VLLM_PLUGINS": "imports plugins into the engine",
    "VLLM_NCCL_SO_PATH": "loads a shared library",
    "VLLM_CUDART_SO_PATH": "loads a shared library",
    "VLLM_RUST_FRONTEND_PATH": "runs a program as the API server",
    "VLLM_LOGGING_CONFIG_PATH": "reads a logging config (which can import handlers)",
    "VLLM_LOGGING_STREAM": "resolves a Python object (ext://) as the log stream",
    "VLLM_USAGE_STATS_SERVER": "sends usage reports to a URL",
    "VLLM_USE_MODELSCOPE": "downloads weights from another hub",
    "VLLM_ALLOW_INSECURE_SERIALIZATION": "unpickles data between processes",
    "VLLM_SERVER_DEV_MODE": "opens development endpoints on the API server",
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "lets requests load adapters from paths",
    "VLLM_DEBUG_LOG_API_SERVER_RESPONSE": "writes every response (user content) to the log",
    "VLLM_TRACE_FUNCTION": "writes trace files",
    "VLLM_HUMMING_ONLINE_QUANT_CONFIG": "reads a file named by its value",
    "NCCL_COMM_ID": "sets the address NCCL's ranks meet at",
    "NCCL_HOSTID": "sets the host id NCCL groups ranks by",
    "NCCL_NET_PLUGIN": "loads a network plugin library",
    "NCCL_TUNER_PLUGIN": "loads a tuner plugin library",
    "NCCL_PROFILER_PLUGIN": "loads a profiler plugin library",
    "NCCL_ENV_PLUGIN": "loads an environment plugin library",
    "NCCL_TOPO_FILE": "reads a topology file", "NCCL_GRAPH_FILE": "reads a graph file",
    "NCCL_TOPO_DUMP_FILE": "writes a file", "NCCL_GRAPH_DUMP_FILE": "writes a file",
    "NCCL_DEBUG_FILE": "writes a file", "NCCL_CONF_FILE": "reads more settings from a file",
    "NCCL_RAS_ADDR": "sets an address NCCL listens on",
    "UCX_GDB_COMMAND": "sets the debugger command UCX runs on an error",
    "UCX_HANDLE_ERRORS": "can attach a debugger or freeze the process on an error",
    "UCX_MODULE_DIR": "loads modules from a folder", "UCX_LOG_FILE": "writes a file",
    "CUDA_INJECTION64_PATH": "loads a library into every CUDA process",
    "CUDA_CACHE_PATH": "moves the JIT cache to a folder",
    "CUDA_MPS_PIPE_DIRECTORY": "talks to an MPS server through a folder",
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "writes GPU core dumps",
    "CUDA_COREDUMP_FILE": "writes a file",
}
