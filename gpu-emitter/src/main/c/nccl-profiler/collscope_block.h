// The shared-memory file one NCCL profiler context (one communicator on one rank) fills: a
// collscope counter block of layout 3, exactly as the kernels write it (counter_block.h and
// gpu-emitter/src/main/java/io/collscope/counters/README.md), followed by an NCCL extension
// region and this rank's arrival ring. io.collscope.nccl.NcclBlockFile reads the same offsets;
// NcclBlockLayoutTest holds this header to the Java constants name by name.
#pragma once
#include <stdint.h>

#include "../../cuda/counter_block.h"

// Counter block shape: world size = the communicator's ranks, 40 latency buckets of ns.
#define CSN_HIST_BUCKETS 40

// Extension region, from CSN_OFF_EXT = the block's size (a multiple of 128). Written under the
// block's own seqlock, in the same publication as the counters.
#define CSN_EXT_MAGIC 1481528131  // 0x584e5343, "CSNX" little-endian
#define CSN_EXT_VERSION 2        // 2: the network region (CSN_X_NET) follows the ring; readers
                                 // take version 1 blocks too (no network region)
#define CSN_X_MAGIC 0            // u32
#define CSN_X_VERSION 4          // u32
#define CSN_X_RANK 8             // u32
#define CSN_X_NRANKS 12          // u32
#define CSN_X_COMM_ID 16         // u64 NCCL's commHash
#define CSN_X_INSTANCE 24        // u64 random, fresh per communicator instance (init call)
#define CSN_X_PID 32             // u64 the writer's process
#define CSN_X_NNODES 40          // u32
#define CSN_X_FINALIZED 44       // u32 1 once NCCL finalized the context (last publication done)
#define CSN_X_HEARTBEAT_NS 48    // u64 CLOCK_REALTIME ns of the last publication
#define CSN_X_COMM_NAME 56       // char[64], NUL-terminated, the user's commName or ""
#define CSN_X_FLAGS 120          // u32 CSN_FLAG_*; 0 in blocks of plugins from before it
#define CSN_FLAG_WRITER_LOCK 1   // the writer holds a write lock (F_OFD_SETLK, whole file) on the
                                 // file while it lives: the lock free means the writer is gone
// Statistics (u64, cumulative), from CSN_X_STATS:
#define CSN_X_STATS 128
#define CSN_S_LAUNCH_NS 0        // host enqueue (Coll start) -> first channel start, summed
#define CSN_S_LAUNCH_N 1         // collectives in CSN_S_LAUNCH_NS (timed ones, not weighted)
#define CSN_S_KERNEL_NS 2        // max over channels (stop) - min over channels (start), summed
                                 // (timed collectives, weighted)
#define CSN_S_GRAPH_REFUSED 3    // graph-captured collectives seen at capture: not counted
#define CSN_S_DROPPED 4          // collectives not counted: the in-flight pool was full
#define CSN_S_UNMATCHED 5        // (collective, local peer) pairs whose arrival was not found
#define CSN_S_STALE 6            // collectives completed by the staleness timeout (channels lost)
#define CSN_S_PEERS_SEEN 7       // local peers whose blocks this rank joined (node-local ranks)
#define CSN_S_CLOCK_LAG_MIN 8    // min over channels of host CLOCK_REALTIME at the start event
                                 // - the channel's GPU start (ns, signed): upper bound of the
                                 // GPU clock's offset from the host's plus the proxy's delay
#define CSN_S_TIMED 9            // collectives timed by their kernel-channel events (sampled)
#define CSN_S_SAMPLING 10        // 1 collective in this many is timed; the timed ones' kernel
                                 // time, wait, lateness and histograms are weighted by it
#define CSN_S_KERNEL_OFF 11       // 1: timing stopped (collectives of this communicator, or of
                                 // another live one of the process, were graph-captured without
                                 // KernelCh under sampling; the plugin's README)
#define CSN_S_GRAPH_MIXED 12     // captured collectives whose KernelCh differed from their
                                 // capture's first (NCCL may hang on that communicator)
#define CSN_S_NET_DROPPED 13     // network proxy operations not followed: every proxy record of
                                 // the process was in use (their steps are not counted)
#define CSN_S_N 14
// Per collective type: calls, bytes, kernel ns, from CSN_X_FUNCS, CSN_FUNC_STRIDE bytes apart.
#define CSN_X_FUNCS (CSN_X_STATS + 8 * 16)
#define CSN_N_FUNCS 8            // AllReduce, AllGather, ReduceScatter, Broadcast, Reduce,
                                 // AllToAll, Gather/Scatter, other
#define CSN_FUNC_STRIDE 24
// Per collective type, the highest key this rank has written into its ring (u64 each): a peer
// that finds another key in a key's entry while this mark is past it knows the key was skipped
// (the collective was dropped here) and stops waiting for it.
#define CSN_X_HWM (CSN_X_FUNCS + CSN_N_FUNCS * CSN_FUNC_STRIDE)
// Arrival ring: this rank's arrival at each collective, read by the node's other ranks.
// Entry {u64 key, u64 start, u64 kernel_ns, u64 spare}: key = ((seq << 3) | func) + 1 (0: empty);
// start = the first channel's %globaltimer start moved onto the host's CLOCK_REALTIME by this
// GPU's offset estimate (CSN_S_CLOCK_LAG_MIN); kernel_ns = last channel stop - first start.
#define CSN_X_RING (CSN_X_HWM + 8 * CSN_N_FUNCS)
#define CSN_RING_PER_FUNC 2048  // entries per collective type: entry func * 2048 + seq % 2048
#define CSN_RING_ENTRIES (CSN_N_FUNCS * CSN_RING_PER_FUNC)
#define CSN_RING_ENTRY 32
#define CSN_EXT_SIZE (CSN_X_RING + CSN_RING_ENTRIES * CSN_RING_ENTRY)
// Network region (extension version 2), from CSN_X_NET: four arrays of nranks u64, cumulative,
// index = the peer rank of NCCL's ProxyOp events (network proxy steps of the timed collectives):
// send steps' network wait (ProxyStep SendWait: posted to the network -> completed) in ns, their
// count, receive steps' wait (RecvWait: posted -> data arrived) in ns, their count. Written under
// the block's seqlock. The file is CSN_EXT_SIZE + CSN_NET_ARRAYS * 8 * nranks bytes past the block.
#define CSN_X_NET CSN_EXT_SIZE
#define CSN_NET_ARRAYS 4
