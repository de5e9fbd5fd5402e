//! Allocations: memory ids with a size, the slot they were made on, and the
//! claims their bytes carry.

use hashbrown::HashMap;
use slotmap::{SlotMap, new_key_type};

use crate::components::claim::ClaimSet;
use crate::components::failure::FailureKey;

new_key_type! {
    /// An allocation's key, handed out by [`World::alloc`](crate::World::alloc).
    /// A scheduler that keeps it names the allocation without hashing its
    /// memory id; a key outlived by its allocation resolves to nothing.
    pub struct AllocKey;
}

/// One allocation entity. A clean one is 80 bytes and owns no heap memory.
#[derive(Clone, Debug)]
pub struct Allocation {
    /// The program's memory id, unique among live allocations.
    pub memory: u64,
    /// The stream slot it was made on: only bindings naming this slot
    /// resolve to it.
    pub slot: u64,
    /// Its size in bytes; declared, never turned into memory.
    pub size: u64,
    /// What its bytes carry.
    pub claims: ClaimSet,
    /// Set when the reservation failed: the allocation then holds one claim
    /// `[0, size)` of this failure for its whole life, which writes do not
    /// release and taints do not replace.
    pub unbacked: Option<FailureKey>,
}

/// The allocation store: a slot map of [`Allocation`]s and the index from
/// live memory id to key.
///
/// Costs: by key O(1) with no hashing; by memory id one hash-map probe;
/// about 100 bytes per clean allocation, index included.
#[derive(Clone, Debug, Default)]
pub struct Allocations {
    store: SlotMap<AllocKey, Allocation>,
    by_memory: HashMap<u64, AllocKey>,
}

impl Allocations {
    /// The live allocation behind `key`.
    #[inline]
    pub fn get(&self, key: AllocKey) -> Option<&Allocation> {
        self.store.get(key)
    }

    /// [`get`](Self::get), mutably.
    #[inline]
    pub fn get_mut(&mut self, key: AllocKey) -> Option<&mut Allocation> {
        self.store.get_mut(key)
    }

    /// The key of the live allocation with memory id `memory`.
    #[inline]
    pub fn key_of(&self, memory: u64) -> Option<AllocKey> {
        self.by_memory.get(&memory).copied()
    }

    /// Every live allocation, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (AllocKey, &Allocation)> {
        self.store.iter()
    }

    /// How many allocations are alive.
    #[inline]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether no allocation is alive.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// Adds an allocation; the caller has checked its memory id is not live.
    pub(crate) fn insert(&mut self, allocation: Allocation) -> AllocKey {
        let memory = allocation.memory;
        let key = self.store.insert(allocation);
        self.by_memory.insert(memory, key);
        key
    }

    /// Removes an allocation; the caller has cleared its claims.
    pub(crate) fn remove(&mut self, key: AllocKey) -> Option<Allocation> {
        let allocation = self.store.remove(key)?;
        self.by_memory.remove(&allocation.memory);
        Some(allocation)
    }
}
