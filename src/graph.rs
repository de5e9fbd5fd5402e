//! The failure graph: failures and the skip records that carry their
//! provenance, held together because every claim names one of each.

use crate::components::failure::Failures;
use crate::components::record::Records;
use crate::systems::prune_failures;

/// The failure side of the world: the [`Failures`] and [`Records`] stores.
/// Costs what they cost: 120 bytes a failure (about 220 with its strings
/// and index entries) and 56 a skip record
/// (`lib.rs`, *Costs*).
///
/// [`World`](crate::World) owns one; a backend on the seed-shaped
/// [`pool`](crate::pool) path owns one beside its [`StreamPool`](crate::pool::StreamPool),
/// held apart from the pool exactly as the seed holds its error graph apart.
///
/// Its `Debug` print shows the stores as they lie — their hashers' seeds,
/// drawn anew for each store in every run, the hashes kept, the indexes in
/// table order, the addresses of registered kernel names — so two graphs
/// given the same calls print differently, in one run or two. What they
/// answer ([`Failures::iter`], [`Records::iter`], look-ups by id or error)
/// is the same, in the same order.
#[derive(Clone, Debug, Default)]
pub struct FailureGraph {
    /// The failures.
    pub failures: Failures,
    /// The skip records.
    pub records: Records,
}

impl FailureGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes every record and failure nothing holds any more
    /// ([`prune_failures`]); returns how many failures went.
    pub fn prune(&mut self) -> usize {
        prune_failures(&mut self.failures, &mut self.records)
    }
}
