//! Launching on the caller's memory and streams, on the emulator (CI has
//! no GPU): views of buffers as kernel arguments (sub-ranges, casts of raw
//! bytes), their validation (bounds, alignment, ownership), per-stream
//! handles, and eight threads racing to launch a kernel first. The same
//! checks on cudarc's own buffers and streams are in `gpu/interop.rs`.

use nvfp4_dsl::{Device, DeviceBuffer, DeviceView, LaunchConfig, Target, f16};
use nvfp4_kernels::gemm::{self, BlockedScales, GemmKernel, GemmOperand};
use nvfp4_kernels::gemv::{self, Nvfp4View};
use nvfp4_kernels::nvfp4::{self, Inputs, Nvfp4Tensor};
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::samples::saxpy;
use std::sync::{Arc, Barrier};

/// Bytes of an NVFP4 tensor as a caller would hold them (PyTorch's
/// `uint8` data and `float8_e4m3fn` scales), `pad` bytes into each buffer.
fn caller_bytes(device: &Device, t: &Nvfp4Tensor, pad: usize) -> (DeviceBuffer<u8>, DeviceBuffer<u8>) {
    let mut data = vec![0xA5u8; pad];
    data.extend(t.data.iter().map(|b| b.0));
    let mut scales = vec![0x5Au8; pad];
    scales.extend(t.scales.iter().map(|s| s.0));
    (
        device.upload(&data).expect("upload"),
        device.upload(&scales).expect("upload"),
    )
}

#[test]
fn a_kernel_launched_on_views_touches_only_their_elements() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(61);
    let x: Vec<f32> = (0..300).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let y: Vec<f32> = (0..300).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let dx = device.upload(&x).expect("upload");
    let mut dy = device.upload(&y).expect("upload");
    // y[100..200] += 2 * x[37..137]
    let xs = dx.slice(37..137).expect("slice");
    let ys = dy.slice_mut(100..200).expect("slice");
    // SAFETY: one thread per element of ys; x has as many.
    unsafe { saxpy::Kernel::launch(&device, LaunchConfig::linear(1, 128), xs, ys, 2.0).expect("launch") };
    let got = device.download(&dy).expect("download");
    for (i, (&g, &old)) in got.iter().zip(&y).enumerate() {
        let want = if (100..200).contains(&i) {
            2.0 * x[i - 63] + old
        } else {
            old
        };
        assert_eq!(g.to_bits(), want.to_bits(), "y[{i}]");
    }
}

#[test]
// `&xs` is the point: a caller holding a view passes it by reference.
#[allow(clippy::needless_borrows_for_generic_args)]
fn a_view_passed_by_reference_is_reborrowed_and_usable_after() {
    let device = Device::emulator(Target::Sm90);
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.25 - 3.0).collect();
    let dx = device.upload(&x).expect("upload");
    let mut dy = device.upload(&[1.0f32; 64]).expect("upload");
    let xs = dx.slice(0..32).expect("slice");
    let mut ys = dy.slice_mut(32..64).expect("slice");
    // `&xs` and `&mut ys` as a caller holding views writes them; twice, so
    // the views outlive the first launch.
    for _ in 0..2 {
        // SAFETY: one thread per element of ys; x has as many.
        unsafe { saxpy::Kernel::launch(&device, LaunchConfig::linear(1, 32), &xs, &mut ys, 2.0).expect("launch") };
    }
    // `&ys` where the kernel reads: a read-only view of the writable one.
    let mut z = device.upload(&[0.0f32; 32]).expect("upload");
    // SAFETY: as above.
    unsafe { saxpy::Kernel::launch(&device, LaunchConfig::linear(1, 32), &ys, &mut z, 1.0).expect("launch") };
    let got = device.download(&dy).expect("download");
    let z = device.download(&z).expect("download");
    for i in 0..32 {
        let want = 1.0 + 2.0 * x[i] + 2.0 * x[i];
        assert_eq!(got[32 + i].to_bits(), want.to_bits(), "y[{}]", 32 + i);
        assert_eq!(got[i], 1.0, "y[{i}] outside the view");
        assert_eq!(z[i].to_bits(), want.to_bits(), "z[{i}]");
    }
}

#[test]
fn views_out_of_range_misaligned_or_foreign_are_errors() {
    let device = Device::emulator(Target::Sm90);
    let other = Device::emulator(Target::Sm90);
    let dx = device.upload(&[1.0f32; 64]).expect("upload");
    let mut dy = device.upload(&[1.0f32; 64]).expect("upload");
    assert!(dx.slice(10..65).is_err(), "a range past the end");
    assert!(
        dx.view()
            .cast::<nvfp4_dsl::u32x4>()
            .expect("256 bytes")
            .slice(3..17)
            .is_err()
    );
    assert!(
        dx.slice(0..3).expect("slice").cast::<nvfp4_dsl::u32x4>().is_err(),
        "12 bytes are no u32x4"
    );
    let mut foreign = other.upload(&[0.0f32; 64]).expect("upload");
    // SAFETY: the launch is refused before it runs.
    let err = unsafe { saxpy::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut foreign, 1.0) }
        .expect_err("a buffer of another emulator");
    assert!(err.to_string().contains("another device"), "{err}");
    // Copies too: another emulator's addresses name this one's bytes.
    let err = device
        .download(&foreign)
        .expect_err("a download of another emulator's buffer");
    assert!(err.to_string().contains("another device"), "{err}");
    let err = device
        .write(&mut foreign, &[1.0f32; 64])
        .expect_err("a write into another emulator's buffer");
    assert!(err.to_string().contains("another device"), "{err}");
    assert_eq!(other.download(&foreign).expect("its own device"), [0.0f32; 64]);
    // A 16-byte vector view 4 bytes into a buffer: an Err naming the
    // alignment, not a fault inside the kernel.
    let bytes = device.upload(&[0u8; 4096]).expect("upload");
    let (t, _) = nvfp4::gemv_inputs(&mut Rng::new(62), 4, 32, 1, Inputs::Wide).expect("inputs");
    let vector = gemv::DeviceNvfp4::upload(&device, &t).expect("upload");
    let b = Nvfp4View::from(&vector);
    let misaligned = Nvfp4View::new(
        4,
        32,
        1,
        bytes.slice(4..68).expect("slice"),
        bytes.slice(128..136).expect("slice"),
    )
    .expect("lengths are right");
    let mut c = device.upload(&[f16::NAN; 4]).expect("upload");
    let err = gemv::gemv(&device, misaligned, b, &mut c).expect_err("misaligned");
    assert!(err.to_string().contains("not a multiple of the 16 bytes"), "{err}");
    let short = Nvfp4View::new(
        4,
        32,
        1,
        bytes.slice(0..60).expect("slice"),
        bytes.slice(128..136).expect("slice"),
    );
    assert!(short.is_err(), "60 data bytes for 4 x 32 values");
    assert!(dy.slice_mut(0..8).is_ok());
}

#[test]
fn the_gemv_reads_caller_bytes_and_writes_into_a_view() {
    let device = Device::emulator(Target::Sm100a);
    let mut rng = Rng::new(63);
    let (a, b) = nvfp4::gemv_inputs(&mut rng, 64, 512, 2, Inputs::Wide).expect("inputs");
    let want = nvfp4::gemv_reference(&a, &b);
    // The operands 32 bytes into the caller's buffers (16-byte aligned),
    // the result in the middle of a poisoned one.
    let (a_data, a_scales) = caller_bytes(&device, &a, 32);
    let (b_data, b_scales) = caller_bytes(&device, &b, 32);
    fn view<'a>(data: &'a DeviceBuffer<u8>, scales: &'a DeviceBuffer<u8>, t: &Nvfp4Tensor) -> Nvfp4View<'a> {
        let d = data.slice(32..data.len()).expect("slice");
        let s = scales.slice(32..scales.len()).expect("slice");
        Nvfp4View::new(t.rows, t.k, t.batches, d, s).expect("view")
    }
    let (va, vb) = (view(&a_data, &a_scales, &a), view(&b_data, &b_scales, &b));
    let poison = f16::from_bits(0x7E5A);
    let mut c = device.upload(&vec![poison; 64 * 2 + 40]).expect("upload");
    gemv::gemv(
        &device,
        va.assume_constant(),
        vb,
        c.slice_mut(24..24 + 128).expect("slice"),
    )
    .expect("gemv");
    let got = device.download(&c).expect("download");
    nvfp4::check_close(&got[24..152], &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{e}"));
    let untouched = got[..24]
        .iter()
        .chain(&got[152..])
        .all(|v| v.to_bits() == poison.to_bits());
    assert!(untouched, "the GEMV wrote outside its view");
}

#[test]
fn the_gemm_reads_caller_operands() {
    let device = Device::emulator(Target::Sm90a);
    let mut rng = Rng::new(64);
    let (a, b) = nvfp4::gemm_inputs(&mut rng, 128, 256, 256, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4::gemm_reference(&a, &b);
    let upload = |t: &Nvfp4Tensor| {
        let data: Vec<u8> = t.data.iter().map(|b| b.0).collect();
        let scales: Vec<u8> = t.blocked_scales().iter().map(|s| s.0).collect();
        (
            device.upload(&data).expect("upload"),
            device.upload(&scales).expect("upload"),
        )
    };
    let ((ad, asc), (bd, bsc)) = (upload(&a), upload(&b));
    let va = GemmOperand::new(&device, 128, 256, 1, &ad, BlockedScales(&asc)).expect("a");
    let vb = GemmOperand::new(&device, 256, 256, 1, &bd, BlockedScales(&bsc)).expect("b");
    assert!(
        GemmOperand::new(&device, 256, 256, 1, &ad, BlockedScales(&asc)).is_err(),
        "a's bytes are not 256 rows"
    );
    let mut c = device.upload(&vec![f16::NAN; 128 * 256]).expect("upload");
    let kernel = GemmKernel::for_device(&device, 128, 256, 256, 1).expect("sm_90a");
    gemm::gemm_with(&device, va, vb, &mut c, kernel).expect("gemm");
    let got = device.download(&c).expect("download");
    nvfp4::check_close(&got, &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn eight_threads_on_their_own_streams_load_the_kernel_once_and_get_their_results() {
    // Many rounds, each on a fresh device, so that some first launches
    // overlap even on a machine with few cores.
    for round in 0..40u64 {
        let device = Device::emulator(Target::Sm90);
        let start = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (device, start) = (device.new_stream().expect("stream"), start.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(1000 * round + i);
                    let (a, b) = nvfp4::gemv_inputs(&mut rng, 32, 256, 1, Inputs::Wide).expect("inputs");
                    let want = nvfp4::gemv_reference(&a, &b);
                    let da = gemv::DeviceNvfp4::upload(&device, &a).expect("upload");
                    let db = gemv::DeviceNvfp4::upload(&device, &b).expect("upload");
                    let mut c = device.upload(&[f16::NAN; 32]).expect("upload");
                    // Every thread's first launch of the GEMV at the same time.
                    start.wait();
                    gemv::gemv(&device, &da, &db, &mut c).expect("gemv");
                    let got = device.download(&c).expect("download");
                    nvfp4::check_close(&got, &want, 1e-3, 1e-3)
                })
            })
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            t.join()
                .expect("thread")
                .unwrap_or_else(|e| panic!("round {round}, thread {i}: {e}"));
        }
        assert_eq!(
            device.module_loads(),
            1,
            "round {round}: the GEMV module must be loaded once"
        );
    }
}

#[test]
fn the_last_launch_is_tracked_per_stream() {
    let device = Device::emulator(Target::Sm90);
    let other = device.new_stream().expect("stream");
    let dx = device.upload(&[1.0f32; 64]).expect("upload");
    let mut dy = device.upload(&[1.0f32; 64]).expect("upload");
    // SAFETY: one thread per element of y.
    unsafe {
        saxpy::Kernel::launch(
            &device,
            LaunchConfig::linear(1, 64),
            &dx,
            dy.slice_mut(0..32).expect("slice"),
            1.0,
        )
    }
    .expect("launch");
    assert!(device.written_by_running_kernel(dy.slice(16..48).expect("slice")));
    assert!(
        !device.written_by_running_kernel(dy.slice(32..64).expect("slice")),
        "not in the written view"
    );
    assert!(!device.written_by_running_kernel(&dx), "read, not written");
    assert!(!other.written_by_running_kernel(&dy), "another stream's launch");
    assert!(
        device.clone().written_by_running_kernel(&dy),
        "a clone shares the stream"
    );
    let view: DeviceView<'_, f32> = dy.view();
    assert_eq!(view.len(), 64);
}
