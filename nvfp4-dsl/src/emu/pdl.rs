//! Programmatic dependent launch: a kernel launched as a dependent of the
//! one before it in the stream (it calls `griddepcontrol.wait`, so it is
//! launched with programmatic stream serialization) may start once every
//! block of its predecessor has executed `griddepcontrol.launch_dependents`
//! or exited, and only its thread's `griddepcontrol.wait` makes the
//! predecessor complete and its memory visible (PTX ISA, `griddepcontrol`).
//!
//! The emulator runs launches one after another, so it keeps what the
//! last launch of a stream read and wrote of global memory, a bit per
//! byte (its `Footprint`), and checks a dependent's global accesses made
//! by a thread not ordered after a `griddepcontrol.wait` (its own, or
//! another thread's through the race check's vector clocks) against it:
//! the same bytes, one of the two a write, is an error, unless the thread
//! acquired a flag that the last launch released after those accesses
//! (`gorder::PredOrder`, that launch's shadow of global memory). The
//! checked mode only. All of the
//! predecessor's accesses count, wherever its `launch_dependents` is: the
//! trigger only lets the dependent be scheduled and orders no memory.
//!
//! A dependent that may itself let its own dependent start before its
//! predecessor is complete (every block triggers, by `launch_dependents`
//! in a thread that has not waited or by exiting without any thread
//! having waited) passes its predecessor's footprint on with its own.
//! And a dependent none of whose threads waited may be complete before its
//! predecessor is: the launch after it may overlap that predecessor even
//! after its own wait, so that predecessor's footprint (its "unfinished"
//! one) is checked against every access of the launches after it, until
//! a launch that is not a programmatic dependent.

use super::gorder::PredOrder;
use std::sync::Arc;

/// A set of bytes of one allocation, a bit each.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bytes(Vec<u64>);

impl Bytes {
    /// Adds bytes `lo..hi` of an allocation of `len` bytes.
    #[inline]
    pub fn add(&mut self, len: usize, lo: usize, hi: usize) {
        if self.0.is_empty() {
            self.0.resize(len.div_ceil(64).max(1), 0);
        }
        for w in lo / 64..hi.div_ceil(64) {
            let a = lo.max(64 * w) - 64 * w;
            let b = hi.min(64 * w + 64) - 64 * w;
            self.0[w] |= (u64::MAX >> (64 - (b - a))) << a;
        }
    }

    /// The first of bytes `lo..hi` in the set.
    pub fn first(&self, lo: usize, hi: usize) -> Option<usize> {
        if self.0.is_empty() {
            return None;
        }
        (lo / 64..hi.div_ceil(64)).find_map(|w| {
            let a = lo.max(64 * w) - 64 * w;
            let b = hi.min(64 * w + 64) - 64 * w;
            let hit = self.0[w] & ((u64::MAX >> (64 - (b - a))) << a);
            (hit != 0).then(|| 64 * w + hit.trailing_zeros() as usize)
        })
    }

    fn union(&mut self, other: &Bytes) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// What a launch read and wrote of one allocation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Touched {
    pub read: Bytes,
    pub write: Bytes,
}

impl Touched {
    fn union(&mut self, other: &Touched) {
        self.read.union(&other.read);
        self.write.union(&other.write);
    }
}

/// The global memory that one or more launches read and wrote, by
/// allocation, and the kernels they ran.
#[derive(Clone, Debug, Default)]
pub(crate) struct Footprint {
    /// By allocation base, sorted.
    allocs: Vec<(u64, Touched)>,
    pub entries: Vec<String>,
}

impl Footprint {
    /// Nothing touched yet by kernel `entry`.
    pub fn new(entry: &str) -> Footprint {
        Footprint {
            allocs: Vec::new(),
            entries: vec![entry.to_string()],
        }
    }

    /// What allocation `base` was touched, if it was.
    pub fn of(&self, base: u64) -> Option<&Touched> {
        let k = self.allocs.binary_search_by_key(&base, |a| a.0).ok()?;
        Some(&self.allocs[k].1)
    }

    /// Adds what allocation `base` was touched.
    pub fn add(&mut self, base: u64, t: &Touched) {
        match self.allocs.binary_search_by_key(&base, |a| a.0) {
            Ok(k) => self.allocs[k].1.union(t),
            Err(k) => self.allocs.insert(k, (base, t.clone())),
        }
    }

    /// Adds everything `other` touched.
    pub fn union(&mut self, other: &Footprint) {
        for (base, t) in &other.allocs {
            self.add(*base, t);
        }
        for e in &other.entries {
            if !self.entries.contains(e) {
                self.entries.push(e.clone());
            }
        }
    }
}

/// What a stream's last launch leaves for a programmatic dependent launch
/// after it: the footprint of the launches that may still run before the
/// dependent's wait, and of those that may still run after it; and the
/// last launch's own happens-before over global memory, when it was
/// checked (`gorder`), through which a dependent's acquire of a flag that
/// launch released orders the acquiring thread after what the release
/// published.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overlap {
    pub before_wait: Footprint,
    pub unfinished: Option<Footprint>,
    pub order: Option<Arc<PredOrder>>,
}

/// What launches that may still run touched, by a view's allocation index
/// (shared by the view's copies), and their kernels, for messages.
#[derive(Clone, Debug, Default)]
pub(crate) struct Running {
    pub touched: Arc<Vec<Option<Touched>>>,
    pub entries: Arc<Vec<String>>,
}

impl Running {
    /// `f` by the allocations at `bases`.
    pub fn of(f: &Footprint, bases: impl Iterator<Item = u64>) -> Running {
        Running {
            touched: Arc::new(bases.map(|base| f.of(base).cloned()).collect()),
            entries: Arc::new(f.entries.clone()),
        }
    }

    /// Whether any launch may still run.
    #[inline]
    pub fn any(&self) -> bool {
        !self.entries.is_empty()
    }
}

/// A launch's side of the model, in each copy of its global memory's
/// view: what the launches that may still run touched (a programmatic
/// launch), and what this launch touched so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tracker {
    /// Accesses are recorded and checked (set by the launch: the checked
    /// mode; the fast mode has no vector clocks to tell which threads are
    /// ordered after a wait).
    pub on: bool,
    /// The predecessors, which may run until a thread's wait.
    pub before: Running,
    /// The launches that may still run after a thread's wait (checked for
    /// every access).
    pub unfinished: Running,
    /// This launch's accesses, by the view's allocation index.
    pub now: Vec<Touched>,
}

/// Whether a block may let its dependents start before its predecessor is
/// complete: a thread that has not waited executed `launch_dependents`,
/// or no thread waited at all (its exit triggers).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockTrigger {
    pub waited: bool,
    pub early: bool,
}

impl BlockTrigger {
    /// Whether the block triggered before any of its threads had waited.
    pub fn early(&self) -> bool {
        self.early || !self.waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sets_add_and_find_across_words() {
        let mut b = Bytes::default();
        assert_eq!(b.first(0, 100), None);
        b.add(200, 60, 70);
        assert_eq!(b.first(0, 60), None);
        assert_eq!(b.first(0, 61), Some(60));
        assert_eq!(b.first(65, 200), Some(65));
        assert_eq!(b.first(70, 200), None);
        b.add(200, 128, 192);
        assert_eq!(b.first(100, 200), Some(128));
        let mut f = Footprint::default();
        f.add(
            0x100,
            &Touched {
                read: Bytes::default(),
                write: b,
            },
        );
        let mut g = Footprint::default();
        let mut r = Bytes::default();
        r.add(8, 0, 4);
        g.add(
            0x100,
            &Touched {
                read: r,
                write: Bytes::default(),
            },
        );
        g.union(&f);
        let t = g.of(0x100).expect("touched");
        assert_eq!((t.read.first(0, 8), t.write.first(0, 200)), (Some(0), Some(60)));
        assert!(g.of(0x200).is_none());
    }
}
