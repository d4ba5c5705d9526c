//! One owner for every runtime object a platform creates (stream, events, memory, modules, graphs), after cudarc's
//! safe layer: the raw handle with what releases it, destroyed once on drop. `Drop` never panics; a failed release
//! is logged, since there is no caller left to return it to.
#![allow(unsafe_code)]

use super::Result;

/// A runtime object destroyed once, on drop, by the release function paired with its creation. `C` is what the
/// release needs besides the handle: the loaded HIP runtime, or the CUDA context the handle lives in.
pub(super) struct Owned<H: Copy, C> {
    /// The raw handle, passed to the runtime's calls.
    pub(super) raw: H,
    context: C,
    release: unsafe fn(&C, H) -> Result<()>,
}

// SAFETY: the handles owned here (HIP's and CUDA's streams, events, modules, graphs and device addresses) may be used
// and destroyed from any thread: both runtimes are thread-safe and serialise enqueues on a stream, device pointers
// are never dereferenced on the host, and the platforms use the timing events one call at a time. What the release
// needs (`C`) must itself be Send and Sync.
unsafe impl<H: Copy, C: Send + Sync> Send for Owned<H, C> {}
// SAFETY: as above; shared references only pass the handle to the runtime.
unsafe impl<H: Copy, C: Send + Sync> Sync for Owned<H, C> {}

impl<H: Copy, C> Owned<H, C> {
    /// Owns `raw`, which the call that `release` undoes created and nothing else owns; `release` runs once, on drop.
    pub(super) fn new(context: C, raw: H, release: unsafe fn(&C, H) -> Result<()>) -> Self {
        Owned { raw, context, release }
    }
}

impl<H: Copy, C> Drop for Owned<H, C> {
    fn drop(&mut self) {
        // SAFETY: the handle was created by the call paired with `release` (see each `Owned::new`), is owned only
        // here and released once; the runtimes wait for, or defer freeing until, the queued work that uses what they
        // release (hipFree and hipStreamDestroy synchronise, the CUDA driver defers), and a module is unloaded after
        // every kernel of it (each holds an Arc to it).
        if let Err(e) = unsafe { (self.release)(&self.context, self.raw) } {
            eprintln!("warning: {e}");
        }
    }
}
