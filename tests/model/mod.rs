//! A deliberately naive model of SPEC.md: every byte of every allocation
//! holds the failure it carries and the record it came through, failures and
//! records are plain vectors, and nothing is clever. The property tests drive
//! it and the world with the same operations and compare everything.

#![allow(dead_code)]

pub mod bridge;

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The model refuses bad input with the world's own error type, built from
/// what the model knows, so that a refused call is compared by which error
/// it is (kind and the ids it names), not only by being refused.
pub use taintworld::Error;
pub use taintworld::StreamRef;

/// What one byte carries: a failure id and the index of the skip record it
/// came through (`None`: the root).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    pub failure: u64,
    pub origin: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct MAlloc {
    pub slot: u64,
    pub bytes: Vec<Option<Taint>>,
    pub unbacked: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MFailure {
    pub kind: String,
    pub kernel: String,
    pub message: String,
    pub occurrences: u64,
    pub skipped: u64,
    pub pins: u64,
}

#[derive(Clone, Debug)]
pub struct MRecord {
    pub launch: u64,
    pub kernel: String,
    pub needed: u64,
    pub cause: Option<usize>,
    pub depth: u32,
    pub cut: bool,
    pub failure: u64,
}

/// A binding as the model sees it: stream (a regular id or a special
/// stream), memory id, optional range, access (0 read, 1 write, 2
/// read_write, 3 dead).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MBinding {
    pub stream: StreamRef,
    pub memory: u64,
    pub range: Option<(u64, u64)>,
    pub access: u8,
}

impl MBinding {
    pub fn reads(&self) -> bool {
        self.access == 0 || self.access == 2
    }
    pub fn writes(&self) -> bool {
        self.access == 1 || self.access == 2
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MOutcome {
    Ok,
    DryRun,
    Failed(String, String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MVerdict {
    Ran,
    Failed(u64),
    Skipped(u64, u64),
    DryRun,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MReport {
    pub failure: u64,
    pub error: (String, String, String),
    pub occurrences: u64,
    pub chain: Vec<(u64, String, u64)>,
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MRead {
    Clean,
    Tainted(MReport),
    Unresolved,
    /// `(kind, kernel, message)`: the kernel is always `device`.
    DeviceFault(String, String, String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MCapture {
    Ok,
    Failed(MReport),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MProfile {
    Valid,
    Invalid(u64, (String, String, String)),
}

/// A resolved binding: memory id, range, access.
#[derive(Copy, Clone, Debug)]
struct Row {
    memory: u64,
    start: u64,
    end: u64,
    access: u8,
}

/// A launch a window recorded whole, for a checked replay: its number, its
/// kernel and every binding that read or wrote, as `(slot, memory, start,
/// end, access)`.
type MRecordedLaunch = (u64, String, Vec<(u64, u64, u64, u64, u8)>);

#[derive(Clone, Debug, Default)]
struct MWindow {
    recorded: Vec<(u64, u64, u64, u64)>,
    launches: Vec<MRecordedLaunch>,
    doom: Option<(u64, Option<usize>)>,
}

/// A graph: its write set, and its launches whole (kernels named
/// `graph:<id>/<kernel>`).
#[derive(Clone, Debug)]
struct MGraph {
    recorded: Vec<(u64, u64, u64, u64)>,
    launches: Vec<MRecordedLaunch>,
}

/// `(kind, kernel, message)`.
pub type ErrorTriple = (String, String, String);

#[derive(Clone, Debug)]
pub struct Model {
    pub max_streams: u64,
    /// Special streams, at slots `max_streams + index` (SPEC §1).
    pub num_special: u16,
    pub chain_limit: u32,
    pub strict: bool,
    pub allocs: BTreeMap<u64, MAlloc>,
    /// Live failures by id.
    pub failures: BTreeMap<u64, MFailure>,
    pub minted: u64,
    pub records: Vec<MRecord>,
    pub launches: u64,
    pub unresolved: u64,
    windows: HashMap<u64, MWindow>,
    graphs: HashMap<u64, MGraph>,
    profiles: BTreeMap<u64, Option<(u64, ErrorTriple)>>,
    pub fault: Option<(String, String)>,
}

impl Model {
    pub fn new(max_streams: u64, chain_limit: u32, strict: bool) -> Self {
        Model {
            max_streams,
            num_special: 0,
            chain_limit,
            strict,
            allocs: BTreeMap::new(),
            failures: BTreeMap::new(),
            minted: 0,
            records: Vec::new(),
            launches: 0,
            unresolved: 0,
            windows: HashMap::new(),
            graphs: HashMap::new(),
            profiles: BTreeMap::new(),
            fault: None,
        }
    }

    /// The model with `num_special` special streams (SPEC §1); none
    /// otherwise.
    pub fn with_special(self, num_special: u16) -> Self {
        Model {
            num_special,
            ..self
        }
    }

    /// The slot a stream names: a regular id folds onto `id %
    /// max_streams`, special stream `index` sits at `max_streams + index`;
    /// a special index at or past `num_special` is bad input.
    pub fn slot(&self, stream: StreamRef) -> Result<u64, Error> {
        match stream {
            StreamRef::Id(id) => Ok(id % self.max_streams),
            StreamRef::Special(index) if index < self.num_special => {
                Ok(self.max_streams + u64::from(index))
            }
            StreamRef::Special(index) => Err(Error::SpecialOutOfRange {
                index,
                num_special: self.num_special,
            }),
        }
    }

    /// The stream a recorded binding on `slot` is resolved again with: the
    /// regular id that is the slot, or the special stream at it.
    fn stream_of_slot(&self, slot: u64) -> StreamRef {
        match slot.checked_sub(self.max_streams) {
            Some(index) => StreamRef::Special(index as u16),
            None => StreamRef::Id(slot),
        }
    }

    /// Resolves bindings; `Err` for bad input, the first bad binding's
    /// error: its stream a special one past `num_special`, its range
    /// reversed (resolved or not), past its allocation's end (resolved),
    /// or in strict mode the binding unresolved (naming the slot its live
    /// allocation was made on, if one is live). Returns rows (dead ones
    /// dropped) and the unresolved count.
    fn resolve(&self, bindings: &[MBinding]) -> Result<(Vec<Row>, u64), Error> {
        let mut rows = Vec::new();
        let mut unresolved = 0;
        for b in bindings {
            let slot = self.slot(b.stream)?;
            if let Some((start, end)) = b.range
                && end < start
            {
                let memory = b.memory;
                return Err(Error::RangeReversed { memory, start, end });
            }
            match self.allocs.get(&b.memory) {
                Some(a) if a.slot == slot => {
                    let size = a.bytes.len() as u64;
                    let (s, e) = b.range.unwrap_or((0, size));
                    if e > size {
                        return Err(Error::RangePastEnd {
                            memory: b.memory,
                            start: s,
                            end: e,
                            size,
                        });
                    }
                    if b.access != 3 {
                        rows.push(Row {
                            memory: b.memory,
                            start: s,
                            end: e,
                            access: b.access,
                        });
                    }
                }
                live if self.strict => {
                    return Err(Error::Unresolved {
                        memory: b.memory,
                        slot,
                        made_on: live.map(|a| a.slot),
                    });
                }
                _ => unresolved += 1,
            }
        }
        Ok((rows, unresolved))
    }

    /// Which of `bindings` is the first bad input, if any: the one a
    /// launch's error is about (`World::binding_at_fault`).
    pub fn first_bad(&self, bindings: &[MBinding]) -> Option<usize> {
        bindings
            .iter()
            .position(|b| self.resolve(core::slice::from_ref(b)).is_err())
    }

    fn find_or_mint(&mut self, kind: &str, kernel: &str, message: &str) -> u64 {
        for (id, f) in self.failures.iter_mut() {
            if f.kind == kind && f.kernel == kernel && f.message == message {
                f.occurrences += 1;
                return *id;
            }
        }
        self.minted += 1;
        self.failures.insert(
            self.minted,
            MFailure {
                kind: kind.into(),
                kernel: kernel.into(),
                message: message.into(),
                occurrences: 1,
                skipped: 0,
                pins: 0,
            },
        );
        self.minted
    }

    fn set_bytes(&mut self, rows: &[Row], value: Option<Taint>) {
        for r in rows {
            if r.access != 1 && r.access != 2 {
                continue;
            }
            let a = self.allocs.get_mut(&r.memory).unwrap();
            if a.unbacked {
                continue;
            }
            for b in r.start..r.end {
                a.bytes[b as usize] = value;
            }
        }
    }

    /// Step 6: failures nothing carries or pins go. (Records are never
    /// removed from the vector; which are alive is computed on demand.)
    fn prune(&mut self) {
        let carried: BTreeSet<u64> = self
            .allocs
            .values()
            .flat_map(|a| a.bytes.iter().flatten().map(|t| t.failure))
            .collect();
        self.failures
            .retain(|id, f| carried.contains(id) || f.pins > 0);
    }

    fn profile_failure(&mut self, failure: u64) {
        let f = &self.failures[&failure];
        let e = (f.kind.clone(), f.kernel.clone(), f.message.clone());
        for first in self.profiles.values_mut() {
            if first.is_none() {
                *first = Some((failure, e.clone()));
            }
        }
    }

    pub fn alloc(
        &mut self,
        stream: impl Into<StreamRef>,
        memory: u64,
        size: u64,
    ) -> Result<(), Error> {
        let slot = self.slot(stream.into())?;
        if self.allocs.contains_key(&memory) {
            return Err(Error::DuplicateMemory { memory });
        }
        self.allocs.insert(
            memory,
            MAlloc {
                slot,
                bytes: vec![None; size as usize],
                unbacked: false,
            },
        );
        Ok(())
    }

    pub fn alloc_failed(
        &mut self,
        stream: impl Into<StreamRef>,
        memory: u64,
        size: u64,
        kind: &str,
        message: &str,
    ) -> Result<(), Error> {
        let slot = self.slot(stream.into())?;
        if self.allocs.contains_key(&memory) {
            return Err(Error::DuplicateMemory { memory });
        }
        let f = self.find_or_mint(kind, "alloc", message);
        self.allocs.insert(
            memory,
            MAlloc {
                slot,
                bytes: vec![
                    Some(Taint {
                        failure: f,
                        origin: None
                    });
                    size as usize
                ],
                unbacked: true,
            },
        );
        self.prune();
        Ok(())
    }

    pub fn free(&mut self, memory: u64) -> Result<(), Error> {
        self.allocs
            .remove(&memory)
            .ok_or(Error::UnknownMemory { memory })?;
        self.prune();
        Ok(())
    }

    pub fn launch(
        &mut self,
        kernel: &str,
        stream: impl Into<StreamRef>,
        bindings: &[MBinding],
        outcome: &MOutcome,
    ) -> Result<(u64, MVerdict), Error> {
        // The launch's stream first, then its bindings in order.
        let slot = self.slot(stream.into())?;
        let (rows, unresolved) = self.resolve(bindings)?;
        self.unresolved += unresolved;
        let n = self.launches;
        self.launches += 1;
        if *outcome == MOutcome::DryRun {
            return Ok((n, MVerdict::DryRun));
        }
        Ok((n, self.settle(n, kernel, &rows, outcome, Some(slot))))
    }

    /// Steps 2–6 of a launch numbered `n` whose bindings resolved to
    /// `rows`; `slot` is the one whose capture window sees it, if any.
    fn settle(
        &mut self,
        n: u64,
        kernel: &str,
        rows: &[Row],
        outcome: &MOutcome,
        slot: Option<u64>,
    ) -> MVerdict {
        // check_reads: the first tainted byte of the first read binding
        // that has one.
        let mut hit = None;
        'rows: for r in rows {
            if r.access != 0 && r.access != 2 {
                continue;
            }
            let a = &self.allocs[&r.memory];
            for b in r.start..r.end {
                if let Some(t) = a.bytes[b as usize] {
                    hit = Some((t, r.memory));
                    break 'rows;
                }
            }
        }
        let (verdict, doom) = if let Some((t, needed)) = hit {
            let (cause, depth, cut) = match t.origin {
                None => (None, 1, false),
                Some(c) if self.records[c].depth < self.chain_limit => {
                    (Some(c), self.records[c].depth + 1, false)
                }
                Some(_) => (None, 1, true),
            };
            self.records.push(MRecord {
                launch: n,
                kernel: kernel.into(),
                needed,
                cause,
                depth,
                cut,
                failure: t.failure,
            });
            let rec = self.records.len() - 1;
            self.failures.get_mut(&t.failure).unwrap().skipped += 1;
            self.set_bytes(
                rows,
                Some(Taint {
                    failure: t.failure,
                    origin: Some(rec),
                }),
            );
            (
                MVerdict::Skipped(t.failure, needed),
                Some((t.failure, Some(rec))),
            )
        } else {
            match outcome {
                MOutcome::Failed(kind, message) => {
                    let f = self.find_or_mint(kind, kernel, message);
                    self.set_bytes(
                        rows,
                        Some(Taint {
                            failure: f,
                            origin: None,
                        }),
                    );
                    (MVerdict::Failed(f), Some((f, None)))
                }
                _ => {
                    self.set_bytes(rows, None);
                    (MVerdict::Ran, None)
                }
            }
        };
        if let Some(w) = slot.and_then(|slot| self.windows.get_mut(&slot)) {
            match doom {
                None => {
                    let mut bound = Vec::new();
                    for r in rows {
                        let a = &self.allocs[&r.memory];
                        bound.push((a.slot, r.memory, r.start, r.end, r.access));
                        if r.access == 1 || r.access == 2 {
                            w.recorded.push((a.slot, r.memory, r.start, r.end));
                        }
                    }
                    w.launches.push((n, kernel.to_owned(), bound));
                }
                Some(d) if w.doom.is_none() => {
                    w.doom = Some(d);
                    self.failures.get_mut(&d.0).unwrap().pins += 1;
                }
                Some(_) => {}
            }
        }
        if let Some((f, _)) = doom {
            self.profile_failure(f);
        }
        self.prune();
        verdict
    }

    pub fn host_write(
        &mut self,
        binding: &MBinding,
        outcome: &MOutcome,
    ) -> Result<MVerdict, Error> {
        if *outcome == MOutcome::DryRun {
            let operation = "host_write";
            return Err(Error::DryRunOutcome { operation });
        }
        let b = MBinding {
            access: 1,
            ..*binding
        };
        let (rows, unresolved) = self.resolve(&[b])?;
        self.unresolved += unresolved;
        Ok(self.settle_write(&rows, outcome, "host_write"))
    }

    fn settle_write(&mut self, rows: &[Row], outcome: &MOutcome, kernel: &str) -> MVerdict {
        let v = match outcome {
            MOutcome::Failed(kind, message) => {
                let f = self.find_or_mint(kind, kernel, message);
                self.set_bytes(
                    rows,
                    Some(Taint {
                        failure: f,
                        origin: None,
                    }),
                );
                self.profile_failure(f);
                MVerdict::Failed(f)
            }
            _ => {
                self.set_bytes(rows, None);
                MVerdict::Ran
            }
        };
        self.prune();
        v
    }

    pub fn report(&self, failure: u64, origin: Option<usize>) -> MReport {
        let f = &self.failures[&failure];
        let mut chain = Vec::new();
        let mut truncated = false;
        let mut next = origin;
        while let Some(i) = next {
            let r = &self.records[i];
            chain.push((r.launch, r.kernel.clone(), r.needed));
            truncated = r.cut;
            next = r.cause;
        }
        MReport {
            failure,
            error: (f.kind.clone(), f.kernel.clone(), f.message.clone()),
            occurrences: f.occurrences,
            chain,
            truncated,
        }
    }

    pub fn read(&mut self, binding: &MBinding) -> Result<MRead, Error> {
        let b = MBinding {
            access: 0,
            ..*binding
        };
        let (rows, unresolved) = self.resolve(&[b])?;
        if unresolved > 0 {
            self.unresolved += unresolved;
            return Ok(MRead::Unresolved);
        }
        if let Some((k, m)) = &self.fault {
            return Ok(MRead::DeviceFault(k.clone(), "device".into(), m.clone()));
        }
        let r = rows[0];
        let a = &self.allocs[&r.memory];
        for b in r.start..r.end {
            if let Some(t) = a.bytes[b as usize] {
                return Ok(MRead::Tainted(self.report(t.failure, t.origin)));
            }
        }
        Ok(MRead::Clean)
    }

    /// The cheap question a scheduler asks before a host read
    /// (`World::read_failure`): the failure the first tainted byte
    /// carries, with no report and no device fault — the fault is
    /// `sync`'s to tell. An unresolved binding is counted and carries
    /// nothing.
    pub fn read_failure(&mut self, binding: &MBinding) -> Result<Option<u64>, Error> {
        let b = MBinding {
            access: 0,
            ..*binding
        };
        let (rows, unresolved) = self.resolve(&[b])?;
        self.unresolved += unresolved;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let a = &self.allocs[&r.memory];
        Ok((r.start..r.end).find_map(|b| a.bytes[b as usize].map(|t| t.failure)))
    }

    pub fn capture_begin(&mut self, stream: impl Into<StreamRef>) -> Result<(), Error> {
        let stream = stream.into();
        let slot = self.slot(stream)?;
        if self.windows.contains_key(&slot) {
            return Err(Error::CaptureOpen { stream, slot });
        }
        self.windows.insert(slot, MWindow::default());
        Ok(())
    }

    pub fn capture_end(
        &mut self,
        stream: impl Into<StreamRef>,
        graph: u64,
    ) -> Result<MCapture, Error> {
        let stream = stream.into();
        let slot = self.slot(stream)?;
        if !self.windows.contains_key(&slot) {
            return Err(Error::NoCapture { stream, slot });
        }
        if self.graphs.contains_key(&graph) {
            return Err(Error::GraphLive { graph });
        }
        let w = self.windows.remove(&slot).unwrap();
        match w.doom {
            None => {
                let launches = w
                    .launches
                    .into_iter()
                    .map(|(n, kernel, bound)| (n, format!("graph:{graph}/{kernel}"), bound))
                    .collect();
                let recorded = w.recorded;
                self.graphs.insert(graph, MGraph { recorded, launches });
                Ok(MCapture::Ok)
            }
            Some((f, rec)) => {
                let report = self.report(f, rec);
                self.failures.get_mut(&f).unwrap().pins -= 1;
                self.prune();
                Ok(MCapture::Failed(report))
            }
        }
    }

    pub fn replay(&mut self, graph: u64, outcome: &MOutcome) -> Result<MVerdict, Error> {
        if *outcome == MOutcome::DryRun {
            let operation = "replay";
            return Err(Error::DryRunOutcome { operation });
        }
        let unknown = Error::UnknownGraph { graph };
        let recorded = &self.graphs.get(&graph).ok_or(unknown)?.recorded;
        let bindings: Vec<MBinding> = recorded
            .iter()
            .map(|&(slot, memory, s, e)| MBinding {
                stream: self.stream_of_slot(slot),
                memory,
                range: Some((s, e)),
                access: 1,
            })
            .collect();
        let (rows, unresolved) = self.resolve(&bindings)?;
        self.unresolved += unresolved;
        Ok(self.settle_write(&rows, outcome, &format!("graph:{graph}")))
    }

    /// A checked replay: a good one settles the recorded launches one by
    /// one as launches (under the numbers they were captured with, none
    /// seen by a window), all resolved first; the verdict is the first
    /// skip's, or `Ran`. A failed one is a replay.
    pub fn replay_checked(&mut self, graph: u64, outcome: &MOutcome) -> Result<MVerdict, Error> {
        self.replay_checked_each(graph, outcome)
            .map(|(verdict, _)| verdict)
    }

    /// [`replay_checked`](Self::replay_checked) with what
    /// `World::replay_checked_each` hands its callback: each recorded
    /// launch's number and verdict, in order — none for a failed replay.
    pub fn replay_checked_each(
        &mut self,
        graph: u64,
        outcome: &MOutcome,
    ) -> Result<(MVerdict, Vec<(u64, MVerdict)>), Error> {
        if *outcome != MOutcome::Ok {
            return self.replay(graph, outcome).map(|v| (v, Vec::new()));
        }
        let unknown = Error::UnknownGraph { graph };
        let launches = self.graphs.get(&graph).ok_or(unknown)?.launches.clone();
        let mut resolved = Vec::new();
        let mut unresolved = 0;
        for (n, kernel, bound) in &launches {
            let bindings: Vec<MBinding> = bound
                .iter()
                .map(|&(slot, memory, s, e, access)| MBinding {
                    stream: self.stream_of_slot(slot),
                    memory,
                    range: Some((s, e)),
                    access,
                })
                .collect();
            let (rows, u) = self.resolve(&bindings)?;
            unresolved += u;
            resolved.push((*n, kernel, rows));
        }
        self.unresolved += unresolved;
        let mut verdict = MVerdict::Ran;
        let mut each = Vec::new();
        for (n, kernel, rows) in resolved {
            let settled = self.settle(n, kernel, &rows, &MOutcome::Ok, None);
            each.push((n, settled.clone()));
            if verdict == MVerdict::Ran {
                verdict = settled;
            }
        }
        Ok((verdict, each))
    }

    pub fn graph_destroy(&mut self, graph: u64) -> Result<(), Error> {
        self.graphs
            .remove(&graph)
            .map(|_| ())
            .ok_or(Error::UnknownGraph { graph })
    }

    /// Whether graph `graph` is live (`World::has_graph`).
    pub fn has_graph(&self, graph: u64) -> bool {
        self.graphs.contains_key(&graph)
    }

    pub fn profile_begin(&mut self, profile: u64) -> Result<(), Error> {
        if self.profiles.contains_key(&profile) {
            return Err(Error::ProfileOpen { profile });
        }
        self.profiles.insert(profile, None);
        Ok(())
    }

    pub fn profile_end(&mut self, profile: u64) -> Result<MProfile, Error> {
        let not_open = Error::ProfileNotOpen { profile };
        match self.profiles.remove(&profile).ok_or(not_open)? {
            None => Ok(MProfile::Valid),
            Some((f, e)) => Ok(MProfile::Invalid(f, e)),
        }
    }

    /// What a `sync` reports: the first fault as `(kind, kernel, message)`.
    pub fn sync(&self) -> Option<ErrorTriple> {
        let (kind, message) = self.fault.clone()?;
        Some((kind, "device".into(), message))
    }

    pub fn device_fault(&mut self, kind: &str, message: &str) {
        if self.fault.is_none() {
            self.fault = Some((kind.into(), message.into()));
        }
    }

    /// The claims of an allocation: maximal runs of equal taint, as
    /// `(start, end, failure, origin launch)`.
    pub fn claims(&self, memory: u64) -> Vec<(u64, u64, u64, Option<u64>)> {
        let a = &self.allocs[&memory];
        let mut out: Vec<(u64, u64, u64, Option<u64>)> = Vec::new();
        let mut prev: Option<Taint> = None;
        for (i, t) in a.bytes.iter().enumerate() {
            let i = i as u64;
            match (t, prev) {
                (Some(t), Some(p)) if *t == p => out.last_mut().unwrap().1 = i + 1,
                (Some(t), _) => out.push((
                    i,
                    i + 1,
                    t.failure,
                    t.origin.map(|o| self.records[o].launch),
                )),
                (None, _) => {}
            }
            prev = *t;
        }
        out
    }

    /// The indices of the records something still refers to: byte
    /// origins, pinned window records, and their causes.
    pub fn live_records(&self) -> BTreeSet<usize> {
        let mut stack: Vec<usize> = self
            .allocs
            .values()
            .flat_map(|a| a.bytes.iter().flatten().filter_map(|t| t.origin))
            .collect();
        stack.extend(
            self.windows
                .values()
                .filter_map(|w| w.doom.and_then(|d| d.1)),
        );
        let mut seen = BTreeSet::new();
        while let Some(i) = stack.pop() {
            if seen.insert(i)
                && let Some(c) = self.records[i].cause
            {
                stack.push(c);
            }
        }
        seen
    }

    /// The live skip records in full, sorted by launch number: a cause is
    /// named by its launch number, as the world names it.
    pub fn live_record_rows(&self) -> Vec<bridge::RecordRow> {
        let live = self.live_records();
        let mut rows: Vec<_> = self
            .records
            .iter()
            .enumerate()
            .filter(|(i, _)| live.contains(i))
            .map(|(_, r)| {
                let cause = r.cause.map(|c| self.records[c].launch);
                let kernel = r.kernel.clone();
                (r.launch, kernel, r.needed, cause, r.depth, r.cut, r.failure)
            })
            .collect();
        rows.sort();
        rows
    }

    /// How many allocations carry failure `id` on any byte.
    pub fn carriers(&self, id: u64) -> u64 {
        let carries = |a: &&MAlloc| a.bytes.iter().flatten().any(|t| t.failure == id);
        self.allocs.values().filter(carries).count() as u64
    }

    pub fn tainted_bytes(&self) -> u128 {
        self.allocs
            .values()
            .map(|a| a.bytes.iter().filter(|b| b.is_some()).count() as u128)
            .sum()
    }

    pub fn tainted_allocations(&self) -> u64 {
        self.allocs
            .values()
            .filter(|a| a.bytes.iter().any(Option::is_some))
            .count() as u64
    }
}
