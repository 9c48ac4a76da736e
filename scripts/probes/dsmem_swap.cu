// Latency probe (docs/perf.md entry 19): two blocks of a cluster swap 32 KiB
// each, as the sm_90a GEMM's split-2 epilogue does, three ways: (0) every
// thread pushes its 8 16-byte chunks with st.shared::cluster, then a cluster
// barrier (the kernel's way); (1) the chunks stored locally, then one bulk
// copy shared::cta -> shared::cluster completing on the receiver's mbarrier;
// (2) as (1) in four copies of 8 KiB from four threads; (3) every thread
// stores its chunks to global memory, a cluster barrier, then loads the
// partner's (L2); (4) half the chunks each way, (0) and (3) together; (5)
// the cluster barrier alone, what every form pays; (6) every thread's
// chunks by st.async into the other block, each completing its bytes on
// that block's mbarrier, then a wait on its own (no cluster barrier). 132
// blocks of 256
// threads, one per SM; each block times its exchange with %globaltimer. On the
// GPU host, from the repository root:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/dsmem_swap \
//     scripts/probes/dsmem_swap.cu && /tmp/dsmem_swap
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

__device__ __forceinline__ uint64_t gtime() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t saddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t mapa(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

template <int MODE>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256, 1) probe(unsigned long long* out, uint4* swap) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) uint64_t bar;
  const uint32_t src = saddr(smem), dst = saddr(smem + 32768), bar_a = saddr(&bar);
  const int t = threadIdx.x;
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const uint32_t other = rank ^ 1;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_a));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_a), "r"(32768));
  }
  uint32_t v[32];
#pragma unroll
  for (int i = 0; i < 32; i++) v[i] = t * 32 + i + rank;
  cluster_sync();
  const uint64_t t0 = gtime();
  // Mode 3 and 4's chunks in global memory: block b's chunk j of thread t at
  // swap[(b * 8 + j) * 256 + t].
  uint4* mine = swap + (size_t)blockIdx.x * 2048;
  uint4* theirs = swap + (size_t)(blockIdx.x ^ 1) * 2048;
  // Modes 3 and 4 exchange chunks first_global.. through global memory.
  const int first_global = MODE == 3 ? 0 : MODE == 4 ? 4 : 8;
  if (MODE == 3 || MODE == 4) {
    const uint32_t d = mapa(dst, other);
#pragma unroll
    for (int j = 0; j < 8; j++) {
      if (j >= first_global) {
        asm volatile("st.global.cg.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(mine + j * 256 + t), "r"(v[4 * j]),
                     "r"(v[4 * j + 1]), "r"(v[4 * j + 2]), "r"(v[4 * j + 3])
                     : "memory");
      } else {
        asm volatile("st.shared::cluster.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(d + (j * 256 + t) * 16), "r"(v[4 * j]),
                     "r"(v[4 * j + 1]), "r"(v[4 * j + 2]), "r"(v[4 * j + 3])
                     : "memory");
      }
    }
    cluster_sync();
  } else if (MODE == 5) {
    cluster_sync();
  } else if (MODE == 6) {
    const uint32_t d = mapa(dst, other), rbar = mapa(bar_a, other);
#pragma unroll
    for (int j = 0; j < 8; j++)
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1,%2,%3,%4}, [%5];" ::"r"(
                       d + (j * 256 + t) * 16),
                   "r"(v[4 * j]), "r"(v[4 * j + 1]), "r"(v[4 * j + 2]), "r"(v[4 * j + 3]), "r"(rbar)
                   : "memory");
    asm volatile(
        "{\n.reg .pred p;\nW%=:\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0;\n@!p bra W%=;\n}" ::"r"(
            bar_a)
        : "memory");
  } else if (MODE == 0) {
    const uint32_t d = mapa(dst, other);
#pragma unroll
    for (int j = 0; j < 8; j++)
      asm volatile("st.shared::cluster.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(d + (j * 256 + t) * 16), "r"(v[4 * j]),
                   "r"(v[4 * j + 1]), "r"(v[4 * j + 2]), "r"(v[4 * j + 3])
                   : "memory");
    cluster_sync();
  } else {
#pragma unroll
    for (int j = 0; j < 8; j++)
      asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(src + (j * 256 + t) * 16), "r"(v[4 * j]),
                   "r"(v[4 * j + 1]), "r"(v[4 * j + 2]), "r"(v[4 * j + 3])
                   : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int copies = MODE == 1 ? 1 : 4;
    if (t < copies) {
      const uint32_t bytes = 32768 / copies;
      asm volatile(
          "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              mapa(dst, other) + t * bytes),
          "r"(src + t * bytes), "r"(bytes), "r"(mapa(bar_a, other))
          : "memory");
    }
    asm volatile(
        "{\n.reg .pred p;\nW%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W%=;\n}" ::"r"(bar_a)
        : "memory");
  }
  uint32_t acc = 0;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    uint4 x;
    if (j >= first_global) {
      asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
                   : "l"(theirs + j * 256 + t)
                   : "memory");
    } else {
      x = reinterpret_cast<const uint4*>(smem + 32768)[j * 256 + t];
    }
    acc += x.x + x.y + x.z + x.w;
  }
  __syncthreads();
  const uint64_t t1 = gtime();
  // The partner's copy reads this block's staging area until its barrier
  // completes: neither block exits before both have.
  cluster_sync();
  if (t == 0) {
    out[2 * blockIdx.x] = t1 - t0;
    out[2 * blockIdx.x + 1] = acc;
  }
}

template <int MODE>
void run(const char* name, unsigned long long* d_out, uint4* d_swap) {
  const int blocks = 132, smem = 120 * 1024, launches = 30;
  cudaFuncSetAttribute(probe<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  std::vector<double> maxes, means;
  std::vector<unsigned long long> h(2 * blocks);
  for (int l = 0; l < launches; l++) {
    probe<MODE><<<blocks, 256, smem>>>(d_out, d_swap);
    if (cudaDeviceSynchronize() != cudaSuccess) {
      printf("%s: %s\n", name, cudaGetErrorString(cudaGetLastError()));
      return;
    }
    cudaMemcpy(h.data(), d_out, h.size() * 8, cudaMemcpyDeviceToHost);
    double mx = 0, sum = 0;
    for (int b = 0; b < blocks; b++) {
      mx = std::max(mx, (double)h[2 * b]);
      sum += h[2 * b];
    }
    maxes.push_back(mx);
    means.push_back(sum / blocks);
  }
  std::sort(maxes.begin(), maxes.end());
  std::sort(means.begin(), means.end());
  printf("%-40s median over %d launches: block mean %.0f ns, slowest block %.0f ns\n", name, launches,
         means[launches / 2], maxes[launches / 2]);
}

int main() {
  unsigned long long* d_out;
  uint4* d_swap;
  cudaMalloc(&d_out, 2 * 132 * 8);
  cudaMalloc(&d_swap, 132 * 32768);
  run<0>("st.shared::cluster pushes + barrier", d_out, d_swap);
  run<1>("one bulk copy of 32 KiB", d_out, d_swap);
  run<2>("four bulk copies of 8 KiB", d_out, d_swap);
  run<3>("global stores + barrier + L2 loads", d_out, d_swap);
  run<4>("half pushes, half through global", d_out, d_swap);
  run<5>("the cluster barrier alone", d_out, d_swap);
  run<6>("st.async pushes + mbarrier wait", d_out, d_swap);
  return 0;
}
