#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after `make build`
# here: `cudarepl bench` once for each line of $JOBS, "name|seconds|the
# arguments to bench", each under its own time limit, writing
# $OUT/bench/<name>.json (what to commit as a lesson's results) and
# <name>.txt, then one archive of them all ($OUT/bench.tgz), so that every
# file comes back however many there are. A fresh kernel cache each run.
#
#   JOBS='vector-add|300|vector-add
#   fusion-rounds|200|fusion --step 5 --rounds 3 2^26' bash scripts/gpu-bench.sh
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache-$$
mkdir -p "$OUT/bench"
while IFS='|' read -r name limit args; do
  [ -z "$name" ] && continue
  t0=$SECONDS
  # shellcheck disable=SC2086 # args is a command line
  timeout "$limit" build/cudarepl bench $args --json "$OUT/bench/$name.json" --plots /tmp/cudarepl-plots >"$OUT/bench/$name.txt" 2>&1
  echo "=== $name: exit $?, $((SECONDS - t0)) s" | tee -a "$OUT/bench/summary.txt"
done <<<"${JOBS:?set JOBS: lines of name|seconds|arguments}"
tar czf "$OUT/bench.tgz" -C "$OUT" bench && rm -rf "$OUT/bench"
