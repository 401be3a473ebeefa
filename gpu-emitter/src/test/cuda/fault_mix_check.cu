// Host-side check of the kernel's fault_mix (osar.cu) against FaultPlan.mix: prints
// "seq index hash" lines for FaultMixCheckTest, which compares them with the Java function.
// fault_mix is __host__ __device__, so this runs without a GPU (nvcc only).
#include <stdio.h>

#include "osar.cu"

int main() {
  const unsigned long long seqs[] = {1, 2, 3, 1000, 123456789ull, 0xFFFFFFFFFFull};
  for (unsigned long long s : seqs)
    for (unsigned long long i = 0; i < 8; ++i) printf("%llu %llu %llu\n", s, i, fault_mix(s, i));
  return 0;
}
