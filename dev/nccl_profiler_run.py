"""An ordinary PyTorch/NCCL job under the collscope profiler plugin, for the two-GPU checks.

Run one process per GPU, with the plugin loaded by NCCL:
  NCCL_PROFILER_PLUGIN=$PWD/gpu-emitter/src/main/resources/collscope/nccl/libnccl-profiler-collscope.so \
  COLLSCOPE_SHM_DIR=/dev/shm/collscope NCCL_NVLS_ENABLE=0 \
  torchrun --nproc_per_node=2 dev/nccl_profiler_run.py --straggler-seconds 40 --delay-us 2000

Phases, in this order, all in one process per rank:
1. straggler: all-reduces cycling through --sizes; before each one rank --late-rank sleeps
   --delay-us (the host is late: its kernels start last and, since the others wait for it inside
   theirs, take least). The sidecar (collscope emit --source nccl) reads the blocks meanwhile.
2. overhead: interleaved rounds per size, plugin events on and off in the same process
   (collscope_nccl_set_active: NCCL reads the event mask at each enqueue; off is NCCL with the
   plugin loaded and every event disabled). Each round times --per-round all-reduces with CUDA
   events; the round's value is the slower rank's, us per collective. Prints, on rank 0, one line
   `nccl-overhead,BYTES,on|off,US,US,...` per size and mode (collscope bench nccl-overhead reads
   them) and a line `nccl-straggler-only` when --overhead-rounds is 0.
3. graph: --graph collectives captured in a CUDA graph, replayed --graph-replays times: the
   plugin must refuse them loudly (graph_refused grows by the captured count on every rank and
   calls do not move), never count the capture as one collective.
Finally each rank prints its block's counters (`block,RANK,...`), read here with the same
offsets as io.collscope.nccl.NcclBlockFile.
"""
import argparse
import ctypes
import glob
import os
import struct
import time

import torch
import torch.distributed as dist


def nbytes(s):
    s = s.upper()
    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1], 1)
    return int(s[:-1] if s[-1] in "KM" else s) * mult


def plugin():
    path = os.environ.get("NCCL_PROFILER_PLUGIN")
    if not path or not os.path.isabs(path):
        return None
    # NCCL dlopen'ed the same file: this returns that copy, whose globals NCCL uses.
    lib = ctypes.CDLL(path)
    lib.collscope_nccl_set_active.argtypes = [ctypes.c_int]
    return lib


def set_active(lib, on):
    torch.cuda.synchronize()
    dist.barrier()
    if lib is not None:
        lib.collscope_nccl_set_active(1 if on else 0)


def straggler(args, rank, tensors):
    # A count fixed in advance, the same on every rank: a deadline each rank checks on its own
    # clock let the rank that does not sleep run more all-reduces than the other and hang (run 40).
    n = int(args.straggler_seconds * 1e6 / (args.delay_us + 40))
    delay = args.delay_us / 1e6
    for i in range(n):
        x = tensors[i % len(tensors)]
        if rank == args.late_rank and delay > 0:
            time.sleep(delay)
        dist.all_reduce(x)
        if i % 50 == 49:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return n


def timed_round(x, n):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.barrier()
    torch.cuda.synchronize()
    start.record()
    for _ in range(n):
        dist.all_reduce(x)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / n


def overhead(args, lib, rank, world):
    lines = []
    for s in args.sizes.split(","):
        b = nbytes(s)
        x = torch.ones(b // 4, dtype=torch.float32, device="cuda")
        n = max(20, min(args.per_round, int(args.per_round * 65536 / max(b, 65536))))
        for _ in range(3):
            dist.all_reduce(x)
        res = {True: [], False: []}
        for r in range(args.overhead_rounds):
            order = (True, False) if r % 2 == 0 else (False, True)
            for on in order:
                set_active(lib, on)
                timed_round(x, max(5, n // 10))  # warm after the switch
                res[on].append(timed_round(x, n))
        set_active(lib, True)
        for on in (True, False):
            t = torch.tensor(res[on], dtype=torch.float64, device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            vals = ",".join(f"{v:.4f}" for v in t.tolist())
            lines.append(f"nccl-overhead,{b},{'on' if on else 'off'},{vals}")
    return lines


def graph(args):
    x = torch.ones(1024, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(args.graph):
            dist.all_reduce(x)
    for _ in range(args.graph_replays):
        g.replay()
    torch.cuda.synchronize()


def read_blocks(rank):
    """(rank, counters) of every block this rank's process wrote."""
    out = []
    d = os.environ.get("COLLSCOPE_SHM_DIR", "/dev/shm/collscope")
    for f in sorted(glob.glob(f"{d}/*/rank-{rank}.blk")):
        b = open(f, "rb").read()
        w = struct.unpack_from("<I", b, 8)[0]
        q = lambda o: struct.unpack_from("<Q", b, o)[0]
        # CounterBlock.sizeOf: header and counters, per-peer arrays, 40 histogram buckets and the
        # 36 persistent-CTA extension words of layout 4; the plugin's extension region follows
        size = (112 + 8 * (19 * w + 40 + 36) + 127) & ~127
        stats = [q(size + 128 + 8 * i) for i in range(13)]
        out.append(
            f"block,{rank},{os.path.basename(os.path.dirname(f))},calls={q(32)},bytes={q(40)},"
            f"kernel_ns={q(56)},wait_ns={q(96)},rest_ns={q(104)},"
            f"peer_late_ns={[q(112 + 16 * w + 8 * p) for p in range(w)]},"
            f"arrived_last={[q(112 + 8 * w + 8 * p) for p in range(w)]},"
            f"launch_ns={stats[0]},launch_n={stats[1]},graph_refused={stats[3]},dropped={stats[4]},"
            f"unmatched={stats[5]},stale={stats[6]},peers_seen={stats[7]},"
            f"clock_lag_min_ns={struct.unpack('<q', struct.pack('<Q', stats[8]))[0]},"
            f"timed={stats[9]},sampling={stats[10]},kernel_off={stats[11]},graph_mixed={stats[12]}"
        )
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4K,64K,1M,16M")
    p.add_argument("--straggler-seconds", type=float, default=30)
    p.add_argument("--delay-us", type=float, default=2000)
    p.add_argument("--late-rank", type=int, default=1)
    p.add_argument("--overhead-rounds", type=int, default=9)
    p.add_argument("--per-round", type=int, default=2000)
    p.add_argument("--graph", type=int, default=20)
    p.add_argument("--graph-replays", type=int, default=5)
    p.add_argument("--marker", help="file rank 0 creates when the straggler phase ends; the"
                   " phases after it start --marker-pause seconds later (the sidecar's recording"
                   " stops at the marker, so it holds the straggler phase only)")
    p.add_argument("--marker-pause", type=float, default=3.0)
    args = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    lib = plugin()
    if rank == 0:
        print(f"torch {torch.__version__} cuda {torch.version.cuda} nccl {torch.cuda.nccl.version()}"
              f" plugin {'loaded' if lib else 'absent'}", flush=True)
    tensors = [torch.ones(nbytes(s) // 4, dtype=torch.float32, device="cuda")
               for s in args.sizes.split(",")]
    dist.all_reduce(tensors[0])
    torch.cuda.synchronize()
    t0 = time.time()
    n = straggler(args, rank, tensors)
    if rank == 0:
        print(f"straggler phase: {n} all-reduces in {time.time() - t0:.1f} s, rank {args.late_rank}"
              f" sleeping {args.delay_us:.0f} us before each", flush=True)
    if args.marker:
        if rank == 0:
            open(args.marker, "w").close()
        time.sleep(args.marker_pause)
        dist.barrier()
    for line in read_blocks(rank):
        print("after-straggler " + line, flush=True)
    lines = overhead(args, lib, rank, world) if args.overhead_rounds > 0 else ["nccl-straggler-only"]
    if rank == 0:
        print("\n".join(lines), flush=True)
    before = read_blocks(rank)
    if args.graph > 0:
        graph(args)
    torch.cuda.synchronize()
    dist.barrier()
    time.sleep(0.1)  # the publisher's next pass
    after = read_blocks(rank)
    for line in before:
        print("before-graph " + line, flush=True)
    for line in after:
        print("after-graph " + line, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
