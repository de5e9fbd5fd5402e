//! The systems: plain functions, one per file, each taking exactly the
//! stores it reads or writes, the first looping over a batch of bindings,
//! the next three over the rows it resolved them to, and the last draining
//! the queues of what nothing holds.
//! [`World`](crate::World) calls them in the order SPEC.md §3 gives:
//!
//! ```text
//! resolve_owner    bindings                     -> rows (alloc key, range, access), unresolved count
//!                  (or check_rows: pre-resolved rows checked in place)
//! check_reads      rows                         -> the first read failure, if any
//! apply_taint      rows, failure, origin        -> write set claimed (set, never add)
//! release_written  rows                         -> write set's claims carved out
//! prune_failures   failures, records            -> what nothing holds removed
//! ```

mod apply_taint;
mod check_reads;
mod prune_failures;
mod release_written;
mod resolve_owner;

pub use apply_taint::apply_taint;
pub use check_reads::{ReadHit, check_reads};
pub use prune_failures::prune_failures;
pub use release_written::release_written;
pub use resolve_owner::{Resolution, check_rows, count_unresolved, resolve_each, resolve_owner};
pub(crate) use resolve_owner::{all_common, all_good, all_live, check_rows_from, resolve_common};
