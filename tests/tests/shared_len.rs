//! `len()` of a static shared array, as of a local one: its type's length
//! (a 2-D array's rows), a constant, in a kernel and in a device function
//! that takes the array with its length inferred.

use nvfp4_dsl::prelude::*;

/// The wrapping sum of the whole array, however long.
#[device]
fn total<const N: usize>(buf: &SharedArray<u32, N>) -> u32 {
    let mut s = 0u32;
    for i in 0..buf.len() {
        s = s.wrapping_add(buf[i]);
    }
    s
}

#[kernel(targets(sm_90))]
pub fn shared_lens(x: &[u32], out: &mut [u32]) {
    let buf = shared_array::<u32, 96>();
    let tile = shared_array::<[u32; 5], 7>();
    let t = thread_idx_x() as usize;
    for i in (t..buf.len()).step_by(32) {
        buf[i] = x[i];
    }
    sync_threads();
    out[t] = total(buf) ^ (tile.len() * 1000 + buf.len()) as u32 ^ x[t];
}

#[test]
fn a_shared_arrays_len_is_its_types() {
    let device = Device::emulator(Target::Sm90);
    let x: Vec<u32> = (0..96u32).map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995).collect();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&[0xdead_beef_u32; 32]).expect("upload");
    // SAFETY: 32 threads read x[..96] and write out[thread].
    unsafe { shared_lens::Kernel::launch(&device, LaunchConfig::linear(1, 32), &dx, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    let sum = x.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    for (t, got) in out.iter().enumerate() {
        assert_eq!(*got, sum ^ (7 * 1000 + 96) ^ x[t], "thread {t}");
    }
}
