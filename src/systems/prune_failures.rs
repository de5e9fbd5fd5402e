//! `prune_failures`: what nothing holds any more goes.

use crate::components::failure::Failures;
use crate::components::record::Records;

/// Removes every skip record nothing refers to (a dead chain goes whole,
/// without recursion) and then every failure no allocation carries and
/// nothing pins. Returns how many failures went.
///
/// Only entities whose counts dropped to zero since the last prune are
/// looked at, so a launch that freed nothing pays two empty-queue checks;
/// otherwise the cost is one look-up per queued entity and one removal per
/// entity that goes, with no recursion however long a dead chain is.
///
/// Trusts that the queues name keys of these stores (see
/// [What they trust](crate::systems#what-they-trust)); a key that names
/// nothing, or a failure held again since it was queued, is passed over.
pub fn prune_failures(failures: &mut Failures, records: &mut Records) -> usize {
    records.prune();
    let mut pruned = 0;
    while let Some(key) = failures.pop_unheld() {
        if failures.get(key).is_some_and(|f| !f.held()) {
            failures.remove(key);
            pruned += 1;
        }
    }
    pruned
}
