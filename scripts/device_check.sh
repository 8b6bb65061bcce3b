#!/usr/bin/env bash
# On a host with an NVIDIA GPU and vLLM's CUDA build already installed (no network needed):
# make the tiny Holo-shaped model, serve it on the GPU with the harness's own launcher and flags
# (fixtures.cases.models.vllm_serve), and print per-request latency of the agent loop's real requests
# (1 and 3 1920x1080 screenshots) at 1, 2, 4 and 8 concurrent requests: the saturation figure
# docs/scale.md asks users to measure. Usage: bash scripts/device_check.sh [PYTHON_WITH_VLLM]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-$(command -v python3)}"
if ! "$PY" -c "import vllm, torch; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "device check: $PY has no vLLM with a usable GPU (pip install -e .[serve] on the host)"
    exit 2
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
OUT="${OUT:-$(mktemp -d)}"
PYTHONPATH="$PWD" "$PY" -m holo_agent.tiny_model "$OUT/holo-tiny"
PYTHONPATH="$PWD" timeout 540 "$PY" scripts/vllm_latency.py --serve "$OUT/holo-tiny" \
    --serve-device gpu --vllm "$PY" --concurrency 1,2,4,8 --images 1,3
