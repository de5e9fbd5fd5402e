//! Captures and graphs (SPEC §6): what a capture window records of the
//! launches that run on its slot, the graph it makes, and the two replays
//! of a graph: [`World::replay`], a write that reads nothing, and
//! [`World::replay_checked`], its launches settled again one by one.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{Doom, LaunchResult, Outcome, Verdict, World, check_reads, resolve_each};
use crate::components::binding::{Access, Binding, MemoryRef, Resolved};
use crate::components::claim::Origin;
use crate::components::stream::StreamRef;
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

/// One binding a capture window recorded: the binding, by memory id and
/// concrete range, that a replay resolves again (SPEC §6), and the row it
/// resolved to when it was recorded. While that row's allocation lives, its
/// memory id names it and no other (ids are unique among live
/// allocations), on the slot and with the size it had: resolving the id
/// again would give the same row, so a replay takes the row as it is and
/// resolves by id only the bindings whose allocation was freed since (W1's
/// writes replayed: 168.3 instructions a binding resolving each by id).
#[derive(Copy, Clone, Debug)]
pub(super) struct RecordedBinding {
    binding: Binding,
    row: Resolved,
}

impl RecordedBinding {
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

impl Launches {
    /// Every recorded binding that writes, in order, as a plain replay
    /// settles it ([`RecordedBinding::as_write`]).
    fn writes(&self) -> impl Iterator<Item = RecordedBinding> + '_ {
        self.bound
            .iter()
            .filter(|b| b.row.access.writes())
            .map(RecordedBinding::as_write)
    }
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
#[derive(Clone, Debug)]
pub(super) struct Graph {
    merged: Vec<Resolved>,
    launches: Launches,
}

impl Graph {
    /// Graph `id` of the launches a capture recorded.
    fn new(id: u64, mut launches: Launches) -> Self {
        for launch in &mut launches.launched {
            launch.kernel = format!("{}/{}", World::graph_kernel(id), launch.kernel);
        }
        launches.launched.shrink_to_fit();
        launches.bound.shrink_to_fit();
        let mut merged: Vec<Resolved> = launches.writes().map(|w| w.row).collect();
        merged.sort_unstable_by_key(|r| (r.alloc, r.start, r.end));
        // Each row joins the one kept before it when it overlaps or touches it.
        merged.dedup_by(|row, kept| {
            let joins = row.alloc == kept.alloc && row.start <= kept.end;
            if joins {
                kept.end = kept.end.max(row.end);
            }
            joins
        });
        merged.shrink_to_fit();
        Graph { merged, launches }
    }
}

impl World {
    /// Opens a capture window on `stream`'s slot (SPEC §6). Launches on that
    /// slot are processed as usual and, when they run, recorded into it.
    /// Neither needs nor initializes the slot.
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
    /// a look-up or a resolution by memory id for each recorded write. A
    /// good replay makes no heap allocation
    /// once the world's buffers have grown (the kernel's name is made only
    /// for a failure).
    pub fn replay(&mut self, graph: u64, outcome: Outcome<'_>) -> Result<Verdict, Error> {
        if outcome == Outcome::DryRun {
            return Err(Error::DryRunOutcome {
                operation: "replay",
            });
        }
        // Taken out while it is resolved against the world, and put back
        // whatever happens.
        let Some(recorded) = self.graphs.remove(&graph) else {
            return Err(Error::UnknownGraph { graph });
        };
        let resolved = self.resolve_graph(&recorded, outcome == Outcome::Ok);
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
        let Some(recorded) = self.graphs.remove(&graph) else {
            return Err(Error::UnknownGraph { graph });
        };
        if let Err(error) = self.resolve_launches(&recorded.launches) {
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
    /// On bad input nothing is counted.
    fn resolve_launches(&mut self, launches: &Launches) -> Result<(), Error> {
        self.rows.clear();
        self.ends.clear();
        let mut unresolved = 0u64;
        let mut start = 0;
        for &RecordedLaunch { end, .. } in &launches.launched {
            for recorded in launches.bound.get(start..end).unwrap_or_default() {
                match self.push_recorded(recorded, false) {
                    Ok(again) => unresolved = unresolved.saturating_add(again),
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
        Ok(())
    }

    /// A graph's write set resolved into `self.rows` (cleared first): its
    /// merged rows while every allocation it wrote lives, else its recorded
    /// writes one by one ([`resolve_recorded`](Self::resolve_recorded)).
    /// `releasing` as there.
    fn resolve_graph(&mut self, graph: &Graph, releasing: bool) -> Result<(), Error> {
        self.rows.clear();
        for row in &graph.merged {
            let Some(footprint) = self.allocs.footprint(row.alloc) else {
                return self.resolve_recorded(&graph.launches, releasing);
            };
            if footprint.claimed || !releasing {
                self.rows.push(*row);
            }
        }
        Ok(())
    }

    /// A graph's recorded writes resolved into `self.rows` (cleared first)
    /// and the unresolved ones counted, as [`resolve`](Self::resolve) would
    /// resolve their bindings: each write whose allocation is still live
    /// takes the row it was recorded with (see [`RecordedBinding`]), the
    /// others are resolved again by memory id. On bad input (a reused id's
    /// allocation too small for the range, or an unresolved write when
    /// strict) nothing is counted.
    ///
    /// `releasing` (a good replay) leaves out the rows of live allocations
    /// that carry nothing: a release changes only claimed bytes, and no
    /// window or profile sees a good replay, so the settling would pass
    /// them by (when this was written, a good replay of W1's writes over
    /// clean memory counted 44.1 instructions a write with them, 17.1
    /// without, the baseline 36.0; such a replay, while every allocation
    /// the graph wrote lives, now settles its merged rows and does not come
    /// here).
    fn resolve_recorded(&mut self, launches: &Launches, releasing: bool) -> Result<(), Error> {
        self.rows.clear();
        let mut unresolved = 0u64;
        for write in launches.writes() {
            match self.push_recorded(&write, releasing) {
                Ok(again) => unresolved = unresolved.saturating_add(again),
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
    /// recorded with while its allocation lives (left out when `releasing`
    /// and the allocation carries nothing), else the binding resolved again
    /// by memory id. Returns how many did not resolve (0 or 1), or the
    /// error that makes the binding bad input.
    #[inline]
    fn push_recorded(&mut self, recorded: &RecordedBinding, releasing: bool) -> Result<u64, Error> {
        if let Some(footprint) = self.allocs.footprint(recorded.row.alloc) {
            if footprint.claimed || !releasing {
                self.rows.push(recorded.row);
            }
            return Ok(0);
        }
        let rows = &mut self.rows;
        resolve_each(
            core::slice::from_ref(&recorded.binding),
            &self.streams,
            &self.allocs,
            self.config.strict,
            |row| rows.push(row),
        )
        .map(|resolution| resolution.unresolved)
    }

    /// Forgets graph `graph`; its id may be captured again.
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
        let merged: Vec<(u64, u64)> = graph.merged.iter().map(|r| (r.start, r.end)).collect();
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

    /// The crate docs' Costs table gives a recorded binding's size (a
    /// binding and a row) and a recorded launch's (beside its bindings and
    /// kernel name).
    #[test]
    #[cfg_attr(
        not(target_pointer_width = "64"),
        ignore = "pins a 64-bit target's sizes: a 32-bit target lays these types out smaller"
    )]
    fn a_recorded_binding_is_96_bytes_and_a_recorded_launch_40() {
        assert_eq!(core::mem::size_of::<RecordedBinding>(), 96);
        assert_eq!(core::mem::size_of::<RecordedLaunch>(), 40);
    }
}
