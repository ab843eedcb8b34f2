#!/usr/bin/env bash
# Issue 30, run A: the planted kernels of lessons 3, 4, 8, 9, 12, 13, then the checks and steps lessons 8, 9 and 13 record.
set -uo pipefail
OUT=${OUT:-/tmp/out}
export CUDAREPL_WORKSPACE=/tmp/wsA CUDAREPL_CACHE=/tmp/cacheA
mkdir -p $OUT/a
t0=$SECONDS
(cd lessons/all && timeout 280 ../../build/lessons.test -test.v -test.count=1 -test.run 'TestGPUPlantedKernels/(transfers|memory-access|launch-and-graphs|fusion|softmax|attention)$') > $OUT/a/planted.txt 2>&1
echo "=== planted: exit $?, $((SECONDS-t0)) s" | tee -a $OUT/a/summary.txt
JOBS='l8-check|40|launch-and-graphs --step 4
l8-host|60|launch-and-graphs --step 6
l8-freed|30|launch-and-graphs --step 8
l9-check|40|fusion --step 4
l13-check|50|attention --step 3
l13-time|50|attention --step 4' bash scripts/gpu-bench.sh
cp $OUT/a/* $OUT/ 2>/dev/null
grep -E "^(=== |--- |    --- |ok|FAIL|PASS)|as planted|FAILED|passes every" $OUT/a/planted.txt | head -80
