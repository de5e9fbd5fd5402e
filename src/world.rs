//! The world: the stores, the configuration, and the public operations, each
//! a short orchestration of the [systems](crate::systems) in the order
//! SPEC.md §3 gives.

use alloc::format;
use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::components::InKeyOrder;
use crate::components::allocation::{AllocKey, Allocation, Allocations};
use crate::components::binding::{Access, Bind, Binding, MemoryRef, Resolved, Stamp};
use crate::components::claim::{ClaimSet, Origin};
use crate::components::failure::{ErrorInfo, FailureId, FailureKey};
use crate::components::record::{RecordKey, address};
use crate::components::stream::{StreamKey, StreamRef, Streams};
use crate::error::Error;
use crate::graph::FailureGraph;
use graphs::{Graph, Window};
mod answers;
mod graphs;
mod invariants;
mod launch;

pub use answers::{
    CaptureResult, Chain, ChainHop, ChainHopRef, ClaimInfo, FailureInfo, ProfileResult, ReadResult,
    RecordInfo, ScopeError, ScopeOutcome, Stats, SyncResult, TaintRef, TaintReport,
};
pub use launch::{Launch, LaunchResult, Outcome, Verdict};

use crate::systems::{
    ReadHit, Resolution, all_common, all_good, all_live, apply_taint, check_reads, check_rows,
    check_rows_from, count_unresolved, prune_failures, release_written, resolve_common,
    resolve_each, resolve_owner,
};

/// How a world is set up. The defaults are SPEC.md's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Regular stream slots; ids fold with `id % max_streams`. At least 1;
    /// default 8.
    pub max_streams: u64,
    /// Special stream slots, after the regular ones. Default 0.
    pub num_special: u16,
    /// The longest chain a skip record may end; a longer one is cut. At
    /// least 1; default 1024.
    pub chain_limit: u32,
    /// Reject unresolved bindings as bad input instead of counting them.
    /// Default off.
    pub strict: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_streams: 8,
            num_special: 0,
            chain_limit: 1024,
            strict: false,
        }
    }
}

/// The failure that doomed a window, pinned until the window ends.
#[derive(Copy, Clone, Debug)]
struct Doom {
    failure: FailureKey,
    record: Option<RecordKey>,
}

/// Within one batch call, the strings of the last launch that made a skip
/// record and of the last that failed, by address and length. Every launch
/// of a batch borrows its strings for the whole call, so the same address
/// and length is the same bytes: the look-up that string led to can be
/// reused without comparing it again (the stores still check that what it
/// found is alive). A fresh `Seen` per call: outside one call, an address
/// says nothing about the bytes behind it.
///
/// The addresses are all zero until a string is seen: no string's address
/// is zero, so a fresh `Seen` matches nothing, with no flag to test first.
#[derive(Copy, Clone, Debug, Default)]
struct Seen {
    kernel: [(usize, usize); 1],
    failure: [(usize, usize); 3],
}

/// Whether `strings` are those `seen` holds (the strings of the previous
/// launch of the same kind), by address and length, keeping theirs there
/// either way. One comparison of all the words, folded without a jump: a
/// failing launch compares six.
#[inline(always)]
fn seen_again<const N: usize>(seen: &mut [(usize, usize); N], strings: [&str; N]) -> bool {
    let this = strings.map(address);
    let differ = seen.iter().zip(&this).fold(0, |differ, (was, is)| {
        differ | (was.0 ^ is.0) | (was.1 ^ is.1)
    });
    *seen = this;
    differ == 0
}

/// The verdict of a launch that ran or was only checked.
#[inline]
fn ran_or_dry(outcome: Outcome<'_>) -> Verdict {
    match outcome {
        Outcome::DryRun => Verdict::DryRun,
        _ => Verdict::Ran,
    }
}

/// What [`plain`] asks of a launch's rows or bindings.
#[derive(Copy, Clone)]
enum Ask {
    /// Good input with nothing unresolved, whatever the launch does to the
    /// claims: good rows ([`all_good`]), bindings of the common shape
    /// ([`all_common`]).
    Good,
    /// In a quiet world, where the launch changes no claim, good input:
    /// fresh rows with no look-up, rows the world made itself (its stamp)
    /// by their live keys, any other by key and range, all in one tight
    /// loop ([`all_live`]: apart from [`all_good`], which a
    /// measurement-only merge of the two made 6–9 instructions a binding
    /// dearer for rows that are not fresh).
    Live,
    /// Good input of which nothing but a dead binding names a claimed
    /// allocation: a launch that does not fail then reads clean bytes and
    /// releases nothing, and nothing changes but its number.
    Unclaimed,
}

/// Whether a launch is on a regular stream and its rows or bindings are
/// what `ask` asks.
#[inline(always)]
fn plain<B: Bind>(
    launch: &Launch<'_, B>,
    streams: &Streams,
    allocs: &Allocations,
    stamp: &Stamp,
    ask: Ask,
) -> bool {
    let unclaimed = matches!(ask, Ask::Unclaimed);
    matches!(launch.stream, StreamRef::Id(_))
        && match (B::as_rows(launch.bindings), ask) {
            (Some(rows), Ask::Live) => all_live(rows, allocs, stamp),
            (Some(rows), _) => all_good(rows, allocs, stamp, unclaimed),
            (None, _) => all_common(
                B::as_bindings(launch.bindings).unwrap_or_default(),
                streams,
                allocs,
                unclaimed,
            ),
        }
}

/// The world: streams, allocations, their claims, failures and skip
/// records, and the operations of SPEC.md.
///
/// Every method that can reject its input returns a `Result`; on `Err` the
/// world is exactly as it was before the call (`device_fault`, which takes
/// any error, returns nothing). Nothing reachable from input panics.
/// The world holds no locks and is `Send` and `Sync`, so a scheduler can
/// keep it on its device thread (`tests/device_thread.rs`). Shared behind a
/// lock, it wants a `Mutex` more than an `RwLock`: a read
/// ([`read`](Self::read), [`read_failure`](Self::read_failure)) takes
/// `&mut self`, since it counts bindings that resolve to nothing, and
/// [`scope`](Self::scope) holds it while its body, the GPU work, runs (a
/// body that takes the same lock deadlocks). A body that panics poisons
/// the lock but leaves the world whole, its write set torn down, so taking
/// the world out of the poisoned lock is safe. Its only state outside
/// itself is one process-wide atomic counter, from which each world (and
/// each clone) draws the stamp that marks the rows it makes (see
/// [`Resolved`]), and the seed hashbrown's default hasher draws once a
/// process for the memory-id index; neither changes an answer, and two
/// worlds on two threads share nothing else.
///
/// ```
/// use taintworld::{Access, Binding, Launch, Outcome, ReadResult, Verdict, World};
///
/// let mut world = World::default();
/// world.alloc(0, 1, 1024)?; // input
/// world.alloc(0, 2, 1024)?; // output
///
/// // `fill` fails to compile: the bytes it was to write carry the failure.
/// let fill = [Binding::whole(0, 1, Access::Write)];
/// let failed = world.launch(&Launch {
///     kernel: "fill",
///     stream: 0.into(),
///     bindings: &fill,
///     outcome: Outcome::Failed { kind: "compile", message: "bad PTX" },
/// })?;
/// assert!(matches!(failed.verdict, Verdict::Failed(_)));
///
/// // `gelu` reads them: it is skipped, and its output is tainted too.
/// let gelu = [Binding::whole(0, 1, Access::Read), Binding::whole(0, 2, Access::Write)];
/// let skipped = world.launch(&Launch { kernel: "gelu", stream: 0.into(), bindings: &gelu, outcome: Outcome::Ok })?;
/// assert!(matches!(skipped.verdict, Verdict::Skipped { needed: 1, .. }));
///
/// // Reading the output back says why: the root error, and the chain.
/// let ReadResult::Tainted(report) = world.read(&Binding::whole(0, 2, Access::Read))? else {
///     panic!("the output carries the failure")
/// };
/// assert_eq!(report.error.kernel, "fill");
/// assert_eq!(report.chain[0].kernel, "gelu");
/// # Ok::<(), taintworld::Error>(())
/// ```
pub struct World {
    config: Config,
    streams: Streams,
    allocs: Allocations,
    graph: FailureGraph,
    /// Reused for every call's resolved rows: a launch allocates nothing
    /// once it has grown to the widest launch seen, and a batch that is
    /// resolved whole (see [`launch_batch`](Self::launch_batch)) grows it
    /// to all of its bindings. [`shrink_buffers`](Self::shrink_buffers)
    /// gives the room back.
    rows: Vec<Resolved>,
    /// Reused by a checked replay: where each recorded launch's rows end in
    /// `rows`.
    ends: Vec<usize>,
    launches: u64,
    unresolved: u64,
    windows: HashMap<u64, Window>,
    graphs: HashMap<u64, Graph>,
    /// Open profiles, each with the profile epoch it began in: the number
    /// of failures open profiles had seen first when it began. A profile
    /// begun in the current epoch has seen no failure; one begun in an
    /// earlier epoch `e` saw `profile_failures[e]` first.
    profiles: HashMap<u64, u64>,
    /// The failure that ended each epoch, with the open profiles begun in
    /// it (all of which saw it first): kept once for them all, and let go
    /// with the last of them. A failure that finds clean profiles costs
    /// one entry, not one error copied into each profile, and a later
    /// failure does not look at the profiles at all (one profile left open
    /// made every failure walk every open profile, and 10,000 open
    /// profiles seeing a 1 MiB message held 10 GB).
    profile_failures: HashMap<u64, ProfileFailure>,
    /// The current profile epoch.
    profile_epoch: u64,
    /// How many open profiles have not seen a failure yet (those begun in
    /// the current epoch): the failure path looks at profiles only when
    /// this is non-zero.
    clean_profiles: usize,
    fault: Option<ErrorInfo>,
    /// Marks the rows this world makes, so it can tell them from rows
    /// kept from another world (see [`Resolved`]); a clone draws its own.
    stamp: Stamp,
    /// Whether the last launch settled one at a time bound a claimed
    /// allocation. The next is then likely to as well (a chain of skips),
    /// so it goes straight to being resolved and settled, without first
    /// asking whether it touches anything claimed. Only the order of the
    /// work depends on it, never an answer.
    touched_last: bool,
}

/// A copy of everything the world holds, its scratch buffers as roomy as
/// this world's but empty (their contents mean nothing between calls), and
/// a stamp of its own. Derived, the scratch rows came with only as much
/// room as the last call left in them, so a clone's first wider launch
/// allocated them, which a new world (it reserves them) and its original
/// do not. The stores of allocations, failures and skip records keep their
/// room as well, so that a clone's first new allocation, failure or skip
/// allocates what its original's would; claim sets, the streams and open
/// capture windows are copied at their size (one that shrank may grow the
/// first time it needs to).
impl Clone for World {
    fn clone(&self) -> Self {
        World {
            config: self.config,
            streams: self.streams.clone(),
            allocs: self.allocs.clone(),
            graph: self.graph.clone(),
            rows: Vec::with_capacity(self.rows.capacity()),
            ends: Vec::with_capacity(self.ends.capacity()),
            launches: self.launches,
            unresolved: self.unresolved,
            windows: self.windows.clone(),
            graphs: self.graphs.clone(),
            profiles: self.profiles.clone(),
            profile_failures: self.profile_failures.clone(),
            profile_epoch: self.profile_epoch,
            clean_profiles: self.clean_profiles,
            fault: self.fault.clone(),
            stamp: self.stamp.clone(),
            touched_last: self.touched_last,
        }
    }
}

/// Everything the world holds, without the scratch buffers a call reuses
/// (`rows`, `ends`), the hint that orders a single launch's work
/// (`touched_last`, never an answer) or the stamp its rows carry (a clone
/// draws its own): a call that returns `Err` leaves the print as it
/// was, and a clone prints as its original. Maps keyed by id print in id
/// order, so a graph taken out and put back by a replay prints where it
/// was.
///
/// Two worlds built apart by the same calls need not print the same, in
/// one run or in two: each of their hashed indexes has a seed of its own,
/// drawn anew in every run, and prints as it lies, so that a call that
/// moved a table without changing an answer still shows — the allocation
/// store's memory-id index (its hasher, its entries in table order, each
/// row's place in it), the stream store's slot index, the failure store's
/// identity and id indexes and the identity hashes it keeps, and the
/// record store's kernel-name index and hashes, with the address of each
/// registered kernel name. To compare two worlds, compare what they answer
/// ([`World::claims`], [`World::failures`], [`World::skip_records`]: the
/// same, in the same order, for the same calls), or build the second as a
/// clone of the first.
impl core::fmt::Debug for World {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("World")
            .field("config", &self.config)
            .field("streams", &self.streams)
            .field("allocs", &self.allocs)
            .field("graph", &self.graph)
            .field("launches", &self.launches)
            .field("unresolved", &self.unresolved)
            .field("windows", &InKeyOrder(&self.windows))
            .field("graphs", &InKeyOrder(&self.graphs))
            .field("profiles", &Profiles(self))
            .field("clean_profiles", &self.clean_profiles)
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

/// The open profiles in id order, each with the first failure it saw (id
/// and error), as a profile's answer would say: not the epochs they are
/// kept by.
struct Profiles<'a>(&'a World);

impl core::fmt::Debug for Profiles<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let w = self.0;
        let mut entries: Vec<_> = w
            .profiles
            .iter()
            .map(|(&id, epoch)| {
                let seen = w.profile_failures.get(epoch);
                (id, seen.map(|s| (s.failure, &s.error)))
            })
            .collect();
        entries.sort_unstable_by_key(|&(id, _)| id);
        f.debug_map().entries(entries).finish()
    }
}

/// The first failure the open profiles begun in one epoch saw (id and
/// error as they were then), and how many of them are open.
#[derive(Clone)]
struct ProfileFailure {
    failure: FailureId,
    error: ErrorInfo,
    open: usize,
}

impl Default for World {
    fn default() -> Self {
        // The default configuration is valid.
        match World::new(Config::default()) {
            Ok(world) => world,
            Err(_) => unreachable!("the default configuration is valid"),
        }
    }
}

/// Rows a fresh world has room for, so that the first launches allocate
/// nothing either.
const ROWS_RESERVED: usize = 64;

impl World {
    /// The kernel a host write's failure names (SPEC §5).
    pub const HOST_WRITE_KERNEL: &'static str = "host_write";

    /// The kernel a failed reservation's failure names (SPEC §6a).
    pub const ALLOC_KERNEL: &'static str = "alloc";

    /// The kernel a device fault's error names (SPEC §6).
    pub const DEVICE_KERNEL: &'static str = "device";

    /// The kernel a failed replay of graph `graph` names (SPEC §6):
    /// `graph:<id>`.
    pub fn graph_kernel(graph: u64) -> alloc::string::String {
        format!("graph:{graph}")
    }

    /// A world with `config`. `max_streams` and `chain_limit` must be at
    /// least 1, and `max_streams + num_special` must fit in a `u64`.
    ///
    /// # Errors
    ///
    /// - [`Error::ZeroChainLimit`]: `chain_limit` is 0 (checked first).
    /// - [`Error::ZeroStreams`]: `max_streams` is 0.
    /// - [`Error::SlotOverflow`]: `max_streams + num_special` does not fit
    ///   in a `u64`.
    pub fn new(config: Config) -> Result<Self, Error> {
        if config.chain_limit == 0 {
            return Err(Error::ZeroChainLimit);
        }
        Ok(World {
            streams: Streams::new(config.max_streams, config.num_special)?,
            config,
            allocs: Allocations::default(),
            graph: FailureGraph::default(),
            rows: Vec::with_capacity(ROWS_RESERVED),
            ends: Vec::new(),
            launches: 0,
            unresolved: 0,
            windows: HashMap::default(),
            graphs: HashMap::default(),
            profiles: HashMap::default(),
            profile_failures: HashMap::default(),
            profile_epoch: 0,
            clean_profiles: 0,
            fault: None,
            stamp: Stamp::mint(),
            touched_last: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many launches were processed: the next launch's number.
    pub fn launches(&self) -> u64 {
        self.launches
    }

    /// The stream store.
    pub fn streams(&self) -> &Streams {
        &self.streams
    }

    /// The allocation store.
    pub fn allocations(&self) -> &Allocations {
        &self.allocs
    }

    /// The failure graph: the failures and the skip records that carry
    /// their provenance. (A captured CUDA graph is another thing, which
    /// [`has_graph`](Self::has_graph) and [`replay`](Self::replay) name by
    /// its id.)
    pub fn failure_graph(&self) -> &FailureGraph {
        &self.graph
    }

    /// Initializes `stream`'s slot, as the embedding program does when it
    /// asks for a stream explicitly.
    ///
    /// # Errors
    ///
    /// - [`Error::SpecialOutOfRange`]: `stream` is a special stream at or
    ///   past `num_special`.
    ///
    /// On `Err` no slot is initialized and the world is unchanged.
    pub fn initialize_stream(&mut self, stream: impl Into<StreamRef>) -> Result<StreamKey, Error> {
        let slot = self.streams.slot_of(stream.into())?;
        Ok(self.streams.initialize(slot))
    }

    /// Makes room for the next `additional` allocations, so that a
    /// scheduler that knows how many buffers it will hold can have the
    /// world's stores grow once, when it sets up, instead of doubling
    /// (and copying) on some [`alloc`](Self::alloc) later, in its loop.
    /// Once it returns `Ok`, the next `additional` allocations made, frees
    /// in between or not, allocate nothing of their own, on a stream
    /// already initialized (a stream's first allocation initializes it,
    /// which may allocate: [`initialize_stream`](Self::initialize_stream)
    /// does that first). An allocation made failed
    /// ([`alloc_failed`](Self::alloc_failed)) still allocates for its
    /// failure's strings.
    ///
    /// Room the stores grow into is theirs until the world is dropped:
    /// [`shrink_buffers`](Self::shrink_buffers) does not give it back.
    ///
    /// # Errors
    ///
    /// - [`Error::NoRoom`]: `additional` more allocations than are live
    ///   would overflow a store's size, or the allocator refused the room.
    ///   Where the stores' own growth on [`alloc`](Self::alloc) would
    ///   abort, this asks first and says so.
    ///
    /// On `Err` no allocation is made or freed and every answer is as it
    /// was (a store that grew before another refused keeps its room).
    ///
    /// ```
    /// use taintworld::{Error, World};
    ///
    /// let mut world = World::default();
    /// world.initialize_stream(0)?;
    /// world.reserve_allocations(1_000)?;
    /// for memory in 0..1_000 {
    ///     world.alloc(0, memory, 4096)?; // none of these grows a store
    /// }
    /// assert_eq!(
    ///     world.reserve_allocations(usize::MAX),
    ///     Err(Error::NoRoom { additional: usize::MAX })
    /// );
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn reserve_allocations(&mut self, additional: usize) -> Result<(), Error> {
        self.allocs.try_reserve(additional)
    }

    /// Makes allocation `memory` of `size` bytes on `stream`, initializing
    /// the stream's slot. The size is declared, never turned into memory.
    /// A memory id that is already live is bad input.
    ///
    /// Cost: O(1) expected — a slot-map insert and a hash insert of the
    /// memory id; about 130 bytes a clean allocation, whatever its size,
    /// and the stores' room, which doubles with them: 147 to 258 bytes
    /// all told measured from 1,000 to 1,000,000 allocations (see
    /// [`Allocations`]).
    ///
    /// # Errors
    ///
    /// - [`Error::SpecialOutOfRange`]: `stream` is a special stream at or
    ///   past `num_special`.
    /// - [`Error::DuplicateMemory`]: `memory` is the id of a live
    ///   allocation (a freed one's id may be used again).
    ///
    /// On `Err` no allocation is made, the stream's slot is not initialized,
    /// and the world is unchanged.
    pub fn alloc(
        &mut self,
        stream: impl Into<StreamRef>,
        memory: u64,
        size: u64,
    ) -> Result<AllocKey, Error> {
        self.make_alloc(stream.into(), memory, size, None)
    }

    /// Makes allocation `memory` whose reservation failed (SPEC §6a): the id
    /// is live but no memory backs it, and it carries a failure of kernel
    /// `alloc` on every byte until it is freed — writes do not release it
    /// and taints do not replace it. A zero-size one carries nothing.
    ///
    /// # Errors
    ///
    /// As for [`alloc`](Self::alloc):
    ///
    /// - [`Error::SpecialOutOfRange`]: `stream` is a special stream at or
    ///   past `num_special`.
    /// - [`Error::DuplicateMemory`]: `memory` is the id of a live
    ///   allocation.
    ///
    /// On `Err` no allocation is made and no failure is minted or occurs:
    /// the world is unchanged.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Outcome, ReadResult, World};
    ///
    /// let mut world = World::default();
    /// world.alloc_failed(0, 4, 1 << 20, "out_of_memory", "cudaMalloc failed")?;
    /// world.host_write(&Binding::whole(0, 4, Access::Write), Outcome::Ok)?; // releases nothing
    /// let ReadResult::Tainted(why) = world.read(&Binding::range(0, 4, 0, 16, Access::Read))? else { unreachable!() };
    /// assert_eq!(why.error.kernel, "alloc");
    /// world.free(4)?; // only freeing ends it
    /// assert_eq!(world.stats().live_failures, 0);
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn alloc_failed(
        &mut self,
        stream: impl Into<StreamRef>,
        memory: u64,
        size: u64,
        kind: &str,
        message: &str,
    ) -> Result<AllocKey, Error> {
        self.make_alloc(stream.into(), memory, size, Some((kind, message)))
    }

    /// Makes an allocation, unbacked when `failed` names its failure.
    /// Always in line, so that [`alloc`](Self::alloc), which passes none,
    /// keeps none of the unbacked path: out of line it was a call with
    /// that path's registers saved on every allocation (the warm ResNet
    /// step counted 1,129.8 instructions a launch with it, 1,108.1 in
    /// line).
    #[inline(always)]
    fn make_alloc(
        &mut self,
        stream: StreamRef,
        memory: u64,
        size: u64,
        failed: Option<(&str, &str)>,
    ) -> Result<AllocKey, Error> {
        let slot = self.streams.slot_of(stream)?;
        let Some(vacancy) = self.allocs.vacancy(memory) else {
            return Err(Error::DuplicateMemory { memory });
        };
        self.streams.initialize(slot);
        let unbacked = failed.map(|(kind, message)| {
            self.graph
                .failures
                .find_or_mint(kind, Self::ALLOC_KERNEL, message)
        });
        let mut claims = ClaimSet::default();
        // Whether the set took a claim: `taint` of an empty set says so.
        let claimed = unbacked.is_some_and(|failure| {
            let g = &mut self.graph;
            claims.taint(
                0,
                size,
                failure,
                Origin::Root,
                &mut g.failures,
                &mut g.records,
            )
        });
        let allocation = Allocation {
            memory,
            slot,
            size,
            claims,
            unbacked,
        };
        let key = vacancy.fill(allocation, claimed);
        self.prune();
        Ok(key)
    }

    /// Frees an allocation: its claims go (their failures lose a carrier and
    /// are pruned if nothing else holds them), and its memory id may be
    /// reused by a new allocation that inherits nothing.
    ///
    /// Cost: O(1) expected for a clean allocation; O(claims) for a claimed
    /// one, plus the failures and skip records only its claims held.
    ///
    /// # Errors
    ///
    /// - [`Error::UnknownMemory`]: `memory` is a memory id no live
    ///   allocation has.
    /// - [`Error::UnknownKey`]: `memory` is an [`AllocKey`] that names no
    ///   live allocation (its allocation was freed, or it is another
    ///   world's key with nothing at its slot and version here). Strict
    ///   mode or not.
    ///
    /// On `Err` nothing is freed and the world is unchanged.
    pub fn free(&mut self, memory: impl Into<MemoryRef>) -> Result<(), Error> {
        let g = &mut self.graph;
        // The footprint goes with the row; no flag to keep. Nothing
        // changes unless the allocation is alive.
        match memory.into() {
            MemoryRef::Id(memory) => {
                if !self
                    .allocs
                    .free_memory(memory, &mut g.failures, &mut g.records)
                {
                    return Err(Error::UnknownMemory { memory });
                }
            }
            MemoryRef::Key(key) => {
                if !self.allocs.free(key, &mut g.failures, &mut g.records) {
                    return Err(Error::UnknownKey { key });
                }
            }
        }
        self.stamp.freed();
        self.prune();
        Ok(())
    }

    /// Processes one launch (SPEC §3): resolve, check the reads, then skip,
    /// fail or release, then prune. The launch binds [`Binding`]s, resolved
    /// here, or pre-resolved [`Resolved`] rows, only checked (see
    /// [`resolve_binding`](Self::resolve_binding)).
    ///
    /// Cost: per binding one look-up by key (or one hash probe by memory
    /// id) and, where its allocation is claimed, a binary search of the
    /// allocation's sorted claims — O(bindings × log claims); a write that
    /// carves through k claims adds O(k), a skip one record. A launch that
    /// does not fail and binds nothing claimed is answered from that one
    /// look-up a binding, with no rows made, whether or not a failure lives
    /// elsewhere — unless the launch settled before it bound something
    /// claimed, as in a chain of skips, where asking first would be wasted:
    /// then it is resolved and settled, and the launch after it asks again
    /// if it bound nothing claimed. No heap allocation when nothing is
    /// claimed, nor when each binding taints or releases one range
    /// (`tests/no_heap_on_hot_path.rs`), but for a failure new to the
    /// world: it keeps its error's three strings, in the room of the
    /// failure removed last where they fit, so a failure that comes and
    /// goes allocates them once.
    ///
    /// # Errors
    ///
    /// Bad input, found before the launch settles:
    ///
    /// - [`Error::SpecialOutOfRange`]: the launch's stream, or a binding's,
    ///   is a special stream at or past `num_special`.
    /// - [`Error::RangeReversed`]: a binding's range ends before it starts,
    ///   whether the binding resolves or not (dead bindings too).
    /// - [`Error::KeyRangeReversed`]: the same, on a binding that names a
    ///   stale [`AllocKey`].
    /// - [`Error::RangePastEnd`]: a binding that resolves (dead ones too),
    ///   or a pre-resolved row, has a range past its allocation's end.
    /// - [`Error::Unresolved`], in strict mode only: a binding does not
    ///   resolve — its memory id names no live allocation, or the
    ///   allocation it names was made on another slot than its stream's.
    /// - [`Error::UnknownKey`], in strict mode only: a binding or a
    ///   pre-resolved row names a stale [`AllocKey`].
    ///
    /// The launch's stream is checked first, then the bindings in order,
    /// and the first bad one is the error:
    /// [`binding_at_fault`](Self::binding_at_fault) says which binding it
    /// is. On `Err` the launch takes no number, no binding is counted as
    /// unresolved, and the world is unchanged.
    pub fn launch<B: Bind>(&mut self, launch: &Launch<'_, B>) -> Result<LaunchResult, Error> {
        if !self.touched_last
            && matches!(launch.outcome, Outcome::Ok | Outcome::DryRun)
            && self.windows.is_empty()
        {
            if self.graph.failures.is_empty() {
                // No failure exists, so no byte is claimed: a launch that
                // does not fail reads clean bytes and runs (or is only
                // checked), and needs no rows — only its input checked, as
                // in a clean batch.
                let unresolved = self.count_unresolved_when_quiet(launch)?;
                self.unresolved = self.unresolved.saturating_add(unresolved);
                return Ok(self.numbered(ran_or_dry(launch.outcome)));
            }
            if self.binds_nothing_claimed(launch) {
                // A failure lives, but nothing this launch binds is
                // claimed: the same answer, from one look-up a binding and
                // no rows.
                return Ok(self.numbered(ran_or_dry(launch.outcome)));
            }
        }
        self.launch_settled(launch)
    }

    /// Whether `launch` is on a regular stream, good input with nothing
    /// unresolved, and binds nothing claimed but by a dead binding: with no
    /// capture window open, such a launch that does not fail reads clean
    /// bytes and releases nothing, and its answer is its number alone. What
    /// [`launch`](Self::launch) asks of one launch beside a failure, and
    /// [`launch_batch`](Self::launch_batch) of each of a batch's.
    #[inline(always)]
    fn binds_nothing_claimed<B: Bind>(&self, launch: &Launch<'_, B>) -> bool {
        plain(
            launch,
            &self.streams,
            &self.allocs,
            &self.stamp,
            Ask::Unclaimed,
        )
    }

    /// Whether no failure is alive and no capture window open: then no byte
    /// is claimed, and a launch that cannot fail only needs its input
    /// checked.
    #[inline]
    fn quiet(&self) -> bool {
        self.graph.failures.is_empty() && self.windows.is_empty()
    }

    /// How many of a launch's bindings (or rows) are unresolved, or the
    /// error that makes it bad input — all a launch that cannot fail needs
    /// in a world where no byte is claimed. Rows this world made (its
    /// stamp) whose keys are all live are good (their ranges were checked
    /// when they were made); others are looked at again to count stale
    /// ones or name the error.
    #[inline(always)]
    fn count_unresolved_when_quiet<B: Bind>(&self, launch: &Launch<'_, B>) -> Result<u64, Error> {
        if let StreamRef::Special(_) = launch.stream {
            self.streams.slot_of(launch.stream)?;
        }
        let (allocs, strict) = (&self.allocs, self.config.strict);
        match B::as_rows(launch.bindings) {
            Some(rows) if all_live(rows, allocs, &self.stamp) => Ok(0),
            // Out of line: rows another world made, or stale ones.
            Some(rows) => check_rows_from(rows, 0, false, allocs, strict).map(|r| r.unresolved),
            None => count_unresolved(
                B::as_bindings(launch.bindings).unwrap_or_default(),
                &self.streams,
                allocs,
                strict,
            ),
        }
    }

    /// [`launch`](Self::launch) in a world where something may be claimed:
    /// resolve (or check the rows), then settle. Out of line, so that the
    /// clean launch above stays small.
    #[inline(never)]
    fn launch_settled<B: Bind>(&mut self, launch: &Launch<'_, B>) -> Result<LaunchResult, Error> {
        let slot = self.streams.slot_of(launch.stream)?;
        let resolution = match B::as_rows(launch.bindings) {
            // Pre-resolved: checked in place, settled on the caller's rows.
            Some(rows) => self.check_kept(rows)?,
            None => self.resolve(B::as_bindings(launch.bindings).unwrap_or_default())?,
        };
        self.touched_last = resolution.claimed;
        if !resolution.claimed && launch.outcome == Outcome::Ok && self.windows.is_empty() {
            return Ok(self.numbered(Verdict::Ran));
        }
        let seen = &mut Seen::default();
        if let Some(rows) = B::as_rows(launch.bindings) {
            return Ok(self.settle_launch(launch.kernel, slot, rows, launch.outcome, seen));
        }
        let rows = core::mem::take(&mut self.rows);
        let result = self.settle_launch(launch.kernel, slot, &rows, launch.outcome, seen);
        self.rows = rows;
        Ok(result)
    }

    /// Resolves `binding` once, for a scheduler to keep and bind in later
    /// launches as a pre-resolved row ([`Resolved`]): the row stays what the
    /// binding resolves to for as long as its allocation lives. `Ok(None)`
    /// when it does not resolve (not counted: this is a question, not a
    /// launch; strict mode rejects it as a launch would). Bad input as for a
    /// launch's binding.
    ///
    /// # Errors
    ///
    /// Those of a launch's binding, on the same conditions (see
    /// [`launch`](Self::launch)), the binding checked as a read whatever
    /// its access:
    /// [`Error::SpecialOutOfRange`], [`Error::RangeReversed`],
    /// [`Error::KeyRangeReversed`], [`Error::RangePastEnd`], and in strict
    /// mode [`Error::Unresolved`] and [`Error::UnknownKey`].
    /// Outside strict mode a binding that does not resolve is `Ok(None)`.
    ///
    /// It only asks: the world is unchanged, `Ok` or `Err`.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Launch, Outcome, Verdict, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 4096)?;
    /// world.alloc(0, 2, 4096)?;
    /// let rows = [
    ///     world.resolve_binding(&Binding::whole(0, 1, Access::Read))?.expect("live"),
    ///     world.resolve_binding(&Binding::whole(0, 2, Access::Write))?.expect("live"),
    /// ];
    /// let step = Launch { kernel: "gelu", stream: 0.into(), bindings: &rows[..], outcome: Outcome::Ok };
    /// assert_eq!(world.launch(&step)?.verdict, Verdict::Ran);
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn resolve_binding(&self, binding: &Binding) -> Result<Option<Resolved>, Error> {
        // Resolved as a read, so that a dead binding gets its row too.
        let read = Binding {
            access: Access::Read,
            ..*binding
        };
        let mut row = None;
        resolve_each(
            core::slice::from_ref(&read),
            &self.streams,
            &self.allocs,
            self.config.strict,
            |r| row = Some(r),
        )?;
        Ok(row.map(|r| Resolved {
            access: binding.access,
            made_by: self.stamp.made(),
            epoch: self.stamp.epoch(),
            ..r
        }))
    }

    /// Which of a launch's bindings (or pre-resolved rows) `error` is
    /// about: the first that, asked alone, is the same bad input — what a
    /// scheduler shows beside the error (the `replay` command's
    /// `in bindings[i]`). `None` for an error that is no single binding's
    /// (the launch's stream, say) — unless some binding, asked alone, is
    /// that same error: a launch on a special stream past `num_special`
    /// with a binding on that stream gets that binding named, since the
    /// error alone cannot tell the two apart (the launch's stream is
    /// checked first, so that is the one it is about).
    ///
    /// The error names the memory id (or a stale key) but not the
    /// binding's place: carrying a position through the resolution loops
    /// would cost every launch, where this asks again only after an
    /// error. It finds the binding because the world checks a launch's
    /// bindings in order and stops at the first that is bad input, and a
    /// call that returns `Err` changes nothing. Ask before
    /// the world changes. For a batch, pass the bad launch's bindings and
    /// the error out of its wrapping ([`Error::batch_index`],
    /// [`Error::inner`]). O(bindings).
    ///
    /// ```
    /// use taintworld::{Access, Binding, Launch, Outcome, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 64)?;
    /// world.alloc(0, 2, 16)?;
    /// let bindings = [Binding::whole(0, 1, Access::Read), Binding::range(0, 2, 0, 32, Access::Write)];
    /// let step = Launch { kernel: "copy", stream: 0.into(), bindings: &bindings[..], outcome: Outcome::Ok };
    /// let error = world.launch(&step).unwrap_err();
    /// assert_eq!(world.binding_at_fault(&bindings, &error), Some(1));
    /// assert_eq!(error.to_string(), "range [0, 32) runs past the end of memory 2 (size 16)");
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn binding_at_fault<B: Bind>(&self, bindings: &[B], error: &Error) -> Option<usize> {
        match B::as_rows(bindings) {
            Some(rows) => rows.iter().position(|row| {
                let alone =
                    check_rows(core::slice::from_ref(row), &self.allocs, self.config.strict);
                alone.err().as_ref() == Some(error)
            }),
            None => B::as_bindings(bindings)?
                .iter()
                .position(|binding| self.resolve_binding(binding).err().as_ref() == Some(error)),
        }
    }

    /// Registers a kernel name the scheduler launches by this very string,
    /// so that a skip of it finds its interned name by the string's address
    /// (one hash of a pointer) instead of reading and hashing the name —
    /// what rows are to bindings, this is to kernel names. Nothing else
    /// changes: a launch names its kernel as before, and any other copy of
    /// the name is the same kernel, found the slow way. The name stays
    /// interned for the world's life, so register the kernels a scheduler
    /// has, not names read from input; registering it again does nothing.
    /// Allocates (off the hot path), so register before launching.
    ///
    /// Register the string the launches will name: a `static`, or a name
    /// leaked once per kernel. A `const` is copied where it is used, and
    /// its copies need not share an address.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Launch, Outcome, ReadResult, World};
    ///
    /// static GELU: &str = "gelu";
    /// let mut world = World::default();
    /// world.register_kernel(GELU);
    /// world.alloc(0, 1, 64)?;
    /// world.alloc(0, 2, 64)?;
    /// world.launch(&Launch {
    ///     kernel: "fill",
    ///     stream: 0.into(),
    ///     bindings: &[Binding::whole(0, 1, Access::Write)],
    ///     outcome: Outcome::Failed { kind: "compile", message: "bad PTX" },
    /// })?;
    /// let gelu = [Binding::whole(0, 1, Access::Read), Binding::whole(0, 2, Access::Write)];
    /// world.launch(&Launch { kernel: GELU, stream: 0.into(), bindings: &gelu, outcome: Outcome::Ok })?;
    /// let ReadResult::Tainted(why) = world.read(&Binding::whole(0, 2, Access::Read))? else {
    ///     unreachable!("gelu was skipped")
    /// };
    /// assert_eq!(why.chain[0].kernel, "gelu");
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn register_kernel(&mut self, name: &'static str) {
        self.graph.records.register_kernel(name);
    }

    /// The next launch number with `verdict`, for a launch that changes
    /// nothing else: one that read clean bytes and ran with nothing it
    /// writes claimed and no capture window open, or a dry run.
    #[inline]
    fn numbered(&mut self, verdict: Verdict) -> LaunchResult {
        let number = self.launches;
        self.launches = self.launches.saturating_add(1);
        LaunchResult {
            launch: number,
            verdict,
        }
    }

    /// Gives back the room the world's reused buffers grew to (the rows of
    /// the largest batch resolved whole, see
    /// [`launch_batch`](Self::launch_batch)), for a scheduler that made one
    /// huge batch and will not make another soon. They keep the room a new
    /// world starts with, so launches as wide as that still allocate
    /// nothing; nothing else changes, and the next call that needs more
    /// room allocates it again. It gives back as well the strings of the
    /// failure removed last, kept for the next failure minted (up to 1 KiB
    /// a string), which then allocates its own. Rows that never grew past
    /// a new world's room are left as they are: calling it often
    /// allocates nothing.
    pub fn shrink_buffers(&mut self) {
        if self.rows.capacity() > ROWS_RESERVED {
            self.rows = Vec::with_capacity(ROWS_RESERVED);
        }
        self.ends = Vec::new();
        self.graph.failures.give_back_spare();
    }

    /// Processes a batch of launches in order, appending one result per
    /// launch to `results`. The results and the final state are exactly
    /// those of calling [`launch`](Self::launch) on each in turn.
    ///
    /// Cost: that of [`launch`](Self::launch) for each, after one first
    /// pass over the batch; a batch of launches that all ran, in a world
    /// where nothing is claimed, is that first pass alone, and so is one
    /// in a world that holds a failure (but no open capture window) where
    /// no launch fails and none binds anything claimed.
    ///
    /// Launches cannot make or free allocations, so every binding of the
    /// batch is resolved (every pre-resolved row checked) first, in one
    /// pass: bad input anywhere in the batch is found before anything
    /// changes, and the error names the launch. On `Err`, `results` is as it
    /// was.
    ///
    /// Memory: a batch that is not answered by its first pass alone keeps
    /// its bindings' rows in a buffer the world reuses, 32 bytes a binding,
    /// and the buffer keeps the room of the largest such batch (a batch of
    /// 100,000 launches of 4 bindings: 16 MiB) until
    /// [`shrink_buffers`](Self::shrink_buffers).
    ///
    /// # Errors
    ///
    /// - [`Error::InBatch`]: any error [`launch`](Self::launch) returns,
    ///   for the first launch of the batch that is bad input, wrapped with
    ///   that launch's index in `launches`. Every error comes so wrapped;
    ///   [`Error::inner`] takes it out.
    ///
    /// The whole batch is checked before any launch settles: on `Err` no
    /// launch of it was processed (none takes a number), `results` is as
    /// it was, and the world is unchanged.
    pub fn launch_batch<B: Bind>(
        &mut self,
        launches: &[Launch<'_, B>],
        results: &mut Vec<LaunchResult>,
    ) -> Result<(), Error> {
        if self.quiet() {
            if let Some(done) = self.launch_batch_clean(launches, results) {
                return done;
            }
        } else if self.launch_batch_unclaimed(launches, results) {
            return Ok(());
        }
        if B::as_rows(&[]).is_some() {
            return self.launch_batch_rows(launches, results);
        }
        // Every launch resolved into rows first: bad input anywhere in the
        // batch is found before anything changes. Launches make and free no
        // allocation, so the rows stay right while the launches settle.
        let mut rows = core::mem::take(&mut self.rows);
        if !self.resolve_plain(launches, &mut rows) {
            match self.resolve_batch(launches, &mut rows) {
                Ok(unresolved) => self.unresolved = self.unresolved.saturating_add(unresolved),
                Err(error) => {
                    self.rows = rows;
                    return Err(error);
                }
            }
        }
        // Either pass leaves a row for every binding, so a launch's rows are
        // the next as many as its bindings.
        let seen = &mut Seen::default();
        let mut unsettled = rows.as_slice();
        results.extend(launches.iter().map(|launch| {
            let count = B::as_bindings(launch.bindings).map_or(0, <[Binding]>::len);
            let (mine, rest) = unsettled
                .split_at_checked(count)
                .unwrap_or((unsettled, &[]));
            unsettled = rest;
            let slot = self.streams.checked_slot(launch.stream);
            self.settle_launch(launch.kernel, slot, mine, launch.outcome, seen)
        }));
        self.rows = rows;
        Ok(())
    }

    /// The first pass of [`launch_batch`](Self::launch_batch) over plain
    /// bindings — every launch on a regular stream, every binding of the
    /// common shape — into `rows` (cleared first): one row a binding, dead
    /// ones included (see [`resolve_common`]), in launch order, with
    /// nothing to count; `false` at the first launch that is not plain, for
    /// the general pass to take the batch. Until the thirty-fifth session
    /// both passes left dead bindings out and kept each launch's row end
    /// and slot beside the rows: W4 with bindings counted
    /// 284.0 instructions a launch then, 271.0 without the list, and W2
    /// 564.4 a skip, 552.4 without it (`scripts/instruction-counts`).
    ///
    /// Out of line, a call a batch: in line, the loop shared
    /// `launch_batch`'s registers with the settling and kept the rows'
    /// length, its allocation and the world's stores on the stack, reloading
    /// them for every binding. Out of line, W4 with bindings counted 262.0,
    /// W2 533.4 (265.0 and 535.4 once the settling split a launch's rows
    /// off with a checked split rather than an unchecked sum, the same in
    /// time, and both passes left a row a binding; W2 counts 512.6 since
    /// later changes to the skip, `docs/performance.md`).
    #[inline(never)]
    fn resolve_plain<B: Bind>(&self, launches: &[Launch<'_, B>], rows: &mut Vec<Resolved>) -> bool {
        rows.clear();
        for launch in launches {
            let (StreamRef::Id(_), Some(bindings)) =
                (launch.stream, B::as_bindings(launch.bindings))
            else {
                return false;
            };
            if !resolve_common(bindings, &self.streams, &self.allocs, rows) {
                return false;
            }
        }
        true
    }

    /// The first pass of [`launch_batch`](Self::launch_batch) over any
    /// bindings: every launch's bindings resolved into `rows` (cleared
    /// first), each launch's rows made up to one a binding with dead rows
    /// for its dead and unresolved bindings, as the plain pass leaves them;
    /// the count of unresolved bindings, or the first bad launch's error
    /// naming it.
    fn resolve_batch<B: Bind>(
        &self,
        launches: &[Launch<'_, B>],
        rows: &mut Vec<Resolved>,
    ) -> Result<u64, Error> {
        rows.clear();
        self.check_batch(launches, |launch, _| {
            let bindings = B::as_bindings(launch.bindings).unwrap_or_default();
            let start = rows.len();
            let r = resolve_owner(
                bindings,
                &self.streams,
                &self.allocs,
                self.config.strict,
                rows,
            )?;
            rows.resize_with(start.saturating_add(bindings.len()), Resolved::dead);
            Ok(r.unresolved)
        })
    }

    /// [`launch_batch`](Self::launch_batch) of pre-resolved rows: every
    /// launch's rows checked in place first, then each launch settled on
    /// its own rows — nothing copied, no per-launch bookkeeping kept
    /// between the two passes.
    fn launch_batch_rows<B: Bind>(
        &mut self,
        launches: &[Launch<'_, B>],
        results: &mut Vec<LaunchResult>,
    ) -> Result<(), Error> {
        if !launches
            .iter()
            .all(|l| plain(l, &self.streams, &self.allocs, &self.stamp, Ask::Good))
        {
            self.check_batch_rows(launches)?;
        }
        let seen = &mut Seen::default();
        results.extend(launches.iter().map(|launch| {
            // Checked above; a regular id folds without a look-up.
            let slot = self.streams.checked_slot(launch.stream);
            let rows = B::as_rows(launch.bindings).unwrap_or_default();
            self.settle_launch(launch.kernel, slot, rows, launch.outcome, seen)
        }));
        Ok(())
    }

    /// The first pass of [`launch_batch_rows`](Self::launch_batch_rows)
    /// when some row is not plainly good: every launch's stream and rows
    /// checked, stale rows counted, the first bad one named.
    #[inline(never)]
    fn check_batch_rows<B: Bind>(&mut self, launches: &[Launch<'_, B>]) -> Result<(), Error> {
        let unresolved = self.check_batch(launches, |launch, _| {
            let rows = B::as_rows(launch.bindings).unwrap_or_default();
            Ok(check_rows(rows, &self.allocs, self.config.strict)?.unresolved)
        })?;
        self.unresolved = self.unresolved.saturating_add(unresolved);
        Ok(())
    }

    /// The counting pass of a clean batch that is not plain: every launch
    /// checked as input and its unresolved bindings counted, or the first
    /// bad launch's error naming it and nothing counted. Out of line, so
    /// that the plain clean batch stays small.
    #[inline(never)]
    fn count_batch<B: Bind>(&mut self, launches: &[Launch<'_, B>]) -> Result<(), Error> {
        let unresolved = self.check_batch(launches, |launch, _| {
            self.count_unresolved_when_quiet(launch)
        })?;
        self.unresolved = self.unresolved.saturating_add(unresolved);
        Ok(())
    }

    /// A batch's first pass: `each` launch checked (with its stream's slot)
    /// and the count of its unresolved bindings summed — or, at the first
    /// bad launch, its error naming it. It only reads the world; the caller
    /// adds the count.
    #[inline(always)]
    fn check_batch<B: Bind>(
        &self,
        launches: &[Launch<'_, B>],
        mut each: impl FnMut(&Launch<'_, B>, u64) -> Result<u64, Error>,
    ) -> Result<u64, Error> {
        let mut unresolved = 0u64;
        for (index, launch) in launches.iter().enumerate() {
            let checked = self.streams.slot_of(launch.stream);
            match checked.and_then(|slot| each(launch, slot)) {
                Ok(n) => unresolved = unresolved.saturating_add(n),
                Err(error) => return Err(in_batch(index, error)),
            }
        }
        Ok(unresolved)
    }

    /// [`launch_batch`](Self::launch_batch) in a world with no failure and
    /// no open capture window: no byte is claimed, so as long as no launch
    /// fails, each reads clean bytes and runs, and releasing clean bytes
    /// changes nothing. Only the input needs checking — look-ups, no rows,
    /// no systems. `None`, having changed nothing, when some launch fails:
    /// the batch takes the full path.
    #[inline(never)]
    fn launch_batch_clean<B: Bind>(
        &mut self,
        launches: &[Launch<'_, B>],
        results: &mut Vec<LaunchResult>,
    ) -> Option<Result<(), Error>> {
        let (streams, allocs, stamp) = (&self.streams, &self.allocs, &self.stamp);
        if launches
            .iter()
            .all(|l| l.outcome == Outcome::Ok && plain(l, streams, allocs, stamp, Ask::Live))
        {
            // The common clean batch: every launch ran, on a regular
            // stream, binding good rows or common bindings. One predicate
            // over the batch, with nothing to count and no error to name.
            self.number_clean(launches, false, results);
            return Some(Ok(()));
        }
        if launches
            .iter()
            .any(|l| matches!(l.outcome, Outcome::Failed { .. }))
        {
            return None;
        }
        let dry_runs = launches.iter().any(|l| l.outcome == Outcome::DryRun);
        if let Err(error) = self.count_batch(launches) {
            return Some(Err(error));
        }
        self.number_clean(launches, dry_runs, results);
        Some(Ok(()))
    }

    /// [`launch_batch`](Self::launch_batch) in a world that holds a failure
    /// but no open capture window, where no launch fails and none binds a
    /// claimed allocation (but by a dead binding): each reads clean bytes
    /// and runs (or is only checked), and releasing clean bytes changes
    /// nothing, so no launch of the batch taints anything a later one
    /// binds. The answer [`launch`](Self::launch) gives each such launch
    /// from one look-up a binding, for the whole batch: `true` when the
    /// batch was so and is numbered; `false`, having changed nothing,
    /// otherwise. Without it, a clean batch beside a failure elsewhere
    /// made a row a binding and settled each launch: 60.5 instructions a
    /// binding with rows, against 34.0 one launch a call
    /// (`scripts/instruction-counts w1-claimed`).
    #[inline(never)]
    fn launch_batch_unclaimed<B: Bind>(
        &mut self,
        launches: &[Launch<'_, B>],
        results: &mut Vec<LaunchResult>,
    ) -> bool {
        if !self.windows.is_empty() {
            return false;
        }
        let mut dry_runs = false;
        for launch in launches {
            match launch.outcome {
                Outcome::Ok => {}
                Outcome::DryRun => dry_runs = true,
                Outcome::Failed { .. } => return false,
            }
            if !self.binds_nothing_claimed(launch) {
                return false;
            }
        }
        self.number_clean(launches, dry_runs, results);
        true
    }

    /// Numbers the launches of a clean batch and appends their results:
    /// each ran, or was only checked (there are `dry_runs` or not).
    #[inline(always)]
    fn number_clean<B: Bind>(
        &mut self,
        launches: &[Launch<'_, B>],
        dry_runs: bool,
        results: &mut Vec<LaunchResult>,
    ) {
        let first = self.launches;
        let count = launches.len() as u64;
        let Some(next) = first.checked_add(count) else {
            // Launch numbers saturate; no world gets here.
            results.extend(launches.iter().zip(0u64..).map(|(launch, i)| LaunchResult {
                launch: first.saturating_add(i),
                verdict: ran_or_dry(launch.outcome),
            }));
            self.launches = u64::MAX;
            return;
        };
        if dry_runs {
            results.extend(
                launches
                    .iter()
                    .zip(first..next)
                    .map(|(launch, number)| LaunchResult {
                        launch: number,
                        verdict: ran_or_dry(launch.outcome),
                    }),
            );
        } else {
            results.extend((first..next).map(|number| LaunchResult {
                launch: number,
                verdict: Verdict::Ran,
            }));
        }
        self.launches = next;
    }

    /// Steps 2–6 of SPEC §3 for one launch whose rows are `rows` (taken out
    /// of `self.rows`, or the caller's pre-resolved rows). Inlined into the
    /// batch loop: its result is built where it is pushed, not returned
    /// through memory.
    #[inline(always)]
    fn settle_launch(
        &mut self,
        kernel: &str,
        slot: u64,
        rows: &[Resolved],
        outcome: Outcome<'_>,
        seen: &mut Seen,
    ) -> LaunchResult {
        let launch = self.launches;
        self.launches = self.launches.saturating_add(1);
        if outcome == Outcome::DryRun {
            return LaunchResult {
                launch,
                verdict: Verdict::DryRun,
            };
        }
        let hit = check_reads(rows, &self.allocs);
        if hit.is_none() && outcome == Outcome::Ok && self.windows.is_empty() {
            // The common case, kept short: clean reads, the launch ran, no
            // capture window to record into. Releasing its write set is all
            // there is, and only a release that carved a claim leaves
            // anything to prune.
            let g = &mut self.graph;
            release_written(rows, &mut self.allocs, &mut g.failures, &mut g.records);
            self.prune();
            return LaunchResult {
                launch,
                verdict: Verdict::Ran,
            };
        }
        let verdict = self.settle_rows(launch, kernel, Some(slot), rows, hit, outcome, seen);
        LaunchResult { launch, verdict }
    }

    /// [`settle_rows`](Self::settle_rows) over `self.rows[start..end]`.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &mut self,
        launch: u64,
        kernel: &str,
        slot: Option<u64>,
        start: usize,
        end: usize,
        hit: Option<ReadHit>,
        outcome: Outcome<'_>,
    ) -> Verdict {
        let rows = core::mem::take(&mut self.rows);
        let verdict = self.settle_rows(
            launch,
            kernel,
            slot,
            rows.get(start..end).unwrap_or_default(),
            hit,
            outcome,
            &mut Seen::default(),
        );
        self.rows = rows;
        verdict
    }

    /// Skips, fails or releases `rows`, the rows of launch number `launch`,
    /// given what the read check found; then prunes. `slot` is the launch's
    /// stream slot (`None` for host writes and replays, which no capture
    /// window sees). `seen` is the batch's (see [`Seen`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn settle_rows(
        &mut self,
        launch: u64,
        kernel: &str,
        slot: Option<u64>,
        rows: &[Resolved],
        hit: Option<ReadHit>,
        outcome: Outcome<'_>,
        seen: &mut Seen,
    ) -> Verdict {
        let verdict = match (hit, outcome) {
            (Some(hit), _) => self.skip(launch, kernel, slot, rows, hit, seen),
            (None, Outcome::Failed { kind, message }) => {
                self.fail(kernel, (kind, message), slot, rows, seen)
            }
            (None, Outcome::Ok | Outcome::DryRun) => {
                let g = &mut self.graph;
                release_written(rows, &mut self.allocs, &mut g.failures, &mut g.records);
                if self.watched() {
                    self.watch_ran(slot, (launch, kernel), rows);
                }
                Verdict::Ran
            }
        };
        self.prune();
        verdict
    }

    /// Skips launch number `launch`, whose read check found `hit`: its
    /// record made, its write set tainted through it. In line, with the
    /// record and the taint: a call here cost a skip its own prologue and
    /// its arguments through the stack (W2 with rows 514.9 instructions a
    /// skip out of line, 469.4 in line with [`fail`](Self::fail) and the
    /// record's `make`; `docs/performance-history.md`).
    #[inline(always)]
    fn skip(
        &mut self,
        launch: u64,
        kernel: &str,
        slot: Option<u64>,
        rows: &[Resolved],
        hit: ReadHit,
        seen: &mut Seen,
    ) -> Verdict {
        let g = &mut self.graph;
        let failure = hit.claim.failure;
        let repeat = seen_again(&mut seen.kernel, [kernel]);
        let record = g.records.make(
            launch,
            (kernel, repeat),
            hit.needed,
            hit.claim.origin,
            failure,
            self.config.chain_limit,
        );
        let id = g.failures.count_skip(failure);
        self.carry(rows, failure, Origin::Skip(record));
        self.graph.records.queue_if_unreferenced(record);
        self.doomed(slot, failure, Some(record));
        Verdict::Skipped {
            failure: id,
            needed: hit.needed,
        }
    }

    /// Fails a launch of `kernel` with the error `kind` and `message`: the
    /// failure occurs (or occurs again) and its write set carries it. In
    /// line, with the taint, for the reason [`skip`](Self::skip) gives (W4
    /// with rows 254.0 instructions a launch out of line, 210.0 in line).
    #[inline(always)]
    fn fail(
        &mut self,
        kernel: &str,
        (kind, message): (&str, &str),
        slot: Option<u64>,
        rows: &[Resolved],
        seen: &mut Seen,
    ) -> Verdict {
        let g = &mut self.graph;
        let repeat = seen_again(&mut seen.failure, [kind, kernel, message]);
        let (failure, id) = g.failures.occur(kind, kernel, message, repeat);
        self.carry(rows, failure, Origin::Root);
        self.doomed(slot, failure, None);
        Verdict::Failed(id)
    }

    /// `apply_taint` on this world's stores: the write set of `rows`
    /// carries `failure` through `origin`.
    #[inline(always)]
    fn carry(&mut self, rows: &[Resolved], failure: FailureKey, origin: Origin) {
        let g = &mut self.graph;
        apply_taint(
            rows,
            &mut self.allocs,
            &mut g.failures,
            &mut g.records,
            failure,
            origin,
        );
    }

    /// A launch failed or was skipped with `failure` (through `record`, if
    /// skipped): any open capture window or profile learns of it.
    #[inline(always)]
    fn doomed(&mut self, slot: Option<u64>, failure: FailureKey, record: Option<RecordKey>) {
        if self.watched() {
            self.watch(slot, Doom { failure, record });
        }
    }

    /// Whether a capture window or a profile is open: rare, so the failure
    /// that dooms one is handed over only then.
    #[inline]
    fn watched(&self) -> bool {
        !self.windows.is_empty() || self.clean_profiles != 0
    }

    /// What an open capture window or profile makes of a launch that
    /// failed or was skipped with `doom`: the rare case, out of line.
    #[inline(never)]
    fn watch(&mut self, slot: Option<u64>, doom: Doom) {
        if let Some(slot) = slot
            && let Some(window) = self.windows.get_mut(&slot)
            && window.doom.is_none()
        {
            // The first failed or skipped launch dooms the window.
            self.graph.failures.pin(doom.failure);
            if let Some(record) = doom.record {
                self.graph.records.add_ref(record);
            }
            window.doom(doom);
        }
        if self.clean_profiles != 0 {
            self.profile_failure(doom.failure);
        }
    }

    /// Every open profile that has not seen a failure yet (those begun in
    /// the current epoch) sees this one: it ends the epoch, kept once for
    /// them all. O(1), however many profiles are open.
    #[inline(never)]
    fn profile_failure(&mut self, failure: FailureKey) {
        let Some(f) = self.graph.failures.get(failure) else {
            return;
        };
        self.profile_failures.insert(
            self.profile_epoch,
            ProfileFailure {
                failure: f.id,
                error: f.error.clone(),
                open: self.clean_profiles,
            },
        );
        self.profile_epoch = self.profile_epoch.wrapping_add(1);
        self.clean_profiles = 0;
    }

    /// Resolves `bindings` into `self.rows` (cleared first) and counts the
    /// unresolved ones. On bad input nothing is counted.
    fn resolve(&mut self, bindings: &[Binding]) -> Result<Resolution, Error> {
        self.rows.clear();
        let resolution = resolve_owner(
            bindings,
            &self.streams,
            &self.allocs,
            self.config.strict,
            &mut self.rows,
        )?;
        self.unresolved = self.unresolved.saturating_add(resolution.unresolved);
        Ok(resolution)
    }

    /// [`check_rows`] on a launch's pre-resolved rows, its stale ones
    /// counted: what [`resolve`](Self::resolve) is for bindings, with the
    /// rows left where the caller keeps them. In line: on the single
    /// launch's path, a call here cost W5 56 instructions a launch.
    #[inline(always)]
    fn check_kept(&mut self, rows: &[Resolved]) -> Result<Resolution, Error> {
        let resolution = check_rows(rows, &self.allocs, self.config.strict)?;
        self.unresolved = self.unresolved.saturating_add(resolution.unresolved);
        Ok(resolution)
    }

    /// Resolves one binding as if its access were `access`: its row, or
    /// `None` (counted) when it does not resolve.
    fn resolve_as(&mut self, binding: &Binding, access: Access) -> Result<Option<Resolved>, Error> {
        let binding = Binding { access, ..*binding };
        self.resolve(core::slice::from_ref(&binding))?;
        Ok(self.rows.first().copied())
    }

    #[inline]
    fn prune(&mut self) {
        let g = &mut self.graph;
        // Most launches leave nothing to prune: two length checks.
        if g.records.has_unreferenced() || g.failures.has_unheld() {
            prune_failures(&mut g.failures, &mut g.records);
        }
    }

    /// A host write of one binding (SPEC §5): a write set of that binding
    /// and no read set, kernel `host_write`. `Ok` releases, `Failed` taints.
    /// Not a launch: it takes no launch number and no capture window sees
    /// it.
    ///
    /// A binding that does not resolve is not this world's to answer for
    /// (SPEC §2): the write releases and taints nothing, and counts in
    /// [`Stats::unresolved_bindings`] — the verdict is still that of the
    /// outcome, as for a launch whose bindings do not resolve. Strict mode
    /// rejects it instead; [`resolve_binding`](Self::resolve_binding) asks
    /// first without counting.
    ///
    /// Cost: that of a launch binding one write (see
    /// [`launch`](Self::launch)).
    ///
    /// # Errors
    ///
    /// - [`Error::DryRunOutcome`]: `outcome` is [`Outcome::DryRun`], which
    ///   only a launch may have (looked at before the binding).
    /// - Then those of a launch's binding, on the same conditions (see
    ///   [`launch`](Self::launch)):
    ///   [`Error::SpecialOutOfRange`], [`Error::RangeReversed`],
    ///   [`Error::KeyRangeReversed`], [`Error::RangePastEnd`], and in strict
    ///   mode [`Error::Unresolved`] and [`Error::UnknownKey`].
    ///
    /// On `Err` nothing is released, tainted or counted: the world is
    /// unchanged.
    pub fn host_write(
        &mut self,
        binding: &Binding,
        outcome: Outcome<'_>,
    ) -> Result<Verdict, Error> {
        if outcome == Outcome::DryRun {
            return Err(Error::DryRunOutcome {
                operation: "host_write",
            });
        }
        self.resolve_as(binding, Access::Write)?;
        let end = self.rows.len();
        Ok(self.settle(
            self.launches,
            Self::HOST_WRITE_KERNEL,
            None,
            0,
            end,
            None,
            outcome,
        ))
    }

    /// A host read of one binding (SPEC §5): unresolved, then the device
    /// fault, then the claim with the lowest start overlapping the range.
    /// Changes nothing but the unresolved-bindings counter.
    ///
    /// Cost: one look-up and a binary search of the allocation's claims,
    /// O(log claims), for a clean read; a tainted one also walks and copies
    /// its chain, at most `chain_limit` hops, into the report it returns.
    ///
    /// # Errors
    ///
    /// Those of a launch's binding, on the same conditions (see
    /// [`launch`](Self::launch)), the binding checked as a read whatever
    /// its access:
    /// [`Error::SpecialOutOfRange`], [`Error::RangeReversed`],
    /// [`Error::KeyRangeReversed`], [`Error::RangePastEnd`], and in strict
    /// mode [`Error::Unresolved`] and [`Error::UnknownKey`].
    ///
    /// On `Err` not even the unresolved-bindings counter changes: the world
    /// is unchanged.
    pub fn read(&mut self, binding: &Binding) -> Result<ReadResult, Error> {
        // A read is checked like a read-visible binding, whatever access
        // the caller gave it.
        let Some(row) = self.resolve_as(binding, Access::Read)? else {
            return Ok(ReadResult::Unresolved);
        };
        if let Some(fault) = &self.fault {
            return Ok(ReadResult::DeviceFault(fault.clone()));
        }
        // The same check a launch's read set gets, so that a host read and
        // a launch answer from one rule (SPEC §3 step 3).
        Ok(
            match check_reads(core::slice::from_ref(&row), &self.allocs) {
                None => ReadResult::Clean,
                Some(hit) => ReadResult::Tainted(self.report(hit.claim.failure, hit.claim.origin)),
            },
        )
    }

    /// What a scheduler asks before every host read: the failure the bytes
    /// carry (the claim with the lowest start), if any — without building
    /// the report, whose chain can be hundreds of hops; [`read`](Self::read)
    /// builds it when someone wants to know why. `Ok(None)` for clean bytes
    /// and for an unresolved binding (counted, as by `read`). It looks only
    /// at claims: a device fault is [`sync`](Self::sync)'s to report.
    ///
    /// # Errors
    ///
    /// Those of [`read`](Self::read), the binding checked as a read:
    /// [`Error::SpecialOutOfRange`], [`Error::RangeReversed`],
    /// [`Error::KeyRangeReversed`], [`Error::RangePastEnd`], and in strict
    /// mode [`Error::Unresolved`] and [`Error::UnknownKey`].
    ///
    /// On `Err` the world is unchanged, its unresolved-bindings counter
    /// included.
    pub fn read_failure(&mut self, binding: &Binding) -> Result<Option<FailureId>, Error> {
        self.resolve_as(binding, Access::Read)?;
        Ok(check_reads(&self.rows, &self.allocs)
            .map(|hit| failure_id(&self.graph, hit.claim.failure)))
    }

    /// What [`read`](Self::read) finds in tainted bytes, read in place
    /// rather than copied: the failure, its error and the chain of skipped
    /// launches, each looked up as it is asked for, so that asking
    /// allocates nothing however long the chain (`no_heap_on_hot_path`
    /// holds it). `Ok(None)` for clean bytes and for an unresolved binding
    /// (counted, as by `read`). Like [`read_failure`](Self::read_failure)
    /// it looks only at claims: a device fault is [`sync`](Self::sync)'s
    /// to report. The answer borrows the world; its
    /// [`to_report`](TaintRef::to_report) is what `read` would have
    /// answered.
    ///
    /// Cost: that of `read_failure`; each hop of the chain is one more
    /// look-up when it is walked.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Launch, Outcome, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 64)?;
    /// world.alloc(0, 2, 64)?;
    /// let launch = |kernel, bindings, outcome| Launch { kernel, stream: 0.into(), bindings, outcome };
    /// let failed = Outcome::Failed { kind: "launch", message: "bad grid" };
    /// let fill = [Binding::whole(0, 1, Access::Write)];
    /// let copy = [Binding::whole(0, 1, Access::Read), Binding::whole(0, 2, Access::Write)];
    /// world.launch(&launch("fill", &fill[..], failed))?;
    /// world.launch(&launch("copy", &copy[..], Outcome::Ok))?;
    /// let why = world.read_taint(&Binding::whole(0, 2, Access::Read))?.expect("copy was skipped");
    /// assert_eq!(why.error().message, "bad grid");
    /// let hop = why.chain().next().expect("one hop");
    /// assert_eq!((hop.launch, hop.kernel, hop.needed), (1, "copy", 1));
    /// assert_eq!(
    ///     why.to_string(),
    ///     "tainted by failure 1 (launch in fill: bad grid)\n    skipped launch 1 (copy), which needed memory 1"
    /// );
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`read`](Self::read), the binding checked as a read:
    /// [`Error::SpecialOutOfRange`], [`Error::RangeReversed`],
    /// [`Error::KeyRangeReversed`], [`Error::RangePastEnd`], and in strict
    /// mode [`Error::Unresolved`] and [`Error::UnknownKey`].
    ///
    /// On `Err` the world is unchanged, its unresolved-bindings counter
    /// included.
    pub fn read_taint(&mut self, binding: &Binding) -> Result<Option<TaintRef<'_>>, Error> {
        self.resolve_as(binding, Access::Read)?;
        Ok(check_reads(&self.rows, &self.allocs)
            .map(|hit| TaintRef::new(&self.graph, hit.claim.failure, hit.claim.origin)))
    }

    /// The report of bytes carrying `failure` through `origin`: the failure
    /// and the chain of skipped launches, walked from the origin record to
    /// the root (or to a cut).
    fn report(&self, failure: FailureKey, origin: Origin) -> TaintReport {
        TaintRef::new(&self.graph, failure, origin).to_report()
    }

    /// Opens profile `profile`: it becomes invalid if any launch fails or is
    /// skipped, or any host write or replay fails, anywhere on the device
    /// before it ends.
    ///
    /// # Errors
    ///
    /// - [`Error::ProfileOpen`]: profile `profile` is already open.
    ///
    /// On `Err` the open profile keeps what it saw: the world is unchanged.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Outcome, ProfileResult, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 64)?;
    /// world.profile_begin(1)?;
    /// let failed = Outcome::Failed { kind: "copy", message: "DMA error" };
    /// world.host_write(&Binding::whole(0, 1, Access::Write), failed)?;
    /// let ProfileResult::Invalid { error, .. } = world.profile_end(1)? else { unreachable!() };
    /// assert_eq!(error.kernel, "host_write"); // the measurement saw a failure
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn profile_begin(&mut self, profile: u64) -> Result<(), Error> {
        if self.profiles.contains_key(&profile) {
            return Err(Error::ProfileOpen { profile });
        }
        self.profiles.insert(profile, self.profile_epoch);
        self.clean_profiles += 1;
        Ok(())
    }

    /// Ends profile `profile`: valid, or invalid with the first failure it
    /// saw (id and error as they were then).
    ///
    /// # Errors
    ///
    /// - [`Error::ProfileNotOpen`]: profile `profile` is not open (never
    ///   begun, or already ended).
    ///
    /// On `Err` the world is unchanged.
    pub fn profile_end(&mut self, profile: u64) -> Result<ProfileResult, Error> {
        let epoch = self
            .profiles
            .remove(&profile)
            .ok_or(Error::ProfileNotOpen { profile })?;
        if epoch == self.profile_epoch {
            self.clean_profiles = self.clean_profiles.saturating_sub(1);
            return Ok(ProfileResult::Valid);
        }
        // An earlier epoch ended with a failure, kept while a profile
        // begun in it is open. Never missing (`check_invariants` names an
        // open profile of an ended epoch with no failure kept); were it
        // ever, the profile saw no failure this world still knows of.
        let hashbrown::hash_map::Entry::Occupied(mut seen) = self.profile_failures.entry(epoch)
        else {
            return Ok(ProfileResult::Valid);
        };
        Ok(if seen.get().open <= 1 {
            let ProfileFailure { failure, error, .. } = seen.remove();
            ProfileResult::Invalid { failure, error }
        } else {
            let seen = seen.get_mut();
            seen.open -= 1;
            ProfileResult::Invalid {
                failure: seen.failure,
                error: seen.error.clone(),
            }
        })
    }

    /// The device faulted: from now on `sync` reports it and a read of a
    /// resolved binding reports it before looking at claims. The first fault
    /// wins. No failure id is minted: the fault belongs to the device, not
    /// to memory. Its error is reported with kernel `device`.
    ///
    /// ```
    /// use taintworld::{Access, Binding, ReadResult, SyncResult, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 64)?;
    /// world.device_fault("device", "illegal address");
    /// assert!(matches!(world.sync(), SyncResult::DeviceFault(e) if e.kernel == "device"));
    /// assert!(matches!(world.read(&Binding::whole(0, 1, Access::Read))?, ReadResult::DeviceFault(_)));
    /// assert_eq!(world.stats().failures_minted, 0);
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn device_fault(&mut self, kind: &str, message: &str) {
        if self.fault.is_none() {
            self.fault = Some(ErrorInfo::new(kind, Self::DEVICE_KERNEL, message));
        }
    }

    /// `Ok`, or the device fault.
    pub fn sync(&self) -> SyncResult {
        match &self.fault {
            None => SyncResult::Ok,
            Some(e) => SyncResult::DeviceFault(e.clone()),
        }
    }

    /// Runs `body` as one launch inside a *write scope* (SPEC §6b), the way
    /// a scheduler that embeds the world wraps each launch. It binds
    /// [`Binding`]s or pre-resolved [`Resolved`] rows, as a launch does.
    ///
    /// A tainted read set skips the launch without running the body. Else
    /// the body runs; `Ok` releases the write set, `Err(e)` taints it with
    /// the body's error. If the body panics, the write set is left carrying
    /// a `torn_down` failure, so it reads as torn down instead of clean; a
    /// later write releases it. SPEC §6b names only that failure's kind: the
    /// world gives it the scope's kernel and the message "the write scope's
    /// body did not finish", and settles it as the failed launch the scope
    /// is (the launch already counted), so a capture window on its stream is
    /// doomed and open profiles are invalid, as after any failed launch.
    ///
    /// SPEC §6b describes the provisional `torn_down` taint as applied on
    /// entry. Nothing can read the world while the body runs (the scope
    /// holds it mutably), so the world applies it in the exit path of the
    /// panic instead, from a drop guard. What any read sees afterwards is
    /// the same — the write set reads clean after `Ok`, carries the body's
    /// error after `Err`, reads as torn down after a panic — and the success
    /// path allocates nothing. The one difference is in failure ids: a
    /// scope that ends `Ok` mints none (a provisional failure minted on
    /// entry and pruned on exit would use one up and shift every later id),
    /// and one that ends `Err` finds or mints its failure as a failed launch
    /// does (SPEC §4) rather than renaming a provisional one. So
    /// `failures_minted` counts failures that outlived their scope, which
    /// is what a scheduler reading the ids expects.
    ///
    /// # Errors
    ///
    /// Bad input, found before the body runs: any error
    /// [`launch`](Self::launch) returns for a launch on `stream` binding
    /// `bindings`, on the same conditions — [`Error::SpecialOutOfRange`],
    /// [`Error::RangeReversed`], [`Error::KeyRangeReversed`],
    /// [`Error::RangePastEnd`], and in strict mode [`Error::Unresolved`]
    /// and [`Error::UnknownKey`]. On `Err` the body does not run, the scope
    /// takes no launch number, and the world is unchanged.
    ///
    /// The body's own error is no `Err` of this method: it comes back in
    /// `Ok`, as [`ScopeOutcome::Failed`], with the write set tainted by it.
    ///
    /// ```
    /// use taintworld::{Access, Binding, ErrorInfo, ScopeOutcome, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 7, 256)?;
    /// let out = [Binding::whole(0, 7, Access::Write)];
    /// let done = world.scope("fill", 0, &out, || Ok::<_, ErrorInfo>(42))?;
    /// assert_eq!(done, ScopeOutcome::Ran(42));
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn scope<T, E: ScopeError, B: Bind>(
        &mut self,
        kernel: &str,
        stream: impl Into<StreamRef>,
        bindings: &[B],
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<ScopeOutcome<T, E>, Error> {
        let slot = self.streams.slot_of(stream.into())?;
        match B::as_rows(bindings) {
            // Checked, then copied in: the scope settles on `self.rows`.
            Some(rows) => {
                self.check_kept(rows)?;
                self.rows.clear();
                self.rows.extend_from_slice(rows);
            }
            None => {
                self.resolve(B::as_bindings(bindings).unwrap_or_default())?;
            }
        }
        let launch = self.launches;
        self.launches = self.launches.saturating_add(1);
        let end = self.rows.len();
        if let Some(hit) = check_reads(&self.rows[..end], &self.allocs) {
            let failure = failure_id(&self.graph, hit.claim.failure);
            self.settle(launch, kernel, Some(slot), 0, end, Some(hit), Outcome::Ok);
            return Ok(ScopeOutcome::Skipped {
                failure,
                needed: hit.needed,
            });
        }
        let mut guard = TornDown {
            world: self,
            launch,
            kernel,
            slot,
            end,
            armed: true,
        };
        let result = body();
        guard.armed = false;
        let world = &mut *guard.world;
        Ok(match result {
            Ok(value) => {
                world.settle(launch, kernel, Some(slot), 0, end, None, Outcome::Ok);
                ScopeOutcome::Ran(value)
            }
            Err(error) => {
                let outcome = Outcome::Failed {
                    kind: error.kind(),
                    message: error.message(),
                };
                let failure = match world.settle(launch, kernel, Some(slot), 0, end, None, outcome)
                {
                    Verdict::Failed(failure) => failure,
                    // A failed outcome whose reads were clean always fails.
                    _ => FailureId::ZERO,
                };
                ScopeOutcome::Failed { failure, error }
            }
        })
    }

    /// Every claim of an allocation, sorted by start; `None` if it is not
    /// live.
    pub fn claims(
        &self,
        memory: impl Into<MemoryRef>,
    ) -> Option<impl Iterator<Item = ClaimInfo> + '_> {
        let key = match memory.into() {
            MemoryRef::Id(m) => self.allocs.key_of(m)?,
            MemoryRef::Key(k) => k,
        };
        let allocation = self.allocs.get(key)?;
        Some(allocation.claims.iter().map(|c| ClaimInfo {
            start: c.start,
            end: c.end,
            failure: failure_id(&self.graph, c.failure),
            origin: match c.origin {
                Origin::Root => None,
                Origin::Skip(r) => self.graph.records.get(r).map(|r| r.launch),
            },
        }))
    }

    /// The live failure named `id`.
    pub fn failure(&self, id: FailureId) -> Option<FailureInfo<'_>> {
        let key = self.graph.failures.key_of(id)?;
        self.graph.failures.get(key).map(FailureInfo::of)
    }

    /// Every live failure, in no particular order: the failure store's
    /// slot order, which the calls alone decide (no hash seed), so the same
    /// for the same calls in every run.
    pub fn failures(&self) -> impl Iterator<Item = FailureInfo<'_>> {
        self.graph.failures.iter().map(|(_, f)| FailureInfo::of(f))
    }

    /// Every live skip record, in no particular order: the record store's
    /// slot order, the same for the same calls in every run. O(records).
    pub fn skip_records(&self) -> impl Iterator<Item = RecordInfo<'_>> {
        let g = &self.graph;
        g.records.iter().map(move |(_, r)| RecordInfo {
            launch: r.launch,
            kernel: g.records.kernel_name(r.kernel),
            needed: r.needed,
            cause: r.cause.and_then(|c| g.records.get(c)).map(|c| c.launch),
            depth: r.depth,
            cut: r.cut,
            failure: failure_id(g, r.failure),
        })
    }

    /// The live skip records of failure `id`. O(records).
    pub fn skip_records_of(&self, id: FailureId) -> impl Iterator<Item = RecordInfo<'_>> {
        self.skip_records().filter(move |r| r.failure == id)
    }

    /// How many bindings have not resolved so far:
    /// [`Stats::unresolved_bindings`], without the O(allocations) sums of
    /// [`stats`](Self::stats). O(1), for a caller that asks after every
    /// call which one had a binding that did not resolve.
    pub fn unresolved_bindings(&self) -> u64 {
        self.unresolved
    }

    /// The counters. O(allocations) for the claim and byte counts, which are
    /// summed on demand rather than kept on the hot path.
    pub fn stats(&self) -> Stats {
        let mut stats = Stats {
            live_failures: self.graph.failures.len() as u64,
            failures_minted: self.graph.failures.minted(),
            unresolved_bindings: self.unresolved,
            live_records: self.graph.records.len() as u64,
            allocations: self.allocs.len() as u64,
            launches: self.launches,
            ..Stats::default()
        };
        for (_, a) in self.allocs.iter() {
            if !a.claims.is_empty() {
                stats.tainted_allocations += 1;
                stats.claims += a.claims.len() as u64;
                let bytes = u128::from(a.claims.tainted_bytes());
                // Under 2^64 allocations of under 2^64 bytes: never saturates.
                stats.tainted_bytes = stats.tainted_bytes.saturating_add(bytes);
            }
        }
        stats
    }
}

/// Unwinds a write scope whose body panicked: the write set is left
/// carrying a `torn_down` failure, as if the launch failed.
struct TornDown<'w, 'k> {
    world: &'w mut World,
    launch: u64,
    kernel: &'k str,
    slot: u64,
    end: usize,
    armed: bool,
}

impl Drop for TornDown<'_, '_> {
    fn drop(&mut self) {
        if self.armed {
            let outcome = Outcome::Failed {
                kind: "torn_down",
                message: "the write scope's body did not finish",
            };
            self.world.settle(
                self.launch,
                self.kernel,
                Some(self.slot),
                0,
                self.end,
                None,
                outcome,
            );
        }
    }
}

/// Bad input in launch `index` of a batch.
#[cold]
fn in_batch(index: usize, error: Error) -> Error {
    Error::InBatch {
        index,
        error: alloc::boxed::Box::new(error),
    }
}

fn failure_id(g: &FailureGraph, key: FailureKey) -> FailureId {
    g.failures.get(key).map_or(FailureId::ZERO, |f| f.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    /// What the world answers in no particular order — its failures, its
    /// skip records, its allocations, and each one's claims — comes in the
    /// same order from two worlds given the same calls, though each of
    /// their indexes hashes with a seed of its own (drawn anew in every
    /// run, as for two worlds of one run): the stores they walk are slot
    /// maps, whose order the calls alone decide, frees and prunes
    /// included. A scheduler can so compare the lists across runs.
    #[test]
    fn two_worlds_given_the_same_calls_list_their_failures_records_and_allocations_in_one_order() {
        let mut worlds = [World::default(), World::default()];
        for world in &mut worlds {
            // A fixed walk of allocations, frees, launches that fail,
            // skip or run, and reads.
            let mut state: u64 = 0x2545_f491_4f6c_dd1d;
            let mut draw = |n: u64| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % n
            };
            let mut live: Vec<u64> = Vec::new();
            let mut next = 1;
            let kernels = ["matmul", "gelu", "softmax", "adam"];
            let messages = ["bad PTX", "out of memory", "illegal address"];
            for _ in 0..3_000 {
                match draw(10) {
                    0 | 1 if live.len() < 64 => {
                        world.alloc(0, next, 64 * (1 + draw(8))).unwrap();
                        live.push(next);
                        next += 1;
                    }
                    2 if live.len() > 4 => {
                        let memory = live.swap_remove(draw(live.len() as u64) as usize);
                        world.free(memory).unwrap();
                    }
                    _ if live.len() > 1 => {
                        let pick = |d: u64| live[(d % live.len() as u64) as usize];
                        let bindings = [
                            Binding::whole(0, pick(draw(64)), Access::Read),
                            Binding::range(0, pick(draw(64)), 0, 32, Access::Write),
                        ];
                        let outcome = match draw(12) {
                            0 => Outcome::Failed {
                                kind: "launch",
                                message: messages[draw(3) as usize],
                            },
                            _ => Outcome::Ok,
                        };
                        let kernel = kernels[draw(4) as usize];
                        // Live memory of at least 64 bytes, on its own
                        // stream: no binding is bad input, and the two
                        // may share an allocation.
                        world
                            .launch(&Launch {
                                kernel,
                                stream: 0.into(),
                                bindings: &bindings,
                                outcome,
                            })
                            .expect("bindings of live memory, in range");
                        world
                            .read(&Binding::whole(0, pick(draw(64)), Access::Read))
                            .expect("a read of live memory");
                    }
                    _ => {}
                }
            }
        }
        let [a, b] = &worlds;
        let failures = |w: &World| w.failures().map(|f| f.id).collect::<Vec<_>>();
        let records = |w: &World| {
            w.skip_records()
                .map(|r| (r.launch, r.cause, r.failure))
                .collect::<Vec<_>>()
        };
        let allocations = |w: &World| {
            let allocations = w.allocations().iter();
            let claims = |key| w.claims(key).into_iter().flatten().collect::<Vec<_>>();
            allocations
                .map(|(key, a)| (a.memory, claims(key)))
                .collect::<Vec<_>>()
        };
        assert!(
            failures(a).len() > 3 && records(a).len() > 3,
            "{:?}",
            a.stats()
        );
        assert_eq!(failures(a), failures(b));
        assert_eq!(records(a), records(b));
        assert_eq!(allocations(a), allocations(b));
        assert_eq!(a.stats(), b.stats());
    }

    /// The row `world` makes for a read of the whole of memory `memory` on
    /// stream 0, which must be live.
    fn whole_row(world: &World, memory: u64) -> Resolved {
        world
            .resolve_binding(&Binding::whole(0, memory, Access::Read))
            .unwrap()
            .expect("live")
    }

    /// The verdict of a `copy` launch binding `row` alone.
    fn copy(world: &mut World, row: Resolved) -> Verdict {
        let launch = Launch {
            kernel: "copy",
            stream: 0.into(),
            bindings: &[row][..],
            outcome: Outcome::Ok,
        };
        world.launch(&launch).unwrap().verdict
    }

    #[test]
    #[cfg_attr(
        taintworld_no_stamps,
        ignore = "a build without stamps draws none, as a target without atomics does"
    )]
    fn a_world_stamps_the_rows_it_resolves_as_its_own_and_no_other_world_takes_them() {
        let mut world = World::default();
        world.alloc(0, 1, 64).unwrap();
        let row = whole_row(&world, 1);
        assert!(world.stamp.vouches_for(&row));
        assert!(world.stamp.vouches_for(&row.with_access(Access::Write)));
        assert!(world.stamp.vouches_for(&row.narrow(8, 16).expect("inside")));
        assert!(!world.clone().stamp.vouches_for(&row));
        assert!(!World::default().stamp.vouches_for(&row));
    }

    /// A row made since the world last freed anything is fresh: its key is
    /// known live from the row alone. A free ends that for every row made
    /// before it, which the world still vouches for (their ranges stand)
    /// but looks up again; a row made after it is fresh again, and equal
    /// to the older one.
    #[test]
    #[cfg_attr(
        taintworld_no_stamps,
        ignore = "a build without stamps draws none, as a target without atomics does"
    )]
    fn a_row_made_since_the_last_free_is_fresh_and_a_free_ends_that_for_older_rows() {
        let mut world = World::default();
        world.alloc(0, 1, 64).unwrap();
        world.alloc(0, 2, 64).unwrap();
        world.alloc(0, 3, 64).unwrap();
        let row = whole_row(&world, 1);
        let doomed = whole_row(&world, 3);
        assert!(world.stamp.fresh(&row) && world.stamp.fresh(&doomed));
        assert!(world.stamp.fresh(&row.with_access(Access::Write)));
        assert!(world.stamp.fresh(&row.narrow(8, 16).expect("inside")));
        assert!(!world.clone().stamp.fresh(&row), "a clone is another world");
        world.free(2).unwrap();
        assert!(!world.stamp.fresh(&row), "a free since it was made");
        assert!(world.stamp.vouches_for(&row), "still this world's row");
        let again = whole_row(&world, 1);
        assert!(world.stamp.fresh(&again));
        assert_eq!(again, row, "the same bytes, the same way, the same world");
        // A row whose own allocation went is stale: not fresh, and counted
        // as unresolved once its key is looked up.
        world.free(3).unwrap();
        assert!(!world.stamp.fresh(&doomed) && !world.stamp.fresh(&again));
        assert_eq!(world.unresolved_bindings(), 0);
        assert_eq!(copy(&mut world, doomed), Verdict::Ran);
        assert_eq!(world.stats().unresolved_bindings, 1);
        assert_eq!(world.unresolved_bindings(), 1);
    }

    /// A row the world no longer vouches for after a redraw of its stamp
    /// is still good input to a quiet world's check, its range compared
    /// in line; a row of another world whose range runs past this world's
    /// allocation of the same key is not.
    #[test]
    fn a_quiet_world_takes_its_rows_from_before_a_redraw_and_not_another_worlds_overlong_row() {
        use crate::components::binding::FREES_PER_STAMP;
        use crate::systems::all_live;
        let mut world = World::default();
        world.alloc(0, 1, 64).unwrap();
        world.alloc(0, 2, 64).unwrap();
        let row = whole_row(&world, 1);
        world.stamp.set_frees(FREES_PER_STAMP - 1);
        world.free(2).unwrap();
        assert!(!world.stamp.vouches_for(&row) && !world.stamp.fresh(&row));
        assert!(all_live(&[row], &world.allocs, &world.stamp));
        let mut other = World::default();
        other.alloc(0, 1, 128).unwrap();
        let long = whole_row(&other, 1);
        assert_eq!(long.alloc(), row.alloc(), "the same key in both worlds");
        assert!(!all_live(&[long], &world.allocs, &world.stamp));
        assert!(all_live(
            &[long.narrow(0, 64).expect("inside")],
            &world.allocs,
            &world.stamp
        ));
    }

    #[test]
    #[cfg_attr(
        taintworld_no_stamps,
        ignore = "a build without stamps draws none, as a target without atomics does"
    )]
    fn a_world_redraws_its_stamp_as_it_frees_so_its_older_rows_are_checked_again() {
        use crate::components::binding::FREES_PER_STAMP;
        let mut world = World::default();
        world.alloc(0, 1, 64).unwrap();
        world.alloc(0, 2, 64).unwrap();
        let row = whole_row(&world, 1);
        world.stamp.set_frees(FREES_PER_STAMP - 1);
        assert!(world.stamp.vouches_for(&row));
        let last = whole_row(&world, 1);
        assert!(world.stamp.fresh(&last), "made at the stamp's last epoch");
        world.free(2).unwrap();
        assert!(!world.stamp.vouches_for(&row), "the limit's free redraws");
        assert!(!world.stamp.vouches_for(&last) && !world.stamp.fresh(&last));
        // Checked again, the row is still good input for its allocation.
        assert_eq!(copy(&mut world, row), Verdict::Ran);
        let again = whole_row(&world, 1);
        assert!(world.stamp.vouches_for(&again));
    }

    #[test]
    fn a_batch_knows_strings_again_only_by_the_same_address_and_length() {
        let names = String::from("gelu_backward");
        let mut seen = Seen::default();
        // Fresh, it matches nothing, not even a string it is then given.
        assert!(!seen_again(&mut seen.kernel, [&names]));
        assert!(seen_again(&mut seen.kernel, [&names]));
        // The same bytes at the same address, shorter: another string.
        assert!(!seen_again(&mut seen.kernel, [&names[..4]]));
        // Equal bytes at another address: not known by address.
        let copy = String::from(&names[..4]);
        assert!(!seen_again(&mut seen.kernel, [&copy]));
        assert!(seen_again(&mut seen.kernel, [&copy]));
        // A failure's three strings: one word off is enough to differ.
        let message = "bad PTX";
        let all = |m| ["compile", "gelu", m];
        assert!(!seen_again(&mut seen.failure, all(message)));
        assert!(seen_again(&mut seen.failure, all(message)));
        assert!(!seen_again(&mut seen.failure, all(&message[..6])));
    }

    /// The words are compared each on its own: a change of address and a
    /// change of length that are the same bits, or the same change of
    /// address in two strings, must not cancel out (as they would if the
    /// differences were folded with `^` instead of `|`).
    #[test]
    fn differences_in_two_words_do_not_cancel_out() {
        let text = String::from("abcdefghij");
        // An even address, so that it and the next differ in the lowest bit
        // only, as the lengths 2 and 3 do.
        let e = text.as_ptr() as usize % 2;
        let mut seen = Seen::default();
        assert!(!seen_again(&mut seen.kernel, [&text[e..e + 2]]));
        assert!(!seen_again(&mut seen.kernel, [&text[e + 1..e + 4]]));
        // The kind and the message each one byte on, the kernel the same.
        let strings = |at: usize| [&text[at..at + 2], "gelu", &text[at + 4..at + 6]];
        assert!(!seen_again(&mut seen.failure, strings(e)));
        assert!(!seen_again(&mut seen.failure, strings(e + 1)));
    }
}
