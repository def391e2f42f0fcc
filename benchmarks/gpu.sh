#!/usr/bin/env bash
# The GPU measurement of first-token scoring (score_throughput.py at the 3B shape), prepared as ONE
# device call. The lent GPU machines have Python 3.12, torch and an older transformers, and no
# network: the lock's versions of what the scorer imports travel as cp312 wheels in ./.whl.
#
#   bash benchmarks/gpu.sh wheels    # here, once: the wheels (versions from requirements.lock) into .whl/
#   bash benchmarks/gpu.sh run       # there: install .whl into /tmp/site, print the device, run every setting
#
# The device call (the `device` tool; carry .whl; about 4 of its 5 minutes):
#   command: bash benchmarks/gpu.sh run      carry: [".whl"]      timeout_s: 300
# `run` prints the card, the versions, q/s and the stage breakdown of every setting in one process
# (one model load), and the two closing lines. OUT_DIR (default $OUT) receives the log.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the scorer imports that the device image lacks or holds at another version (found by
# importing benchmarks/score_throughput.py here and comparing with the image's package list).
WHEELS="transformers tokenizers huggingface-hub safetensors accelerate hf-xet lmms-eval datasets evaluate dill
multiprocess loguru qwen-vl-utils decord tenacity pytz numexpr zstandard sniffio wcwidth defusedxml chardet
truststore httpx2 httpcore2"

case "${1:-}" in
  wheels)
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    mkdir -p .whl
    for name in $WHEELS; do
      pin=$(grep -i -m1 -E "^${name}==" requirements.lock | cut -d' ' -f1) || { echo "not in the lock: $name" >&2; exit 1; }
      python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl "$pin"
    done
    du -sh .whl
    ;;
  run)
    out=${OUT_DIR:-${OUT:-/tmp}}
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c "import torch, transformers, lmms_eval; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'transformers', transformers.__version__)"
    python3 benchmarks/score_throughput.py --shape 3b --device cuda --images 64 2>&1 \
      | grep -v -e 'Loading weights' -e 'Yes/No first-token' -e 'Writing model' | tee "$out/gpu_score_throughput.log"
    ;;
  *)
    echo "usage: bash benchmarks/gpu.sh wheels|run" >&2
    exit 2
    ;;
esac
