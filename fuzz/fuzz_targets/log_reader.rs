//! (a) The launch-log reader on arbitrary bytes: every line that is not
//! blank or a comment, and every one that is but is bad input, is yielded
//! without a panic or a hang, line numbers only grow and never pass the
//! number of physical lines, and every event the reader accepts is written
//! back by `LogWriter` and read back as the same event.
//! (b) The parser's fast path, which takes lines that begin
//! `{"op":"launch",`, changes no answer: each such line reads as the same
//! event, or as bad input, when a space after its `{` sends it to the full
//! parser.

#![no_main]

use libfuzzer_sys::fuzz_target;
use taintworld::log::{Event, LogReader, LogWriter};

fuzz_target!(|data: &[u8]| {
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
});

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
