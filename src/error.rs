//! The typed errors of bad input, and the one refusal of room
//! ([`Error::NoRoom`]). Every one names what was wrong and with which id,
//! range or count, and a call that returns one left the world as it was:
//! every answer the same (a refused reservation may leave a store the room
//! it grew before another refused).

use alloc::boxed::Box;

/// Bad input to the world or the pool. An error about one of a launch's
/// bindings names its memory id (or its stale key), not its place in the
/// launch: [`World::binding_at_fault`](crate::World::binding_at_fault) says
/// which binding it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `max_streams` was 0: every regular stream id must fold onto a slot.
    #[error("max_streams must be at least 1")]
    ZeroStreams,
    /// `chain_limit` was 0: a skip record has depth at least 1.
    #[error("chain_limit must be at least 1")]
    ZeroChainLimit,
    /// `max_streams + num_special` does not fit in a `u64`.
    #[error("max_streams {max_streams} + num_special {num_special} does not fit in a u64")]
    SlotOverflow {
        /// The regular slot count asked for.
        max_streams: u64,
        /// The special slot count asked for.
        num_special: u16,
    },
    /// A special stream index at or past `num_special`.
    #[error("special stream {index} is out of range: num_special is {num_special}")]
    SpecialOutOfRange {
        /// The index asked for.
        index: u16,
        /// How many special streams there are.
        num_special: u16,
    },
    /// No live allocation has this memory id.
    #[error("memory {memory} is not a live allocation")]
    UnknownMemory {
        /// The memory id.
        memory: u64,
    },
    /// An allocation key whose allocation was freed (or that names no
    /// allocation of this world: see [`AllocKey`](crate::AllocKey)):
    /// named by `free`, or in strict mode by a binding or a pre-resolved
    /// row.
    #[error("allocation key {key:?} names no live allocation")]
    UnknownKey {
        /// The stale key.
        key: crate::AllocKey,
    },
    /// `alloc` of a memory id that is already live.
    #[error("memory {memory} is already a live allocation")]
    DuplicateMemory {
        /// The memory id.
        memory: u64,
    },
    /// A range whose end is before its start.
    #[error("range [{start}, {end}) of memory {memory} ends before it starts")]
    RangeReversed {
        /// The binding's memory id, or for a live key its allocation's.
        memory: u64,
        /// The range's start.
        start: u64,
        /// The range's end.
        end: u64,
    },
    /// A range whose end is before its start, in a binding that names a
    /// stale [`AllocKey`](crate::AllocKey): there is no memory id to name,
    /// so the key is named (as [`Error::UnknownKey`] names it).
    #[error("range [{start}, {end}) of stale allocation key {key:?} ends before it starts")]
    KeyRangeReversed {
        /// The stale key.
        key: crate::AllocKey,
        /// The range's start.
        start: u64,
        /// The range's end.
        end: u64,
    },
    /// A resolved binding whose range runs past its allocation's end.
    #[error("range [{start}, {end}) runs past the end of memory {memory} (size {size})")]
    RangePastEnd {
        /// The memory id.
        memory: u64,
        /// The range's start.
        start: u64,
        /// The range's end.
        end: u64,
        /// The allocation's size.
        size: u64,
    },
    /// In strict mode, a binding that does not resolve: its memory id names
    /// no live allocation, or one made on another slot (`made_on` tells the
    /// two apart). (A stale key is [`Error::UnknownKey`].)
    #[error(
        "binding of memory {memory} on stream slot {slot} does not resolve (strict mode{})",
        LivesOn(*.memory, *.made_on)
    )]
    Unresolved {
        /// The memory id named, or for a live key on another slot the
        /// memory id of its allocation.
        memory: u64,
        /// The slot the binding's stream folds onto.
        slot: u64,
        /// The slot the live allocation of `memory` was made on, when it
        /// is another (the binding names the wrong stream); `None` when no
        /// allocation of `memory` is live.
        made_on: Option<u64>,
    },
    /// A host write or replay given a `dry_run` outcome (a log's `alloc`
    /// line with one is refused by the log's parser, with its own message).
    #[error("{operation} cannot have a dry_run outcome")]
    DryRunOutcome {
        /// The operation.
        operation: &'static str,
    },
    /// A second capture window on a slot that already has one (another
    /// stream id may have opened it: ids fold onto slots).
    #[error("{stream} (slot {slot}) already has an open capture window")]
    CaptureOpen {
        /// The stream as the caller named it.
        stream: crate::StreamRef,
        /// The slot it folds onto, whose window is open.
        slot: u64,
    },
    /// Ending a capture window that is not open.
    #[error("{stream} (slot {slot}) has no open capture window")]
    NoCapture {
        /// The stream as the caller named it.
        stream: crate::StreamRef,
        /// The slot it folds onto.
        slot: u64,
    },
    /// A graph id that is already live.
    #[error("graph {graph} is already live")]
    GraphLive {
        /// The graph id.
        graph: u64,
    },
    /// A graph id that is not live.
    #[error("graph {graph} is not a live graph")]
    UnknownGraph {
        /// The graph id.
        graph: u64,
    },
    /// Beginning a profile that is already open.
    #[error("profile {profile} is already open")]
    ProfileOpen {
        /// The profile id.
        profile: u64,
    },
    /// Ending a profile that is not open.
    #[error("profile {profile} is not open")]
    ProfileNotOpen {
        /// The profile id.
        profile: u64,
    },
    /// Room asked of [`World::reserve_allocations`](crate::World::reserve_allocations)
    /// that could not be had: the count overflows a store's size, or the
    /// allocator refused the memory. Not bad input, but the one error that
    /// says so instead of aborting; nothing was made or freed.
    #[error("no room for more allocations: {additional} asked for")]
    NoRoom {
        /// The number of allocations room was asked for.
        additional: usize,
    },
    /// One launch of a batch was bad input; no launch of the batch was
    /// processed.
    #[error("launch {index} of the batch: {error}")]
    InBatch {
        /// The launch's position in the batch.
        index: usize,
        /// What was wrong with it.
        error: Box<Error>,
    },
}

impl Error {
    /// What was wrong, out of its [`Error::InBatch`] wrapping: the bad
    /// launch's own error for a batch, `self` for anything else. One
    /// pattern then matches the error of a launch alone or in a batch.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Error, Launch, Outcome, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 16)?;
    /// let past = [Binding::range(0, 1, 0, 32, Access::Write)];
    /// let batch = [Launch { kernel: "fill", stream: 0.into(), bindings: &past[..], outcome: Outcome::Ok }];
    /// let error = world.launch_batch(&batch, &mut Vec::new()).unwrap_err();
    /// assert_eq!(error.batch_index(), Some(0));
    /// assert!(matches!(error.inner(), Error::RangePastEnd { memory: 1, end: 32, .. }));
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn inner(&self) -> &Error {
        let mut error = self;
        while let Error::InBatch { error: inner, .. } = error {
            error = inner;
        }
        error
    }

    /// Which launch of its batch was bad input, for an [`Error::InBatch`];
    /// `None` for any other error.
    pub fn batch_index(&self) -> Option<usize> {
        match self {
            Error::InBatch { index, .. } => Some(*index),
            _ => None,
        }
    }
}

/// What [`Error::Unresolved`]'s message adds when the memory is live on
/// another slot: `; memory M lives on slot S`, the mistake a binding on
/// the wrong stream makes; nothing when no allocation of it is live.
struct LivesOn(u64, Option<u64>);

impl core::fmt::Display for LivesOn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.1 {
            Some(slot) => write!(f, "; memory {} lives on slot {slot}", self.0),
            None => Ok(()),
        }
    }
}
