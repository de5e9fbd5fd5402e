//! The pool of backend streams, and the primitives that record on their
//! memory what a unit of work did or did not write — the surface of the seed
//! runtime's stream pool, kept whole so a backend written against it can
//! switch over.
//!
//! The pool answers one question — which stream sits in a slot — and the
//! free functions answer the other: which stream allocated a binding, so the
//! claim lands on the memory rather than on whoever failed. They are free
//! functions because a caller holds the pool and the [`FailureGraph`] apart,
//! as the seed's callers hold the pool and its error graph apart.
//!
//! Differences from the seed, each for a reason:
//!
//! * No `unsafe`: where the seed had an `unsafe fn` with an index
//!   precondition, the index is bounds-checked — [`StreamPool::get_mut_index`]
//!   and [`StreamPool::get_special`] panic on a bad index instead of reading
//!   out of bounds, and [`StreamPool::get_or_create_special`] returns an
//!   error.
//! * [`StreamPool::new`] returns an error for `max_streams == 0`, where the
//!   seed made a pool whose first regular stream id divided by zero (only
//!   its special streams worked).
//! * The pool holds `max_streams + num_special` slots, up to 510; the seed
//!   added the two as `u8`, stopping at 255, so its last special indices
//!   read past the end.
//! * A stream id folds as the full `u64` modulo `max_streams` (SPEC §1);
//!   the seed cast it to `usize` first, which on a 32-bit target folds an
//!   id of 2^32 or more onto another slot.
//! * The runtime's types are the crate's: [`StreamId`] is defined here,
//!   a [`Binding`] stands for the seed's `BufferBinding`, an [`ErrorInfo`]
//!   for its `ServerError` (in [`taint`] and [`ReadFailure`]), and
//!   [`ReadFailure::needed`] is the memory id as a `u64` (0 for a binding
//!   that names its allocation by a world's key).
//! * [`StreamFactory`] names its own error type; the seed's was the
//!   runtime's `ServerError`. With no `Display` bound on it, the panic of
//!   [`StreamPool::get_mut`] names the slot but not the factory's error;
//!   [`StreamPool::get_or_create`] returns it.
//! * [`StreamMemory`] takes the [`FailureGraph`] in `failure` too: claims
//!   hold the graph's keys, and the public [`FailureId`] lives in the graph.
//! * [`taint`] finds or mints its failure by identity (SPEC §4) and returns
//!   its id. The seed's `taint` inserted a new failure on every call; here,
//!   while some allocation still carries (or something pins) a failure of
//!   the same `(kind, kernel, message)`, `taint` takes that failure again,
//!   one more occurrence, and returns its id. Bytes already carrying it
//!   keep it, and a read of them names the first occurrence's id. A
//!   backend that kept a map from failure id to the launch that failed
//!   keys it by the error instead, or counts [`Failure::occurrences`](crate::Failure::occurrences).
//! * [`StreamPool::get_or_create_special`] fails in two ways — an index
//!   past `num_special` (the seed's precondition) and the factory's error —
//!   so it returns a [`PoolError`] wrapping the factory's error, where
//!   [`StreamPool::get_or_create`] returns the factory's error itself.
//! * [`taint`], [`taint_with`] and [`written`] act on every binding they
//!   are handed, whatever its [`Access`](crate::Access), as the seed's,
//!   whose bindings had none: the caller picks the write set. Only
//!   [`read_failure`] looks at the access, checking the bindings that read.
//! * [`StreamId`] converts into the [`StreamRef`] a [`Binding`] names its
//!   stream by, where the seed's binding held the runtime's stream id
//!   itself: `Binding::whole(StreamId { value: 3 }, memory, access)`.
//!
//! ```
//! use taintworld::pool::{self, StreamAllocations, StreamFactory, StreamId, StreamMemory, StreamPool};
//! use taintworld::{Access, Binding, ErrorInfo, FailureGraph};
//!
//! struct Factory;
//! impl StreamFactory for Factory {
//!     type Stream = StreamAllocations;
//!     type Error = ErrorInfo;
//!     fn create(&mut self) -> Result<StreamAllocations, ErrorInfo> {
//!         Ok(StreamAllocations::default())
//!     }
//! }
//!
//! let mut pool = StreamPool::new(Factory, 4, 0)?;
//! let mut graph = FailureGraph::new();
//! pool.get_mut(&StreamId { value: 1 }).alloc(9, 64)?;
//!
//! let out = Binding::range(1, 9, 0, 32, Access::Write);
//! let error = ErrorInfo::new("compile", "fill", "bad PTX");
//! let failure = pool::taint(&mut pool, error, [&out].into_iter(), &mut graph);
//! let stream = pool.try_get(&StreamId { value: 1 }).expect("initialized by the alloc");
//! assert_eq!(stream.failure(&Binding::whole(1, 9, Access::Read), &graph), Some(failure));
//!
//! pool::written(&mut pool, [&out].into_iter(), &mut graph);
//! graph.prune();
//! assert!(graph.failures.is_empty());
//! # Ok::<(), taintworld::Error>(())
//! ```

use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::components::InKeyOrder;
use crate::components::binding::{Binding, MemoryRef};
use crate::components::claim::{ClaimSet, Origin};
use crate::components::failure::{ErrorInfo, FailureId};
use crate::components::stream::StreamRef;
use crate::error::Error;
use crate::graph::FailureGraph;

/// A stream id as the runtime names it; regular ids fold onto the pool's
/// slots with `value % max_streams`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId {
    /// The id.
    pub value: u64,
}

/// A regular stream, by the id the runtime names it by: what a
/// [`Binding`]'s `stream` holds where the seed's binding held the id.
impl From<StreamId> for StreamRef {
    fn from(id: StreamId) -> Self {
        StreamRef::Id(id.value)
    }
}

/// What a launch's read-set check found: the failure claiming an input, the
/// input it claims, and the error — everything the skip needs to record and
/// a capture needs to fail with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadFailure {
    /// The failure claiming the input.
    pub failure: FailureId,
    /// The claimed input's memory id, which the skip record names as what
    /// the launch needed; 0 when the binding names its allocation by a
    /// world's key ([`MemoryRef::Key`]), for which the pool knows no id.
    pub needed: u64,
    /// The failure's error, cloned for the paths that report it directly.
    pub error: ErrorInfo,
}

/// Creates streams for the pool, which creates them lazily, as needed.
pub trait StreamFactory {
    /// The type of stream produced.
    type Stream;
    /// Why a stream could not be created.
    type Error;
    /// Creates a new stream.
    ///
    /// # Errors
    ///
    /// When the backend cannot create a stream, e.g. on a device an earlier fault
    /// left unusable.
    fn create(&mut self) -> Result<Self::Stream, Self::Error>;
}

/// The memory a stream's kernels see, for the taint bookkeeping.
///
/// Whether a buffer can be trusted lives on its allocation. The whole
/// binding is passed rather than its memory id because a binding names a
/// byte range, and the claim is exactly that range: a launch that failed
/// writing one region of a buffer says nothing about the rest of it.
///
/// # Keeping claims
///
/// The graph learns that a failure is carried only through a
/// [`ClaimSet`]: its `taint`, `release` and `clear` count, in the graph,
/// the allocations that carry each failure, and a failure that nothing
/// carries is pruned ([`taint`] prunes the one it minted at once when it
/// claimed nothing). So an implementation keeps each allocation's claims
/// in a [`ClaimSet`] — as [`StreamAllocations`], the ready-made one, does —
/// and calls those methods with the graph it is handed. One that records
/// failure ids some other way is never counted as carrying them: its
/// failures are pruned under it, and its reads stop finding them.
pub trait StreamMemory {
    /// The failure claiming any byte the binding names (the claim with the
    /// lowest start), if one does.
    fn failure(&self, binding: &Binding, graph: &FailureGraph) -> Option<FailureId>;

    /// Points the bytes `binding` names at `failure` (set, never add).
    /// [`StreamAllocations`] takes a `failure` no longer in the graph
    /// (pruned) as naming nothing and taints nothing ([`taint_with`]); an
    /// implementation of its own is handed the id as it is and should do
    /// the same, since a claim set only counts failures the graph holds.
    fn taint(&mut self, binding: &Binding, failure: FailureId, graph: &mut FailureGraph);

    /// The bytes `binding` names have a writer again: releases every claim
    /// on them, and only on them.
    fn written(&mut self, binding: &Binding, graph: &mut FailureGraph);
}

/// One allocation of a [`StreamAllocations`]: its size and its claims. Not
/// `Clone`, for the reason [`StreamAllocations`] is not.
///
/// ```compile_fail
/// let allocation = taintworld::pool::PoolAllocation::default();
/// let copy = allocation.clone();
/// ```
#[derive(Debug, Default)]
pub struct PoolAllocation {
    /// Size in bytes.
    pub size: u64,
    /// What its bytes carry.
    pub claims: ClaimSet,
}

/// A stream's allocations and their claims: the crate's own per-allocation
/// claim storage ([`ClaimSet`], the same one [`World`](crate::World) uses)
/// behind the [`StreamMemory`] trait.
///
/// The pool path has no error channel in `taint` and `written`, as in the
/// seed: a binding of an unknown memory id is not this stream's to answer
/// for and is left alone, and a range reaching past the allocation is
/// clamped to it. (The world path rejects a range past the end as bad
/// input, and an unknown memory id too in strict mode; otherwise it counts
/// such a binding unresolved and runs the launch, SPEC §2.) Bindings
/// naming an [`AllocKey`](crate::AllocKey) are the world's and are left
/// alone here too.
///
/// Not `Clone`: the graph counts each allocation that carries a failure
/// once, so a copy of the claims beside the original would carry failures
/// the graph does not know it holds, and a prune after the original's free
/// would take them from under the copy, whose bytes would then read clean.
///
/// ```compile_fail
/// let streams = taintworld::pool::StreamAllocations::default();
/// let copy = streams.clone();
/// ```
#[derive(Default)]
pub struct StreamAllocations {
    allocations: HashMap<u64, PoolAllocation>,
}

/// The allocations by memory id (`InKeyOrder`): two streams given the
/// same calls, in one run or two, print the same.
impl core::fmt::Debug for StreamAllocations {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StreamAllocations")
            .field("allocations", &InKeyOrder(&self.allocations))
            .finish()
    }
}

impl StreamAllocations {
    /// Adds allocation `memory` of `size` bytes, with no claims. A live
    /// memory id is bad input.
    pub fn alloc(&mut self, memory: u64, size: u64) -> Result<(), Error> {
        if self.allocations.contains_key(&memory) {
            return Err(Error::DuplicateMemory { memory });
        }
        self.allocations.insert(
            memory,
            PoolAllocation {
                size,
                claims: ClaimSet::default(),
            },
        );
        Ok(())
    }

    /// Frees allocation `memory`: its claims go, their failures lose a
    /// carrier (prune the graph to let them go).
    pub fn free(&mut self, memory: u64, graph: &mut FailureGraph) -> Result<(), Error> {
        let mut allocation = self
            .allocations
            .remove(&memory)
            .ok_or(Error::UnknownMemory { memory })?;
        allocation
            .claims
            .clear(&mut graph.failures, &mut graph.records);
        Ok(())
    }

    /// The allocation `memory`, if it is live.
    pub fn get(&self, memory: u64) -> Option<&PoolAllocation> {
        self.allocations.get(&memory)
    }

    fn range_of(&mut self, binding: &Binding) -> Option<(&mut PoolAllocation, u64, u64)> {
        let MemoryRef::Id(memory) = binding.memory else {
            return None;
        };
        let allocation = self.allocations.get_mut(&memory)?;
        let (start, end) = binding.range.unwrap_or((0, allocation.size));
        let end = end.min(allocation.size);
        Some((allocation, start.min(end), end))
    }
}

impl StreamMemory for StreamAllocations {
    fn failure(&self, binding: &Binding, graph: &FailureGraph) -> Option<FailureId> {
        let MemoryRef::Id(memory) = binding.memory else {
            return None;
        };
        let allocation = self.allocations.get(&memory)?;
        let (start, end) = binding.range.unwrap_or((0, allocation.size));
        let claim = allocation
            .claims
            .first_overlap(start, end.min(allocation.size))?;
        graph.failures.get(claim.failure).map(|f| f.id)
    }

    fn taint(&mut self, binding: &Binding, failure: FailureId, graph: &mut FailureGraph) {
        let Some(key) = graph.failures.key_of(failure) else {
            return;
        };
        if let Some((allocation, start, end)) = self.range_of(binding) {
            allocation.claims.taint(
                start,
                end,
                key,
                Origin::Root,
                &mut graph.failures,
                &mut graph.records,
            );
        }
    }

    fn written(&mut self, binding: &Binding, graph: &mut FailureGraph) {
        if let Some((allocation, start, end)) = self.range_of(binding) {
            allocation
                .claims
                .release(start, end, &mut graph.failures, &mut graph.records);
        }
    }
}

/// Errors of the pool's index-taking calls.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError<E> {
    /// The factory could not create the stream; its error, which the
    /// message shows as `Debug` writes it (the one format every error
    /// type a [`PoolError`] can be a `std::error::Error` of has).
    #[error("a stream could not be created: {0:?}")]
    Create(E),
    /// A special stream index at or past `num_special`.
    #[error("special stream {index} is out of range: num_special is {num_special}")]
    SpecialOutOfRange {
        /// The index asked for.
        index: u8,
        /// How many special streams the pool has.
        num_special: u8,
    },
}

/// A pool of streams, created lazily by a factory: `max_streams` regular
/// slots that stream ids fold onto, then `num_special` special ones.
///
/// Costs: one `Option<Stream>` per slot, allocated up front; every look-up
/// is O(1). The pool holds nothing but its factory and streams, so it moves
/// to a device thread whenever they can (`tests/device_thread.rs`).
#[derive(Debug)]
pub struct StreamPool<F: StreamFactory> {
    /// One entry per slot; `None` until the slot's stream is created.
    streams: Vec<Option<F::Stream>>,
    factory: F,
    max_streams: usize,
}

impl<F: StreamFactory> StreamPool<F> {
    /// A pool of `max_streams` regular and `num_special` special slots, none
    /// initialized. `max_streams == 0` is an error: ids could not fold.
    pub fn new(backend: F, max_streams: u8, num_special: u8) -> Result<Self, Error> {
        if max_streams == 0 {
            return Err(Error::ZeroStreams);
        }
        let slots = usize::from(max_streams) + usize::from(num_special);
        let mut streams = Vec::with_capacity(slots);
        streams.resize_with(slots, || None);
        Ok(Self {
            streams,
            factory: backend,
            max_streams: usize::from(max_streams),
        })
    }

    /// The initialized streams (unlike [`get_mut`](Self::get_mut), never
    /// creates one).
    pub fn streams(&self) -> impl Iterator<Item = &F::Stream> {
        self.streams.iter().flatten()
    }

    /// [`streams`](Self::streams), mutably.
    pub fn streams_mut(&mut self) -> impl Iterator<Item = &mut F::Stream> {
        self.streams.iter_mut().flatten()
    }

    /// Synthetic [`StreamId`]s, one per initialized regular slot. Each
    /// round-trips through [`get_mut`](Self::get_mut) to the slot it came
    /// from (slot `i` is `StreamId { value: i }`, since `i % max_streams ==
    /// i`), so they are safe to feed back into per-stream calls.
    pub fn stream_ids(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.streams[..self.max_streams]
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|_| StreamId { value: i as u64 }))
    }

    /// The stream for `stream_id`, created if needed.
    ///
    /// # Panics
    ///
    /// When the stream has to be created and the factory fails; use
    /// [`get_or_create`](Self::get_or_create) to get the error instead.
    pub fn get_mut(&mut self, stream_id: &StreamId) -> &mut F::Stream {
        let index = self.stream_index(stream_id);
        self.get_mut_index(index)
    }

    /// The stream at slot `index`, created if needed.
    ///
    /// # Panics
    ///
    /// When `index` is not below `max_streams + num_special` (the seed's
    /// unchecked precondition, checked here), or when the factory fails.
    pub fn get_mut_index(&mut self, index: usize) -> &mut F::Stream {
        assert!(
            index < self.streams.len(),
            "stream slot {index} is out of range: max_streams + num_special is {}",
            self.streams.len()
        );
        match self.get_or_create_index(index) {
            Ok(stream) => stream,
            Err(_) => panic!("a stream could not be created for slot {index}"),
        }
    }

    /// The stream for `stream_id`, created if it does not exist yet.
    ///
    /// # Errors
    ///
    /// The factory's error, when creation fails.
    pub fn get_or_create(&mut self, stream_id: &StreamId) -> Result<&mut F::Stream, F::Error> {
        let index = self.stream_index(stream_id);
        self.get_or_create_index(index)
    }

    /// The special stream `index`, created if it does not exist yet.
    ///
    /// # Errors
    ///
    /// [`PoolError::SpecialOutOfRange`] for an index at or past
    /// `num_special`; [`PoolError::Create`] when the factory fails.
    pub fn get_or_create_special(
        &mut self,
        index: u8,
    ) -> Result<&mut F::Stream, PoolError<F::Error>> {
        let slot = self.max_streams + usize::from(index);
        if slot >= self.streams.len() {
            return Err(PoolError::SpecialOutOfRange {
                index,
                num_special: self.num_special(),
            });
        }
        self.get_or_create_index(slot).map_err(PoolError::Create)
    }

    /// The special stream `index`, created if needed.
    ///
    /// # Panics
    ///
    /// When `index` is not below `num_special` (naming the special index,
    /// as [`PoolError::SpecialOutOfRange`] does), or when the factory
    /// fails.
    pub fn get_special(&mut self, index: u8) -> &mut F::Stream {
        let num_special = self.num_special();
        if index >= num_special {
            // The message of the error `get_or_create_special` returns.
            let error = PoolError::<()>::SpecialOutOfRange { index, num_special };
            panic!("{error}");
        }
        self.get_mut_index(self.max_streams + usize::from(index))
    }

    /// The stream at an in-range slot, created if needed.
    fn get_or_create_index(&mut self, index: usize) -> Result<&mut F::Stream, F::Error> {
        let factory = &mut self.factory;
        let entry = &mut self.streams[index];
        if entry.is_none() {
            *entry = Some(factory.create()?);
        }
        match entry {
            Some(stream) => Ok(stream),
            None => unreachable!("the slot was just filled"),
        }
    }

    /// The slot of `id`: `id % max_streams`.
    pub fn stream_index(&self, id: &StreamId) -> usize {
        stream_index(id, self.max_streams)
    }

    /// How many special slots there are.
    pub fn num_special(&self) -> u8 {
        u8::try_from(self.streams.len() - self.max_streams).unwrap_or(u8::MAX)
    }

    /// The stream on `id`'s slot, when that slot was ever initialized.
    ///
    /// Never creates one: resolving a buffer's owning slot must not bring a
    /// backend stream into existence, which on CUDA and HIP would bind it to
    /// whichever context happens to be current. A buffer's slot was
    /// initialized by the allocation itself, so `None` means the binding is
    /// not this pool's to answer for.
    pub fn try_get(&self, id: &StreamId) -> Option<&F::Stream> {
        self.streams[self.stream_index(id)].as_ref()
    }

    /// [`try_get`](Self::try_get), mutably.
    pub fn try_get_mut(&mut self, id: &StreamId) -> Option<&mut F::Stream> {
        let index = self.stream_index(id);
        self.streams[index].as_mut()
    }

    /// The slot a binding's [`StreamRef`] names (it may be out of range for
    /// a special stream).
    fn slot_of_ref(&self, stream: StreamRef) -> Option<usize> {
        match stream {
            StreamRef::Id(value) => Some(self.stream_index(&StreamId { value })),
            StreamRef::Special(i) => self.max_streams.checked_add(usize::from(i)),
        }
    }

    /// The stream on the slot a binding's [`StreamRef`] names, if that slot
    /// was ever initialized; never creates one.
    pub fn try_get_ref(&self, stream: StreamRef) -> Option<&F::Stream> {
        self.streams.get(self.slot_of_ref(stream)?)?.as_ref()
    }

    /// [`try_get_ref`](Self::try_get_ref), mutably.
    pub fn try_get_ref_mut(&mut self, stream: StreamRef) -> Option<&mut F::Stream> {
        let index = self.slot_of_ref(stream)?;
        self.streams.get_mut(index)?.as_mut()
    }

    /// Mutable access to the factory, e.g. to change the configuration new
    /// streams are created with. Streams already created are unaffected.
    pub fn factory_mut(&mut self) -> &mut F {
        &mut self.factory
    }
}

/// The slot of a stream id: `id % max_streams` (slot 0 when `max_streams`
/// is 0, which no pool has).
pub fn stream_index(stream_id: &StreamId, max_streams: usize) -> usize {
    match stream_id.value.checked_rem(max_streams as u64) {
        Some(slot) => slot as usize,
        None => 0,
    }
}

/// What the read check of a launch finds: the first read-visible binding
/// that a claim overlaps decides, and its failure is reported. Bindings whose
/// slot was never initialized are not this pool's to answer for.
pub fn read_failure<'a, F>(
    pool: &StreamPool<F>,
    bindings: impl Iterator<Item = &'a Binding>,
    graph: &FailureGraph,
) -> Option<ReadFailure>
where
    F: StreamFactory<Stream: StreamMemory>,
{
    for binding in bindings {
        if !binding.access.reads() {
            continue;
        }
        let Some(stream) = pool.try_get_ref(binding.stream) else {
            continue;
        };
        let Some(failure) = stream.failure(binding, graph) else {
            continue;
        };
        // A stream memory that names a failure no longer in the graph
        // names nothing: the later bindings still get their check.
        if let Some(f) = graph
            .failures
            .key_of(failure)
            .and_then(|key| graph.failures.get(key))
        {
            let error = f.error.clone();
            let needed = match binding.memory {
                MemoryRef::Id(m) => m,
                MemoryRef::Key(_) => 0,
            };
            return Some(ReadFailure {
                failure,
                needed,
                error,
            });
        }
    }
    None
}

/// Points the bytes every binding in `written` names at `failure`.
///
/// Each binding is resolved to the stream that allocated it, which may not
/// be the stream that failed — that is the point: the fact lands on the
/// memory, wherever it lives. A binding whose slot no stream ever
/// initialized is skipped; it is not this pool's to answer for.
///
/// `failure` must still be in the graph: an id pruned since (nothing held
/// it when the caller last called [`FailureGraph::prune`]) names no error
/// any more, so [`StreamAllocations`] taints nothing with it and the bytes
/// keep what they carried (a [`StreamMemory`] of the caller's own is handed
/// the id as it is, see [`StreamMemory::taint`]). A
/// failure that lost its last carrier but was not pruned yet is held again
/// by this taint, and found by its error again ([`taint`] reuses it). To
/// taint after a prune, taint by the error with [`taint`], which finds or
/// mints the failure.
pub fn taint_with<'a, F>(
    pool: &mut StreamPool<F>,
    failure: FailureId,
    written: impl Iterator<Item = &'a Binding>,
    graph: &mut FailureGraph,
) where
    F: StreamFactory<Stream: StreamMemory>,
{
    for binding in written {
        if let Some(stream) = pool.try_get_ref_mut(binding.stream) {
            stream.taint(binding, failure, graph);
        }
    }
}

/// [`taint_with`] under the failure found or minted for `error` (SPEC §4:
/// found while something carries or pins it, so the id is the one the
/// world would give; [`Failures::find_held_or_mint`](crate::Failures::find_held_or_mint)),
/// pruned again when it claimed nothing: a failure no buffer holds has
/// nothing to wait for. Only that failure is pruned: one that lost its
/// last carrier elsewhere — even one of this same error, which gets a new
/// id here — stays, and takes a [`taint_with`] of its id, until the caller
/// prunes the graph ([`FailureGraph::prune`]), as the seed's `taint` left
/// it. Returns its id — which names nothing any more when the failure was
/// minted here and claimed nothing.
///
/// Cost: one look-up by the error, O(1) while at most one failure of that
/// error is held, but O(h) once a caller's [`taint_with`] of older ids
/// holds h of them at once (see [`Failures::find_held_or_mint`](crate::Failures::find_held_or_mint)),
/// then one claim change a binding.
pub fn taint<'a, F>(
    pool: &mut StreamPool<F>,
    error: ErrorInfo,
    written: impl Iterator<Item = &'a Binding>,
    graph: &mut FailureGraph,
) -> FailureId
where
    F: StreamFactory<Stream: StreamMemory>,
{
    let key = graph
        .failures
        .find_held_or_mint(&error.kind, &error.kernel, &error.message);
    let id = graph.failures.get(key).map_or(FailureId::ZERO, |f| f.id);
    taint_with(pool, id, written, graph);
    graph.failures.remove_if_unheld(key);
    id
}

/// Releases the claims on every binding in `written`: work that writes them
/// has been enqueued, so a read of one is no longer reading bytes nothing
/// wrote.
pub fn written<'a, F>(
    pool: &mut StreamPool<F>,
    written: impl Iterator<Item = &'a Binding>,
    graph: &mut FailureGraph,
) where
    F: StreamFactory<Stream: StreamMemory>,
{
    for binding in written {
        if let Some(stream) = pool.try_get_ref_mut(binding.stream) {
            stream.written(binding, graph);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        StreamAllocations, StreamFactory, StreamId, StreamMemory, StreamPool, taint, taint_with,
        written,
    };
    use crate::components::binding::Access;
    use crate::{Binding, ErrorInfo, FailureGraph};
    use alloc::vec::Vec;

    struct Factory;

    impl StreamFactory for Factory {
        type Stream = StreamAllocations;
        type Error = ErrorInfo;
        fn create(&mut self) -> Result<StreamAllocations, ErrorInfo> {
            Ok(StreamAllocations::default())
        }
    }

    /// A pool whose stream 0 holds memories 1 to `memories`, 64 bytes
    /// each, and an empty graph beside it.
    fn pool_of(memories: u64) -> (StreamPool<Factory>, FailureGraph) {
        let mut pool = StreamPool::new(Factory, 2, 0).unwrap();
        for memory in 1..=memories {
            pool.get_mut(&StreamId { value: 0 })
                .alloc(memory, 64)
                .unwrap();
        }
        (pool, FailureGraph::new())
    }

    /// Two streams given the same calls print the same, though each map
    /// in them hashes with a seed of its own (drawn anew in every run, as
    /// for two streams of one run): the allocations by memory id, and a
    /// large claim set's count of claims by failure. Before, both printed
    /// in their maps' order, so a stream's print changed from run to run.
    #[test]
    fn two_streams_given_the_same_calls_print_the_same_whatever_their_hash_seeds() {
        let print = || {
            let mut graph = FailureGraph::new();
            let mut stream = StreamAllocations::default();
            for memory in 1..=40 {
                stream.alloc(memory, 4096).unwrap();
            }
            // Memory 1 takes 40 claims of 8 failures: a set that large
            // counts its claims by failure.
            for piece in 0..40 {
                let message = alloc::format!("error {}", piece % 8);
                let key = graph
                    .failures
                    .find_held_or_mint("compile", "fill", &message);
                let id = graph.failures.get(key).unwrap().id;
                let at = Binding::range(0, 1, piece * 64, piece * 64 + 32, Access::Write);
                stream.taint(&at, id, &mut graph);
            }
            alloc::format!("{stream:?}")
        };
        let first = print();
        assert!(first.contains("counts: {"), "{first}");
        for other in 0..20 {
            assert_eq!(print(), first, "stream {other}");
        }
    }

    /// A backend that prunes seldom: every round mints a failure (the last
    /// one of that error lost its carrier), and the unheld ones stay — the
    /// caller may still hold their ids — until the caller prunes, which
    /// takes them all.
    #[test]
    fn a_pool_whose_caller_prunes_seldom_keeps_unheld_failures_until_it_prunes() {
        let (mut pool, mut graph) = pool_of(1);
        let out = Binding::whole(0, 1, Access::Write);
        for round in 0..1_000 {
            let error = ErrorInfo::new("compile", "fill", "bad PTX");
            let id = taint(&mut pool, error, [&out].into_iter(), &mut graph);
            assert_eq!(id.get(), round + 1);
            written(&mut pool, [&out].into_iter(), &mut graph);
            assert_eq!(graph.failures.len() as u64, round + 1);
        }
        assert_eq!(graph.prune(), 1_000);
        assert!(graph.failures.is_empty());
    }

    /// A backend that taints with one failure and releases it again, round
    /// after round, and never prunes: each release queues the failure for
    /// pruning, and the queue stays no longer than about twice the live
    /// failures — without dropping the key a prune must still find.
    #[test]
    fn taint_with_and_written_without_a_prune_keep_the_prune_queue_bounded() {
        let (mut pool, mut graph) = pool_of(1);
        let out = Binding::whole(0, 1, Access::Write);
        let error = ErrorInfo::new("compile", "fill", "bad PTX");
        let id = taint(&mut pool, error, [&out].into_iter(), &mut graph);
        for round in 0..100_000 {
            written(&mut pool, [&out].into_iter(), &mut graph);
            taint_with(&mut pool, id, [&out].into_iter(), &mut graph);
            assert!(
                graph.failures.queued() <= 2 + 64 + 1,
                "round {round}: {} keys queued",
                graph.failures.queued()
            );
        }
        written(&mut pool, [&out].into_iter(), &mut graph);
        assert_eq!(graph.prune(), 1);
        assert!(graph.failures.is_empty());
    }

    /// A backend that never prunes, and every round taints with the id of
    /// the failure an earlier round's error minted — through its stream's
    /// own `StreamMemory::taint`, as well as through `taint_with` — after
    /// the error was tainted again: the failures each round leaves unheld
    /// are taken out of the identity index (parked), the one held again
    /// comes back and is the one the error finds, and the list of parked
    /// keys stays no longer than about twice the live failures.
    #[test]
    fn failures_held_again_by_id_round_after_round_are_found_by_their_error_and_parking_stays_bounded()
     {
        use super::StreamMemory;
        let (mut pool, mut graph) = pool_of(2);
        let [out, other] = [1, 2].map(|m| Binding::whole(0, m, Access::Write));
        let error = || ErrorInfo::new("compile", "fill", "bad PTX");
        for round in 0..5_000u64 {
            let old = taint(&mut pool, error(), [&out].into_iter(), &mut graph);
            written(&mut pool, [&out].into_iter(), &mut graph);
            // Nothing holds `old`: the error mints anew, and `old` is parked.
            let new = taint(&mut pool, error(), [&out].into_iter(), &mut graph);
            assert_ne!(new, old, "round {round}");
            written(&mut pool, [&out].into_iter(), &mut graph);
            if round % 2 == 0 {
                pool.get_mut(&StreamId { value: 0 })
                    .taint(&other, old, &mut graph);
            } else {
                taint_with(&mut pool, old, [&other].into_iter(), &mut graph);
            }
            // SPEC §4: the held failure of that error occurs again.
            assert_eq!(
                taint(&mut pool, error(), [&out].into_iter(), &mut graph),
                old,
                "round {round}"
            );
            written(&mut pool, [&out, &other].into_iter(), &mut graph);
            assert!(
                graph.failures.parked() <= 2 * graph.failures.len() + 64 + 1,
                "round {round}: {} keys parked, {} failures",
                graph.failures.parked(),
                graph.failures.len()
            );
            // O(live failures) a check, and this backend never prunes:
            // every 250th round and the last.
            if round % 250 == 0 || round == 4_999 {
                assert_eq!(graph.failures.check_index(), Ok(()), "round {round}");
            }
        }
        assert_eq!(graph.prune(), 10_000);
        assert!(graph.failures.is_empty());
    }

    /// A backend that prunes every round, after its error was tainted
    /// again over an unheld failure of it (which parks that failure): the
    /// parked keys of failures pruned since do not pile up — also once the
    /// live failures that set how many may be kept (100 of other errors,
    /// held through the first 150 rounds) are gone.
    #[test]
    fn parked_keys_of_failures_pruned_since_do_not_pile_up() {
        let (mut pool, mut graph) = pool_of(101);
        let out = Binding::whole(0, 1, Access::Write);
        let holders: Vec<Binding> = (2..=101)
            .map(|m| Binding::whole(0, m, Access::Write))
            .collect();
        for (i, holder) in holders.iter().enumerate() {
            let message = alloc::format!("held {i}");
            let error = ErrorInfo::new("compile", "hold", &message);
            taint(&mut pool, error, [holder].into_iter(), &mut graph);
        }
        let error = || ErrorInfo::new("compile", "fill", "bad PTX");
        for round in 0..10_000 {
            let held = if round < 150 { 100 } else { 0 };
            if round == 150 {
                written(&mut pool, holders.iter(), &mut graph);
            }
            taint(&mut pool, error(), [&out].into_iter(), &mut graph);
            written(&mut pool, [&out].into_iter(), &mut graph);
            taint(&mut pool, error(), [&out].into_iter(), &mut graph);
            written(&mut pool, [&out].into_iter(), &mut graph);
            assert_eq!(graph.prune(), 2 + if round == 150 { 100 } else { 0 });
            assert_eq!(graph.failures.len(), held);
            // When this round parked its failure, the holders were live
            // up to round 150, and two failures more at most.
            let live = if round <= 150 { 100 } else { 0 } + 2;
            assert!(
                graph.failures.parked() <= 2 * live + 64 + 1,
                "round {round}: {} keys parked",
                graph.failures.parked()
            );
            // O(live failures) a check: every 50th round, the holders'
            // last and the first without them.
            if round % 50 == 0 || round == 150 || round == 151 {
                assert_eq!(graph.failures.check_index(), Ok(()), "round {round}");
            }
        }
    }

    /// A failure left unheld and never pruned lives through many
    /// compactions of the queue, driven by another failure's rounds of
    /// release and taint: each keeps its key, and the prune finds it.
    #[test]
    fn compacting_the_prune_queue_keeps_the_key_of_an_unheld_failure() {
        let (mut pool, mut graph) = pool_of(2);
        let early = Binding::whole(0, 2, Access::Write);
        let error = ErrorInfo::new("compile", "early", "bad PTX");
        taint(&mut pool, error, [&early].into_iter(), &mut graph);
        written(&mut pool, [&early].into_iter(), &mut graph);
        let out = Binding::whole(0, 1, Access::Write);
        let error = ErrorInfo::new("compile", "fill", "bad PTX");
        let fill = taint(&mut pool, error, [&out].into_iter(), &mut graph);
        for _ in 0..1_000 {
            written(&mut pool, [&out].into_iter(), &mut graph);
            taint_with(&mut pool, fill, [&out].into_iter(), &mut graph);
            assert!(graph.failures.queued() <= 2 * 2 + 64 + 1);
        }
        // "fill" is held; "early" went through every compaction unheld.
        assert_eq!(graph.prune(), 1);
        assert_eq!(graph.failures.len(), 1);
        assert!(graph.failures.key_of(fill).is_some());
    }
}
