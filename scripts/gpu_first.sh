#!/usr/bin/env bash
# One device call that finds what a first real-GPU run breaks and measures what it can in
# a fixed time (the device budget is 15 minutes a session, start included):
# environment, one smoke run, the pytest GPU tests, every example on the GPU, then gemm
# N=4096 against cuBLAS, each step under its own timeout and all under DEADLINE seconds.
#     run tool: command "bash scripts/gpu_first.sh 330", carry [".whl"]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
deadline=$(( $(date +%s) + ${1:-330} ))
out=${OUT:-/tmp/polymagic-gpu}; mkdir -p "$out"
left() { echo $(( deadline - $(date +%s) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 POLYMAGIC_CACHE=/tmp/polymagic-cache
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
  python3 -c "import sys, cupy, numpy; print(sys.version); print('cupy', cupy.__version__, 'numpy', numpy.__version__); print(cupy.cuda.runtime.runtimeGetVersion(), cupy.cuda.Device(0).attributes['MaxSharedMemoryPerBlockOptin'])"
  which nvcc; nvcc --version | tail -1; } 2>&1 | tee "$out/env.txt"
sizes() { python3 scripts/example_sizes.py "$1"; }
echo "== smoke" | tee "$out/first.log"
timeout 60 python3 -m polymagic run examples/gemm.c --target gpu --size N=256 2>&1 | tail -30 | tee -a "$out/first.log"
echo "== pytest -m gpu ($(left) s left)" | tee -a "$out/first.log"
timeout $(( $(left) > 90 ? 90 : $(left) )) python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_runtime.py 2>&1 | tail -30 | tee -a "$out/first.log"
echo "== examples ($(left) s left)" | tee -a "$out/first.log"
for f in examples/*.c; do
  [ "$(left)" -gt 100 ] || { echo "$f: skipped (time)"; continue; }
  n=$(basename "$f" .c)
  s=$(sizes "$f")
  timeout 40 python3 -m polymagic run "$f" --target gpu --json --size "$s" > "$out/ex-$n.json" 2> "$out/ex-$n.err"
  rc=$?
  python3 - "$out/ex-$n.json" "$f" "$rc" "$s" <<'PY'
import json, sys
p, f, rc, s = sys.argv[1:]
try:
    d = json.load(open(p))
    print(f"{f}: exit {rc} sizes {s} ok={d.get('ok')} checked={d.get('checked')} rel_err={d.get('max_rel_err')} "
          f"device_s={d.get('device_s')} h2d_s={d.get('h2d_s')} d2h_s={d.get('d2h_s')} cpu_s={d.get('cpu_s')} compile_s={d.get('compile_s')} "
          f"{str(d.get('error') or '')[:300]}")
except Exception as e:
    print(f"{f}: exit {rc} sizes {s} (no json: {e})")
PY
  [ $rc -eq 0 ] || tail -5 "$out/ex-$n.err"
done 2>&1 | tee -a "$out/first.log"
tar czf "$out/examples.tgz" -C "$out" $(cd "$out" && ls ex-* 2>/dev/null) && rm -f "$out"/ex-*
echo "== gemm ($(left) s left)" | tee -a "$out/first.log"
t=$(left); [ "$t" -gt 20 ] && timeout $t python3 benchmarks/gemm_tflops.py --n 4096 --repeat 3 \
  --configs "default;--tile 64,64,16:4,4;--tile 128,64,8:8,4;--mapping single --shared none --no-registers" 2>&1 | tail -25 | tee -a "$out/first.log"
echo "== done ($(left) s left)" | tee -a "$out/first.log"
