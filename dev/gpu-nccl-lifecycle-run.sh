#!/usr/bin/env bash
# The NCCL profiler plugin's lifecycle on real NCCL (issue 45, item 1): NCCL dlcloses the plugin
# when its last communicator is destroyed, and the process must go on. On a GPU machine with one or
# two GPUs, PyTorch (NCCL 2.28.9), torchrun, nvcc, gcc; no Java, no network. Plugin loaded by NCCL
# only (NCCL_PROFILER_PLUGIN, nothing preloaded: a ctypes.CDLL of the plugin, as
# dev/nccl_profiler_run.py does, pins it and hides the fault). From the checkout's root:
#   dev/gpu-nccl-lifecycle-run.sh            (logs and summary.txt into $OUT, or /tmp/out)
# OLD_SO=/path/to/old.so: today's plugin, if this copy has no git history to take main's from.
# Steps, each under `timeout`, all within ~7.5 min:
#   a  build the plugin from this tree's sources
#   b  torchrun job: all-reduces, destroy_process_group(), then 3 s more work; exit codes
#   c  1000 create/destroy cycles of real communicators in one process (2 ranks with 2 GPUs, else 1)
#   d  b and c with main's plugin: the crash before the fix (expect exit 139 / -11)
#   e  two ranks on ONE GPU under different NCCL_HOSTIDs over Socket/lo: accepted? (NCCL refuses two
#      ranks on one GPU of one host: "Duplicate GPU detected"); first without them, as control
set -u
cd "$(dirname "$0")/.."
O=${OUT:-/tmp/out}; W=/tmp/cs-lifecycle; mkdir -p "$O" "$W"; rm -rf "$W"/shm*
T0=$(date +%s); BUDGET=450
left() { local l=$((T0 + BUDGET - $(date +%s))); ((l < $1)) && echo $((l > 5 ? l : 5)) || echo "$1"; }
note() { echo "$*" | tee -a "$O/summary.txt"; }
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l); ((NGPU > 2)) && NGPU=2
note "gpus $NGPU; $(python -c 'import torch as t;print(t.__version__, t.cuda.nccl.version())' 2>&1)"
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV PATH=$PATH:/usr/local/cuda/bin

# --- a: the plugins -------------------------------------------------------------------------
P=gpu-emitter/src/main/c/nccl-profiler
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o "$W/new.so" \
  "$P/collscope_profiler.c" -lpthread > "$O/build.log" 2>&1 || { note "a: build failed"; exit 1; }
MAIN_SO=main:gpu-emitter/src/main/resources/collscope/nccl/libnccl-profiler-collscope.so
if [[ -n "${OLD_SO:-}" ]]; then cp "$OLD_SO" "$W/old.so"
else git show "$MAIN_SO" > "$W/old.so" 2>> "$O/build.log" || rm -f "$W/old.so"; fi
sum() { [[ -s $1 ]] && sha256sum < "$1" | cut -c1-16 || echo missing; }
note "a: new $(sum "$W/new.so"), old $(sum "$W/old.so")"

# --- the job and the cycle program --------------------------------------------------------------
cat > "$W/job.py" <<'EOF'
import os, time, torch, torch.distributed as dist
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
dev = 0 if os.environ.get("ONE_GPU") else local
if os.environ.get("FAKE_HOSTS"):  # read by NCCL at its first init, in this process only
    os.environ["NCCL_HOSTID"] = f"collscope-fake-host-{rank}"
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
for i in range(300):
    x = torch.ones(1 << 18, device="cuda"); dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {rank}: all-reduce {x[0].item()} world {dist.get_world_size()}", flush=True)
dist.destroy_process_group()
t = time.time(); y = torch.randn(512, 512, device="cuda")  # the job goes on
while time.time() - t < 3:
    y = y @ y.T; y /= y.norm(); time.sleep(0.02)
torch.cuda.synchronize(); print(f"rank {rank}: survived destroy_process_group", flush=True)
EOF
cat > "$W/cycles.c" <<'EOF'
// N create/destroy cycles of real communicators in one process, each with 8 all-reduces; NCCL
// loads the plugin at each first init and dlcloses it at each last destroy. Stops at the deadline.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef struct ncclComm* ncclComm_t;
int ncclCommInitAll(ncclComm_t*, int, const int*); int ncclCommDestroy(ncclComm_t);
int ncclGroupStart(void); int ncclGroupEnd(void); const char* ncclGetErrorString(int);
int ncclAllReduce(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
int main(int argc, char** argv) {
  int n = atoi(argv[1]), nd = atoi(argv[3]), devs[2] = {0, 1}, i;
  time_t end = time(NULL) + atoi(argv[2]);
  float* b[2]; cudaStream_t s[2]; ncclComm_t c[2];
  for (int d = 0; d < nd; d++) cudaSetDevice(d), cudaMalloc((void**)&b[d], 1 << 20), cudaStreamCreate(&s[d]);
  for (i = 0; i < n && time(NULL) < end; i++) {
    int r = ncclCommInitAll(c, nd, devs);
    if (r) { printf("cycle %d: init: %s\n", i, ncclGetErrorString(r)); return 3; }
    for (int k = 0; k < 8; k++) {
      ncclGroupStart();
      for (int d = 0; d < nd; d++) ncclAllReduce(b[d], b[d], 1 << 18, 7 /*f32*/, 0 /*sum*/, c[d], s[d]);
      ncclGroupEnd();
    }
    for (int d = 0; d < nd; d++) cudaSetDevice(d), cudaStreamSynchronize(s[d]);
    for (int d = 0; d < nd; d++) ncclCommDestroy(c[d]);
    if (i % 100 == 0) printf("cycle %d done\n", i), fflush(stdout);
    struct timespec t = {0, 3000000}; nanosleep(&t, NULL);  // the process goes on between them
  }
  struct timespec t = {1, 0}; nanosleep(&t, NULL);
  printf("cycles %d of %d on %d GPU(s): survived\n", i, n, nd);
  return 0;
}
EOF
NL=$(python - <<'EOF'
import glob, os, site, torch
for d in site.getsitepackages() + [os.path.dirname(torch.__file__)]:
    for f in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2") + glob.glob(d + "/lib/libnccl.so.2"):
        print(os.path.dirname(f)); raise SystemExit
EOF
)
[[ -n $NL ]] || NL=$(dirname "$(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')")  # system
nvcc -o "$W/cycles" "$W/cycles.c" -L"$NL" -l:libnccl.so.2 -Xlinker -rpath="$NL" > "$O/cycles-build.log" 2>&1 \
  || note "cycles: build failed (libnccl in '$NL'): $(tail -3 "$O/cycles-build.log")"

job() {  # NAME SO NPROC [ENV...]: a torchrun job; its exit code and each rank's
  local name=$1 so=$2 np=$3; shift 3
  env "$@" NCCL_PROFILER_PLUGIN="$so" COLLSCOPE_SHM_DIR="$W/shm-$name" timeout "$(left 120)" \
    torchrun --standalone --nproc_per_node="$np" "$W/job.py" > "$O/job-$name.log" 2>&1
  local rc=$? re='survived destroy_process_group|exitcode *: *-?[0-9]+|Duplicate GPU[^,]*'
  re+='|loaded external profiler plugin|Closing profiler plugin'  # NCCL's dlopen and dlclose
  note "$name: torchrun rc=$rc $(grep -Eo "$re|all-reduce [0-9.]+ world [0-9]+" "$O/job-$name.log" \
    | sort | uniq -c | tr -s ' \n' ' ')"
}
cycles() {  # NAME SO: the cycle program; rc 124 = hang, >= 128 = crash (139: SIGSEGV)
  [[ -x $W/cycles ]] || return
  NCCL_DEBUG_SUBSYS=INIT NCCL_PROFILER_PLUGIN="$2" COLLSCOPE_SHM_DIR="$W/shm-$1" \
    timeout "$(left "$3")" "$W/cycles" 1000 "$(($(left "$3") - 20))" "$NGPU" > "$W/cyc-$1.log" 2>&1
  local rc=$? what=exit
  ((rc == 124)) && what=hang; ((rc >= 128 && rc != 124)) && what="crash, signal $((rc - 128))"
  grep -v "NCCL INFO" "$W/cyc-$1.log" | tail -200 > "$O/cycles-$1.log"  # NCCL's INFO: counted
  note "$1: rc=$rc ($what) $(tail -1 "$O/cycles-$1.log"); NCCL closed the plugin" \
    "$(grep -c 'Closing profiler plugin' "$W/cyc-$1.log") times"
}

# --- b, c: the fixed plugin; d: main's -----------------------------------------------------------
job new "$W/new.so" "$NGPU"
cycles cycles-new "$W/new.so" 170
if [[ -s $W/old.so ]]; then
  job old "$W/old.so" "$NGPU"
  cycles cycles-old "$W/old.so" 40
else note "d: skipped: no main plugin (set OLD_SO)"; fi

# --- e: two ranks on one GPU ----------------------------------------------------------------------
E=(ONE_GPU=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1
   NCCL_DEBUG_SUBSYS=INIT,ENV,NET)
job one-gpu-control "$W/new.so" 2 "${E[@]}"
job one-gpu-fake-hosts "$W/new.so" 2 "${E[@]}" FAKE_HOSTS=1
grep -hE "NCCL_HOSTID|nNodes|Using network|Duplicate GPU|comm 0x.*rank" \
  "$O/job-one-gpu-fake-hosts.log" | head -20 > "$O/e-excerpt.log"
python - "$W/shm-one-gpu-fake-hosts" >> "$O/summary.txt" 2>&1 <<'EOF'
import glob, struct, sys  # the blocks the plugin filled under e (offsets: collscope_block.h)
for f in sorted(glob.glob(sys.argv[1] + "/*/rank-*.blk")):
    b = open(f, "rb").read(); x = b.find(struct.pack("<I", 0x584E5343))
    while x % 128: x = b.find(struct.pack("<I", 0x584E5343), x + 1)
    s = struct.unpack_from("<14Q", b, x + 128)
    version, nranks = struct.unpack_from("<I", b, x + 4)[0], struct.unpack_from("<I", b, x + 12)[0]
    net = ""
    if version >= 2:  # the network region (collscope_block.h CSN_X_NET): 4 arrays of nranks u64
        o = x + 512 + 8 * 2048 * 32
        a = [struct.unpack_from(f"<{nranks}Q", b, o + 8 * nranks * k) for k in range(4)]
        net = " net " + " ".join(f"peer{p}:send {a[0][p] / max(a[1][p], 1) / 1e3:.1f}us/{a[1][p]}"
                                 f",recv {a[2][p] / max(a[3][p], 1) / 1e3:.1f}us/{a[3][p]}"
                                 for p in range(nranks) if a[1][p] or a[3][p]) + f" net-dropped {s[13]}"
    print(f"e: {f.split('/')[-2]}/{f.split('/')[-1]} v{version} calls {struct.unpack_from('<Q', b, 32)[0]}"
          f" nodes {struct.unpack_from('<I', b, x + 40)[0]} timed {s[9]} peers-seen {s[7]}"
          f" unmatched {s[5]} stale {s[6]} finalized {struct.unpack_from('<I', b, x + 44)[0]}{net}")
EOF
note "done in $(($(date +%s) - T0)) s"; cat "$O/summary.txt"
