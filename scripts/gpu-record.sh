#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after `make gpu-build`
# here: the GPU tests, then every lesson's measurements, writing what should
# be committed under $OUT (results JSON, figures, logs). Builds nothing.
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
mkdir -p "$OUT/results"
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache
log=$OUT/gpu.log
status=0
step() { echo "=== $*" | tee -a "$log"; "$@" >>"$log" 2>&1; rc=$?; echo "=== exit $rc" | tee -a "$log"; [ $rc = 0 ] || status=1; }

step build/cudarepl device
# SKIP_TESTS=1 leaves out the test binaries, so that re-recording one slow
# lesson (matmul takes about 5 minutes) fits in one 10-minute command.
if [ -z "${SKIP_TESTS:-}" ]; then
  CUDAREPL_FIGURES=$OUT/results/figures_h100.json step build/gpu.test -test.v -test.count=1
  step bash -c 'cd lessons/all && ../../build/lessons.test -test.v -test.count=1'
  step bash -c 'cd notebook && ../build/notebook.test -test.v -test.count=1'
  step build/cudnnx.test -test.v -test.count=1
  step build/blas.test -test.v -test.count=1
fi
# LESSONS and NOTEBOOKS narrow a run to some lessons (default: all).
LESSONS=${LESSONS:-$(build/cudarepl lessons | awk '{print $2}')}
NOTEBOOKS=${NOTEBOOKS-$(ls notebooks/*.ipynb)} # set but empty: none
for l in $LESSONS; do
  step build/cudarepl bench "$l" --json "$OUT/results/$l.json" --plots /tmp/cudarepl-plots
done
step build/cudarepl check --all
# A notebook with live results: its cells run in this process (no Jupyter here).
for nb in $NOTEBOOKS; do
  step build/cudarepl notebooks run "$nb" --out "$OUT/results/$(basename "$nb" .ipynb).h100.ipynb"
done
step build/cudarepl check vector-add --kernel lessons/02-vector-add/testdata/solution.cu
# A planted mistake must fail (exit 1).
echo "=== planted no_guard.cu (must fail)" | tee -a "$log"
build/cudarepl check vector-add --kernel lessons/02-vector-add/testdata/no_guard.cu >>"$log" 2>&1 && { echo "no_guard.cu passed!" | tee -a "$log"; status=1; }
# Start-up: to the prompt, and to the first lesson result (warm: second run).
for i in 1 2 3; do
  { TIMEFORMAT="start to prompt and quit: %R s"; time build/cudarepl </dev/null >/dev/null 2>&1; } 2>>"$OUT/startup.txt"
done
for i in 1 2 3; do
  { TIMEFORMAT="start, open 2, step 4 (check), quit: %R s"; time (printf 'open 2\nstep 4\nquit\n' | build/cudarepl >/dev/null 2>&1); } 2>>"$OUT/startup.txt"
done
tar czf "$OUT/plots.tgz" -C /tmp cudarepl-plots 2>/dev/null
grep -E "^(=== |--- FAIL|FAIL|ok|PASS)" "$log" | tail -40
cat "$OUT/startup.txt"
exit $status
