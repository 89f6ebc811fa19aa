#!/usr/bin/env bash
# Benchmark: the GPU paths in one go, on a machine with CUDA (issue 18).
#
# Runs, in this order, each part under its own time limit so that one slow part does not
# cost the rest: the tests that exercise CUDA (fit, sampling, the learned attack's device
# option); a small paper-preset run that fills numba's cache; the paper preset once, kept;
# the fit of its DP statistics (10M users, r = 8) with the paper's types at T = 2,000 and
# T = 500 and with the default model; the default `topicslab run` twice; sampling 10M
# users on the CPU and on the GPU. Logs go to $OUT (default /tmp/topicslab-gpu); the
# tables are printed as it goes.
#
# Run from the repository root: `bash benchmarks/gpu_suite.sh` (PYTHON names the
# interpreter, default python3; the project importable from it, e.g. PYTHONPATH=src).
set -u
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/topicslab-gpu}
WORK=${WORK:-$(mktemp -d /tmp/topicslab-gpu-work.XXXXXX)}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1

log() { echo "== $(date +%T) $*"; }

log machine
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "CPUs: $(nproc); memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
$PY -c "import sys, torch, numpy, numba, pyarrow
print('python', sys.version.split()[0], '| torch', torch.__version__, '| numpy',
      numpy.__version__, '| numba', numba.__version__, '| pyarrow', pyarrow.__version__)
print('cuda:', torch.cuda.is_available() and torch.cuda.get_device_name(0))"

log "tests that use CUDA"
timeout 150 $PY -m pytest -q -p no:cacheprovider tests/model/test_sample_torch.py \
    tests/model/test_model_fit.py tests/attacks/test_learned.py >"$OUT/tests.log" 2>&1
tail -n 3 "$OUT/tests.log"

log "warm-up: the paper preset at 50K users (fills numba's cache)"
timeout 120 $PY -m topicslab run --preset paper --users 50000 --no-disclosure --quiet \
    --out "$WORK/warm" >"$OUT/warm.log" 2>&1; echo "exit $?"

log "paper preset, once, kept"
timeout 300 $PY benchmarks/run_stages.py --preset paper --repeats 1 --keep "$WORK/paper" \
    -- --no-disclosure 2>&1 | tee "$OUT/paper.md"
if [ -f "$WORK/paper/results.json" ]; then
    $PY -c "import json, sys
v = json.load(open(sys.argv[1])).get('verdict', {})
print('verdict:', v.get('pass'), '|', str(v.get('text', ''))[:300])" "$WORK/paper/results.json"
fi

if [ -d "$WORK/paper/stats" ]; then
    for spec in "--model paper --types 2000" "--model paper --types 500" "--model persistent"; do
        log "fit, 10M users, r = 8, $spec"
        # shellcheck disable=SC2086  # spec is several words on purpose
        timeout 90 $PY benchmarks/bench_model.py --stats "$WORK/paper/stats" --weeks 8 \
            --device cuda --skip-paper --no-progress $spec >"$WORK/fit.log" 2>&1
        cat "$WORK/fit.log" >>"$OUT/fits.log"
        # (the loss curve's rows left out here; they are in fits.log)
        grep -v "^ *[0-9]* *[0-9.]* *[0-9.e+-]* *[0-9.]*% *[0-9.]*%$" "$WORK/fit.log" | head -n 20
    done
fi

for i in 1 2; do
    log "default run $i (the fit on CUDA through --device auto)"
    timeout 150 $PY benchmarks/run_stages.py --preset default --repeats 1 2>&1 \
        | tee -a "$OUT/default.md"
done

if [ -d "$WORK/paper/model" ]; then
    for device in cpu cuda; do
        log "sample 10M users x 4 weeks, $device"
        timeout 90 $PY benchmarks/bench_sample.py --users 10000000 --weeks 4 \
            --model "$WORK/paper/model" --device "$device" --out "$WORK/synth-$device.parquet" \
            2>&1 | tee -a "$OUT/sample.log" | tail -n 3
    done
    if [ -f "$WORK/synth-cpu.parquet" ] && [ -f "$WORK/synth-cuda.parquet" ]; then
        cmp -s "$WORK/synth-cpu.parquet" "$WORK/synth-cuda.parquet" \
            && echo "sample: the CPU's and the GPU's files are the same bytes" \
            || echo "sample: the CPU's and the GPU's files DIFFER"
    fi
fi
log done
