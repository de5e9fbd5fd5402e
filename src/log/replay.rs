//! Replaying a launch log through a [`World`]: the main job of the
//! `taintworld` command, as a library call so that tests, benches and an
//! embedding program get exactly what the command prints.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::io;

use crate::log::{
    CaptureEntry, CaptureResult as LogCapture, Event, FinalState, LaunchResult as Entry, Line,
    LogBinding, Outcome as LogOutcome, ProfileEntry, ProfileResult as LogProfile, ReadEntry,
    ReadResult as LogRead, Rejected, Report, SyncEntry,
};
use crate::{
    Allocation, Binding, CaptureResult, Config, Error, ErrorInfo, FailureId, Launch, Outcome,
    ProfileResult, ReadResult, StreamRef, SyncResult, Verdict, World,
};

/// How a replay is run: the `taintworld replay` command's options, as a
/// library caller sets them. [`Replay::new`] checks them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Launch numbers processed as if they failed with
    /// `{"kind":"injected","message":"injected failure"}` (a skip still
    /// wins).
    pub fail_launches: BTreeSet<u64>,
    /// Skip bad lines (listed under `rejected`) instead of stopping.
    pub keep_going: bool,
    /// Unresolved bindings are bad input.
    pub strict: bool,
    /// Overrides the header's `max_streams`.
    pub max_streams: Option<u64>,
    /// Overrides the header's `chain_limit`.
    pub chain_limit: Option<u64>,
    /// Keep the report's lists (`launch_results`, `reads`, `rejected`, …).
    /// Off by default, which suits a caller that wants the counts and the
    /// summary's few entries of a long log; the report SPEC §8 lays out
    /// needs them, so set it before [`Report::write_json`]. Without it the
    /// summary keeps only the first
    /// [`SUMMARY_READS`] tainted reads and as many unresolved ones, the first [`SUMMARY_REJECTED`]
    /// rejected lines and the tallies of the first [`SUMMARY_FAILURES`]
    /// failures (the rest only counted), so its memory stays bounded by the
    /// world's live state and not by the log's length.
    pub keep_lists: bool,
    /// Replay graphs with [`World::replay_checked`]: a good replay settles
    /// the captured launches again, each checked as a launch, instead of
    /// reading nothing as SPEC §6 has it. For graphs that read what an
    /// earlier replay wrote (a decoding pass's key/value cache). A good
    /// replay that skipped a launch is listed as
    /// `{"replay":true,"graph","line","verdict":"skipped","failure","needed","launches"}`
    /// (the first launch it skipped decides `failure` and `needed`;
    /// `launches` lists every captured launch it skipped) and counted once in
    /// [`Replay::skipped_replays`] (the summary's "N graph replays skipped
    /// a launch" line), not in `verdicts`, which count launch lines only;
    /// each launch it skipped is tallied against its failure, as a skipped
    /// launch line is.
    pub checked_replays: bool,
}

/// Why a replay could not start, or stopped early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The options ask for a world SPEC §1 forbids (`max_streams` or
    /// `chain_limit` of `Some(0)`): [`Replay::new`] refuses them, rather
    /// than charge the first line of the log with the options' fault.
    #[error("the replay's options: {0}")]
    Options(Error),
    /// The log could not be read (a failing device, a `.gz` that is cut
    /// short or broken). Its message and source are the I/O error's own,
    /// so a caller printing the error and its sources says it once.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A bad line, without [`ReplayOptions::keep_going`].
    #[error("line {line}: {error}")]
    BadLine {
        /// The 1-based physical line.
        line: u64,
        /// What was wrong, as the report's `rejected` entry and the
        /// command's `error: line N:` give it: the reader's or the world's
        /// words, and where the replay remembers it, the line that made,
        /// opened or freed what the line names.
        error: String,
        /// The world's own error, typed, where the world refused the line
        /// (a duplicate memory id, a range past an allocation's end, an
        /// unbalanced capture, …), for a caller to act on; `None` where the
        /// line is no good event at all (malformed, an unknown op, a header
        /// out of place), which only its text describes.
        world: Option<Error>,
    },
}

/// Why a line was refused: its text, and the world's typed error where
/// the world refused it.
struct Refused {
    text: String,
    world: Option<Error>,
}

impl From<String> for Refused {
    fn from(text: String) -> Self {
        Refused { text, world: None }
    }
}

impl From<&str> for Refused {
    fn from(text: &str) -> Self {
        Refused::from(text.to_owned())
    }
}

/// What the human summary shows of one failure.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailureTally {
    /// The root error.
    pub error: ErrorInfo,
    /// Occurrences, as last seen.
    pub occurrences: u64,
    /// Launches it skipped.
    pub skipped: u64,
    /// Of those, the captured launches that graph replays skipped
    /// ([`ReplayOptions::checked_replays`]): counted apart from the log's launches, whose
    /// verdicts the report counts, so the two can be told apart.
    pub skipped_in_replays: u64,
    /// Allocations freed while they carried it: buffers whose contents
    /// it had made garbage when the program let them go (a training
    /// step's log frees most of what a failure tainted before it ends).
    pub freed: u64,
    /// The bytes of those allocations that carried it.
    pub freed_bytes: u128,
}

/// How many tainted reads a replay keeps for the summary when the lists
/// are not kept ([`Replay::tainted_reads`]; all of them are counted).
pub const SUMMARY_READS: usize = 5;

/// How many memory ids [`Carriers`] names of the allocations a failure
/// taints (the smallest ids); the rest are counted.
pub const CARRIERS_SHOWN: usize = 10;

/// What one live failure taints in the world as it stands: how many
/// allocations carry it, how many of their bytes, and the smallest of
/// their memory ids. What an engineer injecting a failure wants to see:
/// which buffers it tainted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Carriers {
    /// The failure's id.
    pub failure: u64,
    /// The allocations holding at least one claim of it.
    pub allocations: u64,
    /// The bytes carrying it, summed over those allocations.
    pub bytes: u128,
    /// The memory ids of the first [`CARRIERS_SHOWN`] of them, smallest
    /// first.
    pub memory: Vec<u64>,
}

/// What the failures [`Replay::carriers`] leaves out taint, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CarriersRest {
    /// How many failures that some allocation carries were left out.
    pub failures: u64,
    /// The bytes carrying them.
    pub bytes: u128,
}

/// Keeps `memory` among the [`CARRIERS_SHOWN`] smallest ids of `ids`
/// (sorted, each once).
fn keep_smallest(ids: &mut Vec<u64>, memory: u64) {
    let Err(at) = ids.binary_search(&memory) else {
        return;
    };
    if at < CARRIERS_SHOWN {
        ids.insert(at, memory);
        ids.truncate(CARRIERS_SHOWN);
    }
}

/// How many allocations and frees a replay remembers, newest first, so
/// that an error about a memory id that is not live can say where it was
/// freed; and, apart from them, how many failed captures and graph
/// destructions, so that an error about a graph id that is not live can say
/// why, and how many profile endings, so that ending a profile that is not
/// open can say where it ended. Bounded so that a replay's memory does not
/// grow with the log: an ending older than the last this many of its kind
/// goes unmentioned.
pub const REMEMBERED_LIFETIMES: usize = 4096;

/// How many rejected lines the summary keeps when the lists are not kept
/// (all of them are counted).
pub const SUMMARY_REJECTED: usize = 10;

/// How many failures the summary keeps a [`FailureTally`] of: the first
/// this many to fail an operation (a launch, host write, replay or
/// reservation) or skip a launch. Later ones are only counted, in
/// [`Untallied`], so that a log of a million distinct errors costs the
/// summary no more memory than one of twenty.
pub const SUMMARY_FAILURES: usize = 20;

/// The failed operations and skips of the failures the summary keeps no
/// tally of (those past the first [`SUMMARY_FAILURES`]). Counted as
/// operations, not as a failure's occurrences, so the summary words them
/// so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Untallied {
    /// Failed launches, host writes, replays and reservations whose
    /// failure has no tally.
    pub failed: u64,
    /// Launches skipped by a failure that has no tally.
    pub skipped: u64,
    /// Allocations freed while carrying a failure that has no tally, each
    /// once however many such failures it carried.
    pub freed: u64,
    /// The bytes of those allocations that carried such failures.
    pub freed_bytes: u128,
}

/// The summary's failure tallies: at most [`SUMMARY_FAILURES`] of them,
/// and a count of what the rest did.
#[derive(Debug, Default)]
struct Tallies {
    by_id: BTreeMap<u64, FailureTally>,
    untallied: Untallied,
}

/// A replay in progress: feed it lines, then take the report.
pub struct Replay {
    options: ReplayOptions,
    world: Option<World>,
    report: Report,
    /// Whether the next event line is the first (the header's place).
    first: bool,
    /// Per failure id: its error, occurrences and skips, for the summary.
    tallies: Tallies,
    /// Rejected lines, whether or not the list is kept.
    rejected: u64,
    /// Tainted reads for the summary when lists are not kept.
    first_tainted: Vec<ReadEntry>,
    /// Tainted reads, whether or not the list is kept.
    tainted: u64,
    /// Unresolved reads for the summary when lists are not kept.
    first_unresolved: Vec<ReadEntry>,
    /// Unresolved reads, whether or not the list is kept.
    unresolved: u64,
    /// Launches of `fail_launches` skipped anyway, in log order.
    skipped_injections: Vec<SkippedInjection>,
    /// Failed captures, and failed host writes and graph replays, counted
    /// for the summary whether or not the lists are kept.
    failed_captures: Counted,
    failed_host_ops: Counted,
    /// Checked replays that skipped a launch, counted whether or not lists
    /// are kept.
    skipped_replays: Counted,
    /// Profiles that ended invalid, counted whether or not lists are kept.
    invalid_profiles: Counted,
    /// The line of the first binding that did not resolve (the world
    /// counts them).
    first_unresolved_binding: Option<u64>,
    /// The line of the device fault, if one happened (the world keeps
    /// its error: SPEC §6, the first fault wins).
    fault_line: Option<u64>,
    /// Reads and syncs that answered the device fault.
    fault_answers: FaultAnswers,
    bindings: Vec<Binding>,
    /// The last allocations, frees and graphs made and ended, and the
    /// open capture windows and profiles: to say where an id died, or was
    /// made or opened when it is live or open already.
    lifetimes: Lifetimes,
    /// Per unresolved read of the first [`SUMMARY_READS`] (by line): why
    /// it did not resolve, where that is known.
    unresolved_why: BTreeMap<u64, UnresolvedWhy>,
}

/// What a replay has done so far, in counts: its world and lists can be
/// large, and a caller printing an error that holds one wants a line.
impl core::fmt::Debug for Replay {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Replay")
            .field("options", &self.options)
            .field("events", &self.report.events)
            .field("launches", &self.world.as_ref().map_or(0, World::launches))
            .field("rejected", &self.rejected)
            .field("tainted_reads", &self.tainted)
            .field("unresolved_reads", &self.unresolved)
            .field("failed_captures", &self.failed_captures.count)
            .field("failed_host_ops", &self.failed_host_ops.count)
            .field("skipped_replays", &self.skipped_replays.count)
            .field("invalid_profiles", &self.invalid_profiles.count)
            .field("device_fault_line", &self.fault_line)
            .finish_non_exhaustive()
    }
}

/// How many times an outcome happened, and the line of the first.
#[derive(Clone, Copy, Debug, Default)]
struct Counted {
    count: u64,
    first: Option<u64>,
}

impl Counted {
    /// One more, at `line`.
    fn note(&mut self, line: u64) {
        self.count += 1;
        self.first.get_or_insert(line);
    }
}

/// Why an unresolved read did not resolve, as far as the replay knew.
#[derive(Clone, Copy, Debug)]
enum UnresolvedWhy {
    /// Its memory was freed at this line.
    FreedAt(u64),
    /// Its memory was live on slot `live`, not on `read`, the slot the
    /// read's stream folds onto.
    LiveOn { live: u64, read: u64 },
}

/// What the replay remembers of the ids that were live once: the last
/// [`REMEMBERED_LIFETIMES`] allocations and frees, and apart from them the
/// last as many graphs made and ended (a capture that made one or failed,
/// a `graph_destroy`), so that an error about an id that is not live, or
/// is live already, can say why; the line that opened or last ended a
/// capture window, by slot (as many as the world has slots); and the line
/// that opened each open profile, by id, and apart from them the last
/// [`REMEMBERED_LIFETIMES`] profile endings, so that ending a capture or a
/// profile that is not open can say where it ended.
#[derive(Debug, Default)]
struct Lifetimes {
    memory: Newest<MemoryEntry>,
    graphs: Newest<GraphEntry>,
    windows: HashMap<u64, Window>,
    profiles: HashMap<u64, u64>,
    profiles_ended: Newest<u64>,
}

/// The newest capture window of one slot: open since this line, or ended
/// at it.
#[derive(Clone, Copy, Debug)]
enum Window {
    /// A `capture_begin` opened it at this line, and it is open.
    OpenedAt(u64),
    /// A `capture_end` ended it at this line, and none is open.
    EndedAt(u64),
}

/// The newest allocation or free of one memory id.
#[derive(Clone, Copy, Debug)]
struct MemoryEntry {
    line: u64,
    /// `Some(slot)` for a free of an allocation made on `slot`.
    freed: Option<u64>,
}

/// The newest thing that happened to one graph id, and its line.
#[derive(Clone, Copy, Debug)]
struct GraphEntry {
    line: u64,
    event: GraphEvent,
}

/// How a graph id became live, stopped being live, or never became so.
#[derive(Clone, Copy, Debug)]
enum GraphEvent {
    /// A capture ended well and made the graph.
    Made,
    /// A capture ended `capture_failed` with this failure, and made no
    /// graph.
    CaptureFailed(u64),
    /// A `graph_destroy`.
    Destroyed,
}

/// The last [`REMEMBERED_LIFETIMES`] entries made, and for each id among
/// them the newest. An id whose newest entry says it ended ended for that
/// reason; an id with no entry ended too long ago to name, if at all.
/// Every entry after a remembered one is newer, so remembered too: the
/// note is never stale. A look-up is one hash probe, whatever the number
/// remembered.
#[derive(Debug)]
struct Newest<T> {
    /// Id and sequence number, oldest first: what to forget next.
    order: VecDeque<(u64, u64)>,
    /// Per id, the number of its newest entry (to tell whether forgetting
    /// the oldest entry forgets this one) and the entry.
    newest: HashMap<u64, (u64, T)>,
    /// The number of the next entry.
    next: u64,
}

impl<T> Default for Newest<T> {
    fn default() -> Self {
        Newest {
            order: VecDeque::new(),
            newest: HashMap::new(),
            next: 0,
        }
    }
}

impl<T> Newest<T> {
    /// Remembers `entry` as the newest of `id`, forgetting the oldest entry
    /// past [`REMEMBERED_LIFETIMES`].
    fn remember(&mut self, id: u64, entry: T) {
        if self.order.len() >= REMEMBERED_LIFETIMES
            && let Some((old, number)) = self.order.pop_front()
            && self.newest.get(&old).is_some_and(|(n, _)| *n == number)
        {
            self.newest.remove(&old);
        }
        let number = self.next;
        self.next = self.next.wrapping_add(1);
        self.order.push_back((id, number));
        self.newest.insert(id, (number, entry));
    }

    /// The newest entry of `id`, if it is remembered.
    fn get(&self, id: u64) -> Option<&T> {
        self.newest.get(&id).map(|(_, entry)| entry)
    }
}

impl Lifetimes {
    /// Remembers an allocation of `memory` at `line`, or its free
    /// (`freed`: the slot the allocation was made on).
    fn remember(&mut self, memory: u64, line: u64, freed: Option<u64>) {
        self.memory.remember(memory, MemoryEntry { line, freed });
    }

    /// Remembers what happened to graph id `graph` at `line`.
    fn graph_at(&mut self, graph: u64, line: u64, event: GraphEvent) {
        self.graphs.remember(graph, GraphEntry { line, event });
    }

    /// The line that made graph `graph`, if that is the newest thing
    /// remembered of it.
    fn graph_made_at(&self, graph: u64) -> Option<u64> {
        match self.graphs.get(graph)? {
            GraphEntry {
                line,
                event: GraphEvent::Made,
            } => Some(*line),
            _ => None,
        }
    }

    /// The line that freed `memory` and the slot it had been made on, if
    /// that free is the newest thing remembered of it.
    fn freed_at(&self, memory: u64) -> Option<(u64, u64)> {
        let l = self.memory.get(memory)?;
        Some((l.line, l.freed?))
    }

    /// The line that freed `memory`, if that is the newest thing
    /// remembered of it and the allocation was made on `slot`: a binding
    /// on another slot would not have resolved had it been live, so its
    /// free is no reason to give.
    fn freed_on(&self, memory: u64, slot: u64) -> Option<u64> {
        self.freed_at(memory)
            .and_then(|(line, made_on)| (made_on == slot).then_some(line))
    }

    /// The world's refusal `error`, with its text (`text`) saying why its
    /// id is not live when the error is that and the reason is remembered:
    /// where its memory was freed (a second free, or in strict mode a
    /// binding on the slot the memory was made on), or where its graph's
    /// capture failed or the graph was destroyed (a replay or a
    /// `graph_destroy` of it); or what made, opened or allocated what is
    /// live already.
    fn text(&self, error: Error, text: String) -> Refused {
        let text = match error {
            Error::UnknownMemory { memory } => match self.freed_at(memory) {
                Some((line, _)) => format!("{text} (freed at line {line})"),
                None => text,
            },
            Error::Unresolved { memory, slot, .. } => match self.freed_on(memory, slot) {
                Some(line) => format!("{text} (memory {memory} was freed at line {line})"),
                None => text,
            },
            Error::UnknownGraph { graph } => match self.graphs.get(graph) {
                Some(GraphEntry {
                    line,
                    event: GraphEvent::CaptureFailed(failure),
                }) => format!(
                    "{text} (its capture failed at line {line}, with failure {failure}, \
                     and made no graph)"
                ),
                Some(GraphEntry {
                    line,
                    event: GraphEvent::Destroyed,
                }) => format!("{text} (destroyed at line {line})"),
                _ => text,
            },
            Error::GraphLive { graph } => match self.graph_made_at(graph) {
                Some(line) => {
                    format!("{text} (made at line {line}; a graph_destroy of it frees the id)")
                }
                None => text,
            },
            Error::DuplicateMemory { memory } => match self.memory.get(memory) {
                Some(MemoryEntry { line, freed: None }) => {
                    format!("{text} (allocated at line {line})")
                }
                _ => text,
            },
            Error::CaptureOpen { slot, .. } => match self.windows.get(&slot) {
                Some(Window::OpenedAt(line)) => format!("{text} (opened at line {line})"),
                _ => text,
            },
            Error::NoCapture { slot, .. } => match self.windows.get(&slot) {
                Some(Window::EndedAt(line)) => {
                    format!("{text} (the slot's last one ended at line {line})")
                }
                _ => text,
            },
            Error::ProfileOpen { profile } => match self.profiles.get(&profile) {
                Some(line) => format!("{text} (opened at line {line})"),
                None => text,
            },
            Error::ProfileNotOpen { profile } => match self.profiles_ended.get(profile) {
                Some(line) => format!("{text} (it ended at line {line})"),
                None => text,
            },
            _ => text,
        };
        Refused {
            text,
            world: Some(error),
        }
    }

    /// [`text`](Self::text) of the error alone: how every error the world
    /// gives a replayed line becomes that line's error.
    fn explain(&self, error: Error) -> Refused {
        let text = error.to_string();
        self.text(error, text)
    }

    /// [`explain`](Self::explain) of a replay of graph `graph`: an error
    /// about one of its recorded bindings (a range past the end of an id
    /// made again smaller since the capture, or in strict mode a binding
    /// that no longer resolves) is about lines before the replay's, so it
    /// names the graph, and where it was made when that is remembered.
    fn in_graph(&self, graph: u64, error: Error) -> Refused {
        let mut text = error.to_string();
        if matches!(
            error,
            Error::RangePastEnd { .. } | Error::RangeReversed { .. } | Error::Unresolved { .. }
        ) {
            text = match self.graph_made_at(graph) {
                Some(line) => format!("{text} in graph {graph} (made at line {line})"),
                None => format!("{text} in graph {graph}"),
            };
        }
        self.text(error, text)
    }
}

/// A launch of [`ReplayOptions::fail_launches`] that read tainted bytes
/// and was skipped, as it would have been without the injection (see
/// [`Replay::skipped_injections`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkippedInjection {
    /// The launch's number.
    pub launch: u64,
    /// The launch's line.
    pub line: u64,
}

/// How many host reads and syncs answered `device_fault`, counted for the
/// summary whether or not lists are kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultAnswers {
    /// Reads of resolved bindings after the fault.
    pub reads: u64,
    /// Syncs after the fault.
    pub syncs: u64,
}

/// The line of the first of each outcome a replay counts for the summary
/// but lists only in the report, or not at all ([`Replay::failed_captures`]
/// and the three counts beside it, and the report's
/// `unresolved_bindings`), kept whether or not lists are: where a reader of
/// the summary starts looking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FirstLines {
    /// The first `capture_end` that ended `capture_failed`.
    pub failed_capture: Option<u64>,
    /// The first host write or graph replay that failed.
    pub failed_host_op: Option<u64>,
    /// The first checked graph replay that skipped a launch.
    pub skipped_replay: Option<u64>,
    /// The first `profile_end` that ended invalid.
    pub invalid_profile: Option<u64>,
    /// The first line with a binding that did not resolve (the report's
    /// `unresolved_bindings`).
    pub unresolved_binding: Option<u64>,
}

impl Replay {
    /// A replay with `options`; the world is made when the first event
    /// shows whether there is a header.
    ///
    /// # Errors
    ///
    /// [`ReplayError::Options`] when `options` set `max_streams` or
    /// `chain_limit` to `Some(0)`, which no world takes (SPEC §1): the
    /// fault is the caller's, and no line of any log could be to blame.
    pub fn new(options: ReplayOptions) -> Result<Self, ReplayError> {
        if options.max_streams == Some(0) {
            return Err(ReplayError::Options(Error::ZeroStreams));
        }
        if options.chain_limit == Some(0) {
            return Err(ReplayError::Options(Error::ZeroChainLimit));
        }
        Ok(Replay {
            options,
            world: None,
            report: Report::default(),
            first: true,
            tallies: Tallies::default(),
            rejected: 0,
            first_tainted: Vec::new(),
            tainted: 0,
            first_unresolved: Vec::new(),
            unresolved: 0,
            skipped_injections: Vec::new(),
            failed_captures: Counted::default(),
            failed_host_ops: Counted::default(),
            skipped_replays: Counted::default(),
            invalid_profiles: Counted::default(),
            first_unresolved_binding: None,
            fault_line: None,
            fault_answers: FaultAnswers::default(),
            bindings: Vec::new(),
            lifetimes: Lifetimes::default(),
            unresolved_why: BTreeMap::new(),
        })
    }

    /// The world as it stands (made at the first event).
    pub fn world(&self) -> Option<&World> {
        self.world.as_ref()
    }

    /// The per-failure tallies seen so far, by failure id: those of the
    /// first [`SUMMARY_FAILURES`] failures to fail an operation (a launch,
    /// host write, replay or reservation) or skip a launch.
    pub fn tallies(&self) -> &BTreeMap<u64, FailureTally> {
        &self.tallies.by_id
    }

    /// What the failures past the first [`SUMMARY_FAILURES`] did, counted.
    pub fn untallied(&self) -> Untallied {
        self.tallies.untallied
    }

    /// How many lines were rejected (with `keep_going`), whether or not
    /// the list is kept: without `keep_lists` the report lists only the
    /// first [`SUMMARY_REJECTED`].
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// How many reads were tainted, whether or not the list is kept: the
    /// summary says how many it leaves out.
    pub fn tainted_read_count(&self) -> u64 {
        self.tainted
    }

    /// The tainted reads the summary shows: all of them when lists are
    /// kept, else the first [`SUMMARY_READS`].
    pub fn tainted_reads(&self) -> impl Iterator<Item = &ReadEntry> {
        self.reads_answered(&self.first_tainted, |r| matches!(r, LogRead::Tainted(_)))
    }

    /// The kept reads whose answer is `answered`'s, then `first`: one of
    /// the two is empty, as lists are kept or not.
    fn reads_answered<'a>(
        &'a self,
        first: &'a [ReadEntry],
        answered: fn(&LogRead) -> bool,
    ) -> impl Iterator<Item = &'a ReadEntry> {
        let kept = self
            .report
            .reads
            .iter()
            .filter(move |r| answered(&r.result));
        kept.chain(first)
    }

    /// How many reads did not resolve (SPEC §2: their memory is not live
    /// on the stream named), whether or not the list is kept.
    pub fn unresolved_read_count(&self) -> u64 {
        self.unresolved
    }

    /// The unresolved reads the summary shows: all of them when lists are
    /// kept, else the first [`SUMMARY_READS`].
    pub fn unresolved_reads(&self) -> impl Iterator<Item = &ReadEntry> {
        self.reads_answered(&self.first_unresolved, |r| matches!(r, LogRead::Unresolved))
    }

    /// Where the memory of the unresolved read at `line` was freed, for
    /// one of the first [`SUMMARY_READS`] reads that did not resolve (those
    /// the summary shows): the line of the `free`, if it was among the last
    /// [`REMEMBERED_LIFETIMES`] allocations and frees before the read,
    /// nothing allocated the id again since, and the allocation had been
    /// made on the slot the read names (on another it would not have
    /// resolved either). `None` for any other line, and for a read whose
    /// memory is live on another stream or was never allocated.
    pub fn unresolved_read_freed_at(&self, line: u64) -> Option<u64> {
        match self.unresolved_why.get(&line)? {
            UnresolvedWhy::FreedAt(freed) => Some(*freed),
            UnresolvedWhy::LiveOn { .. } => None,
        }
    }

    /// The slot the memory of the unresolved read at `line` was live on
    /// when the read named another — a read on the wrong stream — for one
    /// of the first [`SUMMARY_READS`] reads that did not resolve. `None`
    /// for any other line, and for a read whose memory was not live.
    pub fn unresolved_read_live_on(&self, line: u64) -> Option<u64> {
        match self.unresolved_why.get(&line)? {
            UnresolvedWhy::LiveOn { live, .. } => Some(*live),
            UnresolvedWhy::FreedAt(_) => None,
        }
    }

    /// The slot the unresolved read at `line` named (its stream folded
    /// onto a slot) when its memory was live on another, as
    /// [`unresolved_read_live_on`](Self::unresolved_read_live_on) gives
    /// that other: so that a read on the wrong stream can be told with
    /// both slots. `None` whenever that gives `None`.
    pub fn unresolved_read_slot(&self, line: u64) -> Option<u64> {
        match self.unresolved_why.get(&line)? {
            UnresolvedWhy::LiveOn { read, .. } => Some(*read),
            UnresolvedWhy::FreedAt(_) => None,
        }
    }

    /// Keeps why the unresolved read at `line` (of `binding`) did not
    /// resolve, if the read is one of the first [`SUMMARY_READS`]
    /// unresolved (the summary shows no more): the slot its memory is live
    /// on, for [`unresolved_read_live_on`](Self::unresolved_read_live_on),
    /// or where it was freed, if that is known, for
    /// [`unresolved_read_freed_at`](Self::unresolved_read_freed_at).
    fn note_unresolved_read(&mut self, line: u64, binding: &LogBinding) {
        if self.unresolved > SUMMARY_READS as u64 {
            return;
        }
        let Some(world) = &self.world else {
            return;
        };
        let Ok(slot) = world.streams().slot_of(StreamRef::Id(binding.stream)) else {
            return;
        };
        let allocations = world.allocations();
        let live = allocations
            .key_of(binding.memory)
            .and_then(|key| allocations.get(key));
        let why = match live {
            Some(allocation) => Some(UnresolvedWhy::LiveOn {
                live: allocation.slot,
                read: slot,
            }),
            None => self
                .lifetimes
                .freed_on(binding.memory, slot)
                .map(UnresolvedWhy::FreedAt),
        };
        if let Some(why) = why {
            self.unresolved_why.insert(line, why);
        }
    }

    /// The launches named in [`ReplayOptions::fail_launches`] that were
    /// skipped anyway, in log order: a skip takes precedence over the
    /// launch's outcome, so the failure injected there changed nothing,
    /// which the report alone cannot tell from a typo. (A launch whose
    /// log outcome is `dry_run` is not among them: injected, it is checked
    /// rather than only resolved, so its skip is the injection's doing.)
    pub fn skipped_injections(&self) -> &[SkippedInjection] {
        &self.skipped_injections
    }

    /// What the first `first` failures by id that some allocation carries
    /// taint now, and what the rest taint, counted. A failure held only by
    /// a doomed capture window or a skip record taints no byte and is not
    /// among them. One pass over the failures and one over the claims,
    /// with memory for `first` failures only; the bytes of all of them sum
    /// to the report's `final.tainted_bytes`.
    pub fn carriers(&self, first: usize) -> (Vec<Carriers>, CarriersRest) {
        let mut rest = CarriersRest::default();
        let Some(world) = &self.world else {
            return (Vec::new(), rest);
        };
        let failures = &world.failure_graph().failures;
        // The `first` smallest ids among the failures that have carriers.
        let mut smallest: BinaryHeap<(u64, u64)> = BinaryHeap::new();
        let mut carrying: u64 = 0;
        for (_, f) in failures.iter().filter(|(_, f)| f.carriers > 0) {
            carrying += 1;
            smallest.push((f.id.get(), f.carriers));
            if smallest.len() > first {
                smallest.pop();
            }
        }
        let mut shown: Vec<Carriers> = smallest
            .into_sorted_vec()
            .into_iter()
            .map(|(failure, allocations)| Carriers {
                failure,
                allocations,
                bytes: 0,
                memory: Vec::new(),
            })
            .collect();
        rest.failures = carrying.saturating_sub(shown.len() as u64);
        for (_, a) in world.allocations().iter() {
            for c in a.claims.iter() {
                let bytes = u128::from(c.end.saturating_sub(c.start));
                let id = failures.get(c.failure).map_or(0, |f| f.id.get());
                match shown.binary_search_by_key(&id, |p| p.failure) {
                    Ok(i) => {
                        let p = &mut shown[i];
                        p.bytes = p.bytes.saturating_add(bytes);
                        keep_smallest(&mut p.memory, a.memory);
                    }
                    Err(_) => rest.bytes = rest.bytes.saturating_add(bytes),
                }
            }
        }
        (shown, rest)
    }

    /// How many captures have ended failed, whether or not lists are kept.
    pub fn failed_captures(&self) -> u64 {
        self.failed_captures.count
    }

    /// How many host writes and graph replays have failed, whether or not
    /// lists are kept.
    pub fn failed_host_writes_and_replays(&self) -> u64 {
        self.failed_host_ops.count
    }

    /// How many checked replays ([`ReplayOptions::checked_replays`]) have
    /// skipped a launch, whether or not lists are kept.
    pub fn skipped_replays(&self) -> u64 {
        self.skipped_replays.count
    }

    /// How many profiles have ended invalid, whether or not lists are kept.
    pub fn invalid_profiles(&self) -> u64 {
        self.invalid_profiles.count
    }

    /// The line of the first failed capture, of the first failed host
    /// write or graph replay, of the first checked replay that skipped, of
    /// the first invalid profile and of the first binding that did not
    /// resolve, whether or not lists are kept.
    pub fn first_lines(&self) -> FirstLines {
        FirstLines {
            failed_capture: self.failed_captures.first,
            failed_host_op: self.failed_host_ops.first,
            skipped_replay: self.skipped_replays.first,
            invalid_profile: self.invalid_profiles.first,
            unresolved_binding: self.first_unresolved_binding,
        }
    }

    /// The device fault, if one happened, with its line: the first
    /// `device_fault` event's (SPEC §6: the first fault wins).
    pub fn device_fault(&self) -> Option<(u64, ErrorInfo)> {
        let line = self.fault_line?;
        match self.world.as_ref()?.sync() {
            SyncResult::DeviceFault(error) => Some((line, error)),
            SyncResult::Ok => None,
        }
    }

    /// How many reads and syncs answered the device fault, whether or not
    /// lists are kept.
    pub fn fault_answers(&self) -> FaultAnswers {
        self.fault_answers
    }

    /// Applies one line of the log. A bad line is an error unless
    /// `keep_going`, in which case it is listed under `rejected` and
    /// counted in `events`, and the replay goes on; without `keep_going` a
    /// bad line changes nothing in the world or the report, not even
    /// `events`, so a caller that goes on past the error gets a report of
    /// the lines it applied. Either way it has had the header's place: a
    /// header after it is bad input (SPEC Appendix A), as the reader has it.
    ///
    /// The line's number is the caller's: a [`LogReader`](super::LogReader)
    /// numbers lines from 1 as SPEC §8 does, and the report and every error
    /// give the number as the caller passed it.
    pub fn apply(&mut self, line: Line) -> Result<(), ReplayError> {
        let number = line.number;
        // A bad blank or comment line is rejected, yet it is no event: it
        // counts nowhere, and a header after it is still first.
        let event = !matches!(&line.event, Err(error) if error.is_blank_or_comment());
        let first = event && std::mem::replace(&mut self.first, false);
        let result = match line.event {
            Err(error) => Err(Refused::from(error.message())),
            Ok(Event::Header(header)) if first => {
                // An accepted header is not an event; a rejected one is.
                match self.make_world(header.max_streams, header.chain_limit) {
                    Ok(()) => return Ok(()),
                    Err(error) => Err(error),
                }
            }
            Ok(event) => self.apply_event(number, event),
        };
        // A line that is not an accepted header counts as an event, a bad
        // one only where the replay goes past it. (It has taken the
        // header's place all the same, as the reader, which rejects a
        // header after it, has it: SPEC Appendix A.)
        if result.is_ok() || self.options.keep_going {
            self.report.events += u64::from(event);
        }
        match result {
            Ok(()) => Ok(()),
            Err(refused) if self.options.keep_going => {
                self.rejected += 1;
                if self.options.keep_lists || self.report.rejected.len() < SUMMARY_REJECTED {
                    self.report.rejected.push(Rejected {
                        line: number,
                        error: refused.text,
                    });
                }
                Ok(())
            }
            Err(refused) => Err(ReplayError::BadLine {
                line: number,
                error: refused.text,
                world: refused.world,
            }),
        }
    }

    fn make_world(
        &mut self,
        max_streams: Option<u64>,
        chain_limit: Option<u64>,
    ) -> Result<(), Refused> {
        let defaults = Config::default();
        let max_streams = self
            .options
            .max_streams
            .or(max_streams)
            .unwrap_or(defaults.max_streams);
        let chain_limit = self
            .options
            .chain_limit
            .or(chain_limit)
            .unwrap_or(u64::from(defaults.chain_limit));
        // SPEC allows any positive integer. A chain of more than `u32::MAX`
        // records would need over 250 GB of them, so a larger limit is the
        // same as `u32::MAX` for every log that can be replayed.
        let chain_limit = u32::try_from(chain_limit).unwrap_or(u32::MAX);
        let world = World::new(Config {
            max_streams,
            num_special: 0,
            chain_limit,
            strict: self.options.strict,
        })
        .map_err(|e| self.lifetimes.explain(e))?;
        self.world = Some(world);
        Ok(())
    }

    fn apply_event(&mut self, line: u64, event: Event) -> Result<(), Refused> {
        if self.world.is_none() {
            // No header: the options' settings or the defaults, which
            // `Replay::new` checked.
            self.make_world(None, None)?;
        }
        let Some(world) = self.world.as_mut() else {
            return Err("no world".into());
        };
        let keep = self.options.keep_lists;
        let unresolved = world.unresolved_bindings();
        match event {
            Event::Header(_) => return Err("header must be the first event".into()),
            Event::Alloc {
                stream,
                memory,
                size,
                outcome,
            } => match outcome {
                Some(LogOutcome::Failed(e)) => {
                    world
                        .alloc_failed(stream, memory, size, &e.kind, &e.message)
                        .map_err(|e| self.lifetimes.explain(e))?;
                    self.lifetimes.remember(memory, line, None);
                    let error = || ErrorInfo::new(&e.kind, World::ALLOC_KERNEL, &e.message);
                    let f = failed_reservation(world, &e.kind, &e.message);
                    tally(&mut self.tallies, world, f, Tallied::Failure, error);
                }
                _ => {
                    world
                        .alloc(stream, memory, size)
                        .map_err(|e| self.lifetimes.explain(e))?;
                    self.lifetimes.remember(memory, line, None);
                }
            },
            Event::Free { memory } => {
                let allocs = world.allocations();
                let alloc = allocs.key_of(memory).and_then(|k| allocs.get(k));
                let made_on = alloc.map(|a| a.slot);
                let carried = alloc.map(|a| carried(world, a)).unwrap_or_default();
                world.free(memory).map_err(|e| self.lifetimes.explain(e))?;
                // Freed, it was live, so `made_on` is known.
                if let Some(slot) = made_on {
                    self.lifetimes.remember(memory, line, Some(slot));
                }
                freed_tainted(&mut self.tallies, &carried);
            }
            Event::Launch {
                kernel,
                stream,
                bindings,
                outcome,
            } => {
                self.bindings.clear();
                self.bindings.extend(bindings.iter().map(Binding::from));
                let number = world.launches();
                let injected = self.options.fail_launches.contains(&number);
                // An injected failure makes a dry run a launch that is
                // checked, so its skip is the injection's doing.
                let skipped_anyway = injected && !matches!(outcome, LogOutcome::DryRun);
                let outcome = if injected {
                    Outcome::Failed {
                        kind: "injected",
                        message: "injected failure",
                    }
                } else {
                    Outcome::from(&outcome)
                };
                let result = world
                    .launch(&Launch {
                        kernel: &kernel,
                        stream: StreamRef::Id(stream),
                        bindings: &self.bindings,
                        outcome,
                    })
                    .map_err(|e| in_binding(world, e, &self.bindings, &self.lifetimes))?;
                self.report.launches += 1;
                let entry = match result.verdict {
                    Verdict::Ran => {
                        self.report.verdicts.ran += 1;
                        None
                    }
                    Verdict::DryRun => {
                        self.report.verdicts.dry_run += 1;
                        Some(Entry::DryRun {
                            launch: result.launch,
                            line,
                        })
                    }
                    Verdict::Failed(f) => {
                        self.report.verdicts.failed += 1;
                        let error = || error_of(outcome, &kernel);
                        tally(&mut self.tallies, world, f, Tallied::Failure, error);
                        Some(Entry::Failed {
                            launch: result.launch,
                            line,
                            failure: f.get(),
                        })
                    }
                    Verdict::Skipped { failure, needed } => {
                        self.report.verdicts.skipped += 1;
                        if skipped_anyway {
                            self.skipped_injections.push(SkippedInjection {
                                launch: result.launch,
                                line,
                            });
                        }
                        tally(
                            &mut self.tallies,
                            world,
                            failure,
                            Tallied::Skip,
                            ErrorInfo::default,
                        );
                        Some(Entry::Skipped {
                            launch: result.launch,
                            line,
                            failure: failure.get(),
                            needed,
                        })
                    }
                };
                if let (Some(entry), true) = (entry, keep) {
                    self.report.launch_results.push(entry);
                }
            }
            Event::HostWrite { binding, outcome } => {
                let outcome = Outcome::from(&outcome);
                let verdict = world
                    .host_write(&Binding::from(&binding), outcome)
                    .map_err(|e| self.lifetimes.explain(e))?;
                if let Verdict::Failed(f) = verdict {
                    let error = || error_of(outcome, World::HOST_WRITE_KERNEL);
                    tally(&mut self.tallies, world, f, Tallied::Failure, error);
                    self.failed_host_ops.note(line);
                    if keep {
                        self.report.launch_results.push(Entry::HostWriteFailed {
                            line,
                            failure: f.get(),
                        });
                    }
                }
            }
            Event::Read { binding }
                if !keep
                    && self.first_tainted.len() >= SUMMARY_READS
                    && self.fault_line.is_none() =>
            {
                // The summary has all the reports it shows: the cheap
                // question does (same resolution, same errors, same count).
                let read = Binding::from(&binding);
                if world
                    .read_failure(&read)
                    .map_err(|e| self.lifetimes.explain(e))?
                    .is_some()
                {
                    self.tainted = self.tainted.saturating_add(1);
                } else if world
                    .resolve_binding(&read)
                    .map_err(|e| self.lifetimes.explain(e))?
                    .is_none()
                {
                    self.unresolved = self.unresolved.saturating_add(1);
                    if self.first_unresolved.len() < SUMMARY_READS {
                        self.first_unresolved.push(ReadEntry {
                            line,
                            memory: binding.memory,
                            result: LogRead::Unresolved,
                        });
                        self.note_unresolved_read(line, &binding);
                    }
                }
            }
            Event::Read { binding } => {
                let result = match world
                    .read(&Binding::from(&binding))
                    .map_err(|e| self.lifetimes.explain(e))?
                {
                    ReadResult::Clean => LogRead::Clean,
                    ReadResult::Unresolved => LogRead::Unresolved,
                    ReadResult::Tainted(report) => LogRead::Tainted(report.into()),
                    ReadResult::DeviceFault(e) => {
                        self.fault_answers.reads += 1;
                        LogRead::DeviceFault(e)
                    }
                };
                let entry = ReadEntry {
                    line,
                    memory: binding.memory,
                    result,
                };
                match entry.result {
                    LogRead::Tainted(_) => self.tainted = self.tainted.saturating_add(1),
                    LogRead::Unresolved => {
                        self.unresolved = self.unresolved.saturating_add(1);
                    }
                    _ => {}
                }
                let unresolved = matches!(entry.result, LogRead::Unresolved);
                let kept_unresolved = if keep {
                    self.report.reads.push(entry);
                    unresolved
                } else if matches!(entry.result, LogRead::Tainted(_))
                    && self.first_tainted.len() < SUMMARY_READS
                {
                    self.first_tainted.push(entry);
                    false
                } else if unresolved && self.first_unresolved.len() < SUMMARY_READS {
                    self.first_unresolved.push(entry);
                    true
                } else {
                    false
                };
                if kept_unresolved {
                    self.note_unresolved_read(line, &binding);
                }
            }
            Event::CaptureBegin { stream } => {
                world
                    .capture_begin(stream)
                    .map_err(|e| self.lifetimes.explain(e))?;
                // The slot the world folded the stream onto, as every
                // note of this replay finds it.
                if let Ok(slot) = world.streams().slot_of(StreamRef::Id(stream)) {
                    self.lifetimes.windows.insert(slot, Window::OpenedAt(line));
                }
            }
            Event::CaptureEnd { stream, graph } => {
                let result = match world
                    .capture_end(stream, graph)
                    .map_err(|e| self.lifetimes.explain(e))?
                {
                    CaptureResult::Ok => {
                        self.lifetimes.graph_at(graph, line, GraphEvent::Made);
                        LogCapture::Ok
                    }
                    CaptureResult::Failed(report) => {
                        self.failed_captures.note(line);
                        let failed = GraphEvent::CaptureFailed(report.failure.get());
                        self.lifetimes.graph_at(graph, line, failed);
                        LogCapture::Failed(report.into())
                    }
                };
                if let Ok(slot) = world.streams().slot_of(StreamRef::Id(stream)) {
                    self.lifetimes.windows.insert(slot, Window::EndedAt(line));
                }
                if keep {
                    self.report.captures.push(CaptureEntry {
                        line,
                        graph,
                        result,
                    });
                }
            }
            Event::Replay { graph, outcome, .. } => {
                // Each launch a checked replay skipped, by its captured
                // number and its failure: tallied as a skipped launch is,
                // and listed in the replay's entry.
                let mut skips = Vec::new();
                let verdict = if self.options.checked_replays {
                    world.replay_checked_each(graph, Outcome::from(&outcome), |r| {
                        if let Verdict::Skipped { failure, .. } = r.verdict {
                            skips.push((r.launch, failure));
                        }
                    })
                } else {
                    world.replay(graph, Outcome::from(&outcome))
                }
                .map_err(|e| self.lifetimes.in_graph(graph, e))?;
                for &(_, failure) in &skips {
                    let what = Tallied::ReplaySkip;
                    tally(&mut self.tallies, world, failure, what, ErrorInfo::default);
                }
                if let Verdict::Skipped { failure, needed } = verdict {
                    self.skipped_replays.note(line);
                    if keep {
                        self.report.launch_results.push(Entry::ReplaySkipped {
                            graph,
                            line,
                            failure: failure.get(),
                            needed,
                            launches: skips.iter().map(|&(launch, _)| launch).collect(),
                        });
                    }
                }
                if let Verdict::Failed(f) = verdict {
                    let error = || error_of(Outcome::from(&outcome), &World::graph_kernel(graph));
                    tally(&mut self.tallies, world, f, Tallied::Failure, error);
                    self.failed_host_ops.note(line);
                    if keep {
                        self.report.launch_results.push(Entry::ReplayFailed {
                            graph,
                            line,
                            failure: f.get(),
                        });
                    }
                }
            }
            Event::GraphDestroy { graph } => {
                world
                    .graph_destroy(graph)
                    .map_err(|e| self.lifetimes.explain(e))?;
                self.lifetimes.graph_at(graph, line, GraphEvent::Destroyed);
            }
            Event::ProfileBegin { profile } => {
                world
                    .profile_begin(profile)
                    .map_err(|e| self.lifetimes.explain(e))?;
                self.lifetimes.profiles.insert(profile, line);
            }
            Event::ProfileEnd { profile } => {
                let result = match world
                    .profile_end(profile)
                    .map_err(|e| self.lifetimes.explain(e))?
                {
                    ProfileResult::Valid => LogProfile::Valid,
                    ProfileResult::Invalid { failure, error: e } => {
                        self.invalid_profiles.note(line);
                        LogProfile::Invalid {
                            failure: failure.get(),
                            error: e,
                        }
                    }
                };
                self.lifetimes.profiles.remove(&profile);
                self.lifetimes.profiles_ended.remember(profile, line);
                if keep {
                    self.report.profiles.push(ProfileEntry {
                        line,
                        profile,
                        result,
                    });
                }
            }
            Event::DeviceFault { error: e } => {
                world.device_fault(&e.kind, &e.message);
                self.fault_line.get_or_insert(line);
            }
            Event::Sync => {
                let result = world.sync();
                if matches!(result, SyncResult::DeviceFault(_)) {
                    self.fault_answers.syncs += 1;
                }
                if keep {
                    self.report.syncs.push(SyncEntry { line, result });
                }
            }
        }
        if self
            .world
            .as_ref()
            .is_some_and(|w| w.unresolved_bindings() > unresolved)
        {
            self.first_unresolved_binding.get_or_insert(line);
        }
        Ok(())
    }

    /// [`apply`](Self::apply)s every line `lines` yields; `progress` is
    /// called after each line with its number. Stops at the first bad line
    /// unless `keep_going`, leaving the replay as it was after the line
    /// before, so that a caller can still ask it what was replayed.
    pub fn apply_all(
        &mut self,
        lines: impl Iterator<Item = io::Result<Line>>,
        mut progress: impl FnMut(u64),
    ) -> Result<(), ReplayError> {
        for line in lines {
            let line = line?;
            let number = line.number;
            self.apply(line)?;
            progress(number);
        }
        Ok(())
    }

    /// The launch numbers [`ReplayOptions::fail_launches`] asked for (the
    /// command's `--fail-launch`) whose launch has been replayed and failed
    /// by the injection: not
    /// past the launches replayed so far, and not skipped anyway
    /// ([`skipped_injections`](Self::skipped_injections)).
    pub fn injected(&self) -> impl Iterator<Item = u64> + '_ {
        let replayed = self.world.as_ref().map_or(0, World::launches);
        self.options
            .fail_launches
            .range(..replayed)
            .copied()
            .filter(|n| !self.skipped_injections.iter().any(|s| s.launch == *n))
    }

    /// The report, with the world's final state filled in, and the world
    /// (always `Some`: a log without events gets a world of the options'
    /// or the default settings).
    pub fn finish(mut self) -> (Report, Option<World>) {
        if self.world.is_none() {
            // An empty log still has a (default) world to report on. It
            // cannot fail: `new` checked the options, and the defaults hold.
            let _ = self.make_world(None, None);
        }
        if let Some(world) = &self.world {
            let stats = world.stats();
            self.report.unresolved_bindings = stats.unresolved_bindings;
            self.report.failures_minted = stats.failures_minted;
            self.report.final_state = FinalState {
                live_failures: stats.live_failures,
                tainted_allocations: stats.tainted_allocations,
                tainted_bytes: stats.tainted_bytes,
                claims: stats.claims,
            };
        }
        (self.report, self.world)
    }
}

/// Replays every line `lines` yields; `progress` is called after each line
/// with its number. Stops at the first bad line unless `keep_going`.
///
/// On an error the replay so far is dropped. To keep it — a recording cut
/// short still holds its lines up to the cut, and a caller may want what
/// they did — make a [`Replay`] with [`Replay::new`] and call
/// [`apply_all`](Replay::apply_all), which leaves it as it was after the
/// last good line.
///
/// # Errors
///
/// [`ReplayError::Options`] for options no world takes, before any line
/// is read; [`ReplayError::Io`] when the log cannot be read;
/// [`ReplayError::BadLine`] at the first bad line, without `keep_going`.
pub fn replay(
    lines: impl Iterator<Item = io::Result<Line>>,
    options: ReplayOptions,
    progress: impl FnMut(u64),
) -> Result<Replay, ReplayError> {
    let mut replay = Replay::new(options)?;
    replay.apply_all(lines, progress)?;
    Ok(replay)
}

/// A launch's error, naming the binding it is about as the parser names
/// a binding's own errors (`in bindings[i]`): a range past its
/// allocation's end, or in strict mode a binding that does not resolve, is
/// found only by the world, which names the binding when asked
/// ([`World::binding_at_fault`]); an error no binding gets alone (the
/// launch's own stream) names none. A binding of freed memory says where
/// it was freed, as [`Lifetimes::text`] does.
fn in_binding(world: &World, error: Error, bindings: &[Binding], lifetimes: &Lifetimes) -> Refused {
    let text = match world.binding_at_fault(bindings, &error) {
        Some(i) => format!("{error} in bindings[{i}]"),
        None => error.to_string(),
    };
    lifetimes.text(error, text)
}

/// The error a failed `outcome` of work named `kernel` records, as the
/// world words it.
fn error_of(outcome: Outcome<'_>, kernel: &str) -> ErrorInfo {
    match outcome {
        Outcome::Failed { kind, message } => ErrorInfo::new(kind, kernel, message),
        Outcome::Ok | Outcome::DryRun => ErrorInfo::default(),
    }
}

/// The failure a reservation that just failed with `kind` and `message`
/// recorded: the live failure of that identity (found or minted for it,
/// SPEC §6a); or, when there is none, the one minted for it and pruned at
/// once because it claimed nothing (a zero-size reservation) — ids are
/// minted in order, so that is the last minted. One hash, however many
/// failures and allocations live.
fn failed_reservation(world: &World, kind: &str, message: &str) -> FailureId {
    let failures = &world.failure_graph().failures;
    failures
        .find(kind, World::ALLOC_KERNEL, message)
        .and_then(|key| failures.get(key))
        .map_or(
            // At least the failure this reservation minted.
            FailureId::new(failures.minted()).unwrap_or(FailureId::ZERO),
            |f| f.id,
        )
}

/// The failures `alloc` carries, each once with the bytes of `alloc`
/// that carry it, by failure id; nothing for a clean allocation.
/// O(claims log claims).
fn carried(world: &World, alloc: &Allocation) -> Vec<(u64, u64)> {
    if alloc.claims.is_empty() {
        return Vec::new();
    }
    let failures = &world.failure_graph().failures;
    let mut bytes: Vec<(u64, u64)> = alloc
        .claims
        .iter()
        .filter_map(|c| {
            Some((
                failures.get(c.failure)?.id.get(),
                c.end.saturating_sub(c.start),
            ))
        })
        .collect();
    bytes.sort_unstable_by_key(|b| b.0);
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (id, n) in bytes {
        match out.last_mut() {
            Some(last) if last.0 == id => last.1 = last.1.saturating_add(n),
            _ => out.push((id, n)),
        }
    }
    out
}

/// Counts one allocation freed while it carried the failures of
/// `carried` (each with its bytes): against each failure's tally, and
/// once among the untallied, with the bytes of the failures that have no
/// tally, if it carried any (those past [`SUMMARY_FAILURES`]; a failure
/// that taints bytes has failed an operation or skipped a launch, so one
/// within them has its tally already).
fn freed_tainted(tallies: &mut Tallies, carried: &[(u64, u64)]) {
    let mut untallied: Option<u128> = None;
    for &(id, bytes) in carried {
        let bytes = u128::from(bytes);
        match tallies.by_id.get_mut(&id) {
            Some(t) => {
                t.freed += 1;
                t.freed_bytes = t.freed_bytes.saturating_add(bytes);
            }
            None => {
                let sum = untallied.get_or_insert(0);
                *sum = sum.saturating_add(bytes);
            }
        }
    }
    if let Some(bytes) = untallied {
        let u = &mut tallies.untallied;
        u.freed += 1;
        u.freed_bytes = u.freed_bytes.saturating_add(bytes);
    }
}

/// What [`tally`] notes of a failure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tallied {
    /// An operation failed with it.
    Failure,
    /// A launch of the log read it and was skipped.
    Skip,
    /// A captured launch read it and was skipped in a checked replay.
    ReplaySkip,
}

/// Notes a failed or skipping outcome of failure `id` for the summary;
/// `error` is the failure's error when the world has already pruned it
/// (a failure that claimed nothing is gone by the time it is tallied).
fn tally(
    tallies: &mut Tallies,
    world: &World,
    id: FailureId,
    what: Tallied,
    error: impl FnOnce() -> ErrorInfo,
) {
    let skip = what != Tallied::Failure;
    if tallies.by_id.len() >= SUMMARY_FAILURES && !tallies.by_id.contains_key(&id.get()) {
        let untallied = &mut tallies.untallied;
        if skip {
            untallied.skipped += 1;
        } else {
            untallied.failed += 1;
        }
        return;
    }
    let info = world.failure(id);
    let entry = tallies
        .by_id
        .entry(id.get())
        .or_insert_with(|| FailureTally {
            error: info.map_or_else(error, |f| f.error.clone()),
            occurrences: 0,
            skipped: 0,
            skipped_in_replays: 0,
            freed: 0,
            freed_bytes: 0,
        });
    match info {
        Some(f) => entry.occurrences = f.occurrences,
        // Pruned at once (it claimed nothing): one more occurrence.
        None if !skip => entry.occurrences += 1,
        None => {}
    }
    if skip {
        entry.skipped += 1;
    }
    if what == Tallied::ReplaySkip {
        entry.skipped_in_replays += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{
        CarriersRest, REMEMBERED_LIFETIMES, Replay, ReplayError, ReplayOptions, SUMMARY_FAILURES,
        replay,
    };
    use crate::log::LogReader;

    fn replayed(log: &str, options: ReplayOptions) -> Result<Replay, ReplayError> {
        replay(LogReader::new(log.as_bytes()), options, |_| {})
    }

    #[test]
    fn an_unreadable_log_says_its_io_error_once_along_its_sources() {
        use core::error::Error as _;
        let cut = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "gzip stream cut short");
        let error = ReplayError::from(cut);
        let mut said = vec![error.to_string()];
        let mut source = error.source();
        while let Some(e) = source {
            said.push(e.to_string());
            source = e.source();
        }
        assert_eq!(said, ["gzip stream cut short"]);
    }

    fn alloc(memory: u64) -> String {
        format!(r#"{{"op":"alloc","stream":0,"memory":{memory},"size":16}}"#)
    }

    fn free(memory: u64) -> String {
        format!(r#"{{"op":"free","memory":{memory}}}"#)
    }

    fn read(memory: u64) -> String {
        format!(r#"{{"op":"read","binding":{{"stream":0,"memory":{memory}}}}}"#)
    }

    fn launch(kernel: &str, bindings: &[(u64, &str)], failed: bool) -> String {
        let bindings: Vec<String> = bindings
            .iter()
            .map(|(m, a)| format!(r#"{{"stream":0,"memory":{m},"access":"{a}"}}"#))
            .collect();
        let outcome = if failed {
            format!(r#"{{"failed":{{"kind":"compile","message":"{kernel} broke"}}}}"#)
        } else {
            r#""ok""#.to_string()
        };
        format!(
            r#"{{"op":"launch","kernel":"{kernel}","stream":0,"bindings":[{}],"outcome":{outcome}}}"#,
            bindings.join(",")
        )
    }

    fn capture_begin() -> String {
        r#"{"op":"capture_begin","stream":0}"#.to_string()
    }

    /// SPEC §1 forbids a world of no slots or no chain; options asking for
    /// one are the caller's fault, not the first line's, and a replay
    /// going past bad lines would otherwise reject every line with it.
    #[test]
    fn options_that_no_world_takes_are_refused_before_any_line_is_read() {
        use crate::Error;
        for (options, error, text) in [
            (
                ReplayOptions {
                    max_streams: Some(0),
                    ..ReplayOptions::default()
                },
                Error::ZeroStreams,
                "the replay's options: max_streams must be at least 1",
            ),
            (
                ReplayOptions {
                    chain_limit: Some(0),
                    keep_going: true,
                    ..ReplayOptions::default()
                },
                Error::ZeroChainLimit,
                "the replay's options: chain_limit must be at least 1",
            ),
        ] {
            match Replay::new(options.clone()) {
                Err(ReplayError::Options(e)) => assert_eq!(e, error),
                other => panic!("{other:?}"),
            }
            // The free function refuses them too, on any log, the empty one
            // included, whose replay would otherwise finish clean.
            for log in [String::new(), alloc(1)] {
                let refused = replayed(&log, options.clone()).unwrap_err();
                assert_eq!(refused.to_string(), text);
            }
        }
        assert!(
            Replay::new(ReplayOptions {
                max_streams: Some(1),
                chain_limit: Some(1),
                ..ReplayOptions::default()
            })
            .is_ok()
        );
    }

    /// Without `keep_going` a bad line changes nothing in the report, not
    /// `events` either, so a caller that goes on past the error gets the
    /// report of the lines it applied. It has had the header's place all
    /// the same: the header after it is bad input.
    #[test]
    fn a_bad_line_without_keep_going_is_not_counted_yet_takes_the_headers_place() {
        use crate::log::Line;
        let lines: Vec<Line> = LogReader::new(
            [
                "{\"op\":\"frob\"}",
                r#"{"op":"header","format":"taintworld-log","version":1,"max_streams":2}"#,
                &alloc(1),
                "{\"op\":\"free\"}",
                &free(1),
            ]
            .join("\n")
            .as_bytes(),
        )
        .map(|line| line.expect("a slice reads"))
        .collect();
        let mut r = Replay::new(ReplayOptions::default()).unwrap();
        let mut stopped = Vec::new();
        for line in lines {
            let number = line.number;
            if let Err(ReplayError::BadLine { line, .. }) = r.apply(line) {
                assert_eq!(line, number);
                stopped.push(line);
            }
        }
        assert_eq!(stopped, [1, 2, 4], "the header came after a bad line");
        let (report, world) = r.finish();
        assert_eq!(report.events, 2, "the alloc and the free");
        assert!(report.rejected.is_empty());
        assert_eq!(world.unwrap().config().max_streams, 8, "the default");

        // With keep_going the same lines are listed and counted, and the
        // header after a bad line is no longer first (SPEC Appendix A).
        let r = replayed(
            &[
                "{\"op\":\"frob\"}",
                r#"{"op":"header","format":"taintworld-log","version":1}"#,
            ]
            .join("\n"),
            ReplayOptions {
                keep_going: true,
                keep_lists: true,
                ..ReplayOptions::default()
            },
        )
        .unwrap();
        let (report, _) = r.finish();
        assert_eq!(report.events, 2);
        assert_eq!(report.rejected.len(), 2);
    }

    /// A line the world refused carries the world's error, typed, beside
    /// the replay's text (which adds the line that made what it names); a
    /// line that is no good event carries text alone.
    #[test]
    fn a_line_the_world_refused_carries_the_worlds_error_typed() {
        use crate::Error;
        let stopped = |lines: &[String]| match replayed(&lines.join("\n"), ReplayOptions::default())
        {
            Err(ReplayError::BadLine { line, error, world }) => (line, error, world),
            other => panic!("{:?}", other.err()),
        };
        assert_eq!(
            stopped(&[alloc(1), alloc(1)]),
            (
                2,
                "memory 1 is already a live allocation (allocated at line 1)".to_string(),
                Some(Error::DuplicateMemory { memory: 1 })
            )
        );
        let past_end = r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,"range":[8,17],"access":"write"}],"outcome":"ok"}"#;
        let (line, error, world) = stopped(&[alloc(1), past_end.to_string()]);
        assert_eq!(
            (line, error.ends_with(" in bindings[0]")),
            (2, true),
            "{error}"
        );
        assert_eq!(
            world,
            Some(Error::RangePastEnd {
                memory: 1,
                start: 8,
                end: 17,
                size: 16
            })
        );
        let (line, error, world) = stopped(&[alloc(1), r#"{"op":"frob"}"#.to_string()]);
        assert_eq!((line, world), (2, None), "{error}");
    }

    /// A replay's `Debug` is a line of counts, not its world and lists.
    #[test]
    fn a_replays_debug_says_what_it_has_done_in_counts() {
        let log = [alloc(1), launch("k", &[(1, "write")], true), read(1)].join("\n");
        let r = replayed(&log, ReplayOptions::default()).unwrap();
        let printed = format!("{r:?}");
        for part in [
            "events: 3",
            "launches: 1",
            "tainted_reads: 1",
            "rejected: 0",
        ] {
            assert!(printed.contains(part), "{printed}");
        }
        assert!(printed.ends_with(", .. }"), "{printed}");
    }

    /// A checked replay tallies its skips after the whole replay, and a
    /// later launch of the same replay can write over every claim of the
    /// failure a launch skipped for, so that the world has pruned it: the
    /// skip must still count as a skip, not as another occurrence.
    #[test]
    fn a_replayed_skip_whose_failure_the_replay_then_pruned_adds_no_occurrence() {
        let lines = [
            alloc(1),
            alloc(2),
            capture_begin(),
            launch("a", &[(1, "read"), (2, "write")], false),
            launch("b", &[(1, "write"), (2, "write")], false),
            capture_end(7),
            launch("bad", &[(1, "write")], true),
            replay_of(7),
        ];
        let options = ReplayOptions {
            checked_replays: true,
            ..ReplayOptions::default()
        };
        let replay = replayed(&lines.join("\n"), options).unwrap();
        let tallies: Vec<_> = replay.tallies().values().collect();
        assert_eq!(tallies.len(), 1, "{tallies:?}");
        assert_eq!(tallies[0].skipped_in_replays, 1, "{tallies:?}");
        assert_eq!(tallies[0].occurrences, 1, "{tallies:?}");
    }

    fn capture_end(graph: u64) -> String {
        format!(r#"{{"op":"capture_end","stream":0,"graph":{graph}}}"#)
    }

    fn replay_of(graph: u64) -> String {
        format!(r#"{{"op":"replay","graph":{graph},"stream":0,"outcome":"ok"}}"#)
    }

    fn graph_destroy(graph: u64) -> String {
        format!(r#"{{"op":"graph_destroy","graph":{graph}}}"#)
    }

    /// The error of the log's last line, which must stop the replay.
    fn last_error(lines: &[String]) -> String {
        match replayed(&lines.join("\n"), ReplayOptions::default()) {
            Err(ReplayError::BadLine { line, error, .. }) => {
                assert_eq!(line, lines.len() as u64, "{error}");
                error
            }
            Err(e) => panic!("not a bad line: {e}"),
            Ok(_) => panic!("the last line was accepted"),
        }
    }

    /// A second free names the first one's line while it is among the
    /// last allocations and frees remembered, even once its allocation has
    /// fallen out, and goes back to the plain error once the free has too,
    /// never naming a line that is no longer the id's story.
    #[test]
    fn a_second_free_names_the_first_while_it_is_remembered() {
        let mut lines = vec![alloc(1), free(1)];
        // With REMEMBERED_LIFETIMES - 2 events after it, the free is still
        // remembered (it and its allocation fill the rest).
        for memory in 0..(REMEMBERED_LIFETIMES as u64 - 1) / 2 {
            lines.push(alloc(100 + memory));
            lines.push(free(100 + memory));
        }
        lines.push(free(1));
        assert_eq!(
            last_error(&lines),
            "memory 1 is not a live allocation (freed at line 2)"
        );
        // One more event forgets the allocation, which is older, but not
        // the free: the id's newest entry.
        lines.pop();
        lines.extend([alloc(99), free(1)]);
        assert_eq!(
            last_error(&lines),
            "memory 1 is not a live allocation (freed at line 2)"
        );
        // A second pushes the free out too.
        lines.pop();
        lines.extend([free(99), free(1)]);
        assert_eq!(last_error(&lines), "memory 1 is not a live allocation");
    }

    /// An id allocated again after its free is live, so a read of it on
    /// the right stream resolves; freed once more, the newest free is the
    /// one named.
    #[test]
    fn an_id_freed_allocated_and_freed_again_is_named_with_its_newest_free() {
        let lines = [alloc(1), free(1), alloc(1), read(1), free(1), free(1)];
        assert_eq!(
            last_error(&lines),
            "memory 1 is not a live allocation (freed at line 5)"
        );
    }

    /// The unresolved reads the summary shows know where their memory was
    /// freed, on the cheaper path past five tainted reads as well; a read
    /// of memory that was never made, that is live, or that was made on
    /// another slot than the read names knows nothing, and past the first
    /// five unresolved reads nothing is kept.
    #[test]
    fn an_unresolved_read_of_freed_memory_knows_the_line_of_the_free() {
        let fail = r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":2,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad"}}}"#;
        let on_slot_1 = r#"{"op":"read","binding":{"stream":1,"memory":1}}"#.to_string();
        let mut lines = vec![
            alloc(1),
            alloc(2),
            fail.to_string(),
            free(1),
            read(1),
            read(7),
        ];
        lines.extend(std::iter::repeat_n(read(2), 5));
        // Line 12 onwards: past five tainted reads.
        lines.extend([read(1), on_slot_1.clone(), read(2), read(1), read(1)]);
        lines.extend([alloc(1), on_slot_1]);
        for keep_lists in [false, true] {
            let options = ReplayOptions {
                keep_lists,
                ..ReplayOptions::default()
            };
            let r = replayed(&lines.join("\n"), options).expect("a valid log");
            let unresolved: Vec<_> = r
                .unresolved_reads()
                .map(|read| (read.line, r.unresolved_read_freed_at(read.line)))
                .collect();
            let shown = [
                (5, Some(4)),
                (6, None),
                (12, Some(4)),
                (13, None),
                (15, Some(4)),
            ];
            assert_eq!(unresolved[..5], shown, "keep_lists {keep_lists}");
            assert_eq!(r.unresolved_read_count(), 7, "keep_lists {keep_lists}");
            for line in [14, 16, 18] {
                assert_eq!(r.unresolved_read_freed_at(line), None, "line {line}");
            }
            // Only line 18's memory was live (on slot 0) when it was read,
            // and that read is past the first five unresolved.
            for line in [5, 6, 12, 13, 15, 18] {
                assert_eq!(r.unresolved_read_live_on(line), None, "line {line}");
            }
        }
    }

    /// In strict mode a graph replay that binds freed memory says where it
    /// was freed, as a launch does, and names the graph and where it was
    /// made, since the binding is on that line and not the replay's.
    #[test]
    fn a_strict_replay_of_a_graph_over_freed_memory_says_where_it_was_freed() {
        let lines = [
            alloc(1),
            capture_begin(),
            launch("k", &[(1, "write")], false),
            capture_end(1),
            free(1),
            replay_of(1),
        ];
        let options = ReplayOptions {
            strict: true,
            ..ReplayOptions::default()
        };
        match replayed(&lines.join("\n"), options) {
            Err(ReplayError::BadLine { line, error, world }) => {
                assert_eq!(line, 6);
                assert_eq!(
                    error,
                    "binding of memory 1 on stream slot 0 does not resolve (strict mode) \
                     in graph 1 (made at line 4) (memory 1 was freed at line 5)"
                );
                assert_eq!(
                    world,
                    Some(crate::Error::Unresolved {
                        memory: 1,
                        slot: 0,
                        made_on: None
                    })
                );
            }
            other => panic!("not the replay's bad line: {:?}", other.err()),
        }
    }

    /// A replay or `graph_destroy` of a destroyed graph says where it was
    /// destroyed; a graph id made again after that is live, and destroyed
    /// once more, is named with its newest end.
    #[test]
    fn a_replay_of_a_destroyed_graph_names_the_line_that_destroyed_it() {
        let capture = |graph: u64| {
            [
                capture_begin(),
                launch("k", &[(1, "write")], false),
                capture_end(graph),
            ]
        };
        let mut lines = vec![alloc(1)];
        lines.extend(capture(3));
        lines.extend([replay_of(3), graph_destroy(3), replay_of(3)]);
        assert_eq!(
            last_error(&lines),
            "graph 3 is not a live graph (destroyed at line 6)"
        );
        lines.pop();
        lines.extend(capture(3));
        lines.extend([replay_of(3), graph_destroy(3), graph_destroy(3)]);
        assert_eq!(
            last_error(&lines),
            "graph 3 is not a live graph (destroyed at line 11)"
        );
        // A graph id never made is plain bad input.
        lines.pop();
        lines.push(replay_of(4));
        assert_eq!(last_error(&lines), "graph 4 is not a live graph");
    }

    /// An id that is live already, and a capture window or a profile
    /// that is open already, are named with the line that made them so; a
    /// replay's error about one of its graph's recorded bindings names the
    /// graph and the line that made it, since the binding is not on the
    /// replay's line.
    #[test]
    fn errors_about_what_is_live_or_open_already_name_the_line_that_made_it() {
        let made = vec![
            alloc(1),
            capture_begin(),
            launch("k", &[(1, "write")], false),
            capture_end(7),
        ];
        let with = |more: &[String]| [made.clone(), more.to_vec()].concat();
        assert_eq!(
            last_error(&with(&[alloc(1)])),
            "memory 1 is already a live allocation (allocated at line 1)"
        );
        assert_eq!(
            last_error(&with(&[capture_begin(), capture_begin()])),
            "stream 0 (slot 0) already has an open capture window (opened at line 5)"
        );
        assert_eq!(
            last_error(&with(&[capture_begin(), capture_end(7)])),
            "graph 7 is already live (made at line 4; a graph_destroy of it frees the id)"
        );
        // Memory 1 made again, smaller: the graph's write runs past its end.
        let smaller = r#"{"op":"alloc","stream":0,"memory":1,"size":8}"#.to_string();
        assert_eq!(
            last_error(&with(&[free(1), smaller, replay_of(7)])),
            "range [0, 16) runs past the end of memory 1 (size 8) in graph 7 (made at line 4)"
        );
        // A window ended and opened again is named by its new line; an id
        // freed and made again, by its new allocation.
        let again = with(&[
            free(1),
            alloc(1),
            capture_begin(),
            capture_end(8),
            capture_begin(),
        ]);
        assert_eq!(
            last_error(&[again.clone(), vec![capture_begin()]].concat()),
            "stream 0 (slot 0) already has an open capture window (opened at line 9)"
        );
        assert_eq!(
            last_error(&[again, vec![alloc(1)]].concat()),
            "memory 1 is already a live allocation (allocated at line 6)"
        );
        // A profile open already is named by the line that opened it, and
        // after it ended and opened again, by its new line.
        let begin = r#"{"op":"profile_begin","profile":3}"#.to_string();
        let end = r#"{"op":"profile_end","profile":3}"#.to_string();
        assert_eq!(
            last_error(&with(&[begin.clone(), begin.clone()])),
            "profile 3 is already open (opened at line 5)"
        );
        assert_eq!(
            last_error(&with(&[begin.clone(), end, begin.clone(), begin])),
            "profile 3 is already open (opened at line 7)"
        );
    }

    /// Ending a capture window or a profile that is not open names the
    /// line that last ended it: a window by its slot (whichever stream id
    /// folds onto it), a profile by its id while its ending is among the
    /// last REMEMBERED_LIFETIMES profile endings. What never opened, or a
    /// profile whose ending has been pushed out, gets the plain error.
    #[test]
    fn ending_a_capture_or_profile_that_is_not_open_names_the_line_that_ended_it() {
        let begin = |p: u64| format!(r#"{{"op":"profile_begin","profile":{p}}}"#);
        let end = |p: u64| format!(r#"{{"op":"profile_end","profile":{p}}}"#);
        let ended = vec![alloc(1), capture_begin(), capture_end(7)];
        assert_eq!(
            last_error(&[ended.clone(), vec![capture_end(8)]].concat()),
            "stream 0 (slot 0) has no open capture window (the slot's last one ended at line 3)"
        );
        // Opened and ended again: the newer ending is named.
        let twice = [ended, vec![capture_begin(), capture_end(8), capture_end(9)]].concat();
        assert_eq!(
            last_error(&twice),
            "stream 0 (slot 0) has no open capture window (the slot's last one ended at line 5)"
        );
        let other_slot = r#"{"op":"capture_end","stream":1,"graph":9}"#.to_string();
        assert_eq!(
            last_error(&[alloc(1), capture_begin(), capture_end(7), other_slot]),
            "stream 1 (slot 1) has no open capture window"
        );
        assert_eq!(
            last_error(&[begin(3), end(3), end(3)]),
            "profile 3 is not open (it ended at line 2)"
        );
        assert_eq!(
            last_error(&[begin(3), end(3), begin(3), end(3), end(3)]),
            "profile 3 is not open (it ended at line 4)"
        );
        assert_eq!(
            last_error(&[begin(3), end(3), end(4)]),
            "profile 4 is not open"
        );
        // REMEMBERED_LIFETIMES - 1 other endings keep profile 3's; one
        // more pushes it out.
        let mut lines = vec![begin(3), end(3)];
        for p in 0..REMEMBERED_LIFETIMES as u64 - 1 {
            lines.extend([begin(10 + p), end(10 + p)]);
        }
        assert_eq!(
            last_error(&[lines.clone(), vec![end(3)]].concat()),
            "profile 3 is not open (it ended at line 2)"
        );
        lines.extend([begin(5), end(5), end(3)]);
        assert_eq!(last_error(&lines), "profile 3 is not open");
    }

    /// A read on the wrong stream of memory live elsewhere is told apart
    /// from one of memory not live: the slot it lives on is kept.
    #[test]
    fn an_unresolved_read_of_memory_live_on_another_slot_knows_the_slot() {
        let on_slot_1 = r#"{"op":"read","binding":{"stream":1,"memory":1}}"#.to_string();
        let r = replayed(
            &[alloc(1), on_slot_1, read(9)].join("\n"),
            ReplayOptions::default(),
        )
        .expect("a valid log");
        assert_eq!(r.unresolved_read_live_on(2), Some(0));
        assert_eq!(r.unresolved_read_slot(2), Some(1));
        assert_eq!(r.unresolved_read_freed_at(2), None);
        assert_eq!(r.unresolved_read_live_on(3), None);
        assert_eq!(r.unresolved_read_slot(3), None);
    }

    /// Graphs made and ended are remembered apart from allocations and
    /// frees, and as many of them: a failed capture stays named however
    /// many memory ids come and go, until REMEMBERED_LIFETIMES later graphs
    /// made or ended push it out.
    #[test]
    fn a_failed_capture_is_named_until_as_many_graph_endings_as_are_remembered_follow() {
        let mut lines = vec![
            alloc(1),
            capture_begin(),
            launch("k", &[(1, "write")], true),
            capture_end(1),
        ];
        for memory in 0..REMEMBERED_LIFETIMES as u64 {
            lines.push(alloc(100 + memory));
            lines.push(free(100 + memory));
        }
        lines.push(replay_of(1));
        assert_eq!(
            last_error(&lines),
            "graph 1 is not a live graph (its capture failed at line 4, with failure 1, \
             and made no graph)"
        );
        // REMEMBERED_LIFETIMES - 1 more graphs made or destroyed (each made
        // and destroyed is two) leave it remembered; one more forgets it.
        lines.pop();
        let made_and_destroyed =
            |graph: u64| [capture_begin(), capture_end(graph), graph_destroy(graph)];
        for graph in 0..REMEMBERED_LIFETIMES as u64 / 2 - 1 {
            lines.extend(made_and_destroyed(1_000 + graph));
        }
        lines.extend([capture_begin(), capture_end(99)]);
        lines.push(replay_of(1));
        assert!(
            last_error(&lines)
                .ends_with("(its capture failed at line 4, with failure 1, and made no graph)"),
            "{}",
            last_error(&lines)
        );
        lines.pop();
        lines.push(graph_destroy(99));
        lines.push(replay_of(1));
        assert_eq!(last_error(&lines), "graph 1 is not a live graph");
    }

    /// What is live since longer ago than the replay remembers is named
    /// without a line, never with a wrong one: an allocation made before
    /// REMEMBERED_LIFETIMES later allocations and frees, and a graph made
    /// before as many later graphs made or ended, give the world's error
    /// alone; a replay's error about such a graph's binding still names the
    /// graph, since the binding is not on the replay's line.
    #[test]
    fn what_is_live_since_longer_ago_than_is_remembered_is_named_without_a_line() {
        let mut lines = vec![
            alloc(1),
            capture_begin(),
            launch("k", &[(1, "write")], false),
            capture_end(7),
        ];
        // REMEMBERED_LIFETIMES - 1 graph entries after graph 7's: still
        // remembered, as the test above shows for a failed capture.
        for graph in 0..REMEMBERED_LIFETIMES as u64 / 2 - 1 {
            lines.extend([
                capture_begin(),
                capture_end(1_000 + graph),
                graph_destroy(1_000 + graph),
            ]);
        }
        lines.extend([capture_begin(), capture_end(99)]);
        let again = |lines: &[String], more: &[String]| last_error(&[lines, more].concat());
        assert_eq!(
            again(&lines, &[capture_begin(), capture_end(7)]),
            "graph 7 is already live (made at line 4; a graph_destroy of it frees the id)"
        );
        lines.push(graph_destroy(99));
        // Memory 1 made again, smaller: the graph's write runs past its end.
        let smaller = r#"{"op":"alloc","stream":0,"memory":1,"size":8}"#.to_string();
        assert_eq!(
            again(&lines, &[capture_begin(), capture_end(7)]),
            "graph 7 is already live"
        );
        assert_eq!(
            again(&lines, &[free(1), smaller, replay_of(7)]),
            "range [0, 16) runs past the end of memory 1 (size 8) in graph 7"
        );
        // Memory 1's allocation: named while REMEMBERED_LIFETIMES - 1
        // allocations and frees follow it, forgotten at one more.
        for memory in 0..REMEMBERED_LIFETIMES as u64 / 2 - 1 {
            lines.extend([alloc(100 + memory), free(100 + memory)]);
        }
        lines.push(alloc(99));
        assert_eq!(
            again(&lines, &[alloc(1)]),
            "memory 1 is already a live allocation (allocated at line 1)"
        );
        lines.push(free(99));
        assert_eq!(
            again(&lines, &[alloc(1)]),
            "memory 1 is already a live allocation"
        );
    }

    /// What each failure taints at the end is counted by allocation and
    /// byte, its smallest memory ids named, and the bytes of all of them
    /// are the report's tainted bytes; what it tainted and the program
    /// freed is counted on its tally.
    #[test]
    fn a_failure_names_what_it_taints_at_the_end_and_counts_what_was_freed_tainted() {
        let mut lines: Vec<String> = (1..=14).map(alloc).collect();
        // Failure 1 taints memory 1, and launches reading it taint 2..=13;
        // memory 14 is written whole by a launch of its own failure (2).
        lines.push(launch("a", &[(1, "write")], true));
        for m in 2..=13 {
            lines.push(launch("b", &[(1, "read"), (m, "write")], false));
        }
        lines.push(launch("c", &[(14, "write")], true));
        lines.extend([free(2), free(3), free(14)]);
        let r = replayed(&lines.join("\n"), ReplayOptions::default()).expect("a valid log");
        let (carriers, rest) = r.carriers(usize::MAX);
        assert_eq!(rest, CarriersRest::default());
        assert_eq!(carriers.len(), 1, "failure 2's only carrier was freed");
        let p = &carriers[0];
        assert_eq!((p.failure, p.allocations, p.bytes), (1, 11, 11 * 16));
        assert_eq!(p.memory, [1, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let tallies = r.tallies();
        assert_eq!((tallies[&1].freed, tallies[&1].freed_bytes), (2, 32));
        assert_eq!((tallies[&2].freed, tallies[&2].freed_bytes), (1, 16));
        let (report, _) = r.finish();
        assert_eq!(report.final_state.tainted_bytes, p.bytes);
    }

    /// One allocation carrying two failures counts once for each, with
    /// the bytes each holds; past the first SUMMARY_FAILURES failures the
    /// frees are counted among the untallied.
    #[test]
    fn an_allocation_freed_carrying_two_failures_counts_for_each_and_past_twenty_untallied() {
        let range = |m: u64, start: u64, end: u64| {
            format!(
                r#"{{"op":"launch","kernel":"k{start}","stream":0,"bindings":[{{"stream":0,"memory":{m},"range":[{start},{end}],"access":"write"}}],"outcome":{{"failed":{{"kind":"compile","message":"broke at {start}"}}}}}}"#
            )
        };
        let mut lines = vec![alloc(1), range(1, 0, 4), range(1, 4, 16), free(1)];
        let r = replayed(&lines.join("\n"), ReplayOptions::default()).expect("a valid log");
        let freed: Vec<_> = r
            .tallies()
            .values()
            .map(|t| (t.freed, t.freed_bytes))
            .collect();
        assert_eq!(freed, [(1, 4), (1, 12)]);
        assert!(r.carriers(usize::MAX).0.is_empty());
        // Twenty failures more, each on its own allocation, freed; the
        // last holds two untallied failures and counts once.
        for m in 2..=20 {
            lines.extend([alloc(m), range(m, 0, 3), free(m)]);
        }
        lines.extend([alloc(21), range(21, 0, 3), range(21, 3, 5), free(21)]);
        let r = replayed(&lines.join("\n"), ReplayOptions::default()).expect("a valid log");
        assert_eq!(r.tallies().len(), SUMMARY_FAILURES);
        let untallied = r.untallied();
        assert_eq!((untallied.freed, untallied.freed_bytes), (2, 3 + 5));
    }

    /// Asked for the first few failures, the list is those with the
    /// smallest ids, each whole, and the rest are counted with their bytes.
    #[test]
    fn the_failures_past_the_first_asked_for_are_counted_with_their_bytes() {
        let mut lines = Vec::new();
        for m in 1..=5 {
            lines.push(format!(
                r#"{{"op":"alloc","stream":0,"memory":{m},"size":{m}}}"#
            ));
            lines.push(launch(&format!("k{m}"), &[(m, "write")], true));
        }
        let r = replayed(&lines.join("\n"), ReplayOptions::default()).expect("a valid log");
        let (all, none) = r.carriers(usize::MAX);
        assert_eq!(none, CarriersRest::default());
        let (first, rest) = r.carriers(2);
        assert_eq!(first, all[..2]);
        assert_eq!(first.iter().map(|p| p.failure).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            rest,
            CarriersRest {
                failures: 3,
                bytes: 3 + 4 + 5
            }
        );
        assert_eq!(r.carriers(0).1.bytes, 15);
    }
}
