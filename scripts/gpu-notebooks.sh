#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after `make build` here:
# re-runs the named notebooks live (their cells run in this process; the GPU
# machine has no Jupyter) and, with CHECK_ALL=1, `check --all` first. Each
# notebook gets LIMIT seconds (default 300). Writes the executed notebooks and
# a log under $OUT; prints one line per notebook last.
#   NOTEBOOKS="notebooks/03-transfers.ipynb notebooks/13-attention.ipynb" scripts/gpu-notebooks.sh
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
LIMIT=${LIMIT:-300}
mkdir -p "$OUT/executed"
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache
log=$OUT/notebooks.log
summary=$OUT/summary.txt
: >"$summary"
if [ -n "${CHECK_ALL:-}" ]; then
  t=$SECONDS
  timeout 200 build/cudarepl check --all >"$OUT/check-all.txt" 2>&1
  echo "check --all: exit $?, $((SECONDS - t)) s" >>"$summary"
fi
for nb in ${NOTEBOOKS:?name the notebooks to run}; do
  t=$SECONDS
  out=$OUT/executed/$(basename "$nb" .ipynb).h100.ipynb
  echo "=== $nb" >>"$log"
  timeout "$LIMIT" build/cudarepl notebooks run "$nb" --out "$out" >>"$log" 2>&1
  echo "$(basename "$nb"): exit $?, $((SECONDS - t)) s" >>"$summary"
done
tail -5 "$log"
cat "$summary"
