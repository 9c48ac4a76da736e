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
//! Its misuses (`Misuse`) are worded by `Mbar::explain`, which names the
//! barrier's `mbarrier.init` or the phase's last `expect_tx` by their Rust
//! statements; for that each barrier keeps the current phase's announced
//! and landed transaction bytes.
//!
//! Two checks of the PTX ISA's rules for mbarriers live here too. A phase
//! overrun: `mbarrier.try_wait.parity` tells only the parity of the last
//! completed phase, so a thread whose barrier completed two phases since it
//! last saw one complete waits for the wrong phase (on the GPU it hangs);
//! each barrier keeps, per thread, the phase it was in at the thread's last
//! successful wait. And the initialisation fence: the
//! `fence.mbarrier_init` (or a stronger fence) that publishes the init to
//! the asynchronous proxy (see `ops::mbarrier::check_published`).

use super::diag::statement_of;
use super::inst::Fault;
use super::race::join;
use super::state::Env;

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
    /// The current phase's transaction bytes: announced (`expect_tx`) and
    /// landed (`complete_tx`), for messages.
    pub expected: u64,
    pub landed: u64,
    /// The current phase's `expect_tx` instructions: how many, and the
    /// last one.
    pub expects: u32,
    pub expect_pc: u32,
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
    /// The phase of the cluster barrier at which that thread arrived first
    /// after that fence: a thread of the cluster that has waited for it is
    /// ordered after the fence (a fence and a relaxed arrive publish the
    /// init as a release would; the clocks do not carry it).
    pub cluster_published: Option<u32>,
    /// Per thread of the block (index in the block): the phase the
    /// barrier was in at the thread's last successful wait on it.
    seen: Vec<u32>,
}

/// What an `expect_tx` counts, for messages about its count.
pub(crate) const IN_BYTES: &str = "the expected count is in bytes: the total size of the phase's copies (of a tensor copy, its whole box), not a count of copies or elements";

/// An mbarrier operation that the PTX ISA does not allow;
/// [`Mbar::explain`] words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Misuse {
    /// This many arrivals, more than are pending.
    Arrivals(u32),
    /// More transaction bytes than the phase expects, once every arrival
    /// is in.
    ExtraBytes,
    /// `arrive_drop` with no arrival pending.
    Drop,
    /// An `expect_tx` of this many bytes past the transaction-count limit.
    ExpectLimit(u64),
    /// A `complete_tx` of this many bytes past the limit of unannounced
    /// bytes.
    Underflow(u64),
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
            expected: 0,
            landed: 0,
            expects: 0,
            expect_pc: 0,
            arrivals: Vec::new(),
            released: Vec::new(),
            init_thread,
            published: None,
            cluster_published: None,
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

    fn complete_if_due(&mut self) -> Result<bool, Misuse> {
        if self.pending == 0 && self.tx < 0 {
            return Err(Misuse::ExtraBytes);
        }
        if self.pending == 0 && self.tx == 0 {
            self.phase = self.phase.wrapping_add(1);
            self.pending = self.count;
            (self.expected, self.landed, self.expects) = (0, 0, 0);
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
    pub fn arrive(&mut self, n: u32) -> Result<bool, Misuse> {
        if n > self.pending {
            return Err(Misuse::Arrivals(n));
        }
        self.pending -= n;
        self.complete_if_due()
    }

    /// An arrival that also lowers the expected count of later phases.
    pub fn arrive_drop(&mut self) -> Result<bool, Misuse> {
        if self.pending == 0 || self.count == 0 {
            return Err(Misuse::Drop);
        }
        self.count -= 1;
        self.arrive(1)
    }

    /// The `expect_tx` at instruction `pc` expects `bytes` more
    /// transaction bytes in the current phase.
    pub fn expect_tx(&mut self, bytes: u64, pc: u32) -> Result<(), Misuse> {
        if self.tx + bytes as i64 > MBAR_MAX as i64 {
            return Err(Misuse::ExpectLimit(bytes));
        }
        self.tx += bytes as i64;
        self.expected += bytes;
        self.expects += 1;
        self.expect_pc = pc;
        Ok(())
    }

    /// `bytes` transaction bytes arrived; true if that completed the phase.
    pub fn complete_tx(&mut self, bytes: u64) -> Result<bool, Misuse> {
        if self.tx - (bytes as i64) < -(MBAR_MAX as i64) {
            return Err(Misuse::Underflow(bytes));
        }
        self.tx -= bytes as i64;
        self.landed += bytes;
        self.complete_if_due()
    }

    /// A description for errors.
    pub fn state(&self) -> String {
        self.describe()
    }

    /// The current phase's transaction bytes, for messages: what the
    /// `expect_tx` (named by its Rust statement through `name`) announced,
    /// and what landed; the instruction to cite, if any.
    pub fn bytes_note(&self, name: &mut dyn FnMut(u32) -> String) -> (String, Option<u32>) {
        let (expected, landed, phase) = (self.expected, self.landed, self.phase);
        let note = match self.expects {
            0 => {
                return (
                    format!(
                        "no expect_tx announced bytes in phase {phase}, and {landed} landed (call mbarrier_arrive_expect_tx(bars, i, bytes) with the phase's bytes)"
                    ),
                    None,
                );
            }
            1 => format!("set by the expect_tx at {}", name(self.expect_pc)),
            k => format!("set by {k} expect_tx, the last at {}", name(self.expect_pc)),
        };
        (
            format!("phase {phase} expects {expected} transaction bytes ({note}), and {landed} landed"),
            Some(self.expect_pc),
        )
    }

    /// The error for `m`, which this barrier's last operation made; it
    /// names the instructions it cites by their Rust statements.
    #[cold]
    pub fn explain(&self, env: &Env<'_>, m: Misuse) -> Fault {
        let state = self.describe();
        match m {
            Misuse::Arrivals(n) => Fault::new(format!(
                "{n} arrivals on the {state}: more than are pending. This usually means an arrive for a phase that already completed: a slot refilled before its consumers released it (the producer did not wait for the slot's empty barrier), or an arrive on the wrong stage's barrier. The barrier was initialised at {} with a count of {} arrivals per phase",
                statement_of(env, self.init_pc),
                self.count
            ))
            .citing(self.init_pc),
            Misuse::ExtraBytes => {
                let (note, pc) = self.bytes_note(&mut |pc| statement_of(env, pc));
                let f = Fault::new(format!(
                    "{} more transaction bytes than expected in phase {} of the {state} (every arrival is in): {note}; {IN_BYTES}",
                    -self.tx, self.phase
                ));
                match pc {
                    Some(pc) => f.citing(pc),
                    None => f,
                }
            }
            Misuse::Drop => Fault::new(format!("arrive_drop on the {state}: no arrival is pending")),
            Misuse::ExpectLimit(bytes) => Fault::new(format!(
                "expecting {bytes} more transaction bytes on the {state} exceeds the limit of {MBAR_MAX}"
            )),
            Misuse::Underflow(bytes) => Fault::new(format!(
                "transaction-count underflow: {bytes} bytes completed on the {state}, beyond the limit of {MBAR_MAX} unannounced bytes"
            )),
        }
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
        b.expect_tx(64, 7).unwrap();
        assert!(!b.arrive(1).unwrap(), "64 bytes still pending");
        assert!(!b.complete_tx(48).unwrap());
        assert!(b.complete_tx(16).unwrap(), "last bytes complete the phase");
        assert_eq!((b.phase, b.pending, b.tx), (1, 2, 0));
        assert!(b.done(0, true) && !b.done(1, true));
        assert!(b.done(0, false) && !b.done(1, false));
        // Bytes may land before the arrivals.
        b.expect_tx(16, 7).unwrap();
        assert!(!b.complete_tx(16).unwrap());
        assert!(!b.arrive(1).unwrap());
        assert!(b.arrive(1).unwrap());
        assert_eq!(b.phase, 2);
        // Bytes before their expect_tx are fine while arrivals are pending;
        // once they are all in, extra bytes are an error.
        assert!(!b.complete_tx(16).unwrap());
        b.expect_tx(16, 9).unwrap();
        assert!(!b.arrive(1).unwrap());
        assert!(b.complete_tx(1).is_ok());
        assert_eq!(b.arrive(1), Err(Misuse::ExtraBytes));
        assert_eq!((b.expected, b.landed, b.expects, b.expect_pc), (16, 17, 1, 9));
        let mut b = Mbar::new(0x400, 2, 0, 0);
        b.expect_tx(16, 7).unwrap();
        assert!(!b.arrive(2).unwrap());
        assert_eq!(b.complete_tx(1 << 21), Err(Misuse::Underflow(1 << 21)));
        assert_eq!(b.arrive(3), Err(Misuse::Arrivals(3)));
        assert_eq!(b.expect_tx(MBAR_MAX + 1, 7), Err(Misuse::ExpectLimit(MBAR_MAX + 1)));
        assert!(b.complete_tx(16).unwrap());
        assert_eq!((b.expected, b.landed, b.expects), (0, 0, 0), "a new phase");
        assert!(!b.arrive_drop().unwrap());
        assert!(b.arrive(1).unwrap());
        assert_eq!((b.count, b.pending, b.phase), (1, 1, 2));
        b.expect_tx(16, 7).unwrap();
        assert!(!b.arrive(1).unwrap());
        assert_eq!(b.arrive_drop(), Err(Misuse::Drop), "the bytes are all that is pending");
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
