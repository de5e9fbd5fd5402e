//! The replay report (SPEC §8) as plain data, and its one byte layout.
//!
//! Two implementations of the specification must produce byte-for-byte the
//! same report, so the layout is not left to a derive's defaults: every
//! shape's keys, their order and which keys a variant leaves out are written
//! out by hand below (Appendix A, "Report shapes and key order"). The types
//! hold only what varies; constant keys (`"verdict":"failed"` on a failed
//! replay, `"replay":true`) come from the variant.

use std::io::{self, Write};

use serde::ser::{Serialize, SerializeMap, Serializer};

pub use crate::SyncResult;
use crate::{ChainHop, ErrorInfo};

/// The whole report of one replay: what `replay --json` prints.
///
/// Its counts are always whole. Its lists (`launch_results`, `reads`,
/// `captures`, `profiles`, `syncs`) are filled only by a replay with
/// [`ReplayOptions::keep_lists`](super::ReplayOptions::keep_lists), and
/// `rejected` holds only its first [`SUMMARY_REJECTED`](super::SUMMARY_REJECTED)
/// entries without it: a report of SPEC §8 needs the option, and the
/// command sets it for `--json`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Lines holding an event other than an accepted header, applied or
    /// rejected.
    pub events: u64,
    /// Launches numbered (rejected lines take no number).
    pub launches: u64,
    /// How the launches went.
    pub verdicts: Verdicts,
    /// In log order: every launch whose verdict is not `ran`, every failed
    /// replay and every failed host write.
    pub launch_results: Vec<LaunchResult>,
    /// Every `read` event's answer, in log order.
    pub reads: Vec<ReadEntry>,
    /// Every applied `capture_end`, in log order.
    pub captures: Vec<CaptureEntry>,
    /// Every applied `profile_end`, in log order.
    pub profiles: Vec<ProfileEntry>,
    /// Every `sync`, in log order.
    pub syncs: Vec<SyncEntry>,
    /// Bindings of applied events that did not resolve.
    pub unresolved_bindings: u64,
    /// Failure ids minted during the run.
    pub failures_minted: u64,
    /// The world after the last event; written under the key `final`.
    pub final_state: FinalState,
    /// Lines skipped by a replay with
    /// [`keep_going`](super::ReplayOptions::keep_going) (the command's
    /// `--keep-going`), in log order.
    pub rejected: Vec<Rejected>,
}

/// Launch counts by verdict; replays and host writes are not launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verdicts {
    /// Launches that ran (outcome `ok`, read set clean).
    pub ran: u64,
    /// Launches whose outcome was `failed` (or injected).
    pub failed: u64,
    /// Launches skipped because their read set was tainted.
    pub skipped: u64,
    /// Launches only planned.
    pub dry_run: u64,
}

/// One entry of `launch_results`: something that did not simply run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchResult {
    /// `{"launch","line","verdict":"dry_run"}`.
    DryRun {
        /// The launch's number.
        launch: u64,
        /// The launch's line.
        line: u64,
    },
    /// `{"launch","line","verdict":"failed","failure"}`.
    Failed {
        /// The launch's number.
        launch: u64,
        /// The launch's line.
        line: u64,
        /// The failure found or minted for it.
        failure: u64,
    },
    /// `{"launch","line","verdict":"skipped","failure","needed"}`.
    Skipped {
        /// The launch's number.
        launch: u64,
        /// The launch's line.
        line: u64,
        /// The failure its read set carried.
        failure: u64,
        /// The memory id of the binding that decided.
        needed: u64,
    },
    /// `{"replay":true,"graph","line","verdict":"failed","failure"}`.
    ReplayFailed {
        /// The graph replayed.
        graph: u64,
        /// The replay's line.
        line: u64,
        /// The failure found or minted for it.
        failure: u64,
    },
    /// `{"replay":true,"graph","line","verdict":"skipped","failure","needed","launches"}`:
    /// a checked replay ([`ReplayOptions::checked_replays`](crate::log::ReplayOptions::checked_replays))
    /// that skipped a launch. `failure` and `needed` are the first skipped
    /// launch's, as the replay's verdict is; `launches` lists every captured
    /// launch it skipped, so that a graph whose garbage reaches only some of
    /// its launches says which.
    ReplaySkipped {
        /// The graph replayed.
        graph: u64,
        /// The replay's line.
        line: u64,
        /// The failure the first skipped launch's read set carried.
        failure: u64,
        /// The memory id of the binding that decided the first skip.
        needed: u64,
        /// The numbers the skipped launches had when they were captured
        /// (a replay takes no launch number, SPEC §7 and Appendix A), in the
        /// graph's order.
        launches: Vec<u64>,
    },
    /// `{"host_write":true,"line","verdict":"failed","failure"}`.
    HostWriteFailed {
        /// The host write's line.
        line: u64,
        /// The failure found or minted for it.
        failure: u64,
    },
}

/// Why bytes cannot be trusted: the failure, its root error and the path of
/// skipped launches from it (SPEC §4). Shared by tainted reads and failed
/// captures, which report the same fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintReport {
    /// The failure's id.
    pub failure: u64,
    /// Its error.
    pub error: ErrorInfo,
    /// How many times it occurred, as of the event reported.
    pub occurrences: u64,
    /// Newest skipped launch first.
    pub chain: Vec<ChainHop>,
    /// Whether the chain ended at a cut (`chain_limit`).
    pub truncated: bool,
}

/// A world's [`TaintReport`](crate::TaintReport) as the report words it:
/// the failure by its id's number, everything else as the world gave it.
impl From<crate::TaintReport> for TaintReport {
    fn from(r: crate::TaintReport) -> Self {
        TaintReport {
            failure: r.failure.get(),
            error: r.error,
            occurrences: r.occurrences,
            chain: r.chain,
            truncated: r.truncated,
        }
    }
}

/// One entry of `reads`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadEntry {
    /// The read's line.
    pub line: u64,
    /// The binding's memory id, whatever the result.
    pub memory: u64,
    /// What the read found.
    pub result: ReadResult,
}

/// What a read found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadResult {
    /// No claim overlaps the range: the bytes can be trusted.
    Clean,
    /// A claim overlaps the range.
    Tainted(TaintReport),
    /// The binding did not resolve: not this world's to answer.
    Unresolved,
    /// The device is faulted; carries the fault's error.
    DeviceFault(ErrorInfo),
}

/// One entry of `captures`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureEntry {
    /// The `capture_end`'s line.
    pub line: u64,
    /// The graph id it named.
    pub graph: u64,
    /// Whether a graph was made.
    pub result: CaptureResult,
}

/// How a capture ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureResult {
    /// The graph was made.
    Ok,
    /// The window was doomed: no graph, and why (`capture_failed`).
    Failed(TaintReport),
}

/// One entry of `profiles`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileEntry {
    /// The `profile_end`'s line.
    pub line: u64,
    /// The profile id.
    pub profile: u64,
    /// Whether the measurement can be trusted.
    pub result: ProfileResult,
}

/// How a profile ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileResult {
    /// Nothing failed while it was open.
    Valid,
    /// Something failed while it was open: the first failure, as it was then.
    Invalid {
        /// The first failure's id.
        failure: u64,
        /// Its error.
        error: ErrorInfo,
    },
}

/// One entry of `syncs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncEntry {
    /// The sync's line.
    pub line: u64,
    /// What it returned.
    pub result: SyncResult,
}

/// The world after the last event (`final`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FinalState {
    /// Failures that still exist.
    pub live_failures: u64,
    /// Allocations carrying at least one claim.
    pub tainted_allocations: u64,
    /// Bytes carrying a failure, unbacked allocations included: exact, so
    /// past `u64::MAX` when huge allocations carry failures together.
    pub tainted_bytes: u128,
    /// Claims.
    pub claims: u64,
}

/// A line skipped by a replay with
/// [`keep_going`](super::ReplayOptions::keep_going) (the command's
/// `--keep-going`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The line's number.
    pub line: u64,
    /// What was wrong with it.
    pub error: String,
}

impl Report {
    /// Writes the report as SPEC §8 lays it out: one compact line of UTF-8
    /// JSON (non-ASCII not escaped), then a newline. Output is buffered here,
    /// so `w` need not be. It writes the lists as they are: a report of a
    /// replay without [`keep_lists`](super::ReplayOptions::keep_lists) has
    /// them empty (see [`Report`]).
    ///
    /// # Errors
    ///
    /// The output's error.
    pub fn write_json<W: Write>(&self, w: W) -> io::Result<()> {
        let mut out = io::BufWriter::new(w);
        // `From` keeps an I/O error's kind (a closed pipe stays `BrokenPipe`).
        serde_json::to_writer(&mut out, self).map_err(io::Error::from)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("format", "taintworld-report")?;
        m.serialize_entry("version", &1)?;
        m.serialize_entry("events", &self.events)?;
        m.serialize_entry("launches", &self.launches)?;
        m.serialize_entry("verdicts", &self.verdicts)?;
        m.serialize_entry("launch_results", &self.launch_results)?;
        m.serialize_entry("reads", &self.reads)?;
        m.serialize_entry("captures", &self.captures)?;
        m.serialize_entry("profiles", &self.profiles)?;
        m.serialize_entry("syncs", &self.syncs)?;
        m.serialize_entry("unresolved_bindings", &self.unresolved_bindings)?;
        m.serialize_entry("failures_minted", &self.failures_minted)?;
        m.serialize_entry("final", &self.final_state)?;
        m.serialize_entry("rejected", &self.rejected)?;
        m.end()
    }
}

impl Serialize for Verdicts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("ran", &self.ran)?;
        m.serialize_entry("failed", &self.failed)?;
        m.serialize_entry("skipped", &self.skipped)?;
        m.serialize_entry("dry_run", &self.dry_run)?;
        m.end()
    }
}

impl Serialize for LaunchResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self {
            LaunchResult::DryRun { launch, line } => {
                m.serialize_entry("launch", launch)?;
                m.serialize_entry("line", line)?;
                m.serialize_entry("verdict", "dry_run")?;
            }
            LaunchResult::Failed {
                launch,
                line,
                failure,
            } => {
                m.serialize_entry("launch", launch)?;
                m.serialize_entry("line", line)?;
                m.serialize_entry("verdict", "failed")?;
                m.serialize_entry("failure", failure)?;
            }
            LaunchResult::Skipped {
                launch,
                line,
                failure,
                needed,
            } => {
                m.serialize_entry("launch", launch)?;
                m.serialize_entry("line", line)?;
                m.serialize_entry("verdict", "skipped")?;
                m.serialize_entry("failure", failure)?;
                m.serialize_entry("needed", needed)?;
            }
            LaunchResult::ReplayFailed {
                graph,
                line,
                failure,
            } => {
                m.serialize_entry("replay", &true)?;
                m.serialize_entry("graph", graph)?;
                m.serialize_entry("line", line)?;
                m.serialize_entry("verdict", "failed")?;
                m.serialize_entry("failure", failure)?;
            }
            LaunchResult::ReplaySkipped {
                graph,
                line,
                failure,
                needed,
                launches,
            } => {
                m.serialize_entry("replay", &true)?;
                m.serialize_entry("graph", graph)?;
                m.serialize_entry("line", line)?;
                m.serialize_entry("verdict", "skipped")?;
                m.serialize_entry("failure", failure)?;
                m.serialize_entry("needed", needed)?;
                m.serialize_entry("launches", launches)?;
            }
            LaunchResult::HostWriteFailed { line, failure } => {
                m.serialize_entry("host_write", &true)?;
                m.serialize_entry("line", line)?;
                m.serialize_entry("verdict", "failed")?;
                m.serialize_entry("failure", failure)?;
            }
        }
        m.end()
    }
}

impl Serialize for ErrorInfo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("kind", &self.kind)?;
        m.serialize_entry("kernel", &self.kernel)?;
        m.serialize_entry("message", &self.message)?;
        m.end()
    }
}

impl Serialize for ChainHop {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("launch", &self.launch)?;
        m.serialize_entry("kernel", &self.kernel)?;
        m.serialize_entry("needed", &self.needed)?;
        m.end()
    }
}

impl TaintReport {
    /// The five keys a tainted read and a failed capture share, in order.
    fn serialize_into<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("failure", &self.failure)?;
        m.serialize_entry("error", &self.error)?;
        m.serialize_entry("occurrences", &self.occurrences)?;
        m.serialize_entry("chain", &self.chain)?;
        m.serialize_entry("truncated", &self.truncated)
    }
}

impl Serialize for ReadEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("line", &self.line)?;
        m.serialize_entry("memory", &self.memory)?;
        match &self.result {
            ReadResult::Clean => m.serialize_entry("result", "clean")?,
            ReadResult::Unresolved => m.serialize_entry("result", "unresolved")?,
            ReadResult::Tainted(report) => {
                m.serialize_entry("result", "tainted")?;
                report.serialize_into(&mut m)?;
            }
            ReadResult::DeviceFault(error) => {
                m.serialize_entry("result", "device_fault")?;
                m.serialize_entry("error", error)?;
            }
        }
        m.end()
    }
}

impl Serialize for CaptureEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("line", &self.line)?;
        m.serialize_entry("graph", &self.graph)?;
        match &self.result {
            CaptureResult::Ok => m.serialize_entry("result", "ok")?,
            CaptureResult::Failed(report) => {
                m.serialize_entry("result", "capture_failed")?;
                report.serialize_into(&mut m)?;
            }
        }
        m.end()
    }
}

impl Serialize for ProfileEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("line", &self.line)?;
        m.serialize_entry("profile", &self.profile)?;
        match &self.result {
            ProfileResult::Valid => m.serialize_entry("result", "valid")?,
            ProfileResult::Invalid { failure, error } => {
                m.serialize_entry("result", "invalid")?;
                m.serialize_entry("failure", failure)?;
                m.serialize_entry("error", error)?;
            }
        }
        m.end()
    }
}

impl Serialize for SyncEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("line", &self.line)?;
        match &self.result {
            SyncResult::Ok => m.serialize_entry("result", "ok")?,
            SyncResult::DeviceFault(error) => {
                m.serialize_entry("result", "device_fault")?;
                m.serialize_entry("error", error)?;
            }
        }
        m.end()
    }
}

impl Serialize for FinalState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("live_failures", &self.live_failures)?;
        m.serialize_entry("tainted_allocations", &self.tainted_allocations)?;
        m.serialize_entry("tainted_bytes", &self.tainted_bytes)?;
        m.serialize_entry("claims", &self.claims)?;
        m.end()
    }
}

impl Serialize for Rejected {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("line", &self.line)?;
        m.serialize_entry("error", &self.error)?;
        m.end()
    }
}
