//! What kernels that may still run when a stream's next kernel starts
//! may write: the runtime's answer to
//! [`Device::written_by_running_kernel`](super::Device::written_by_running_kernel).

/// The most address ranges [`LastWrites`] keeps for a stream.
const MAX_RUNNING_RANGES: usize = 256;

/// The address ranges that kernels which may still run when the stream's
/// next kernel starts may write, by stream: what
/// [`Device::written_by_running_kernel`](super::Device::written_by_running_kernel)
/// reads. Shared by every handle of a
/// device, so handles made for the same stream see each other's launches.
#[derive(Debug, Default)]
pub(super) struct LastWrites(std::sync::Mutex<std::collections::HashMap<u64, Vec<(u64, u64)>>>);

impl LastWrites {
    /// Records a launch that may write `writes`. They replace the stream's
    /// ranges, unless the launch is a programmatic dependent
    /// (`programmatic`) of a kernel that may trigger before its wait
    /// (`triggers_early`): then its predecessors may still run when its
    /// dependent starts, and their ranges stay.
    pub(super) fn record(&self, stream: u64, writes: Vec<(u64, u64)>, programmatic: bool, triggers_early: bool) {
        let mut streams = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let ranges = streams.entry(stream).or_default();
        if !(programmatic && triggers_early) {
            ranges.clear();
        }
        for range in writes {
            if !ranges.contains(&range) {
                ranges.push(range);
            }
        }
        // A long chain of such kernels on ever new buffers stays bounded:
        // past this many ranges, all memory counts as possibly written
        // until a kernel that waits first.
        if ranges.len() > MAX_RUNNING_RANGES {
            *ranges = vec![(0, u64::MAX)];
        }
    }

    pub(super) fn overlaps(&self, stream: u64, (start, end): (u64, u64)) -> bool {
        let streams = self.0.lock().unwrap_or_else(|p| p.into_inner());
        streams
            .get(&stream)
            .is_some_and(|writes| writes.iter().any(|&(s, e)| s < end && start < e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_kernels_writes_are_kept_while_kernels_trigger_early_and_stay_bounded() {
        let w = LastWrites::default();
        w.record(1, vec![(0, 16)], true, true);
        w.record(1, vec![(32, 48)], true, true);
        assert!(
            w.overlaps(1, (8, 9)) && w.overlaps(1, (40, 41)),
            "both kernels may still run"
        );
        assert!(!w.overlaps(2, (8, 9)), "another stream");
        w.record(1, vec![(64, 80)], true, false);
        assert!(
            !w.overlaps(1, (8, 9)) && w.overlaps(1, (70, 71)),
            "a kernel that waits first"
        );
        for i in 0..MAX_RUNNING_RANGES as u64 + 1 {
            w.record(1, vec![(1000 + 16 * i, 1008 + 16 * i)], true, true);
        }
        assert!(
            w.overlaps(1, (1 << 40, (1 << 40) + 1)),
            "past the bound, everything may be written"
        );
        w.record(1, vec![], true, false);
        assert!(!w.overlaps(1, (1000, 1001)));
        // One that triggers early but is launched after its predecessor is
        // complete (not as a programmatic dependent) leaves only its own.
        w.record(1, vec![(0, 16)], true, true);
        w.record(1, vec![(32, 48)], false, true);
        assert!(!w.overlaps(1, (8, 9)) && w.overlaps(1, (40, 41)));
    }
}
