//! Helpers the SPEC rule tests share: a verdict as a comparable tuple, and
//! an allocation's claims as plain rows.

#![allow(dead_code)]

use taintworld::{MemoryRef, Verdict, World};

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
