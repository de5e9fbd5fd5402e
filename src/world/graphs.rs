//! Captures and graphs (SPEC §6): what a capture window records of the
//! launches that run on its slot, the graph it makes, and the two replays
//! of a graph: [`World::replay`], a write that reads nothing, and
//! [`World::replay_checked`], its launches settled again one by one.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{Doom, LaunchResult, Outcome, Verdict, World, check_reads, resolve_each};
use crate::components::allocation::{Allocations, Footprint};
use crate::components::binding::{Access, Binding, MemoryRef, Resolved, Stamp};
use crate::components::claim::Origin;
use crate::components::stream::{StreamRef, Streams};
use crate::error::Error;
use crate::world::CaptureResult;

/// A capture window: the launches that ran on its slot, each with every
/// binding that read or wrote (see [`Launches`]), and the failure that
/// doomed the window, if one did.
#[derive(Clone, Debug, Default)]
pub(super) struct Window {
    launches: Launches,
    pub(super) doom: Option<Doom>,
}

impl Window {
    /// Dooms the window with the first failure or skip it saw: it will
    /// make no graph (SPEC §6), so what it recorded is let go and nothing
    /// more is recorded. A window doomed early in a long capture would
    /// otherwise keep growing until its `capture_end` threw it all away:
    /// 40 bytes, the kernel's name and 96 bytes a binding a launch, and
    /// the vectors' room (236, 393 and 708 bytes a launch of one, two and
    /// four bindings measured over 10,000).
    pub(super) fn doom(&mut self, doom: Doom) {
        self.doom = Some(doom);
        self.launches = Launches::default();
    }
}

/// One binding a capture window recorded: the binding, by memory id and
/// concrete range, that a replay resolves again (SPEC §6), and the row it
/// resolved to when it was recorded. While the allocation behind the row's
/// key is live under the recorded memory id, on the recorded slot and big
/// enough for the range, resolving the id again would give that same row
/// (ids are unique among live allocations), so a replay takes the row as
/// it is and resolves by id only the others (W1's writes replayed: 168.3
/// instructions a binding resolving each by id). The key alone is not
/// enough: a slot freed 2^31 times wraps the slot map's version, and a
/// graph kept that long would find its old key naming whatever allocation
/// sits there then (see [`Allocations::answering`]).
#[derive(Copy, Clone, Debug)]
pub(super) struct RecordedBinding {
    binding: Binding,
    row: Resolved,
}

impl RecordedBinding {
    /// The footprint of the allocation the recorded row still answers for
    /// (see [`RecordedBinding`]) with bytes up to `end`, or `None` when the
    /// binding must be resolved again by memory id.
    #[inline]
    fn answering<'a>(
        &self,
        allocs: &'a Allocations,
        streams: &Streams,
        end: u64,
    ) -> Option<&'a Footprint> {
        let MemoryRef::Id(memory) = self.binding.memory else {
            return None;
        };
        allocs.answering(self.row.alloc, memory, end, |slot| {
            streams.stream_of_slot(slot) == self.binding.stream
        })
    }

    /// Whether `other` was recorded for the same memory id on the same
    /// stream with the same key: rows a graph may join.
    fn names_as(&self, other: &RecordedBinding) -> bool {
        (self.row.alloc, self.binding.memory, self.binding.stream)
            == (other.row.alloc, other.binding.memory, other.binding.stream)
    }

    /// The same binding as a plain replay settles it: a write, whatever the
    /// launch did (a replay reads nothing, SPEC §6).
    fn as_write(&self) -> Self {
        RecordedBinding {
            binding: Binding {
                access: Access::Write,
                ..self.binding
            },
            row: Resolved {
                access: Access::Write,
                ..self.row
            },
        }
    }
}

/// The launches a capture window recorded, in order: each one's number,
/// its kernel and every binding it read or wrote, with its own access. A
/// checked replay ([`World::replay_checked`]) settles them again; a plain
/// one settles the bindings that write.
#[derive(Clone, Debug, Default)]
pub(super) struct Launches {
    launched: Vec<RecordedLaunch>,
    bound: Vec<RecordedBinding>,
}

/// What the graph holds, without when its keys were last checked: a note
/// of work done, not of state, which differs between two worlds that hold
/// the same (each draws its own stamps).
impl core::fmt::Debug for Graph {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Graph")
            .field("merged", &self.merged)
            .field("launches", &self.launches)
            .finish_non_exhaustive()
    }
}

impl Launches {
    /// Every recorded binding that writes, in order, as a plain replay
    /// settles it ([`RecordedBinding::as_write`]), with where it lies in
    /// [`bound`](Self::bound).
    fn writes(&self) -> impl Iterator<Item = (usize, RecordedBinding)> + '_ {
        (self.bound.iter().enumerate())
            .filter(|(_, b)| b.row.access.writes())
            .map(|(at, b)| (at, b.as_write()))
    }
}

/// How far a graph's kept keys are trusted at a replay. A key is checked
/// in full (memory id, slot, size: [`RecordedBinding::answering`]) unless
/// all of the graph's keys of that kind were, under the world's current
/// stamp: a stamp lasts fewer frees
/// ([`FREES_PER_STAMP`](crate::components::binding::FREES_PER_STAMP)) than the 2^31
/// frees of one slot that bring a key back, so a key that answered then
/// still names that allocation while it lives, and a look-up that finds it
/// live is enough. A graph replayed every training step pays the full
/// check once a stamp (good replays of W1's writes: 5.7 instructions a
/// write trusted, 18.1 checking every key).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kept {
    /// Live is enough.
    Trusted,
    /// Check in full.
    Checked,
}

/// One row of a graph's merged write set and where one of the recorded
/// writes joined into it lies in [`Launches::bound`] (they were all
/// recorded under one name): that write's memory id and stream tell at
/// replay whether the row's key still names the allocation it was
/// recorded with (see [`RecordedBinding`]). 40 bytes.
#[derive(Copy, Clone, Debug)]
struct MergedWrite {
    row: Resolved,
    recorded: usize,
}

/// One launch a capture window recorded whole: its number and kernel, and
/// where its bindings end in [`Launches::bound`].
#[derive(Clone, Debug)]
pub(super) struct RecordedLaunch {
    number: u64,
    kernel: String,
    end: usize,
}

/// A captured graph (SPEC §6): the launches its capture recorded, in
/// order, and their writes merged: for each allocation, the recorded
/// ranges written joined where they overlap or touch, one row each.
///
/// Why both: a replay settles every write the same way (releases them all,
/// or taints them all with one failure from the root), and claims are
/// canonical (SPEC §1), so settling the merged rows leaves exactly the
/// claims that settling each recorded write leaves. A training step's
/// graph writes the same bytes many times (gradients accumulated, the
/// optimizer's state updated in place): the real GPT-2 step's 612
/// recorded writes are 180 merged rows, one an allocation. While every
/// allocation the graph wrote lives, a replay settles the merged rows;
/// once one was freed, it resolves the recorded writes one by one, in
/// order, as SPEC §6 words it (a freed id unresolved, a reused one
/// hitting the new allocation, the first bad write's error). Each
/// launch's kernel is named `graph:<id>/<kernel>`, for a checked replay.
#[derive(Clone)]
pub(super) struct Graph {
    merged: Vec<MergedWrite>,
    launches: Launches,
    /// The world's stamp when a replay last found every merged row
    /// answered by its key (see [`Kept`]), or [`Stamp::NONE`].
    merged_checked: u32,
    /// The world's stamp when a checked replay last found every recorded
    /// binding answered by its row, or [`Stamp::NONE`].
    launches_checked: u32,
}

impl Graph {
    /// Graph `id` of the launches a capture recorded.
    fn new(id: u64, mut launches: Launches) -> Self {
        for launch in &mut launches.launched {
            launch.kernel = format!("{}/{}", World::graph_kernel(id), launch.kernel);
        }
        launches.launched.shrink_to_fit();
        launches.bound.shrink_to_fit();
        let bound = &launches.bound;
        let mut merged: Vec<MergedWrite> = (launches.writes())
            .map(|(recorded, write)| MergedWrite {
                row: write.row,
                recorded,
            })
            .collect();
        merged.sort_unstable_by_key(|w| (w.row.alloc, w.row.start, w.row.end));
        // Each row joins the one kept before it when it overlaps or touches
        // it and was recorded under the same name: within one capture a key
        // names one allocation, unless the window stayed open over 2^31
        // frees of its slot. Then rows of one key under two names may stay
        // apart and overlap; they never all answer at a replay (a key names
        // one allocation at a time), so such a graph is always settled
        // write by write.
        let same = |a: &MergedWrite, b: &MergedWrite| {
            let recorded = |w: &MergedWrite| bound.get(w.recorded);
            matches!((recorded(a), recorded(b)), (Some(a), Some(b)) if a.names_as(b))
        };
        merged.dedup_by(|write, kept| {
            let joins = write.row.alloc == kept.row.alloc
                && write.row.start <= kept.row.end
                && same(write, kept);
            if joins {
                kept.row.end = kept.row.end.max(write.row.end);
            }
            joins
        });
        merged.shrink_to_fit();
        Graph {
            merged,
            launches,
            merged_checked: Stamp::NONE,
            launches_checked: Stamp::NONE,
        }
    }
}

impl World {
    /// Opens a capture window on `stream`'s slot (SPEC §6). Launches on that
    /// slot are processed as usual and, when they run, recorded into it.
    /// Neither needs nor initializes the slot.
    ///
    /// # Errors
    ///
    /// - [`Error::SpecialOutOfRange`]: `stream` is a special stream at or
    ///   past `num_special`.
    /// - [`Error::CaptureOpen`]: the slot already has an open capture
    ///   window, opened by this stream or another that folds onto it.
    ///
    /// On `Err` no window is opened and the world is unchanged.
    ///
    /// ```
    /// use taintworld::{Access, Binding, CaptureResult, Launch, Outcome, Verdict, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 64)?;
    /// world.capture_begin(0)?;
    /// let out = [Binding::whole(0, 1, Access::Write)];
    /// world.launch(&Launch { kernel: "step", stream: 0.into(), bindings: &out, outcome: Outcome::Ok })?;
    /// assert_eq!(world.capture_end(0, 7)?, CaptureResult::Ok);
    ///
    /// // A failed replay taints every buffer the graph writes, under kernel `graph:7`.
    /// let failed = Outcome::Failed { kind: "launch", message: "graph launch failed" };
    /// assert!(matches!(world.replay(7, failed)?, Verdict::Failed(_)));
    /// assert_eq!(world.replay(7, Outcome::Ok)?, Verdict::Ran); // and a good one releases them
    /// world.graph_destroy(7)?;
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn capture_begin(&mut self, stream: impl Into<StreamRef>) -> Result<(), Error> {
        let stream = stream.into();
        let slot = self.streams.slot_of(stream)?;
        if self.windows.contains_key(&slot) {
            return Err(Error::CaptureOpen { stream, slot });
        }
        self.windows.insert(slot, Window::default());
        Ok(())
    }

    /// Ends the capture window on `stream`'s slot. A doomed window creates no
    /// graph — a graph missing an operation is worse than a late error — and
    /// returns the report of the failure that doomed it; otherwise graph
    /// `graph` holds the write sets of the recorded launches, and the
    /// launches themselves for a checked replay. A live graph id is bad
    /// input even for a doomed window (which then stays open).
    ///
    /// Cost: the recorded writes sorted once, O(n log n), to merge them
    /// into the write set a replay settles (see [`replay`](Self::replay)).
    ///
    /// # Errors
    ///
    /// - [`Error::SpecialOutOfRange`]: `stream` is a special stream at or
    ///   past `num_special`.
    /// - [`Error::NoCapture`]: the slot has no open capture window.
    /// - [`Error::GraphLive`]: `graph` is a live graph id, whether the
    ///   window is doomed or not.
    ///
    /// On `Err` the window stays open as it was, no graph is made, and the
    /// world is unchanged.
    pub fn capture_end(
        &mut self,
        stream: impl Into<StreamRef>,
        graph: u64,
    ) -> Result<CaptureResult, Error> {
        let stream = stream.into();
        let slot = self.streams.slot_of(stream)?;
        if !self.windows.contains_key(&slot) {
            return Err(Error::NoCapture { stream, slot });
        }
        if self.graphs.contains_key(&graph) {
            return Err(Error::GraphLive { graph });
        }
        let Some(window) = self.windows.remove(&slot) else {
            return Err(Error::NoCapture { stream, slot });
        };
        match window.doom {
            None => {
                self.graphs
                    .insert(graph, Graph::new(graph, window.launches));
                Ok(CaptureResult::Ok)
            }
            Some(doom) => {
                let origin = doom.record.map_or(Origin::Root, Origin::Skip);
                let report = self.report(doom.failure, origin);
                self.unpin(doom);
                self.prune();
                Ok(CaptureResult::Failed(report))
            }
        }
    }

    fn unpin(&mut self, doom: Doom) {
        self.graph.failures.unpin(doom.failure);
        if let Some(record) = doom.record {
            self.graph.records.drop_ref(record);
        }
    }

    /// Replays graph `graph` (SPEC §6): a write that reads nothing, over every
    /// recorded binding, each resolved again by memory id (a freed one is
    /// unresolved — counted, released and tainted by nothing — and a reused
    /// id hits the new allocation). `Ok` releases the whole write set;
    /// `Failed` taints it with a failure of kernel `graph:<id>`. Not a
    /// launch: no number, no window sees it.
    ///
    /// Cost: one slot-map look-up for each range of the graph's merged
    /// write set (its recorded ranges joined, allocation by allocation,
    /// where they overlap or touch) while every allocation it wrote lives,
    /// and a good replay settles only the claimed ones; once one was freed,
    /// a look-up or a resolution by memory id for each recorded write, for
    /// every replay until the graph is destroyed — a cliff where a graph
    /// writes the same bytes many times: one that wrote one buffer 100,000
    /// times (one merged row) replayed in 64 ns, and in 1.56 ms once an
    /// allocation it wrote was freed (a CUDA graph replayed after its
    /// memory was freed writes memory it no longer owns, so a runtime
    /// meets this on its error paths). Its
    /// kept keys are checked in full (memory id, slot and size) once a
    /// world stamp while they all answer, and at every replay once one of
    /// its allocations was freed (see `Kept` in the source). A
    /// good replay makes no heap allocation
    /// once the world's buffers have grown (the kernel's name is made only
    /// for a failure).
    ///
    /// # Errors
    ///
    /// - [`Error::DryRunOutcome`]: `outcome` is [`Outcome::DryRun`], which
    ///   only a launch may have.
    /// - [`Error::UnknownGraph`]: `graph` is not a live graph id.
    /// - [`Error::RangePastEnd`]: a recorded write's memory id was freed
    ///   since the capture, and the allocation that has it now is too
    ///   small for the recorded range.
    /// - [`Error::Unresolved`], in strict mode only: a recorded write's
    ///   memory id no longer resolves — no live allocation has it, or the
    ///   one that has it now was made on another slot.
    ///
    /// On `Err` nothing is released, tainted or counted, the graph stays
    /// live, and the world is unchanged.
    pub fn replay(&mut self, graph: u64, outcome: Outcome<'_>) -> Result<Verdict, Error> {
        if outcome == Outcome::DryRun {
            return Err(Error::DryRunOutcome {
                operation: "replay",
            });
        }
        // Taken out while it is resolved against the world, and put back
        // whatever happens.
        let Some(mut recorded) = self.graphs.remove(&graph) else {
            return Err(Error::UnknownGraph { graph });
        };
        let resolved = self.resolve_graph(&mut recorded, outcome == Outcome::Ok);
        self.graphs.insert(graph, recorded);
        resolved?;
        let end = self.rows.len();
        // Only a failure is named after its kernel: a good replay, which a
        // training loop makes every step, makes no string.
        let kernel = match outcome {
            Outcome::Failed { .. } => Self::graph_kernel(graph),
            Outcome::Ok | Outcome::DryRun => String::new(),
        };
        Ok(self.settle(self.launches, &kernel, None, 0, end, None, outcome))
    }

    /// Replays graph `graph` launch by launch, each launch checked and
    /// settled as SPEC §3 settles a launch: the replay for a graph that
    /// reads memory it did not write first, as a decoding pass reads its
    /// key/value cache. [`replay`](Self::replay) settles a replay like a
    /// write that reads nothing (SPEC §6), so after a failed replay the
    /// next good one releases the cache, and the tokens made from the
    /// failed replay's garbage read clean; here the next replay's launches
    /// that read the cache are skipped, and what they would have written
    /// carries the failure with the chain back to it.
    ///
    /// With `Outcome::Ok` each launch the capture recorded is settled
    /// again, in order, under the number it was captured with (a replay is
    /// not a launch and takes no number, so a report's hop through it
    /// names the captured launch it repeats) and its kernel named
    /// `graph:<id>/<kernel>`, its bindings (every one that read or wrote,
    /// with its access) resolved again as [`replay`](Self::replay)
    /// resolves the graph's writes. A launch whose reads are clean runs
    /// and releases its write set; one that reads a claimed byte is
    /// skipped, and its write set carries the failure through its skip
    /// record. The verdict is the first skipped launch's, or
    /// [`Verdict::Ran`] if none was. As with any replay, no capture window
    /// sees it; an open profile sees its skips. A failed replay
    /// (`Outcome::Failed`) did not run its launches: it is
    /// [`replay`](Self::replay)'s, its whole write set tainted with a
    /// failure of kernel `graph:<id>`. The whole replay is resolved before
    /// any launch settles, so that bad input changes nothing.
    ///
    /// Not part of SPEC.md or of the launch-log format: a library call, as
    /// the write scope is. The crate docs (*Graphs that read their own
    /// state*) say why.
    ///
    /// Cost: a launch's worth for each recorded launch, its reads checked
    /// and its write set released or skipped (the recorded decoding pass
    /// of `examples/logs/real/`, 39 launches, about 1.0 µs a replay over
    /// clean memory: `docs/performance.md`), with the bindings of
    /// allocations freed since the capture resolved again by memory id.
    ///
    /// # Errors
    ///
    /// Those of [`replay_checked_each`](Self::replay_checked_each):
    ///
    /// - [`Error::DryRunOutcome`]: `outcome` is [`Outcome::DryRun`], as
    ///   for [`replay`](Self::replay).
    /// - [`Error::UnknownGraph`]: `graph` is not a live graph id.
    /// - [`Error::RangePastEnd`]: a recorded binding's memory id was freed
    ///   since the capture, and the allocation that has it now is too small
    ///   for the recorded range. With `Outcome::Ok` every recorded binding
    ///   that read or wrote is resolved again; with `Outcome::Failed` only
    ///   the writes, as [`replay`](Self::replay) resolves them.
    /// - [`Error::Unresolved`], in strict mode only: a recorded binding's
    ///   memory id no longer resolves — no live allocation has it, or the
    ///   one that has it now was made on another slot.
    ///
    /// The whole replay is resolved before any launch settles: on `Err` no
    /// launch is settled, the graph stays live, and the world is unchanged.
    ///
    /// ```
    /// use taintworld::{Access, Binding, Launch, Outcome, ReadResult, Verdict, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 1, 64)?; // the cache a pass reads and appends to
    /// world.alloc(0, 2, 64)?; // the token it makes
    /// let step = [Binding::whole(0, 1, Access::ReadWrite), Binding::whole(0, 2, Access::Write)];
    /// world.capture_begin(0)?;
    /// world.launch(&Launch { kernel: "attend", stream: 0.into(), bindings: &step, outcome: Outcome::Ok })?;
    /// world.capture_end(0, 7)?;
    ///
    /// let failed = Outcome::Failed { kind: "launch", message: "graph launch failed" };
    /// world.replay_checked(7, failed)?; // the cache and the token now hold garbage
    /// let next = world.replay_checked(7, Outcome::Ok)?;
    /// assert!(matches!(next, Verdict::Skipped { needed: 1, .. })); // the pass read the cache
    /// let ReadResult::Tainted(report) = world.read(&Binding::whole(0, 2, Access::Read))? else {
    ///     panic!("the next token was made from garbage")
    /// };
    /// assert_eq!(report.error.kernel, "graph:7");
    /// assert_eq!(report.chain[0].kernel, "graph:7/attend");
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub fn replay_checked(&mut self, graph: u64, outcome: Outcome<'_>) -> Result<Verdict, Error> {
        self.replay_checked_each(graph, outcome, |_| {})
    }

    /// [`replay_checked`](Self::replay_checked), handing `each` the result
    /// of every captured launch it settles, in order: its number (the one
    /// it was captured with) and its verdict, `Ran` or `Skipped`. A failed
    /// replay settles no launch of its own, and bad input none at all:
    /// `each` is not called. For a caller that wants to know which of a
    /// graph's launches read garbage, and how many.
    ///
    /// # Errors
    ///
    /// - [`Error::DryRunOutcome`]: `outcome` is [`Outcome::DryRun`], as
    ///   for [`replay`](Self::replay).
    /// - [`Error::UnknownGraph`]: `graph` is not a live graph id.
    /// - [`Error::RangePastEnd`]: a recorded binding's memory id was freed
    ///   since the capture, and the allocation that has it now is too small
    ///   for the recorded range. With `Outcome::Ok` every recorded binding
    ///   that read or wrote is resolved again; with `Outcome::Failed` only
    ///   the writes, as [`replay`](Self::replay) resolves them.
    /// - [`Error::Unresolved`], in strict mode only: a recorded binding's
    ///   memory id no longer resolves — no live allocation has it, or the
    ///   one that has it now was made on another slot.
    ///
    /// On `Err` `each` is not called, no launch is settled, the graph stays
    /// live, and the world is unchanged.
    pub fn replay_checked_each(
        &mut self,
        graph: u64,
        outcome: Outcome<'_>,
        mut each: impl FnMut(LaunchResult),
    ) -> Result<Verdict, Error> {
        if outcome != Outcome::Ok {
            return self.replay(graph, outcome);
        }
        // Taken out while it is resolved and settled, and put back whatever
        // happens.
        let Some(mut recorded) = self.graphs.remove(&graph) else {
            return Err(Error::UnknownGraph { graph });
        };
        if let Err(error) = self.resolve_launches(&mut recorded) {
            self.graphs.insert(graph, recorded);
            return Err(error);
        }
        let ends = core::mem::take(&mut self.ends);
        let mut verdict = Verdict::Ran;
        let mut start = 0;
        for (launch, &end) in recorded.launches.launched.iter().zip(&ends) {
            let hit = check_reads(self.rows.get(start..end).unwrap_or_default(), &self.allocs);
            let (number, kernel) = (launch.number, launch.kernel.as_str());
            let settled = self.settle(number, kernel, None, start, end, hit, Outcome::Ok);
            each(LaunchResult {
                launch: number,
                verdict: settled,
            });
            start = end;
            if verdict == Verdict::Ran {
                verdict = settled;
            }
        }
        self.ends = ends;
        self.graphs.insert(graph, recorded);
        Ok(verdict)
    }

    /// A graph's recorded launches resolved into `self.rows`, each
    /// launch's rows ending where `self.ends` says (both cleared first),
    /// and the unresolved bindings counted, as
    /// [`resolve_recorded`](Self::resolve_recorded) resolves its writes.
    /// On bad input nothing is counted. When every binding was answered by
    /// its recorded row, the launches are marked checked under the world's
    /// stamp (see [`Kept`]).
    fn resolve_launches(&mut self, graph: &mut Graph) -> Result<(), Error> {
        self.rows.clear();
        self.ends.clear();
        let kept = self.kept(graph.launches_checked);
        let launches = &graph.launches;
        let (mut unresolved, mut answered) = (0u64, true);
        let mut start = 0;
        for &RecordedLaunch { end, .. } in &launches.launched {
            for recorded in launches.bound.get(start..end).unwrap_or_default() {
                match self.push_recorded(recorded, false, kept) {
                    Ok(None) => {}
                    Ok(Some(again)) => {
                        answered = false;
                        unresolved = unresolved.saturating_add(again);
                    }
                    Err(error) => {
                        self.rows.clear();
                        self.ends.clear();
                        return Err(error);
                    }
                }
            }
            start = end;
            self.ends.push(self.rows.len());
        }
        self.unresolved = self.unresolved.saturating_add(unresolved);
        if answered {
            graph.launches_checked = self.stamp.made();
        }
        Ok(())
    }

    /// How far keys checked under stamp `checked` are trusted now.
    #[inline]
    fn kept(&self, checked: u32) -> Kept {
        if self.stamp.still(checked) {
            Kept::Trusted
        } else {
            Kept::Checked
        }
    }

    /// A graph's write set resolved into `self.rows` (cleared first): its
    /// merged rows while every merged row's key answers (see
    /// [`RecordedBinding`]), else its recorded writes one by one
    /// ([`resolve_recorded`](Self::resolve_recorded)). `releasing` as
    /// there. The keys are checked in full first unless they all were
    /// under the world's stamp (see [`Kept`]), when a look-up that finds
    /// each live is enough.
    fn resolve_graph(&mut self, graph: &mut Graph, releasing: bool) -> Result<(), Error> {
        self.rows.clear();
        if self.kept(graph.merged_checked) == Kept::Checked {
            let (allocs, streams, bound) = (&self.allocs, &self.streams, &graph.launches.bound);
            let answered = graph.merged.iter().all(|write| {
                bound
                    .get(write.recorded)
                    .and_then(|recorded| recorded.answering(allocs, streams, write.row.end))
                    .is_some()
            });
            if !answered {
                return self.resolve_recorded(graph, releasing);
            }
            graph.merged_checked = self.stamp.made();
        }
        for write in &graph.merged {
            let Some(footprint) = self.allocs.footprint(write.row.alloc) else {
                return self.resolve_recorded(graph, releasing);
            };
            if footprint.claimed || !releasing {
                self.rows.push(write.row);
            }
        }
        Ok(())
    }

    /// A graph's recorded writes resolved into `self.rows` (cleared first)
    /// and the unresolved ones counted, as [`resolve`](Self::resolve) would
    /// resolve their bindings: each write whose row still answers for it
    /// takes that row (see [`RecordedBinding`]; checked in full unless a
    /// checked replay found every recorded key answering under the world's
    /// stamp, see [`Kept`]), the others are resolved again by memory id.
    /// On bad input (a reused id's allocation too small for the range, or
    /// an unresolved write when strict) nothing is counted.
    ///
    /// `releasing` (a good replay) leaves out the rows of live allocations
    /// that carry nothing: a release changes only claimed bytes, and no
    /// window or profile sees a good replay, so the settling would pass
    /// them by (when this was written, a good replay of W1's writes over
    /// clean memory counted 44.1 instructions a write with them, 17.1
    /// without, the baseline 36.0; such a replay, while every allocation
    /// the graph wrote lives, now settles its merged rows and does not come
    /// here).
    fn resolve_recorded(&mut self, graph: &Graph, releasing: bool) -> Result<(), Error> {
        self.rows.clear();
        let kept = self.kept(graph.launches_checked);
        let mut unresolved = 0u64;
        for (_, write) in graph.launches.writes() {
            match self.push_recorded(&write, releasing, kept) {
                Ok(again) => unresolved = unresolved.saturating_add(again.unwrap_or(0)),
                Err(error) => {
                    self.rows.clear();
                    return Err(error);
                }
            }
        }
        self.unresolved = self.unresolved.saturating_add(unresolved);
        Ok(())
    }

    /// One recorded binding's row pushed onto `self.rows`: the row it was
    /// recorded with while it answers for the binding (left out when
    /// `releasing` and the allocation carries nothing; `kept` says how far
    /// its key is trusted), else the binding resolved again by memory id.
    /// Returns `None` when the row answered, else how many did not resolve
    /// (0 or 1), or the error that makes the binding bad input.
    #[inline]
    fn push_recorded(
        &mut self,
        recorded: &RecordedBinding,
        releasing: bool,
        kept: Kept,
    ) -> Result<Option<u64>, Error> {
        let answering = match kept {
            Kept::Trusted => self.allocs.footprint(recorded.row.alloc),
            Kept::Checked => recorded.answering(&self.allocs, &self.streams, recorded.row.end),
        };
        if let Some(footprint) = answering {
            if footprint.claimed || !releasing {
                self.rows.push(recorded.row);
            }
            return Ok(None);
        }
        let rows = &mut self.rows;
        resolve_each(
            core::slice::from_ref(&recorded.binding),
            &self.streams,
            &self.allocs,
            self.config.strict,
            |row| rows.push(row),
        )
        .map(|resolution| Some(resolution.unresolved))
    }

    /// Forgets graph `graph`; its id may be captured again.
    ///
    /// # Errors
    ///
    /// - [`Error::UnknownGraph`]: `graph` is not a live graph id (never
    ///   captured, or already destroyed).
    ///
    /// On `Err` the world is unchanged.
    pub fn graph_destroy(&mut self, graph: u64) -> Result<(), Error> {
        self.graphs
            .remove(&graph)
            .map(|_| ())
            .ok_or(Error::UnknownGraph { graph })
    }

    /// Whether graph `graph` is live.
    pub fn has_graph(&self, graph: u64) -> bool {
        self.graphs.contains_key(&graph)
    }

    /// What an open capture window makes of a launch that ran, `launched`
    /// its number and kernel: it records the launch, whole (for a checked
    /// replay) and its write set (for a replay). Out of line, as
    /// [`watch`](Self::watch) is.
    #[inline(never)]
    pub(super) fn watch_ran(
        &mut self,
        slot: Option<u64>,
        (launch, kernel): (u64, &str),
        rows: &[Resolved],
    ) {
        let Some(window) = slot.and_then(|slot| self.windows.get_mut(&slot)) else {
            return;
        };
        if window.doom.is_some() {
            return;
        }
        for row in rows {
            if !row.access.reads() && !row.access.writes() {
                continue;
            }
            let Some(allocation) = self.allocs.get(row.alloc) else {
                continue;
            };
            window.launches.bound.push(RecordedBinding {
                binding: Binding {
                    stream: self.streams.stream_of_slot(allocation.slot),
                    memory: MemoryRef::Id(allocation.memory),
                    range: Some((row.start, row.end)),
                    access: row.access,
                },
                row: *row,
            });
        }
        let end = window.launches.bound.len();
        window.launches.launched.push(RecordedLaunch {
            number: launch,
            kernel: kernel.into(),
            end,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::allocation::AllocKey;
    use crate::world::Launch;

    /// A graph whose launches write overlapping, touching and separate
    /// ranges of one allocation (one a byte apart), and ranges of a second
    /// that cover it, keeps them merged as four rows; a failed replay of
    /// them leaves the canonical claims settling each write would (three
    /// on the first allocation, one on the second), a good one releases
    /// them all; and once an allocation the graph wrote is freed, a replay
    /// resolves the recorded writes one by one, each unresolved one
    /// counted.
    #[test]
    fn a_graph_settles_its_writes_merged_while_their_allocations_live_and_one_by_one_after_a_free()
    {
        let mut world = World::default();
        world.alloc(0, 1, 64).unwrap();
        world.alloc(0, 2, 32).unwrap();
        world.capture_begin(0).unwrap();
        let writes = [
            [(1, 0, 10), (1, 5, 20)],
            [(1, 20, 30), (2, 0, 32)],
            [(1, 40, 50), (2, 8, 16)],
            [(1, 51, 60), (2, 16, 24)],
        ];
        for pair in writes {
            let bindings = pair
                .map(|(memory, start, end)| Binding::range(0, memory, start, end, Access::Write));
            let launch = Launch {
                kernel: "k",
                stream: 0.into(),
                bindings: &bindings[..],
                outcome: Outcome::Ok,
            };
            assert_eq!(world.launch(&launch).unwrap().verdict, Verdict::Ran);
        }
        assert_eq!(world.capture_end(0, 3).unwrap(), CaptureResult::Ok);
        let graph = &world.graphs[&3];
        assert_eq!(graph.launches.writes().count(), 8);
        let merged: Vec<(u64, u64)> = graph
            .merged
            .iter()
            .map(|w| (w.row.start, w.row.end))
            .collect();
        assert_eq!(merged, [(0, 30), (40, 50), (51, 60), (0, 32)]);

        let failed = Outcome::Failed {
            kind: "launch",
            message: "graph launch failed",
        };
        for _ in 0..2 {
            assert!(matches!(
                world.replay(3, failed).unwrap(),
                Verdict::Failed(_)
            ));
            let stats = world.stats();
            assert_eq!((stats.claims, stats.tainted_bytes), (4, 30 + 10 + 9 + 32));
            world.check_invariants().unwrap();
            assert_eq!(world.replay(3, Outcome::Ok).unwrap(), Verdict::Ran);
            assert_eq!((world.stats().claims, world.stats().live_failures), (0, 0));
        }

        world.free(MemoryRef::Id(1)).unwrap();
        assert!(matches!(
            world.replay(3, failed).unwrap(),
            Verdict::Failed(_)
        ));
        let stats = world.stats();
        assert_eq!(
            stats.unresolved_bindings, 5,
            "each recorded write of memory 1"
        );
        assert_eq!((stats.claims, stats.tainted_bytes), (1, 32));
        world.check_invariants().unwrap();
    }

    /// A launch of kernel `k` on stream 0.
    fn launch<'a>(bindings: &'a [Binding], outcome: Outcome<'a>) -> Launch<'a> {
        Launch {
            kernel: "k",
            stream: 0.into(),
            bindings,
            outcome,
        }
    }

    /// A world with memories 1 and 2 of 64 bytes on stream 0, and graph 9
    /// of one launch of `bindings` captured there.
    fn captured(bindings: &[Binding]) -> World {
        let mut world = World::default();
        world.alloc(0, 1, 64).unwrap();
        world.alloc(0, 2, 64).unwrap();
        world.capture_begin(0).unwrap();
        world.launch(&launch(bindings, Outcome::Ok)).unwrap();
        assert_eq!(world.capture_end(0, 9).unwrap(), CaptureResult::Ok);
        world
    }

    /// Graph 9's rows that hold key `old` given key `new` instead: what
    /// they would hold after `old`'s slot was freed 2^31 times and `new`'s
    /// allocation took it.
    fn key_comes_back(world: &mut World, old: AllocKey, new: AllocKey) {
        let graph = world.graphs.get_mut(&9).unwrap();
        let merged = graph.merged.iter_mut().map(|w| &mut w.row.alloc);
        let bound = graph.launches.bound.iter_mut().map(|b| &mut b.row.alloc);
        for key in merged.chain(bound) {
            if *key == old {
                *key = new;
            }
        }
    }

    const FAILED: Outcome<'static> = Outcome::Failed {
        kind: "launch",
        message: "graph launch failed",
    };

    /// A slot freed 2^31 times wraps the slot map's version, and a key a
    /// graph kept then names whatever allocation sits in that slot
    /// (`tests/long_haul.rs` makes it happen, in about a minute of a
    /// release build). Made here by hand ([`key_comes_back`]). A replay,
    /// plain or checked, resolves the recorded memory id again, as SPEC §6
    /// words it: unresolved while the id names nothing, and bad input when
    /// the id names an allocation too small for the range; the allocation
    /// behind the key is left alone either way.
    #[test]
    fn a_graph_whose_key_names_another_allocation_resolves_its_memory_id_again() {
        let mut world = captured(&[
            Binding::whole(0, 1, Access::Write),
            Binding::whole(0, 2, Access::Write),
        ]);
        let old = world.allocs.key_of(1).unwrap();
        world.free(MemoryRef::Id(1)).unwrap();
        for (memory, size) in [(3, 8), (1, 8)] {
            let new = world.alloc(0, memory, size).unwrap();
            key_comes_back(&mut world, old, new);
            let unresolved = world.stats().unresolved_bindings;
            for checked in [false, true] {
                let replayed = if checked {
                    world.replay_checked(9, FAILED)
                } else {
                    world.replay(9, FAILED)
                };
                if memory == 1 {
                    assert!(
                        matches!(replayed, Err(Error::RangePastEnd { memory: 1, .. })),
                        "{replayed:?}"
                    );
                } else {
                    assert!(matches!(replayed, Ok(Verdict::Failed(_))));
                }
                world.check_invariants().unwrap();
                let new = world.allocs.get(new).unwrap();
                assert!(new.claims.is_empty(), "memory {memory}, checked {checked}");
            }
            let again = if memory == 3 { 2 } else { 0 };
            let stats = world.stats();
            assert_eq!(stats.unresolved_bindings, unresolved + again);
            world.free(MemoryRef::Id(memory)).unwrap();
            key_comes_back(&mut world, new, old);
        }
    }

    /// A graph whose keys all answered under the world's stamp trusts a
    /// live key while that stamp lasts (see [`Kept`]); the world draws a
    /// new one every `FREES_PER_STAMP` frees, long before a key can come
    /// back, and the graph then checks its keys in full again. Here a key
    /// comes back (by hand, as above) across a new stamp, and both replays
    /// resolve memory 1 again.
    #[test]
    fn a_graph_checks_its_keys_in_full_again_under_each_new_stamp() {
        use crate::components::binding::FREES_PER_STAMP;
        let mut world = captured(&[
            Binding::whole(0, 2, Access::Read),
            Binding::whole(0, 1, Access::Write),
        ]);
        world.replay(9, Outcome::Ok).unwrap();
        world.replay_checked(9, Outcome::Ok).unwrap();
        // A world without a stamp (`--cfg taintworld_no_stamps`, or once
        // the process has spent them) checks every key at every replay.
        let first = world.stamp.made();
        let graph = &world.graphs[&9];
        assert_eq!(
            (graph.merged_checked, graph.launches_checked),
            (first, first)
        );
        let trusted = if first == Stamp::NONE {
            Kept::Checked
        } else {
            Kept::Trusted
        };
        assert_eq!(world.kept(first), trusted);

        let old = world.allocs.key_of(1).unwrap();
        world.stamp.set_frees(FREES_PER_STAMP - 1);
        world.free(MemoryRef::Id(1)).unwrap();
        if first != Stamp::NONE {
            assert_ne!(world.stamp.made(), first, "the free drew a new stamp");
        }
        assert_eq!(world.kept(first), Kept::Checked);
        let new = world.alloc(0, 3, 8).unwrap();
        key_comes_back(&mut world, old, new);
        world.replay(9, FAILED).unwrap();
        assert_eq!(world.stats().unresolved_bindings, 1);
        world.replay_checked(9, Outcome::Ok).unwrap();
        assert_eq!(world.stats().unresolved_bindings, 2);
        assert!(world.allocs.get(new).unwrap().claims.is_empty());
        world.check_invariants().unwrap();
    }

    /// Within one capture a key names one allocation, unless the window
    /// stayed open over 2^31 frees of its slot: then two recorded writes
    /// of one key under two memory ids are not merged (made here by
    /// hand, as [`key_comes_back`] does for a graph), and a failed replay
    /// settles them write by write, leaving the claims of the live one.
    #[test]
    fn writes_of_one_key_recorded_under_two_memory_ids_are_not_merged() {
        let mut world = captured(&[]);
        world.capture_begin(0).unwrap();
        let writes = [
            Binding::range(0, 1, 0, 8, Access::Write),
            Binding::range(0, 2, 4, 16, Access::Write),
        ];
        world.launch(&launch(&writes, Outcome::Ok)).unwrap();
        let one = world.allocs.key_of(1).unwrap();
        let window = world.windows.get_mut(&0).unwrap();
        window.launches.bound[1].row.alloc = one;
        assert_eq!(world.capture_end(0, 7).unwrap(), CaptureResult::Ok);
        let merged: Vec<_> = (world.graphs[&7].merged.iter())
            .map(|w| (w.row.start, w.row.end))
            .collect();
        assert_eq!(merged, [(0, 8), (4, 16)]);
        world.replay(7, FAILED).unwrap();
        world.check_invariants().unwrap();
        assert_eq!(world.stats().tainted_bytes, 8 + 12);
    }

    /// A graph prints what it holds, and not when its keys were last
    /// checked, which differs between two worlds that hold the same.
    #[test]
    fn a_graph_prints_its_rows_and_launches_but_not_its_checks() {
        let mut world = captured(&[Binding::whole(0, 1, Access::Write)]);
        world.replay(9, Outcome::Ok).unwrap();
        let printed = alloc::format!("{:?}", world.graphs[&9]);
        for held in ["merged", "launched", "bound", "graph:9/k"] {
            assert!(printed.contains(held), "{held} in {printed}");
        }
        assert!(!printed.contains("checked"), "{printed}");
    }

    /// A doomed window makes no graph, so it lets go of what it recorded
    /// before its doom and records nothing after: a long capture doomed
    /// early stays the size it was.
    #[test]
    fn a_doomed_window_keeps_no_launch_it_can_never_use() {
        let mut world = captured(&[]);
        world.capture_begin(0).unwrap();
        let fill = [Binding::whole(0, 2, Access::Write)];
        world.launch(&launch(&fill, Outcome::Ok)).unwrap();
        assert_eq!(world.windows[&0].launches.bound.len(), 1);
        world.launch(&launch(&fill, FAILED)).unwrap();
        let recorded = |world: &World| {
            let window = &world.windows[&0];
            assert!(window.doom.is_some());
            window.launches.launched.len() + window.launches.bound.len()
        };
        assert_eq!(recorded(&world), 0);
        let clean = [Binding::whole(0, 1, Access::ReadWrite)];
        for _ in 0..100 {
            let ran = world.launch(&launch(&clean, Outcome::Ok)).unwrap();
            assert_eq!(ran.verdict, Verdict::Ran);
        }
        assert_eq!(recorded(&world), 0);
        assert!(matches!(
            world.capture_end(0, 7).unwrap(),
            CaptureResult::Failed(_)
        ));
    }

    /// The crate docs' Costs table gives a recorded binding's size (a
    /// binding and a row) and a recorded launch's (beside its bindings and
    /// kernel name).
    #[test]
    #[cfg_attr(
        not(target_pointer_width = "64"),
        ignore = "pins a 64-bit target's sizes: a 32-bit target lays these types out smaller"
    )]
    fn a_recorded_binding_is_96_bytes_a_merged_write_40_and_a_recorded_launch_40() {
        assert_eq!(core::mem::size_of::<RecordedBinding>(), 96);
        assert_eq!(core::mem::size_of::<MergedWrite>(), 40);
        assert_eq!(core::mem::size_of::<RecordedLaunch>(), 40);
    }
}
