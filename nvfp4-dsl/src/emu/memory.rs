//! Global memory: host-backed allocations at fake device addresses.

use super::error::EmuError;
use super::gorder::GlobalOrder;
use super::pdl::{Overlap, Running, Touched, Tracker};

/// The first device address handed out.
const BASE: u64 = 0x7f00_0000_0000;
/// Addresses are aligned like `cudaMalloc`'s.
const ALIGN: u64 = 256;
/// Unmapped bytes between two allocations, so an overrun never lands in
/// the next one.
const GAP: u64 = 4096;
/// Global memory ends below the generic window of shared memory.
pub(crate) const LIMIT: u64 = super::layout::SHARED_WINDOW;

#[derive(Debug)]
struct Alloc {
    base: u64,
    len: u64,
    writable: bool,
    live: bool,
    data: Vec<u8>,
}

/// Global memory for emulated kernels: allocations at fake device
/// addresses (nonzero, 256-byte aligned, with unmapped gaps between them so
/// that out-of-bounds accesses are detected). Addresses are never reused,
/// so a use after [`free`](Memory::free) is detected too.
#[derive(Debug, Default)]
pub struct Memory {
    /// Sorted by `base` (addresses only grow).
    allocs: Vec<Alloc>,
    next: u64,
    /// The views of the next launch (see [`set_views`](Memory::set_views)).
    views: Vec<(u64, u64)>,
    /// What the launches the next launch may overlap touched (it is a
    /// programmatic dependent launch): see `pdl`.
    pub(crate) predecessor: Option<Overlap>,
    /// What the last launch touched (with what it may let its dependent
    /// overlap), for the launch after it.
    pub(crate) footprint: Option<Overlap>,
}

/// Why a kernel's access failed (turned into an [`EmuError`] by the caller).
pub(crate) enum Fault {
    Unmapped,
    Freed { base: u64, len: u64 },
    OutOfBounds { base: u64, len: u64 },
    ReadOnly { base: u64, len: u64 },
}

impl Fault {
    pub(crate) fn describe(&self, what: &str, addr: u64, size: usize) -> String {
        match self {
            Fault::Unmapped => format!("{what} of {size} bytes at {addr:#x} is out of bounds: no allocation there"),
            Fault::Freed { base, len } => {
                format!("{what} of {size} bytes at {addr:#x} is in a freed allocation ({base:#x}, {len} bytes)")
            }
            Fault::OutOfBounds { base, len } => format!(
                "{what} of {size} bytes at {addr:#x} is out of bounds of the allocation at {base:#x} ({len} bytes, offset {})",
                addr.wrapping_sub(*base) as i64
            ),
            Fault::ReadOnly { base, len } => {
                format!("{what} of {size} bytes at {addr:#x} writes to a read-only allocation ({base:#x}, {len} bytes)")
            }
        }
    }
}

impl Memory {
    /// Empty memory.
    pub fn new() -> Memory {
        Memory {
            allocs: Vec::new(),
            next: BASE,
            views: Vec::new(),
            predecessor: None,
            footprint: None,
        }
    }

    /// Allocates `bytes` zeroed bytes and returns their device address.
    /// Kernels may store to the allocation only if `writable`; the host may
    /// always [`write`](Memory::write) it.
    ///
    /// # Panics
    ///
    /// If the fake address space (about 2^43 bytes) is exhausted.
    pub fn alloc(&mut self, bytes: usize, writable: bool) -> u64 {
        if self.next == 0 {
            self.next = BASE;
        }
        let base = self.next;
        let end = base
            .checked_add(bytes as u64)
            .and_then(|e| e.checked_add(GAP + ALIGN - 1))
            .expect("emulated address space exhausted");
        assert!(end < LIMIT, "emulated address space exhausted");
        self.next = end & !(ALIGN - 1);
        self.allocs.push(Alloc {
            base,
            len: bytes as u64,
            writable,
            live: true,
            data: vec![0; bytes],
        });
        base
    }

    /// Copies `data` to `addr` (host access: read-only allocations may be
    /// written). The range must lie inside one live allocation.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        let i = self
            .find(addr, data.len() as u64)
            .map_err(|f| EmuError::new(f.describe("host write", addr, data.len())))?;
        let a = &mut self.allocs[i];
        let off = (addr - a.base) as usize;
        a.data[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// The `len` bytes at `addr`, which must lie inside one live allocation.
    pub fn read(&self, addr: u64, len: usize) -> Result<&[u8], EmuError> {
        let i = self
            .find(addr, len as u64)
            .map_err(|f| EmuError::new(f.describe("host read", addr, len)))?;
        let a = &self.allocs[i];
        let off = (addr - a.base) as usize;
        Ok(&a.data[off..off + len])
    }

    /// Frees the allocation that starts at `addr`; its addresses stay
    /// invalid. Freeing an unknown or already freed address does nothing.
    pub fn free(&mut self, addr: u64) {
        if let Ok(i) = self.allocs.binary_search_by_key(&addr, |a| a.base) {
            let a = &mut self.allocs[i];
            a.live = false;
            a.data = Vec::new();
        }
    }

    /// The views (`[start, end)`) a launch's slice parameters point at:
    /// an access through an address computed from a parameter that holds
    /// a view's start must stay inside that view, not only inside its
    /// allocation. The launcher sets them before a launch and clears them
    /// (an empty list) after.
    pub fn set_views(&mut self, views: Vec<(u64, u64)>) {
        self.views = views;
    }

    /// Lets kernels store to the allocation that starts at `addr`, or makes
    /// it read-only for them (host writes are always allowed). Fails if no
    /// live allocation starts at `addr`.
    pub fn set_writable(&mut self, addr: u64, writable: bool) -> Result<(), EmuError> {
        match self.allocs.binary_search_by_key(&addr, |a| a.base) {
            Ok(i) if self.allocs[i].live => {
                self.allocs[i].writable = writable;
                Ok(())
            }
            Ok(i) => Err(EmuError::new(format!(
                "set_writable: the allocation at {addr:#x} ({} bytes) was freed",
                self.allocs[i].len
            ))),
            Err(_) => Err(EmuError::new(format!(
                "set_writable: no allocation starts at {addr:#x}"
            ))),
        }
    }

    /// The index of the live allocation holding `[addr, addr + len)`.
    fn find(&self, addr: u64, len: u64) -> Result<usize, Fault> {
        let i = index_of(&self.allocs, |a| a.base, addr)?;
        let a = &self.allocs[i];
        check(a.base, a.len, a.live, addr, len).map(|()| i)
    }

    /// What a launch's kernels see of this memory: every allocation, by
    /// address. The launch that takes it holds `&mut self` while copies
    /// of it run its blocks, and drops them before it returns.
    pub(crate) fn view(&mut self) -> View {
        let pdl = match &self.predecessor {
            Some(o) => {
                let running = |f| Running::of(f, self.allocs.iter().map(|a| a.base));
                Tracker {
                    before: running(&o.before_wait),
                    unfinished: o.unfinished.as_ref().map(running).unwrap_or_default(),
                    ..Tracker::default()
                }
            }
            None => Tracker::default(),
        };
        View {
            spans: self
                .allocs
                .iter_mut()
                .map(|a| Span {
                    base: a.base,
                    len: a.len,
                    writable: a.writable,
                    live: a.live,
                    ptr: a.data.as_mut_ptr(),
                })
                .collect(),
            views: self.views.clone(),
            pdl,
            order: GlobalOrder::default(),
        }
    }

    /// The base of allocation `i` of a [`View`] of this memory.
    pub(crate) fn base_of(&self, i: usize) -> u64 {
        self.allocs[i].base
    }
}

/// The index of the entry whose `base` is the last at or below `addr`.
fn index_of<T>(items: &[T], base: impl Fn(&T) -> u64, addr: u64) -> Result<usize, Fault> {
    match items.binary_search_by_key(&addr, base) {
        Ok(i) => Ok(i),
        Err(0) => Err(Fault::Unmapped),
        Err(i) => Ok(i - 1),
    }
}

/// Checks `[addr, addr + n)` against the allocation `[base, base + len)`.
#[inline]
fn check(base: u64, len: u64, live: bool, addr: u64, n: u64) -> Result<(), Fault> {
    let off = addr.wrapping_sub(base);
    if off >= len + GAP / 2 {
        // Far past this allocation's end: not near any allocation.
        return Err(Fault::Unmapped);
    }
    if !live {
        return Err(Fault::Freed { base, len });
    }
    if off > len || len - off < n {
        return Err(Fault::OutOfBounds { base, len });
    }
    Ok(())
}

/// One allocation as a launch sees it.
#[derive(Clone, Copy, Debug)]
struct Span {
    base: u64,
    len: u64,
    writable: bool,
    live: bool,
    /// The allocation's bytes (`len` of them), owned by the `Memory`.
    ptr: *mut u8,
}

/// An access of bytes that a launch which may still run touched: the
/// first common byte, whether that launch wrote it (or read it), and
/// whether it may still run after the thread's wait (`unfinished`) or
/// only before it.
pub(crate) struct PdlConflict {
    pub at: u64,
    pub wrote: bool,
    pub unfinished: bool,
}

/// Global memory as the kernels of one launch see it (a
/// [`Memory::view`]). Each thread that runs blocks has its own copy.
#[derive(Clone, Debug)]
pub(crate) struct View {
    spans: Vec<Span>,
    /// The launch's views of its slice parameters
    /// ([`Memory::set_views`]).
    views: Vec<(u64, u64)>,
    /// Programmatic dependent launch: what the predecessors touched and
    /// what this copy's blocks touch.
    pub(crate) pdl: Tracker,
    /// The launch's global-memory race check (`gorder`; off unless it
    /// is on for this launch).
    pub(crate) order: GlobalOrder,
}

// SAFETY: a view only reaches the bytes of the `Memory` that the launch
// holds mutably while the view exists; the launch hands copies to the
// threads that run its blocks, which access them as the kernel's blocks
// do (see `bytes`).
unsafe impl Send for View {}

impl View {
    /// The view that starts at `start`, of this launch (the longest, when
    /// two parameters' views start there).
    pub(crate) fn view_at(&self, start: u64) -> Option<(u64, u64)> {
        self.views
            .iter()
            .copied()
            .filter(|&(s, _)| s == start)
            .max_by_key(|&(_, e)| e)
    }

    /// Records an access of `len` bytes at `addr` of allocation `i`
    /// (located), and finds the access it conflicts with of a launch that
    /// may still run after this thread's wait, or of the predecessors if
    /// `check`.
    #[inline]
    pub(crate) fn touch(&mut self, i: usize, addr: u64, len: usize, write: bool, check: bool) -> Option<PdlConflict> {
        if !self.pdl.on {
            return None;
        }
        let a = &self.spans[i];
        let (size, lo) = (a.len as usize, (addr - a.base) as usize);
        let hi = lo + len;
        if self.pdl.now.len() <= i {
            self.pdl.now.resize_with(self.spans.len(), Default::default);
        }
        let now = &mut self.pdl.now[i];
        if write {
            now.write.add(size, lo, hi);
        } else {
            now.read.add(size, lo, hi);
        }
        let conflict = |touched: &Touched, unfinished: bool| {
            let at = |o: usize, wrote: bool| PdlConflict {
                at: a.base + o as u64,
                wrote,
                unfinished,
            };
            if let Some(o) = touched.write.first(lo, hi) {
                return Some(at(o, true));
            }
            if write && let Some(o) = touched.read.first(lo, hi) {
                return Some(at(o, false));
            }
            None
        };
        if let Some(Some(t)) = self.pdl.unfinished.touched.get(i)
            && let Some(c) = conflict(t, true)
        {
            return Some(c);
        }
        if !check {
            return None;
        }
        conflict(self.pdl.before.touched.get(i)?.as_ref()?, false)
    }

    /// Whether thread `t`'s access of `len` bytes at `addr` of allocation
    /// `i` is ordered after every access of the launch before it that it
    /// conflicts with, through a flag that launch released and this
    /// thread acquired (`gorder`): what a conflict with the predecessor's
    /// footprint needs where the thread has not waited for it.
    pub(crate) fn predecessor_acquired(&self, i: usize, addr: u64, len: usize, write: bool, t: u32) -> bool {
        let Some(Some(touched)) = self.pdl.before.touched.get(i) else {
            return false;
        };
        let base = self.spans[i].base;
        let end = addr + len as u64;
        (addr / 4..end.div_ceil(4)).all(|w| {
            let (lo, hi) = ((4 * w).max(addr) - base, (4 * w + 4).min(end) - base);
            let (lo, hi) = (lo as usize, hi as usize);
            let over_read = write && touched.read.first(lo, hi).is_some();
            let conflicts = over_read || touched.write.first(lo, hi).is_some();
            !conflicts || self.order.predecessor_covers(t, w, over_read)
        })
    }

    /// Finds the allocation for a kernel access, trying `hint` first.
    #[inline]
    pub(crate) fn locate(&self, addr: u64, len: u64, hint: &mut usize) -> Result<usize, Fault> {
        if let Some(a) = self.spans.get(*hint) {
            let off = addr.wrapping_sub(a.base);
            if a.live && off <= a.len && a.len - off >= len {
                return Ok(*hint);
            }
        }
        let i = index_of(&self.spans, |a| a.base, addr)?;
        let a = &self.spans[i];
        check(a.base, a.len, a.live, addr, len)?;
        *hint = i;
        Ok(i)
    }

    /// Bytes of a located access.
    #[inline]
    pub(crate) fn bytes(&self, i: usize, addr: u64, len: usize) -> &[u8] {
        let a = &self.spans[i];
        let off = (addr - a.base) as usize;
        debug_assert!(off + len <= a.len as usize, "a located access");
        // SAFETY: `locate` put `[off, off + len)` inside the allocation,
        // whose buffer lives as long as the view (`Memory::view`). Blocks
        // that run in parallel are those of kernels without atomics or
        // other inter-block communication in global memory (`run.rs`), so
        // they share bytes only where the kernel races between blocks.
        unsafe { std::slice::from_raw_parts(a.ptr.add(off), len) }
    }

    /// Writable bytes of a located access (checks the allocation's flag).
    #[inline]
    pub(crate) fn bytes_mut(&mut self, i: usize, addr: u64, len: usize) -> Result<&mut [u8], Fault> {
        let a = &self.spans[i];
        if !a.writable {
            return Err(Fault::ReadOnly {
                base: a.base,
                len: a.len,
            });
        }
        let off = (addr - a.base) as usize;
        debug_assert!(off + len <= a.len as usize, "a located access");
        // SAFETY: as for `bytes`.
        Ok(unsafe { std::slice::from_raw_parts_mut(a.ptr.add(off), len) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_checked() {
        let mut m = Memory::new();
        let a = m.alloc(10, true);
        let b = m.alloc(0, false);
        let c = m.alloc(300, false);
        assert!(a != 0 && a.is_multiple_of(256) && b.is_multiple_of(256) && c.is_multiple_of(256));
        assert!(b >= a + 10 + GAP && c >= b + GAP);
        m.write(a, &[1, 2, 3]).unwrap();
        assert_eq!(m.read(a, 3).unwrap(), &[1, 2, 3]);
        assert!(m.read(a + 8, 4).is_err());
        assert!(m.read(b, 1).is_err());
        assert!(m.read(b, 0).is_ok());
        m.write(c + 296, &[9; 4]).unwrap();
        assert!(m.write(c + 297, &[9; 4]).is_err());
        assert!(m.read(a - 4, 1).unwrap_err().message().contains("no allocation"));
        m.free(a);
        assert!(m.read(a, 1).unwrap_err().message().contains("freed"));
        m.free(a);
        m.free(12345);
        // Writability can change per launch; only allocation starts count.
        m.set_writable(c, true).unwrap();
        assert!(m.allocs[2].writable);
        m.set_writable(c, false).unwrap();
        assert!(!m.allocs[2].writable);
        assert!(
            m.set_writable(c + 1, true)
                .unwrap_err()
                .message()
                .contains("no allocation starts")
        );
        assert!(m.set_writable(a, true).unwrap_err().message().contains("freed"));
    }
}
