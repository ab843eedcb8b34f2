#!/usr/bin/env bash
# Issue 30, run D: lesson 12's one-change sweep (four widths), lesson 3's Overlap sweep, the verdict line of each planted file of lessons 3, 4, 8, 9, copy_tile's profile.
set -uo pipefail
OUT=${OUT:-/tmp/out}
export CUDAREPL_WORKSPACE=/tmp/wsD CUDAREPL_CACHE=/tmp/cacheD
JOBS='l12-changes|110|softmax --step 10
l3-overlap|270|transfers --step 8' bash scripts/gpu-bench.sh
mkdir -p $OUT/v; t0=$SECONDS
for f in lessons/03-transfers/testdata/*.sched lessons/04-memory-access/testdata/*.cu lessons/08-launch-and-graphs/testdata/*.cu lessons/09-fusion/testdata/*.cu; do
  [ $((SECONDS-t0)) -gt 110 ] && { echo "$f: not run" >> $OUT/v/verdicts.txt; continue; }
  slug=$(basename $(dirname $(dirname $f)) | cut -d- -f2-)
  san=""; case $f in *no_sync.cu) san="--sanitize racecheck";; *sync_in_bounds.cu) san="--sanitize synccheck";; esac
  line=$(timeout 40 build/cudarepl check $slug --kernel $f $san 2>&1 | grep -v '^$' | tail -1)
  echo "$f $san: $line" >> $OUT/v/verdicts.txt
done
t1=$SECONDS; timeout 70 build/cudarepl profile memory-access copy_tile --step 19 --json $OUT/v/l4-prof.json > $OUT/v/l4-prof.txt 2>&1; echo "=== profile copy_tile: exit $?, $((SECONDS-t1)) s" >> $OUT/v/verdicts.txt
tar czf $OUT/v.tgz -C $OUT v
cut -c1-250 $OUT/v/verdicts.txt
