//! (a) The launch-log reader on arbitrary bytes: every line that is not
//! blank or a comment, and every one that is but is bad input, is yielded
//! without a panic or a hang, line numbers only grow and never pass the
//! number of physical lines, and every event the reader accepts is written
//! back by `LogWriter` and read back as the same event. Each accepted
//! launch is also written by `LogWriter::write_launch`, from the launch a
//! scheduler would hand its world (bindings by memory id, and again by the
//! key of a live allocation, with a binding on a special stream and one by
//! a freed key among them, which a log cannot name and which are left
//! out): its line must be `write_event`'s, byte for byte. And the accepted
//! events, written one after another by one writer, make a log whose bytes
//! are their lines written alone, in order, and which reads back as the
//! same events, none rejected.
//! (b) The parser's fast path, which takes lines that begin
//! `{"op":"launch",`, changes no answer: each such line reads as the same
//! event, or as bad input, when a space after its `{` sends it to the full
//! parser.
//! (c) A `.gz` log, opened as a file as `taintworld replay` opens one: the
//! input's first byte cuts the rest into plain text, gzipped as two
//! members, and bytes written after them. The file reads as the plain
//! text reads; bytes after the members that cannot begin one end it with
//! the error that names them, after every line the text holds whole
//! (bytes that begin with gzip's magic may be a member; a lone first byte
//! of it is left to the decoder's words). The input itself, opened as a
//! `.gz`, reads without a panic.

#![no_main]

use std::io::Write;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use taintworld::log::{Event, Line, LogReader, LogWriter};
use taintworld::{Access, Binding, Launch, MemoryRef, StreamRef, World};

fuzz_target!(|data: &[u8]| {
    plain(data);
    gzipped(data);
});

/// (a) and (b).
fn plain(data: &[u8]) {
    let physical = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let mut last = 0u64;
    let mut first = true;
    let mut accepted = Vec::new();
    let mut alone = Vec::new();
    for line in LogReader::new(data) {
        // A `&[u8]` never fails to read.
        let line = line.expect("reading a byte slice cannot fail");
        assert!(line.number > last, "line numbers must grow");
        assert!(
            line.number <= physical,
            "line {} of {physical}",
            line.number
        );
        last = line.number;
        if let Ok(event) = &line.event {
            let written = round_trip(event, first);
            if let Event::Launch { .. } = event {
                recorded(event, &written);
            }
            alone.extend_from_slice(&written);
            accepted.push(event.clone());
        }
        // A bad blank or comment line leaves the header its place.
        if !line.event.as_ref().is_err_and(|e| e.is_blank_or_comment()) {
            first = false;
        }
    }
    whole_log(&accepted, &alone);
    for text in data.split(|&b| b == b'\n') {
        if let Some(rest) = text.strip_prefix(br#"{"op":"launch","#) {
            let spaced = [&br#"{ "op":"launch","#[..], rest].concat();
            assert_eq!(
                read_one(text),
                read_one(&spaced),
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
    }
}

/// What a `.gz` log ends with when bytes that cannot begin a member
/// follow its last one.
const AFTER_THE_LAST_MEMBER: &str = "bytes after the last gzip member are not a gzip member";

/// (c).
fn gzipped(data: &[u8]) {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let (text, after) = rest.split_at(usize::from(cut).min(rest.len()));
    let mut bytes = Vec::new();
    let (one, two) = text.split_at(text.len() / 2);
    for part in [one, two] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(part).expect("writing to a vector");
        bytes.extend(gz.finish().expect("writing to a vector"));
    }
    bytes.extend_from_slice(after);
    let path = scratch();
    std::fs::write(&path, &bytes).expect("writing the scratch file");
    let read = items(&path);
    let expected: Vec<Line> = LogReader::new(text)
        .map(|line| line.expect("reading a byte slice cannot fail"))
        .collect();
    // The lines that end with a newline; the text's last line, if it has
    // none, ends where the bytes after the members begin, and an error
    // there takes its place.
    let newlines = text.iter().filter(|&&b| b == b'\n').count() as u64;
    let whole = expected.iter().filter(|l| l.number <= newlines).count();
    for (i, line) in expected.iter().take(whole).enumerate() {
        match read.get(i) {
            Some(Ok(got)) => assert_eq!(got, line, "line {i}"),
            other => panic!("line {i}: {other:?}, not {line:?}"),
        }
    }
    if after.is_empty() {
        let got: Vec<&Line> = read.iter().map(|r| r.as_ref().expect("no error")).collect();
        assert_eq!(got, expected.iter().collect::<Vec<_>>());
    } else if !after.starts_with(&GZIP_MAGIC) && after != &GZIP_MAGIC[..1] {
        // (Both bytes of the magic may begin a member, read on or broken;
        // a lone first byte is left to the decoder's own words.)
        assert_eq!(read.len(), whole + 1, "{read:?}");
        let error = read[whole].as_ref().expect_err("bytes after the members");
        assert!(
            error.to_string().ends_with(AFTER_THE_LAST_MEMBER),
            "{error}"
        );
    }
    // The input itself, read as a `.gz`: no panic, whatever it holds.
    std::fs::write(&path, data).expect("writing the scratch file");
    items(&path);
    let _ = std::fs::remove_file(&path);
}

/// The first two bytes of every gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Every item of the log at `path`, opened as `taintworld replay` opens it.
fn items(path: &PathBuf) -> Vec<std::io::Result<Line>> {
    LogReader::open(path)
        .expect("the scratch file opens")
        .collect()
}

/// This process's scratch file, named `.gz` so that it is read as one.
fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("taintworld-fuzz-{}.jsonl.gz", std::process::id()))
}

/// The event of a lone line, or `None` for bad input (its message left
/// out: a JSON error's column moves with the space).
fn read_one(text: &[u8]) -> Option<Event> {
    LogReader::new(text).next()?.ok()?.event.ok()
}

/// The accepted events written one after another by one writer: the bytes
/// of their lines written alone (`alone`), in order — the writer carries
/// nothing from one line into the next — and a log that reads back as
/// the same events, numbered from 1, none rejected.
fn whole_log(accepted: &[Event], alone: &[u8]) {
    let mut writer = LogWriter::new(Vec::new());
    for event in accepted {
        writer
            .write_event(event)
            .expect("an accepted event is writable in its place");
    }
    let bytes = writer.into_inner();
    assert_eq!(
        bytes,
        alone,
        "one writer's log is not its lines written alone: {:?}",
        String::from_utf8_lossy(&bytes)
    );
    let back: Vec<Line> = LogReader::new(&bytes[..])
        .map(|line| line.expect("no I/O error"))
        .collect();
    assert_eq!(back.len(), accepted.len(), "one line an event");
    for (i, (line, event)) in back.iter().zip(accepted).enumerate() {
        assert_eq!(line.number, i as u64 + 1);
        assert_eq!(line.event.as_ref(), Ok(event), "line {}", line.number);
    }
}

/// The launch a scheduler would hand its world for the accepted launch
/// `event`, recorded with `write_launch`: its line must be `line`, what
/// `write_event` wrote for the event. Recorded twice: with its bindings by
/// memory id against an empty world, and by the key of an allocation of
/// that id made in a world on the binding's stream; the second time with
/// a binding on a special stream and one by the key of a freed allocation
/// put first, which a log cannot name and `write_launch` leaves out, and
/// counts as left out.
fn recorded(event: &Event, line: &[u8]) {
    let Event::Launch {
        kernel,
        stream,
        bindings,
        outcome,
    } = event
    else {
        unreachable!("a launch");
    };
    let by_id: Vec<Binding> = bindings.iter().map(Binding::from).collect();
    let launch = Launch {
        kernel,
        stream: StreamRef::Id(*stream),
        bindings: &by_id[..],
        outcome: outcome.into(),
    };
    assert_eq!(write_launch(&launch, &World::default()), (line.to_vec(), 0));

    let mut world = World::default();
    world.alloc(0, 0, 1).expect("a new world takes memory 0");
    let freed = world.allocations().key_of(0).expect("live");
    world.free(0).expect("live");
    let mut by_key = vec![
        Binding::whole(StreamRef::Special(0), 1, Access::Write),
        Binding {
            memory: MemoryRef::Key(freed),
            ..Binding::whole(0, 0, Access::Read)
        },
    ];
    for b in bindings {
        // Any declared size will do (it is never memory): `LogBinding::of`
        // asks a key only which memory id it holds. An id bound twice is
        // made once, and both bindings take its key.
        let _ = world.alloc(b.stream, b.memory, u64::MAX);
        let key = world.allocations().key_of(b.memory).expect("made live");
        by_key.push(Binding {
            memory: MemoryRef::Key(key),
            ..Binding::from(b)
        });
    }
    let launch = Launch {
        bindings: &by_key[..],
        ..launch
    };
    assert_eq!(write_launch(&launch, &world), (line.to_vec(), 2));
}

/// What `write_launch` writes for `launch`, alone, and how many bindings
/// it says it left out.
fn write_launch(launch: &Launch<'_>, world: &World) -> (Vec<u8>, usize) {
    let mut writer = LogWriter::new(Vec::new());
    let left_out = writer
        .write_launch(launch, world)
        .expect("an accepted launch is writable");
    (writer.into_inner(), left_out)
}

/// What the reader accepted, the writer writes, and the reader reads back
/// unchanged. Returns the line written.
fn round_trip(event: &Event, first: bool) -> Vec<u8> {
    let mut writer = LogWriter::new(Vec::new());
    match event {
        Event::Header(h) => {
            assert!(first, "a header is accepted only first");
            writer
                .write_header(h)
                .expect("an accepted header is writable");
        }
        e => writer
            .write_event(e)
            .expect("an accepted event is writable"),
    }
    let bytes = writer.into_inner();
    let mut lines = LogReader::new(&bytes[..]);
    let back = lines
        .next()
        .expect("one line")
        .expect("no I/O error")
        .event
        .expect("the written line reads back");
    assert_eq!(
        &back,
        event,
        "written as {:?}",
        String::from_utf8_lossy(&bytes)
    );
    assert!(lines.next().is_none(), "exactly one line written");
    bytes
}
