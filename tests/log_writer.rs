//! The launch-log writer: it writes SPEC §7's format with its key order, and
//! the reader reads back exactly the events written.
//!
//! The log writer and reader are the `log` feature's: built without it
//! (`cargo test --no-default-features`) the file holds no tests.

#![cfg(feature = "log")]

use proptest::prelude::*;
use taintworld::Access;
use taintworld::log::{ErrorObject, Event, Header, LogBinding, LogReader, LogWriter, Outcome};

fn written(events: &[Event]) -> String {
    let mut writer = LogWriter::new(Vec::new());
    for event in events {
        writer.write_event(event).unwrap();
    }
    String::from_utf8(writer.into_inner()).unwrap()
}

fn read_back(log: &str) -> Vec<Event> {
    LogReader::new(log.as_bytes())
        .map(|line| line.unwrap().event.unwrap())
        .collect()
}

fn error(kind: &str, message: &str) -> ErrorObject {
    ErrorObject {
        kind: kind.to_owned(),
        message: message.to_owned(),
    }
}

#[test]
fn events_are_written_compactly_with_the_keys_in_section_seven_order() {
    let b = LogBinding {
        stream: 0,
        memory: 7,
        range: Some((0, 4096)),
        access: Access::Read,
    };
    let whole = LogBinding {
        range: None,
        access: Access::ReadWrite,
        ..b
    };
    let mut writer = LogWriter::new(Vec::new());
    writer
        .write_header(&Header {
            max_streams: Some(8),
            chain_limit: Some(1024),
        })
        .unwrap();
    for event in [
        Event::Alloc {
            stream: 0,
            memory: 7,
            size: 4096,
            outcome: None,
        },
        Event::Alloc {
            stream: 0,
            memory: 8,
            size: 1,
            outcome: Some(Outcome::Failed(error("oom", "no"))),
        },
        Event::Free { memory: 7 },
        Event::Launch {
            kernel: "matmul".to_owned(),
            stream: 0,
            bindings: vec![b, whole],
            outcome: Outcome::Ok,
        },
        Event::Launch {
            kernel: "plan".to_owned(),
            stream: 0,
            bindings: vec![],
            outcome: Outcome::DryRun,
        },
        Event::HostWrite {
            binding: b,
            outcome: Outcome::Failed(error("copy", "…")),
        },
        Event::Read { binding: whole },
        Event::CaptureBegin { stream: 0 },
        Event::CaptureEnd {
            stream: 0,
            graph: 1,
        },
        Event::Replay {
            graph: 1,
            stream: Some(0),
            outcome: Outcome::Ok,
        },
        Event::Replay {
            graph: 1,
            stream: None,
            outcome: Outcome::Ok,
        },
        Event::GraphDestroy { graph: 1 },
        Event::ProfileBegin { profile: 1 },
        Event::ProfileEnd { profile: 1 },
        Event::DeviceFault {
            error: error("device", "illegal address"),
        },
        Event::Sync,
    ] {
        writer.write_event(&event).unwrap();
    }
    let text = String::from_utf8(writer.into_inner()).unwrap();
    let expected = r#"{"op":"header","format":"taintworld-log","version":1,"max_streams":8,"chain_limit":1024}
{"op":"alloc","stream":0,"memory":7,"size":4096}
{"op":"alloc","stream":0,"memory":8,"size":1,"outcome":{"failed":{"kind":"oom","message":"no"}}}
{"op":"free","memory":7}
{"op":"launch","kernel":"matmul","stream":0,"bindings":[{"stream":0,"memory":7,"range":[0,4096],"access":"read"},{"stream":0,"memory":7,"access":"read_write"}],"outcome":"ok"}
{"op":"launch","kernel":"plan","stream":0,"bindings":[],"outcome":"dry_run"}
{"op":"host_write","binding":{"stream":0,"memory":7,"range":[0,4096],"access":"read"},"outcome":{"failed":{"kind":"copy","message":"…"}}}
{"op":"read","binding":{"stream":0,"memory":7,"access":"read_write"}}
{"op":"capture_begin","stream":0}
{"op":"capture_end","stream":0,"graph":1}
{"op":"replay","graph":1,"stream":0,"outcome":"ok"}
{"op":"replay","graph":1,"outcome":"ok"}
{"op":"graph_destroy","graph":1}
{"op":"profile_begin","profile":1}
{"op":"profile_end","profile":1}
{"op":"device_fault","error":{"kind":"device","message":"illegal address"}}
{"op":"sync"}
"#;
    assert_eq!(text, expected);
}

#[test]
fn a_header_is_optional_but_only_ever_first() {
    let mut writer = LogWriter::new(Vec::new());
    writer.write_event(&Event::Sync).unwrap();
    let refused = writer.write_header(&Header::default()).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    let refused = writer
        .write_event(&Event::Header(Header::default()))
        .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(writer.into_inner(), b"{\"op\":\"sync\"}\n");
}

#[test]
fn events_the_reader_would_reject_are_refused_and_nothing_is_written() {
    let binding = LogBinding {
        stream: 0,
        memory: 1,
        range: Some((9, 4)),
        access: Access::Read,
    };
    for event in [
        Event::Header(Header {
            max_streams: Some(0),
            chain_limit: None,
        }),
        Event::Header(Header {
            max_streams: None,
            chain_limit: Some(0),
        }),
        Event::Alloc {
            stream: 0,
            memory: 1,
            size: 1,
            outcome: Some(Outcome::DryRun),
        },
        Event::HostWrite {
            binding: LogBinding {
                range: None,
                ..binding
            },
            outcome: Outcome::DryRun,
        },
        Event::Replay {
            graph: 1,
            stream: None,
            outcome: Outcome::DryRun,
        },
        Event::Read { binding },
    ] {
        let mut writer = LogWriter::new(Vec::new());
        let refused = writer.write_event(&event).unwrap_err();
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::InvalidInput,
            "{event:?}"
        );
        assert!(writer.into_inner().is_empty(), "{event:?}");
    }
}

#[test]
fn a_launch_too_wide_for_the_readers_line_limit_is_refused_and_one_at_the_limit_reads_back() {
    use taintworld::log::MAX_LINE_BYTES;
    let launch = |kernel: String| Event::Launch {
        kernel,
        stream: 0,
        bindings: vec![],
        outcome: Outcome::Ok,
    };
    // The line around a kernel name of n bytes is `overhead + n` long.
    let overhead = written(&[launch(String::new())]).len() - 1;
    let at_limit = launch("k".repeat(MAX_LINE_BYTES - overhead));
    let log = written(std::slice::from_ref(&at_limit));
    assert_eq!(log.len(), MAX_LINE_BYTES + 1);
    assert_eq!(read_back(&log), [at_limit]);

    let mut writer = LogWriter::new(Vec::new());
    let over = launch("k".repeat(MAX_LINE_BYTES - overhead + 1));
    let refused = writer.write_event(&over).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert!(refused.to_string().contains("byte limit"), "{refused}");
    assert!(writer.into_inner().is_empty());
}

#[test]
fn strings_with_quotes_controls_and_unicode_round_trip() {
    let nasty = "q\"b\\s/ \n\r\t\u{0}\u{1f}\u{7f} é 核 🚀 \u{2028}\u{feff}";
    let events = vec![
        Event::Launch {
            kernel: nasty.to_owned(),
            stream: 0,
            bindings: vec![],
            outcome: Outcome::Failed(error(nasty, nasty)),
        },
        Event::DeviceFault {
            error: error("", nasty),
        },
    ];
    let log = written(&events);
    assert_eq!(log.lines().count(), 2, "every event stays on one line");
    assert_eq!(read_back(&log), events);
}

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::ReadWrite),
        Just(Access::Dead),
    ]
}

fn binding() -> impl Strategy<Value = LogBinding> {
    (
        any::<u64>(),
        any::<u64>(),
        proptest::option::of((any::<u64>(), any::<u64>())),
        access(),
    )
        .prop_map(|(stream, memory, range, access)| LogBinding {
            stream,
            memory,
            range: range.map(|(a, b)| (a.min(b), a.max(b))),
            access,
        })
}

fn error_object() -> impl Strategy<Value = ErrorObject> {
    (any::<String>(), any::<String>()).prop_map(|(kind, message)| ErrorObject { kind, message })
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        Just(Outcome::Ok),
        Just(Outcome::DryRun),
        error_object().prop_map(Outcome::Failed),
    ]
}

fn settled() -> impl Strategy<Value = Outcome> {
    prop_oneof![Just(Outcome::Ok), error_object().prop_map(Outcome::Failed)]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            proptest::option::of(settled())
        )
            .prop_map(|(stream, memory, size, outcome)| Event::Alloc {
                stream,
                memory,
                size,
                outcome
            }),
        any::<u64>().prop_map(|memory| Event::Free { memory }),
        (
            any::<String>(),
            any::<u64>(),
            proptest::collection::vec(binding(), 0..6),
            outcome()
        )
            .prop_map(|(kernel, stream, bindings, outcome)| Event::Launch {
                kernel,
                stream,
                bindings,
                outcome
            }),
        (binding(), settled()).prop_map(|(binding, outcome)| Event::HostWrite { binding, outcome }),
        binding().prop_map(|binding| Event::Read { binding }),
        any::<u64>().prop_map(|stream| Event::CaptureBegin { stream }),
        (any::<u64>(), any::<u64>())
            .prop_map(|(stream, graph)| Event::CaptureEnd { stream, graph }),
        (any::<u64>(), proptest::option::of(any::<u64>()), settled()).prop_map(
            |(graph, stream, outcome)| Event::Replay {
                graph,
                stream,
                outcome
            }
        ),
        any::<u64>().prop_map(|graph| Event::GraphDestroy { graph }),
        any::<u64>().prop_map(|profile| Event::ProfileBegin { profile }),
        any::<u64>().prop_map(|profile| Event::ProfileEnd { profile }),
        error_object().prop_map(|error| Event::DeviceFault { error }),
        Just(Event::Sync),
    ]
}

fn header() -> impl Strategy<Value = Option<Header>> {
    proptest::option::of(
        (
            proptest::option::of(1..=u64::MAX),
            proptest::option::of(1..=u64::MAX),
        )
            .prop_map(|(max_streams, chain_limit)| Header {
                max_streams,
                chain_limit,
            }),
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Failing cases beside this file, where proptest's default would
        // put them too after saying on every run that it found no lib.rs.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::with_cases(512)
    })]

    #[test]
    fn whatever_is_written_reads_back_as_the_same_events(
        header in header(),
        events in proptest::collection::vec(event(), 0..20),
    ) {
        let mut writer = LogWriter::new(Vec::new());
        let mut expected = Vec::new();
        if let Some(header) = header {
            writer.write_header(&header).unwrap();
            expected.push(Event::Header(header));
        }
        for event in &events {
            writer.write_event(event).unwrap();
        }
        expected.extend(events);
        let log = String::from_utf8(writer.into_inner()).unwrap();
        prop_assert_eq!(read_back(&log), expected);
    }

    /// Launches of any shape — bindings by id and by key (live and freed),
    /// on regular and special streams, whole and ranged (some backwards),
    /// every access and outcome, any kernel name — are written by
    /// `write_launch` byte for byte as `write_event` writes their events,
    /// or refused by both with the same kind.
    #[test]
    fn write_launch_agrees_with_write_event_on_any_launch(
        (world, launches) in {
            let mut world = taintworld::World::default();
            let mut keys = Vec::new();
            for memory in 0..8u64 {
                keys.push(world.alloc(memory % 4, memory, 64).unwrap());
            }
            for &key in &keys[6..] {
                world.free(key).unwrap();
            }
            let launch = (
                any::<String>(),
                prop_oneof![4 => any::<u64>().prop_map(taintworld::StreamRef::Id),
                            1 => any::<u16>().prop_map(taintworld::StreamRef::Special)],
                proptest::collection::vec(world_binding(keys), 0..6),
                world_outcome(),
            );
            (Just(world), proptest::collection::vec(launch, 1..8))
        },
    ) {
        for (kernel, stream, bindings, (kind, message, outcome)) in &launches {
            let launch = taintworld::Launch {
                kernel,
                stream: *stream,
                bindings: &bindings[..],
                outcome: match outcome {
                    0 => taintworld::Outcome::Ok,
                    1 => taintworld::Outcome::DryRun,
                    _ => taintworld::Outcome::Failed { kind, message },
                },
            };
            let (direct, via_event) = both_ways(&launch, &world);
            prop_assert_eq!(direct, via_event);
        }
    }
}

/// An output that keeps its bytes in a buffer of its own until flushed, as
/// a file's buffer does.
#[derive(Default)]
struct Buffered {
    pending: Vec<u8>,
    flushed: Vec<u8>,
}

impl std::io::Write for Buffered {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.flushed.append(&mut self.pending);
        Ok(())
    }
}

#[test]
fn flushing_the_writer_flushes_every_event_written_so_far_to_its_output() {
    let mut writer = LogWriter::new(Buffered::default());
    writer.write_event(&Event::Sync).unwrap();
    writer.write_event(&Event::Sync).unwrap();
    writer.flush().unwrap();
    let out = writer.into_inner();
    assert_eq!(
        (String::from_utf8(out.flushed).unwrap(), out.pending.len()),
        ("{\"op\":\"sync\"}\n{\"op\":\"sync\"}\n".to_string(), 0)
    );
}

/// An output that takes `left` more bytes and then fails one write, as a
/// full disk or a dropped connection does part-way through a line.
struct Tearing {
    written: Vec<u8>,
    left: Option<usize>,
}

impl std::io::Write for Tearing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self.left {
            Some(0) => {
                self.left = None;
                Err(std::io::Error::other("the disk is full"))
            }
            Some(left) => {
                let n = left.min(bytes.len());
                self.written.extend_from_slice(&bytes[..n]);
                self.left = Some(left - n);
                Ok(n)
            }
            None => {
                self.written.extend_from_slice(bytes);
                Ok(bytes.len())
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A line torn by a failing output stays one bad line of its own: the
/// event written after it starts a line, reads back whole, and is not
/// glued to the torn part. A write that failed before its first byte
/// leaves a blank line, which the reader passes over.
#[test]
fn a_line_torn_by_a_failing_output_is_one_bad_line_and_the_next_event_reads_whole() {
    for (left, lines) in [(10, 3), (0, 2)] {
        let free = Event::Free { memory: 7 };
        // The first line, `{"op":"sync"}` and its newline, is 14 bytes.
        let mut writer = LogWriter::new(Tearing {
            written: Vec::new(),
            left: Some(14 + left),
        });
        writer.write_event(&Event::Sync).unwrap();
        assert!(writer.write_event(&free).is_err(), "the output failed");
        writer.write_event(&Event::Sync).unwrap();
        let log = String::from_utf8(writer.into_inner().written).unwrap();
        let read: Vec<_> = LogReader::new(log.as_bytes())
            .map(|line| line.unwrap())
            .collect();
        assert_eq!(read.len(), lines, "{log:?}");
        assert_eq!(read[0].event.as_ref().unwrap(), &Event::Sync);
        assert_eq!(read.last().unwrap().event.as_ref().unwrap(), &Event::Sync);
        if left > 0 {
            assert!(read[1].event.is_err(), "the torn part: {log:?}");
            assert_eq!(&log[14..24], r#"{"op":"fre"#);
        }
    }
}

/// Through a gzip encoder, a flush makes the lines written so far
/// readable, but only finishing the encoder ends the stream: a recording
/// cut off after a flush reads back to its last flush and then fails, as
/// `LogWriter::flush` says; finished, it reads back whole.
#[test]
fn a_gzip_log_flushed_but_never_finished_reads_to_its_last_flush_then_fails() {
    use flate2::{Compression, write::GzEncoder};
    let events = [Event::Sync, Event::Free { memory: 3 }, Event::Sync];
    let mut writer = LogWriter::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for event in &events {
        writer.write_event(event).unwrap();
    }
    writer.flush().unwrap();
    let cut = writer.into_inner().get_ref().clone();
    let read: Vec<_> = gunzip(&cut).collect();
    let (good, bad) = read.split_at(events.len());
    let good: Vec<_> = good
        .iter()
        .map(|l| l.as_ref().unwrap().event.clone().unwrap())
        .collect();
    assert_eq!(good, events);
    assert!(
        matches!(bad, [Err(_)]),
        "then the cut stream's error: {bad:?}"
    );

    let mut writer = LogWriter::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for event in &events {
        writer.write_event(event).unwrap();
    }
    let finished = writer.into_inner().finish().unwrap();
    let whole: Vec<_> = gunzip(&finished)
        .map(|line| line.unwrap().event.unwrap())
        .collect();
    assert_eq!(whole, events);
}

/// The lines of a gzip log, read back from a `.gz` file as the command
/// reads one.
fn gunzip(log: &[u8]) -> impl Iterator<Item = std::io::Result<taintworld::log::Line>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recorded.jsonl.gz");
    std::fs::write(&path, log).unwrap();
    let lines: Vec<_> = LogReader::open(&path).unwrap().collect();
    lines.into_iter()
}

/// A scheduler that records what it hands its own world — bindings by key
/// and by id, a failure, a skip — writes a log that `replay` takes to the
/// same verdicts and the same claims.
#[test]
fn a_scheduler_records_its_own_launches_and_the_log_replays_to_the_same_world() {
    use taintworld::{Binding, Launch, Verdict, World};

    let mut world = World::default();
    let mut events = Vec::new();
    let alloc = |world: &mut World, events: &mut Vec<Event>, memory| {
        events.push(Event::Alloc {
            stream: 0,
            memory,
            size: 64,
            outcome: None,
        });
        world.alloc(0, memory, 64).unwrap()
    };
    let input = alloc(&mut world, &mut events, 1);
    alloc(&mut world, &mut events, 2);
    alloc(&mut world, &mut events, 3);
    let steps = [
        (
            "fill",
            vec![Binding::whole(0, input, Access::Write)],
            taintworld::Outcome::Failed {
                kind: "compile",
                message: "bad PTX",
            },
        ),
        (
            "gelu",
            vec![
                Binding::whole(0, input, Access::Read),
                Binding::range(0, 2, 0, 32, Access::Write),
            ],
            taintworld::Outcome::Ok,
        ),
        (
            "copy",
            vec![Binding::whole(0, 3, Access::Write)],
            taintworld::Outcome::DryRun,
        ),
    ];
    let mut verdicts = Vec::new();
    for (kernel, bindings, outcome) in &steps {
        let launch = Launch {
            kernel,
            stream: 0.into(),
            bindings: &bindings[..],
            outcome: *outcome,
        };
        verdicts.push(world.launch(&launch).unwrap().verdict);
        events.push(Event::Launch {
            kernel: (*kernel).to_owned(),
            stream: 0,
            bindings: bindings
                .iter()
                .map(|b| LogBinding::of(b, &world).expect("a regular stream, a live key"))
                .collect(),
            outcome: Outcome::from(*outcome),
        });
    }
    assert!(matches!(
        verdicts[..],
        [
            Verdict::Failed(_),
            Verdict::Skipped { needed: 1, .. },
            Verdict::DryRun
        ]
    ));

    let log = written(&events);
    let mut replay = taintworld::log::Replay::new(Default::default()).expect("good options");
    for line in LogReader::new(log.as_bytes()) {
        replay.apply(line.unwrap()).unwrap();
    }
    let (report, replayed) = replay.finish();
    let replayed = replayed.expect("a world");
    assert_eq!(
        (
            report.verdicts.failed,
            report.verdicts.skipped,
            report.verdicts.dry_run
        ),
        (1, 1, 1)
    );
    for memory in 1..=3 {
        let claims = |w: &World| {
            w.claims(memory)
                .map(|c| c.map(|c| (c.start, c.end, c.failure)).collect::<Vec<_>>())
        };
        assert_eq!(claims(&replayed), claims(&world), "memory {memory}");
    }
    assert_eq!(
        replayed.claims(2).unwrap().count(),
        1,
        "gelu's skip tainted its output"
    );
    // What a log cannot name.
    let special = Binding::whole(taintworld::StreamRef::Special(0), 1, Access::Read);
    assert_eq!(LogBinding::of(&special, &world), None);
    world.free(input).unwrap();
    assert_eq!(
        LogBinding::of(&Binding::whole(0, input, Access::Read), &world),
        None
    );
}

/// The event a scheduler would build for `launch` to record it with
/// `write_event`: what `write_launch` must write byte for byte. `None` for
/// a launch on a special stream, which no event names.
fn launch_event(launch: &taintworld::Launch<'_>, world: &taintworld::World) -> Option<Event> {
    let taintworld::StreamRef::Id(stream) = launch.stream else {
        return None;
    };
    Some(Event::Launch {
        kernel: launch.kernel.to_owned(),
        stream,
        bindings: launch
            .bindings
            .iter()
            .filter_map(|b| LogBinding::of(b, world))
            .collect(),
        outcome: Outcome::from(launch.outcome),
    })
}

/// `write_launch`'s bytes and `write_event`'s for the launch's event, each
/// on a writer of its own (`Err` with the refusal's kind where one
/// refused; a refusal writes nothing).
fn both_ways(
    launch: &taintworld::Launch<'_>,
    world: &taintworld::World,
) -> (
    Result<Vec<u8>, std::io::ErrorKind>,
    Result<Vec<u8>, std::io::ErrorKind>,
) {
    let bytes = |written: std::io::Result<()>, out: Vec<u8>| match written {
        Ok(()) => Ok(out),
        Err(refused) => {
            assert!(out.is_empty(), "a refusal wrote {out:?}");
            Err(refused.kind())
        }
    };
    let event = launch_event(launch, world);
    let mut direct = LogWriter::new(Vec::new());
    let result = direct.write_launch(launch, world);
    if let (Ok(left_out), Some(Event::Launch { bindings, .. })) = (&result, &event) {
        assert_eq!(
            *left_out,
            launch.bindings.len() - bindings.len(),
            "write_launch counts the bindings its line leaves out"
        );
    }
    let direct = bytes(result.map(drop), direct.into_inner());
    let mut via_event = LogWriter::new(Vec::new());
    let result = match &event {
        Some(event) => via_event.write_event(event),
        None => Err(std::io::ErrorKind::InvalidInput.into()),
    };
    (direct, bytes(result, via_event.into_inner()))
}

/// Every shape of launch a scheduler records, with the line SPEC §7 spells
/// for it: `write_launch` writes that line, the same bytes as `write_event`
/// writes for the launch's event.
#[test]
fn write_launch_writes_the_line_write_event_writes_for_the_launchs_event() {
    use taintworld::{Binding, Launch, StreamRef, World};

    let mut world = World::default();
    let key = world.alloc(0, 7, 4096).unwrap();
    let on_three = world.alloc(3, 8, 64).unwrap();
    let freed = world.alloc(0, 9, 64).unwrap();
    world.free(freed).unwrap();
    let failed = taintworld::Outcome::Failed {
        kind: "launch",
        message: "too many resources requested for launch",
    };
    let nasty = "q\"b\\s/ \n\r\t\u{0}\u{1f}\u{7f} é 核 🚀 \u{2028}";
    let cases: Vec<(&str, Vec<Binding>, StreamRef, taintworld::Outcome<'_>, &str)> = vec![
        (
            "matmul",
            vec![],
            0.into(),
            taintworld::Outcome::Ok,
            r#"{"op":"launch","kernel":"matmul","stream":0,"bindings":[],"outcome":"ok"}"#,
        ),
        (
            "whole_by_key",
            vec![Binding::whole(0, key, Access::Read)],
            0.into(),
            taintworld::Outcome::Ok,
            r#"{"op":"launch","kernel":"whole_by_key","stream":0,"bindings":[{"stream":0,"memory":7,"access":"read"}],"outcome":"ok"}"#,
        ),
        (
            "every_access",
            vec![
                Binding::range(0, key, 0, 4096, Access::Read),
                Binding::range(0, 7, 16, 32, Access::Write),
                Binding::whole(3, on_three, Access::ReadWrite),
                Binding::range(3, 8, 5, 5, Access::Dead),
            ],
            u64::MAX.into(),
            taintworld::Outcome::Ok,
            concat!(
                r#"{"op":"launch","kernel":"every_access","stream":18446744073709551615,"bindings":["#,
                r#"{"stream":0,"memory":7,"range":[0,4096],"access":"read"},"#,
                r#"{"stream":0,"memory":7,"range":[16,32],"access":"write"},"#,
                r#"{"stream":3,"memory":8,"access":"read_write"},"#,
                r#"{"stream":3,"memory":8,"range":[5,5],"access":"dead"}"#,
                r#"],"outcome":"ok"}"#
            ),
        ),
        (
            // What a log cannot name is left out, as `LogBinding::of` says:
            // a special stream's binding and a freed key; a memory id is
            // kept whether or not it is live, as the world takes it.
            "unnamed",
            vec![
                Binding::whole(StreamRef::Special(0), key, Access::Read),
                Binding::whole(0, freed, Access::Read),
                Binding::whole(0, 404, Access::Write),
                Binding::whole(StreamRef::Special(1), 7, Access::Write),
            ],
            2.into(),
            taintworld::Outcome::Ok,
            r#"{"op":"launch","kernel":"unnamed","stream":2,"bindings":[{"stream":0,"memory":404,"access":"write"}],"outcome":"ok"}"#,
        ),
        (
            "fill",
            vec![Binding::whole(0, key, Access::Write)],
            0.into(),
            failed,
            r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":7,"access":"write"}],"outcome":{"failed":{"kind":"launch","message":"too many resources requested for launch"}}}"#,
        ),
        (
            "plan",
            vec![Binding::range(0, key, 0, 8, Access::ReadWrite)],
            1.into(),
            taintworld::Outcome::DryRun,
            r#"{"op":"launch","kernel":"plan","stream":1,"bindings":[{"stream":0,"memory":7,"range":[0,8],"access":"read_write"}],"outcome":"dry_run"}"#,
        ),
        (
            nasty,
            vec![],
            0.into(),
            taintworld::Outcome::Failed {
                kind: nasty,
                message: "",
            },
            concat!(
                r#"{"op":"launch","kernel":"q\"b\\s/ \n\r\t\u0000\u001f"#,
                "\u{7f} é 核 🚀 \u{2028}",
                r#"","stream":0,"bindings":[],"outcome":{"failed":{"kind":"q\"b\\s/ \n\r\t\u0000\u001f"#,
                "\u{7f} é 核 🚀 \u{2028}",
                r#"","message":""}}}"#
            ),
        ),
    ];
    // And one writer, every case in turn, reads back as the launches' events.
    let mut writer = LogWriter::new(Vec::new());
    let mut expected = Vec::new();
    for (kernel, bindings, stream, outcome, line) in &cases {
        let launch = Launch {
            kernel,
            stream: *stream,
            bindings: &bindings[..],
            outcome: *outcome,
        };
        let (direct, via_event) = both_ways(&launch, &world);
        let direct = String::from_utf8(direct.expect("written")).unwrap();
        assert_eq!(direct, format!("{line}\n"), "{kernel:?}");
        assert_eq!(Ok(direct.into_bytes()), via_event, "{kernel:?}");
        let left_out = writer.write_launch(&launch, &world).unwrap();
        let unnamed = if *kernel == "unnamed" { 3 } else { 0 };
        assert_eq!(left_out, unnamed, "{kernel:?}: bindings left out");
        expected.extend(launch_event(&launch, &world));
    }
    let log = String::from_utf8(writer.into_inner()).unwrap();
    assert_eq!(read_back(&log), expected);
}

/// `write_launch` refuses what `write_event` refuses for the launch's
/// event, with the same kind and nothing written, and the writer goes on
/// afterwards; a launch on a special stream, which no event names, it
/// refuses the same way.
#[test]
fn write_launch_refuses_what_write_event_refuses_and_writes_nothing() {
    use taintworld::log::MAX_LINE_BYTES;
    use taintworld::{Binding, Launch, StreamRef, World};

    let mut world = World::default();
    let key = world.alloc(0, 7, 4096).unwrap();
    let backwards = [
        Binding::whole(0, key, Access::Read),
        Binding::range(0, key, 9, 4, Access::Write),
    ];
    let backwards_by_id = [Binding::range(0, 7, 1, 0, Access::Read)];
    let whole = [Binding::whole(0, key, Access::Read)];
    // A launch whose line is one byte over the reader's limit.
    let empty_line = r#"{"op":"launch","kernel":"","stream":0,"bindings":[],"outcome":"ok"}"#;
    let long_kernel = "k".repeat(MAX_LINE_BYTES - empty_line.len() + 1);
    let binding_line = r#",{"stream":0,"memory":7,"access":"read"}"#;
    let wide = vec![whole[0]; MAX_LINE_BYTES / binding_line.len() + 1];
    let launch = |kernel, stream, bindings| Launch {
        kernel,
        stream,
        bindings,
        outcome: taintworld::Outcome::Ok,
    };
    let refused = [
        launch("backwards", 0.into(), &backwards[..]),
        launch("backwards", 0.into(), &backwards_by_id[..]),
        Launch {
            outcome: taintworld::Outcome::Failed {
                kind: "compile",
                message: "bad PTX",
            },
            ..launch("backwards", 0.into(), &backwards[..])
        },
        launch(&long_kernel, 0.into(), &[]),
        launch("wide", 0.into(), &wide[..]),
        launch("special", StreamRef::Special(0), &whole[..]),
    ];
    for launch in &refused {
        let name = &launch.kernel[..launch.kernel.len().min(16)];
        let (direct, via_event) = both_ways(launch, &world);
        assert_eq!(direct, Err(std::io::ErrorKind::InvalidInput), "{name}");
        assert_eq!(direct, via_event, "{name}");
    }
    // One byte shorter, the long kernel's line is at the limit and written.
    let at_limit = launch(&long_kernel[1..], 0.into(), &[]);
    let (direct, via_event) = both_ways(&at_limit, &world);
    assert_eq!(direct.as_ref().map(Vec::len), Ok(MAX_LINE_BYTES + 1));
    assert_eq!(direct, via_event);

    // A refusal leaves the writer as it was: the next launch is written whole.
    let mut writer = LogWriter::new(Vec::new());
    for launch in &refused {
        assert!(writer.write_launch(launch, &world).is_err());
    }
    let good = launch("gelu", 0.into(), &whole[..]);
    writer.write_launch(&good, &world).unwrap();
    let log = String::from_utf8(writer.into_inner()).unwrap();
    assert_eq!(read_back(&log), [launch_event(&good, &world).unwrap()]);
}

fn world_binding(keys: Vec<taintworld::AllocKey>) -> impl Strategy<Value = taintworld::Binding> {
    use taintworld::{Binding, MemoryRef, StreamRef};
    let stream = prop_oneof![
        4 => (0..6u64).prop_map(StreamRef::Id),
        1 => any::<u64>().prop_map(StreamRef::Id),
        1 => any::<u16>().prop_map(StreamRef::Special),
    ];
    let memory = prop_oneof![
        (0..8u64).prop_map(MemoryRef::Id),
        any::<u64>().prop_map(MemoryRef::Id),
        proptest::sample::select(keys).prop_map(MemoryRef::Key),
    ];
    // Ranges in either order: where one ends before it starts, both refuse.
    let range = proptest::option::of(prop_oneof![
        (0..64u64, 0..64u64),
        (any::<u64>(), any::<u64>()),
    ]);
    (stream, memory, range, access()).prop_map(|(stream, memory, range, access)| Binding {
        stream,
        memory,
        range,
        access,
    })
}

fn world_outcome() -> impl Strategy<Value = (String, String, u8)> {
    (any::<String>(), any::<String>(), 0..3u8)
}

/// The writer's refusals name what they refuse: a backwards range by its
/// range and memory id, in the words of the world's own `RangeReversed`,
/// whether it comes as an event or as a world's launch; a launch on a
/// special stream by that stream.
#[test]
fn a_refused_range_or_special_stream_is_named_in_the_writers_error() {
    use taintworld::{Binding, Launch, StreamRef, World};

    let read = Event::Read {
        binding: LogBinding {
            stream: 0,
            memory: 7,
            range: Some((9, 4)),
            access: Access::Read,
        },
    };
    let refused = LogWriter::new(Vec::new()).write_event(&read).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "range [9, 4) of memory 7 ends before it starts"
    );

    let mut world = World::default();
    let key = world.alloc(0, 7, 4096).unwrap();
    let launch = |stream, bindings| Launch {
        kernel: "k",
        stream,
        bindings,
        outcome: taintworld::Outcome::Ok,
    };
    let backwards = [Binding::range(0, key, 1, 0, Access::Write)];
    let refused = LogWriter::new(Vec::new())
        .write_launch(&launch(0.into(), &backwards[..]), &world)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "range [1, 0) of memory 7 ends before it starts"
    );
    let whole = [Binding::whole(0, key, Access::Read)];
    let refused = LogWriter::new(Vec::new())
        .write_launch(&launch(StreamRef::Special(1), &whole[..]), &world)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "a launch on special stream 1 cannot be recorded: a log names regular streams only"
    );
}

/// What a log cannot name, `write_launch` leaves out and counts, and the
/// log then replays otherwise than the world ran, as its docs say: a
/// freed key's binding, unresolved in the world, is missing from the
/// replay's count of unresolved bindings; a read on a special stream of
/// tainted memory, which skipped the launch in the world, is not in the
/// log, and the replayed launch runs.
#[test]
fn a_launch_recorded_without_what_a_log_cannot_name_counts_it_and_replays_otherwise() {
    use taintworld::{Binding, Config, Launch, MemoryRef, StreamRef, Verdict, World};

    let mut world = World::new(Config {
        num_special: 1,
        ..Config::default()
    })
    .unwrap();
    let mut log = LogWriter::new(Vec::new());
    let special = StreamRef::Special(0);
    // Memory 1 lives on the special stream: its making and its failed
    // fill are the world's alone, as a log names regular streams only.
    world.alloc(special, 1, 64).unwrap();
    let fill = [Binding::whole(special, 1, Access::Write)];
    let fill = Launch {
        kernel: "fill",
        stream: special,
        bindings: &fill[..],
        outcome: taintworld::Outcome::Failed {
            kind: "launch",
            message: "too many resources requested for launch",
        },
    };
    world.launch(&fill).unwrap();
    assert!(log.write_launch(&fill, &world).is_err(), "a special stream");
    for memory in [2, 3] {
        world.alloc(0, memory, 64).unwrap();
        let alloc = Event::Alloc {
            stream: 0,
            memory,
            size: 64,
            outcome: None,
        };
        log.write_event(&alloc).unwrap();
    }
    let freed = world.allocations().key_of(3).expect("live");
    world.free(3).unwrap();
    log.write_event(&Event::Free { memory: 3 }).unwrap();

    let bindings = [
        Binding::whole(special, 1, Access::Read),
        Binding {
            memory: MemoryRef::Key(freed),
            ..Binding::whole(0, 0, Access::Read)
        },
        Binding::whole(0, 2, Access::Write),
    ];
    let gelu = Launch {
        kernel: "gelu",
        stream: 0.into(),
        bindings: &bindings[..],
        outcome: taintworld::Outcome::Ok,
    };
    let verdict = world.launch(&gelu).unwrap().verdict;
    assert!(matches!(verdict, Verdict::Skipped { needed: 1, .. }));
    assert_eq!(world.stats().unresolved_bindings, 1);
    assert_eq!(log.write_launch(&gelu, &world).unwrap(), 2);

    let log = log.into_inner();
    let (report, replayed) =
        taintworld::log::replay(LogReader::new(&log[..]), Default::default(), |_| {})
            .expect("a log write_launch wrote replays")
            .finish();
    assert_eq!((report.verdicts.ran, report.verdicts.skipped), (1, 0));
    assert_eq!(report.unresolved_bindings, 0);
    assert_eq!(replayed.expect("a world").claims(2).unwrap().count(), 0);
    assert_eq!(world.claims(2).unwrap().count(), 1, "the skip tainted it");
}
