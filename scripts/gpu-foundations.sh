#!/usr/bin/env bash
# Runs on the GPU machine from the repository's root, after `make gpu-build`
# here: the checks of the foundations a learner stands on (a size that does
# not fit, an endless kernel, toolkit headers, a kernel written elsewhere,
# compute-sanitizer), then every GPU test, each lesson's planted kernels, and
# a few measurements to hold against the recorded results. Builds nothing.
# Writes the log and foundations.json under $OUT, and prints a table last.
# STEPS="check-all planted …" runs only the steps named (a run of every step
# takes longer than one 10-minute device command).
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
mkdir -p "$OUT"
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache
log=$OUT/foundations.log
: >"$log"
steps=$(mktemp -d) # each step's output; the log gathers them all
rows=()
json=()
status=0

# check NAME WANT_EXIT MAX_SECONDS MUST_SAY -- COMMAND…: runs the command,
# timing it, and records whether it exited as wanted, in time, saying what
# it must.
check() {
  local name=$1 want=$2 limit=$3 say=$4
  shift 5
  [ -z "${STEPS:-}" ] || [[ " $STEPS " == *" $name "* ]] || return 0
  echo "=== $name: $*" >>"$log"
  local t0=$EPOCHREALTIME
  timeout 600 "$@" >"$steps/$name.out" 2>&1
  local rc=$? t1=$EPOCHREALTIME
  cat "$steps/$name.out" >>"$log"
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  local ok=yes
  case $want in
    0) [ $rc = 0 ] || ok=no ;;
    nonzero) [ $rc != 0 ] || ok=no ;;
  esac
  awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s <= l) }' || ok=no
  [ -z "$say" ] || grep -qF -- "$say" "$steps/$name.out" || ok=no
  [ $ok = yes ] || status=1
  echo "=== exit $rc in $secs s: $ok" >>"$log"
  rows+=("$(printf '%-22s %5s %8s s %8s s  %s' "$name" "$rc" "$secs" "$limit" "$ok")")
  json+=("{\"name\":\"$name\",\"exit\":$rc,\"seconds\":$secs,\"limit_seconds\":$limit,\"ok\":\"$ok\"}")
}

d=lessons/02-vector-add/testdata
check device 0 30 "" -- build/cudarepl device
check too-large nonzero 2 "needs 96.0 GiB of device memory" -- build/cudarepl bench vector-add 2^33
check endless-kernel nonzero 15 "time limit" -- build/cudarepl check vector-add --kernel $d/endless.cu
check toolkit-header 0 60 "passes every check" -- build/cudarepl check vector-add --kernel $d/toolkit_header.cu
check foreign-kernel 0 60 "vector_add passes every check" -- build/cudarepl check vector-add --kernel $d/foreign.cu
check racecheck-no-sync nonzero 300 "hazard on shared memory" -- build/cudarepl check matmul --kernel lessons/05-matmul/testdata/no_sync.cu --sanitize racecheck
check memcheck-no-guard nonzero 300 "Invalid __global__" -- build/cudarepl check vector-add --kernel $d/no_guard.cu --sanitize memcheck
check memcheck-all 0 600 "memcheck: no errors found" -- build/cudarepl check --all --sanitize memcheck
check check-all 0 300 "" -- build/cudarepl check --all
CUDAREPL_FIGURES=$OUT/figures_h100.json check gpu-tests 0 600 "" -- build/gpu.test -test.v -test.count=1
check planted 0 480 "" -- bash -c 'cd lessons/all && ../../build/lessons.test -test.v -test.count=1 -test.run TestGPUPlantedKernels'
check lessons-tests 0 540 "" -- bash -c 'cd lessons/all && ../../build/lessons.test -test.v -test.count=1 -test.skip TestGPUPlantedKernels'
check notebook-tests 0 300 "" -- bash -c 'cd notebook && ../build/notebook.test -test.v -test.count=1'
check cudnnx-tests 0 300 "" -- build/cudnnx.test -test.v -test.count=1
check blas-tests 0 300 "" -- build/blas.test -test.v -test.count=1
# Measurements to hold against the lessons' recorded results.
for l in vector-add fusion launch-and-graphs; do
  check "bench-$l" 0 420 "" -- build/cudarepl bench $l --json "$OUT/bench-$l.json"
done
check bench-flash-attention 0 300 "" -- build/cudarepl bench flash-attention 4x16x4096x64 --json "$OUT/bench-flash-attention.json"
# Start-up: to the prompt, and (warm) to the first lesson result.
check start-to-prompt 0 1 "" -- bash -c 'build/cudarepl </dev/null >/dev/null'
check first-result 0 3 "" -- bash -c "printf 'open 2\nstep 4\nquit\n' | build/cudarepl >/dev/null"

(IFS=,; echo "[${json[*]}]") >"$OUT/foundations.json"
printf '%-22s %5s %10s %10s  %s\n' step exit time limit ok
printf '%s\n' "${rows[@]}"
exit $status
