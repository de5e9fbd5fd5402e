//! `release_written`: bytes that work wrote carry nothing any more.

use crate::components::allocation::Allocations;
use crate::components::binding::Resolved;
use crate::components::failure::Failures;
use crate::components::record::Records;

/// Removes the bytes of every write-visible row from every claim of its
/// allocation, and only those bytes. An unbacked allocation stays claimed:
/// no write can put memory behind it.
///
/// Cost: per row one slot-map look-up and one length check when the
/// allocation is clean (the common case); a binary search otherwise.
///
/// Trusts each row's range to lie inside its allocation (see
/// [What they trust](crate::systems#what-they-trust)).
pub fn release_written(
    rows: &[Resolved],
    allocs: &mut Allocations,
    failures: &mut Failures,
    records: &mut Records,
) {
    for row in rows {
        if !row.access.writes() {
            continue;
        }
        if !allocs.footprint(row.alloc).is_some_and(|f| f.claimed) {
            continue;
        }
        allocs.release(row.alloc, (row.start, row.end), failures, records);
    }
}
