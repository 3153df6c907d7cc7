#!/usr/bin/env bash
# For a machine with an NVIDIA GPU and PyTorch (not for CI): shows what
# batchfit sees, probes examples/torch_train.py with the model strategy and
# with Lightning's binsearch, trains 200 steps at the size found, and prints
# a comparison. About 5 minutes on one H200; under 8 on one GPU. With more than
# one GPU it then probes a torchrun job over all of them (each GPU's peak at the
# answer) and the one-GPU command with a trial on each GPU at once (--parallel)
# against the serial probe. The multi-GPU part has not yet run on such a machine.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s all >/dev/null
BATCHFIT=build/batchfit
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d)}
echo "== batchfit info"
"$BATCHFIT" info
"$PYTHON" -c 'import torch; assert torch.cuda.is_available(), "PyTorch sees no GPU"; print("torch", torch.__version__, torch.cuda.get_device_name(0))'

declare -A TRIALS WALL BATCH
for strategy in model binsearch; do
    echo "== probe with --strategy $strategy"
    start=$(date +%s.%N)
    "$BATCHFIT" probe --device cuda:0 --strategy "$strategy" --max 4096 --timeout 300 \
        --export-json "$OUT/$strategy.json" -- \
        "$PYTHON" examples/torch_train.py --batch-size '{batch}' --steps 3 | tail -n 1
    end=$(date +%s.%N)
    WALL[$strategy]=$(awk "BEGIN { print $end - $start }")
    read -r TRIALS[$strategy] BATCH[$strategy] < <("$PYTHON" - "$OUT/$strategy.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
print(r["trials"], r["batch_size"])
PY
)
done

echo "== training 200 steps at batch ${BATCH[model]}"
"$PYTHON" examples/torch_train.py --batch-size "${BATCH[model]}" --steps 200 | tail -n 2

echo "== comparison"
printf '%-10s %7s %11s %12s\n' strategy trials batch_size wall_seconds
for strategy in model binsearch; do
    printf '%-10s %7s %11s %12.1f\n' "$strategy" "${TRIALS[$strategy]}" "${BATCH[$strategy]}" \
        "${WALL[$strategy]}"
done

GPUS=$("$PYTHON" scripts/gpu-report.py count <("$BATCHFIT" info --json))
if [ "$GPUS" -gt 1 ]; then
    echo "== $GPUS GPUs: probe a torchrun job over all of them (--batch-size is per GPU)"
    "$BATCHFIT" probe --device cuda:all --max 4096 --timeout 300 --no-cache \
        --export-json "$OUT/torchrun.json" -- \
        "$PYTHON" -m torch.distributed.run --nproc_per_node "$GPUS" examples/torch_train.py \
        --batch-size '{batch}' --steps 3 | tail -n 1
    "$PYTHON" scripts/gpu-report.py peaks "$OUT/torchrun.json"

    echo "== the one-GPU command, one trial on each GPU at once (--parallel)"
    "$BATCHFIT" probe --device cuda:all --parallel --max 4096 --timeout 300 --no-cache \
        --export-json "$OUT/parallel.json" -- \
        "$PYTHON" examples/torch_train.py --batch-size '{batch}' --steps 3 | tail -n 1
    read -r SERIAL_TRIALS SERIAL_BATCH SERIAL_ROUNDS < <("$PYTHON" scripts/gpu-report.py result \
        "$OUT/model.json")
    read -r PARALLEL_TRIALS PARALLEL_BATCH PARALLEL_ROUNDS < <("$PYTHON" scripts/gpu-report.py \
        result "$OUT/parallel.json")
    printf '%-24s %7s %7s %11s\n' probe trials rounds batch_size
    printf '%-24s %7s %7s %11s\n' "cuda:0, one at a time" "$SERIAL_TRIALS" "$SERIAL_ROUNDS" \
        "$SERIAL_BATCH"
    printf '%-24s %7s %7s %11s\n' "cuda:all --parallel" "$PARALLEL_TRIALS" "$PARALLEL_ROUNDS" \
        "$PARALLEL_BATCH"
    if [ "$SERIAL_BATCH" = "$PARALLEL_BATCH" ]; then
        echo "the same answer"
    else
        echo "different answers (the serial probe may have verified a remembered size)"
    fi
fi
echo "JSON exports in $OUT"
