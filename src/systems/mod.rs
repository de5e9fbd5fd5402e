//! The systems: plain functions, one per file, each taking exactly the
//! stores it reads or writes, the first looping over a batch of bindings,
//! the next three over the rows it resolved them to, and the last draining
//! the queues of what nothing holds.
//! [`World`](crate::World) calls them in the order SPEC.md §3 gives:
//!
//! ```text
//! resolve_owner    bindings                     -> rows (alloc key, range, access), Resolution
//!                  (or check_rows: pre-resolved rows checked in place;
//!                  resolve_each: each row handed to a closure, none kept;
//!                  count_unresolved: only the count, where nothing is claimed)
//! check_reads      rows                         -> the first read failure, if any
//! apply_taint      rows, failure, origin        -> write set claimed (set, never add)
//! release_written  rows                         -> write set's claims carved out
//! prune_failures   failures, records            -> what nothing holds removed
//! ```
//!
//! # Where the stores come from
//!
//! The stores a system takes are a world's: [`World::streams`](crate::World::streams),
//! [`World::allocations`](crate::World::allocations) and
//! [`World::failure_graph`](crate::World::failure_graph) (its `failures` and `records`).
//! Allocations are made by [`World::alloc`](crate::World::alloc), and skip
//! records only by a world's skip: SPEC §3 step 3 makes the record, counts
//! the skip on its failure and takes the references its cause and its
//! claims hold in one step, which no system does alone. So a benchmark of
//! one system builds a world, clones the stores it needs from it at one
//! moment (`world.allocations().clone()`, `world.failure_graph().clone()`: claims
//! name failure and record keys, so stores cloned at different moments
//! disagree), and times the system on the clones; an `Origin::Skip` key is
//! one of that world's records. To time a whole launch, skip included, time
//! [`World::launch`](crate::World::launch) or
//! [`World::launch_batch`](crate::World::launch_batch)
//! (`benches/systems.rs` times both, and each system alone in its
//! `systems_alone` group).
//!
//! # What they trust
//!
//! A world checks every binding of a launch before any system changes
//! anything (SPEC §9): [`resolve_owner`] checks the bindings it resolves,
//! and [`check_rows`] the rows a caller kept. The systems after them take
//! their rows, failure and origin as checked and do not look again:
//! [`check_reads`], [`apply_taint`] and [`release_written`] trust that each
//! row's range lies inside its allocation, and [`apply_taint`] that
//! `failure` is in `failures` and `origin` names a live record. Rows made
//! by [`resolve_owner`] over the same stores, or passed by [`check_rows`],
//! are such rows; a row made by another world is not (its key may name
//! another allocation here, with a smaller size). Given input that breaks
//! this, a system does not panic, but it can leave a claim past its
//! allocation's end or naming a failure that is gone — a state SPEC §10
//! forbids, which [`World::check_invariants`](crate::World::check_invariants)
//! looks for in a world.

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
