#!/usr/bin/env bash
# Issue 30, run C: lesson 12's and lesson 3's new recordings, lesson 12's new profile, lesson 14's causal sweep (the chain's new mask).
set -uo pipefail
OUT=${OUT:-/tmp/out}
export CUDAREPL_WORKSPACE=/tmp/wsC CUDAREPL_CACHE=/tmp/cacheC
JOBS='l12-check|60|softmax --step 8
l12-stab|30|softmax --step 2
l12-fp16check|30|softmax --step 16
l12-changes|90|softmax --step 10
l12-narrow|90|softmax --step 11
l14-causal|60|flash-attention --step 10 --rounds 3
l3-check|40|transfers --step 4
l3-race|40|transfers --step 11
l3-overlap|120|transfers --step 8
l3-rounds|120|transfers --step 9' bash scripts/gpu-bench.sh
mkdir -p $OUT/p; t0=$SECONDS
timeout 100 build/cudarepl profile softmax --step 12 --json $OUT/p/l12-prof.json > $OUT/p/l12-prof.txt 2>&1; echo "=== profile softmax 12: exit $?, $((SECONDS-t0)) s" | tee -a $OUT/p/summary.txt
tar czf $OUT/prof.tgz -C $OUT p
