// When does a programmatic dependent launch start: once one thread of every
// block of the primary executed `griddepcontrol.launch_dependents`, or once
// all of them did (or exited)? The PTX ISA says "as soon as all other CTAs in
// the grid issue the same instruction or have completed", which leaves the
// threads of one CTA open; the sm_90a GEMM's trigger placement depends on it
// (docs/perf.md entry 22).
//
// The primary: one block per multiprocessor, two warps. Warp 0 triggers at
// once; warp 1 triggers (mode 1) or does not (mode 0) only after spinning
// for SPIN_NS on %globaltimer, then exits. The dependent (launched with the
// programmatic-serialisation attribute) stamps %globaltimer in its first
// thread at its start. Printed: the dependent's start after the primary's,
// median of 20 pairs. About SPIN_NS: the block triggers when its last thread
// does (or exits); about 0: one thread's trigger is the block's.
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/pdl_trigger \
//     scripts/probes/pdl_trigger.cu && /tmp/pdl_trigger
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

constexpr unsigned long long SPIN_NS = 50000;

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void primary(int mode, unsigned long long* stamps) {
  if (blockIdx.x == 0 && threadIdx.x == 0) stamps[0] = now();
  if (threadIdx.x < 32) {
    asm volatile("griddepcontrol.launch_dependents;");
    return;
  }
  const unsigned long long start = now();
  while (now() - start < SPIN_NS) {
  }
  if (mode == 1) asm volatile("griddepcontrol.launch_dependents;");
}

__global__ void dependent(unsigned long long* stamps) {
  if (blockIdx.x == 0 && threadIdx.x == 0) stamps[1] = now();
  asm volatile("griddepcontrol.wait;");
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* stamps;
  cudaMalloc(&stamps, 16);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(sms);
  cfg.blockDim = dim3(32);
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  for (int mode = 0; mode < 2; ++mode) {
    std::vector<double> gaps;
    for (int i = 0; i < 20; ++i) {
      primary<<<sms, 64, 0, s>>>(mode, stamps);
      cudaLaunchKernelEx(&cfg, dependent, stamps);
      unsigned long long h[2];
      cudaMemcpyAsync(h, stamps, 16, cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      gaps.push_back((h[1] - h[0]) / 1000.0);
    }
    std::sort(gaps.begin(), gaps.end());
    printf("mode %d (warp 1 %s): dependent starts %.1f us after the primary (median of 20; spin %.0f us)\n", mode,
           mode ? "triggers after its spin" : "never triggers, exits after its spin", gaps[10], SPIN_NS / 1000.0);
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
