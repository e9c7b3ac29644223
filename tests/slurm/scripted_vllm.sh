#!/usr/bin/env bash
# TEST DOUBLE for `vllm serve`: accepts vLLM's argv (as slurm/vllm_replicas.sbatch builds it) and runs the
# scripted OpenAI-compatible server (models/testing/scripted_server.py) on the same port under the same
# served name, so the replica script's launch, readiness polling, endpoints file and shutdown run for
# real on a machine without GPUs. Never used to report results.
set -euo pipefail
port='' name=scripted
while (($#)); do
    case $1 in
    --port) port=$2 && shift ;;
    --served-model-name) name=$2 && shift ;;
    esac
    shift
done
[[ -n $port ]] || { echo "scripted_vllm: no --port" >&2 && exit 2; }
exec python -m tgms.models.testing.scripted_server --port "$port" --model "$name" --start-delay "${SCRIPTED_START_DELAY:-0}"
