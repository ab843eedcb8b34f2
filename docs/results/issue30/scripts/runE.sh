#!/usr/bin/env bash
# Issue 30, run E: lesson 12's profile with the 128-column point, the verdict line of each planted file of lessons 3, 4, 8, 9 (no sanitizer), and the divergent barrier run plainly.
set -uo pipefail
OUT=${OUT:-/tmp/out}
export CUDAREPL_WORKSPACE=/tmp/wsE CUDAREPL_CACHE=/tmp/cacheE
mkdir -p $OUT/e; t0=$SECONDS
for f in lessons/03-transfers/testdata/*.sched lessons/04-memory-access/testdata/*.cu lessons/08-launch-and-graphs/testdata/*.cu lessons/09-fusion/testdata/*.cu; do
  case $f in *no_sync.cu|*sync_in_bounds.cu) continue;; esac
  slug=$(basename $(dirname $(dirname $f)) | cut -d- -f2-)
  line=$(timeout 40 build/cudarepl check $slug --kernel $f 2>&1 | grep -E "FAILED|passes every|fast enough|not judged" | tr '\n' ' ')
  echo "$f: $line" >> $OUT/e/verdicts.txt
done
echo "=== verdicts: $((SECONDS-t0)) s" >> $OUT/e/verdicts.txt
t1=$SECONDS; timeout 150 build/cudarepl check softmax --kernel lessons/12-softmax/testdata/barrier_in_branch.cu > $OUT/e/barrier.txt 2>&1; echo "=== barrier plain: exit $?, $((SECONDS-t1)) s" >> $OUT/e/verdicts.txt
t1=$SECONDS; timeout 160 build/cudarepl profile softmax --step 9 --json $OUT/e/l12-prof.json > $OUT/e/l12-prof.txt 2>&1; echo "=== profile softmax 9: exit $?, $((SECONDS-t1)) s" >> $OUT/e/verdicts.txt
tar czf $OUT/e.tgz -C $OUT e
cut -c1-330 $OUT/e/verdicts.txt; tail -3 $OUT/e/barrier.txt
