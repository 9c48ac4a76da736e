//! mbarrier objects: the per-block state behind `mbarrier.*`, the
//! `complete_tx` of bulk copies and `tcgen05.commit`.
//!
//! An mbarrier lives at an 8-byte aligned shared address; the emulator
//! keeps its state beside shared memory (the 8 bytes themselves are not
//! written). A phase completes when its pending arrivals reach zero and
//! its transaction count is zero; then the phase number goes up by one and
//! the pending count is reset to the expected count. The transaction count
//! may go below zero while arrivals are pending (bytes may land before the
//! `expect_tx` that announces them, as the PTX ISA allows); once every
//! arrival is in, bytes beyond those expected are an error.
//!
//! For the race check each mbarrier collects the vector clocks of what
//! arrives in the current phase (threads, and the operations that complete
//! on it); a completed phase adds them to what a successful wait acquires.
//!
//! Two checks of the PTX ISA's rules for mbarriers live here too. A phase
//! overrun: `mbarrier.try_wait.parity` tells only the parity of the last
//! completed phase, so a thread whose barrier completed two phases since it
//! last saw one complete waits for the wrong phase (on the GPU it hangs);
//! each barrier keeps, per thread, the phase it was in at the thread's last
//! successful wait. And the initialisation fence: the
//! `fence.mbarrier_init` (or a stronger fence) that publishes the init to
//! the asynchronous proxy (see `ops::mbarrier::check_published`).

use super::race::join;

/// Most arrivals an mbarrier can expect, and the transaction-count limit
/// (`2^20 - 1`, as in the PTX ISA, in either direction).
pub(crate) const MBAR_MAX: u64 = (1 << 20) - 1;

/// One mbarrier.
#[derive(Clone, Debug)]
pub(crate) struct Mbar {
    /// Its shared-window address.
    pub addr: u32,
    /// The `mbarrier.init` that made it (instruction index).
    pub init_pc: u32,
    /// Arrivals expected per phase.
    pub count: u32,
    /// Arrivals still missing in the current phase.
    pub pending: u32,
    /// Transaction bytes still expected in the current phase (below zero:
    /// more bytes landed than were announced so far).
    pub tx: i64,
    /// The current phase (completed phases so far).
    pub phase: u32,
    /// The clocks of what arrived in the current phase.
    arrivals: Vec<u32>,
    /// The clocks of everything that arrived in completed phases.
    pub released: Vec<u32>,
    /// The thread (index in the cluster) that initialised it.
    pub init_thread: u32,
    /// The first fence that thread executed after the init which publishes
    /// it (`fence.mbarrier_init`, `fence.proxy.async`, a release fence of
    /// cluster scope or wider): its own clock entry then, and the fence's
    /// instruction.
    pub published: Option<(u32, u32)>,
    /// Per thread of the block (index in the block): the phase the
    /// barrier was in at the thread's last successful wait on it.
    seen: Vec<u32>,
}

/// What a lane blocked in `mbarrier.try_wait` waits for.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MbarWait {
    pub addr: u32,
    /// The parity (`.parity` form) or the phase of an arrive's state.
    pub want: u32,
    pub parity: bool,
}

impl Mbar {
    pub fn new(addr: u32, count: u32, init_pc: u32, init_thread: u32) -> Mbar {
        Mbar {
            addr,
            init_pc,
            count,
            pending: count,
            tx: 0,
            phase: 0,
            arrivals: Vec::new(),
            released: Vec::new(),
            init_thread,
            published: None,
            seen: Vec::new(),
        }
    }

    /// Thread `t` of the block waited successfully: it has seen the
    /// phases so far complete.
    pub fn observed(&mut self, t: usize) {
        if self.seen.len() <= t {
            self.seen.resize(t + 1, 0);
        }
        self.seen[t] = self.phase;
    }

    /// For a parity wait of thread `t` of the block that fails: the phase
    /// the barrier was in when the thread last saw a phase complete (0:
    /// never), if two or more phases completed since. The thread then
    /// waits for a phase of the parity of one it never saw complete: it
    /// meant that one (and on the GPU waits forever), or skipped phases
    /// it cannot know are over.
    pub fn overrun(&self, t: usize) -> Option<u32> {
        let seen = self.seen.get(t).copied().unwrap_or(0);
        (self.phase.wrapping_sub(seen) >= 2).then_some(seen)
    }

    /// Whether the phase a waiter names has completed: for a parity, the
    /// last completed phase has that parity, i.e. the current phase's
    /// parity differs (a fresh barrier reports parity 1 as complete); for a
    /// state, the phase it was taken in is over.
    pub fn done(&self, want: u32, parity: bool) -> bool {
        if parity {
            self.phase & 1 != want & 1
        } else {
            self.phase != want
        }
    }

    /// Whether it is between phases: nothing arrived or expected in the
    /// current one.
    pub fn idle(&self) -> bool {
        self.pending == self.count && self.tx == 0
    }

    fn describe(&self) -> String {
        format!(
            "mbarrier at shared address {:#x} (phase {}, {} of {} arrivals pending, {} transaction bytes pending)",
            self.addr, self.phase, self.pending, self.count, self.tx
        )
    }

    fn complete_if_due(&mut self) -> Result<bool, String> {
        if self.pending == 0 && self.tx < 0 {
            return Err(format!(
                "{} more transaction bytes than expected in phase {} of the {} (every arrival is in)",
                -self.tx,
                self.phase,
                self.describe()
            ));
        }
        if self.pending == 0 && self.tx == 0 {
            self.phase = self.phase.wrapping_add(1);
            self.pending = self.count;
            join(&mut self.released, &self.arrivals);
            self.arrivals.clear();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Adds what an arrival or a completing operation releases (its
    /// clock) to the current phase.
    pub fn collect(&mut self, clock: &[u32]) {
        join(&mut self.arrivals, clock);
    }

    /// `n` arrivals; true if that completed the phase.
    pub fn arrive(&mut self, n: u32) -> Result<bool, String> {
        if n > self.pending {
            return Err(format!(
                "{} arrivals on the {}: more than are pending",
                n,
                self.describe()
            ));
        }
        self.pending -= n;
        self.complete_if_due()
    }

    /// An arrival that also lowers the expected count of later phases.
    pub fn arrive_drop(&mut self) -> Result<bool, String> {
        if self.pending == 0 || self.count == 0 {
            return Err(format!("arrive_drop on the {}: no arrival is pending", self.describe()));
        }
        self.count -= 1;
        self.arrive(1)
    }

    /// Expects `bytes` more transaction bytes in the current phase.
    pub fn expect_tx(&mut self, bytes: u64) -> Result<(), String> {
        if self.tx + bytes as i64 > MBAR_MAX as i64 {
            return Err(format!(
                "expecting {bytes} more transaction bytes on the {} exceeds the limit of {MBAR_MAX}",
                self.describe()
            ));
        }
        self.tx += bytes as i64;
        Ok(())
    }

    /// `bytes` transaction bytes arrived; true if that completed the phase.
    pub fn complete_tx(&mut self, bytes: u64) -> Result<bool, String> {
        if self.tx - (bytes as i64) < -(MBAR_MAX as i64) {
            return Err(format!(
                "transaction-count underflow: {bytes} bytes completed on the {}, beyond the limit of {MBAR_MAX} unannounced bytes",
                self.describe()
            ));
        }
        self.tx -= bytes as i64;
        self.complete_if_due()
    }

    /// A description for errors.
    pub fn state(&self) -> String {
        self.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_parity_and_transaction_bytes() {
        let mut b = Mbar::new(0x400, 2, 0, 0);
        // A fresh barrier is in phase 0: "the phase of parity 1" (the one
        // before it) counts as complete, parity 0 does not.
        assert!(b.done(1, true) && !b.done(0, true));
        assert!(!b.arrive(1).unwrap());
        b.expect_tx(64).unwrap();
        assert!(!b.arrive(1).unwrap(), "64 bytes still pending");
        assert!(!b.complete_tx(48).unwrap());
        assert!(b.complete_tx(16).unwrap(), "last bytes complete the phase");
        assert_eq!((b.phase, b.pending, b.tx), (1, 2, 0));
        assert!(b.done(0, true) && !b.done(1, true));
        assert!(b.done(0, false) && !b.done(1, false));
        // Bytes may land before the arrivals.
        b.expect_tx(16).unwrap();
        assert!(!b.complete_tx(16).unwrap());
        assert!(!b.arrive(1).unwrap());
        assert!(b.arrive(1).unwrap());
        assert_eq!(b.phase, 2);
        // Bytes before their expect_tx are fine while arrivals are pending;
        // once they are all in, extra bytes are an error.
        assert!(!b.complete_tx(16).unwrap());
        b.expect_tx(16).unwrap();
        assert!(!b.arrive(1).unwrap());
        assert!(b.complete_tx(1).is_ok());
        assert!(
            b.arrive(1)
                .unwrap_err()
                .contains("1 more transaction bytes than expected")
        );
        let mut b = Mbar::new(0x400, 2, 0, 0);
        b.expect_tx(16).unwrap();
        assert!(!b.arrive(2).unwrap());
        assert!(b.complete_tx(1 << 21).unwrap_err().contains("underflow"));
        assert!(b.arrive(3).unwrap_err().contains("more than are pending"));
        assert!(b.expect_tx(MBAR_MAX + 1).unwrap_err().contains("limit"));
        assert!(b.complete_tx(16).unwrap());
        assert!(!b.arrive_drop().unwrap());
        assert!(b.arrive(1).unwrap());
        assert_eq!((b.count, b.pending, b.phase), (1, 1, 2));
    }

    #[test]
    fn a_wait_two_phases_behind_is_an_overrun() {
        let mut b = Mbar::new(0x400, 1, 0, 0);
        // Thread 3 never waited: phases since the init count.
        assert!(b.arrive(1).unwrap());
        assert_eq!(b.overrun(3), None);
        b.observed(3);
        assert!(b.arrive(1).unwrap());
        assert_eq!(b.overrun(3), None, "one phase since its last wait");
        assert!(b.arrive(1).unwrap());
        assert_eq!(b.overrun(3), Some(1), "phases 1 and 2 unseen");
        assert_eq!(b.overrun(0), Some(0));
        b.observed(3);
        assert_eq!(b.overrun(3), None);
    }
}
