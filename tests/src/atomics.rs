//! `atomic_add` (acquire-release, GPU scope) and `fence_acq_rel_gpu`: the
//! blocks of a launch count their arrivals on one counter, and the last to
//! arrive sums what every block released before its increment; and
//! `global_timer`, read around that. On the emulator blocks run one after another
//! (`tests/std_methods/`); on a GPU they run at once (`tests/gpu/main.rs`).

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

/// Block b stores `values[b]` into `slots[b]` and takes a ticket from
/// `counter[0]`; the block whose ticket is the last sums every slot into
/// `total[0]`. `tickets[b]`: block b's ticket; `times[2 b]`, `times[2 b +
/// 1]`: the global timer at its start and after its ticket.
#[kernel(targets(sm_90))]
pub fn last_block_sums(
    values: &[u32],
    slots: &mut [u32],
    counter: &mut [u32],
    tickets: &mut [u32],
    total: &mut [u32],
    times: &mut [u64],
) {
    let ticket = shared_array::<u32, 1>();
    let b = block_idx_x();
    let start = global_timer();
    if thread_idx_x() == 0 {
        store(slots, b, values[b as usize], Cache::Global);
        fence_acq_rel_gpu();
        let old = atomic_add(counter, 0u32, 1, Order::AcqRel, Scope::Gpu);
        tickets[b as usize] = old;
        ticket[0u32] = old;
        times[2 * b as usize] = start;
        times[2 * b as usize + 1] = global_timer();
    }
    sync_threads();
    if ticket[0u32] + 1 == grid_dim_x() && thread_idx_x() == 0 {
        let mut sum = 0u32;
        for i in 0..grid_dim_x() {
            sum = sum.wrapping_add(load(slots, i, Cache::Global));
        }
        total[0] = sum;
    }
}

/// Launches `blocks` blocks on random values: the tickets must be 0 ..
/// blocks in some order, the counter `blocks`, the total the sum of the
/// values, and no block's timer may go back. Returns the number of blocks,
/// or what went wrong.
pub fn check(device: &Device, blocks: u32, seed: u64) -> Result<u32, String> {
    let mut rng = Rng::new(seed);
    let values: Vec<u32> = (0..blocks).map(|_| rng.next_u64() as u32).collect();
    let err = |e: nvfp4_dsl::Error| e.to_string();
    let n = blocks as usize;
    let dvalues = device.upload(&values).map_err(err)?;
    let mut slots = device.upload(&vec![0x5A5A_5A5Au32; n]).map_err(err)?;
    let mut counter = device.upload(&[0u32]).map_err(err)?;
    let mut tickets = device.upload(&vec![0x5A5A_5A5Au32; n]).map_err(err)?;
    let mut total = device.upload(&[0x5A5A_5A5Au32]).map_err(err)?;
    let mut times = device.upload(&vec![u64::MAX; 2 * n]).map_err(err)?;
    // SAFETY: one block per value; slots and tickets hold `blocks` words,
    // times two per block, counter and total one.
    unsafe {
        last_block_sums::Kernel::launch(
            device,
            LaunchConfig::linear(blocks, 64),
            &dvalues,
            &mut slots,
            &mut counter,
            &mut tickets,
            &mut total,
            &mut times,
        )
        .map_err(err)?
    };
    let mut tickets = device.download(&tickets).map_err(err)?;
    tickets.sort_unstable();
    if tickets != (0..blocks).collect::<Vec<_>>() {
        return Err(format!("the tickets are not 0 .. {blocks}: {tickets:?}"));
    }
    let counter = device.download(&counter).map_err(err)?[0];
    if counter != blocks {
        return Err(format!("the counter is {counter}, not {blocks}"));
    }
    let want = values.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    let got = device.download(&total).map_err(err)?[0];
    if got != want {
        return Err(format!("the last block summed {got}, not {want}"));
    }
    let times = device.download(&times).map_err(err)?;
    if let Some(b) = (0..n).find(|&b| times[2 * b] > times[2 * b + 1]) {
        return Err(format!(
            "block {b}'s timer went back: {} then {}",
            times[2 * b],
            times[2 * b + 1]
        ));
    }
    Ok(blocks)
}
