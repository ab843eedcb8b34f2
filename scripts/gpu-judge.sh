#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after `make gpu-build`
# here: `check --all`, then every planted kernel of the named lessons judged
# as a learner's would be (TestGPUPlantedKernels, which logs each verdict),
# then any cudarepl commands in $JOBS (a file, one command line each, run
# from the repository root with build/cudarepl as `cudarepl`). Each part
# runs under a time limit; its log goes to $OUT/logs/, what jobs write
# for keeping to $OUT/r/ (as $R), both packed into $OUT/all.tgz (a device
# run brings back 8 files at most); a line per part last.
#   PLANTED='hello-gpu|vector-add' JOBS=scripts/jobs.txt scripts/gpu-judge.sh
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
mkdir -p "$OUT/logs" "$OUT/r"
export R=$OUT/r
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache
summary=$OUT/summary.txt
: >"$summary"
part() { # part NAME LIMIT command...: runs it, logs to $OUT/logs/NAME.txt, a summary line
  local name=$1 limit=$2 t=$SECONDS
  shift 2
  timeout "$limit" "$@" </dev/null >"$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $?, $((SECONDS - t)) s" >>"$summary"
}
part device 30 build/cudarepl device
[ -n "${CHECK_ALL:-}" ] && part check-all "${CHECK_LIMIT:-240}" build/cudarepl check --all
if [ -n "${PLANTED:-}" ]; then
  part planted "${PLANTED_LIMIT:-300}" bash -c "cd lessons/all && ../../build/lessons.test -test.v -test.count=1 -test.run 'TestGPUPlantedKernels/($PLANTED)\$'"
  grep -E "as planted|--- FAIL|FAIL:|Error|want" "$OUT/logs/planted.txt" | cut -c1-300 >"$OUT/verdicts.txt"
fi
if [ -n "${JOBS:-}" ]; then
  i=0
  while IFS= read -r cmd; do
    case "$cmd" in '' | '#'*) continue ;; esac
    i=$((i + 1))
    part "job$i" "${JOB_LIMIT:-240}" bash -c "PATH=$PWD/build:\$PATH; $cmd"
    echo "  job$i: $cmd" >>"$summary"
  done <"$JOBS"
fi
tar czf "$OUT/all.tgz" -C "$OUT" logs r
cat "$OUT/verdicts.txt" 2>/dev/null | tail -60
cat "$summary"
