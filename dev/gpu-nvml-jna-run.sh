#!/usr/bin/env bash
# Carried as .carry/gpu-health (a jlink JRE, jna and the health classes); run on the device as
#   bash .carry/gpu-health/run.sh   (writes under $OUT). Never sets anything on the GPU.
# On the device: the JNA NVML reader, idle then under a torch matmul load; read-only.
cd "$(dirname "$0")"
J=jre/bin/java; CP="lib/*"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv
echo "== idle, 1 s interval, 30 s"
$J -cp "$CP" io.collscope.health.NvmlSample 30 1000 > "$OUT/nvml-jna-idle-1s.jsonl" 2> "$OUT/nvml-jna-idle-1s.err"; cat "$OUT/nvml-jna-idle-1s.err"
echo "== load (torch bf16 matmul loop), 250 ms interval, 40 s"
python3 - > "$OUT/load.log" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + 35; n = 0
while time.time() < end:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize(); n += 20
print("matmuls", n)
PY
LOAD=$!
$J -cp "$CP" io.collscope.health.NvmlSample 40 250 > "$OUT/nvml-jna-load-250ms.jsonl" 2> "$OUT/nvml-jna-load-250ms.err"; cat "$OUT/nvml-jna-load-250ms.err"
wait $LOAD; cat "$OUT/load.log"
echo "== cost at 1 s under no load again, 60 reads"
$J -cp "$CP" io.collscope.health.NvmlSample 60 1000 > "$OUT/nvml-jna-cost-1s.jsonl" 2> "$OUT/nvml-jna-cost-1s.err"; cat "$OUT/nvml-jna-cost-1s.err"
head -2 "$OUT/nvml-jna-load-250ms.jsonl"
