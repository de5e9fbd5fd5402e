//! (c) A whole replay of arbitrary bytes with `--keep-going` semantics: no
//! line is silently lost. The event lines and the bad blank or comment
//! lines (too long, or not UTF-8), both counted here independently of the
//! reader by SPEC Appendix A, are exactly the lines the report accounts
//! for: `events` is the number of event lines less an accepted header,
//! every rejected line is one of the two, listed once and in order, and
//! every line the reader could not parse is rejected. The world still keeps
//! SPEC §10, the failed captures, host writes and graph replays the
//! summary counts are exactly those the lists hold, and the report
//! serializes as JSON that parses back with the same counts.
//! And the replay answers as the world does: every accepted event, handed
//! straight to a world of the header's settings as the call SPEC §7 names
//! for it ([`Direct`]), makes the same lists (launch results, reads,
//! captures, profiles, syncs), the same verdict counts, the same rejected
//! lines (with those the reader could not parse) and a world whose whole
//! observable state is the replay's — for the plain replay, for the one
//! whose replays are checked, and for one with the replay's other options
//! (`strict`, `max_streams` and `chain_limit` over the header's, failures
//! injected into launches, replays checked or not), picked by the input's
//! length, each handed to
//! its world as SPEC §7 and Appendix A say: the options' settings over the
//! header's, and an injected launch given the injected error (a dry run
//! too) under the number it takes. Without `keep_going` the replay must
//! stop at the first line the report rejects, with the report's words for
//! it and, where the world refused it, the direct world's typed error.

#![no_main]

#[path = "../../tests/model/mod.rs"]
mod model;

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use taintworld::log::{
    CARRIERS_SHOWN, CaptureEntry, CaptureResult, CarriersRest, Event, LaunchResult, LogReader,
    MAX_LINE_BYTES, Outcome as LogOutcome, ProfileEntry, ProfileResult, REMEMBERED_LIFETIMES,
    ReadEntry, ReadResult, Replay, ReplayError, ReplayOptions, Report, SUMMARY_FAILURES,
    SUMMARY_READS, SUMMARY_REJECTED, SyncEntry, replay,
};
use taintworld::{Binding, Config, Launch, Outcome, StreamRef, SyncResult, Verdict, World};

/// The log's events handed straight to a world, one call each as SPEC §7
/// names it, with what the replay's report lists for each: what the
/// replay must have answered, so that a replay that hands an event over
/// wrongly (another call, an outcome dropped, a list cut short) answers
/// otherwise.
struct Direct {
    world: World,
    checked: bool,
    /// The launch numbers given the injected error.
    fail_launches: BTreeSet<u64>,
    launch_results: Vec<LaunchResult>,
    reads: Vec<ReadEntry>,
    captures: Vec<CaptureEntry>,
    profiles: Vec<ProfileEntry>,
    syncs: Vec<SyncEntry>,
    /// ran, failed, skipped, dry run.
    verdicts: [u64; 4],
    /// The lines the world refused as bad input.
    rejected: BTreeSet<u64>,
    /// The world's error for each of them.
    errors: std::collections::BTreeMap<u64, taintworld::Error>,
}

impl Direct {
    /// A world of `options`' settings, else `header`'s, else the defaults;
    /// replays checked, launch by launch, as `options` say, and the
    /// launches it names given the injected error.
    fn new(header: Option<&taintworld::log::Header>, options: &ReplayOptions) -> Self {
        let defaults = Config::default();
        let config = Config {
            max_streams: options
                .max_streams
                .or(header.and_then(|h| h.max_streams))
                .unwrap_or(defaults.max_streams),
            num_special: 0,
            chain_limit: options
                .chain_limit
                .or(header.and_then(|h| h.chain_limit))
                .map_or(defaults.chain_limit, |c| {
                    u32::try_from(c).unwrap_or(u32::MAX)
                }),
            strict: options.strict,
        };
        Direct {
            world: World::new(config).expect("a header's settings make a world"),
            checked: options.checked_replays,
            fail_launches: options.fail_launches.clone(),
            launch_results: Vec::new(),
            reads: Vec::new(),
            captures: Vec::new(),
            profiles: Vec::new(),
            syncs: Vec::new(),
            verdicts: [0; 4],
            rejected: BTreeSet::new(),
            errors: std::collections::BTreeMap::new(),
        }
    }

    /// Event `event` of line `line`; its line is rejected where the world
    /// refuses it.
    fn apply(&mut self, line: u64, event: &Event) {
        if let Err(error) = self.call(line, event) {
            self.rejected.insert(line);
            self.errors.insert(line, error);
        }
    }

    fn call(&mut self, line: u64, event: &Event) -> Result<(), taintworld::Error> {
        let w = &mut self.world;
        match event {
            Event::Header(_) => {
                // A header the reader took is first; the caller hands it
                // over as the world's settings, never here.
                unreachable!("a header is no call")
            }
            Event::Alloc {
                stream,
                memory,
                size,
                outcome: Some(LogOutcome::Failed(e)),
            } => {
                w.alloc_failed(*stream, *memory, *size, &e.kind, &e.message)?;
            }
            Event::Alloc {
                stream,
                memory,
                size,
                ..
            } => {
                w.alloc(*stream, *memory, *size)?;
            }
            Event::Free { memory } => w.free(*memory)?,
            Event::Launch {
                kernel,
                stream,
                bindings,
                outcome,
            } => {
                let bindings: Vec<Binding> = bindings.iter().map(Binding::from).collect();
                // The number the launch takes if it is good input.
                let outcome = if self.fail_launches.contains(&w.launches()) {
                    Outcome::Failed {
                        kind: "injected",
                        message: "injected failure",
                    }
                } else {
                    outcome.into()
                };
                let r = w.launch(&Launch {
                    kernel,
                    stream: StreamRef::Id(*stream),
                    bindings: &bindings[..],
                    outcome,
                })?;
                let launch = r.launch;
                let (i, entry) = match r.verdict {
                    Verdict::Ran => (0, None),
                    Verdict::Failed(f) => (
                        1,
                        Some(LaunchResult::Failed {
                            launch,
                            line,
                            failure: f.get(),
                        }),
                    ),
                    Verdict::Skipped { failure, needed } => (
                        2,
                        Some(LaunchResult::Skipped {
                            launch,
                            line,
                            failure: failure.get(),
                            needed,
                        }),
                    ),
                    Verdict::DryRun => (3, Some(LaunchResult::DryRun { launch, line })),
                };
                self.verdicts[i] += 1;
                self.launch_results.extend(entry);
            }
            Event::HostWrite { binding, outcome } => {
                if let Verdict::Failed(f) = w.host_write(&Binding::from(binding), outcome.into())? {
                    self.launch_results.push(LaunchResult::HostWriteFailed {
                        line,
                        failure: f.get(),
                    });
                }
            }
            Event::Read { binding } => {
                let result = match w.read(&Binding::from(binding))? {
                    taintworld::ReadResult::Clean => ReadResult::Clean,
                    taintworld::ReadResult::Unresolved => ReadResult::Unresolved,
                    taintworld::ReadResult::Tainted(r) => ReadResult::Tainted(r.into()),
                    taintworld::ReadResult::DeviceFault(e) => ReadResult::DeviceFault(e),
                };
                self.reads.push(ReadEntry {
                    line,
                    memory: binding.memory,
                    result,
                });
            }
            Event::CaptureBegin { stream } => w.capture_begin(*stream)?,
            Event::CaptureEnd { stream, graph } => {
                let result = match w.capture_end(*stream, *graph)? {
                    taintworld::CaptureResult::Ok => CaptureResult::Ok,
                    taintworld::CaptureResult::Failed(r) => CaptureResult::Failed(r.into()),
                };
                self.captures.push(CaptureEntry {
                    line,
                    graph: *graph,
                    result,
                });
            }
            Event::Replay { graph, outcome, .. } => {
                let mut skipped = Vec::new();
                let outcome: Outcome<'_> = outcome.into();
                let verdict = if self.checked {
                    w.replay_checked_each(*graph, outcome, |r| {
                        if let Verdict::Skipped { .. } = r.verdict {
                            skipped.push(r.launch);
                        }
                    })?
                } else {
                    w.replay(*graph, outcome)?
                };
                match verdict {
                    Verdict::Failed(f) => self.launch_results.push(LaunchResult::ReplayFailed {
                        graph: *graph,
                        line,
                        failure: f.get(),
                    }),
                    Verdict::Skipped { failure, needed } => {
                        self.launch_results.push(LaunchResult::ReplaySkipped {
                            graph: *graph,
                            line,
                            failure: failure.get(),
                            needed,
                            launches: skipped,
                        })
                    }
                    Verdict::Ran | Verdict::DryRun => {}
                }
            }
            Event::GraphDestroy { graph } => w.graph_destroy(*graph)?,
            Event::ProfileBegin { profile } => w.profile_begin(*profile)?,
            Event::ProfileEnd { profile } => {
                let result = match w.profile_end(*profile)? {
                    taintworld::ProfileResult::Valid => ProfileResult::Valid,
                    taintworld::ProfileResult::Invalid { failure, error } => {
                        ProfileResult::Invalid {
                            failure: failure.get(),
                            error,
                        }
                    }
                };
                self.profiles.push(ProfileEntry {
                    line,
                    profile: *profile,
                    result,
                });
            }
            Event::DeviceFault { error } => w.device_fault(&error.kind, &error.message),
            Event::Sync => self.syncs.push(SyncEntry {
                line,
                result: w.sync(),
            }),
        }
        Ok(())
    }

    /// Holds the replay's report and world to this world's answers.
    /// `refused`: the lines rejected before any call (the reader could not
    /// parse them, a bad blank or comment, a header not first).
    fn agrees(&self, report: &Report, world: &World, refused: &BTreeSet<u64>, what: &str) {
        assert_eq!(
            report.launch_results, self.launch_results,
            "{what}: launch results"
        );
        assert_eq!(report.reads, self.reads, "{what}: reads");
        assert_eq!(report.captures, self.captures, "{what}: captures");
        assert_eq!(report.profiles, self.profiles, "{what}: profiles");
        assert_eq!(report.syncs, self.syncs, "{what}: syncs");
        let v = &report.verdicts;
        assert_eq!(
            [v.ran, v.failed, v.skipped, v.dry_run],
            self.verdicts,
            "{what}: verdicts"
        );
        let rejected: BTreeSet<u64> = report.rejected.iter().map(|r| r.line).collect();
        let expected: BTreeSet<u64> = self.rejected.union(refused).copied().collect();
        assert_eq!(rejected, expected, "{what}: rejected lines");
        assert_eq!(
            model::bridge::state(world),
            model::bridge::state(&self.world),
            "{what}: the replay's world is not the direct world"
        );
    }
}

/// Each unresolved read the replay keeps, by line, with the line it says
/// freed the read's memory.
fn freed_lines(replay: &Replay) -> Vec<(u64, Option<u64>)> {
    replay
        .unresolved_reads()
        .map(|r| (r.line, replay.unresolved_read_freed_at(r.line)))
        .collect()
}

/// The numbers of the lines that are neither blank nor a comment, and of
/// the blank or comment lines that are bad input all the same.
fn event_lines(data: &[u8]) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let mut out = BTreeSet::new();
    let mut bad_comments = BTreeSet::new();
    let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    // A final newline ends the last line; it does not start another.
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    for (i, part) in parts.iter().enumerate() {
        let line = part.strip_suffix(b"\r").unwrap_or(part);
        let comment = line.first() == Some(&b'#') || line.iter().all(|&b| b == b' ' || b == b'\t');
        let bad = line.len() > MAX_LINE_BYTES || std::str::from_utf8(line).is_err();
        if !comment {
            out.insert(i as u64 + 1);
        } else if bad {
            bad_comments.insert(i as u64 + 1);
        }
    }
    (out, bad_comments)
}

fuzz_target!(|data: &[u8]| {
    let (lines, bad_comments) = event_lines(data);

    // What the reader yields: the same lines; which of them it could not
    // parse; whether the first event line is a header.
    let yielded: Vec<_> = LogReader::new(data)
        .map(|l| l.expect("a byte slice reads"))
        .collect();
    let numbers: BTreeSet<u64> = yielded.iter().map(|l| l.number).collect();
    let accounted: BTreeSet<u64> = lines.union(&bad_comments).copied().collect();
    assert_eq!(
        numbers, accounted,
        "the reader yields exactly the event lines and the bad comments"
    );
    let said_comments: BTreeSet<u64> = yielded
        .iter()
        .filter(|l| l.event.as_ref().is_err_and(|e| e.is_blank_or_comment()))
        .map(|l| l.number)
        .collect();
    assert_eq!(said_comments, bad_comments, "and tells the two apart");
    let yielded: Vec<_> = yielded
        .into_iter()
        .filter(|l| !bad_comments.contains(&l.number))
        .collect();
    let unparsed: BTreeSet<u64> = yielded
        .iter()
        .filter(|l| l.event.is_err())
        .map(|l| l.number)
        .collect();
    let first_is_header =
        matches!(yielded.first(), Some(l) if matches!(l.event, Ok(Event::Header(_))));

    // The events handed straight to worlds of the header's settings: what
    // the plain replay and the checked one must answer. A header is taken
    // only first; the lines no call sees are refused as they come.
    let header = match yielded.first() {
        Some(l) => match &l.event {
            Ok(Event::Header(h)) => Some(h),
            _ => None,
        },
        None => None,
    };
    let options = ReplayOptions {
        keep_going: true,
        keep_lists: true,
        ..ReplayOptions::default()
    };
    let checked_options = ReplayOptions {
        checked_replays: true,
        ..options.clone()
    };
    // The replay's other options, picked by the input's length (which
    // every mutation that adds or drops a byte changes): strict or not,
    // the header's `max_streams` and `chain_limit` overridden or not
    // (`u32::MAX + 1` is the world's `u32::MAX`), three launches, some of
    // the first, given the injected error, and replays checked or not.
    let pick = data.len();
    let first = (pick / 32 % 4) as u64;
    let options_given = ReplayOptions {
        strict: pick % 2 == 1,
        max_streams: [None, Some(1), Some(2), Some(u64::MAX)][pick / 2 % 4],
        chain_limit: [None, Some(1), Some(2), Some(1 << 32)][pick / 8 % 4],
        fail_launches: [first, first + 2, first + 5].into(),
        checked_replays: pick / 128 % 2 == 1,
        ..options.clone()
    };
    let mut direct = Direct::new(header, &options);
    let mut direct_checked = Direct::new(header, &checked_options);
    let mut direct_given = Direct::new(header, &options_given);
    let mut refused: BTreeSet<u64> = bad_comments.clone();
    for (i, l) in yielded.iter().enumerate() {
        match &l.event {
            Ok(Event::Header(_)) if i == 0 => {}
            Ok(Event::Header(_)) | Err(_) => {
                refused.insert(l.number);
            }
            Ok(event) => {
                direct.apply(l.number, event);
                direct_checked.apply(l.number, event);
                direct_given.apply(l.number, event);
            }
        }
    }

    let done = replay(LogReader::new(data), options, |_| {})
        .expect("keep_going never stops on a line, and a slice never fails");
    let failed_captures = done.failed_captures();
    let failed_host_ops = done.failed_host_writes_and_replays();
    let rejected_count = done.rejected();
    let tallied_skips: u64 = done.tallies().values().map(|t| t.skipped).sum();
    let tallied_occurrences: Vec<(u64, u64)> = done
        .tallies()
        .iter()
        .map(|(id, t)| (*id, t.occurrences))
        .collect();
    let untallied = done.untallied();
    let invalid_profiles = done.invalid_profiles();
    let fault_answers = done.fault_answers();
    let device_fault = done.device_fault();
    let read_counts = (done.tainted_read_count(), done.unresolved_read_count());
    let freed_said = freed_lines(&done);
    let (carriers, nothing_left) = done.carriers(usize::MAX);
    assert_eq!(nothing_left, CarriersRest::default());
    let (first, rest) = done.carriers(SUMMARY_FAILURES);
    assert_eq!(
        first[..],
        carriers[..first.len()],
        "the first are the smallest ids"
    );
    let rest_bytes: u128 = carriers[first.len()..].iter().map(|p| p.bytes).sum();
    assert_eq!(
        (rest.failures, rest.bytes),
        ((carriers.len() - first.len()) as u64, rest_bytes),
        "the rest counted"
    );
    let (report, world) = done.finish();
    let world = world.expect("finish always makes a world");
    if let Err(e) = world.check_invariants() {
        panic!("invariant broken after replay: {e}");
    }
    direct.agrees(&report, &world, &refused, "replay");

    // Without `keep_going` the replay stops at the first line the report
    // rejects, in the words the report gives it, and names the world's
    // error where the world refused the line (none where the line is no
    // good event at all).
    let stopped = replay(
        LogReader::new(data),
        ReplayOptions {
            keep_lists: true,
            ..ReplayOptions::default()
        },
        |_| {},
    );
    match (stopped, report.rejected.first()) {
        (Ok(_), None) => {}
        (Err(ReplayError::BadLine { line, error, world }), Some(first)) => {
            assert_eq!((line, &error), (first.line, &first.error), "the stop");
            assert_eq!(world.as_ref(), direct.errors.get(&line), "the stop's error");
        }
        (stopped, first) => panic!(
            "without keep_going: {:?}, where the first rejected line is {first:?}",
            stopped.map(|_| "finished")
        ),
    }

    let rejected: Vec<u64> = report.rejected.iter().map(|r| r.line).collect();
    assert!(
        rejected.windows(2).all(|w| w[0] < w[1]),
        "rejected lines listed once, in order: {rejected:?}"
    );
    let rejected: BTreeSet<u64> = rejected.into_iter().collect();
    assert!(
        rejected.is_subset(&accounted),
        "rejected lines are event lines or bad comments"
    );
    assert!(
        unparsed.is_subset(&rejected) && bad_comments.is_subset(&rejected),
        "every unparsable line and every bad comment is rejected"
    );

    let header_accepted = first_is_header
        && !yielded
            .first()
            .is_some_and(|l| rejected.contains(&l.number));
    assert_eq!(
        report.events,
        lines.len() as u64 - u64::from(header_accepted),
        "events = event lines less an accepted header"
    );
    let v = &report.verdicts;
    assert_eq!(report.launches, v.ran + v.failed + v.skipped + v.dry_run);
    let stats = world.stats();
    assert_eq!(report.launches, stats.launches);
    assert_eq!(report.final_state.claims, stats.claims);

    let listed_captures = report
        .captures
        .iter()
        .filter(|c| matches!(c.result, CaptureResult::Failed(_)))
        .count() as u64;
    assert_eq!(
        failed_captures, listed_captures,
        "the summary's failed captures are the listed ones"
    );
    let listed_host_ops = report
        .launch_results
        .iter()
        .filter(|r| {
            matches!(
                r,
                LaunchResult::HostWriteFailed { .. } | LaunchResult::ReplayFailed { .. }
            )
        })
        .count() as u64;
    assert_eq!(
        failed_host_ops, listed_host_ops,
        "the summary's failed host writes and replays are the listed ones"
    );

    // A tallied failure still alive counts what the world counts: every
    // occurrence (failed launch, host write, replay or reservation) is
    // tallied as it happens.
    for (id, occurrences) in tallied_occurrences {
        if let Some(f) = world.failures().find(|f| f.id.get() == id) {
            assert_eq!(occurrences, f.occurrences, "failure {id}'s occurrences");
        }
    }
    let listed_invalid = report
        .profiles
        .iter()
        .filter(|p| matches!(p.result, ProfileResult::Invalid { .. }))
        .count() as u64;
    assert_eq!(
        invalid_profiles, listed_invalid,
        "the invalid profiles are the listed ones"
    );
    let fault_reads = report
        .reads
        .iter()
        .filter(|r| matches!(r.result, ReadResult::DeviceFault(_)))
        .count() as u64;
    let fault_syncs = report
        .syncs
        .iter()
        .filter(|s| matches!(s.result, SyncResult::DeviceFault(_)))
        .count() as u64;
    assert_eq!(
        (fault_answers.reads, fault_answers.syncs),
        (fault_reads, fault_syncs),
        "the reads and syncs that answered the fault are the listed ones"
    );
    if fault_reads + fault_syncs > 0 {
        assert!(device_fault.is_some(), "a fault answered is a fault named");
    }
    for s in &report.syncs {
        if let SyncResult::DeviceFault(e) = &s.result {
            let (line, first) = device_fault.as_ref().expect("named");
            assert!(
                *line < s.line,
                "the fault comes before the syncs that answer it"
            );
            assert_eq!(e, first, "every sync answers the first fault");
        }
    }

    let answered = |tainted: bool| -> Vec<&ReadEntry> {
        report
            .reads
            .iter()
            .filter(|r| match r.result {
                ReadResult::Tainted(_) => tainted,
                ReadResult::Unresolved => !tainted,
                _ => false,
            })
            .collect()
    };
    let (tainted_reads, unresolved_reads) = (answered(true), answered(false));
    assert_eq!(
        read_counts,
        (tainted_reads.len() as u64, unresolved_reads.len() as u64),
        "the tainted and unresolved reads counted are the listed ones"
    );

    // What each failure taints at the end adds up to the final state.
    let f = &report.final_state;
    assert!(carriers.len() as u64 <= f.live_failures);
    assert_eq!(
        carriers.iter().map(|p| p.bytes).sum::<u128>(),
        f.tainted_bytes,
        "the failures' tainted bytes are the world's"
    );
    let most = carriers.iter().map(|p| p.allocations).max().unwrap_or(0);
    let all: u64 = carriers.iter().map(|p| p.allocations).sum();
    assert!(most <= f.tainted_allocations && f.tainted_allocations <= all);
    assert!(carriers.windows(2).all(|w| w[0].failure < w[1].failure));
    for p in &carriers {
        assert!(p.allocations >= 1 && p.bytes >= u128::from(p.allocations));
        assert_eq!(
            p.memory.len() as u64,
            p.allocations.min(CARRIERS_SHOWN as u64)
        );
        assert!(
            p.memory.windows(2).all(|w| w[0] < w[1]),
            "smallest ids first"
        );
    }

    // Where each unresolved read's memory was freed, by a scan of the log:
    // the newest accepted allocation or free of that id among the last
    // REMEMBERED_LIFETIMES before the read, if it is a free of an
    // allocation made on the slot the read names; kept for the first
    // SUMMARY_READS unresolved reads only.
    let max_streams = match yielded.first() {
        Some(l) if header_accepted => match &l.event {
            Ok(Event::Header(h)) => h.max_streams,
            _ => None,
        },
        _ => None,
    }
    .unwrap_or(taintworld::Config::default().max_streams);
    let slot = |stream: u64| stream % max_streams;
    let accepted = || yielded.iter().filter(|l| !rejected.contains(&l.number));
    // (line, memory, the slot it was made on, whether this is the free)
    let mut made_on = std::collections::HashMap::new();
    let lifetimes: Vec<(u64, u64, u64, bool)> = accepted()
        .filter_map(|l| match l.event {
            Ok(Event::Alloc { stream, memory, .. }) => {
                made_on.insert(memory, slot(stream));
                Some((l.number, memory, slot(stream), false))
            }
            Ok(Event::Free { memory }) => Some((l.number, memory, made_on[&memory], true)),
            _ => None,
        })
        .collect();
    let read_slots: std::collections::HashMap<u64, u64> = accepted()
        .filter_map(|l| match &l.event {
            Ok(Event::Read { binding }) => Some((l.number, slot(binding.stream))),
            _ => None,
        })
        .collect();
    let freed_expected: Vec<(u64, Option<u64>)> = unresolved_reads
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let before = lifetimes.partition_point(|e| e.0 < r.line);
            let remembered = &lifetimes[before.saturating_sub(REMEMBERED_LIFETIMES)..before];
            let newest = remembered.iter().rev().find(|e| e.1 == r.memory);
            let freed = newest.filter(|e| e.3 && e.2 == read_slots[&r.line] && i < SUMMARY_READS);
            (r.line, freed.map(|e| e.0))
        })
        .collect();
    assert_eq!(
        freed_said, freed_expected,
        "an unresolved read names the free of its memory exactly when that is the newest remembered"
    );

    assert_eq!(rejected_count, report.rejected.len() as u64);
    assert_eq!(
        tallied_skips + untallied.skipped,
        report.verdicts.skipped,
        "every skip is tallied once, against its failure or among the untallied"
    );

    // The summary's replay (no lists) counts the same and keeps the first
    // rejected lines only.
    let summary = replay(
        LogReader::new(data),
        ReplayOptions {
            keep_going: true,
            keep_lists: false,
            ..ReplayOptions::default()
        },
        |_| {},
    )
    .expect("keep_going never stops on a line, and a slice never fails");
    assert_eq!(summary.rejected(), rejected_count);
    assert_eq!(summary.failed_captures(), failed_captures);
    assert_eq!(summary.failed_host_writes_and_replays(), failed_host_ops);
    assert_eq!(summary.invalid_profiles(), invalid_profiles);
    assert_eq!(summary.fault_answers(), fault_answers);
    assert_eq!(summary.device_fault(), device_fault);
    assert!(summary.tallies().len() <= SUMMARY_FAILURES);
    // Without lists, past its first tainted reads the summary's replay
    // asks the cheaper question; it still counts and keeps the same reads.
    assert_eq!(
        (
            summary.tainted_read_count(),
            summary.unresolved_read_count()
        ),
        read_counts
    );
    let first = |listed: &[&ReadEntry]| -> Vec<ReadEntry> {
        listed
            .iter()
            .take(SUMMARY_READS)
            .map(|r| (*r).clone())
            .collect()
    };
    assert_eq!(
        summary.tainted_reads().cloned().collect::<Vec<_>>(),
        first(&tainted_reads)
    );
    assert_eq!(
        summary.unresolved_reads().cloned().collect::<Vec<_>>(),
        first(&unresolved_reads)
    );
    let shown = freed_expected.len().min(SUMMARY_READS);
    assert_eq!(freed_lines(&summary), freed_expected[..shown]);
    let (short, _) = summary.finish();
    assert_eq!(short.verdicts, report.verdicts);
    assert_eq!(short.events, report.events);
    let kept = report.rejected.len().min(SUMMARY_REJECTED);
    assert_eq!(short.rejected[..], report.rejected[..kept]);

    // Failures injected into the first launches: each either fails with
    // the injected error or, reading tainted bytes, is skipped — and named
    // among the injections that changed nothing unless the log made it a
    // dry run, which the injection made a launch that is checked.
    let dry_runs: BTreeSet<u64> = report
        .launch_results
        .iter()
        .filter_map(|r| match *r {
            LaunchResult::DryRun { launch, .. } => Some(launch),
            _ => None,
        })
        .collect();
    let injected: BTreeSet<u64> = (0..4).collect();
    let with_injections = replay(
        LogReader::new(data),
        ReplayOptions {
            keep_going: true,
            keep_lists: true,
            fail_launches: injected.clone(),
            ..ReplayOptions::default()
        },
        |_| {},
    )
    .expect("keep_going never stops on a line, and a slice never fails");
    let named: Vec<(u64, u64)> = with_injections
        .skipped_injections()
        .iter()
        .map(|s| (s.launch, s.line))
        .collect();
    let (injected_report, _) = with_injections.finish();
    let skipped: Vec<(u64, u64)> = injected_report
        .launch_results
        .iter()
        .filter_map(|r| match *r {
            LaunchResult::Skipped { launch, line, .. } if injected.contains(&launch) => {
                Some((launch, line))
            }
            _ => None,
        })
        .collect();
    let listed: Vec<(u64, u64)> = skipped
        .iter()
        .copied()
        .filter(|(launch, _)| !dry_runs.contains(launch))
        .collect();
    assert_eq!(
        named, listed,
        "the injections named as changing nothing are the injected launches skipped, \
         dry runs left out"
    );
    let failed = injected_report
        .launch_results
        .iter()
        .filter(|r| matches!(r, LaunchResult::Failed { launch, .. } if injected.contains(launch)))
        .count() as u64;
    assert_eq!(
        failed + skipped.len() as u64,
        injected_report.launches.min(4),
        "every injected launch failed or was skipped"
    );

    // The same bytes with every replay checked (`checked_replays`): a graph
    // then resolves the reads it recorded too, so a line a plain replay
    // takes may be bad input here (a read of a freed id reused smaller),
    // but nothing panics, the world keeps SPEC §10, every replay that
    // skipped is listed (with the launches it skipped) and counted, and
    // the report is JSON.
    let checked = replay(LogReader::new(data), checked_options, |_| {})
        .expect("keep_going never stops on a line, and a slice never fails");
    let skipped_replays = checked.skipped_replays();
    let (checked_report, checked_world) = checked.finish();
    let checked_world = checked_world.expect("finish always makes a world");
    if let Err(e) = checked_world.check_invariants() {
        panic!("invariant broken after a checked replay: {e}");
    }
    direct_checked.agrees(&checked_report, &checked_world, &refused, "checked replay");
    let listed: Vec<&Vec<u64>> = checked_report
        .launch_results
        .iter()
        .filter_map(|r| match r {
            LaunchResult::ReplaySkipped { launches, .. } => Some(launches),
            _ => None,
        })
        .collect();
    assert_eq!(listed.len() as u64, skipped_replays);
    // Each names the captured launches it skipped: one at least.
    assert!(listed.iter().all(|launches| !launches.is_empty()));
    let mut checked_json = Vec::new();
    checked_report
        .write_json(&mut checked_json)
        .expect("writing to a Vec");
    serde_json::from_slice::<serde_json::Value>(&checked_json).expect("the report is JSON");

    // The replay with the other options answers as the world of those
    // settings fed directly does.
    let given = replay(LogReader::new(data), options_given, |_| {})
        .expect("keep_going never stops on a line, and a slice never fails");
    let (given_report, given_world) = given.finish();
    let given_world = given_world.expect("finish always makes a world");
    if let Err(e) = given_world.check_invariants() {
        panic!("invariant broken after a replay with options: {e}");
    }
    direct_given.agrees(&given_report, &given_world, &refused, "replay with options");

    let mut json = Vec::new();
    report.write_json(&mut json).expect("writing to a Vec");
    let value: serde_json::Value = serde_json::from_slice(&json).expect("the report is JSON");
    assert_eq!(value["events"].as_u64(), Some(report.events));
    assert_eq!(
        value["rejected"].as_array().map(Vec::len),
        Some(report.rejected.len())
    );
    assert_eq!(value["launches"].as_u64(), Some(report.launches));
});
