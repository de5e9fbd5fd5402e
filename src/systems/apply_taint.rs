//! `apply_taint`: the write set of failed or skipped work carries its failure.

use crate::components::allocation::Allocations;
use crate::components::binding::Resolved;
use crate::components::claim::Origin;
use crate::components::failure::{FailureKey, Failures};
use crate::components::record::Records;

/// Sets the bytes of every write-visible row to carry `failure` through
/// `origin` — sets, never adds (see [`ClaimSet::taint`]). An unbacked
/// allocation keeps its reservation failure: nothing replaces it.
///
/// Cost: per row one slot-map look-up and a binary search; no heap
/// allocation while each allocation's claims fit inline or have room.
///
/// Trusts its input: each row's range inside its allocation, `failure` in
/// `failures` and `origin` a live record (see
/// [What they trust](crate::systems#what-they-trust)).
///
/// [`ClaimSet::taint`]: crate::components::claim::ClaimSet::taint
#[inline(always)]
pub fn apply_taint(
    rows: &[Resolved],
    allocs: &mut Allocations,
    failures: &mut Failures,
    records: &mut Records,
    failure: FailureKey,
    origin: Origin,
) {
    for row in rows {
        if !row.access.writes() {
            continue;
        }
        allocs.taint(
            row.alloc,
            (row.start, row.end),
            failure,
            origin,
            failures,
            records,
        );
    }
}
