# Source on the GPU machine before any sm121 or vLLM command (the sitting's scripts do).
# GPU_DIR: where the packed wheels were moved; SITE: where install.sh installs vLLM and sm121.
export GPU_DIR=${GPU_DIR:-$HOME/gpu} SITE=${SITE:-$HOME/site}
export SM121_HOME=${SM121_HOME:-$HOME/sm121home}
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
# NVLink multicast must stay off on shared device hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Where the sitting keeps its state between calls (the machine keeps files while it is held).
export SITTING=${SITTING:-$HOME/sitting}
