// Throughput probe (docs/perf.md entry 13): wgmma.m64n128k16 f16 -> f32, A
// from registers (RS, as the sm_90a GEMM's decoded weights) or shared memory
// (SS), 2 warpgroups per block, 1 block per SM, 132 blocks; timing only (the
// operands are constants). On the GPU host, from the repository root:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/wgmma_rate \
//     scripts/probes/wgmma_rate.cu && /tmp/wgmma_rate
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>

template <int RS, int WAIT>
__global__ void __launch_bounds__(256, 1) probe(float* out, int iters) {
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < 65536 / 4; i += blockDim.x) ((uint32_t*)smem)[i] = 0x3c003c00u * ((i & 7) == 0);
  __syncthreads();
  uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  uint64_t desc = ((uint64_t)((base & 0x3FFFF) >> 4)) | (1ull << 16) | (64ull << 32) | (1ull << 62);
  uint32_t a0 = 0x3c003c00u * (threadIdx.x & 1), a1 = a0, a2 = a0, a3 = a0;
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; i++) d[i] = 0.f;
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int s = 0; s < 8; s++) {
      uint64_t ds = desc + 2 * s;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      if (RS) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %68, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
            "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},"
            "{%64,%65,%66,%67}, %69, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),
              "+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),
              "+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),
              "+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(1), "l"(ds));
      } else {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %64, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
            "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},"
            "%65, %66, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),
              "+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),
              "+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),
              "+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63])
            : "r"(1), "l"(ds + 1024), "l"(ds));
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      if (WAIT) asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      a0 ^= (uint32_t)s;  // a new fragment each step (racy without the wait: timing only)
    }
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float t = 0;
#pragma unroll
  for (int i = 0; i < 64; i++) t += d[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = t;
}

template <int RS, int WAIT>
void run(const char* name, float* out) {
  auto k = probe<RS, WAIT>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536 + 1024);
  int iters = 2048;
  k<<<132, 256, 65536>>>(out, 16);
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(a);
    k<<<132, 256, 65536>>>(out, iters);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    if (ms < best) best = ms;
  }
  double macs = 132.0 * 2 * iters * 8 * 64.0 * 128 * 16;
  double us_per_stage = best * 1e3 / iters;  // a stage: 8 k16 steps of both warpgroups = 128 rows x 128 K x 128
  printf("%-28s %8.3f ms  %7.1f TFLOP/s  %.3f us per 128x128x128 stage  err=%s\n", name, best, 2 * macs / best / 1e9,
         us_per_stage, cudaGetErrorString(cudaGetLastError()));
}

int main() {
  float* out; cudaMalloc(&out, 132 * 256 * 4);
  run<1, 1>("RS, wait_group 1 per step", out);
  run<1, 0>("RS, no wait in the loop", out);
  run<0, 1>("SS, wait_group 1 per step", out);
  run<0, 0>("SS, no wait in the loop", out);
  return 0;
}
