"""torch._scaled_mm + NCCL all-reduce baseline for `collscope bench gemm-ar`, measured the same way.

Run one process per GPU:  torchrun --nproc_per_node=2 dev/gemm_ar_torch_bench.py --shapes 4096x6144x4096,...
Each shape is MxNxK with K the per-rank slice: every rank computes
out = torch._scaled_mm(A_r, W_r.t(), scale_a=sa_r[M,1], scale_b=sw_r[1,N], out_dtype=bf16) (FP8 e4m3,
row-wise FP32 scales) and all-reduces it (sum) with NCCL, which is what the fused kernel does in one.
Per round, each rank times --calls calls with CUDA events on its own stream; the round takes the
longest rank's interval divided by the calls: device us per call (events of two GPUs cannot be
compared; the longest interval includes a rank's wait for the other).

Prints on rank 0 a line `torch-rounds,RANKS,M,N,K,US,US,...` per shape with every round's value,
which `collscope bench gemm-ar --torch FILE` reads (the rest of the log is skipped).
Keep NCCL_NVLS_ENABLE=0: NVLink multicast is off on these machines.
"""
import argparse
import os

import torch
import torch.distributed as dist


def measure(m, n, k, rounds, calls):
    g = torch.Generator(device="cuda").manual_seed(1234 + dist.get_rank())
    a = (torch.rand(m, k, device="cuda", generator=g) * 4 - 2).to(torch.float8_e4m3fn)
    w = (torch.rand(n, k, device="cuda", generator=g) * 4 - 2).to(torch.float8_e4m3fn)
    sa = torch.rand(m, 1, device="cuda", generator=g) + 0.5
    sw = torch.rand(1, n, device="cuda", generator=g) + 0.5

    def call():
        out = torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)
        dist.all_reduce(out)
        return out

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    res = []
    for _ in range(rounds):
        dist.barrier()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            call()
        e.record()
        e.synchronize()
        us = torch.tensor([s.elapsed_time(e) * 1000.0 / calls], device="cuda")
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        res.append(us.item())
    del a, w, sa, sw
    torch.cuda.empty_cache()
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x6144x4096")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=10)
    args = p.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    world = dist.get_world_size()
    if dist.get_rank() == 0:
        print(f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, torch {torch.__version__}, "
              f"{world} ranks, NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}", flush=True)
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.lower().split("x"))
        r = measure(m, n, k, args.rounds, args.calls)
        if dist.get_rank() == 0:
            med = sorted(r)[len(r) // 2]
            print(f"| {world} | {m} | {n} | {k} | {med:.1f} | {min(r):.1f}..{max(r):.1f} |", flush=True)
            print("torch-rounds," + ",".join(str(x) for x in [world, m, n, k] + [f"{v:.2f}" for v in r]),
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
