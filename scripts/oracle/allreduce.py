"""An independent oracle for lesson 16: PyTorch's all-reduce over NCCL.

One process per GPU (torch.multiprocessing), NCCL's communicator through
torch.distributed. For each size it times 10 all-reduces of float32 after
3 warm-ups with CUDA events on each rank and prints rank 0's median time,
the algorithm bandwidth and the bus bandwidth as nccl-tests counts them
(2(n - 1)/n). NVLink multicast off, as everywhere on these machines. Not
used by cudarepl itself.
"""
import os
import statistics

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ["NCCL_NVLS_ENABLE"] = "0"

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]


def run(rank, n):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=torch.device("cuda", rank))
    for size in SIZES:
        x = torch.ones(size // 4, device="cuda", dtype=torch.float32)
        for _ in range(3):
            dist.all_reduce(x)
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_reduce(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        t = statistics.median(times)
        if rank == 0:
            alg = size / t / 1e9
            print(f"torch all-reduce {size >> 20:5d} MiB on {n} GPUs: {t * 1e6:9.1f} us, algbw {alg:7.1f} GB/s, busbw {alg * 2 * (n - 1) / n:7.1f} GB/s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    print(f"torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, {n} GPUs", flush=True)
    if n < 2:
        print("fewer than 2 GPUs: nothing to all-reduce")
    else:
        mp.spawn(run, args=(n,), nprocs=n)
