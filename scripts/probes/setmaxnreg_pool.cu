// Does `setmaxnreg.inc` wait for registers that `setmaxnreg.dec` of other
// warps put into the block's pool, as the emulator models it
// (nvfp4-dsl/src/emu/ops/registers.rs)? One block of 384 threads,
// `__launch_bounds__(384, 1)` (168 registers a thread): the last warpgroup
// decreases to 40, the first two increase to MORE.
//   mode 232: takes exactly what was given: completes;
//   mode 240: asks 2048 registers more than the pool ever holds: hangs;
//   mode 0:   232, but the last warpgroup decreases only after waiting for
//             a flag the first two set after their increase: hangs.
// The host polls the stream for 2 s and prints "completed" or "still
// running" (then exits without waiting).
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/setmaxnreg_pool \
//     scripts/probes/setmaxnreg_pool.cu
//   for m in 232 240 0; do /tmp/setmaxnreg_pool $m; done
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <cuda_runtime.h>

template <int MORE>
__global__ void __launch_bounds__(384, 1) pool(unsigned* out, int late) {
  __shared__ volatile unsigned arrived;
  const int t = threadIdx.x;
  if (t == 0) arrived = 0;
  __syncthreads();
  if (t >= 256) {
    if (!late) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (late) {
      while (arrived < 256) {
      }
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(MORE));
    out[t] = t;
    atomicAdd((unsigned*)&arrived, 1u);
  }
}

int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 232;
  unsigned* out;
  cudaMalloc(&out, 384 * sizeof(unsigned));
  cudaStream_t s;
  cudaStreamCreate(&s);
  if (mode == 240)
    pool<240><<<1, 384, 0, s>>>(out, 0);
  else
    pool<232><<<1, 384, 0, s>>>(out, mode == 0);
  const auto start = std::chrono::steady_clock::now();
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  printf("mode %d: %s\n", mode,
         e == cudaSuccess ? "completed" : e == cudaErrorNotReady ? "still running after 2 s" : cudaGetErrorString(e));
  fflush(stdout);
  _exit(0);
}
