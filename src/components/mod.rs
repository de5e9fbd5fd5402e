//! The components: plain data, one entity kind per file. Behaviour lives in
//! [`systems`](crate::systems), apart from each store's own operations (the
//! claim set's taint, release and overlap search among them), which the
//! systems call.

use alloc::string::String;
use alloc::vec::Vec;
use slotmap::{Key, SlotMap};

pub mod allocation;
pub mod binding;
pub mod claim;
pub mod failure;
pub mod record;
pub mod stream;

/// A hash map printed as a map in key order, not in the order the map
/// keeps its entries, which its hasher's seed decides (drawn anew for every
/// map, in every run): two maps given the same calls, in one run or two,
/// print the same. For the `Debug` prints that must not differ by seed (a
/// world's capture windows and graphs, a pool stream's allocations, a
/// large claim set's counts).
pub(crate) struct InKeyOrder<'a, K, V, S>(pub(crate) &'a hashbrown::HashMap<K, V, S>);

impl<K: core::fmt::Debug + Ord, V: core::fmt::Debug, S> core::fmt::Debug
    for InKeyOrder<'_, K, V, S>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut entries: Vec<(&K, &V)> = self.0.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        f.debug_map().entries(entries).finish()
    }
}

/// A copy with the room its original has: what the stores' `Clone` uses,
/// so that a clone's first new failure, skip or allocation allocates what
/// its original's would. A derived clone of a vector or a slot map holds
/// exactly its slots and no spare room, so the first item it adds past
/// them moves the whole store.
pub(crate) trait CloneWithRoom: Sized {
    /// The copy, with at least the original's room where the allocator
    /// gives it (only room: a clone without it grows when it must).
    fn clone_with_room(&self) -> Self;
}

impl<T: Clone> CloneWithRoom for Vec<T> {
    fn clone_with_room(&self) -> Self {
        let mut copy = Vec::new();
        let _ = copy.try_reserve_exact(self.capacity());
        copy.extend_from_slice(self);
        copy
    }
}

impl CloneWithRoom for String {
    fn clone_with_room(&self) -> Self {
        let mut copy = String::new();
        let _ = copy.try_reserve_exact(self.capacity());
        copy.push_str(self);
        copy
    }
}

impl<K: Key, V: Clone> CloneWithRoom for SlotMap<K, V> {
    fn clone_with_room(&self) -> Self {
        let mut copy = self.clone();
        let _ = copy.try_reserve(self.capacity().saturating_sub(self.len()));
        copy
    }
}
