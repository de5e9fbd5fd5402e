//! Writing a launch log (SPEC §7), so that an embedding scheduler can record
//! the launches it makes and replay them later.

use std::io::{self, Write};

use super::MAX_LINE_BYTES;
use super::event::{ErrorObject, Event, Header, LogBinding, Outcome};

/// Writes [`Event`]s as a launch log: compact JSON, one event per line, keys
/// in the order SPEC §7 shows them.
///
/// What it writes, [`LogReader`](super::LogReader) reads back as the same
/// events; an event the reader would reject (a header after another event, a
/// `dry_run` outside a launch, a range ending before it starts, a header
/// setting of `0`, a line longer than [`MAX_LINE_BYTES`]) is refused with
/// [`io::ErrorKind::InvalidInput`] and nothing is written, so a recorded
/// log never holds bad input but for a line an output error tore (below).
/// A launch too wide for one line (tens of thousands of bindings, or a
/// kernel name near a mebibyte) is among them: split it, or leave it out,
/// where it is recorded.
///
/// Each event is one `write_all` of a whole line; wrap the output in a
/// [`io::BufWriter`] when writing many.
///
/// When the output fails part-way through a line, the part written stays
/// in the log, and the writer starts its next line on a line of its own:
/// the torn part is then one bad line, which the reader rejects (and
/// `--keep-going` passes), and no later event is lost with it. (A torn
/// write inside a [`io::BufWriter`] happens when the buffer is written
/// out, where this writer cannot see it.)
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: W,
    /// The line being built, reused.
    line: Vec<u8>,
    /// Whether an event was written: a header must come first.
    wrote: bool,
    /// Whether the last write failed, and may have left part of its line:
    /// the next line starts on a line of its own.
    torn: bool,
}

impl<W: Write> LogWriter<W> {
    /// Starts a log on `out`, with no header: a header is optional.
    pub fn new(out: W) -> Self {
        LogWriter {
            out,
            line: Vec::with_capacity(256),
            wrote: false,
            torn: false,
        }
    }

    /// Writes the header, which must be the first event.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] when an event was already written or a
    /// setting is `Some(0)`; otherwise the output's error.
    pub fn write_header(&mut self, header: &Header) -> io::Result<()> {
        self.line.clear();
        self.encode_header(header)?;
        self.finish()
    }

    /// Writes one event as one line.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] when the reader would reject the event
    /// (see the type's docs); otherwise the output's error.
    pub fn write_event(&mut self, event: &Event) -> io::Result<()> {
        self.line.clear();
        let line = &mut self.line;
        match event {
            Event::Header(header) => return self.write_header(header),
            Event::Alloc {
                stream,
                memory,
                size,
                outcome,
            } => {
                write!(
                    line,
                    r#"{{"op":"alloc","stream":{stream},"memory":{memory},"size":{size}"#
                )?;
                if let Some(outcome) = outcome {
                    if *outcome == Outcome::DryRun {
                        return Err(invalid("an alloc's outcome cannot be dry_run"));
                    }
                    line.extend_from_slice(br#","outcome":"#);
                    encode_outcome(line, outcome)?;
                }
            }
            Event::Free { memory } => write!(line, r#"{{"op":"free","memory":{memory}"#)?,
            Event::Launch {
                kernel,
                stream,
                bindings,
                outcome,
            } => {
                line.extend_from_slice(br#"{"op":"launch","kernel":"#);
                encode_str(line, kernel)?;
                write!(line, r#","stream":{stream},"bindings":["#)?;
                for (index, binding) in bindings.iter().enumerate() {
                    if index > 0 {
                        line.push(b',');
                    }
                    encode_binding(line, binding)?;
                }
                line.extend_from_slice(br#"],"outcome":"#);
                encode_outcome(line, outcome)?;
            }
            Event::HostWrite { binding, outcome } => {
                if *outcome == Outcome::DryRun {
                    return Err(invalid("a host write's outcome cannot be dry_run"));
                }
                line.extend_from_slice(br#"{"op":"host_write","binding":"#);
                encode_binding(line, binding)?;
                line.extend_from_slice(br#","outcome":"#);
                encode_outcome(line, outcome)?;
            }
            Event::Read { binding } => {
                line.extend_from_slice(br#"{"op":"read","binding":"#);
                encode_binding(line, binding)?;
            }
            Event::CaptureBegin { stream } => {
                write!(line, r#"{{"op":"capture_begin","stream":{stream}"#)?;
            }
            Event::CaptureEnd { stream, graph } => write!(
                line,
                r#"{{"op":"capture_end","stream":{stream},"graph":{graph}"#
            )?,
            Event::Replay {
                graph,
                stream,
                outcome,
            } => {
                if *outcome == Outcome::DryRun {
                    return Err(invalid("a replay's outcome cannot be dry_run"));
                }
                write!(line, r#"{{"op":"replay","graph":{graph}"#)?;
                if let Some(stream) = stream {
                    write!(line, r#","stream":{stream}"#)?;
                }
                line.extend_from_slice(br#","outcome":"#);
                encode_outcome(line, outcome)?;
            }
            Event::GraphDestroy { graph } => {
                write!(line, r#"{{"op":"graph_destroy","graph":{graph}"#)?;
            }
            Event::ProfileBegin { profile } => {
                write!(line, r#"{{"op":"profile_begin","profile":{profile}"#)?;
            }
            Event::ProfileEnd { profile } => {
                write!(line, r#"{{"op":"profile_end","profile":{profile}"#)?;
            }
            Event::DeviceFault { error } => {
                line.extend_from_slice(br#"{"op":"device_fault","error":"#);
                encode_error(line, error)?;
            }
            Event::Sync => line.extend_from_slice(br#"{"op":"sync""#),
        }
        self.finish()
    }

    /// Flushes the output, so a crash after this loses no recorded event.
    ///
    /// Through a gzip encoder (`flate2`'s `GzEncoder`) a flush makes the
    /// lines so far readable but does not end the gzip stream: a log whose
    /// encoder was never finished reads up to its last flush and then ends
    /// in an I/O error, which stops [`replay`](super::replay) and drops
    /// what it replayed; [`Replay::apply_all`](super::Replay::apply_all)
    /// keeps it. Finish the encoder (`into_inner().finish()?`) to end the
    /// log cleanly.
    ///
    /// # Errors
    ///
    /// The output's error.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Gives the output back, e.g. to finish a gzip stream.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn encode_header(&mut self, header: &Header) -> io::Result<()> {
        if self.wrote {
            return Err(invalid("a header must be the first event"));
        }
        let line = &mut self.line;
        line.extend_from_slice(br#"{"op":"header","format":"taintworld-log","version":1"#);
        if let Some(max_streams) = header.max_streams {
            if max_streams == 0 {
                return Err(invalid("max_streams must be at least 1"));
            }
            write!(line, r#","max_streams":{max_streams}"#)?;
        }
        if let Some(chain_limit) = header.chain_limit {
            if chain_limit == 0 {
                return Err(invalid("chain_limit must be at least 1"));
            }
            write!(line, r#","chain_limit":{chain_limit}"#)?;
        }
        Ok(())
    }

    /// Closes the object and writes the line in one piece — unless it is
    /// longer than the reader takes, when nothing is written.
    fn finish(&mut self) -> io::Result<()> {
        self.line.extend_from_slice(b"}");
        if self.line.len() > MAX_LINE_BYTES {
            return Err(invalid(&format!(
                "the event's line would be {} bytes, over the reader's {MAX_LINE_BYTES}-byte limit",
                self.line.len()
            )));
        }
        self.line.push(b'\n');
        if self.torn {
            // A blank line where the failed write left nothing.
            self.out.write_all(b"\n")?;
            self.torn = false;
        }
        if let Err(error) = self.out.write_all(&self.line) {
            self.torn = true;
            return Err(error);
        }
        self.wrote = true;
        Ok(())
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// A JSON string with serde_json's escaping, which the reader undoes
/// exactly.
fn encode_str(line: &mut Vec<u8>, s: &str) -> io::Result<()> {
    serde_json::to_writer(line, s).map_err(io::Error::other)
}

fn encode_binding(line: &mut Vec<u8>, binding: &LogBinding) -> io::Result<()> {
    let LogBinding {
        stream,
        memory,
        range,
        access,
    } = *binding;
    write!(line, r#"{{"stream":{stream},"memory":{memory}"#)?;
    if let Some((start, end)) = range {
        if end < start {
            return Err(invalid("a binding's range cannot end before it starts"));
        }
        write!(line, r#","range":[{start},{end}]"#)?;
    }
    write!(line, r#","access":"{}"}}"#, access.name())
}

fn encode_outcome(line: &mut Vec<u8>, outcome: &Outcome) -> io::Result<()> {
    match outcome {
        Outcome::Ok => line.extend_from_slice(br#""ok""#),
        Outcome::DryRun => line.extend_from_slice(br#""dry_run""#),
        Outcome::Failed(error) => {
            line.extend_from_slice(br#"{"failed":"#);
            encode_error(line, error)?;
            line.push(b'}');
        }
    }
    Ok(())
}

fn encode_error(line: &mut Vec<u8>, error: &ErrorObject) -> io::Result<()> {
    line.extend_from_slice(br#"{"kind":"#);
    encode_str(line, &error.kind)?;
    line.extend_from_slice(br#","message":"#);
    encode_str(line, &error.message)?;
    line.push(b'}');
    Ok(())
}
