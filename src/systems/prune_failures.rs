//! `prune_failures`: what nothing holds any more goes.

use crate::components::failure::Failures;
use crate::components::record::Records;

/// Removes every skip record nothing refers to (a dead chain goes whole,
/// without recursion) and then every failure no allocation carries and
/// nothing pins. Returns how many failures went.
///
/// Only entities whose counts dropped to zero since the last prune are
/// looked at, so a launch that freed nothing pays two empty-queue checks.
pub fn prune_failures(failures: &mut Failures, records: &mut Records) -> usize {
    records.prune();
    let mut pruned = 0;
    while let Some(key) = failures.pop_unclaimed() {
        if failures.get(key).is_some_and(|f| !f.held()) {
            failures.remove(key);
            pruned += 1;
        }
    }
    pruned
}
