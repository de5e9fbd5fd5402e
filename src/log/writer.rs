//! Writing a launch log (SPEC §7), so that an embedding scheduler can record
//! the launches it makes and replay them later.

use std::io::{self, Write};

use super::MAX_LINE_BYTES;
use super::event::{Event, Header, LogBinding, Outcome};
use crate::{Launch, StreamRef, World};

/// Writes [`Event`]s as a launch log: compact JSON, one event per line, keys
/// in the order SPEC §7 shows them.
///
/// What it writes, [`LogReader`](super::LogReader) reads back as the same
/// events; an event the reader would reject (a header after another event, a
/// `dry_run` outside a launch, a range ending before it starts, a header
/// setting of `0`, a line longer than [`MAX_LINE_BYTES`]; for
/// [`write_launch`](Self::write_launch), a launch on a special stream,
/// which a log cannot name) is refused with
/// [`io::ErrorKind::InvalidInput`] and nothing is written, so a recorded
/// log never holds bad input but for a line an output error tore (below).
/// A launch too wide for one line (tens of thousands of bindings, or a
/// kernel name near a mebibyte) is among them: split it, or leave it out,
/// where it is recorded.
///
/// A scheduler records each launch it hands its world with
/// [`write_launch`](Self::write_launch), which writes the line the
/// launch's [`Event`] would without building one, and so allocates nothing
/// per launch; the rest it records with [`write_event`](Self::write_event)
/// (the event of an alloc, a free, a read, or a host write that succeeded,
/// holds no string, and costs no allocation to build either).
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
                number(line, br#"{"op":"alloc","stream":"#, *stream);
                number(line, br#","memory":"#, *memory);
                number(line, br#","size":"#, *size);
                if let Some(outcome) = outcome {
                    if *outcome == Outcome::DryRun {
                        return Err(invalid("an alloc's outcome cannot be dry_run"));
                    }
                    line.extend_from_slice(br#","outcome":"#);
                    encode_outcome(line, outcome.into())?;
                }
            }
            Event::Free { memory } => number(line, br#"{"op":"free","memory":"#, *memory),
            Event::Launch {
                kernel,
                stream,
                bindings,
                outcome,
            } => encode_launch(
                line,
                kernel,
                *stream,
                bindings.iter().copied(),
                outcome.into(),
            )?,
            Event::HostWrite { binding, outcome } => {
                if *outcome == Outcome::DryRun {
                    return Err(invalid("a host write's outcome cannot be dry_run"));
                }
                line.extend_from_slice(br#"{"op":"host_write","binding":"#);
                encode_binding(line, binding)?;
                line.extend_from_slice(br#","outcome":"#);
                encode_outcome(line, outcome.into())?;
            }
            Event::Read { binding } => {
                line.extend_from_slice(br#"{"op":"read","binding":"#);
                encode_binding(line, binding)?;
            }
            Event::CaptureBegin { stream } => {
                number(line, br#"{"op":"capture_begin","stream":"#, *stream);
            }
            Event::CaptureEnd { stream, graph } => {
                number(line, br#"{"op":"capture_end","stream":"#, *stream);
                number(line, br#","graph":"#, *graph);
            }
            Event::Replay {
                graph,
                stream,
                outcome,
            } => {
                if *outcome == Outcome::DryRun {
                    return Err(invalid("a replay's outcome cannot be dry_run"));
                }
                number(line, br#"{"op":"replay","graph":"#, *graph);
                if let Some(stream) = stream {
                    number(line, br#","stream":"#, *stream);
                }
                line.extend_from_slice(br#","outcome":"#);
                encode_outcome(line, outcome.into())?;
            }
            Event::GraphDestroy { graph } => {
                number(line, br#"{"op":"graph_destroy","graph":"#, *graph);
            }
            Event::ProfileBegin { profile } => {
                number(line, br#"{"op":"profile_begin","profile":"#, *profile);
            }
            Event::ProfileEnd { profile } => {
                number(line, br#"{"op":"profile_end","profile":"#, *profile);
            }
            Event::DeviceFault { error } => {
                line.extend_from_slice(br#"{"op":"device_fault","error":"#);
                encode_error(line, &error.kind, &error.message)?;
            }
            Event::Sync => line.extend_from_slice(br#"{"op":"sync""#),
        }
        self.finish()
    }

    /// Writes a launch a scheduler hands its world as one line, without
    /// building an [`Event`] for it: the hot path of recording.
    ///
    /// Building an [`Event::Launch`] costs a `String` for the kernel and a
    /// `Vec` for the bindings on every launch (two allocations, four when
    /// it failed); this borrows all of them from `launch`, so, once the
    /// writer's line buffer has grown to the longest line written, a
    /// recorded launch allocates nothing (nor does the output, where it is
    /// a [`io::BufWriter`] or a `Vec` with room).
    ///
    /// The line is byte for byte what [`write_event`](Self::write_event)
    /// writes for the launch's event: its kernel and stream, each binding
    /// [`LogBinding::of`] names, in order, and its outcome
    /// ([`Outcome::from`]). As there, a binding a log cannot name — on a
    /// special stream, or by a key of no live allocation of `world` — is
    /// left out: record the launch before freeing what it binds.
    ///
    /// Returns how many bindings it left out, `0` when the line names them
    /// all; with more, the log does not replay as the world ran. A freed
    /// key's binding the world counts in `unresolved_bindings` and never
    /// checks, taints or releases (SPEC §2), so the replay's verdicts are
    /// the same and only its count of unresolved bindings is lower (and a
    /// strict replay takes a launch a strict world refused). A special
    /// stream's binding the world may well answer for — check, taint,
    /// release — where the replay cannot: its verdicts may differ. A
    /// recorder that gets more than `0` can warn that its log leaves
    /// something out.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`], with nothing written, where
    /// `write_event` refuses the launch's event — a binding's range ending
    /// before it starts, or a line longer than [`MAX_LINE_BYTES`] — and
    /// where the launch has no event, being on a special stream (a log
    /// names regular streams only, SPEC §7); otherwise the output's error,
    /// as for any event (see the type's docs).
    pub fn write_launch(&mut self, launch: &Launch<'_>, world: &World) -> io::Result<usize> {
        self.line.clear();
        let StreamRef::Id(stream) = launch.stream else {
            return Err(invalid(&format!(
                "a launch on {} cannot be recorded: a log names regular streams only",
                launch.stream
            )));
        };
        let mut left_out = 0_usize;
        let bindings = launch.bindings.iter().filter_map(|binding| {
            let named = LogBinding::of(binding, world);
            left_out += usize::from(named.is_none());
            named
        });
        encode_launch(
            &mut self.line,
            launch.kernel,
            stream,
            bindings,
            launch.outcome,
        )?;
        self.finish()?;
        Ok(left_out)
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
            number(line, br#","max_streams":"#, max_streams);
        }
        if let Some(chain_limit) = header.chain_limit {
            if chain_limit == 0 {
                return Err(invalid("chain_limit must be at least 1"));
            }
            number(line, br#","chain_limit":"#, chain_limit);
        }
        Ok(())
    }

    /// Closes the object and writes the line in one piece — unless it is
    /// longer than the reader takes, when nothing is written.
    fn finish(&mut self) -> io::Result<()> {
        self.line.extend_from_slice(b"}");
        if self.line.len() > MAX_LINE_BYTES {
            let refused = invalid(&format!(
                "the event's line would be {} bytes, over the reader's {MAX_LINE_BYTES}-byte limit",
                self.line.len()
            ));
            // The line was built whole to be measured: keep no more room
            // than the longest line the writer may write, where a 100 MB
            // kernel name would otherwise stay held for good.
            self.line.clear();
            self.line.shrink_to(MAX_LINE_BYTES + 1);
            return Err(refused);
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

/// `prefix`, then `n` in decimal as `Display` writes it, through `itoa`
/// rather than the formatting machinery `write!` goes through, which took
/// over half of a launch line's time.
fn number(line: &mut Vec<u8>, prefix: &[u8], n: u64) {
    line.extend_from_slice(prefix);
    line.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
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
    number(line, br#"{"stream":"#, stream);
    number(line, br#","memory":"#, memory);
    if let Some((start, end)) = range {
        if end < start {
            return Err(invalid(&format!(
                "range [{start}, {end}) of memory {memory} ends before it starts"
            )));
        }
        number(line, br#","range":["#, start);
        number(line, b",", end);
        line.push(b']');
    }
    line.extend_from_slice(br#","access":""#);
    line.extend_from_slice(access.name().as_bytes());
    line.extend_from_slice(br#""}"#);
    Ok(())
}

/// A launch's line but for the closing brace: what [`LogWriter::write_event`]
/// writes for an [`Event::Launch`] and [`LogWriter::write_launch`] for a
/// world's launch, from borrowed parts so that neither allocates.
fn encode_launch(
    line: &mut Vec<u8>,
    kernel: &str,
    stream: u64,
    bindings: impl Iterator<Item = LogBinding>,
    outcome: crate::Outcome<'_>,
) -> io::Result<()> {
    line.extend_from_slice(br#"{"op":"launch","kernel":"#);
    encode_str(line, kernel)?;
    number(line, br#","stream":"#, stream);
    line.extend_from_slice(br#","bindings":["#);
    for (index, binding) in bindings.enumerate() {
        if index > 0 {
            line.push(b',');
        }
        encode_binding(line, &binding)?;
    }
    line.extend_from_slice(br#"],"outcome":"#);
    encode_outcome(line, outcome)
}

/// An outcome, in the world's borrowed form, which a log's
/// [`Outcome`] converts to without allocating.
fn encode_outcome(line: &mut Vec<u8>, outcome: crate::Outcome<'_>) -> io::Result<()> {
    match outcome {
        crate::Outcome::Ok => line.extend_from_slice(br#""ok""#),
        crate::Outcome::DryRun => line.extend_from_slice(br#""dry_run""#),
        crate::Outcome::Failed { kind, message } => {
            line.extend_from_slice(br#"{"failed":"#);
            encode_error(line, kind, message)?;
            line.push(b'}');
        }
    }
    Ok(())
}

fn encode_error(line: &mut Vec<u8>, kind: &str, message: &str) -> io::Result<()> {
    line.extend_from_slice(br#"{"kind":"#);
    encode_str(line, kind)?;
    line.extend_from_slice(br#","message":"#);
    encode_str(line, message)?;
    line.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::number;

    /// `number` writes what `Display` writes, at every power of ten and
    /// either side of it, at the ends of `u64` and along a walk through it.
    #[test]
    fn numbers_are_written_as_display_writes_them() {
        let mut edges = vec![0, u64::MAX, u64::MAX - 1];
        for power in 0..20 {
            let ten = 10u64.pow(power);
            edges.extend([ten - 1, ten, ten + 1]);
        }
        let mut n = 1u64;
        for _ in 0..10_000 {
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            edges.extend([n, n >> (n % 64)]);
        }
        for n in edges {
            let mut line = b"x".to_vec();
            number(&mut line, b":", n);
            assert_eq!(line, format!("x:{n}").into_bytes());
        }
    }
}
