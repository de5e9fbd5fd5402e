//! The launch logs recorded from real PyTorch programs on an H200 or an H100
//! (`examples/logs/real/`, made by `tools/record_torch.py`): they replay
//! cleanly, and injected failures travel through them as SPEC §3 says.
//!
//! Launch numbers are found by reading the logs, not written down here, so
//! that a re-recording that shifts them does not break the tests. Where a test
//! needs to know which launches read what, it follows the bytes one launch
//! wrote through the log itself (`Written`), independently of the world.
//!
//! The log reader and replay are the `log` feature's: built without it
//! (`cargo test --no-default-features`) the file holds no tests.

#![cfg(feature = "log")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use taintworld::Access;
use taintworld::log::{
    CaptureResult, ErrorObject, Event, LaunchResult, Line, LogBinding, LogReader, Outcome,
    ReadResult, Replay, ReplayOptions, Report, TaintReport,
};

const GPT2: &str = "gpt2_train_step.jsonl.gz";
const RESNET: &str = "resnet_train_step.jsonl.gz";
const TWO_STREAMS: &str = "two_streams.jsonl.gz";
const CUDA_GRAPH: &str = "cuda_graph_replay.jsonl.gz";
const GPT2_GRAPH: &str = "gpt2_graph_train.jsonl.gz";
const GPT2_DECODE: &str = "gpt2_decode.jsonl.gz";
const GPT2_AMP: &str = "gpt2_amp_step.jsonl.gz";
const GPT2_DECODE_GRAPH: &str = "gpt2_decode_graph.jsonl.gz";
const GPT2_OOM: &str = "gpt2_oom_fallback.jsonl.gz";
const GPT2_ASSERT: &str = "gpt2_device_assert.jsonl.gz";
const GPT2_ASSERT_BLOCKING: &str = "gpt2_device_assert_blocking.jsonl.gz";

/// The programs that met a real error while they were recorded, and whose
/// logs say so: every other program ran without one.
const MET_AN_ERROR: [&str; 3] = [GPT2_OOM, GPT2_ASSERT, GPT2_ASSERT_BLOCKING];

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/logs/real")
}

/// Every shipped real log, by file name.
fn real_logs() -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(real_dir())
        .expect("examples/logs/real")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    logs.sort();
    logs
}

fn read_lines(path: &Path) -> Vec<Line> {
    LogReader::open(path)
        .expect("the log opens")
        .collect::<Result<Vec<_>, _>>()
        .expect("the log reads")
}

fn options(fail: &[u64], strict: bool) -> ReplayOptions {
    ReplayOptions {
        fail_launches: fail.iter().copied().collect(),
        strict,
        keep_lists: true,
        ..ReplayOptions::default()
    }
}

fn replay_all(lines: &[Line], fail: &[u64], strict: bool) -> Report {
    replay_with(lines, options(fail, strict))
}

fn replay_with(lines: &[Line], options: ReplayOptions) -> Report {
    replayed(lines, options).finish().0
}

/// The replay of every line of `lines`, before its report is taken.
fn replayed(lines: &[Line], options: ReplayOptions) -> Replay {
    taintworld::log::replay(lines.iter().cloned().map(Ok), options, |_| {})
        .expect("the log replays to the end")
}

/// One launch of a log, as the log spells it.
struct LaunchInfo {
    line: u64,
    kernel: String,
    bindings: Vec<LogBinding>,
}

/// What the tests need to know about a log, read without the world.
struct Log {
    lines: Vec<Line>,
    launches: Vec<LaunchInfo>,
    /// `(line, binding)` of every `read`, in order.
    reads: Vec<(u64, LogBinding)>,
    first_host_write: u64,
}

fn load(name: &str) -> Log {
    let lines = read_lines(&real_dir().join(name));
    let mut launches = Vec::new();
    let mut reads = Vec::new();
    let mut first_host_write = None;
    for line in &lines {
        match line.event.as_ref().expect("every line is an event") {
            Event::Launch {
                kernel, bindings, ..
            } => launches.push(LaunchInfo {
                line: line.number,
                kernel: kernel.clone(),
                bindings: bindings.clone(),
            }),
            Event::Read { binding } => reads.push((line.number, *binding)),
            Event::HostWrite { .. } => {
                first_host_write.get_or_insert(line.number);
            }
            _ => {}
        }
    }
    Log {
        lines,
        launches,
        reads,
        first_host_write: first_host_write.expect("the log has a host write"),
    }
}

impl Log {
    /// The first matmul / linear / convolution launch after the first host
    /// write: an early forward launch of the first training step.
    fn first_forward_matmul(&self) -> u64 {
        let n = self
            .launches
            .iter()
            .position(|l| {
                l.line > self.first_host_write
                    && ["mm", "linear", "convolution"]
                        .iter()
                        .any(|k| l.kernel.contains(k))
            })
            .expect("a forward matmul or convolution");
        n as u64
    }

    /// The last launch of an optimizer update: an in-place `_foreach_*_`
    /// operator, or an in-place update op.
    fn last_optimizer_launch(&self) -> u64 {
        let n = self
            .launches
            .iter()
            .rposition(|l| {
                let op = l.kernel.trim_start_matches("aten::");
                let base = op.split('.').next().unwrap_or(op);
                (base.starts_with("_foreach_") && base.ends_with('_'))
                    || ["add_", "addcdiv_", "addcmul_", "lerp_", "mul_", "sub_"].contains(&base)
            })
            .expect("an optimizer launch");
        n as u64
    }

    /// Number of the first launch after `line` (the number of launches when
    /// none follows).
    fn first_launch_after(&self, line: u64) -> u64 {
        self.launches
            .iter()
            .position(|l| l.line > line)
            .unwrap_or(self.launches.len()) as u64
    }

    fn launch(&self, n: u64) -> &LaunchInfo {
        &self.launches[usize::try_from(n).expect("small")]
    }

    /// The index in `lines` of every `replay` line, in order.
    fn replay_lines(&self) -> Vec<usize> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l.event, Ok(Event::Replay { .. })))
            .map(|(i, _)| i)
            .collect()
    }

    /// The bindings of the launches recorded into a capture window, in
    /// order: what a graph of the log holds, its reads included.
    fn captured_bindings(&self) -> Vec<LogBinding> {
        self.captured_launches()
            .into_iter()
            .flat_map(|(_, bindings)| bindings)
            .collect()
    }

    /// The number and bindings of every launch inside a capture window.
    fn captured_launches(&self) -> Vec<(u64, Vec<LogBinding>)> {
        let mut capturing = false;
        let mut captured = Vec::new();
        let mut number = 0;
        for line in &self.lines {
            match line.event.as_ref().expect("event") {
                Event::CaptureBegin { .. } => capturing = true,
                Event::CaptureEnd { .. } => capturing = false,
                Event::Launch { bindings, .. } => {
                    if capturing {
                        captured.push((number, bindings.clone()));
                    }
                    number += 1;
                }
                _ => {}
            }
        }
        captured
    }

    /// The first launch after `line` that writes part of an allocation and
    /// not all of it, with that binding: in the decoder's log, the write of
    /// one pass's keys into the key/value cache, at the pass's positions.
    fn first_partial_write_after(&self, line: u64) -> (u64, LogBinding) {
        let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
        let mut launch = 0u64;
        for l in &self.lines {
            match l.event.as_ref().expect("event") {
                Event::Alloc { memory, size, .. } => {
                    sizes.insert(*memory, *size);
                }
                Event::Launch { bindings, .. } => {
                    let partial = bindings.iter().find(|b| {
                        b.access.writes()
                            && b.range.is_some_and(|(s, e)| {
                                s < e && (s, e) != (0, sizes.get(&b.memory).copied().unwrap_or(0))
                            })
                    });
                    if let Some(b) = partial.filter(|_| l.number > line) {
                        return (launch, *b);
                    }
                    launch += 1;
                }
                _ => {}
            }
        }
        panic!("no launch after line {line} writes part of an allocation")
    }
}

/// Byte ranges, per memory id, that still hold what one launch wrote: the
/// launch's write set, minus whatever was written since, minus allocations
/// that were freed (or whose id was reused).
#[derive(Default)]
struct Written(BTreeMap<u64, Vec<(u64, u64)>>);

impl Written {
    fn add(&mut self, memory: u64, (s, e): (u64, u64)) {
        if s < e {
            self.0.entry(memory).or_default().push((s, e));
            self.normalize(memory);
        }
    }

    fn normalize(&mut self, memory: u64) {
        let Some(v) = self.0.get_mut(&memory) else {
            return;
        };
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in v.iter() {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        if out.is_empty() {
            self.0.remove(&memory);
        } else {
            *v = out;
        }
    }

    fn overlaps(&self, memory: u64, (s, e): (u64, u64)) -> bool {
        s < e
            && self
                .0
                .get(&memory)
                .is_some_and(|v| v.iter().any(|&(a, b)| a < e && s < b))
    }

    fn remove(&mut self, memory: u64, (s, e): (u64, u64)) {
        if s >= e {
            return;
        }
        if let Some(v) = self.0.get_mut(&memory) {
            let mut out = Vec::new();
            for &(a, b) in v.iter() {
                if b <= s || e <= a {
                    out.push((a, b));
                } else {
                    if a < s {
                        out.push((a, s));
                    }
                    if e < b {
                        out.push((e, b));
                    }
                }
            }
            *v = out;
            self.normalize(memory);
        }
    }

    fn forget(&mut self, memory: u64) {
        self.0.remove(&memory);
    }

    fn memories(&self) -> usize {
        self.0.len()
    }

    fn bytes(&self) -> u64 {
        self.0.values().flatten().map(|&(a, b)| b - a).sum()
    }
}

/// Follows what launch `n` wrote through the rest of the log.
struct Follow {
    /// Launches after `n` with a read-visible binding on bytes `n` wrote (and
    /// nothing rewrote since): its direct consumers.
    consumers: BTreeSet<u64>,
    /// For each `read` after `n`: whether it reads bytes `n` wrote.
    reads_of_outputs: BTreeMap<u64, bool>,
    /// What still holds `n`'s writes just before the final frees.
    at_end: Written,
    /// The memory ids of `n`'s write set.
    outputs: BTreeSet<u64>,
}

fn follow(log: &Log, n: u64) -> Follow {
    let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
    let mut written = Written::default();
    let mut consumers = BTreeSet::new();
    let mut reads_of_outputs = BTreeMap::new();
    let mut outputs = BTreeSet::new();
    let mut at_end = None;
    let mut launch = 0u64;
    let range = |sizes: &BTreeMap<u64, u64>, b: &LogBinding| {
        b.range
            .unwrap_or((0, sizes.get(&b.memory).copied().unwrap_or(0)))
    };
    // The last event that is not a free: the final frees follow it.
    let last_non_free = log
        .lines
        .iter()
        .rev()
        .find(|l| !matches!(l.event, Ok(Event::Free { .. })))
        .map_or(0, |l| l.number);
    for line in &log.lines {
        match line.event.as_ref().expect("event") {
            Event::Alloc { memory, size, .. } => {
                sizes.insert(*memory, *size);
                written.forget(*memory);
            }
            Event::Free { memory } => {
                written.forget(*memory);
            }
            Event::Launch { bindings, .. } => {
                if launch == n {
                    for b in bindings.iter().filter(|b| b.access.writes()) {
                        written.add(b.memory, range(&sizes, b));
                        outputs.insert(b.memory);
                    }
                } else if launch > n {
                    let reads_it = bindings
                        .iter()
                        .any(|b| b.access.reads() && written.overlaps(b.memory, range(&sizes, b)));
                    if reads_it {
                        consumers.insert(launch);
                    }
                    for b in bindings.iter().filter(|b| b.access.writes()) {
                        written.remove(b.memory, range(&sizes, b));
                    }
                }
                launch += 1;
            }
            Event::HostWrite { binding, .. } => {
                written.remove(binding.memory, range(&sizes, binding))
            }
            Event::Read { binding } if launch > n => {
                let hit = written.overlaps(binding.memory, range(&sizes, binding));
                reads_of_outputs.insert(line.number, hit);
            }
            Event::Replay { .. } => panic!("no replays expected in a training-step log"),
            _ => {}
        }
        if line.number == last_non_free {
            at_end = Some(std::mem::take(&mut written));
        }
    }
    Follow {
        consumers,
        reads_of_outputs,
        at_end: at_end.expect("a last event"),
        outputs,
    }
}

fn failed_id(report: &Report, n: u64) -> u64 {
    report
        .launch_results
        .iter()
        .find_map(|r| match r {
            LaunchResult::Failed {
                launch, failure, ..
            } if *launch == n => Some(*failure),
            _ => None,
        })
        .expect("the injected launch is listed as failed")
}

/// Skipped launches: number -> (failure, needed).
fn skipped(report: &Report) -> BTreeMap<u64, (u64, u64)> {
    report
        .launch_results
        .iter()
        .filter_map(|r| match r {
            LaunchResult::Skipped {
                launch,
                failure,
                needed,
                ..
            } => Some((*launch, (*failure, *needed))),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------- clean replays

#[test]
fn the_eleven_recordings_of_the_ten_programs_are_shipped() {
    let names: Vec<String> = real_logs()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for name in [
        CUDA_GRAPH,
        GPT2,
        GPT2_AMP,
        GPT2_DECODE,
        GPT2_DECODE_GRAPH,
        GPT2_GRAPH,
        RESNET,
        TWO_STREAMS,
        GPT2_OOM,
        GPT2_ASSERT,
        GPT2_ASSERT_BLOCKING,
    ] {
        assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
    }
}

/// Every log replays whole, strict or not; those of the programs that met
/// no error also run every launch, mint no failure and read clean.
#[test]
fn every_real_log_replays_with_no_rejected_line_and_no_unresolved_binding() {
    for path in real_logs() {
        let lines = read_lines(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for strict in [false, true] {
            let r = replay_all(&lines, &[], strict);
            let what = format!("{} (strict: {strict})", path.display());
            assert!(r.rejected.is_empty(), "{what}: {:?}", r.rejected);
            assert_eq!(r.unresolved_bindings, 0, "{what}");
            assert!(r.launches > 0, "{what}");
            assert!(!r.reads.is_empty(), "{what}");
            if MET_AN_ERROR.contains(&name.as_str()) {
                assert_eq!(r.verdicts.failed, 1, "{what}");
                continue;
            }
            assert_eq!(r.verdicts.ran, r.launches, "{what}: every launch ran");
            assert!(r.launch_results.is_empty(), "{what}");
            assert!(
                r.reads.iter().all(|e| e.result == ReadResult::Clean),
                "{what}: {:?}",
                r.reads
            );
            assert_eq!(r.failures_minted, 0, "{what}");
            assert_eq!(r.final_state.claims, 0, "{what}");
        }
    }
}

/// The launch lines of `log` whose outcome failed, as `(line, kernel, error,
/// bindings)`: what the recorder wrote of an operator that raised.
fn failed_launches(log: &Log) -> Vec<(u64, String, ErrorObject, Vec<LogBinding>)> {
    log.lines
        .iter()
        .filter_map(|l| match l.event.as_ref().expect("event") {
            Event::Launch {
                kernel,
                bindings,
                outcome: Outcome::Failed(error),
                ..
            } => Some((l.number, kernel.clone(), error.clone(), bindings.clone())),
            _ => None,
        })
        .collect()
}

/// `log` replayed strictly, with the failures it tallied.
fn replay_tallied(log: &Log) -> (Report, Vec<taintworld::log::FailureTally>) {
    let replay = replayed(&log.lines, options(&[], true));
    let tallies = replay.tallies().values().cloned().collect();
    (replay.finish().0, tallies)
}

/// `gpt2_oom_fallback`: step 1's first try, a batch whose token embedding
/// would take 512 GiB, ran out of memory for real in `aten::embedding`.
/// The recorder wrote that launch failed, with kind `oom` and the
/// allocator's message, bound to what it read and to nothing it wrote (its
/// output was never made). So the failure taints nothing: no launch is
/// skipped, and both loss reads, the second after the program fell back to
/// micro-batches, are clean. Catching this error and going on was sound.
#[test]
fn a_recorded_out_of_memory_error_fails_its_launch_and_taints_nothing_the_program_reads() {
    let log = load(GPT2_OOM);
    let failed = failed_launches(&log);
    assert_eq!(failed.len(), 1, "one real error");
    let (line, kernel, error, bindings) = &failed[0];
    assert_eq!(
        (kernel.as_str(), error.kind.as_str()),
        ("aten::embedding", "oom")
    );
    assert!(
        error
            .message
            .starts_with("CUDA out of memory. Tried to allocate 512.00 GiB."),
        "{}",
        error.message
    );
    assert!(bindings.iter().all(|b| b.access == Access::Read));

    let (r, tallies) = replay_tallied(&log);
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    assert_eq!((r.verdicts.failed, r.verdicts.skipped), (1, 0));
    assert_eq!(r.verdicts.ran + 1, r.launches);
    assert!(matches!(
        r.launch_results[..],
        [LaunchResult::Failed { line: l, failure: 1, .. }] if l == *line
    ));
    assert_eq!(tallies.len(), 1);
    let t = &tallies[0];
    assert_eq!(
        (t.error.kind.as_str(), t.error.kernel.as_str()),
        ("oom", "aten::embedding")
    );
    assert_eq!(t.error.message, error.message);
    assert_eq!((t.occurrences, t.skipped, t.freed), (1, 0, 0));
    assert_eq!(r.reads.len(), 2);
    assert!(r.reads[0].line < *line && r.reads[1].line > *line);
    assert!(r.reads.iter().all(|e| e.result == ReadResult::Clean));
    assert_eq!(r.final_state.claims, 0);
}

/// `gpt2_device_assert`: step 1 fed the embedding a token past its
/// vocabulary, and the GPU's index kernel asserted. CUDA told the host at a
/// later call, which the recorder wrote as the device's fault and that
/// call's launch failed with kind `device`; nothing launched after it.
#[test]
fn a_recorded_device_side_assert_faults_the_device_and_the_read_after_it_answers_with_the_fault() {
    let log = load(GPT2_ASSERT);
    let (line, kernel) = device_assert_recorded(&log);
    // The embedding of step 1 read the bad token, and ran as far as the
    // host knew: the launch that failed is a later one.
    assert_ne!(kernel, "aten::embedding");
    assert!(
        log.launches
            .iter()
            .any(|l| l.kernel == "aten::embedding" && l.line > log.reads[0].0 && l.line < line)
    );
}

/// `gpt2_device_assert_blocking`: the same program recorded with
/// `--blocking`, every launch waiting for its kernel. The embedding that
/// asserted reported it itself: the launch that failed right after the
/// device's fault is that embedding, and so is the replay's root error,
/// where the plain recording's is a launch some way after it.
#[test]
fn with_blocking_launches_the_recorded_device_fault_names_the_kernel_that_asserted() {
    let log = load(GPT2_ASSERT_BLOCKING);
    let header = first_line(GPT2_ASSERT_BLOCKING);
    assert_eq!(header["op"], "header");
    assert_eq!(header["launch_blocking"], true);
    assert!(first_line(GPT2_ASSERT).get("launch_blocking").is_none());

    let (line, kernel) = device_assert_recorded(&log);
    assert_eq!(kernel, "aten::embedding");
    // Step 1's embedding of the tokens (step 0's loss was read before
    // it), bound to what it read: its output was never made.
    assert!(line > log.reads[0].0);
    let failed = &log.launches.last().expect("launches").bindings;
    assert!(!failed.is_empty() && failed.iter().all(|b| b.access == Access::Read));
    // The same launches as the plain recording up to it: the one is the
    // other's embedding, a number for a number.
    let plain = load(GPT2_ASSERT);
    let at = log.launches.len() - 1;
    assert_eq!(plain.launches[at].kernel, "aten::embedding");
    assert_eq!(plain.launches[at].line, line);
    assert!(
        log.launches[..at]
            .iter()
            .zip(&plain.launches)
            .all(|(a, b)| a.kernel == b.kernel && a.bindings == b.bindings)
    );
}

/// The first line of the real log `name`, parsed as JSON: the header, with
/// the fields the replay ignores.
fn first_line(name: &str) -> serde_json::Value {
    use std::io::BufRead;
    let file = std::fs::File::open(real_dir().join(name)).expect("the log opens");
    let mut first = String::new();
    std::io::BufReader::new(flate2::read::GzDecoder::new(file))
        .read_line(&mut first)
        .expect("the first line reads");
    serde_json::from_str(&first).expect("the first line is JSON")
}

/// What every recording of `gpt2_device_assert` holds, wherever CUDA
/// reported the assert: one device fault, the launch right after it failed
/// with its error and nothing launched after that; the replay tallies that
/// launch's failure alone and skips nothing; step 0's loss, read before
/// the fault, is clean, and the program's attempt to copy the embedding to
/// the host after it answers with the fault (SPEC §6). The failed launch's
/// line and kernel.
fn device_assert_recorded(log: &Log) -> (u64, String) {
    let faults: Vec<(u64, &ErrorObject)> = log
        .lines
        .iter()
        .filter_map(|l| match l.event.as_ref().expect("event") {
            Event::DeviceFault { error } => Some((l.number, error)),
            _ => None,
        })
        .collect();
    let [(fault_line, fault)] = faults[..] else {
        panic!("one device fault: {faults:?}");
    };
    assert_eq!(
        (fault.kind.as_str(), fault.message.as_str()),
        ("device", "CUDA error: device-side assert triggered")
    );
    let failed = failed_launches(log);
    assert_eq!(failed.len(), 1);
    let (line, kernel, error, _) = &failed[0];
    assert_eq!(*line, fault_line + 1, "the call that met the fault");
    assert_eq!(error, fault);
    let last = log.launches.last().expect("launches");
    assert_eq!(last.line, *line, "nothing launched after it");

    let (r, tallies) = replay_tallied(log);
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    assert_eq!((r.verdicts.failed, r.verdicts.skipped), (1, 0));
    assert_eq!(tallies.len(), 1);
    assert_eq!(tallies[0].error.kernel, *kernel);
    assert_eq!(r.reads.len(), 2);
    assert!(r.reads[0].line < fault_line && r.reads[1].line > fault_line);
    assert_eq!(r.reads[0].result, ReadResult::Clean);
    let ReadResult::DeviceFault(answer) = &r.reads[1].result else {
        panic!("the read after the fault is {:?}", r.reads[1].result);
    };
    assert_eq!(
        (answer.kind.as_str(), answer.kernel.as_str()),
        ("device", "device")
    );
    assert_eq!(answer.message, fault.message);
    (*line, kernel.clone())
}

#[test]
fn the_cuda_graph_log_replays_its_graph_into_live_pool_memory_and_destroys_it_before_the_frees() {
    graph_replays_into_live_pool_memory_and_is_destroyed_before_the_frees(CUDA_GRAPH);
}

/// The GPT-2 step captured whole: forward, backward and AdamW's update of
/// the weights in one graph, whose failed replay taints every byte it
/// writes, the weights too.
#[test]
fn the_captured_gpt2_step_replays_into_live_pool_memory_and_is_destroyed_before_the_frees() {
    graph_replays_into_live_pool_memory_and_is_destroyed_before_the_frees(GPT2_GRAPH);
}

/// `line` with its `replay` failed when `fail`, as the recorder writes a
/// replay that raised (none did while these logs were recorded); otherwise,
/// or for any other line, the line as it is.
fn failed_replay_if(fail: bool, line: Line) -> Line {
    match line.event {
        Ok(Event::Replay { graph, stream, .. }) if fail => Line {
            number: line.number,
            event: Ok(Event::Replay {
                graph,
                stream,
                outcome: Outcome::Failed(ErrorObject {
                    kind: "launch".to_owned(),
                    message: "replay failed".to_owned(),
                }),
            }),
        },
        _ => line,
    }
}

/// A log with one captured graph, replayed at least five times and then
/// destroyed before the final frees: its last replay failing taints exactly
/// the bytes its captured launches write, its pool memory included, and
/// the loss read after it with the replay's failure, with no chain.
fn graph_replays_into_live_pool_memory_and_is_destroyed_before_the_frees(name: &str) {
    let log = load(name);
    let ops: Vec<&Event> = log
        .lines
        .iter()
        .map(|l| l.event.as_ref().expect("event"))
        .collect();
    let count = |f: fn(&Event) -> bool| ops.iter().filter(|e| f(e)).count();
    assert_eq!(count(|e| matches!(e, Event::CaptureEnd { .. })), 1);
    assert!(count(|e| matches!(e, Event::Replay { .. })) >= 5);
    let destroy = ops
        .iter()
        .position(|e| matches!(e, Event::GraphDestroy { graph: 1 }))
        .expect("graph 1 is destroyed");
    let last_replay = ops
        .iter()
        .rposition(|e| matches!(e, Event::Replay { .. }))
        .unwrap();
    assert!(last_replay < destroy);
    assert!(
        ops[destroy + 1..]
            .iter()
            .all(|e| matches!(e, Event::Free { .. }))
    );

    // The bytes the graph writes: the write sets of its captured launches.
    let mut graph_writes = Written::default();
    for b in log.captured_bindings().iter().filter(|b| b.access.writes()) {
        graph_writes.add(b.memory, b.range.expect("the recorder writes ranges"));
    }
    assert!(graph_writes.bytes() > 0);

    // Fail the last replay: every byte the graph wrote carries the failure,
    // its intermediates included (they are live pool memory, not freed
    // storages), and the loss read after it is tainted by the replay.
    let mut replay = Replay::new(options(&[], true)).expect("good options");
    for (i, line) in log.lines.iter().cloned().enumerate() {
        let line = failed_replay_if(i == last_replay, line);
        replay.apply(line).expect("applies");
        if i == last_replay {
            let stats = replay.world().expect("a world").stats();
            assert_eq!(stats.tainted_bytes, u128::from(graph_writes.bytes()));
            assert_eq!(stats.tainted_allocations, graph_writes.memories() as u64);
            assert_eq!(stats.unresolved_bindings, 0);
        }
    }
    let (r, _) = replay.finish();
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    assert_eq!(r.reads.len(), 1);
    let ReadResult::Tainted(t) = &r.reads[0].result else {
        panic!("the loss read is {:?}", r.reads[0].result);
    };
    assert_eq!(t.error.kernel, "graph:1");
    assert!(t.chain.is_empty());
    assert_eq!(r.final_state.live_failures, 0);
}

// ---------------------------------------------------------------- failure inside a capture

/// The first launch of the captured GPT-2 step failing (`--fail-launch`)
/// dooms the capture, which makes no graph (SPEC §6): the capture reports
/// the failure, every later `replay` and the `graph_destroy` of that graph
/// are bad input naming the line where the capture failed (the log was
/// recorded from a run whose capture worked), and the loss, which only the
/// graph would have written again, is read tainted by the same failure,
/// through the captured launches skipped after it.
#[test]
fn a_failure_inside_the_captured_gpt2_step_fails_the_capture_and_every_replay_names_it() {
    let log = load(GPT2_GRAPH);
    let event_line = |f: fn(&Event) -> bool| {
        log.lines
            .iter()
            .find(|l| f(l.event.as_ref().expect("event")))
            .map(|l| l.number)
            .expect("the log has it")
    };
    let begin = event_line(|e| matches!(e, Event::CaptureBegin { .. }));
    let end = event_line(|e| matches!(e, Event::CaptureEnd { .. }));
    let first_captured = log.first_launch_after(begin);
    assert!(log.launch(first_captured).line < end);
    let graph_lines: Vec<u64> = log
        .lines
        .iter()
        .filter(|l| {
            matches!(
                l.event,
                Ok(Event::Replay { graph: 1, .. } | Event::GraphDestroy { graph: 1 })
            )
        })
        .map(|l| l.number)
        .collect();
    assert!(graph_lines.len() > 20, "{graph_lines:?}");
    let why = format!(
        "graph 1 is not a live graph (its capture failed at line {end}, with failure 1, \
         and made no graph)"
    );

    // Stopping at the first bad line, as the command does by default.
    match taintworld::log::replay(
        log.lines.iter().cloned().map(Ok),
        options(&[first_captured], false),
        |_| {},
    ) {
        Err(taintworld::log::ReplayError::BadLine { line, error, .. }) => {
            assert_eq!((line, error.as_str()), (graph_lines[0], why.as_str()));
        }
        other => panic!("not the first replay's bad line: {:?}", other.err()),
    }

    let r = replay_with(
        &log.lines,
        ReplayOptions {
            keep_going: true,
            ..options(&[first_captured], false)
        },
    );
    assert_eq!(r.failures_minted, 1);
    assert_eq!(r.captures.len(), 1);
    assert_eq!(r.captures[0].line, end);
    let taintworld::log::CaptureResult::Failed(capture) = &r.captures[0].result else {
        panic!("the capture is {:?}", r.captures[0].result);
    };
    assert_eq!(
        (capture.failure, capture.error.kernel.as_str()),
        (1, log.launch(first_captured).kernel.as_str())
    );
    let rejected: Vec<(u64, &str)> = r
        .rejected
        .iter()
        .map(|x| (x.line, x.error.as_str()))
        .collect();
    let expected: Vec<(u64, &str)> = graph_lines.iter().map(|&l| (l, why.as_str())).collect();
    assert_eq!(rejected, expected);
    // The captured launches after the failed one that read what it wrote,
    // or what those wrote, were skipped; the loss is read tainted.
    assert!(r.verdicts.skipped > 0);
    assert_eq!(r.reads.len(), 1);
    let ReadResult::Tainted(t) = &r.reads[0].result else {
        panic!("the loss read is {:?}", r.reads[0].result);
    };
    assert_eq!(t.failure, 1);
    assert!(!t.chain.is_empty());
    assert!(t.chain.iter().all(|hop| hop.launch > first_captured));
}

// ---------------------------------------------------------------- early forward failure

fn early_forward_failure_skips_the_step_and_taints_its_loss(name: &str) {
    let log = load(name);
    let n = log.first_forward_matmul();
    let (loss_line, loss) = log.reads[0];
    let step_end = log.first_launch_after(loss_line); // launches n+1 .. step_end are the step's
    assert!(n + 1 < step_end, "{name}: launch {n} is in the first step");
    let f = follow(&log, n);
    let r = replay_all(&log.lines, &[n], false);
    assert!(
        r.rejected.is_empty() && r.unresolved_bindings == 0,
        "{name}"
    );
    let failure = failed_id(&r, n);
    assert_eq!(r.verdicts.failed, 1, "{name}");
    let skips = skipped(&r);

    // The step's downstream launches are skipped: most of them.
    let in_step: Vec<u64> = skips.keys().copied().filter(|&k| k < step_end).collect();
    let after = step_end - n - 1;
    assert!(
        in_step.len() as u64 * 2 > after,
        "{name}: only {} of the {after} launches after {n} in the step skipped",
        in_step.len()
    );
    assert!(in_step.iter().all(|&k| k > n), "{name}: nothing before it");
    // Every launch of the step that reads what launch n wrote is skipped, by
    // this failure.
    let direct: Vec<u64> = f
        .consumers
        .iter()
        .copied()
        .filter(|&k| k < step_end)
        .collect();
    assert!(!direct.is_empty(), "{name}: launch {n}'s outputs are read");
    for k in &direct {
        assert_eq!(
            skips.get(k).map(|s| s.0),
            Some(failure),
            "{name}: launch {k} ({}) reads launch {n}'s output",
            log.launch(*k).kernel
        );
    }

    // The step's loss read-back is tainted, with the chain of kernels between.
    let entry = &r.reads[0];
    assert_eq!(entry.line, loss_line);
    assert_eq!(entry.memory, loss.memory);
    let ReadResult::Tainted(TaintReport {
        failure: got,
        error,
        chain,
        truncated,
        ..
    }) = &entry.result
    else {
        panic!("{name}: the loss read is {:?}", entry.result);
    };
    assert_eq!(*got, failure);
    assert_eq!(error.kind, "injected");
    assert_eq!(error.kernel, log.launch(n).kernel);
    assert!(!truncated);
    assert!(!chain.is_empty(), "{name}: a chain");
    for hop in chain {
        assert!(
            n < hop.launch && hop.launch < step_end,
            "{name}: hop {} is a launch of the step after {n}",
            hop.launch
        );
        let l = log.launch(hop.launch);
        assert_eq!(
            hop.kernel, l.kernel,
            "{name}: hop {} names its kernel",
            hop.launch
        );
        assert!(
            l.bindings
                .iter()
                .any(|b| b.access.reads() && b.memory == hop.needed),
            "{name}: launch {} reads memory {}",
            hop.launch,
            hop.needed
        );
        assert_eq!(skips.get(&hop.launch), Some(&(failure, hop.needed)));
    }
    assert!(
        chain.windows(2).all(|w| w[0].launch > w[1].launch),
        "{name}: newest first"
    );
    // The newest hop wrote the loss; the oldest read launch n's output.
    assert!(
        log.launch(chain[0].launch)
            .bindings
            .iter()
            .any(|b| b.access.writes() && b.memory == loss.memory)
    );
    let last = chain.last().unwrap();
    assert!(
        f.outputs.contains(&last.needed) && f.consumers.contains(&last.launch),
        "{name}: the last hop (launch {} needing {}) reads launch {n}'s output {:?}",
        last.launch,
        last.needed,
        f.outputs
    );
}

#[test]
fn a_failed_early_forward_matmul_of_gpt2_skips_its_step_and_taints_the_loss_through_the_kernels_between()
 {
    early_forward_failure_skips_the_step_and_taints_its_loss(GPT2);
}

#[test]
fn a_failed_early_forward_convolution_of_resnet_skips_its_step_and_taints_the_loss_through_the_kernels_between()
 {
    early_forward_failure_skips_the_step_and_taints_its_loss(RESNET);
}

// ---------------------------------------------------------------- last optimizer failure

fn last_optimizer_failure_taints_only_its_outputs(name: &str) {
    let log = load(name);
    let n = log.last_optimizer_launch();
    let f = follow(&log, n);
    let r = replay_all(&log.lines, &[n], false);
    assert!(
        r.rejected.is_empty() && r.unresolved_bindings == 0,
        "{name}"
    );
    let failure = failed_id(&r, n);
    assert_eq!(r.verdicts.failed, 1, "{name}");
    assert_eq!(
        r.verdicts.skipped, 0,
        "{name}: nothing after it reads its outputs"
    );
    assert_eq!(r.verdicts.ran, r.launches - 1, "{name}");
    assert_eq!(r.failures_minted, 1, "{name}");

    // Reads after it: tainted exactly when they read its outputs.
    let n_line = log.launch(n).line;
    let mut after = 0;
    for e in &r.reads {
        if e.line < n_line {
            assert_eq!(
                e.result,
                ReadResult::Clean,
                "{name}: read at line {}",
                e.line
            );
            continue;
        }
        after += 1;
        if f.reads_of_outputs[&e.line] {
            let ReadResult::Tainted(t) = &e.result else {
                panic!("{name}: read at line {} is {:?}", e.line, e.result);
            };
            assert_eq!(t.failure, failure);
            assert!(t.chain.is_empty(), "{name}: tainted directly");
        } else {
            assert_eq!(
                e.result,
                ReadResult::Clean,
                "{name}: read at line {}",
                e.line
            );
        }
    }
    assert!(after > 0, "{name}: the loss is read after the update");

    // Just before the final frees, exactly its surviving outputs carry the
    // failure; after them, nothing does.
    let end = f.at_end;
    assert!(end.memories() > 0, "{name}");
    let mut replay = Replay::new(options(&[n], false)).expect("good options");
    let mut lines = log.lines.iter().cloned().peekable();
    while let Some(line) = lines.next() {
        replay.apply(line).expect("applies");
        if lines
            .clone()
            .all(|l| matches!(l.event, Ok(Event::Free { .. })))
        {
            break;
        }
    }
    let stats = replay.world().expect("a world").stats();
    assert_eq!(stats.tainted_allocations, end.memories() as u64, "{name}");
    assert_eq!(stats.tainted_bytes, u128::from(end.bytes()), "{name}");
    assert_eq!(stats.live_failures, 1, "{name}");
    for line in lines {
        replay.apply(line).expect("applies");
    }
    let (report, _) = replay.finish();
    assert_eq!(report.final_state.tainted_allocations, 0, "{name}");
    assert_eq!(report.final_state.live_failures, 0, "{name}");
    assert_eq!(r.final_state, report.final_state);
}

#[test]
fn a_failed_last_optimizer_launch_of_gpt2_taints_only_its_own_outputs() {
    last_optimizer_failure_taints_only_its_outputs(GPT2);
}

#[test]
fn a_failed_last_optimizer_launch_of_resnet_taints_only_its_own_outputs() {
    last_optimizer_failure_taints_only_its_outputs(RESNET);
}

// ---------------------------------------------------------------- a failed write into the key/value cache

/// The decoder's tokens: the prefill's pass makes token 0, and each later
/// pass one more, each read back to the host before the next pass.
const DECODED_TOKENS: usize = 16;
/// The bytes one position takes in a layer's key cache: 4 heads of 32
/// `f32` channels (`tools/programs/gpt2_decode.py`).
const CACHE_POSITION_BYTES: u64 = 4 * 32 * 4;
/// The prompt's positions, which the prefill writes at once.
const PROMPT_POSITIONS: u64 = 8;

/// The pass that makes token `token` fails to write its keys into the
/// first layer's cache: exactly those positions' bytes carry the failure,
/// the tokens read before it stay clean, and that token and every later
/// one are tainted, each with the chain back to the first attention that
/// read the cache.
fn failed_cache_write_spoils_its_token_and_every_later_one(token: usize) {
    let log = load(GPT2_DECODE);
    assert_eq!(log.reads.len(), DECODED_TOKENS, "a read per token");
    let pass_start = if token == 0 {
        0
    } else {
        log.reads[token - 1].0
    };
    let (n, cache) = log.first_partial_write_after(pass_start);
    let n_line = log.launch(n).line;
    assert!(
        n_line < log.reads[token].0,
        "launch {n} is in the pass of token {token}"
    );
    assert!(
        log.launch(n).kernel.contains("copy"),
        "a copy into the cache"
    );
    let (start, end) = cache.range.expect("a range");
    let positions = if token == 0 { PROMPT_POSITIONS } else { 1 };
    assert_eq!(end - start, positions * CACHE_POSITION_BYTES);
    let f = follow(&log, n);
    let r = replay_all(&log.lines, &[n], false);
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    assert_eq!(r.verdicts.failed, 1);
    let failure = failed_id(&r, n);
    let skips = skipped(&r);
    assert!(skips.keys().all(|&k| k > n), "nothing before it is skipped");
    for k in &f.consumers {
        assert_eq!(
            skips.get(k).map(|s| s.0),
            Some(failure),
            "launch {k} ({}) reads the cache's failed bytes",
            log.launch(*k).kernel
        );
    }

    // Just after the failure, the cache carries it on those bytes alone.
    let mut replay = Replay::new(options(&[n], false)).expect("good options");
    let mut lines = log.lines.iter().cloned();
    for line in lines.by_ref() {
        let number = line.number;
        replay.apply(line).expect("applies");
        if number == n_line {
            break;
        }
    }
    let world = replay.world().expect("a world");
    let claims: Vec<_> = world
        .claims(cache.memory)
        .expect("the cache is live")
        .map(|c| (c.start, c.end, c.failure.get(), c.origin))
        .collect();
    assert_eq!(claims, [(start, end, failure, None)]);
    assert_eq!(world.stats().tainted_bytes, u128::from(end - start));

    // The tokens before the failed pass are trusted; its own and every later
    // one are not, each naming the failure and its chain.
    assert_eq!(r.reads.len(), DECODED_TOKENS);
    for (i, e) in r.reads.iter().enumerate() {
        assert_eq!(e.line, log.reads[i].0);
        if i < token {
            assert_eq!(e.result, ReadResult::Clean, "token {i}");
            continue;
        }
        let ReadResult::Tainted(t) = &e.result else {
            panic!("token {i} is {:?}", e.result);
        };
        assert_eq!(t.failure, failure, "token {i}");
        assert_eq!(t.error.kind, "injected");
        assert_eq!(t.error.kernel, log.launch(n).kernel);
        assert!(!t.truncated, "token {i}");
        for hop in &t.chain {
            assert_eq!(skips.get(&hop.launch), Some(&(failure, hop.needed)));
        }
        let oldest = t.chain.last().expect("a chain");
        assert_eq!(oldest.needed, cache.memory, "token {i}: from the cache");
        assert!(f.consumers.contains(&oldest.launch), "token {i}");
    }
    for line in lines {
        replay.apply(line).expect("applies");
    }
    let (report, _) = replay.finish();
    assert_eq!(report.final_state.claims, 0, "every allocation is freed");
}

#[test]
fn a_failed_cache_write_in_the_prefill_taints_every_generated_token() {
    failed_cache_write_spoils_its_token_and_every_later_one(0);
}

#[test]
fn a_failed_cache_write_in_the_third_pass_leaves_the_first_two_tokens_trusted_and_taints_the_rest()
{
    failed_cache_write_spoils_its_token_and_every_later_one(2);
}

#[test]
fn a_failed_cache_write_in_the_last_pass_taints_the_last_token_alone() {
    failed_cache_write_spoils_its_token_and_every_later_one(DECODED_TOKENS - 1);
}

// ---------------------------------------------------------------- mixed precision, a gradient scaler

/// The mixed-precision steps, their first backward launch failing: the
/// first step's loss, computed before it, stays trusted, but the gradient
/// scaler's overflow check, read back before the update, is tainted —
/// the check itself read garbage — and so is everything the second step
/// reads: the update and the scale's own update were skipped.
#[test]
fn a_failed_backward_launch_taints_the_gradient_scalers_overflow_check_and_not_the_loss_before_it()
{
    let log = load(GPT2_AMP);
    let [check_0, loss_0, check_1, loss_1] = log.reads[..] else {
        panic!("two reads a step: {:?}", log.reads);
    };
    let n = log
        .launches
        .iter()
        .position(|l| l.kernel.contains("backward"))
        .expect("a backward launch") as u64;
    let n_line = log.launch(n).line;
    assert!(
        n_line < check_0.0 && check_0.0 < loss_0.0,
        "in the first step"
    );
    let f = follow(&log, n);
    let r = replay_all(&log.lines, &[n], false);
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    let failure = failed_id(&r, n);
    let skips = skipped(&r);

    let results: Vec<&ReadResult> = r.reads.iter().map(|e| &e.result).collect();
    assert_eq!(
        r.reads.iter().map(|e| e.line).collect::<Vec<_>>(),
        [check_0.0, loss_0.0, check_1.0, loss_1.0]
    );
    assert_eq!(*results[1], ReadResult::Clean, "the loss came before it");
    assert!(!f.reads_of_outputs[&loss_0.0]);
    for (i, result) in results.iter().enumerate().filter(|&(i, _)| i != 1) {
        let ReadResult::Tainted(t) = result else {
            panic!("read {i} is {result:?}");
        };
        assert_eq!(t.failure, failure, "read {i}");
        assert!(!t.chain.is_empty(), "read {i}");
        for hop in &t.chain {
            assert_eq!(skips.get(&hop.launch), Some(&(failure, hop.needed)));
        }
    }
    // The first check's chain, newest hop first, starts at the launch that
    // was to write the scaler's flag.
    let ReadResult::Tainted(t) = results[0] else {
        unreachable!()
    };
    let newest = log.launch(t.chain[0].launch);
    assert!(
        newest.kernel.contains("non_finite_check_and_unscale"),
        "{}",
        newest.kernel
    );
    assert!(
        newest
            .bindings
            .iter()
            .any(|b| b.access.writes() && b.memory == check_0.1.memory)
    );
    // Both of the scale's updates, and every launch that reads what the
    // failed launch was to write, are skipped.
    let scale_updates: Vec<u64> = (0..log.launches.len() as u64)
        .filter(|&k| log.launch(k).kernel.contains("_amp_update_scale_"))
        .collect();
    assert_eq!(scale_updates.len(), 2, "one a step");
    for k in scale_updates.iter().chain(&f.consumers) {
        assert_eq!(
            skips.get(k).map(|s| s.0),
            Some(failure),
            "launch {k} ({})",
            log.launch(*k).kernel
        );
    }
}

// ---------------------------------------------------------------- a decoding pass captured and replayed

/// The decoding graph's log with the replay that makes token `token`
/// failing, replayed with its replays checked ([`World::replay_checked`])
/// or not: the report, and the index of each replay line.
///
/// [`World::replay_checked`]: taintworld::World::replay_checked
fn decode_graph_with_failed_replay(log: &Log, token: usize, checked: bool) -> (Report, Vec<usize>) {
    let replays = log.replay_lines();
    assert_eq!(
        replays.len(),
        DECODED_TOKENS - 1,
        "one replay a later token"
    );
    let failed = replays[token - 1];
    let mut replay = Replay::new(ReplayOptions {
        checked_replays: checked,
        ..options(&[], true)
    })
    .expect("good options");
    for (i, line) in log.lines.iter().cloned().enumerate() {
        let line = failed_replay_if(i == failed, line);
        replay.apply(line).expect("applies");
    }
    let (r, _) = replay.finish();
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    assert_eq!(r.failures_minted, 1);
    assert_eq!(r.reads.len(), DECODED_TOKENS);
    (r, replays)
}

/// The decoder serving its tokens from one captured pass, the replay that
/// makes token `token` failing: that token is read tainted by the replay,
/// with no chain, and the tokens before it are clean. So are the tokens
/// after it: SPEC §6 has a replay read nothing ("the caller writes fresh
/// inputs before a replay"), so the next good replay releases its whole
/// write set, the cache and the token among them — though the real pass
/// reads the cache and the token the failed replay left. A plain replay
/// cannot see that; a checked one can (the next test). This test pins
/// what the contract says; `examples/logs/real/README.md` says what a
/// server should make of it.
#[test]
fn a_failed_replay_of_the_captured_decoding_pass_taints_its_own_token_and_the_next_replay_releases_it()
 {
    let log = load(GPT2_DECODE_GRAPH);
    assert_eq!(log.reads.len(), DECODED_TOKENS);
    let token = 5;
    let (r, _) = decode_graph_with_failed_replay(&log, token, false);
    for (i, e) in r.reads.iter().enumerate() {
        if i != token {
            assert_eq!(e.result, ReadResult::Clean, "token {i}");
            continue;
        }
        let ReadResult::Tainted(t) = &e.result else {
            panic!("token {i} is {:?}", e.result);
        };
        assert_eq!(t.error.kernel, "graph:1");
        assert!(t.chain.is_empty(), "tainted by the replay itself");
    }
}

/// The decoding graph's first captured launch, and the input it reads
/// that the pass's last launch writes (its next token) with that write's
/// stream.
fn first_launch_and_input(log: &Log) -> (u64, u64, u64) {
    let captured = log.captured_launches();
    let (first, last) = (&captured[0], captured.last().expect("a launch"));
    let written = last
        .1
        .iter()
        .find(|b| b.access.writes())
        .expect("it writes");
    assert!(
        first
            .1
            .iter()
            .any(|b| b.memory == written.memory && b.access.reads()),
        "the first launch reads the token"
    );
    (first.0, written.memory, written.stream)
}

/// The same failed replay with every replay checked, launch by launch:
/// its own token is tainted by the replay, and so is every later token,
/// since each later pass reads the token and the caches the failed replay
/// left. A later token's chain runs through the captured launches, each
/// named `graph:1/<kernel>` under the number it was captured with, back to
/// the pass's first launch, which read the token; each later replay is
/// listed as skipped, with the captured launches it skipped from the first
/// to the last; the tokens before the failure stay clean.
#[test]
fn with_checked_replays_a_failed_replay_of_the_decoding_pass_taints_its_token_and_every_later_one()
{
    let log = load(GPT2_DECODE_GRAPH);
    let token = 5;
    let (r, replays) = decode_graph_with_failed_replay(&log, token, true);
    let captured: BTreeSet<u64> = log.captured_launches().iter().map(|l| l.0).collect();
    let (first, input, _) = first_launch_and_input(&log);
    for (i, t) in later_tokens(&r, token) {
        assert!(!t.chain.is_empty(), "token {i} has a chain");
        for hop in &t.chain {
            assert!(hop.kernel.starts_with("graph:1/"), "{}", hop.kernel);
            assert!(captured.contains(&hop.launch), "launch {}", hop.launch);
            let kernel = &log.launch(hop.launch).kernel;
            assert_eq!(hop.kernel, format!("graph:1/{kernel}"));
        }
        let oldest = t.chain.last().expect("a chain");
        assert_eq!((oldest.launch, oldest.needed), (first, input), "token {i}");
    }
    let skipped: Vec<(u64, &Vec<u64>)> = r
        .launch_results
        .iter()
        .filter_map(|e| match e {
            LaunchResult::ReplaySkipped { line, launches, .. } => Some((*line, launches)),
            _ => None,
        })
        .collect();
    let later: Vec<u64> = replays[token..]
        .iter()
        .map(|&i| log.lines[i].number)
        .collect();
    let lines: Vec<u64> = skipped.iter().map(|s| s.0).collect();
    assert_eq!(lines, later, "every replay after the failed one");
    // Each lists the captured launches it skipped, in the graph's order,
    // from the first, which reads the token, to the last, which writes the
    // next one.
    let last = *captured.last().expect("a launch");
    for (line, launches) in skipped {
        assert_eq!(launches.first(), Some(&first), "line {line}");
        assert_eq!(launches.last(), Some(&last), "line {line}");
        assert!(launches.is_sorted(), "line {line}: {launches:?}");
        assert!(launches.iter().all(|l| captured.contains(l)), "line {line}");
    }
}

/// The reports of the tokens after token `token`, whose replay failed,
/// with their indices, once the tokens before it are found clean and
/// token `token` tainted by the replay itself (kernel `graph:1`, no
/// chain); each later token must be tainted by it too.
fn later_tokens(r: &Report, token: usize) -> Vec<(usize, &TaintReport)> {
    let mut later = Vec::new();
    for (i, e) in r.reads.iter().enumerate() {
        if i < token {
            assert_eq!(e.result, ReadResult::Clean, "token {i}");
            continue;
        }
        let ReadResult::Tainted(t) = &e.result else {
            panic!("token {i} is {:?}", e.result);
        };
        assert_eq!(t.error.kernel, "graph:1", "token {i}");
        if i == token {
            assert!(t.chain.is_empty(), "tainted by the replay itself");
        } else {
            later.push((i, t));
        }
    }
    later
}

/// The failed replay's token thrown away and a good one written into the
/// pass's input by the host before every later replay, as a server that
/// noticed the failure might: with checked replays every later token is
/// still tainted, since the caches the failed replay wrote its key and
/// value into are read whole by each later pass. The chains now run back
/// to the `index_copy_` that appends to a cache, not to the input.
#[test]
fn with_checked_replays_a_fresh_input_does_not_clean_the_tokens_made_from_a_spoilt_key_value_cache()
{
    let log = load(GPT2_DECODE_GRAPH);
    let token = 5;
    let (first, input, input_stream) = first_launch_and_input(&log);
    let mut replay = Replay::new(ReplayOptions {
        checked_replays: true,
        ..options(&[], true)
    })
    .expect("good options");
    let mut replays = 0;
    for line in log.lines.iter().cloned() {
        if let Ok(Event::Replay { .. }) = line.event {
            replays += 1;
            if replays > token {
                let fresh = Event::HostWrite {
                    binding: LogBinding {
                        stream: input_stream,
                        memory: input,
                        range: None,
                        access: Access::Write,
                    },
                    outcome: Outcome::Ok,
                };
                replay
                    .apply(Line {
                        number: line.number,
                        event: Ok(fresh),
                    })
                    .expect("the input is written");
            }
        }
        replay
            .apply(failed_replay_if(
                replays == token && matches!(line.event, Ok(Event::Replay { .. })),
                line,
            ))
            .expect("applies");
    }
    let (r, _) = replay.finish();
    assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
    assert_eq!(r.reads.len(), DECODED_TOKENS);
    for (i, t) in later_tokens(&r, token) {
        let oldest = t.chain.last().expect("a chain");
        assert_ne!(
            oldest.launch, first,
            "token {i}: the input was written fresh"
        );
        assert!(
            oldest.kernel.ends_with("index_copy_"),
            "token {i}: {oldest:?}"
        );
        assert!(
            log.launch(oldest.launch)
                .bindings
                .iter()
                .any(|b| b.memory == oldest.needed && b.access == Access::ReadWrite),
            "token {i}: {oldest:?}"
        );
    }
}

/// The prefill's token copied into the pass's input (the one launch after
/// the capture) failing: with plain replays every token reads clean, since
/// the first replay releases the input it reads and overwrites; with
/// checked replays every token from the first replay on is tainted, each
/// chain running back to the captured launch that read the input.
#[test]
fn a_failed_copy_of_the_first_token_into_the_graphs_input_taints_every_replayed_token_only_when_replays_are_checked()
 {
    let log = load(GPT2_DECODE_GRAPH);
    let captured = log.captured_launches();
    let last_captured = captured.last().expect("a captured launch").0;
    let copy = log.launch(last_captured + 1);
    assert!(copy.kernel.contains("copy"), "{}", copy.kernel);
    let input = copy
        .bindings
        .iter()
        .find(|b| b.access.writes())
        .expect("the copy writes")
        .memory;
    let first_replay_line = log
        .lines
        .iter()
        .find(|l| matches!(l.event, Ok(Event::Replay { .. })))
        .expect("a replay")
        .number;
    for checked in [false, true] {
        let r = replay_with(
            &log.lines,
            ReplayOptions {
                checked_replays: checked,
                ..options(&[last_captured + 1], true)
            },
        );
        assert_eq!(r.failures_minted, 1);
        for e in &r.reads {
            let after = e.line > first_replay_line;
            match &e.result {
                ReadResult::Clean => assert!(!checked || !after, "line {}", e.line),
                ReadResult::Tainted(t) => {
                    assert!(checked && after, "line {}", e.line);
                    let oldest = t.chain.last().expect("a chain");
                    assert_eq!(oldest.needed, input);
                    assert_eq!(
                        oldest.kernel,
                        format!("graph:1/{}", log.launch(oldest.launch).kernel)
                    );
                }
                other => panic!("line {}: {other:?}", e.line),
            }
        }
        let tainted = r
            .reads
            .iter()
            .filter(|e| matches!(e.result, ReadResult::Tainted(_)))
            .count();
        let want = if checked { DECODED_TOKENS - 1 } else { 0 };
        assert_eq!(tainted, want, "checked: {checked}");
    }
}

/// The GPT-2 training step captured whole and replayed twenty times (its
/// inputs written fresh by the host before each replay), the fifth replay
/// failing: the step's graph reads its own state too — the weights and
/// AdamW's moments that the last replay updated in place — so with plain
/// replays the loss read after the last replay is clean, and with checked
/// replays it is tainted by the failed replay, through the captured
/// launches, back to one that read memory the step updates in place
/// (bound `read_write` in the capture), and every replay after the failed
/// one is listed as skipped.
#[test]
fn a_failed_replay_of_the_captured_training_step_taints_the_loss_through_its_state_only_when_replays_are_checked()
 {
    let log = load(GPT2_GRAPH);
    let replays = log.replay_lines();
    assert!(replays.len() > 5, "{} replays", replays.len());
    let failed = replays[4];
    let captured: BTreeSet<u64> = log.captured_launches().iter().map(|l| l.0).collect();
    for checked in [false, true] {
        let mut replay = Replay::new(ReplayOptions {
            checked_replays: checked,
            ..options(&[], true)
        })
        .expect("good options");
        for (i, line) in log.lines.iter().cloned().enumerate() {
            replay
                .apply(failed_replay_if(i == failed, line))
                .expect("applies");
        }
        let (r, _) = replay.finish();
        assert!(r.rejected.is_empty() && r.unresolved_bindings == 0);
        let loss = r.reads.last().expect("the loss is read");
        assert!(loss.line > log.lines[*replays.last().expect("a replay")].number);
        let skipped = r
            .launch_results
            .iter()
            .filter(|e| matches!(e, LaunchResult::ReplaySkipped { .. }))
            .count();
        if !checked {
            assert_eq!(loss.result, ReadResult::Clean);
            assert_eq!(skipped, 0);
            continue;
        }
        let ReadResult::Tainted(t) = &loss.result else {
            panic!("the loss is {:?}", loss.result);
        };
        assert_eq!(t.error.kernel, "graph:1");
        assert!(!t.chain.is_empty());
        for hop in &t.chain {
            assert!(captured.contains(&hop.launch), "launch {}", hop.launch);
            let kernel = &log.launch(hop.launch).kernel;
            assert_eq!(hop.kernel, format!("graph:1/{kernel}"));
        }
        // What the chain starts from is state the step updates in place.
        let oldest = t.chain.last().expect("a chain");
        let in_place = log.captured_launches().iter().any(|(_, bindings)| {
            bindings
                .iter()
                .any(|b| b.memory == oldest.needed && b.access == Access::ReadWrite)
        });
        assert!(in_place, "{oldest:?}");
        assert_eq!(
            skipped,
            replays.len() - 5,
            "every replay after the failed one"
        );
    }
}

/// The captured pass writes its token's key and value where a position
/// tensor says, so the log binds each layer's cache whole, `read_write`,
/// in the graph and in the warm-up pass before it: a failure anywhere in a
/// cache — here the zero-fill of one, launch 3, which in the eager
/// decoder's log harms no token (every position is written there before it
/// is read) — skips the warm-up pass's `index_copy_` and every launch
/// after it that depends on it, down to the next token it writes into the
/// pass's input, so the captured pass's first launch reads a tainted token
/// and the capture fails, making no graph; every replay, and the graph's
/// destruction, is then bad input.
#[test]
fn a_failure_left_in_a_cache_fails_the_capture_of_the_pass_that_binds_the_cache_whole() {
    let log = load(GPT2_DECODE_GRAPH);
    let zero_fill = log.launch(3);
    assert!(zero_fill.kernel.contains("zeros"), "{}", zero_fill.kernel);
    let cache = zero_fill.bindings[0].memory;
    let whole = log
        .captured_bindings()
        .iter()
        .filter(|b| b.memory == cache && b.access == Access::ReadWrite)
        .count();
    assert_eq!(
        whole, 1,
        "the captured pass binds the cache read and written"
    );

    let r = replay_with(
        &log.lines,
        ReplayOptions {
            keep_going: true,
            ..options(&[3], false)
        },
    );
    assert_eq!(r.captures.len(), 1);
    let CaptureResult::Failed(report) = &r.captures[0].result else {
        panic!("{:?}", r.captures[0].result);
    };
    // The chain runs back to a skipped launch that bound the cache whole.
    let oldest = report.chain.last().expect("a chain");
    assert_eq!(oldest.needed, cache);
    assert!(
        log.launch(oldest.launch)
            .bindings
            .iter()
            .any(|b| b.memory == cache && b.access == Access::ReadWrite),
        "launch {} ({})",
        oldest.launch,
        log.launch(oldest.launch).kernel
    );
    let graph_lines = log
        .lines
        .iter()
        .filter(|l| {
            matches!(
                l.event,
                Ok(Event::Replay { .. } | Event::GraphDestroy { .. })
            )
        })
        .count();
    assert_eq!(
        r.rejected.len(),
        graph_lines,
        "every replay and the destroy"
    );
}
