#!/usr/bin/env bash
# Issue 30, run B: the planted kernels of lessons 12, 13, 14 (verdict lines logged), lesson 14's new rungs and checks, lesson 4's recordings.
set -uo pipefail
OUT=${OUT:-/tmp/out}
export CUDAREPL_WORKSPACE=/tmp/wsB CUDAREPL_CACHE=/tmp/cacheB
mkdir -p $OUT/b
t0=$SECONDS
(cd lessons/all && timeout 320 ../../build/lessons.test -test.v -test.count=1 -test.run 'TestGPUPlantedKernels/(softmax|attention|flash-attention)$') > $OUT/b/planted.txt 2>&1
echo "=== planted: exit $?, $((SECONDS-t0)) s" | tee -a $OUT/b/summary.txt
JOBS='l14-check|60|flash-attention --step 6
l14-rungs|90|flash-attention --step 4 --rounds 3
l4-check|40|memory-access --step 18
l4-compiled|30|memory-access --step 12
l4-against|90|memory-access --step 19' bash scripts/gpu-bench.sh
cp $OUT/b/* $OUT/ 2>/dev/null
grep -E "^(=== |--- |    --- |ok|FAIL|PASS)|as planted|FAILED" $OUT/b/planted.txt | cut -c1-300 | head -60
