// Does compute-sanitizer's racecheck survive a named barrier that one side
// reaches by `bar.arrive` and the other by `bar.sync` (the PTX ISA's
// producer-consumer form, which the sm_90a stream-K GEMM uses between its
// consumers and its releasing warp; docs/perf.md entry 18 found racecheck
// crashing at the end of a process that ran that kernel)? Blocks of 288
// threads: 256 "consumers" and one "releaser" warp.
//   mode 0: both sides bar.sync (the control);
//   mode 1: the consumers store to shared memory and bar.arrive, the
//           releaser bar.sync's and reads what they stored;
//   mode 2: the releaser stores and bar.arrive's, the consumers bar.sync
//           and read (the stream-K kernel's verdicts).
// The process exits 0 once every result matched. On the GPU host:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/racecheck_arrive \
//     scripts/probes/racecheck_arrive.cu
//   for m in 0 1 2; do compute-sanitizer --tool racecheck /tmp/racecheck_arrive $m; echo "mode $m: exit $?"; done
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}

__global__ void __launch_bounds__(288, 1) probe(int mode, unsigned* out) {
  __shared__ unsigned stored[256];
  __shared__ unsigned verdict[32];
  const int t = threadIdx.x;
  const bool releaser = t >= 256;
  unsigned sum = 0;
  if (!releaser) {
    stored[t] = t * 3u + blockIdx.x;
    if (mode == 1) bar_arrive(1, 288); else bar_sync(1, 288);
  } else {
    bar_sync(1, 288);
    for (int i = t - 256; i < 256; i += 32) sum += stored[i];
    verdict[t - 256] = sum;
  }
  if (releaser) {
    if (mode == 2) bar_arrive(2, 288); else bar_sync(2, 288);
  } else {
    bar_sync(2, 288);
    out[blockIdx.x * 256 + t] = verdict[t % 32];
  }
}

int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 1;
  const int blocks = 132;
  unsigned* out;
  cudaMalloc(&out, blocks * 256 * sizeof(unsigned));
  probe<<<blocks, 288>>>(mode, out);
  if (cudaDeviceSynchronize() != cudaSuccess) {
    printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  unsigned* host = (unsigned*)malloc(blocks * 256 * sizeof(unsigned));
  cudaMemcpy(host, out, blocks * 256 * sizeof(unsigned), cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int b = 0; b < blocks; b++)
    for (int t = 0; t < 256; t++) {
      unsigned want = 0;
      for (int i = t % 32; i < 256; i += 32) want += i * 3u + b;
      wrong += host[b * 256 + t] != want;
    }
  printf("mode %d: %d wrong of %d\n", mode, wrong, blocks * 256);
  cudaFree(out);
  free(host);
  return wrong != 0;
}
