//! A counting global allocator, for the tests that measure heap use
//! (`no_heap_on_hot_path`, `sizes`, `leaks`). Each includes this file, so the
//! allocator is installed in those test binaries only.
//!
//! The library itself is `#![forbid(unsafe_code)]`; the `unsafe` here is the
//! `GlobalAlloc` trait, which cannot be implemented without it. Every call
//! is forwarded to the system allocator unchanged; the counters are
//! per-thread, so a measurement sees only its own thread's allocations.

// Each including test uses one of the two measures.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Allocations made by this thread (const-initialized, no destructor:
    /// touching it never allocates).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes this thread allocated and has not freed (frees made on other
    /// threads are not seen).
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Counts on the calling thread; `try_with` because the slots may be gone
/// while a thread is torn down.
fn note(allocated: bool, grown: isize) {
    if allocated {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    }
    let _ = LIVE.try_with(|c| c.set(c.get() + grown));
}

/// The counting allocator.
pub struct Counting;

// SAFETY: every call forwards to `System` with the caller's arguments
// unchanged; counting touches only thread-local `Cell`s, which do not
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(true, layout.size() as isize);
        // SAFETY: the caller's contract for `layout` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(true, layout.size() as isize);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(true, new_size as isize - layout.size() as isize);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(false, -(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap allocations (and reallocations) this thread made while running `f`.
pub fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Bytes this thread holds on the heap, counted from its start.
pub fn live_bytes() -> isize {
    LIVE.with(Cell::get)
}
