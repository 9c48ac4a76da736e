//! Checks a launch against the kernel's directives and the hardware's
//! limits, and builds its launch-wide state (`Env`, with the parameter
//! buffer).

use super::decode::Entry;
use super::error::EmuError;
use super::launch::{Launch, ParamValue};
use super::layout::SHARED_BASE;
use super::state::Env;

/// Most threads in a block.
const MAX_THREADS: u64 = 1024;
/// Most shared memory per block (static plus dynamic), as on the H100.
const MAX_SHARED: u64 = 227 * 1024;

/// Most blocks in a cluster (the H100's non-portable limit).
const MAX_CLUSTER: u32 = 16;

/// Registers of a multiprocessor (H100): what the threads of the blocks it
/// holds share.
const SM_REGISTERS: u64 = 64 * 1024;

/// The registers each thread starts with, which `setmaxnreg` moves
/// between warps: the kernel's `.maxnreg`, else all that its `.maxntid`
/// threads times `.minnctapersm` blocks leave a thread of a
/// multiprocessor, a multiple of 8 up to 256, as ptxas 13.0 allocates to
/// a kernel that uses `setmaxnreg` (168 for 384 threads and one block,
/// however few the kernel needs). `None` where the kernel lacks either
/// bound: ptxas then drops every `setmaxnreg` (C7508, "unable to determine
/// register count at entry").
fn start_registers(entry: &Entry) -> Option<u32> {
    if let Some(n) = entry.maxnreg {
        return Some(n);
    }
    let (x, y, z) = entry.maxntid?;
    let threads = u64::from(x) * u64::from(y) * u64::from(z);
    let blocks = u64::from(entry.minnctapersm?.max(1));
    Some((SM_REGISTERS / (threads * blocks).max(1) / 8 * 8).min(256) as u32)
}

/// Validates a launch and builds the parameter buffer.
pub(super) fn prepare<'a>(entry: &'a Entry, launch: &Launch, params: &[ParamValue]) -> Result<Env<'a>, EmuError> {
    let fail = |m: String| Err(EmuError::new(m).in_kernel(&entry.name));
    let (g, b) = (launch.grid, launch.block);
    if g.0 == 0 || g.1 == 0 || g.2 == 0 || b.0 == 0 || b.1 == 0 || b.2 == 0 {
        return fail(format!(
            "grid {g:?} and block {b:?} must have every dimension at least 1"
        ));
    }
    let threads = u64::from(b.0) * u64::from(b.1) * u64::from(b.2);
    if threads > MAX_THREADS || b.2 > 64 {
        return fail(format!(
            "a block of {b:?} has {threads} threads; at most 1024 are allowed (and block.z at most 64)"
        ));
    }
    if g.1 > 65535 || g.2 > 65535 || g.0 > i32::MAX as u32 {
        return fail(format!("grid {g:?} exceeds the limits (2^31-1, 65535, 65535)"));
    }
    if let Some((x, y, z)) = entry.maxntid {
        let max = u64::from(x) * u64::from(y) * u64::from(z);
        if threads > max {
            return fail(format!(
                "a block of {threads} threads exceeds the kernel's .maxntid {x}, {y}, {z} ({max} threads): launch at most {max} threads per block, or raise the kernel's bound to at least {threads} (`#[kernel(launch_bounds({threads}))]` writes `.maxntid {threads}, 1, 1`)"
            ));
        }
    }
    if let Some(r) = entry.reqntid
        && r != b
    {
        return fail(format!("the block {b:?} differs from the kernel's .reqntid {r:?}"));
    }
    let c = launch.cluster;
    if c.0 == 0 || c.1 == 0 || c.2 == 0 {
        return fail(format!("cluster {c:?} must have every dimension at least 1"));
    }
    let cluster_size = u64::from(c.0) * u64::from(c.1) * u64::from(c.2);
    if cluster_size > u64::from(MAX_CLUSTER) {
        return fail(format!(
            "a cluster of {c:?} has {cluster_size} blocks; at most {MAX_CLUSTER} are allowed"
        ));
    }
    if g.0 % c.0 != 0 || g.1 % c.1 != 0 || g.2 % c.2 != 0 {
        return fail(format!(
            "the grid {g:?} is not a multiple of the cluster {c:?} in every dimension"
        ));
    }
    if let Some(r) = entry.reqnctapercluster
        && r != c
    {
        return fail(format!(
            "the cluster {c:?} differs from the kernel's .reqnctapercluster {r:?} (set Launch::cluster to it)"
        ));
    }
    if let Some(n) = entry.maxclusterrank
        && cluster_size > u64::from(n)
    {
        return fail(format!(
            "a cluster of {cluster_size} blocks exceeds the kernel's .maxclusterrank {n}"
        ));
    }
    let static_bytes = u64::from(entry.static_end - SHARED_BASE);
    let dyn_base = entry.dyn_base.map_or(u64::from(entry.static_end), u64::from);
    let total = dyn_base - u64::from(SHARED_BASE) + u64::from(launch.shared_bytes);
    if u64::from(launch.shared_bytes) > MAX_SHARED || total.max(static_bytes) > MAX_SHARED {
        return fail(format!(
            "{} bytes of dynamic shared memory (plus {static_bytes} static) exceed the 227 KiB (232448 bytes) per block",
            launch.shared_bytes
        ));
    }
    if params.len() != entry.params.len() {
        return fail(format!(
            "the kernel takes {} parameters ({}), {} were given",
            entry.params.len(),
            entry
                .params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            params.len()
        ));
    }
    let mut buf = vec![0u8; entry.param_bytes as usize];
    for (k, (p, v)) in entry.params.iter().zip(params).enumerate() {
        let bytes = v.bytes();
        if bytes.len() != p.bytes as usize {
            let shown = match v {
                ParamValue::Bytes(b) => format!("Bytes([..; {}])", b.len()),
                v => format!("{v:?}"),
            };
            return fail(format!(
                "parameter {k} `{}` is {} bytes, but a {}-byte value ({shown}) was given",
                p.name,
                p.bytes,
                bytes.len()
            ));
        }
        buf[p.offset as usize..(p.offset + p.bytes) as usize].copy_from_slice(&bytes);
    }
    let mut regions: Vec<(u32, u32)> = entry.regions.clone();
    let mut shared_end = entry.static_end;
    if let Some(base) = entry.dyn_base {
        regions.push((base, base + launch.shared_bytes));
        shared_end = base + launch.shared_bytes;
    }
    Ok(Env {
        entry,
        params: buf,
        ntid: [b.0, b.1, b.2],
        nctaid: [g.0, g.1, g.2],
        cluster: [c.0, c.1, c.2],
        cluster_size: cluster_size as u32,
        explicit_cluster: cluster_size > 1 || entry.explicitcluster || entry.reqnctapercluster.is_some(),
        regions,
        shared_end,
        dyn_bytes: launch.shared_bytes,
        start_registers: start_registers(entry),
    })
}
