//! (a) The launch-log reader on arbitrary bytes: every line that is not
//! blank or a comment, and every one that is but is bad input, is yielded
//! without a panic or a hang, line numbers only grow and never pass the
//! number of physical lines, and every event the reader accepts is written
//! back by `LogWriter` and read back as the same event.
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

fuzz_target!(|data: &[u8]| {
    plain(data);
    gzipped(data);
});

/// (a) and (b).
fn plain(data: &[u8]) {
    let physical = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let mut last = 0u64;
    let mut first = true;
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
            round_trip(event, first);
        }
        // A bad blank or comment line leaves the header its place.
        if !line.event.as_ref().is_err_and(|e| e.is_blank_or_comment()) {
            first = false;
        }
    }
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

/// What the reader accepted, the writer writes, and the reader reads back
/// unchanged.
fn round_trip(event: &Event, first: bool) {
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
}
