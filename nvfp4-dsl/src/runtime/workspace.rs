//! Workspaces: scratch memory that library calls keep per stream from one
//! call to the next, and the graph captures whose calls keep theirs.

use super::{Device, DeviceBuffer, Error, Result};

impl Device {
    /// Runs `f` with workspace buffers of at least `bytes[i]` bytes each
    /// (contents unspecified, like [`alloc_scratch`](Self::alloc_scratch)'s)
    /// that stay allocated for the next call with the same `key` on this
    /// stream: a library call that launches several kernels per call need not
    /// allocate and free its scratch memory each time (about 1.2 µs of host
    /// time per buffer on an H100 host). Reuse is ordered by the stream: the
    /// kernels of one call must not touch the workspace before the previous
    /// call's kernels are done with it (a kernel that waits for its
    /// predecessor first, or a launch without programmatic serialization,
    /// ensures that). A call on another stream, or one made while another
    /// thread holds this stream's buffers, gets buffers of its own. Under
    /// [`capture_graph`](Self::capture_graph) the buffers belong to the
    /// capture: allocated by its first call that needs them, kept for its
    /// later calls, freed at its end, so the graph owns them. Under a
    /// capture begun otherwise (cudarc's `begin_capture`) they are allocated
    /// and freed in stream order for this call only, so a graph never
    /// refers to memory that a later call could free, but each captured
    /// call then starts only once the one before it is complete. The kept
    /// memory is freed by [`free_workspaces`](Self::free_workspaces) or when
    /// the last handle of the device is dropped.
    pub fn with_workspace<R>(
        &self,
        key: &'static str,
        bytes: &[usize],
        f: impl FnOnce(&mut [DeviceBuffer<u8>]) -> Result<R>,
    ) -> Result<R> {
        let captured = self.capturing()?;
        if captured && !self.workspaces().in_capture_scope(self.stream_id()) {
            let mut fresh = bytes
                .iter()
                .map(|&b| self.alloc_scratch::<u8>(b))
                .collect::<Result<Vec<_>>>()?;
            return f(&mut fresh);
        }
        let slot = (self.stream_id(), key, captured);
        let mut kept = self.workspaces().take(slot);
        kept.truncate(bytes.len());
        for (i, &b) in bytes.iter().enumerate() {
            match kept.get_mut(i) {
                Some(buf) if buf.len() >= b => {}
                Some(buf) => *buf = self.alloc_scratch(b)?,
                None => kept.push(self.alloc_scratch(b)?),
            }
        }
        let result = f(&mut kept);
        self.workspaces().put(slot, kept);
        result
    }

    /// Captures what `record` launches on this handle's stream into a CUDA
    /// graph, to be replayed with `launch()`. Library calls in it keep their
    /// workspaces from one call to the next as they do on a stream, so
    /// that consecutive calls overlap in the graph as they do there (a
    /// capture begun with cudarc's `begin_capture` gets a workspace per call,
    /// freed after it: each call then starts only once the one before is
    /// complete); the graph allocates them and frees them at its end.
    /// `record` returns the caller's error type (any that converts from this
    /// crate's). `Err` on the emulator (it has no graphs), when the stream
    /// is being captured already, when `record` fails (its error; the
    /// capture is discarded), or when it launched nothing.
    pub fn capture_graph<E: From<Error>>(
        &self,
        record: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<cudarc::driver::CudaGraph, E> {
        let Device::Cuda(cuda) = self else {
            return Err(
                Error::InvalidLaunch("the emulator has no CUDA graphs: capture on a CUDA device".into()).into(),
            );
        };
        cuda.begin_capture()?;
        let stream = self.stream_id();
        self.workspaces().open_capture_scope(stream);
        let recorded = record();
        // Freed while the capture is under way: the graph frees them after
        // its last node.
        drop(self.workspaces().close_capture_scope(stream));
        let graph = cuda.end_capture();
        recorded?;
        Ok(graph?.ok_or_else(|| Error::InvalidLaunch("the graph capture launched nothing".into()))?)
    }

    /// Frees the workspace memory that [`with_workspace`](Self::with_workspace)
    /// keeps for this stream (in stream order: kernels already launched
    /// that use it finish first).
    pub fn free_workspaces(&self) {
        self.workspaces().free_stream(self.stream_id());
    }
}

/// The buffers [`Device::with_workspace`] keeps, by stream and key, and
/// the streams under [`Device::capture_graph`]. Shared by every handle of a
/// device.
#[derive(Debug, Default)]
pub(super) struct Workspaces(std::sync::Mutex<KeptBuffers>);

/// Where a call's workspace is kept: its stream, its key, and whether it
/// belongs to a graph under [`Device::capture_graph`].
type Slot = (u64, &'static str, bool);

#[derive(Debug, Default)]
struct KeptBuffers {
    buffers: std::collections::HashMap<Slot, Vec<DeviceBuffer<u8>>>,
    /// The streams under [`Device::capture_graph`].
    capture_scopes: std::collections::HashSet<u64>,
}

impl Workspaces {
    fn lock(&self) -> std::sync::MutexGuard<'_, KeptBuffers> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The buffers kept for `slot` (none if another call holds them).
    fn take(&self, slot: Slot) -> Vec<DeviceBuffer<u8>> {
        self.lock().buffers.remove(&slot).unwrap_or_default()
    }

    /// Keeps `buffers` for `slot`; those of a concurrent call that returned
    /// first are freed.
    fn put(&self, slot: Slot, buffers: Vec<DeviceBuffer<u8>>) {
        let replaced = self.lock().buffers.insert(slot, buffers);
        drop(replaced);
    }

    /// Frees the buffers kept for `stream` outside a capture.
    fn free_stream(&self, stream: u64) {
        let freed: Vec<_> = {
            let mut kept = self.lock();
            let slots: Vec<_> = kept.buffers.keys().filter(|s| s.0 == stream && !s.2).copied().collect();
            slots
                .into_iter()
                .filter_map(|slot| kept.buffers.remove(&slot))
                .collect()
        };
        drop(freed);
    }

    fn in_capture_scope(&self, stream: u64) -> bool {
        self.lock().capture_scopes.contains(&stream)
    }

    fn open_capture_scope(&self, stream: u64) {
        self.lock().capture_scopes.insert(stream);
    }

    /// Ends `stream`'s capture scope: its buffers, for the caller to free
    /// while the capture is still under way.
    fn close_capture_scope(&self, stream: u64) -> Vec<Vec<DeviceBuffer<u8>>> {
        let mut kept = self.lock();
        kept.capture_scopes.remove(&stream);
        let slots: Vec<_> = kept.buffers.keys().filter(|s| s.0 == stream && s.2).copied().collect();
        slots
            .into_iter()
            .filter_map(|slot| kept.buffers.remove(&slot))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    #[test]
    fn a_capture_scope_keeps_its_own_buffers_and_gives_them_back_at_its_end() {
        let device = Device::emulator(Target::Sm90);
        let buffer = |bytes| device.alloc_scratch::<u8>(bytes).expect("alloc");
        let w = Workspaces::default();
        let (stream, other) = (1, 2);
        w.put((stream, "k", false), vec![buffer(16)]);
        assert!(!w.in_capture_scope(stream));
        w.open_capture_scope(stream);
        assert!(w.in_capture_scope(stream) && !w.in_capture_scope(other));
        // A captured call's buffers, kept apart from the stream's.
        w.put((stream, "k", true), vec![buffer(32), buffer(8)]);
        w.put((other, "k", false), vec![buffer(64)]);
        let taken = w.take((stream, "k", true));
        assert_eq!(taken.iter().map(DeviceBuffer::len).collect::<Vec<_>>(), [32, 8]);
        w.put((stream, "k", true), taken);
        // free_workspaces leaves the capture's buffers alone.
        w.free_stream(stream);
        assert!(w.take((stream, "k", false)).is_empty());
        let closed = w.close_capture_scope(stream);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].iter().map(DeviceBuffer::len).collect::<Vec<_>>(), [32, 8]);
        assert!(!w.in_capture_scope(stream));
        assert!(w.take((stream, "k", true)).is_empty());
        assert_eq!(w.take((other, "k", false))[0].len(), 64);
    }
}
