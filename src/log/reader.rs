//! Streaming a launch log line by line (SPEC §7, Appendix A "Reading a log").
//!
//! The reader holds one line buffer, reused for every line, that keeps at
//! most [`MAX_LINE_BYTES`] and a byte of a line; its room grows by
//! doubling up to exactly that and is never given back, so a line of 1 MiB
//! or more leaves it 1 MiB and a byte. Beside it is what its input reads
//! ahead: 8 KiB for a default `BufReader`, 64 KiB for a log
//! [`open`](LogReader::open)ed here, and for a gzip log a second 64 KiB
//! and the decompressor's state. A log of any length replays in constant
//! memory, and a line too long to be an event is counted and skipped
//! without ever being held whole. Lines are split on `\n` by hand (not
//! `read_line`) so that an over-long line, bytes that are not UTF-8 and a
//! broken stream are three different answers instead of one I/O error.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::event::Event;
use super::parse::parse_event;

/// The longest line, in bytes without its newline, a log may hold (SPEC §9).
/// Longer lines are bad input, whatever they hold.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One line of a log that is neither blank nor a comment — every such line
/// is an event or bad input, and either way it is reported by its number —
/// or a blank or comment line that is bad input all the same (over
/// [`MAX_LINE_BYTES`], or not UTF-8; [`LineError::is_blank_or_comment`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The 1-based physical line number, counting blank lines and comments,
    /// so that an error points where an editor shows it.
    pub number: u64,
    /// The event, or what was wrong with the line.
    pub event: Result<Event, LineError>,
}

/// What was wrong with one line: bad input, which `replay` reports as
/// `error: line N: <this>` or lists under `rejected`.
///
/// Distinct from an [`io::Error`], which means the log itself could not be
/// read and no later line can be trusted either.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    message: String,
    comment: bool,
}

impl LineError {
    fn new(message: String) -> Self {
        LineError {
            message,
            comment: false,
        }
    }

    /// Whether the bad line is blank or a comment (one too long, or not
    /// UTF-8), rather than an event line. SPEC Appendix A makes such a line bad input "even when blank
    /// or a comment", and counts in `events` only lines that are neither:
    /// so it is rejected, yet it is no event — it counts nowhere, and a
    /// header after it is still first.
    pub fn is_blank_or_comment(&self) -> bool {
        self.comment
    }

    /// The "what was wrong" text, the same as this error's `Display`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LineError {}

/// Reads a launch log: an iterator of `io::Result<Line>`, one per line that
/// is neither blank nor a comment, and one per blank or comment line that
/// is bad input all the same (over [`MAX_LINE_BYTES`], or not UTF-8).
///
/// An `Err` item means the log could not be read (a failing device, a broken
/// `.gz`); the iterator ends after it. A bad line is not an `Err` item but a
/// [`Line`] whose `event` is a [`LineError`], and reading goes on after it,
/// so the caller decides between stopping and going on
/// ([`ReplayOptions::keep_going`](super::ReplayOptions::keep_going)).
///
/// Every line this iterator yields counts in the report's `events`, except
/// an accepted header and a bad blank or comment line
/// ([`LineError::is_blank_or_comment`]); the first other line it yields is the only
/// place a header is accepted.
pub struct LogReader<R> {
    inner: R,
    /// The current line, reused; never longer than `MAX_LINE_BYTES + 1`.
    buf: Vec<u8>,
    /// The number of the last physical line read.
    number: u64,
    /// Whether a line other than a bad blank or comment line has been
    /// yielded yet: a header is accepted only before.
    yielded: bool,
    /// How many bytes of the current line past what `buf` keeps are
    /// neither spaces nor tabs (a dropped trailing `\r` not counted): with
    /// `buf`, whether an over-long line is blank.
    tail_other: usize,
    /// Set after an I/O error or the end of the input.
    done: bool,
    /// The file read, named in I/O errors.
    path: Option<PathBuf>,
}

/// Shows where the reader is, not what it reads from (a boxed reader has no
/// `Debug`).
impl<R> fmt::Debug for LogReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogReader")
            .field("line", &self.number)
            .field("path", &self.path)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// One physical line as read: its length without the newline and any
/// dropped `\r` (counted even past what the buffer kept).
enum Physical {
    End,
    Line { len: u64 },
}

impl<R: BufRead> LogReader<R> {
    /// Reads a log from any buffered reader, e.g. a `&[u8]` or a
    /// `BufReader<File>`. The reader's own buffer is the only read-ahead.
    pub fn new(inner: R) -> Self {
        LogReader {
            inner,
            buf: Vec::new(),
            number: 0,
            yielded: false,
            tail_other: 0,
            done: false,
            path: None,
        }
    }

    /// Reads the next physical line into `buf`, keeping at most
    /// `MAX_LINE_BYTES + 1` bytes of it. The byte over the limit holds the
    /// `\r` of a line exactly at the limit followed by `\r\n`, which the
    /// carriage-return rule below then pops; it is not what keeps that line
    /// whole, since with no byte over the same rule discounts the dropped
    /// `\r` instead (cargo-mutants' `KEEP` as `MAX_LINE_BYTES` passes every
    /// test, and is the same reader but for a byte of room).
    fn read_physical(&mut self) -> io::Result<Physical> {
        const KEEP: usize = MAX_LINE_BYTES + 1;
        self.buf.clear();
        self.tail_other = 0;
        let mut len: u64 = 0;
        let mut last = None;
        let mut any = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if !any {
                    return Ok(Physical::End);
                }
                break;
            }
            any = true;
            let (chunk, newline) = match find_newline(available) {
                Some(at) => (available.get(..at).unwrap_or(available), true),
                None => (available, false),
            };
            let room = KEEP.saturating_sub(self.buf.len());
            let kept = chunk.get(..room).unwrap_or(chunk);
            let needed = self.buf.len().saturating_add(kept.len());
            if needed > self.buf.capacity() {
                // Doubling, as a `Vec` grows, but never past `KEEP`: the
                // last byte of a long line would double 1 MiB of room to 2.
                let room_for = self.buf.capacity().saturating_mul(2).max(needed).min(KEEP);
                self.buf
                    .reserve_exact(room_for.saturating_sub(self.buf.len()));
            }
            self.buf.extend_from_slice(kept);
            if let Some(dropped) = chunk.get(room..) {
                // Only an over-long line gets here.
                let other = dropped.iter().filter(|&&b| b != b' ' && b != b'\t').count();
                self.tail_other = self.tail_other.saturating_add(other);
            }
            len = len.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
            if let Some(&byte) = chunk.last() {
                last = Some(byte);
            }
            let used = chunk.len().saturating_add(usize::from(newline));
            self.inner.consume(used);
            if newline {
                break;
            }
        }
        if last == Some(b'\r') {
            len = len.saturating_sub(1);
            if u64::try_from(self.buf.len()).is_ok_and(|kept| kept > len) {
                self.buf.pop();
            } else {
                self.tail_other = self.tail_other.saturating_sub(1);
            }
        }
        Ok(Physical::Line { len })
    }

    /// The next line that is not blank or a comment (or is, and is bad
    /// input all the same), or the end.
    fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            let len = match self.read_physical()? {
                Physical::End => return Ok(None),
                Physical::Line { len } => len,
            };
            self.number = self.number.saturating_add(1);
            let number = self.number;
            let first = !self.yielded;
            if len > MAX_LINE_BYTES as u64 {
                let comment = comment(&self.buf) || (self.tail_other == 0 && blank(&self.buf));
                let message = format!("line is {len} bytes, over the {MAX_LINE_BYTES}-byte limit");
                return Ok(Some(self.bad(number, message, comment)));
            }
            let text = match std::str::from_utf8(&self.buf) {
                Ok(text) => text,
                Err(e) => {
                    let message = format!("not valid UTF-8 (at byte {})", e.valid_up_to());
                    let comment = comment(&self.buf);
                    return Ok(Some(self.bad(number, message, comment)));
                }
            };
            if comment(text.as_bytes()) || blank(text.as_bytes()) {
                continue;
            }
            self.yielded = true;
            let event = parse_event(text, first).map_err(LineError::new);
            return Ok(Some(Line { number, event }));
        }
    }

    /// A bad line numbered `number`; a blank or comment one (`comment`)
    /// does not take the header's place.
    fn bad(&mut self, number: u64, message: String, comment: bool) -> Line {
        self.yielded |= !comment;
        Line {
            number,
            event: Err(LineError { message, comment }),
        }
    }
}

/// Whether a line is a comment: `#` in its first column.
fn comment(line: &[u8]) -> bool {
    line.first() == Some(&b'#')
}

/// Whether a line is blank: empty, or only spaces and tabs.
fn blank(line: &[u8]) -> bool {
    line.iter().all(|&b| b == b' ' || b == b'\t')
}

/// The first two bytes of every gzip member (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether a log's name says gzip: it ends in `.gz`, in any case. The
/// reader decompresses such a file (and any whose first bytes are gzip's),
/// and `taintworld gen -o` writes gzip to one, so that what `gen` writes
/// under a name `replay` reads back.
pub fn gzip_named(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().to_ascii_lowercase().ends_with(".gz"))
}

impl LogReader<Box<dyn BufRead + Send>> {
    /// Opens a log file, decompressing it when its name ends in `.gz` (in
    /// any case) or its first two bytes are gzip's magic number — a gzipped
    /// log renamed, or `/dev/stdin` fed by `gzip -c`; no JSON line can
    /// start with those bytes. Several gzip members in a row read as one
    /// log, as `zcat` does; unlike `zcat`, anything after the last member —
    /// zero padding included — and an empty `.gz` file are errors: a log is
    /// whole members and nothing else.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened; the error names the path, as do the
    /// I/O errors the reader yields later.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        LogReader::open_with(path, |file| file)
    }

    /// [`open`](Self::open), reading the file through what `wrap` makes of
    /// it: the file wrapped to count the bytes read of it for a progress
    /// bar, say. What it reads is then read as `open` reads the file,
    /// decompressed when the name or the first bytes say gzip, with I/O
    /// errors naming the path.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened or its first bytes read, as for
    /// `open`.
    pub fn open_with<F: Read + Send + 'static>(
        path: impl AsRef<Path>,
        wrap: impl FnOnce(File) -> F,
    ) -> io::Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
        })?;
        let mut file = wrap(file);
        let named = gzip_named(path);
        // The first two bytes, read whole even from a pipe that hands them
        // over one at a time, and then read again ahead of the rest.
        let mut head = Vec::with_capacity(GZIP_MAGIC.len());
        file.by_ref()
            .take(GZIP_MAGIC.len() as u64)
            .read_to_end(&mut head)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
            })?;
        // Read as gzip for its name, a plain file fails on its first bytes,
        // which the error then says, rather than the decoder's "invalid
        // gzip header".
        let plain = named && head.len() == GZIP_MAGIC.len() && head != GZIP_MAGIC;
        let gzip = named || head == GZIP_MAGIC;
        let file = BufReader::with_capacity(1 << 16, io::Cursor::new(head).chain(file));
        let inner: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(1 << 16, Members::new(file, plain)))
        } else {
            Box::new(file)
        };
        let mut reader = LogReader::new(inner);
        reader.path = Some(path.to_owned());
        Ok(reader)
    }
}

/// Gzip members one after another, decompressed as one stream, as
/// `flate2`'s `MultiGzDecoder` reads them — except that what follows a
/// member must be another member or the end: anything else is an error
/// that says so. (`MultiGzDecoder` reads it as a member's header and
/// reports "invalid gzip header", or, when fewer than a header's ten bytes
/// follow, "unexpected end of file", which reads as a file cut short.)
struct Members<R: BufRead> {
    /// The member being read. Always `Some` between calls: an ended
    /// member is taken out and its reader handed to the next.
    member: Option<flate2::bufread::GzDecoder<R>>,
    /// Whether the file is read as gzip for its name only, its first two
    /// bytes not gzip's: its first error says so.
    plain: bool,
}

impl<R: BufRead> Members<R> {
    fn new(compressed: R, plain: bool) -> Self {
        Members {
            member: Some(flate2::bufread::GzDecoder::new(compressed)),
            plain,
        }
    }

    /// The decoder's error `e`, saying what it means where the decoder's
    /// own words ("invalid gzip header", "unexpected end of file",
    /// "incomplete deflate stream") name no cause. An end come too soon
    /// keeps its kind, [`io::ErrorKind::UnexpectedEof`], which tells a
    /// caller the file is cut short.
    fn why(&self, e: io::Error) -> io::Error {
        if self.plain {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "its name ends in .gz, but it does not start as gzip does (0x1f 0x8b): \
                 a plain log needs a name without .gz",
            )
        } else if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(
                e.kind(),
                format!("{e}: the gzip data stops early (the file is cut short, or empty)"),
            )
        } else {
            e
        }
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = match member.read(buf) {
                Ok(n) => n,
                Err(e) => return Err(self.why(e)),
            };
            if n > 0 {
                return Ok(n);
            }
            // The member ended, its trailer checked; a bufread decoder
            // takes no byte past it. Another member, or the end. A member
            // begins with both bytes of gzip's magic; when the buffer
            // holds only the first (the member ended one byte before the
            // buffer's end, or the file ends in that byte), the next
            // member's decoder is left to judge it, in its own words.
            let next = member.get_mut().fill_buf()?;
            if next.is_empty() {
                return Ok(0);
            }
            if !GZIP_MAGIC.starts_with(next) && !next.starts_with(&GZIP_MAGIC) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes after the last gzip member are not a gzip member",
                ));
            }
            if let Some(ended) = self.member.take() {
                let next = flate2::bufread::GzDecoder::new(ended.into_inner());
                self.member = Some(next);
            }
        }
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_line() {
            Ok(Some(line)) => Some(Ok(line)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                // Where it broke: a truncated `.gz` reads whole up to
                // some line, and the lines before it were applied.
                let after = match self.number {
                    0 => String::from("before its first line"),
                    n => format!("after line {n}"),
                };
                Some(Err(match &self.path {
                    Some(path) => io::Error::new(
                        e.kind(),
                        format!("cannot read {} {after}: {e}", path.display()),
                    ),
                    None => e,
                }))
            }
        }
    }
}

impl<R: BufRead> std::iter::FusedIterator for LogReader<R> {}

/// The index of the first `\n` in `bytes`: finding line ends is the
/// reader's only per-byte work besides UTF-8 validation, so it is `memchr`'s
/// vectorized search.
#[inline]
fn find_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

#[cfg(test)]
mod tests {
    use super::find_newline;

    #[test]
    fn find_newline_finds_the_first_newline_at_every_offset() {
        for len in 0..40 {
            for at in 0..len {
                let mut bytes = vec![b'a'; len];
                bytes[at] = b'\n';
                if at + 1 < len {
                    bytes[len - 1] = b'\n';
                }
                assert_eq!(find_newline(&bytes), Some(at), "len {len} at {at}");
            }
            assert_eq!(find_newline(&vec![0x8a; len]), None);
            assert_eq!(find_newline(&vec![0x0b; len]), None);
        }
    }
}
