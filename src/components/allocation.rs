//! Allocations: memory ids with a size, the slot they were made on, and the
//! claims their bytes carry.

use alloc::vec::Vec;
use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};
use slotmap::{Key, SlotMap, new_key_type};

use crate::components::CloneWithRoom;
use crate::components::claim::{ClaimSet, Origin};
use crate::components::failure::{FailureKey, Failures};
use crate::components::record::Records;

new_key_type! {
    /// An allocation's key, handed out by [`World::alloc`](crate::World::alloc).
    /// A scheduler that keeps it names the allocation without hashing its
    /// memory id; a key outlived by its allocation resolves to nothing —
    /// until its slot has been freed 2^31 times, when the slot map's
    /// versions wrap and the key names whatever allocation then sits there.
    /// The keys the world keeps itself, in a captured graph's rows, are
    /// checked against the memory id, slot and size they were recorded
    /// with once a world stamp, which lasts fewer frees than bring a key
    /// back, and found live at every replay, so a graph replays as SPEC §6
    /// words it however long it is kept (`tests/long_haul.rs`).
    ///
    /// A key is its world's: it is a slot and a version, not a memory id,
    /// and no world can tell its own keys from another's. A clone of a
    /// world takes its original's keys with its allocations (what lets a
    /// scheduler try work on a clone with the keys it holds); in a world
    /// built apart, another world's key names whatever allocation sits at
    /// that slot with that version, if one does, and is
    /// [`Error::UnknownKey`](crate::Error::UnknownKey) where none does.
    /// Rows ([`Resolved`](crate::Resolved)) carry their world's stamp, so
    /// a row from another world has its range checked before it is used;
    /// its key is still taken as this world's.
    pub struct AllocKey;
}

/// One allocation entity's row. A clean one is 80 bytes and owns no heap
/// memory; its hot fields are mirrored in its [`Footprint`].
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

/// An allocation's row as the store keeps it: the [`Allocation`] and where
/// its memory id's entry sat in the memory-id index when it was made (see
/// [`Allocations`]). 88 bytes.
#[derive(Clone, Debug)]
struct Row {
    allocation: Allocation,
    indexed_at: usize,
}

impl Row {
    /// What fills the rows' first place, which no key names (the slot map
    /// numbers its slots from 1; see [`place`]), when the first
    /// allocation is made.
    fn vacant() -> Self {
        Row {
            allocation: Allocation {
                memory: 0,
                slot: 0,
                size: 0,
                claims: ClaimSet::default(),
                unbacked: None,
            },
            indexed_at: 0,
        }
    }
}

/// Where the row of `key` lies in [`Allocations`]' rows: the slot the
/// footprints' slot map gave the key, the low half of its bits. The slot
/// map numbers its slots from 1, so the rows' first place stays vacant
/// (`tests::rows_lie_at_their_keys_slots_and_a_freed_row_keeps_no_heap`
/// pins both); an index past the rows is only ever a missing row, never
/// a panic.
///
/// slotmap documents no layout for a key's bits, only that `from_ffi`
/// gives back what `as_ffi` gave: Cargo.toml pins slotmap's version
/// exactly, because under another layout two live keys could share a
/// place, and a row would answer for the wrong allocation.
#[inline(always)]
fn place(key: AllocKey) -> usize {
    key.data().as_ffi() as u32 as usize
}

/// The few fields every binding touches — the allocation's size, its slot,
/// and whether it holds any claim — packed into 16 bytes so that the
/// allocations a batch of launches names stay in the first-level cache
/// (1,000 allocations: 24 KiB with the slot map's version words). The rest of
/// an allocation lives in its [`Allocation`] row, touched only when it is
/// claimed or reported.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Size in bytes.
    pub size: u64,
    /// The low 32 bits of the slot it was made on; the row holds the whole
    /// slot, which resolution also compares in a world of more than 2^32
    /// slots ([`Streams::wide`](crate::Streams::wide)).
    pub slot: u32,
    /// Whether its claim set is non-empty: mirrors
    /// `!Allocation::claims.is_empty()`, kept by every change to the claims.
    pub claimed: bool,
}

/// Room for one allocation whose memory id no live allocation has (see
/// [`Allocations::vacancy`]).
pub(crate) struct Vacancy<'a> {
    hot: &'a mut SlotMap<AllocKey, Footprint>,
    rows: &'a mut Vec<Row>,
    index: &'a mut HashTable<(u64, AllocKey)>,
    hasher: &'a DefaultHashBuilder,
    hash: u64,
}

impl Vacancy<'_> {
    /// Adds `allocation`, whose memory id is the vacancy's; `claimed`
    /// says whether its claim set holds any claim, which the caller that
    /// made the set knows without asking it. Always in line: left to the
    /// compiler once the allocation was, it was a call on every
    /// allocation (the warm ResNet step counted 1,108.1 instructions a
    /// launch, 1,048.4 in line).
    #[inline(always)]
    pub(crate) fn fill(self, allocation: Allocation, claimed: bool) -> AllocKey {
        debug_assert_eq!(claimed, !allocation.claims.is_empty());
        let key = self.hot.insert(Footprint {
            size: allocation.size,
            // The low bits; see `Footprint::slot`.
            slot: allocation.slot as u32,
            claimed,
        });
        let hasher = self.hasher;
        let indexed_at = self
            .index
            .insert_unique(self.hash, (allocation.memory, key), |&(memory, _)| {
                id_hash(hasher, memory)
            })
            .bucket_index();
        let row = Row {
            allocation,
            indexed_at,
        };
        let at = place(key);
        match self.rows.get_mut(at) {
            // A freed allocation's row, its claims cleared when it was freed.
            Some(old) => *old = row,
            None => {
                self.rows.resize_with(at, Row::vacant);
                self.rows.push(row);
            }
        }
        key
    }
}

/// How the memory-id index hashes an id: every look-up, insert and
/// rehash of the index goes through this one function.
#[inline(always)]
fn id_hash(hasher: &DefaultHashBuilder, memory: u64) -> u64 {
    hasher.hash_one(memory)
}

/// The allocation store: a slot map of [`Footprint`]s (the hot part), the
/// rows (each an [`Allocation`] and where its memory id is indexed) in a
/// plain vector beside it, and the index from live memory id to key.
///
/// A row lies at its footprint's slot (see `place`): the slot map says
/// whether a key is live, the vector holds what the footprint leaves out,
/// and neither hashes nor keeps versions twice. A freed allocation's row
/// stays where it lies, its claims cleared and their heap memory let go,
/// until the slot map hands its slot to a new allocation, which writes
/// its row over it. Until the thirty-third session the rows were a second
/// slot map changed in step with the footprints'; its insert and its
/// removal, which moved the 88-byte row out to drop it, cost the warm
/// ResNet step about 14 instructions a launch (about two allocations and
/// two frees). The world's invariant check (`World::check_invariants`)
/// holds every footprint to its row.
///
/// The index is a hash table of `(memory id, key)`, and each row keeps the
/// place its entry took: the store's rows are the [`Allocation`]s with that
/// place beside them, 88 bytes. A free by key — what a scheduler that keeps
/// keys does, as often as it launches in a real program — removes the
/// entry found there, with no hash and no probe: in the warm ResNet step,
/// the index's part of the frees went from 185 instructions a launch to 80
/// (about two frees a launch). The table moves its entries when it grows
/// or rehashes in place, so the entry found there is checked to be this
/// key's, and a free whose entry has moved finds it by the id as before.
///
/// Costs: a binding by key is one slot-map look-up into 24-byte entries, no
/// hashing; by memory id one hash-table probe first. A clean allocation
/// costs 129 bytes (the 24-byte footprint slot, the 88-byte row, and the
/// memory-id index's 16-byte entry and control byte) and the stores'
/// growth slack, and no heap memory of its own: about 170 all told
/// measured over 100,000, 147 to 258 from 1,000 to 1,000,000 (258 at
/// 65,536 and 131,072, where the stores, which keep a vacant first slot,
/// have just doubled).
#[derive(Debug, Default)]
pub struct Allocations {
    hot: SlotMap<AllocKey, Footprint>,
    rows: Vec<Row>,
    by_memory: HashTable<(u64, AllocKey)>,
    hasher: DefaultHashBuilder,
}

/// A copy with the room its original has (`CloneWithRoom`), so that a
/// clone's first new allocation moves no store its original's would not.
/// Claim sets are copied at their size: one that shrank may grow again.
impl Clone for Allocations {
    fn clone(&self) -> Self {
        Allocations {
            hot: self.hot.clone_with_room(),
            rows: self.rows.clone_with_room(),
            by_memory: self.by_memory.clone(),
            hasher: self.hasher.clone(),
        }
    }
}

impl Allocations {
    /// The hot part of the live allocation behind `key`. A reference, so
    /// that reading one field does not copy the others.
    #[inline]
    pub fn footprint(&self, key: AllocKey) -> Option<&Footprint> {
        self.hot.get(key)
    }

    /// The live allocation behind `key`.
    #[inline]
    pub fn get(&self, key: AllocKey) -> Option<&Allocation> {
        self.row(key).map(|row| &row.allocation)
    }

    /// The footprint of the live allocation behind `key` if it has memory
    /// id `memory`, a slot `slot` accepts and bytes up to `end`: what a
    /// kept key is checked with when the allocation it was made for must
    /// still be the one it names. A key that is live is not enough: the
    /// slot map's versions are 32 bits, and once a slot has been freed
    /// 2^31 times an old key of it names whatever allocation sits there.
    #[inline]
    pub(crate) fn answering(
        &self,
        key: AllocKey,
        memory: u64,
        end: u64,
        slot: impl FnOnce(u64) -> bool,
    ) -> Option<&Footprint> {
        let hot = self.hot.get(key)?;
        let row = &self.rows.get(place(key))?.allocation;
        (row.memory == memory && end <= hot.size && slot(row.slot)).then_some(hot)
    }

    /// The row of the live allocation behind `key`: the footprints' slot
    /// map says whether the key is live, and where its row lies.
    #[inline(always)]
    fn row(&self, key: AllocKey) -> Option<&Row> {
        if !self.hot.contains_key(key) {
            return None;
        }
        self.rows.get(place(key))
    }

    /// [`row`](Self::row), to change.
    #[inline(always)]
    fn row_of(&mut self, key: AllocKey) -> Option<&mut Row> {
        if !self.hot.contains_key(key) {
            return None;
        }
        self.rows.get_mut(place(key))
    }

    /// Releases `[start, end)` of the allocation behind `key` (see
    /// [`ClaimSet::release`]), unless it is unbacked: no write can put
    /// memory behind it. A release never claims bytes, so the footprint is
    /// touched only when the last claim went.
    #[inline]
    pub(crate) fn release(
        &mut self,
        key: AllocKey,
        (start, end): (u64, u64),
        failures: &mut Failures,
        records: &mut Records,
    ) {
        let Some((
            hot,
            Row {
                allocation: row, ..
            },
        )) = self.both(key)
        else {
            return;
        };
        if row.unbacked.is_some() {
            return;
        }
        row.claims.release(start, end, failures, records);
        if row.claims.is_empty() {
            hot.claimed = false;
        }
    }

    /// Taints `[start, end)` of the allocation behind `key` (see
    /// [`ClaimSet::taint`](crate::components::claim::ClaimSet::taint)),
    /// unless it is unbacked. A taint never empties a claim set, so the
    /// footprint is written only when the allocation was clean.
    #[inline(always)]
    pub(crate) fn taint(
        &mut self,
        key: AllocKey,
        (start, end): (u64, u64),
        failure: FailureKey,
        origin: Origin,
        failures: &mut Failures,
        records: &mut Records,
    ) {
        let Some((
            hot,
            Row {
                allocation: row, ..
            },
        )) = self.both(key)
        else {
            return;
        };
        if row.unbacked.is_none()
            && row
                .claims
                .taint(start, end, failure, origin, failures, records)
        {
            hot.claimed = true;
        }
    }

    /// The footprint and the row of the live allocation behind `key`, to
    /// change: one look-up of the footprints' slot map for both.
    #[inline(always)]
    fn both(&mut self, key: AllocKey) -> Option<(&mut Footprint, &mut Row)> {
        let hot = self.hot.get_mut(key)?;
        Some((hot, self.rows.get_mut(place(key))?))
    }

    /// The key of the live allocation with memory id `memory`.
    #[inline]
    pub fn key_of(&self, memory: u64) -> Option<AllocKey> {
        self.indexed_key(id_hash(&self.hasher, memory), memory)
    }

    /// The key the index holds for `memory`, whose hash is `hash`.
    #[inline(always)]
    fn indexed_key(&self, hash: u64, memory: u64) -> Option<AllocKey> {
        self.by_memory
            .find(hash, |&(id, _)| id == memory)
            .map(|&(_, key)| key)
    }

    /// How many entries the memory-id index holds: one for each live
    /// allocation, which the world's invariant check holds it to.
    pub(crate) fn indexed(&self) -> usize {
        self.by_memory.len()
    }

    /// Every live allocation, in no particular order: slot order, which
    /// the calls alone decide (not the memory-id index's hash seed), so
    /// the same for the same calls in every run.
    pub fn iter(&self) -> impl Iterator<Item = (AllocKey, &Allocation)> {
        self.hot
            .keys()
            .filter_map(|key| Some((key, &self.rows.get(place(key))?.allocation)))
    }

    /// How many allocations are alive.
    #[inline]
    pub fn len(&self) -> usize {
        self.hot.len()
    }

    /// Whether no allocation is alive.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.hot.is_empty()
    }

    /// Makes room for the next `additional` allocations made, so that
    /// making them allocates nothing in this store: room in the slot map
    /// for as many more footprints, in the rows for the places they can
    /// take, and in the memory-id index for as many more entries. Frees in
    /// between do not use it up: a freed place is taken again first, and
    /// an entry that goes into the room a freed one left takes none of the
    /// index's room for new entries.
    ///
    /// Fallible, unlike the stores' own growth: a count that overflows a
    /// store's size, or room the allocator refuses, is
    /// [`Error::NoRoom`](crate::Error::NoRoom) and not an abort. The
    /// stores that did grow before one refused keep their room; no
    /// allocation is made or freed either way.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), crate::Error> {
        let refused = || crate::Error::NoRoom { additional };
        // The slot map adds this to its length unchecked: a count that
        // overflows panics there in a debug build and wraps in a release
        // one, to a reservation of nothing that succeeds.
        self.hot.len().checked_add(additional).ok_or_else(refused)?;
        self.hot.try_reserve(additional).map_err(|_| refused())?;
        // A new footprint takes a free place or one past the last: none
        // past the slot map's room, which counts its vacant first place
        // as well as the others.
        let places = self.hot.capacity().checked_add(1).ok_or_else(refused)?;
        self.rows
            .try_reserve(places.saturating_sub(self.rows.len()))
            .map_err(|_| refused())?;
        let hasher = &self.hasher;
        self.by_memory
            .try_reserve(additional, |&(memory, _)| id_hash(hasher, memory))
            .map_err(|_| refused())
    }

    /// The row behind `key`, to change by hand: only for the tests that
    /// break a world on purpose to see the invariant check notice.
    #[cfg(test)]
    pub(crate) fn row_mut(&mut self, key: AllocKey) -> Option<&mut Allocation> {
        self.row_of(key).map(|row| &mut row.allocation)
    }

    /// Marks the footprint behind `key` claimed, past every rule: only for
    /// the tests that give a row claims by hand.
    #[cfg(test)]
    pub(crate) fn mark_claimed(&mut self, key: AllocKey) {
        if let Some(hot) = self.hot.get_mut(key) {
            hot.claimed = true;
        }
    }

    /// The row at `key`'s place whether or not `key` is live: only for the
    /// tests that break a freed row on purpose.
    #[cfg(test)]
    pub(crate) fn row_at_mut(&mut self, key: AllocKey) -> Option<&mut Allocation> {
        self.rows.get_mut(place(key)).map(|row| &mut row.allocation)
    }

    /// Drops the rows from `key`'s place on, leaving their footprints:
    /// only for the tests that break a world on purpose.
    #[cfg(test)]
    pub(crate) fn drop_rows_from(&mut self, key: AllocKey) {
        self.rows.truncate(place(key));
    }

    /// The key the memory-id index gives for `memory`, to change by hand:
    /// only for the tests that break a world on purpose.
    #[cfg(test)]
    pub(crate) fn indexed_key_mut(&mut self, memory: u64) -> Option<&mut AllocKey> {
        let hash = id_hash(&self.hasher, memory);
        let entry = self.by_memory.find_mut(hash, |&(id, _)| id == memory);
        entry.map(|(_, key)| key)
    }

    /// Indexes `memory` under `key` beside whatever the index holds, past
    /// every rule: only for the tests that break a world on purpose.
    #[cfg(test)]
    pub(crate) fn index_also(&mut self, memory: u64, key: AllocKey) {
        let hasher = &self.hasher;
        self.by_memory
            .insert_unique(id_hash(hasher, memory), (memory, key), |&(id, _)| {
                id_hash(hasher, id)
            });
    }

    /// Room for a new allocation of memory id `memory`, or `None` if an
    /// allocation of that id is live: one look-up of the memory-id index
    /// checks the id, and the vacancy indexes the new key with the hash
    /// already made (its insert still finds a free place, but compares no
    /// id again).
    #[inline]
    pub(crate) fn vacancy(&mut self, memory: u64) -> Option<Vacancy<'_>> {
        let hash = id_hash(&self.hasher, memory);
        if self.indexed_key(hash, memory).is_some() {
            return None;
        }
        Some(Vacancy {
            hot: &mut self.hot,
            rows: &mut self.rows,
            index: &mut self.by_memory,
            hasher: &self.hasher,
            hash,
        })
    }

    /// Frees the allocation behind `key`: clears its claims (see
    /// [`ClaimSet::clear`]) and removes it. Whether it was alive. The
    /// row's claims are cleared where it lies and the row left there (see
    /// [`Allocations`]): a
    /// free is as frequent as a launch in a real program's log, and
    /// moving the whole row out cost more than the rest of a clean free.
    /// Always in line, for the same reason: as a call the warm ResNet
    /// step counted 1,048.4 instructions a launch, in line 1,006.2.
    ///
    /// The only way, with [`free_memory`](Self::free_memory), that a key
    /// dies: the world's stamp must hear of every free that returns
    /// `true`, or rows made before it would still be taken as fresh
    /// ([`Resolved`](crate::components::binding::Resolved)).
    #[inline(always)]
    pub(crate) fn free(
        &mut self,
        key: AllocKey,
        failures: &mut Failures,
        records: &mut Records,
    ) -> bool {
        let Some(row) = self.row_of(key) else {
            return false;
        };
        row.allocation.claims.clear(failures, records);
        let (memory, at) = (row.allocation.memory, row.indexed_at);
        match self.by_memory.get_bucket_entry(at) {
            Ok(entry) if entry.get().1 == key => {
                entry.remove();
            }
            _ => {
                let hash = id_hash(&self.hasher, memory);
                if let Ok(entry) = self.by_memory.find_entry(hash, |&(_, k)| k == key) {
                    entry.remove();
                }
            }
        }
        self.hot.remove(key).is_some()
    }

    /// Whether every row that no live key names — a freed allocation's,
    /// or the first place's — holds no claim and no heap memory: what a
    /// free leaves behind, held by the world's invariant check.
    pub(crate) fn freed_rows_are_empty(&self) -> bool {
        let mut live = alloc::vec![false; self.rows.len()];
        for key in self.hot.keys() {
            if let Some(place) = live.get_mut(place(key)) {
                *place = true;
            }
        }
        self.rows.iter().zip(live).all(|(row, live)| {
            let claims = &row.allocation.claims;
            live || (claims.is_empty() && !claims.holds_heap())
        })
    }

    /// [`free`](Self::free) of the live allocation with memory id
    /// `memory`: the one probe that removes the id from the index finds
    /// the key too. Whether one was alive.
    pub(crate) fn free_memory(
        &mut self,
        memory: u64,
        failures: &mut Failures,
        records: &mut Records,
    ) -> bool {
        let hash = id_hash(&self.hasher, memory);
        let Ok(entry) = self.by_memory.find_entry(hash, |&(id, _)| id == memory) else {
            return false;
        };
        let ((_, key), _) = entry.remove();
        if let Some(row) = self.row_of(key) {
            row.allocation.claims.clear(failures, records);
        }
        self.hot.remove(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::{Allocation, Allocations, Row, place};
    use crate::components::claim::{ClaimSet, Origin};
    use crate::components::failure::Failures;
    use crate::components::record::Records;
    use alloc::vec::Vec;
    use core::mem::size_of;

    fn allocation(memory: u64) -> Allocation {
        Allocation {
            memory,
            slot: 0,
            size: 64,
            claims: ClaimSet::default(),
            unbacked: None,
        }
    }

    /// The rows lie at their footprints' slots, which the slot map numbers
    /// from 1 in a key's low bits; a freed slot taken again takes its row's
    /// place again, under a new key; and a freed row keeps none of its
    /// claims' heap memory while it waits.
    #[test]
    fn rows_lie_at_their_keys_slots_and_a_freed_row_keeps_no_heap() {
        let mut store = Allocations::default();
        let (mut failures, mut records) = (Failures::default(), Records::default());
        let keys: Vec<_> = (0..4)
            .map(|m| store.vacancy(m).expect("new id").fill(allocation(m), false))
            .collect();
        for (i, &key) in keys.iter().enumerate() {
            assert_eq!(place(key), i + 1);
            assert_eq!(store.get(key).map(|a| a.memory), Some(i as u64));
        }
        assert_eq!(store.rows.len(), 5, "the first place stays vacant");

        let failure = failures.find_or_mint("kind", "kernel", "message");
        for range in [(0, 1), (2, 3), (4, 5)] {
            store.taint(
                keys[1],
                range,
                failure,
                Origin::Root,
                &mut failures,
                &mut records,
            );
        }
        assert!(store.rows[2].allocation.claims.holds_heap());
        assert!(store.free(keys[1], &mut failures, &mut records));
        assert!(store.get(keys[1]).is_none());
        assert!(!store.rows[2].allocation.claims.holds_heap());
        assert!(store.freed_rows_are_empty());
        assert!(
            !store.free(keys[1], &mut failures, &mut records),
            "freed once"
        );

        // A freed row that kept a claim is what the invariant check names.
        let mut broken = store.clone();
        broken.rows[2].allocation.claims.taint(
            0,
            1,
            failure,
            Origin::Root,
            &mut failures,
            &mut records,
        );
        assert!(!broken.freed_rows_are_empty());

        let again = store.vacancy(9).expect("new id").fill(allocation(9), false);
        assert_eq!(place(again), 2);
        assert_ne!(again, keys[1]);
        assert_eq!(store.get(again).map(|a| a.memory), Some(9));
        assert!(store.get(keys[1]).is_none(), "the old key stays stale");
        assert_eq!(store.rows.len(), 5);
        assert_eq!(store.iter().count(), 4);
    }

    /// The stored row is the public `Allocation` and one word: the crate
    /// docs' "80 + 8", which `tests/sizes.rs` cannot see.
    #[test]
    #[cfg_attr(
        not(target_pointer_width = "64"),
        ignore = "pins a 64-bit target's sizes: a 32-bit target lays these types out smaller"
    )]
    fn a_stored_row_is_its_allocation_and_one_word() {
        assert_eq!(size_of::<Allocation>(), 80);
        assert_eq!(size_of::<Row>(), 88);
    }
}
