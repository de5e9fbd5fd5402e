//! The crate docs' "Costs" (SPEC.md §3's hot path): launches over clean
//! allocations, launches that taint or release one range per binding, and a
//! successful `World::scope` make no heap allocation once warm.
//!
//! The library itself is `#![forbid(unsafe_code)]`; the `unsafe` below is
//! only this test binary's counting allocator, which has to implement the
//! `unsafe` trait `GlobalAlloc`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use taintworld::{
    Access, AllocKey, Binding, ErrorInfo, Launch, Outcome, ScopeOutcome, Verdict, World,
};

thread_local! {
    /// Heap allocations made by this thread (const-initialized, no
    /// destructor: touching it never allocates).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

fn count() {
    // `try_with`: the slot may be gone while the thread is being torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call forwards to `System` unchanged; counting touches only a
// thread-local `Cell`, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for `layout` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap allocations this thread made while running `f`.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn the_hot_path_makes_no_heap_allocation_once_warm() {
    let mut w = World::default();
    let keys: Vec<AllocKey> = (0..8).map(|m| w.alloc(0, m, 4096).unwrap()).collect();
    let b = |k: usize, access| Binding::whole(0, keys[k], access);

    // (a) 3 reads + 1 write over clean allocations, by key.
    let clean = [
        b(0, Access::Read),
        b(1, Access::Read),
        b(2, Access::Read),
        b(3, Access::Write),
    ];
    let matmul = Launch {
        kernel: "matmul",
        stream: 0.into(),
        bindings: &clean,
        outcome: Outcome::Ok,
    };
    for _ in 0..10 {
        w.launch(&matmul).unwrap();
    }
    let mut ran = 0u32;
    let n = allocations_in(|| {
        for _ in 0..1000 {
            if w.launch(&matmul).unwrap().verdict == Verdict::Ran {
                ran += 1;
            }
        }
    });
    assert_eq!((n, ran), (0, 1000), "clean launches allocated");

    // (b) Taint one range per binding, then release it again, under a failure
    // that stays alive on memory 7 so that find-or-mint finds it.
    let fail = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    let anchor = [b(7, Access::Write)];
    w.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &anchor,
        outcome: fail,
    })
    .unwrap();
    let written = [
        b(4, Access::Write),
        Binding::range(0, keys[5], 0, 1024, Access::Write),
        b(6, Access::Write),
    ];
    let failing = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &written,
        outcome: fail,
    };
    let fixing = Launch {
        kernel: "fix",
        stream: 0.into(),
        bindings: &written,
        outcome: Outcome::Ok,
    };
    for _ in 0..10 {
        w.launch(&failing).unwrap();
        w.launch(&fixing).unwrap();
    }
    let (mut tainted, mut released) = (0u32, 0u32);
    let n = allocations_in(|| {
        for _ in 0..1000 {
            if matches!(w.launch(&failing).unwrap().verdict, Verdict::Failed(f) if f.get() == 1) {
                tainted += 1;
            }
            if w.launch(&fixing).unwrap().verdict == Verdict::Ran {
                released += 1;
            }
        }
    });
    assert_eq!(
        (n, tainted, released),
        (0, 1000, 1000),
        "taint/release launches allocated"
    );
    let s = w.stats();
    assert_eq!((s.claims, s.live_failures, s.failures_minted), (1, 1, 1));
    assert_eq!(w.failures().next().unwrap().occurrences, 1 + 10 + 1000);

    // (c) The success path of a write scope with 4 bindings.
    let scoped = [
        b(0, Access::Read),
        b(1, Access::Read),
        b(2, Access::ReadWrite),
        b(3, Access::Write),
    ];
    for _ in 0..10 {
        w.scope("gelu", 0, &scoped, || Ok::<_, ErrorInfo>(1u32))
            .unwrap();
    }
    let mut sum = 0u32;
    let n = allocations_in(|| {
        for _ in 0..1000 {
            if let Ok(ScopeOutcome::Ran(v)) =
                w.scope("gelu", 0, &scoped, || Ok::<_, ErrorInfo>(1u32))
            {
                sum += v;
            }
        }
    });
    assert_eq!((n, sum), (0, 1000), "successful scopes allocated");
    w.check_invariants().unwrap();
}
