#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after `make build`
# here: the course's timing of lesson 4's stride-1 read (2²², 2²⁴ floats)
# and lesson 2's vector add (2²⁰, 2²² floats) against timing_check.cu's
# independent timing of the same kernels, interleaved over three rounds;
# prints the medians and their ratio, and leaves the raw results in $OUT.
set -u
OUT=${OUT:-/tmp/cudarepl-out}
export CUDAREPL_WORKSPACE=/tmp/ws CUDAREPL_CACHE=/tmp/cache
nvcc -O3 -arch=native -o /tmp/timing_check scripts/timing-check/timing_check.cu || exit 1
for round in 1 2 3; do
  /tmp/timing_check > "$OUT/independent-$round.jsonl"
  build/cudarepl bench memory-access --step 2 4194304x1 16777216x1 --json "$OUT/course-stride-$round.json" > /dev/null 2>&1
  build/cudarepl bench vector-add --step 7 2^20 2^22 --json "$OUT/course-vadd-$round.json" > /dev/null 2>&1
done
python3 - <<'PY'
import json, os, glob, statistics as st
out = os.environ.get("OUT", "/tmp/cudarepl-out")
rows = {}
def add(case, who, v): rows.setdefault(case, {}).setdefault(who, []).append(v)
for f in sorted(glob.glob(out + "/independent-*.jsonl")):
    for line in open(f):
        r = json.loads(line)
        if r["flush"] == "read":
            add(r["case"], "independent", r["gbps"])
for f in sorted(glob.glob(out + "/course-*.json")):
    for r in json.load(open(f))["results"]:
        if r.get("kind") != "bench" or not r.get("throughput"): continue
        v, s = r["variant"], r["size"]
        if v == "read_stride" and s.endswith("stride 1"):
            n = int(s.split()[0][2:]); add(f"read_stride n=2^{n.bit_length()-1}", "course", r["throughput"])
        if v == "vadd_v1" and r.get("block") == 256:
            n = int(s[2:]); add(f"vadd_v1 n=2^{n.bit_length()-1}", "course", r["throughput"])
print(f"{'case':22s} {'course GB/s':>12s} {'independent':>12s} {'ratio':>6s}")
for case in sorted(rows):
    c, i = rows[case].get("course", []), rows[case].get("independent", [])
    if c and i:
        print(f"{case:22s} {st.median(c):12.1f} {st.median(i):12.1f} {st.median(c)/st.median(i):6.3f}   rounds: {', '.join(f'{x:.0f}' for x in c)} / {', '.join(f'{x:.0f}' for x in i)}")
PY
