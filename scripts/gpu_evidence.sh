#!/usr/bin/env bash
# Everything a session lent an H100 should measure, split into parts that each fit the
# device tool's 10-minute command limit (docs/evidence.md, "On a GPU").
#
# Here, on the development machine, once per session (the wheels the device image lacks,
# for its Python 3.12; .whl/ is ignored by git):
#     bash scripts/gpu_evidence.sh wheels
# Then on the device, one part per call (run tool: carry [".whl"]), logs and JSON in $OUT:
#     bash scripts/gpu_evidence.sh tests       # pytest -m gpu, then every example on the GPU
# or everything a first look needs in one call: bash scripts/gpu_first.sh 330
#     bash scripts/gpu_evidence.sh gemm        # gemm fp32 N=4096 TFLOP/s vs cupy.matmul
#     bash scripts/gpu_evidence.sh suite [large] # benchmarks/run_all.py, medium sizes (480 s)
#     bash scripts/gpu_evidence.sh sanitize    # compute-sanitizer over every suite kernel
#     bash scripts/gpu_evidence.sh transfers   # packed vs whole-array transfers end to end
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
part=${1:-}
out=${OUT:-/tmp/polymagic-gpu}
mkdir -p "$out"

if [ "$part" = wheels ]; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    islpy-barvinok pycparser
  ls -la .whl
  exit 0
fi

# on the device: the carried wheels, and polymagic from the working tree
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 POLYMAGIC_CACHE=/tmp/polymagic-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

case "$part" in
  tests)
    timeout 300 python3 -m pytest -q -m gpu tests/test_runtime.py 2>&1 | tee "$out/pytest-gpu.log"
    for f in examples/*.c; do
      timeout 60 python3 -m polymagic run "$f" --target gpu --json \
        --size "$(python3 scripts/example_sizes.py "$f")" > "$out/run-$(basename "$f" .c).json" 2>&1
      echo "$f: exit $?"
    done | tee "$out/examples.log"
    ;;
  gemm)
    timeout 560 python3 benchmarks/gemm_tflops.py --n 4096 2>&1 | tee "$out/gemm.log" ;;
  suite)
    timeout 570 python3 benchmarks/run_all.py --target gpu --preset "${2:-medium}" --time-budget 480 \
      --out "$out/run_all.json" --markdown "$out/run_all.md" --plot "$out/run_all.png" \
      2>&1 | tail -60 ;;
  sanitize)
    timeout 570 python3 scripts/sanitize.py 2>&1 | tee "$out/sanitize.log" | tail -60
    cp benchmarks/results/sanitize.json "$out/" 2>/dev/null ;;
  transfers)
    timeout 560 python3 benchmarks/transfers.py 2>&1 | tee "$out/transfers.log" ;;
  *)
    echo "usage: $0 wheels|tests|gemm|suite|sanitize|transfers" >&2
    exit 2 ;;
esac
