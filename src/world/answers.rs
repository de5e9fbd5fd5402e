//! What the world answers: reports of tainted bytes, captures, profiles,
//! syncs, write scopes, and looks at its entities and counters.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::components::claim::Origin;
use crate::components::failure::{ErrorInfo, Failure, FailureId, FailureKey};
use crate::components::record::RecordKey;
use crate::graph::FailureGraph;

/// One hop of a taint chain: a skipped launch, newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainHop {
    /// The skipped launch's number.
    pub launch: u64,
    /// Its kernel.
    pub kernel: String,
    /// The memory id it needed, whose bytes carried the failure.
    pub needed: u64,
}

/// Why bytes cannot be trusted: the failure they carry and exactly how they
/// came to carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintReport {
    /// The failure's id.
    pub failure: FailureId,
    /// Its root error.
    pub error: ErrorInfo,
    /// How many times it occurred.
    pub occurrences: u64,
    /// The skipped launches from the root to these bytes, newest first; the
    /// last hop read bytes the failure tainted directly. Empty when the
    /// bytes were tainted directly.
    pub chain: Vec<ChainHop>,
    /// Whether the chain was cut at `chain_limit` before reaching the root.
    pub truncated: bool,
}

/// `skipped launch 3 (softmax), which needed memory 12`: the words the
/// replay's summary uses for a hop.
impl fmt::Display for ChainHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&ChainHopRef::from(self), f)
    }
}

/// One hop of a taint chain, borrowed from the world's skip record: what
/// a [`ChainHop`] holds, with the kernel's name not copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainHopRef<'w> {
    /// The skipped launch's number.
    pub launch: u64,
    /// Its kernel.
    pub kernel: &'w str,
    /// The memory id it needed, whose bytes carried the failure.
    pub needed: u64,
}

impl<'a> From<&'a ChainHop> for ChainHopRef<'a> {
    fn from(hop: &'a ChainHop) -> Self {
        ChainHopRef {
            launch: hop.launch,
            kernel: &hop.kernel,
            needed: hop.needed,
        }
    }
}

impl ChainHopRef<'_> {
    /// The hop as a [`ChainHop`] of its own, its kernel's name copied.
    pub fn to_hop(&self) -> ChainHop {
        ChainHop {
            launch: self.launch,
            kernel: self.kernel.into(),
            needed: self.needed,
        }
    }
}

/// As [`ChainHop`]'s: `skipped launch 3 (softmax), which needed memory 12`.
impl fmt::Display for ChainHopRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skipped launch {} ({}), which needed memory {}",
            self.launch, self.kernel, self.needed
        )
    }
}

/// Why bytes cannot be trusted, read in place: what a [`TaintReport`]
/// holds, borrowed from the world rather than copied out of it, so that
/// asking costs no allocation however long the chain.
/// [`World::read_taint`](crate::World::read_taint) gives it, for a
/// scheduler with no heap to spare on a read (one without `std`, say),
/// which walks the chain hop by hop or prints it through `core::fmt` in
/// the report's words; [`to_report`](Self::to_report) copies it out. It
/// borrows the world, so the world cannot change while it is held.
#[derive(Clone, Copy)]
pub struct TaintRef<'w> {
    graph: &'w FailureGraph,
    failure: FailureKey,
    origin: Origin,
}

/// What a failure whose entry is gone reports: the report's defaults.
/// A claim holds its failure, so a world that keeps its invariants never
/// gives it; it is here so that a read never panics.
static NO_ERROR: ErrorInfo = ErrorInfo {
    kind: String::new(),
    kernel: String::new(),
    message: String::new(),
};

impl<'w> TaintRef<'w> {
    /// The bytes carry `failure` through `origin`, in `graph`.
    pub(crate) fn new(graph: &'w FailureGraph, failure: FailureKey, origin: Origin) -> Self {
        TaintRef {
            graph,
            failure,
            origin,
        }
    }

    /// The failure's entry, which a claim holds (so it is there in a world
    /// that keeps its invariants).
    fn entry(&self) -> Option<&'w Failure> {
        self.graph.failures.get(self.failure)
    }

    /// The failure's id, as [`TaintReport::failure`].
    pub fn failure(&self) -> FailureId {
        self.entry().map_or(FailureId::ZERO, |f| f.id)
    }

    /// Its root error, as [`TaintReport::error`].
    pub fn error(&self) -> &'w ErrorInfo {
        self.entry().map_or(&NO_ERROR, |f| &f.error)
    }

    /// How many times it occurred, as [`TaintReport::occurrences`].
    pub fn occurrences(&self) -> u64 {
        self.entry().map_or(0, |f| f.occurrences)
    }

    /// The skipped launches from the root to these bytes, newest first, as
    /// [`TaintReport::chain`]: each hop a look-up of its skip record, at
    /// most `chain_limit` of them.
    pub fn chain(&self) -> Chain<'w> {
        Chain {
            graph: self.graph,
            next: match self.origin {
                Origin::Root => None,
                Origin::Skip(record) => Some(record),
            },
            cut: false,
        }
    }

    /// Whether the chain was cut at `chain_limit` before reaching the
    /// root, as [`TaintReport::truncated`]: the last hop says, so this
    /// walks the chain.
    pub fn truncated(&self) -> bool {
        self.chain().last_cut()
    }

    /// The report, its error and chain copied out of the world: what
    /// [`World::read`](crate::World::read) answers for these bytes.
    pub fn to_report(&self) -> TaintReport {
        let mut hops = self.chain();
        let chain = hops.by_ref().map(|hop| hop.to_hop()).collect();
        TaintReport {
            failure: self.failure(),
            error: self.error().clone(),
            occurrences: self.occurrences(),
            chain,
            truncated: hops.cut,
        }
    }
}

impl fmt::Debug for TaintRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaintRef")
            .field("failure", &self.failure())
            .field("error", self.error())
            .field("occurrences", &self.occurrences())
            .field("chain", &self.chain())
            .field("truncated", &self.truncated())
            .finish()
    }
}

/// As [`TaintReport`]'s, word for word, with no allocation.
impl fmt::Display for TaintRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hops = self.chain();
        write_taint(f, self.failure(), self.error(), hops.by_ref())?;
        write_cut(f, hops.cut)
    }
}

/// The hops of a [`TaintRef`]'s chain, newest first, each read from its
/// skip record as it is reached.
#[derive(Clone)]
pub struct Chain<'w> {
    graph: &'w FailureGraph,
    next: Option<RecordKey>,
    /// Whether the last hop reached was cut at `chain_limit`.
    cut: bool,
}

impl Chain<'_> {
    /// Walks the rest of the chain: whether its last hop was cut.
    fn last_cut(mut self) -> bool {
        self.by_ref().for_each(drop);
        self.cut
    }
}

impl<'w> Iterator for Chain<'w> {
    type Item = ChainHopRef<'w>;

    fn next(&mut self) -> Option<ChainHopRef<'w>> {
        let records = &self.graph.records;
        // A record that is gone ends the chain where it is, as the report
        // always has: a world that keeps its invariants holds every
        // record a claim or a later record names.
        let record = records.get(self.next?);
        let Some(record) = record else {
            self.next = None;
            return None;
        };
        self.next = record.cause;
        self.cut = record.cut;
        Some(ChainHopRef {
            launch: record.launch,
            kernel: records.kernel_name(record.kernel),
            needed: record.needed,
        })
    }
}

/// A chain walked to its end stays there.
impl core::iter::FusedIterator for Chain<'_> {}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

/// The first line of a taint's words and its hops, each on a line of its
/// own: what [`TaintReport`] and [`TaintRef`] print alike.
fn write_taint<'h>(
    f: &mut fmt::Formatter<'_>,
    failure: FailureId,
    error: &ErrorInfo,
    hops: impl Iterator<Item = ChainHopRef<'h>>,
) -> fmt::Result {
    write!(f, "tainted by failure {failure} ({error})")?;
    for hop in hops {
        write!(f, "\n    {hop}")?;
    }
    Ok(())
}

/// The last line of a chain cut at `chain_limit`, if it was.
fn write_cut(f: &mut fmt::Formatter<'_>, cut: bool) -> fmt::Result {
    if cut {
        write!(f, "\n    … chain cut at chain_limit")?;
    }
    Ok(())
}

/// The failure and its root error on one line, then each hop, newest
/// first, on a line of its own indented by four spaces, and a last line
/// when the chain was cut: the words of the replay's summary, every hop
/// shown, through `core::fmt` alone, so that an embedder without `std`
/// can log why bytes cannot be trusted. The strings are written as they
/// were given (the replay's summary escapes a log's control characters;
/// this does not).
///
/// ```
/// use taintworld::{Access, Binding, Launch, Outcome, ReadResult, World};
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
/// let ReadResult::Tainted(why) = world.read(&Binding::whole(0, 2, Access::Read))? else {
///     unreachable!("copy was skipped");
/// };
/// assert_eq!(
///     why.to_string(),
///     "tainted by failure 1 (launch in fill: bad grid)\n    skipped launch 1 (copy), which needed memory 1"
/// );
/// # Ok::<(), taintworld::Error>(())
/// ```
impl fmt::Display for TaintReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hops = self.chain.iter().map(ChainHopRef::from);
        write_taint(f, self.failure, &self.error, hops)?;
        write_cut(f, self.truncated)
    }
}

/// What a host read of a binding finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadResult {
    /// No byte carries a failure: each was last written by work that ran,
    /// or not written since its allocation was made (SPEC §10, 4).
    Clean,
    /// Some byte carries a failure: the claim with the lowest start decides.
    Tainted(TaintReport),
    /// The binding is not this world's to answer for.
    Unresolved,
    /// The device is faulted; no byte can be trusted.
    DeviceFault(ErrorInfo),
}

/// `clean`, `unresolved`, `device fault (kind: message)` as the replay's
/// summary gives the fault, or a tainted read's [`TaintReport`], lines
/// and all.
impl fmt::Display for ReadResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadResult::Clean => f.write_str("clean"),
            ReadResult::Tainted(report) => fmt::Display::fmt(report, f),
            ReadResult::Unresolved => f.write_str("unresolved"),
            ReadResult::DeviceFault(error) => {
                write!(f, "device fault ({}: {})", error.kind, error.message)
            }
        }
    }
}

/// What `capture_end` made of a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureResult {
    /// The graph was created with the recorded launches' write sets.
    Ok,
    /// A launch in the window failed or was skipped: no graph, and the
    /// report of the failure that doomed it (chain from the memory that
    /// stopped the skip; empty for a failed launch).
    Failed(TaintReport),
}

/// What `profile_end` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileResult {
    /// Nothing failed or was skipped while the profile was open.
    Valid,
    /// The first failure while it was open, as it was then.
    Invalid {
        /// Its id.
        failure: FailureId,
        /// Its error.
        error: ErrorInfo,
    },
}

/// What `sync` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncResult {
    /// The device is healthy.
    Ok,
    /// The device faulted (the first fault).
    DeviceFault(ErrorInfo),
}

/// The counters of a world, as of now.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Failures alive (carried or pinned).
    pub live_failures: u64,
    /// Allocations holding at least one claim.
    pub tainted_allocations: u64,
    /// Bytes carrying a failure, unbacked allocations included. Exact: a
    /// `u128`, since allocations of up to `u64::MAX` bytes each can carry
    /// more than `u64::MAX` bytes between them (SPEC §8 reports the count,
    /// not a capped one).
    pub tainted_bytes: u128,
    /// Claims.
    pub claims: u64,
    /// Failure ids minted so far.
    pub failures_minted: u64,
    /// Bindings that did not resolve, counted over every accepted call that
    /// binds memory (launches, host writes, reads and `read_failure`, write
    /// scopes, replays); not by
    /// [`World::resolve_binding`](crate::World::resolve_binding), which only
    /// asks.
    pub unresolved_bindings: u64,
    /// Skip records alive.
    pub live_records: u64,
    /// Allocations alive.
    pub allocations: u64,
    /// Launches processed (the next launch's number).
    pub launches: u64,
}

/// A look at one live failure.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailureInfo<'w> {
    /// Its id.
    pub id: FailureId,
    /// Its root error.
    pub error: &'w ErrorInfo,
    /// How many times it occurred.
    pub occurrences: u64,
    /// How many launches it skipped.
    pub skipped: u64,
    /// How many allocations carry it.
    pub carriers: u64,
    /// How many doomed capture windows pin it.
    pub pins: u64,
}

impl<'w> FailureInfo<'w> {
    /// The look at `failure`.
    pub(crate) fn of(failure: &'w Failure) -> Self {
        Self {
            id: failure.id,
            error: &failure.error,
            occurrences: failure.occurrences,
            skipped: failure.skipped,
            carriers: failure.carriers,
            pins: failure.pins,
        }
    }
}

/// A look at one live skip record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordInfo<'w> {
    /// The skipped launch's number. One skip makes one record, so a number
    /// names one record, but for checked replays
    /// ([`World::replay_checked`](crate::World::replay_checked)): their
    /// skips take the numbers the launches were captured with, and every
    /// replay that skips a launch adds a record under its number.
    pub launch: u64,
    /// Its kernel.
    pub kernel: &'w str,
    /// The memory id it needed.
    pub needed: u64,
    /// The launch number of its cause, `None` for the root or a cut.
    pub cause: Option<u64>,
    /// Its depth.
    pub depth: u32,
    /// Whether its chain was cut.
    pub cut: bool,
    /// The failure it read, which its write set carries.
    pub failure: FailureId,
}

/// A look at one claim.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimInfo {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// The failure.
    pub failure: FailureId,
    /// The launch number of its origin record, `None` for the root.
    pub origin: Option<u64>,
}

/// How a write scope ended (see [`World::scope`](crate::World::scope)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeOutcome<T, E> {
    /// The body returned `Ok`: the write set was released.
    Ran(T),
    /// The body returned `Err`: the write set carries the error.
    Failed {
        /// The failure the write set now carries.
        failure: FailureId,
        /// The body's error.
        error: E,
    },
    /// The read set was tainted: the body did not run, and the write set
    /// carries the failure read.
    Skipped {
        /// The failure read.
        failure: FailureId,
        /// The memory id of the deciding binding.
        needed: u64,
    },
}

/// The error a write scope's body returns: what the failure records. The
/// failure's kernel is the scope's (the `kernel` given to
/// [`World::scope`](crate::World::scope)), as a failed launch's is the
/// launch's; the error supplies only its kind and message.
pub trait ScopeError {
    /// The class of error.
    fn kind(&self) -> &str;
    /// What the runtime said.
    fn message(&self) -> &str;
}

/// Its `kernel` is not read: the failure is recorded under the scope's
/// kernel, and [`ScopeOutcome::Failed`] hands the error back as the body
/// returned it.
impl ScopeError for ErrorInfo {
    fn kind(&self) -> &str {
        &self.kind
    }
    fn message(&self) -> &str {
        &self.message
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;
    use alloc::vec;

    use super::{ChainHop, ChainHopRef, ErrorInfo, FailureId, ReadResult, TaintReport};
    use crate::world::launch::Verdict;

    fn failure(id: u64) -> FailureId {
        FailureId::new(id).expect("a failure id is never 0")
    }

    #[test]
    fn answers_can_be_tallied_compared_cloned_and_named() {
        use crate::{Access, Binding, Launch, Outcome, ScopeOutcome, World};
        use hashbrown::HashMap;

        let mut world = World::default();
        world.alloc(0, 1, 8).unwrap();
        let out = [Binding::whole(0, 1, Access::Write)];
        let bad = Outcome::Failed {
            kind: "launch",
            message: "bad grid",
        };
        let fill = Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &out[..],
            outcome: bad,
        };
        let mut tally: HashMap<Verdict, u32> = HashMap::new();
        for _ in 0..3 {
            *tally
                .entry(world.launch(&fill).unwrap().verdict)
                .or_default() += 1;
        }
        assert_eq!(tally.get(&Verdict::Failed(failure(1))), Some(&3));
        let first = world.failure(failure(1)).unwrap();
        assert_eq!(world.failures().next(), Some(first));
        assert_eq!(u64::from(first.id), 1);
        assert_eq!(u64::from(failure(7)), 7);
        let ran: ScopeOutcome<u8, ErrorInfo> = ScopeOutcome::Ran(7);
        assert_eq!(ran.clone(), ran);
        assert_eq!(Access::ReadWrite.to_string(), "read_write");
    }

    #[test]
    fn a_cut_chain_prints_every_hop_newest_first_and_then_the_cut() {
        let hop = |launch, kernel: &str, needed| ChainHop {
            launch,
            kernel: kernel.into(),
            needed,
        };
        let report = TaintReport {
            failure: failure(2),
            error: ErrorInfo::new("compile", "embed", "bad PTX"),
            occurrences: 1,
            chain: vec![hop(9, "softmax", 12), hop(4, "matmul", 10)],
            truncated: true,
        };
        // A hop alone, owned or borrowed, prints as its line does.
        let line = "skipped launch 9 (softmax), which needed memory 12";
        assert_eq!(report.chain[0].to_string(), line);
        assert_eq!(ChainHopRef::from(&report.chain[0]).to_string(), line);
        assert_eq!(
            ChainHopRef::from(&report.chain[0]).to_hop(),
            report.chain[0]
        );
        assert_eq!(
            ReadResult::Tainted(report).to_string(),
            "tainted by failure 2 (compile in embed: bad PTX)\n    \
             skipped launch 9 (softmax), which needed memory 12\n    \
             skipped launch 4 (matmul), which needed memory 10\n    \
             … chain cut at chain_limit"
        );
    }

    /// A taint read in place debugs as what it would copy out: its
    /// failure, error and count, each hop, and whether the chain was cut,
    /// field by field as the report's own debug names them.
    #[test]
    fn a_taint_read_in_place_debugs_as_the_report_it_would_copy_out() {
        use alloc::format;

        use crate::{Access, Binding, Config, Launch, Outcome, World};

        let config = Config {
            chain_limit: 1,
            ..Config::default()
        };
        let mut world = World::new(config).unwrap();
        for memory in 1..=3 {
            world.alloc(0, memory, 8).unwrap();
        }
        let launch = |kernel, bindings, outcome| Launch {
            kernel,
            stream: 0.into(),
            bindings,
            outcome,
        };
        let bad = Outcome::Failed {
            kind: "launch",
            message: "bad grid",
        };
        let fill = [Binding::whole(0, 1, Access::Write)];
        let copy = [
            Binding::whole(0, 1, Access::Read),
            Binding::whole(0, 2, Access::Write),
        ];
        let again = [
            Binding::whole(0, 2, Access::Read),
            Binding::whole(0, 3, Access::Write),
        ];
        world.launch(&launch("fill", &fill, bad)).unwrap();
        world.launch(&launch("copy", &copy, Outcome::Ok)).unwrap();
        world.launch(&launch("again", &again, Outcome::Ok)).unwrap();
        let taint = world
            .read_taint(&Binding::whole(0, 3, Access::Read))
            .unwrap()
            .expect("again was skipped");
        assert_eq!(
            format!("{taint:?}"),
            "TaintRef { failure: FailureId(1), error: ErrorInfo { kind: \"launch\", \
             kernel: \"fill\", message: \"bad grid\" }, occurrences: 1, chain: \
             [ChainHopRef { launch: 2, kernel: \"again\", needed: 2 }], truncated: true }"
        );
        assert_eq!(
            format!("{:?}", taint.chain()),
            "[ChainHopRef { launch: 2, kernel: \"again\", needed: 2 }]"
        );
    }

    #[test]
    fn each_other_answer_prints_in_a_few_words() {
        let fault = ErrorInfo::new("device", "device", "illegal address");
        assert_eq!(ReadResult::Clean.to_string(), "clean");
        assert_eq!(ReadResult::Unresolved.to_string(), "unresolved");
        assert_eq!(
            ReadResult::DeviceFault(fault).to_string(),
            "device fault (device: illegal address)"
        );
        assert_eq!(Verdict::Ran.to_string(), "ran");
        assert_eq!(
            Verdict::Failed(failure(3)).to_string(),
            "failed with failure 3"
        );
        let skipped = Verdict::Skipped {
            failure: failure(3),
            needed: 7,
        };
        assert_eq!(
            skipped.to_string(),
            "skipped: it needed memory 7, which carried failure 3"
        );
        assert_eq!(Verdict::DryRun.to_string(), "dry run");
    }
}
