//! Tensor memory (sm_100): per block 128 lanes x 512 columns of 32-bit
//! cells, allocated in power-of-two column ranges by `tcgen05.alloc`.
//! Every cell has a written bit, so reads of cells never written (since
//! their allocation) are reported. The columns that `tcgen05` operations
//! in flight write or read (all 128 lanes of them) are kept, so that a
//! `tcgen05.ld`, `st` or `dealloc` that would meet one is reported.

use super::race::Access;

/// Lanes (rows) of tensor memory.
pub(crate) const LANES: u32 = 128;
/// Columns of tensor memory.
pub(crate) const COLS: u32 = 512;

/// One live allocation and where it was made (for "not freed" errors).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TAlloc {
    pub col: u32,
    pub ncols: u32,
    pub thread: (u32, u32, u32),
    pub pc: u32,
}

/// Columns an operation in flight writes or reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TBusy {
    /// The operation (`AsyncOp::id`), its instruction and issuing thread.
    pub id: u64,
    pub pc: u32,
    pub thread: (u32, u32, u32),
    pub col: u32,
    pub ncols: u32,
    pub write: bool,
}

/// A block's tensor memory.
///
/// For the race check, every column of every lane quarter keeps its last
/// write (`tcgen05.st` by a thread, `tcgen05.mma`/`cp` by the block's
/// asynchronous unit when they complete): a `tcgen05.ld`, `st` or
/// `dealloc` must happen after it (for an MMA: wait on the mbarrier of the
/// `tcgen05.commit` after it).
#[derive(Debug)]
pub(crate) struct Tmem {
    data: Vec<u32>,
    written: Vec<u64>,
    /// Allocated columns, one bit each.
    used: [u64; COLS as usize / 64],
    pub allocs: Vec<TAlloc>,
    pub relinquished: bool,
    /// Columns of operations in flight.
    pub busy: Vec<TBusy>,
    /// The last write of each column of each lane quarter
    /// (`quarter * COLS + column`).
    writes: Vec<Access>,
}

#[inline]
fn cell(lane: u32, col: u32) -> usize {
    (lane * COLS + col) as usize
}

/// The words of `Tmem::written` that cells `start..start + n` fall in,
/// each with the bits of those cells.
fn written_words(start: usize, n: usize) -> impl Iterator<Item = (usize, u64)> {
    let end = start + n;
    (start / 64..end.div_ceil(64)).map(move |w| {
        let (lo, hi) = (start.max(64 * w) - 64 * w, end.min(64 * w + 64) - 64 * w);
        let ones = if hi - lo == 64 { u64::MAX } else { (1 << (hi - lo)) - 1 };
        (w, ones << lo)
    })
}

impl Tmem {
    pub fn new() -> Tmem {
        Tmem {
            data: vec![0; (LANES * COLS) as usize],
            written: vec![0; (LANES * COLS) as usize / 64],
            used: [0; COLS as usize / 64],
            allocs: Vec::new(),
            relinquished: false,
            busy: Vec::new(),
            writes: vec![Access::default(); 4 * COLS as usize],
        }
    }

    /// A fresh block's state: nothing allocated or written.
    pub fn reset(&mut self) {
        self.written.fill(0);
        self.used = [0; COLS as usize / 64];
        self.allocs.clear();
        self.relinquished = false;
        self.busy.clear();
        self.writes.fill(Access::default());
    }

    /// Records write `a` of columns `col..col + n` of the lane quarters
    /// `quarters` (one bit each).
    pub fn record(&mut self, quarters: u32, col: u32, n: u32, a: Access) {
        for q in 0..4 {
            if quarters >> q & 1 != 0 {
                let at = (q * COLS + col) as usize;
                self.writes[at..at + n as usize].fill(a);
            }
        }
    }

    /// The first write of columns `col..col + n` of lane quarter `q` that
    /// `racing` says an access may not follow.
    pub fn unordered(&self, q: u32, col: u32, n: u32, racing: impl Fn(&Access) -> bool) -> Option<Access> {
        let at = (q * COLS + col) as usize;
        self.writes[at..at + n as usize]
            .iter()
            .copied()
            .find(|a| a.some() && racing(a))
    }

    /// Operation `id` completed: its columns are free.
    pub fn finish(&mut self, id: u64) {
        self.busy.retain(|b| b.id != id);
    }

    /// The first operation in flight that writes columns `col..col + n`
    /// (or, with `reads`, that touches them at all).
    pub fn busy_at(&self, col: u32, n: u32, reads: bool) -> Option<&TBusy> {
        self.busy
            .iter()
            .find(|b| (b.write || reads) && b.col < col + n && col < b.col + b.ncols)
    }

    fn is_used(&self, col: u32) -> bool {
        self.used[(col / 64) as usize] >> (col % 64) & 1 != 0
    }

    fn set_used(&mut self, col: u32, ncols: u32, on: bool) {
        for c in col..col + ncols {
            let (w, b) = ((c / 64) as usize, c % 64);
            if on {
                self.used[w] |= 1 << b;
            } else {
                self.used[w] &= !(1 << b);
            }
        }
    }

    fn describe_allocs(&self) -> String {
        if self.allocs.is_empty() {
            return "none".into();
        }
        self.allocs
            .iter()
            .map(|a| format!("columns {}..{}", a.col, a.col + a.ncols))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Allocates `ncols` contiguous columns (first fit, in steps of 32).
    pub fn alloc(&mut self, ncols: u32, thread: (u32, u32, u32), pc: u32) -> Result<u32, String> {
        if !(32..=COLS).contains(&ncols) || !ncols.is_power_of_two() {
            return Err(format!(
                "tcgen05.alloc of {ncols} columns: the count must be a power of two in 32..=512"
            ));
        }
        if self.relinquished {
            return Err(
                "tcgen05.alloc after this block relinquished its allocation permit (tcgen05.relinquish_alloc_permit)"
                    .into(),
            );
        }
        let mut col = 0;
        while col + ncols <= COLS {
            if (col..col + ncols).all(|c| !self.is_used(c)) {
                self.set_used(col, ncols, true);
                for q in 0..4 {
                    let at = (q * COLS + col) as usize;
                    self.writes[at..at + ncols as usize].fill(Access::default());
                }
                for lane in 0..LANES {
                    let c = cell(lane, col) as u32;
                    for x in c..c + ncols {
                        self.written[(x / 64) as usize] &= !(1 << (x % 64));
                    }
                }
                self.allocs.push(TAlloc { col, ncols, thread, pc });
                return Ok(col);
            }
            col += 32;
        }
        Err(format!(
            "tcgen05.alloc of {ncols} columns cannot be satisfied: no {ncols} free contiguous columns of 512 (allocated: {}); on a GPU this would wait forever",
            self.describe_allocs()
        ))
    }

    /// Frees the allocation that starts at `col` and has `ncols` columns.
    pub fn dealloc(&mut self, lane: u32, col: u32, ncols: u32) -> Result<(), String> {
        if lane != 0 {
            return Err(format!(
                "tcgen05.dealloc address has lane {lane}; it must be an allocation's address (lane 0)"
            ));
        }
        match self.allocs.iter().position(|a| a.col == col && a.ncols == ncols) {
            Some(k) => {
                self.allocs.remove(k);
                self.set_used(col, ncols, false);
                Ok(())
            }
            None => Err(format!(
                "tcgen05.dealloc of {ncols} columns at column {col} does not match an allocation of this block (allocated: {})",
                self.describe_allocs()
            )),
        }
    }

    /// Checks that lanes `lane..lane + lanes` x columns `col..col + n` are
    /// inside this block's allocations.
    pub fn check(&self, lane: u32, lanes: u32, col: u32, n: u32, what: &str) -> Result<(), String> {
        let bad_lane = lane + lanes > LANES;
        let bad_col = col + n > COLS || (col..col + n).any(|c| !self.is_used(c));
        if bad_lane || bad_col {
            return Err(format!(
                "{what}: tensor memory lanes {lane}..{} x columns {col}..{} are outside this block's allocation (allocated: {})",
                lane + lanes,
                col + n,
                self.describe_allocs()
            ));
        }
        Ok(())
    }

    /// The cell's value, or `None` if it was never written.
    #[inline]
    pub fn get(&self, lane: u32, col: u32) -> Option<u32> {
        let c = cell(lane, col);
        (self.written[c / 64] >> (c % 64) & 1 != 0).then(|| self.data[c])
    }

    /// The first column of `col..col + n` in `lane` never written.
    pub fn first_unwritten(&self, lane: u32, col: u32, n: u32) -> Option<u32> {
        let start = cell(lane, col);
        written_words(start, n as usize).find_map(|(w, mask)| {
            let missing = !self.written[w] & mask;
            (missing != 0).then(|| col + (64 * w + missing.trailing_zeros() as usize - start) as u32)
        })
    }

    /// Cells `col..col + n` of `lane`, which count as written from now on.
    pub fn row_mut(&mut self, lane: u32, col: u32, n: u32) -> &mut [u32] {
        let start = cell(lane, col);
        for (w, mask) in written_words(start, n as usize) {
            self.written[w] |= mask;
        }
        &mut self.data[start..start + n as usize]
    }

    #[inline]
    pub fn set(&mut self, lane: u32, col: u32, v: u32) {
        let c = cell(lane, col);
        self.data[c] = v;
        self.written[c / 64] |= 1 << (c % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_first_fit_bounds_and_written_bits() {
        let mut t = Tmem::new();
        let th = (0, 0, 0);
        assert_eq!(t.alloc(64, th, 0).unwrap(), 0);
        assert_eq!(t.alloc(256, th, 0).unwrap(), 64);
        assert_eq!(t.alloc(32, th, 0).unwrap(), 320);
        assert!(t.alloc(256, th, 0).unwrap_err().contains("cannot be satisfied"));
        assert!(t.alloc(48, th, 0).unwrap_err().contains("power of two"));
        t.check(0, 128, 0, 352, "x").unwrap();
        assert!(t.check(0, 128, 350, 8, "x").unwrap_err().contains("outside"));
        assert!(t.check(100, 32, 0, 1, "x").is_err());
        assert_eq!(t.get(5, 3), None);
        t.set(5, 3, 7);
        assert_eq!(t.get(5, 3), Some(7));
        assert_eq!(t.first_unwritten(5, 2, 4), Some(2));
        t.row_mut(5, 0, 3).copy_from_slice(&[1, 2, 3]);
        assert_eq!(t.first_unwritten(5, 0, 4), None);
        assert_eq!((t.get(5, 0), t.get(5, 2), t.get(5, 3)), (Some(1), Some(3), Some(7)));
        t.dealloc(0, 0, 64).unwrap();
        assert!(t.dealloc(0, 0, 64).is_err());
        assert!(t.dealloc(0, 64, 64).is_err(), "not the allocation's size");
        assert!(t.dealloc(1, 64, 256).is_err(), "not lane 0");
        assert_eq!(t.alloc(32, th, 0).unwrap(), 0);
        assert_eq!(t.get(5, 3), None, "a new allocation starts unwritten");
        t.relinquished = true;
        assert!(t.alloc(32, th, 0).unwrap_err().contains("relinquish"));
        t.reset();
        assert!(t.allocs.is_empty());
        assert_eq!(t.alloc(512, th, 0).unwrap(), 0);
    }
}
