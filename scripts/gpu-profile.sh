#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after `make build`
# here: `cudarepl profile` for each lesson in LESSONS (default: those whose
# prose cites counters, then the rest), writing each lesson's profile to
# $OUT/profile/<lesson>.json (to commit as lessons/NN-*/results/profile.json)
# and its tables to $OUT/profile/<lesson>.txt. A lesson starts only while
# BUDGET seconds (default 540) are not spent, so that one 10-minute
# command ends with what it has.
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
mkdir -p "$OUT/profile"
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache
LESSONS=${LESSONS:-"matmul memory-access softmax flash-attention fusion vector-add attention"}
BUDGET=${BUDGET:-540}
start=$SECONDS
for l in $LESSONS; do
  left=$((BUDGET - (SECONDS - start)))
  if [ $left -lt 30 ]; then echo "=== $l: not started, $left s left" | tee -a "$OUT/profile/summary.txt"; continue; fi
  t0=$SECONDS
  timeout $left build/cudarepl profile "$l" --json "$OUT/profile/$l.json" >"$OUT/profile/$l.txt" 2>&1
  echo "=== $l: exit $?, $((SECONDS - t0)) s" | tee -a "$OUT/profile/summary.txt"
done
if [ -n "${KERNEL:-}" ]; then
  build/cudarepl profile vector-add --kernel "$KERNEL" >"$OUT/profile/vector-add-kernel.txt" 2>&1
  echo "=== vector-add --kernel $KERNEL: exit $?" | tee -a "$OUT/profile/summary.txt"
fi
# One archive, so that every file comes back however many there are.
tar czf "$OUT/profile.tgz" -C "$OUT" profile && rm -rf "$OUT/profile"
