//! `check_reads`: does a launch read bytes nothing trustworthy wrote?

use crate::components::allocation::Allocations;
use crate::components::binding::Resolved;
use crate::components::claim::Claim;

/// What the read-set check found: the binding that decided and the claim
/// that names the failure.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReadHit {
    /// The position of the deciding row in the rows checked.
    pub row: usize,
    /// The memory id of the deciding binding: what the skipped launch
    /// *needed*.
    pub needed: u64,
    /// The claim with the lowest `start` overlapping that binding.
    pub claim: Claim,
}

/// Walks the read-visible rows in the order the launch lists them; the first
/// one any claim overlaps decides, and among the claims overlapping it the
/// one with the lowest `start` names the failure.
///
/// Cost: one slot-map look-up and one length check per clean row; a binary
/// search over the allocation's claims otherwise. Reads nothing but the
/// allocations. Always in line: it is the first thing every launch does,
/// and a call costs a small launch a tenth of its instructions.
///
/// Trusts each row's range to lie inside its allocation (see
/// [What they trust](crate::systems#what-they-trust)).
#[inline(always)]
pub fn check_reads(rows: &[Resolved], allocs: &Allocations) -> Option<ReadHit> {
    for (i, row) in rows.iter().enumerate() {
        if !row.access.reads() {
            continue;
        }
        // The footprint answers for a clean allocation without touching
        // its row.
        if !allocs.footprint(row.alloc).is_some_and(|f| f.claimed) {
            continue;
        }
        let Some(allocation) = allocs.get(row.alloc) else {
            continue;
        };
        if let Some(claim) = allocation.claims.first_overlap(row.start, row.end) {
            return Some(ReadHit {
                row: i,
                needed: allocation.memory,
                claim: *claim,
            });
        }
    }
    None
}
