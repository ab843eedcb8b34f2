#!/usr/bin/env bash
# Issue 34 on a machine with two GPUs or more, from the repository root
# after `make gpu-build`: how the GPUs are linked and where NCCL is; the
# multi-GPU tests of packages gpu and nccl; lesson 16's check, its planted
# kernels and its whole bench, step by step ($OUT/logs.tgz: r/step*.json; figures in
# $OUT/plots.tgz); PyTorch's all-reduce over NCCL as an independent oracle
# (scripts/oracle/allreduce.py). NVLink multicast stays off throughout.
# (Its planted kernels run on one GPU: TestGPUPlantedKernels/multi-gpu.)
# Logs in $OUT/logs.tgz, a line per part in $OUT/summary.txt, shown last.
set -uo pipefail
OUT=${OUT:-/tmp/cudarepl-out}
mkdir -p "$OUT/logs" "$OUT/r" /tmp/cudarepl-plots
export CUDAREPL_WORKSPACE=/tmp/cudarepl-ws CUDAREPL_CACHE=/tmp/cudarepl-cache
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
S=$OUT/summary.txt
: >"$S"
part() { # part NAME LIMIT command...
  local name=$1 limit=$2 t=$SECONDS
  shift 2
  timeout "$limit" "$@" </dev/null >"$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $?, $((SECONDS - t)) s" >>"$S"
}
part topo 30 nvidia-smi topo -m
part nvlink 30 nvidia-smi nvlink --status
part where-nccl 60 bash -c 'ldconfig -p | grep -i nccl; find / -xdev -name "libnccl.so*" 2>/dev/null | head'
part device 60 build/cudarepl device
part gpu-test 120 build/gpu.test -test.v -test.count=1 -test.run 'TestGPU(OnPeer|PeerCopy|WaitPeer|RunMultiTimeline|InProcessPeers)$'
part nccl-test 120 build/nccl.test -test.v -test.count=1
# Each step of the lesson on its own, so that one that fails loses no other.
for step in 1 2 3 4 5 6 7; do
  part "bench-$step" 150 build/cudarepl bench multi-gpu --step "$step" --json "$OUT/r/step$step.json" --plots /tmp/cudarepl-plots
done
part oracle 180 python3 scripts/oracle/allreduce.py
tar czf "$OUT/plots.tgz" -C /tmp/cudarepl-plots .
tar czf "$OUT/logs.tgz" -C "$OUT" logs r
for f in "$OUT"/logs/bench-*.txt "$OUT/logs/oracle.txt"; do
  echo "--- $(basename "$f")"
  grep -vE "^\s*$" "$f" | tail -12 | cut -c1-220
done
grep -hE "^(--- (FAIL|SKIP)|ok|FAIL|PASS)" "$OUT"/logs/gpu-test.txt "$OUT"/logs/nccl-test.txt
rm -rf "$OUT/logs" "$OUT/r"
cat "$S"
