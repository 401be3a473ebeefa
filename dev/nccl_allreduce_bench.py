"""NCCL all-reduce baseline for `collscope bench gpu`, measured the same way.

Run one process per GPU:  torchrun --nproc_per_node=2 dev/nccl_allreduce_bench.py [--sizes 4K,1M]
Per size and dtype: a CUDA graph of 50 all-reduces is captured, then replayed 4 times per round
for 9 rounds (--rounds). As `bench gpu` does, each rank times a round with CUDA events on its own
stream, one right before its first replay and one after its last, and the round takes the longest
rank's interval divided by 200: device us per collective. Events of two GPUs cannot be compared,
and the longest interval counts the wait of a rank that started first for the other.

Prints, on rank 0, one markdown row per (dtype, size): median and min..max of the rounds, so a
reader sees the spread the comparison is made against; and after each row a line
`nccl-rounds,DTYPE,RANKS,BYTES,US,US,...` with every round's value, which
`collscope bench gpu --baseline FILE` reads (the rest of the log is skipped).
Keep NCCL_NVLS_ENABLE=0 (the machine's environment sets it): NVLink multicast is off on these
machines.
"""
import argparse
import os
import statistics

import torch
import torch.distributed as dist

PER_GRAPH, REPLAYS = 50, 4


def nbytes(s):
    s = s.upper()
    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1], 1)
    return int(s[:-1] if s[-1] in "KM" else s) * mult


def measure(numel, dtype, rounds):
    """Every round's device us per collective: the longest rank's, the same list on every rank."""
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
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    mine = []
    for _ in range(rounds):
        dist.barrier()  # the processes start each round together, as one host thread would
        start.record()
        for _ in range(REPLAYS):
            g.replay()
        end.record()
        end.synchronize()
        mine.append(start.elapsed_time(end) * 1000 / (PER_GRAPH * REPLAYS))
    # exchanged after the rounds, so the exchange never runs inside a timed interval
    longest = torch.tensor(mine, dtype=torch.float64, device="cuda")
    dist.all_reduce(longest, op=dist.ReduceOp.MAX)
    return longest.tolist()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4K,64K,256K,1M,16M")
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--rounds", type=int, default=9)
    a = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    types = {"f32": torch.float32, "bf16": torch.bfloat16}
    if rank == 0:
        print(f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, torch {torch.__version__}, "
              f"{world} ranks, NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}")
        print(f"| dtype | ranks | bytes/rank | NCCL us (median) | min..max of {a.rounds} rounds |")
        print("|---|---:|---:|---:|---|")
    for t in a.dtypes.split(","):
        for s in a.sizes.split(","):
            b = nbytes(s)
            us = measure(b // torch.tensor([], dtype=types[t]).element_size(), types[t], a.rounds)
            if rank == 0:
                print(f"| {t} | {world} | {s} | {statistics.median(us):.2f} | "
                      f"{min(us):.2f}..{max(us):.2f} |")
                print(",".join(["nccl-rounds", t, str(world), str(b)] + [f"{v:.3f}" for v in us]),
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
