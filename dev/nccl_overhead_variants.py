"""What an NCCL profiler plugin costs, taken apart: side by side in one process per rank, rounds
interleaved, the variants of dev/nccl_plugin_variants.c (NCCL_PROFILER_PLUGIN points at it,
COLLSCOPE_BENCH_PLUGIN at libnccl-profiler-collscope.so):

  none     the plugin loaded, no event enabled (NCCL's no-plugin paths: the baseline)
  api      CollApi events, a plugin that does nothing with them
  coll     CollApi + Coll events, idem
  kch      CollApi + Coll + KernelCh events, idem (NCCL adds profiler proxy ops, the GPU writes
           timestamps into host memory, the proxy thread polls them)
  ours:N   libnccl-profiler-collscope.so, KernelCh on 1 collective in N
  ours     libnccl-profiler-collscope.so as configured (COLLSCOPE_NCCL_KERNEL_SAMPLING or its default)

  NCCL_PROFILER_PLUGIN=$PWD/libnccl-plugin-variants.so \
  COLLSCOPE_BENCH_PLUGIN=$PWD/gpu-emitter/src/main/resources/collscope/nccl/libnccl-profiler-collscope.so \
  NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node=2 dev/nccl_overhead_variants.py \
    --variants none,api,coll,kch,ours:1,ours:16,ours:64

Without NCCL_PROFILER_PLUGIN it measures NCCL without any plugin (`--variants noplugin`), in a
process of its own: its lines say `nccl-overhead-separate` (not paired with the others' rounds).

Each round times, for every variant in turn (the order rotates from round to round), --round-ms
worth of eager dist.all_reduce calls with CUDA events, after a switch and a short warm-up; the
round's value is the slower rank's, µs per collective. Rank 0 prints one line per size and
variant, `nccl-overhead,BYTES,LABEL,US,US,...`, which `collscope bench nccl-overhead LOG
--baseline none` classifies.
"""
import argparse
import ctypes
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nccl_profiler_run import nbytes, read_blocks, timed_round  # noqa: E402

VARIANTS = {"none": 0, "api": 1, "coll": 2, "kch": 3, "ours": 4}


def parse_variant(v):
    name, _, n = v.partition(":")
    if name not in VARIANTS and name != "noplugin":
        raise SystemExit(f"unknown variant {v}")
    return v, name, int(n or 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4K,64K,1M,16M")
    p.add_argument("--variants", default="none,api,coll,kch,ours:1,ours:16,ours:64")
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--round-ms", type=float, default=50)
    args = p.parse_args()
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    path = os.environ.get("NCCL_PROFILER_PLUGIN")
    lib = ctypes.CDLL(path) if path and os.path.isabs(path) else None
    variants = [parse_variant(v) for v in args.variants.split(",")]
    if (lib is None) != all(name == "noplugin" for _, name, _ in variants):
        raise SystemExit("noplugin runs without NCCL_PROFILER_PLUGIN, every other variant with it")
    if rank == 0:
        print(f"torch {torch.__version__} cuda {torch.version.cuda} nccl {torch.cuda.nccl.version()}"
              f" plugin {path or 'none'}", flush=True)

    def switch(v):
        torch.cuda.synchronize()
        dist.barrier()
        if lib is not None:
            lib.bench_set_variant(VARIANTS[v[1]], v[2])

    prefix = "nccl-overhead" if lib is not None else "nccl-overhead-separate"
    for s in args.sizes.split(","):
        b = nbytes(s)
        x = torch.ones(b // 4, dtype=torch.float32, device="cuda")
        switch(variants[0])
        timed_round(x, 50)
        # The same count on every rank: the slower rank's estimate.
        est = torch.tensor([timed_round(x, 200)], dtype=torch.float64, device="cuda")
        dist.all_reduce(est, op=dist.ReduceOp.MAX)
        n = int(max(20, min(5000, args.round_ms * 1000 / est.item())))
        res = {v[0]: [] for v in variants}
        for r in range(args.rounds):
            k = r % len(variants)
            for v in variants[k:] + variants[:k]:
                switch(v)
                timed_round(x, max(5, n // 10))  # warm after the switch
                res[v[0]].append(timed_round(x, n))
        switch(variants[0])
        for v in variants:
            t = torch.tensor(res[v[0]], dtype=torch.float64, device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            if rank == 0:
                vals = ",".join(f"{u:.4f}" for u in t.tolist())
                print(f"{prefix},{b},{v[0]},{vals}", flush=True)
        if rank == 0:
            print(f"size {b}: {n} all-reduces per round, {args.rounds} rounds", flush=True)
    torch.cuda.synchronize()
    dist.barrier()
    for line in read_blocks(rank):
        print("variants " + line, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
