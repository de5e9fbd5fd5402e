//! What a launch names: bindings, and the compact rows they resolve to.

use crate::components::allocation::AllocKey;
use crate::components::stream::StreamRef;

/// How a launch touches the bytes a binding names.
///
/// Only *read-visible* bindings are checked against claims, and only
/// *write-visible* ones are tainted or released: the two questions the world
/// answers are "may this run?" (reads) and "what does it leave behind?"
/// (writes).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read only: checked, never tainted or released.
    Read,
    /// Write only: tainted or released, never checked.
    Write,
    /// Both: checked, then tainted or released.
    ReadWrite,
    /// Named but not touched (a template argument, say): neither checked,
    /// tainted nor released.
    Dead,
}

impl Access {
    /// Whether a launch's read-set check looks at this binding.
    #[inline]
    pub const fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether this binding is in the launch's write set.
    #[inline]
    pub const fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }

    /// The name the launch-log format uses (`read`, `write`, `read_write`,
    /// `dead`).
    pub const fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read_write",
            Access::Dead => "dead",
        }
    }
}

/// Prints the launch-log name ([`Access::name`]), as the replay's notes do.
impl core::fmt::Display for Access {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a binding names its allocation: by the program's memory id, or by the
/// [`AllocKey`] that [`World::alloc`](crate::World::alloc) handed back, so a
/// scheduler that holds keys never hashes a memory id.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemoryRef {
    /// A memory id, unique among live allocations.
    Id(u64),
    /// A key handed out by `alloc`; a stale key (its allocation freed) is
    /// unresolved, exactly like an unknown memory id.
    Key(AllocKey),
}

impl From<u64> for MemoryRef {
    fn from(id: u64) -> Self {
        MemoryRef::Id(id)
    }
}

impl From<AllocKey> for MemoryRef {
    fn from(key: AllocKey) -> Self {
        MemoryRef::Key(key)
    }
}

/// One buffer a launch names: `(stream, memory, [start, end), access)`.
///
/// `range: None` is the whole allocation. Bytes are what the claim is made
/// of: a launch that failed writing one region of a buffer says nothing about
/// the rest of it. 64 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The stream the allocation was made on (not necessarily the launch's).
    pub stream: StreamRef,
    /// The allocation.
    pub memory: MemoryRef,
    /// The byte range, `None` for the whole allocation.
    pub range: Option<(u64, u64)>,
    /// How the launch touches it.
    pub access: Access,
}

impl Binding {
    /// A binding of the whole allocation.
    pub fn whole(
        stream: impl Into<StreamRef>,
        memory: impl Into<MemoryRef>,
        access: Access,
    ) -> Self {
        Binding {
            stream: stream.into(),
            memory: memory.into(),
            range: None,
            access,
        }
    }

    /// A binding of the bytes `[start, end)`.
    pub fn range(
        stream: impl Into<StreamRef>,
        memory: impl Into<MemoryRef>,
        start: u64,
        end: u64,
        access: Access,
    ) -> Self {
        Binding {
            stream: stream.into(),
            memory: memory.into(),
            range: Some((start, end)),
            access,
        }
    }
}

/// A binding [`resolve_owner`](crate::systems::resolve_owner) found: the
/// allocation's key and a concrete, checked range. Every later system reads
/// these rows and nothing else. 32 bytes.
///
/// A launch may bind rows directly — resolved once by
/// [`World::resolve_binding`](crate::World::resolve_binding) and kept, as a
/// scheduler keeps a buffer's handle — instead of [`Binding`]s resolved on
/// every launch. A row names its allocation by key alone: an allocation's
/// slot and size never change while it lives, so the row stays what its
/// binding resolved to for as long as the key is live. On every launch the
/// world still checks that the key is live (a stale one is unresolved,
/// counted, or rejected in strict mode as [`Error::UnknownKey`]); what it
/// skips is the stream fold, the slot compare and the memory-id look-up.
/// A row made since the world last freed an allocation is *fresh*: no key
/// has died since it was made, so its own is live, and where a launch
/// only has to be checked as input (a clean batch, a quiet world's clean
/// launch, a batch's first pass) the world knows it from the row alone,
/// with no look-up; a launch that reads claims still finds them by key.
/// A scheduler with a static memory plan — everything allocated before
/// the launches and freed after, as an inference engine or a CUDA-graph
/// replay runs — binds only fresh rows; one that frees as it goes pays
/// the look-up for the rows it made before its last free.
///
/// Rows are made only by a world ([`World::resolve_binding`](crate::World::resolve_binding))
/// or by the systems that resolve bindings ([`resolve_owner`](crate::systems::resolve_owner),
/// [`resolve_each`](crate::systems::resolve_each)) — the fields are private,
/// read through the methods — and each checks the range when it makes one.
/// Only a world stamps a row as its own (a system's rows carry no stamp,
/// and a world checks their range on every launch, as another world's):
/// for its own rows `start <= end <= size` holds from then on in that world,
/// because the size stays while the key lives. So a world checks its own
/// row by its key alone (and its stamp, one compare). A row kept from
/// *another* world — or from the world this one was cloned from — names
/// whatever allocation has its key here, as an [`AllocKey`] does; its
/// range is checked against that allocation on every launch, so it is bad
/// input wherever its range runs past the end, as a binding would be, and
/// a launch gives the same answer alone or in a batch, in a world with
/// claims or without. Two rows are equal when they name the same bytes the
/// same way and were made by the same world: a world and its clone make
/// unequal rows for the same binding. (Where worlds get no stamp — a target
/// without atomic compare-and-swap, or a process past 2^32 − 2 worlds —
/// no row says which world made it, and those two rows are equal; no such
/// world takes any row on trust, so it checks either the same way.)
///
/// Its `Debug` print shows the stamp (`made_by`) and the world's count of
/// frees under it (`epoch`), so that two unequal rows show why. Stamps
/// come from a process-wide counter, in the order the process's worlds
/// and clones draw them (a world draws again every 65,535 frees): a
/// program that makes its worlds in another number or order, or on
/// threads at once, prints other stamps from run to run. What a row
/// answers does not change with them.
///
/// [`Error::UnknownKey`]: crate::Error::UnknownKey
#[derive(Copy, Clone, Debug)]
pub struct Resolved {
    pub(crate) alloc: AllocKey,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) access: Access,
    /// The [`Stamp`] of the world that made the row ([`Stamp::NONE`] for
    /// the rows a launch resolves for itself): in the padding, so the row
    /// stays 32 bytes.
    pub(crate) made_by: u32,
    /// How many allocations that world had freed under its stamp when it
    /// made the row (see [`Stamp::fresh`]); also in the padding.
    pub(crate) epoch: u16,
}

/// Two rows are equal when they name the same bytes the same way and were
/// made by the same world, whatever it freed in between: the epoch says
/// only whether the world must look at the key again.
impl PartialEq for Resolved {
    fn eq(&self, other: &Self) -> bool {
        (self.alloc, self.start, self.end, self.access, self.made_by)
            == (
                other.alloc,
                other.start,
                other.end,
                other.access,
                other.made_by,
            )
    }
}

impl Eq for Resolved {}

impl Resolved {
    /// A dead row of the null key: what a batch's general first pass
    /// stands in for a dead or unresolved binding with, so that a launch
    /// has a row for every binding (`World::launch_batch`). Every system
    /// passes over a dead row.
    pub(crate) fn dead() -> Resolved {
        Resolved {
            alloc: AllocKey::default(),
            start: 0,
            end: 0,
            access: Access::Dead,
            made_by: Stamp::NONE,
            epoch: 0,
        }
    }
}

/// Which world made a [`Resolved`] row, so that a world can tell its own
/// rows — whose ranges it checked when it made them — from rows kept from
/// another. Every world, and every clone of one, draws its own from one
/// process-wide counter (an atomic, the only state the crate keeps outside
/// a world). Where the counter is spent (after 2^32 − 2 stamps) or the
/// target has no 32-bit atomic compare-and-swap, a world gets none: it
/// stamps its rows [`Stamp::NONE`] and trusts no row's stamp, so every
/// row's range is checked there on every launch — slower, never wrong.
///
/// A stamp also counts the world's frees, and a row keeps the count it was
/// made at (its epoch): a row of this stamp and of the current count is
/// fresh (see [`Resolved`]). A world draws a new stamp every
/// [`FREES_PER_STAMP`] frees, before the count could come round to a
/// row's epoch again. That also covers keys coming back: an [`AllocKey`]
/// comes back to life once its slot has been freed 2^31 times (the slot
/// map's versions wrap), naming whatever allocation then sits there; by
/// then the world has a new stamp, and the row made for the key's earlier
/// life has its range checked like any other world's.
#[derive(Debug)]
pub(crate) struct Stamp {
    /// What the world writes into the rows it makes.
    made: u32,
    /// What a row's stamp must equal to be taken as this world's:
    /// `made`, or [`Stamp::NEVER`] for a world without a stamp.
    trusted: u32,
    /// Allocations freed since this stamp was drawn: the epoch of the rows
    /// made now.
    frees: u16,
}

/// How many frees a stamp lasts: as many as a row's epoch counts, so that
/// under one stamp equal epochs mean no free in between (and far fewer
/// than the 2^31 frees of one slot after which its keys repeat). The
/// counter's 2^32 − 2 stamps then last 2^48 frees, in all the worlds of a
/// process together.
pub(crate) const FREES_PER_STAMP: u16 = u16::MAX;

impl Stamp {
    /// The stamp of rows no world vouches for.
    pub(crate) const NONE: u32 = 0;
    /// A value no row carries: the counter never hands it out.
    const NEVER: u32 = u32::MAX;

    /// A stamp no other live or earlier world has — or, once the counter
    /// is spent, none.
    pub(crate) fn mint() -> Self {
        match next_stamp() {
            Some(made) => Stamp {
                made,
                trusted: made,
                frees: 0,
            },
            None => Stamp {
                made: Self::NONE,
                trusted: Self::NEVER,
                frees: 0,
            },
        }
    }

    /// The world freed an allocation: no row made before is fresh any more,
    /// and after [`FREES_PER_STAMP`] frees a new stamp, so that the count
    /// never comes back to an older row's epoch and no key can come back
    /// while its old rows are still taken as this world's.
    pub(crate) fn freed(&mut self) {
        self.frees = self.frees.saturating_add(1);
        if self.frees == FREES_PER_STAMP {
            *self = Stamp::mint();
        }
    }

    /// Counts `frees` allocations freed under this stamp, for tests that
    /// would rather not free them one by one.
    #[cfg(test)]
    pub(crate) fn set_frees(&mut self, frees: u16) {
        self.frees = frees;
    }

    /// What the world writes into the rows it makes.
    #[inline(always)]
    pub(crate) fn made(&self) -> u32 {
        self.made
    }

    /// The epoch of the rows made now: the frees under this stamp.
    #[inline(always)]
    pub(crate) fn epoch(&self) -> u16 {
        self.frees
    }

    /// Whether `checked`, what [`made`](Self::made) gave when the world
    /// last checked some keys it keeps, is still this world's stamp:
    /// fewer than [`FREES_PER_STAMP`] frees since, far fewer than bring a
    /// key back. Never for [`Stamp::NONE`], which a world without a stamp
    /// makes every row with.
    #[inline(always)]
    pub(crate) fn still(&self, checked: u32) -> bool {
        checked != Self::NONE && checked == self.made
    }

    /// Whether `row` was made by this world, whose ranges it checked.
    #[inline(always)]
    pub(crate) fn vouches_for(&self, row: &Resolved) -> bool {
        row.made_by == self.trusted
    }

    /// Whether `row` was made by this world and nothing was freed since:
    /// its key was live when the row was made and no key has died since,
    /// so it is live now, and its range is inside — good input, known
    /// without a look-up. A scheduler with a static memory plan, which
    /// allocates before it launches and frees after, binds only such rows.
    #[inline(always)]
    pub(crate) fn fresh(&self, row: &Resolved) -> bool {
        row.made_by == self.trusted && row.epoch == self.frees
    }
}

/// A clone of a world is another world: its allocations part ways with the
/// original's from then on, so it draws a stamp of its own.
impl Clone for Stamp {
    fn clone(&self) -> Self {
        Stamp::mint()
    }
}

/// The next stamp from the process-wide counter, `1..u32::MAX`, or `None`
/// once they are all handed out.
#[cfg(all(target_has_atomic = "32", not(taintworld_no_stamps)))]
fn next_stamp() -> Option<u32> {
    use core::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    NEXT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
        (n < Stamp::NEVER).then(|| n + 1)
    })
    .ok()
}

/// No 32-bit atomics: no stamps, every row's range checked. A build with
/// `--cfg taintworld_no_stamps` takes this path on any target, so that CI
/// runs the tests with every world as such a target runs it, and as any
/// world runs once the counter is spent.
#[cfg(any(not(target_has_atomic = "32"), taintworld_no_stamps))]
fn next_stamp() -> Option<u32> {
    None
}

impl Resolved {
    /// The allocation.
    #[inline]
    pub fn alloc(&self) -> AllocKey {
        self.alloc
    }

    /// The first byte.
    #[inline]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last byte: `start <= end <= size` holds.
    #[inline]
    pub fn end(&self) -> u64 {
        self.end
    }

    /// How the launch touches the bytes.
    #[inline]
    pub fn access(&self) -> Access {
        self.access
    }

    /// The same bytes, touched with `access` instead: one resolved buffer
    /// bound as a write by one launch and as a read by the next.
    #[inline]
    pub fn with_access(self, access: Access) -> Self {
        Self { access, ..self }
    }

    /// The bytes `start..end` of this row, or `None` unless `self.start <=
    /// start <= end <= self.end`: a part of a kept buffer, for a launch that
    /// touches only that part, checked here once instead of on every launch.
    #[inline]
    pub fn narrow(self, start: u64, end: u64) -> Option<Self> {
        (self.start <= start && start <= end && end <= self.end).then_some(Self {
            start,
            end,
            ..self
        })
    }
}

/// What a [`Launch`](crate::Launch) can bind: [`Binding`]s, resolved on
/// every launch, or pre-resolved [`Resolved`] rows. Sealed: the world knows
/// how to resolve exactly these two.
pub trait Bind: Copy + sealed::Sealed {
    /// The bindings, when they are [`Binding`]s.
    #[doc(hidden)]
    fn as_bindings(bindings: &[Self]) -> Option<&[Binding]>;
    /// The rows, when they are pre-resolved.
    #[doc(hidden)]
    fn as_rows(bindings: &[Self]) -> Option<&[Resolved]>;
}

impl Bind for Binding {
    #[inline(always)]
    fn as_bindings(bindings: &[Self]) -> Option<&[Binding]> {
        Some(bindings)
    }
    #[inline(always)]
    fn as_rows(_: &[Self]) -> Option<&[Resolved]> {
        None
    }
}

impl Bind for Resolved {
    #[inline(always)]
    fn as_bindings(_: &[Self]) -> Option<&[Binding]> {
        None
    }
    #[inline(always)]
    fn as_rows(bindings: &[Self]) -> Option<&[Resolved]> {
        Some(bindings)
    }
}

mod sealed {
    /// Only this crate's binding types are [`Bind`](super::Bind).
    pub trait Sealed {}
    impl Sealed for super::Binding {}
    impl Sealed for super::Resolved {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(made_by: u32) -> Resolved {
        Resolved {
            alloc: AllocKey::default(),
            start: 0,
            end: 0,
            access: Access::Read,
            made_by,
            epoch: 0,
        }
    }

    #[test]
    #[cfg_attr(
        taintworld_no_stamps,
        ignore = "a build without stamps draws none, as a target without atomics does"
    )]
    fn every_world_and_every_clone_draws_a_stamp_of_its_own_and_vouches_only_for_its_rows() {
        let (a, b) = (Stamp::mint(), Stamp::mint());
        let c = a.clone();
        for stamp in [&a, &b, &c] {
            assert_ne!(stamp.made(), Stamp::NONE, "{stamp:?}");
            assert_ne!(stamp.made(), Stamp::NEVER, "{stamp:?}");
        }
        assert_ne!(a.made(), b.made());
        assert_ne!(a.made(), c.made());
        assert!(a.vouches_for(&row(a.made())));
        assert!(!a.vouches_for(&row(b.made())));
        assert!(!a.vouches_for(&row(c.made())));
        assert!(!a.vouches_for(&row(Stamp::NONE)));
    }

    /// What a target without atomics gives every world, and any target
    /// once the counter is spent.
    #[test]
    #[cfg(taintworld_no_stamps)]
    fn without_stamps_every_world_and_every_clone_mints_none_and_vouches_for_no_row() {
        let (a, b) = (Stamp::mint(), Stamp::mint());
        let c = a.clone();
        for stamp in [&a, &b, &c] {
            assert_eq!((stamp.made(), stamp.trusted), (Stamp::NONE, Stamp::NEVER));
            assert!(!stamp.vouches_for(&row(a.made())));
            assert!(!stamp.fresh(&row(a.made())));
        }
    }

    #[test]
    fn a_world_without_a_stamp_vouches_for_no_row_not_even_its_own() {
        let none = Stamp {
            made: Stamp::NONE,
            trusted: Stamp::NEVER,
            frees: 0,
        };
        let some = Stamp::mint();
        assert!(!none.vouches_for(&row(none.made())));
        assert!(!none.vouches_for(&row(some.made())));
        assert!(!some.vouches_for(&row(none.made())));
    }

    #[test]
    #[cfg_attr(
        taintworld_no_stamps,
        ignore = "a build without stamps draws none, as a target without atomics does"
    )]
    fn a_world_draws_a_new_stamp_before_any_freed_slot_can_give_back_an_old_key() {
        let fresh = Stamp::mint();
        let mut stamp = Stamp::mint();
        stamp.set_frees(FREES_PER_STAMP - 2);
        let before = stamp.made();
        stamp.freed();
        assert_eq!(stamp.made(), before, "one free short of the limit");
        stamp.freed();
        assert_ne!(stamp.made(), before, "at the limit");
        assert_ne!(stamp.made(), fresh.made());
        assert!(!stamp.vouches_for(&row(before)));
        assert_eq!(stamp.frees, 0);
        // Well before the slot map's keys repeat.
        assert!(u64::from(FREES_PER_STAMP) < 1 << 31);
    }
}
