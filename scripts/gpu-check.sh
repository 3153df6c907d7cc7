#!/usr/bin/env bash
# For a machine with an NVIDIA GPU and PyTorch (not for CI): shows what
# batchfit sees, probes examples/torch_train.py with the model strategy and
# with Lightning's binsearch, trains 200 steps at the size found, and prints
# a comparison. About 5 minutes on one H200; under 8 on one GPU.
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
echo "JSON exports in $OUT"
