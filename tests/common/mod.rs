//! Helpers the SPEC rule tests share: the failed outcome most of them use,
//! one launch run to its verdict, a verdict as a comparable tuple, and an
//! allocation's claims as plain rows, and a stale pre-resolved row.

#![allow(dead_code)]

use taintworld::{
    Access, Binding, Launch, MemoryRef, Outcome, Resolved, StreamRef, Verdict, World,
};

/// The failed outcome of most rules: a kernel that does not compile.
pub const FAIL: Outcome<'static> = Outcome::Failed {
    kind: "compile",
    message: "bad PTX",
};

/// Runs one launch on stream 0; the verdict as `(name, failure, needed)`.
pub fn go(
    w: &mut World,
    kernel: &str,
    bindings: &[Binding],
    outcome: Outcome<'_>,
) -> (&'static str, u64, u64) {
    go_on(w, kernel, 0, bindings, outcome)
}

/// Runs one launch on `stream`; the verdict as `(name, failure, needed)`.
pub fn go_on(
    w: &mut World,
    kernel: &str,
    stream: impl Into<StreamRef>,
    bindings: &[Binding],
    outcome: Outcome<'_>,
) -> (&'static str, u64, u64) {
    let launch = Launch {
        kernel,
        stream: stream.into(),
        bindings,
        outcome,
    };
    named(w.launch(&launch).expect("valid launch").verdict)
}

/// A verdict as `(name, failure id, needed memory)`; ids are 0 where the
/// verdict has none. `FailureId` has no public constructor, so tests compare
/// these.
pub fn named(verdict: Verdict) -> (&'static str, u64, u64) {
    match verdict {
        Verdict::Ran => ("ran", 0, 0),
        Verdict::DryRun => ("dry_run", 0, 0),
        Verdict::Failed(f) => ("failed", f.get(), 0),
        Verdict::Skipped { failure, needed } => ("skipped", failure.get(), needed),
    }
}

/// The claims of a live allocation as `(start, end, failure, origin launch)`.
pub fn claims(w: &World, memory: impl Into<MemoryRef>) -> Vec<(u64, u64, u64, Option<u64>)> {
    w.claims(memory)
        .expect("a live allocation")
        .map(|c| (c.start, c.end, c.failure.get(), c.origin))
        .collect()
}

/// The whole of `memory` on `stream`, read: the binding most rules use.
pub fn reads(stream: impl Into<StreamRef>, memory: impl Into<MemoryRef>) -> Binding {
    Binding::whole(stream, memory, Access::Read)
}

/// The whole of `memory` on `stream`, written.
pub fn writes(stream: impl Into<StreamRef>, memory: impl Into<MemoryRef>) -> Binding {
    Binding::whole(stream, memory, Access::Write)
}

/// A row kept while its allocation lived, stale once it is freed: `world`
/// makes allocation 999 on slot 0, resolves it whole and frees it.
pub fn stale_row(world: &mut World) -> Resolved {
    world.alloc(0, 999, 16).unwrap();
    let kept = world
        .resolve_binding(&reads(0, 999))
        .unwrap()
        .expect("live");
    world.free(999).unwrap();
    kept
}
