//! cuBLAS's f16 GEMM (f32 accumulation) on the decoded operands: the
//! anchor of the GEMM rows.

use super::{L2_BYTES, checked_ratio, time_graph_ms, time_ms};
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use cudarc::cublas::{CudaBlas, result};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use nvfp4_dsl::{Device, f16};
use nvfp4_kernels::nvfp4::Nvfp4Tensor;

pub struct Blas(CudaBlas);

impl Blas {
    /// A handle on the device's stream; `None` when libcublas is absent.
    pub fn new(device: &Device) -> Result<Option<Blas>, String> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Ok(None);
        }
        let cuda = device.as_cuda().ok_or("cuBLAS needs a CUDA device")?;
        let blas = CudaBlas::new(cuda.stream().clone()).map_err(|e| format!("cuBLAS: {e}"))?;
        Ok(Some(Blas(blas)))
    }

    /// Checks `C = A B^T` in f16 against `want`, then returns its median
    /// microseconds back to back and replayed from a graph, rotating input
    /// copies like the kernels' rows, and its worst error ratio.
    pub fn time_f16_gemm(
        &self,
        device: &Device,
        repeats: usize,
        a: &Nvfp4Tensor,
        b: &Nvfp4Tensor,
        want: &[f64],
    ) -> Result<(f64, f64, f64), String> {
        let stream = device.as_cuda().ok_or("cuBLAS needs a CUDA device")?.stream();
        let (m, n, k) = (a.rows, b.rows, a.k);
        let bits = |t: &Nvfp4Tensor| t.to_f16().into_iter().map(f16::to_bits).collect::<Vec<u16>>();
        let (ha, hb) = (bits(a), bits(b));
        let copies = (3 * L2_BYTES).div_ceil(2 * (m + n) * k).max(2);
        let up = |h: &[u16]| stream.clone_htod(h).map_err(|e| e.to_string());
        let da: Vec<CudaSlice<u16>> = (0..copies).map(|_| up(&ha)).collect::<Result<_, _>>()?;
        let db: Vec<CudaSlice<u16>> = (0..copies).map(|_| up(&hb)).collect::<Result<_, _>>()?;
        let mut dc: Vec<CudaSlice<u16>> = (0..copies)
            .map(|_| stream.alloc_zeros::<u16>(m * n).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        self.gemm(stream, &da[0], &db[0], &mut dc[0], (m, n, k))?;
        let got: Vec<f16> = stream
            .clone_dtoh(&dc[0])
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(f16::from_bits)
            .collect();
        let ratio = checked_ratio(&got, want, &format!("cuBLAS f16 {m}x{n}x{k}"))?;
        let mut call = |i: usize| self.gemm(stream, &da[i % copies], &db[i % copies], &mut dc[i % copies], (m, n, k));
        let ms = time_ms(device, repeats, &mut call)?;
        let graph_ms = time_graph_ms(device, repeats, &mut call)?;
        Ok((ms * 1e3, graph_ms * 1e3, ratio))
    }

    /// Enqueues `c = a b^T` (f16 in and out, f32 accumulation).
    fn gemm(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        a: &CudaSlice<u16>,
        b: &CudaSlice<u16>,
        c: &mut CudaSlice<u16>,
        (m, n, k): (usize, usize, usize),
    ) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        // C row-major [M][N] is C^T column-major = B (N x K, K-major,
        // transposed) x A^T (K x M).
        // SAFETY: the pointers are live allocations of K x N, K x M and
        // N x M f16 values on this handle's stream; alpha and beta are
        // f32 as the f32 compute type needs.
        unsafe {
            result::gemm_ex(
                *self.0.handle(),
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                m as i32,
                k as i32,
                (&alpha as *const f32).cast(),
                pb as *const _,
                cudaDataType::CUDA_R_16F,
                k as i32,
                pa as *const _,
                cudaDataType::CUDA_R_16F,
                k as i32,
                (&beta as *const f32).cast(),
                pc as *mut _,
                cudaDataType::CUDA_R_16F,
                n as i32,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| format!("cuBLAS GemmEx: {e}"))
    }
}
