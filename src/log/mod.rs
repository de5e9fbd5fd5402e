//! Launch logs (SPEC §7) and replay reports (SPEC §8).
//!
//! A launch log is how a failure seen in production becomes a test: the
//! scheduler records what it enqueued, and `replay` feeds the same events to a
//! fresh world. The reader, the writer and the report are only the file
//! format — they know nothing of claims or failures — so that they can be
//! tested byte for byte against the specification on their own; `replay`
//! feeds a log to a [`World`](crate::World), and `generate` writes
//! synthetic logs.
//!
//! * [`LogReader`] streams [`Line`]s out of any [`std::io::BufRead`] (or a
//!   file, gzip when its name ends in `.gz`) in memory independent of the
//!   log's length; a bad line is a [`LineError`], a broken file an
//!   [`std::io::Error`], so the caller can tell "reject this line" from "stop".
//! * [`LogWriter`] writes [`Event`]s back in exactly the form the reader
//!   accepts, so an embedding scheduler can record its own launches:
//!   [`LogWriter::write_launch`] writes the [`Launch`](crate::Launch) it
//!   hands its world as the launch's event, allocating nothing;
//!   [`LogBinding::of`] names a world's [`Binding`](crate::Binding) as a
//!   log does (a key by its allocation's memory id), and the two
//!   `Outcome`s convert each way (`From`), for the events it builds. The
//!   root's `Outcome`, `LaunchResult`, `ReadResult` and the other answers
//!   share their names with this module's report and event types, which
//!   are the log's spelling of them: import one set and name the other by
//!   its path.
//! * [`Report`] is the replay report as plain data, and
//!   [`Report::write_json`] its one byte layout.
//!
//! A scheduler records what it hands its world, and the log replays to the
//! same answer:
//!
//! ```
//! use taintworld::log::{Event, LaunchResult, LogReader, LogWriter, ReplayOptions};
//! use taintworld::{Access, Binding, Launch, World};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut world = World::default();
//! let mut log = LogWriter::new(Vec::new());
//! for memory in [1, 2] {
//!     world.alloc(0, memory, 64)?;
//!     log.write_event(&Event::Alloc { stream: 0, memory, size: 64, outcome: None })?;
//! }
//! let steps = [
//!     ("fill", Binding::whole(0, 1, Access::Write), None, taintworld::Outcome::Failed {
//!         kind: "launch", message: "too many resources requested" }),
//!     ("gelu", Binding::whole(0, 1, Access::Read), Some(Binding::whole(0, 2, Access::Write)),
//!         taintworld::Outcome::Ok),
//! ];
//! for (kernel, first, second, outcome) in steps {
//!     let bindings: Vec<Binding> = [Some(first), second].into_iter().flatten().collect();
//!     let launch = Launch { kernel, stream: 0.into(), bindings: &bindings[..], outcome };
//!     world.launch(&launch)?;
//!     // The line of its `Event::Launch`, built from nothing; every binding named.
//!     assert_eq!(log.write_launch(&launch, &world)?, 0);
//! }
//! let recorded = log.into_inner();
//!
//! // Later, or in a test: the report as SPEC §8 lays it out.
//! let options = ReplayOptions { keep_lists: true, ..ReplayOptions::default() };
//! let replay = taintworld::log::replay(LogReader::new(&recorded[..]), options, |_| {})?;
//! let (report, replayed) = replay.finish();
//! assert_eq!((report.verdicts.failed, report.verdicts.skipped), (1, 1));
//! assert!(matches!(
//!     report.launch_results[1],
//!     LaunchResult::Skipped { launch: 1, needed: 1, failure: 1, .. }
//! ));
//! assert_eq!(replayed.unwrap().stats(), world.stats());
//! let mut json = Vec::new();
//! report.write_json(&mut json)?;
//! assert!(json.starts_with(br#"{"format":"taintworld-report","version":1,"events":4,"#));
//! # Ok(())
//! # }
//! ```
//!
//! Choices the specification leaves open, made here:
//!
//! * A line over the length limit or not UTF-8 is bad input even when it is
//!   blank or a comment (SPEC Appendix A), and the reader yields it as a bad
//!   line marked as such ([`LineError::is_blank_or_comment`]). It is still a blank or
//!   comment line, so, as the Appendix counts `events`, it counts in none
//!   and does not take the header's place; every other line the reader
//!   yields counts, except an accepted header.
//! * A header after the first event is rejected as out of place before its
//!   own fields are looked at.
//! * `access` in a `host_write` or `read` binding is ignored: a valid value
//!   is kept (so a written log reads back unchanged), anything else —
//!   missing, `null`, unknown, not a string — reads as [`crate::Access::Read`].
//! * The `stream` of a `replay` is optional but, when present and not `null`,
//!   must be an integer like every other stream id.
//! * An `outcome` object may carry keys besides `failed`; they are ignored
//!   like any unknown field. An error object's keys besides `kind` and
//!   `message` are ignored too.
//! * `-0` is the integer `0` (JSON's grammar calls it an integer literal).
//! * A string escape that names a lone UTF-16 surrogate (`"\ud800"`) is
//!   malformed JSON: it names no character.
//! * SPEC (Appendix A, *Report shapes and key order*) fixes only that
//!   non-ASCII is not escaped in the report. The
//!   rest is JSON's shortest form, as `serde_json` writes it: `\"` and
//!   `\\`, the control characters as `\b`, `\f`, `\n`, `\r`, `\t` or
//!   `\u00XX` (lower-case hex), and everything else — `/`, DEL, U+2028 —
//!   as itself. A second implementation that escapes otherwise writes
//!   other bytes for the same report.
//! * A log is read as gzip when its name ends in `.gz` or its first two
//!   bytes are gzip's magic (`1f 8b`), so a gzipped log renamed `.jsonl`,
//!   or gzip on standard input, replays; no JSON line starts with those
//!   bytes, which are not UTF-8.
//! * A line is read whole before any field is ignored, so JSON's limits
//!   apply to ignored fields too: a number past `f64`'s range (`1e400`),
//!   or arrays and objects nested deeper than 127 (the line's own object
//!   counted), make the line malformed JSON (RFC 8259 §9 lets a parser set
//!   both limits). An independent implementation that reads unknown fields
//!   without limits accepts such a line (`tools/spec_oracle`).

mod event;
mod generate;
mod parse;
mod reader;
mod replay;
mod report;
mod writer;

pub use event::{ErrorObject, Event, Header, LogBinding, Outcome};
pub use generate::{GenOptions, Shape, generate};
pub use reader::{Line, LineError, LogReader, MAX_LINE_BYTES, gzip_named};
pub use replay::{
    CARRIERS_SHOWN, Carriers, CarriersRest, FailureTally, FaultAnswers, FirstLines,
    REMEMBERED_LIFETIMES, Replay, ReplayError, ReplayOptions, SUMMARY_FAILURES, SUMMARY_READS,
    SUMMARY_REJECTED, SkippedInjection, Untallied, replay,
};
pub use report::{
    CaptureEntry, CaptureResult, FinalState, LaunchResult, ProfileEntry, ProfileResult, ReadEntry,
    ReadResult, Rejected, Report, SyncEntry, SyncResult, TaintReport, Verdicts,
};
pub use writer::LogWriter;
