//! `taintworld`: replay launch logs to see what one failure taints, inject
//! faults, and generate synthetic workloads.

// As the library (CONTRIBUTING.md): the command needs no unsafe code
// either, and its own-log look-up borrows stdout through `AsFd`.
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use taintworld::log::{
    Event, GenOptions, LogReader, LogWriter, ReadResult, Replay, ReplayError, ReplayOptions,
    Report, Shape, SkippedInjection, generate, gzip_named,
};

#[derive(Parser)]
#[command(
    name = "taintworld",
    version,
    about = "Which bytes of GPU memory can still be trusted: replay launch logs, inject faults, generate workloads."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a launch log and say what failed, what was skipped, and why
    /// each tainted read cannot be trusted.
    ///
    /// The log is JSON Lines, read as gzip when its name ends in `.gz` or
    /// its first bytes are gzip's. Exit status 0 when the replay ran to
    /// the end (with `--keep-going`, whatever it rejected), 2 on bad input
    /// (the error names the line), when the log cannot be read, or when it
    /// is also standard output (`replay LOG >> LOG`).
    Replay {
        /// The log; `-` reads standard input (where the system names it
        /// `/dev/stdin`).
        log: PathBuf,
        /// Process launch N (numbered from 0 in log order, as the report
        /// numbers launches) as if it failed (repeatable). A launch inside
        /// a capture window fails its capture, which then makes no graph,
        /// so the log's later replays of that graph become bad input: add
        /// `--keep-going` to list them and replay the rest.
        #[arg(long = "fail-launch", value_name = "N", allow_negative_numbers = true)]
        fail_launch: Vec<u64>,
        /// Print the SPEC §8 report as one line of JSON instead of a summary.
        #[arg(long)]
        json: bool,
        /// Skip bad lines (listed under `rejected`) instead of stopping.
        #[arg(long)]
        keep_going: bool,
        /// Treat unresolved bindings as bad input.
        #[arg(long)]
        strict: bool,
        /// Stream slots (overrides the log's header; default 8).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=u64::MAX), allow_negative_numbers = true)]
        max_streams: Option<u64>,
        /// Depth at which a skip record's cause is cut (overrides the log's
        /// header; default 1024). A cut record starts the count again at 1,
        /// so a read's chain ends at the newest cut, however long it ran;
        /// any value from 4294967295 up keeps every chain whole.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=u64::MAX), allow_negative_numbers = true)]
        chain_limit: Option<u64>,
        /// Check each graph replay's launches as launches: a good replay
        /// skips the captured launches that read tainted bytes, and taints
        /// what they write. For graphs that read their own state, such as
        /// a decoding pass's key/value cache; SPEC §6's replay reads
        /// nothing, so without this flag a replay after a failed one
        /// releases the state it reads.
        #[arg(long)]
        checked_replays: bool,
    },
    /// Write a valid synthetic launch log, deterministic for a seed.
    Gen {
        /// The seed.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        seed: u64,
        /// How many launches.
        #[arg(long, allow_negative_numbers = true)]
        launches: u64,
        /// How many streams.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=u64::MAX), allow_negative_numbers = true)]
        streams: u64,
        /// Probability that a launch's outcome is a failure, from 0 to 1.
        /// A launch that reads tainted bytes is skipped whatever its
        /// outcome, so where launches read earlier outputs (chain,
        /// training-step) one early failure skips nearly all the rest.
        #[arg(long, default_value_t = 0.0, value_parser = probability, allow_negative_numbers = true)]
        fail_rate: f64,
        /// The workload's shape.
        #[arg(long, value_enum, default_value_t = ShapeArg::Random)]
        shape: ShapeArg,
        /// Write here instead of stdout (gzip when it ends in `.gz`); the log
        /// is written to `FILE.partial` and renamed when whole.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Copy, Clone, ValueEnum)]
enum ShapeArg {
    /// Each launch reads the previous launch's output, round a ring of
    /// buffers.
    Chain,
    /// One input read by every launch, each writing its own output.
    Fanout,
    /// Random bindings, accesses and ranges over a churning pool of
    /// allocations.
    Random,
    /// Training steps of a small layered model: forward, loss, backward
    /// and optimizer launches, the loss read back after each step.
    TrainingStep,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return not_parsed(&e),
    };
    let result = match cli.command {
        Command::Replay {
            log,
            fail_launch,
            json,
            keep_going,
            strict,
            max_streams,
            chain_limit,
            checked_replays,
        } => {
            let options = ReplayOptions {
                fail_launches: fail_launch.into_iter().collect(),
                keep_going,
                strict,
                max_streams,
                chain_limit,
                keep_lists: json,
                checked_replays,
            };
            run_replay(&log_path(log), options, json)
        }
        Command::Gen {
            seed,
            launches,
            streams,
            fail_rate,
            shape,
            output,
        } => run_gen(
            GenOptions {
                seed,
                launches,
                streams,
                fail_rate,
                shape: match shape {
                    ShapeArg::Chain => Shape::Chain,
                    ShapeArg::Fanout => Shape::Fanout,
                    ShapeArg::Random => Shape::Random,
                    ShapeArg::TrainingStep => Shape::TrainingStep,
                },
            },
            output,
        )
        .map_err(|e| format!("error: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            to_stderr(&message);
            ExitCode::from(2)
        }
    }
}

/// What `Cli::parse` does with `--help`, `--version` or a usage error —
/// prints it, and exits 0 for the first two and 2 for the last — except
/// that help or version text that could not be written to stdout is an
/// error (a reader gone away aside), where clap's own exit says 0 with the
/// text lost.
fn not_parsed(e: &clap::Error) -> ExitCode {
    let code = u8::try_from(e.exit_code()).unwrap_or(2);
    let printed = e.print();
    if e.use_stderr() {
        return ExitCode::from(code);
    }
    let written = printed.and_then(|()| io::stdout().flush());
    match quiet_on_closed_pipe(written) {
        Ok(()) => ExitCode::from(code),
        Err(written) => {
            let what = match e.kind() {
                clap::error::ErrorKind::DisplayVersion => "version",
                _ => "help",
            };
            to_stderr(&format!("error: writing the {what}: {written}"));
            ExitCode::from(2)
        }
    }
}

/// Writes `message` and a newline to stderr. A stderr that cannot be
/// written (a full disk, a closed pipe) leaves the message nowhere to go:
/// it is dropped, and the exit status still tells how the run went, where
/// `eprintln!` would panic and exit 101 instead.
fn to_stderr(message: &str) {
    let _ = writeln!(io::stderr().lock(), "{message}");
}

/// A write to stdout that stopped because the reader went away (`| head`)
/// is not an error: whoever reads has what they wanted.
fn quiet_on_closed_pipe(written: io::Result<()>) -> io::Result<()> {
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// A probability: a number from 0 to 1 (not NaN).
fn probability(text: &str) -> Result<f64, String> {
    let p: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("'{text}' is not a probability (from 0 to 1)"))
    }
}

/// The file a `LOG` argument names: `-`, as most commands take it, is
/// standard input, which the reader opens by its name in `/dev` (gzip or
/// not: the reader knows gzip by its first bytes).
fn log_path(log: PathBuf) -> PathBuf {
    if cfg!(unix) && log.as_os_str() == "-" {
        PathBuf::from("/dev/stdin")
    } else {
        log
    }
}

fn run_replay(path: &PathBuf, options: ReplayOptions, json: bool) -> Result<(), String> {
    // The reader's I/O errors name the file already.
    let asked = options.fail_launches.clone();
    // The bar follows the bytes read of the log file (before any
    // decompression): `wrap` gives it the file's size as its length.
    let progress = Progress::new(REPLAY_BAR, 0);
    let stdout = stdout_file();
    let mut own_log = false;
    let reader = LogReader::open_with(path, |file| {
        own_log = is_stdout(&file, stdout);
        progress.wrap(file)
    })
    .map_err(|e| format!("error: {e}"))?;
    if own_log {
        return Err(format!(
            "error: {} is also standard output: the report would be written into the log \
             it replays (a `>` to it empties it before the replay starts); write the report to \
             another file",
            path.display()
        ));
    }
    let mut replay = Replay::new(options).map_err(|e| format!("error: {e}"))?;
    // The last line read that was an event or bad input: 0 when the log
    // held none before it stopped.
    let mut last_line = 0;
    let replayed = replay.apply_all(reader, |line| {
        last_line = line;
        progress.tick(line, |bar| bar.set_message(HumanCount(line).to_string()));
    });
    progress.finish();
    replayed.map_err(|e| match e {
        ReplayError::BadLine { line, error, .. } => match stopped_after_injecting(&replay) {
            Some(note) => format!("error: line {line}: {error}\n{note}"),
            None => format!("error: line {line}: {error}"),
        },
        ReplayError::Io(e)
            if e.kind() == io::ErrorKind::UnexpectedEof
                && path != Path::new("/dev/stdin")
                && last_line > 0 =>
        {
            // Only the gzip decoder ends a read so: the file is cut short.
            // Cut (or empty) before its first line, it holds no line to
            // replay, and the error alone says so.
            format!(
                "error: {e}\nnote: a gzip log cut short is bad input whole; to replay the \
                 lines it holds, decompress them and replay those: \
                 zcat {} | taintworld replay - --keep-going",
                path.display()
            )
        }
        // Any other read error, and the options' (never from the command,
        // whose parser takes neither option at 0).
        e => format!("error: {e}"),
    })?;
    // The summary's parts, which `--json` does not print, are not made.
    let summary = (!json).then(|| Summary::of(&replay));
    let skipped_injections = replay.skipped_injections().to_vec();
    let (report, _) = replay.finish();
    let stdout = io::stdout().lock();
    let written = match summary {
        Some(summary) => summary.write(&report, stdout),
        None => report.write_json(stdout),
    };
    quiet_on_closed_pipe(written).map_err(|e| format!("error: writing the report: {e}"))?;
    if let Some(note) = past_the_last_launch(&asked, report.launches) {
        to_stderr(&note);
    }
    if let Some(note) = skipped_anyway(&skipped_injections) {
        to_stderr(&note);
    }
    Ok(())
}

/// The device and inode of the regular file stdout writes to, if it is
/// one (`replay LOG >> LOG`, or `> LOG`, which the shell empties first),
/// for [`is_stdout`]. Taken before the log is opened: the descriptor its
/// look-up borrows for a moment is then the one the log's open needs, so
/// a run with no descriptor to spare cannot open its log either. Taken
/// after the open, such a run found no descriptor to look with and
/// replayed into its own log (`ulimit -n 4`, `tests/cli.rs`).
#[cfg(unix)]
fn stdout_file() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let out = io::stdout().as_fd().try_clone_to_owned().ok()?;
    let out = File::from(out).metadata().ok()?;
    out.is_file().then(|| (out.dev(), out.ino()))
}

/// Elsewhere there is no device and inode to compare: nothing is taken.
#[cfg(not(unix))]
fn stdout_file() -> Option<(u64, u64)> {
    None
}

/// Whether `file`, the log, is the regular file `stdout` names (from
/// [`stdout_file`]), as `cat` asks of its input and output.
#[cfg(unix)]
fn is_stdout(file: &File, stdout: Option<(u64, u64)>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(out) = stdout else {
        return false;
    };
    file.metadata()
        .is_ok_and(|log| log.is_file() && (log.dev(), log.ino()) == out)
}

/// Elsewhere there is no device and inode to compare: never refused.
#[cfg(not(unix))]
fn is_stdout(_: &File, _: Option<(u64, u64)>) -> bool {
    false
}

/// The note for a replay with `--fail-launch` that stopped at a bad line:
/// a log recorded without the injected failures can hold lines that only
/// they make bad input — a replay of a graph whose capture they failed,
/// which made no graph (SPEC §6) — and `--keep-going` lists such lines and
/// replays the rest. `None` when no injection took effect before the bad
/// line: none was asked for, every launch asked for lies past it, or each
/// was skipped anyway. One injection that took effect is "the injected
/// failure", more "the injected failures".
fn stopped_after_injecting(replay: &Replay) -> Option<String> {
    let (failures, they) = match replay.injected().take(2).count() {
        0 => return None,
        1 => ("failure", "it"),
        _ => ("failures", "they"),
    };
    Some(format!(
        "note: --fail-launch: the injected {failures} can make a later line bad input \
         (a replay of a graph whose capture {they} failed, which made no graph); \
         --keep-going lists such lines and replays the rest"
    ))
}

/// The note for `--fail-launch` numbers whose launch was skipped: a skip
/// takes precedence over the launch's outcome (SPEC §7), so the
/// failure injected there changed nothing, and the report looks as if the
/// flag had not been given. `None` when no such launch was skipped.
fn skipped_anyway(skipped: &[SkippedInjection]) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let launches = first_ten(
        skipped
            .iter()
            .map(|s| format!("{} (line {})", s.launch, s.line)),
        skipped.len() as u64,
    );
    let (launch, were) = if skipped.len() == 1 {
        ("launch", "was")
    } else {
        ("launches", "were")
    };
    Some(format!(
        "note: --fail-launch: {launch} {launches} read tainted bytes and {were} skipped, which wins over any outcome, so nothing was injected there"
    ))
}

/// The note for `--fail-launch` numbers the replay never reached: SPEC
/// Appendix A has such a number do nothing, and the report shows nothing of it, so
/// the command says so rather than leave a typo looking like a failure
/// that tainted nothing. `None` when every number was a launch.
fn past_the_last_launch(asked: &BTreeSet<u64>, launches: u64) -> Option<String> {
    let past: Vec<u64> = asked.range(launches..).copied().collect();
    if past.is_empty() {
        return None;
    }
    let numbers = first_ten(past.iter().map(u64::to_string), past.len() as u64);
    let had = match launches {
        0 => "the log has no launches".to_owned(),
        1 => "the log has 1 launch, number 0".to_owned(),
        n => format!("the log has {n} launches, 0 to {}", n - 1),
    };
    Some(format!(
        "note: --fail-launch {numbers}: past the last launch ({had}), so nothing was injected there"
    ))
}

/// The first ten of `total` items (`items` may hold only those),
/// comma-separated, and how many more there are: "1, 2, … 10 and 3 more".
/// One shape for every list the command cuts short.
fn first_ten(items: impl Iterator<Item = String>, total: u64) -> String {
    const LISTED: usize = 10;
    let mut list = items.take(LISTED).collect::<Vec<_>>().join(", ");
    if total > LISTED as u64 {
        list.push_str(&format!(" and {} more", total - LISTED as u64));
    }
    list
}

/// A replay's bar, on a log file of known size.
const REPLAY_BAR: &str =
    "{spinner} replaying [{bar:16}] {percent:>3}% of {total_bytes}, line {msg}, {eta} left";
/// A replay's line, on a log of no size known beforehand (a pipe).
const REPLAY_SPINNER: &str = "{spinner} replaying: line {msg} after {elapsed}";
/// `gen`'s bar.
const GEN_BAR: &str =
    "{spinner} generating [{bar:16}] launch {human_pos} of {human_len}, {eta} left";

/// A progress bar on stderr, shown only on a terminal and only once a run
/// has taken over a second: how far the run is through its whole (the
/// log's bytes, or the launches asked for) and about how long is left.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: std::cell::Cell<bool>,
}

impl Progress {
    /// A hidden bar of `len` units drawn with `template` (indicatif's
    /// template syntax), or none off a terminal.
    fn new(template: &str, len: u64) -> Self {
        Progress::drawn_if(io::stderr().is_terminal(), template, len)
    }

    /// [`new`](Self::new), with a bar only if `terminal`.
    fn drawn_if(terminal: bool, template: &str, len: u64) -> Self {
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        });
        Progress {
            bar,
            started: Instant::now(),
            shown: std::cell::Cell::new(false),
        }
    }

    /// `file`, read through the bar when there is one, which then takes
    /// the file's size as its length. A log with no size known beforehand
    /// (a pipe, say) gets a count of lines and the time instead.
    fn wrap(&self, file: File) -> Box<dyn io::Read + Send> {
        let Some(bar) = &self.bar else {
            return Box::new(file);
        };
        match known_size(&file) {
            Some(size) => bar.set_length(size),
            None => {
                if let Ok(style) = ProgressStyle::with_template(REPLAY_SPINNER) {
                    bar.set_style(style);
                }
            }
        }
        Box::new(bar.wrap_read(file))
    }

    /// Called at each unit of work (`count` so far): every 4096th shows the
    /// bar once a second has passed and lets `update` move it.
    fn tick(&self, count: u64, update: impl FnOnce(&ProgressBar)) {
        let Some(bar) = &self.bar else { return };
        if !count.is_multiple_of(4096) {
            return;
        }
        if !self.shown.get() && self.started.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown.set(true);
        }
        update(bar);
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The size of a log file known before reading it: a regular file's, if
/// it has any bytes. A pipe, a device or an empty file has none to measure
/// progress against.
fn known_size(file: &File) -> Option<u64> {
    let m = file.metadata().ok()?;
    (m.is_file() && m.len() > 0).then_some(m.len())
}

/// How many hops of a chain the summary prints before eliding.
const CHAIN_SHOWN: usize = 12;

/// Why a read shown in the summary did not resolve, as far as the replay
/// knew.
enum Unresolved {
    /// Its memory was freed at this line (and not made again since).
    FreedAt(u64),
    /// Its memory was live on slot `live`, not on `read`, the one the
    /// read's stream folds onto.
    LiveOn { live: u64, read: u64 },
    /// No allocation of its memory id was live, and no free of it on the
    /// read's slot is remembered.
    NotLive,
}

/// The human summary's parts that the report does not keep (without
/// `--json` its lists are empty).
struct Summary {
    failures: Vec<(u64, taintworld::log::FailureTally)>,
    untallied: taintworld::log::Untallied,
    rejected: u64,
    reads: Vec<taintworld::log::ReadEntry>,
    /// Tainted reads in all, shown or not.
    tainted_reads: u64,
    /// The unresolved reads shown, each with why it did not resolve, as
    /// far as the replay knew.
    unresolved: Vec<(taintworld::log::ReadEntry, Unresolved)>,
    /// Unresolved reads in all, shown or not.
    unresolved_reads: u64,
    failed_captures: u64,
    failed_host_ops: u64,
    skipped_replays: u64,
    invalid_profiles: u64,
    /// Where the first of each of the four counts above happened, and the
    /// first unresolved binding.
    first_lines: taintworld::log::FirstLines,
    device_fault: Option<(u64, taintworld::ErrorInfo)>,
    fault_answers: taintworld::log::FaultAnswers,
    /// What the first live failures taint at the end, and the rest.
    carriers: (
        Vec<taintworld::log::Carriers>,
        taintworld::log::CarriersRest,
    ),
}

impl Summary {
    fn of(replay: &Replay) -> Self {
        Summary {
            failures: replay
                .tallies()
                .iter()
                .map(|(id, t)| (*id, t.clone()))
                .collect(),
            untallied: replay.untallied(),
            rejected: replay.rejected(),
            reads: replay
                .tainted_reads()
                .take(taintworld::log::SUMMARY_READS)
                .cloned()
                .collect(),
            tainted_reads: replay.tainted_read_count(),
            unresolved: replay
                .unresolved_reads()
                .take(taintworld::log::SUMMARY_READS)
                .map(|r| {
                    let live = replay.unresolved_read_live_on(r.line);
                    let why = match (live, replay.unresolved_read_slot(r.line)) {
                        (Some(live), Some(read)) => Unresolved::LiveOn { live, read },
                        _ => replay
                            .unresolved_read_freed_at(r.line)
                            .map_or(Unresolved::NotLive, Unresolved::FreedAt),
                    };
                    (r.clone(), why)
                })
                .collect(),
            unresolved_reads: replay.unresolved_read_count(),
            failed_captures: replay.failed_captures(),
            failed_host_ops: replay.failed_host_writes_and_replays(),
            skipped_replays: replay.skipped_replays(),
            invalid_profiles: replay.invalid_profiles(),
            first_lines: replay.first_lines(),
            device_fault: replay.device_fault(),
            fault_answers: replay.fault_answers(),
            carriers: replay.carriers(taintworld::log::SUMMARY_FAILURES),
        }
    }

    fn write(&self, report: &Report, out: impl Write) -> io::Result<()> {
        let mut out = BufWriter::new(out);
        let v = &report.verdicts;
        writeln!(
            out,
            "{}, {}: {} ran, {} failed, {} skipped, {}",
            Count(report.events, "event", "events"),
            Count(report.launches, "launch", "launches"),
            v.ran,
            v.failed,
            v.skipped,
            Count(v.dry_run, "dry run", "dry runs")
        )?;
        if self.failures.is_empty() {
            writeln!(out, "no failures")?;
        }
        for (id, t) in &self.failures {
            write!(
                out,
                "failure {id}: {} in {}: {} ({}, skipped {}",
                Shown(&t.error.kind),
                Shown(&t.error.kernel),
                Shown(&t.error.message),
                Count(t.occurrences, "occurrence", "occurrences"),
                Count(t.skipped, "launch", "launches"),
            )?;
            // How many of the skipped launches were captured ones, in
            // words that agree with their count: "1 of them a captured
            // one", never "1 of them captured ones".
            match (t.skipped_in_replays, t.skipped) {
                (0, _) => {}
                (1, 1) => write!(out, ", a captured one in a graph replay")?,
                (n, all) if n == all => write!(out, ", all captured ones in graph replays")?,
                (1, _) => write!(out, ", 1 of them a captured one in a graph replay")?,
                (n, _) => write!(out, ", {n} of them captured ones in graph replays")?,
            }
            match freed_while_tainted(t.freed, t.freed_bytes) {
                Some(freed) => writeln!(out, "; {freed})")?,
                None => writeln!(out, ")")?,
            }
        }
        let left_out = self.untallied;
        if left_out != taintworld::log::Untallied::default() {
            writeln!(
                out,
                "… failures past the first {} failed {} (launches, host writes, replays, reservations) and skipped {} (--json lists the launches, host writes and replays by failure id)",
                taintworld::log::SUMMARY_FAILURES,
                Count(left_out.failed, "more operation", "more operations"),
                Count(left_out.skipped, "more launch", "more launches"),
            )?;
            if let Some(freed) = freed_while_tainted(left_out.freed, left_out.freed_bytes) {
                writeln!(out, "… and their {freed}")?;
            }
        }
        for read in &self.reads {
            if let ReadResult::Tainted(r) = &read.result {
                writeln!(
                    out,
                    "line {}: read of memory {} is tainted by failure {} ({} in {}: {})",
                    read.line,
                    read.memory,
                    r.failure,
                    Shown(&r.error.kind),
                    Shown(&r.error.kernel),
                    Shown(&r.error.message)
                )?;
                // A long chain shows its newest hops and the one next to
                // the root; the JSON report has them all.
                let hop = |out: &mut BufWriter<_>, h: &taintworld::ChainHop| {
                    writeln!(
                        out,
                        "    skipped launch {} ({}), which needed memory {}",
                        h.launch,
                        Shown(&h.kernel),
                        h.needed
                    )
                };
                let shown = CHAIN_SHOWN.min(r.chain.len());
                for h in &r.chain[..shown] {
                    hop(&mut out, h)?;
                }
                if let Some((last, between)) = r.chain[shown..].split_last() {
                    if !between.is_empty() {
                        let between = Count(between.len(), "more hop", "more hops");
                        writeln!(out, "    … {between} …")?;
                    }
                    hop(&mut out, last)?;
                }
                if r.truncated {
                    writeln!(out, "    … chain cut at chain_limit")?;
                }
            }
        }
        let more = ("more tainted read", "more tainted reads");
        reads_left_out(&mut out, self.tainted_reads, self.reads.len(), more)?;
        // A read the log asked for gets an answer here even when it has
        // none to give: its memory was not live on the stream it named.
        for (read, why) in &self.unresolved {
            let (line, memory) = (read.line, read.memory);
            let because = match why {
                Unresolved::FreedAt(freed) => format!("it was freed at line {freed}"),
                Unresolved::LiveOn { live, read } => {
                    format!("it was live on slot {live}, not on slot {read}, the read's stream's")
                }
                Unresolved::NotLive => "no allocation of that id was live".to_owned(),
            };
            writeln!(
                out,
                "line {line}: read of memory {memory} did not resolve ({because})"
            )?;
        }
        let more = ("more unresolved read", "more unresolved reads");
        reads_left_out(&mut out, self.unresolved_reads, self.unresolved.len(), more)?;
        // The outcomes counted here and listed by --json, each with the
        // line of its first: (count, first, one, many, what happened).
        let first = &self.first_lines;
        let counted = [
            (
                self.failed_captures,
                first.failed_capture,
                "capture",
                "captures",
                "failed",
            ),
            (
                self.failed_host_ops,
                first.failed_host_op,
                "host write or graph replay",
                "host writes or graph replays",
                "failed",
            ),
            (
                self.skipped_replays,
                first.skipped_replay,
                "graph replay",
                "graph replays",
                "skipped a launch that read tainted bytes",
            ),
            (
                self.invalid_profiles,
                first.invalid_profile,
                "profile",
                "profiles",
                "invalid",
            ),
        ];
        for (n, at, one, many, what) in counted {
            if n > 0 {
                let at = AtLines(n, at, true);
                writeln!(out, "{} {what}{at}", Count(n, one, many))?;
            }
        }
        if let Some((line, e)) = &self.device_fault {
            let answers = self.fault_answers;
            writeln!(
                out,
                "line {line}: device fault ({}: {}); {} and {} after it answered device_fault",
                Shown(&e.kind),
                Shown(&e.message),
                Count(answers.reads, "read", "reads"),
                Count(answers.syncs, "sync", "syncs"),
            )?;
        }
        if report.unresolved_bindings > 0 {
            let unresolved = Count(
                report.unresolved_bindings,
                "unresolved binding",
                "unresolved bindings",
            );
            // The report lists no bindings to point to: the line alone.
            let at = AtLines(report.unresolved_bindings, first.unresolved_binding, false);
            writeln!(out, "{unresolved}{at}")?;
        }
        let f = &report.final_state;
        writeln!(
            out,
            "final: {}, {}, {}, {}",
            Count(f.live_failures, "live failure", "live failures"),
            Count(
                f.tainted_allocations,
                "tainted allocation",
                "tainted allocations"
            ),
            Count(f.tainted_bytes, "tainted byte", "tainted bytes"),
            Count(f.claims, "claim", "claims")
        )?;
        // Which buffers each failure taints, the first failures by id.
        let (first, rest) = &self.carriers;
        for p in first {
            writeln!(
                out,
                "failure {} taints memory {} ({}, {})",
                p.failure,
                first_ten(p.memory.iter().map(u64::to_string), p.allocations),
                Count(p.allocations, "allocation", "allocations"),
                Count(p.bytes, "byte", "bytes"),
            )?;
        }
        if rest.failures > 0 {
            writeln!(
                out,
                "… {} {} {}",
                Count(rest.failures, "more failure", "more failures"),
                if rest.failures == 1 {
                    "taints"
                } else {
                    "taint"
                },
                Count(rest.bytes, "more byte", "more bytes"),
            )?;
        }
        // A live failure no allocation carries is pinned by the capture
        // window it doomed, which has not ended: the final count holds it.
        let carrying = (first.len() as u64).saturating_add(rest.failures);
        let pinned = f.live_failures.saturating_sub(carrying);
        if pinned > 0 {
            let (verb, windows) = if pinned == 1 {
                ("taints", "the open capture window it doomed holds it")
            } else {
                ("taint", "the open capture windows they doomed hold them")
            };
            writeln!(
                out,
                "{} {verb} no byte: only {windows}",
                Count(pinned, "live failure", "live failures"),
            )?;
        }
        if self.rejected > 0 {
            writeln!(out, "{} rejected:", Count(self.rejected, "line", "lines"))?;
            let shown = report.rejected.len().min(taintworld::log::SUMMARY_REJECTED);
            for r in &report.rejected[..shown] {
                writeln!(out, "    line {}: {}", r.line, r.error)?;
            }
            let more = self.rejected.saturating_sub(shown as u64);
            if more > 0 {
                writeln!(
                    out,
                    "    … {more} more (--keep-going --json lists every one)"
                )?;
            }
        }
        out.flush()
    }
}

/// The words for how many allocations were freed while they carried a
/// failure, if any: what it tainted that the
/// program then let go, which the final counts no longer show.
fn freed_while_tainted(freed: u64, bytes: u128) -> Option<String> {
    (freed > 0).then(|| {
        format!(
            "{} freed while tainted, {}",
            Count(freed, "allocation", "allocations"),
            Count(bytes, "byte", "bytes")
        )
    })
}

/// The summary's line for the reads of one answer it did not show, if any:
/// `total` of them, `shown` shown.
fn reads_left_out(
    out: &mut impl Write,
    total: u64,
    shown: usize,
    (one, many): (&'static str, &'static str),
) -> io::Result<()> {
    let unshown = total.saturating_sub(shown as u64);
    if unshown > 0 {
        writeln!(
            out,
            "… {} (--json lists every read)",
            Count(unshown, one, many)
        )?;
    }
    Ok(())
}

/// A count and the noun that goes with it, one or many: `1 launch`,
/// `0 launches`, `2 launches`.
struct Count<N>(N, &'static str, &'static str);

impl<N: fmt::Display + PartialEq + From<u8>> fmt::Display for Count<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Count(n, one, many) = self;
        write!(f, "{n} {}", if *n == N::from(1) { one } else { many })
    }
}

/// Where the summary's counted outcomes happened, after their count: `, at
/// line 4` for one; for more, `, the first at line 4`, and ` (--json lists
/// them)` where the report lists them (the third field); nothing when the
/// line is not known.
struct AtLines(u64, Option<u64>, bool);

impl fmt::Display for AtLines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AtLines(_, None, _) => Ok(()),
            AtLines(1, Some(line), _) => write!(f, ", at line {line}"),
            AtLines(_, Some(line), listed) => {
                write!(f, ", the first at line {line}")?;
                if listed {
                    write!(f, " (--json lists them)")?;
                }
                Ok(())
            }
        }
    }
}

/// A string from the log, shown in the summary with its control
/// characters, the line and paragraph separators and the bidirectional
/// controls escaped as Rust writes them (`\n`, `\u{1b}`, `\u{202e}`), and
/// a backslash doubled so that an escape reads one way only: a log's
/// kernel names and messages are text to read, never line breaks,
/// terminal commands or text that reorders the rest of the line. Other
/// characters (accents, combining marks) are shown as they are; the JSON
/// report carries every string exactly.
struct Shown<'a>(&'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            let bidi = matches!(
                c,
                '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            );
            let separator = matches!(c, '\u{2028}' | '\u{2029}');
            if c.is_control() || c == '\\' || bidi || separator {
                write!(f, "{}", c.escape_debug())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

fn run_gen(options: GenOptions, output: Option<PathBuf>) -> io::Result<()> {
    let progress = Progress::new(GEN_BAR, options.launches);
    let written = match &output {
        None => {
            let stdout = io::stdout().lock();
            let written = write_log(&options, stdout, &progress, &Interrupts::none());
            quiet_on_closed_pipe(written.map(drop))
                .map_err(|e| io::Error::new(e.kind(), format!("writing the log: {e}")))
        }
        Some(path) => gen_to_file(&options, path, &progress),
    };
    progress.finish();
    written
}

/// `gen -o PATH`: the log is written to `PATH.partial` and renamed to
/// `PATH` when whole, so that a run that is interrupted or fails never
/// leaves a cut log under the name asked for (a plain log cut at a line's
/// end would replay as a shorter one). A failed run removes the `.partial`
/// file, and so does one interrupted by a signal it catches
/// ([`Interrupts`]); one killed outright (SIGKILL, a machine that stops)
/// leaves it, its name saying what it is.
///
/// As a lock file would be, `PATH.partial` is made new, never opened
/// where it exists (another `gen` may be writing it, or it is a link to
/// something else), and an existing `PATH` is replaced only if it could
/// have been written in place, keeping its permissions: the rename would
/// otherwise ignore them. `PATH` that exists and is not a plain file (a
/// device such as `/dev/stdout`, a pipe, a symbolic link) is written in
/// place, as a rename would replace it rather than write to it.
fn gen_to_file(options: &GenOptions, path: &Path, progress: &Progress) -> io::Result<()> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let cannot_create = |at: &Path, e: io::Error| {
        io::Error::new(e.kind(), format!("cannot create {}: {e}", at.display()))
    };
    let gzip = gzip_named(path);
    let Some(partial) = partial_path(path) else {
        // Written in place, `PATH` may be a pipe (`-o /dev/stdout | head`),
        // whose reader going away is no error, as for `gen | head`.
        let file = File::create(path).map_err(|e| cannot_create(path, e))?;
        let written = write_log_file(options, file, gzip, progress, &Interrupts::none()).map(drop);
        return quiet_on_closed_pipe(written).map_err(named);
    };
    let kept = match std::fs::metadata(path) {
        Ok(m) => {
            OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| cannot_create(path, e))?;
            Some(m.permissions())
        }
        Err(_) => None,
    };
    // Caught from before the partial file exists, so that no signal ends
    // the run between its making and the catch.
    let interrupts = Interrupts::catch();
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&partial)
        .map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => io::Error::new(
                e.kind(),
                format!(
                    "{} exists: another gen may be writing {}, or one was interrupted; \
                     remove it to go on",
                    partial.display(),
                    path.display()
                ),
            ),
            _ => cannot_create(&partial, e),
        })?;
    // The bytes reach the disk before the name does: a machine that
    // crashes just after the rename then holds the whole log under `PATH`
    // (or, should the rename itself be lost, the file that was there),
    // never an empty or cut one.
    let placed = write_log_file(options, file, gzip, progress, &interrupts)
        .and_then(|file| file.sync_all())
        .and_then(|()| kept.map_or(Ok(()), |p| std::fs::set_permissions(&partial, p)))
        .and_then(|()| std::fs::rename(&partial, path));
    if let Err(e) = &placed {
        // The partial file is this run's own: it was made new.
        let removed = std::fs::remove_file(&partial);
        if let Some(signal) = interrupts.caught() {
            // Ended as the signal would have ended it, once the file is
            // gone: what sent it sees the run die of it. The error is the
            // one the catch stopped the run with, which names the signal.
            progress.finish();
            let left = match removed {
                Ok(()) => format!("{} removed", partial.display()),
                Err(e) => format!("{} left: {e}", partial.display()),
            };
            to_stderr(&format!("error: {}: {e}; {left}", path.display()));
            interrupts.end(signal);
        }
    }
    placed.map_err(named)
}

/// The signals `gen -o` catches while its `.partial` file exists. Their
/// default actions would end the run at once and leave the file behind,
/// which the next run refuses to overwrite; caught, the run removes it
/// first:
///
/// * SIGINT and SIGTERM stop the run before its next line; it removes its
///   partial file and then dies of the same signal, so that what sent it
///   (a shell, a job runner) sees the interruption it asked for. A second
///   one while the run is stopping (on a disk that hangs, say) ends it at
///   once, with status 128 + the signal's number. One that comes after
///   the last line, while the whole log is synced and renamed, lets the
///   run finish: what it would stop is done.
/// * SIGXFSZ, sent when a write passes the file-size limit (`ulimit -f`),
///   is only caught: the write then fails with "File too large", which the
///   run reports as any failed write, removing its partial file.
///
/// Only `gen -o` catches them: `gen` to stdout leaves nothing behind, and
/// a replay writes no file. Off Unix, or where the catch cannot be set up,
/// nothing is caught and the signals act as they always have.
struct Interrupts {
    /// The number of the last SIGINT or SIGTERM caught, or 0.
    caught: Arc<AtomicUsize>,
}

impl Interrupts {
    /// Catches nothing.
    fn none() -> Self {
        Interrupts {
            caught: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Catches the signals, from now until the process ends.
    #[cfg(unix)]
    fn catch() -> Self {
        use signal_hook::consts::{SIGINT, SIGTERM, SIGXFSZ};
        use signal_hook::flag;
        let interrupts = Interrupts::none();
        let again = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // A registration that fails leaves that signal's default action,
        // which is how every signal acted before the catch: nothing to
        // report beyond the `.partial` file it may leave.
        for signal in [SIGINT, SIGTERM] {
            let Ok(number) = usize::try_from(signal) else {
                continue;
            };
            // In this order: the first signal finds the shutdown unarmed,
            // then arms it; a second finds it armed.
            let _ = flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(&again));
            let _ = flag::register(signal, Arc::clone(&again));
            let _ = flag::register_usize(signal, Arc::clone(&interrupts.caught), number);
        }
        let _ = flag::register(SIGXFSZ, Arc::new(std::sync::atomic::AtomicBool::new(false)));
        interrupts
    }

    /// Catches nothing: off Unix the signals act as they always have.
    #[cfg(not(unix))]
    fn catch() -> Self {
        Interrupts::none()
    }

    /// The last SIGINT or SIGTERM caught, if one was.
    fn caught(&self) -> Option<i32> {
        match self.caught.load(Ordering::SeqCst) {
            0 => None,
            n => i32::try_from(n).ok(),
        }
    }

    /// Ends the process as `signal`'s default action would, or returns if
    /// it cannot.
    #[cfg(unix)]
    fn end(&self, signal: i32) {
        let _ = signal_hook::low_level::emulate_default_handler(signal);
    }

    /// Returns: off Unix no signal is caught, so none is to be ended by.
    #[cfg(not(unix))]
    fn end(&self, _signal: i32) {}

    /// An error that stops the run at its next line, once a signal is
    /// caught.
    fn check(&self) -> io::Result<()> {
        match self.caught() {
            None => Ok(()),
            Some(signal) => Err(io::Error::other(format!(
                "interrupted by {}",
                signal_name(signal)
            ))),
        }
    }
}

/// A signal's name (`SIGINT`), or its number where it has none known.
fn signal_name(signal: i32) -> String {
    #[cfg(unix)]
    if let Some(name) = signal_hook::low_level::signal_name(signal) {
        return name.to_owned();
    }
    format!("signal {signal}")
}

/// `PATH.partial` for [`gen_to_file`], or `None` to write `PATH` in place:
/// when it exists and is not a plain file, or cannot be looked at (a
/// path through a file, say, which writing in place then names).
fn partial_path(path: &Path) -> Option<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        _ => return None,
    }
    let mut name = path.file_name()?.to_owned();
    name.push(".partial");
    Some(path.with_file_name(name))
}

/// Writes the log `options` generate to `file`, gzipped or not, and hands
/// the file back, its buffers flushed to it, for the caller to sync.
fn write_log_file(
    options: &GenOptions,
    file: File,
    gzip: bool,
    progress: &Progress,
    interrupts: &Interrupts,
) -> io::Result<File> {
    if gzip {
        let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        // Finished here, not on drop, so that an error writing the gzip
        // trailer is reported rather than lost.
        write_log(options, gz, progress, interrupts).and_then(|gz| gz.finish())
    } else {
        write_log(options, file, progress, interrupts)
    }
}

/// Writes the log `options` generate to `sink`, flushed, and hands the sink
/// back; stops with an error at the first line after `interrupts` caught
/// a signal.
fn write_log<W: Write>(
    options: &GenOptions,
    sink: W,
    progress: &Progress,
    interrupts: &Interrupts,
) -> io::Result<W> {
    let mut writer = LogWriter::new(BufWriter::new(sink));
    let (mut events, mut launches) = (0u64, 0u64);
    generate(options, |event| {
        interrupts.check()?;
        events += 1;
        if matches!(event, Event::Launch { .. }) {
            launches += 1;
        }
        progress.tick(events, |bar| bar.set_position(launches));
        writer.write_event(&event)
    })?;
    writer.into_inner().into_inner().map_err(|e| e.into_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The note lists the numbers past the last launch in order, ten at
    /// most, and words the launches there were for none, one and many.
    #[test]
    fn the_note_names_the_numbers_past_the_last_launch_and_how_many_there_were() {
        let asked = |numbers: &[u64]| numbers.iter().copied().collect::<BTreeSet<u64>>();
        assert_eq!(past_the_last_launch(&asked(&[0, 3]), 4), None);
        assert_eq!(past_the_last_launch(&asked(&[]), 0), None);
        assert_eq!(
            past_the_last_launch(&asked(&[0]), 0).as_deref(),
            Some(
                "note: --fail-launch 0: past the last launch (the log has no launches), \
                 so nothing was injected there"
            )
        );
        assert_eq!(
            past_the_last_launch(&asked(&[0, 7, 1]), 1).as_deref(),
            Some(
                "note: --fail-launch 1, 7: past the last launch (the log has 1 launch, number 0), \
                 so nothing was injected there"
            )
        );
        let ten: Vec<u64> = (100..110).collect();
        assert_eq!(
            past_the_last_launch(&asked(&ten), 50).as_deref(),
            Some(
                "note: --fail-launch 100, 101, 102, 103, 104, 105, 106, 107, 108, 109: \
                 past the last launch (the log has 50 launches, 0 to 49), \
                 so nothing was injected there"
            )
        );
        let many: Vec<u64> = (100..112).collect();
        assert_eq!(
            past_the_last_launch(&asked(&many), 50).as_deref(),
            Some(
                "note: --fail-launch 100, 101, 102, 103, 104, 105, 106, 107, 108, 109 and 2 more: \
                 past the last launch (the log has 50 launches, 0 to 49), \
                 so nothing was injected there"
            )
        );
    }

    /// The note on injections in vain names each launch with its line, ten
    /// at most, in the words the other note uses for the rest.
    #[test]
    fn the_note_names_the_launches_skipped_anyway_ten_at_most_as_the_other_note_does() {
        let skipped = |n: u64| -> Vec<SkippedInjection> {
            (0..n)
                .map(|i| SkippedInjection {
                    launch: 100 + i,
                    line: 200 + i,
                })
                .collect()
        };
        assert_eq!(skipped_anyway(&skipped(0)), None);
        assert_eq!(
            skipped_anyway(&skipped(1)).as_deref(),
            Some(
                "note: --fail-launch: launch 100 (line 200) read tainted bytes and was skipped, \
                 which wins over any outcome, so nothing was injected there"
            )
        );
        let twelve = skipped_anyway(&skipped(12)).expect("a note");
        assert!(
            twelve.starts_with(
                "note: --fail-launch: launches 100 (line 200), 101 (line 201), 102 (line 202), "
            ),
            "{twelve}"
        );
        assert!(
            twelve.contains(
                "108 (line 208), 109 (line 209) and 2 more read tainted bytes and were skipped"
            ),
            "{twelve}"
        );
    }

    /// A template indicatif cannot parse would fall back to its default
    /// look without a word: every one the bars use parses.
    #[test]
    fn every_progress_template_parses() {
        for template in [REPLAY_BAR, REPLAY_SPINNER, GEN_BAR] {
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
        }
    }

    /// A fresh scratch folder, removed with all in it when the test that
    /// holds it ends, by a failed assertion too.
    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("taintworld-unit-")
            .tempdir()
            .expect("a scratch folder")
    }

    /// Only a regular file with bytes in it has a size to measure a
    /// replay's progress against.
    #[test]
    fn only_a_regular_file_with_bytes_has_a_known_size() {
        let dir = scratch();
        let path = dir.path().join("size");
        std::fs::write(&path, "{}\n").expect("temp file");
        let sized = known_size(&File::open(&path).expect("opens"));
        std::fs::write(&path, "").expect("temp file");
        let empty = known_size(&File::open(&path).expect("opens"));
        assert_eq!(sized, Some(3));
        assert_eq!(empty, None);
        #[cfg(unix)]
        assert_eq!(known_size(&File::open("/dev/null").expect("opens")), None);
    }

    /// `gen` writes under a partial name only where a plain file or
    /// nothing is; anything else, including a path it cannot look at,
    /// is written in place, so that an error names the path given.
    #[test]
    fn a_log_goes_under_a_partial_name_only_where_a_plain_file_or_nothing_is() {
        let dir = scratch();
        let base = dir.path().join("partial");
        let file = base.with_extension("jsonl");
        std::fs::write(&file, "").expect("temp file");
        let missing = base.with_extension("missing");
        let through_a_file = file.join("log.jsonl");
        let answers = (
            partial_path(&file),
            partial_path(&missing),
            partial_path(&through_a_file),
            partial_path(dir.path()),
        );
        let mut expected = file.clone().into_os_string();
        expected.push(".partial");
        assert_eq!(answers.0, Some(PathBuf::from(expected)));
        let mut expected = missing.into_os_string();
        expected.push(".partial");
        assert_eq!(answers.1, Some(PathBuf::from(expected)));
        assert_eq!(answers.2, None, "a path through a file is written in place");
        assert_eq!(answers.3, None, "a directory is written in place");
        #[cfg(unix)]
        assert_eq!(partial_path(Path::new("/dev/null")), None);
    }

    /// Off a terminal there is no bar, and the file is read as it is.
    #[test]
    fn off_a_terminal_there_is_no_bar_to_draw() {
        let progress = Progress::drawn_if(false, REPLAY_BAR, 0);
        assert!(progress.bar.is_none());
        progress.tick(4096, |_| panic!("no bar to move"));
    }

    /// A replay's bar is as long as the log file and follows the bytes
    /// read of it, so its percentage and time left are the file's.
    #[test]
    fn a_replay_bar_is_as_long_as_the_log_file_and_follows_the_bytes_read() {
        let dir = scratch();
        let path = dir.path().join("bar.jsonl");
        let text = "{\"op\":\"header\",\"format\":\"taintworld-log\",\"version\":1}\n".repeat(100);
        std::fs::write(&path, &text).expect("temp file");
        let progress = Progress::drawn_if(true, REPLAY_BAR, 0);
        let reader = LogReader::open_with(&path, |file| progress.wrap(file)).expect("opens");
        let lines = reader.count();
        let bar = progress.bar.as_ref().expect("a bar");
        assert_eq!(lines, 100);
        assert_eq!(bar.length(), Some(text.len() as u64));
        assert_eq!(bar.position(), text.len() as u64);
    }

    /// `gen`'s bar counts launches, not events (a training step writes
    /// more events than launches), up to the launches asked for.
    #[test]
    fn the_gen_bar_counts_launches_not_events() {
        let options = GenOptions {
            seed: 1,
            launches: 10_000,
            streams: 2,
            fail_rate: 0.0,
            shape: Shape::TrainingStep,
        };
        let progress = Progress::drawn_if(true, GEN_BAR, options.launches);
        let log =
            write_log(&options, Vec::new(), &progress, &Interrupts::none()).expect("in memory");
        let text = String::from_utf8(log).expect("utf-8");
        let is_launch = |l: &&str| l.contains("\"op\":\"launch\"");
        let events = text.lines().count();
        let bar = progress.bar.as_ref().expect("a bar");
        assert_eq!(
            text.lines().filter(is_launch).count() as u64,
            options.launches
        );
        assert_eq!(bar.length(), Some(options.launches));
        // Moved every 4096 events: it stands at the launches among the
        // events up to the last such tick, which are fewer than the events.
        let ticked = events / 4096 * 4096;
        let launches_then = text.lines().take(ticked).filter(is_launch).count() as u64;
        assert!(launches_then < ticked as u64);
        assert_eq!(bar.position(), launches_then);
    }
}
