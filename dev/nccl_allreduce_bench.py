"""NCCL all-reduce baseline for `collscope bench gpu`, measured the same way.

Run one process per GPU:  torchrun --nproc_per_node=2 dev/nccl_allreduce_bench.py [--sizes 4K,1M]
Per size and dtype: a CUDA graph of 50 all-reduces is captured, then replayed 4 times per round
for 9 rounds; each round is timed with CUDA events on rank 0's stream (device time) and divided
by 200. Prints one markdown row per (dtype, size): median and min..max of the rounds in us per
collective, so a reader sees the spread the comparison is made against. Keep NCCL_NVLS_ENABLE=0
(the machine's environment sets it): NVLink multicast is off on these machines.
"""
import argparse
import os
import statistics

import torch
import torch.distributed as dist

PER_GRAPH, REPLAYS, ROUNDS = 50, 4, 9


def nbytes(s):
    s = s.upper()
    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1], 1)
    return int(s[:-1] if s[-1] in "KM" else s) * mult


def measure(numel, dtype):
    x = torch.ones(numel, dtype=dtype, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm up NCCL's communicator and buffers outside the graph
            dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(PER_GRAPH):
            dist.all_reduce(x)
    g.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(ROUNDS):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPLAYS):
            g.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1000 / (PER_GRAPH * REPLAYS))
    return statistics.median(per_call), min(per_call), max(per_call)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4K,64K,256K,1M,16M")
    p.add_argument("--dtypes", default="f32,bf16")
    a = p.parse_args()
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    types = {"f32": torch.float32, "bf16": torch.bfloat16}
    if rank == 0:
        print(f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, torch {torch.__version__}, "
              f"{dist.get_world_size()} ranks, NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}")
        print("| dtype | ranks | bytes/rank | NCCL us (median) | min..max of 9 rounds |")
        print("|---|---:|---:|---:|---|")
    for t in a.dtypes.split(","):
        for s in a.sizes.split(","):
            b = nbytes(s)
            med, lo, hi = measure(b // torch.tensor([], dtype=types[t]).element_size(), types[t])
            if rank == 0:
                print(f"| {t} | {dist.get_world_size()} | {s} | {med:.2f} | {lo:.2f}..{hi:.2f} |",
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
