//! SPEC.md rules that the `replay` command (§7, §8, §9 and Appendix A) and
//! the library (§3, §4, §6, §6a) must keep and that no other test asserted
//! directly:
//!
//! * fault injection: the injected error, an injected dry run, a skip over an
//!   injected failure, and the occurrence an injected failure counts;
//! * the header and the command line: `max_streams` and `chain_limit` from
//!   either, the command line winning;
//! * report entries: failed host writes and replays, dry runs, failures with
//!   an empty write set, device faults on reads and syncs;
//! * `events` and the header, a broken `.gz`, `--strict`;
//! * captures and profiles: what a window records, the replay's `stream`,
//!   windows and profiles left open, unbalanced captures and profiles;
//! * library rules so far asserted only through the random model: finding a
//!   failure whose only carrier is the write set, failed replays of one
//!   identity, unresolved write bindings, skips over failed reservations.
//!
//! Every expected value below is worked out by hand from SPEC.md.
//!
//! The replay and its JSON are the `log` feature's and the command the
//! `cli` feature's, and all but section 9's tests go through the command:
//! built without `cli` (`cargo test
//! --no-default-features`) the file holds no tests. Section 9's library
//! rules are still held there by the model proptest, `world_matches_model`,
//! which every build runs.

#![cfg(feature = "cli")]

mod common;

use std::process::{Command, Output};

use common::{FAIL, claims, go, reads, writes};
use serde_json::{Value, json};
use taintworld::log::{
    CaptureResult as LogCapture, LogReader, ReadResult as LogRead, ReplayError, ReplayOptions,
    SUMMARY_FAILURES, SUMMARY_READS, SUMMARY_REJECTED, Untallied, replay,
};
use taintworld::{
    Access, Binding, CaptureResult, ErrorInfo, Outcome, ReadResult, TaintReport, Verdict, World,
};

// ---- running the command ----------------------------------------------------

/// A compile failure, as a log writes the outcome.
const FAILED: &str = r#"{"failed":{"kind":"compile","message":"bad PTX"}}"#;
/// A failed host copy, as a log writes the outcome.
const COPY_FAILED: &str = r#"{"failed":{"kind":"copy","message":"DMA error"}}"#;
/// A failed graph launch, as a log writes the outcome.
const GRAPH_FAILED: &str = r#"{"failed":{"kind":"launch","message":"graph launch failed"}}"#;

/// A fresh scratch folder, removed with all in it when the value is
/// dropped, at the end of the helper or test that holds it, by a failed
/// assertion too, so that runs leave nothing behind in the temp folder.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("taintworld-spec-replay-rules-")
        .tempdir()
        .expect("a scratch folder")
}

fn taintworld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_taintworld"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Writes `log` (one event a line) to a scratch file named `name` and runs
/// `taintworld replay --json ARGS… FILE`. The file's folder lives only as
/// long as the run: the output is all a caller gets back.
fn run(name: &str, log: &[&str], args: &[&str]) -> Output {
    let dir = scratch();
    let path = dir.path().join(name);
    let mut text = log.join("\n");
    text.push('\n');
    std::fs::write(&path, text).expect("scratch log");
    let mut all = vec!["replay", "--json"];
    all.extend_from_slice(args);
    all.push(path.to_str().expect("a UTF-8 temp path"));
    taintworld(&all)
}

/// The report of a replay that must succeed, parsed and as raw text.
fn report(name: &str, log: &[&str], args: &[&str]) -> (Value, String) {
    let out = run(name, log, args);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("the report is UTF-8");
    let value = serde_json::from_str(&text).expect("the report is JSON");
    (value, text)
}

/// A replay that must stop at line `line`: exit 2, nothing on stdout, and
/// `error: line N: ` on stderr.
fn assert_stops_at(name: &str, log: &[&str], args: &[&str], line: u64) {
    let out = run(name, log, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    assert!(
        out.stdout.is_empty(),
        "{name}: exit 2 prints nothing on stdout"
    );
    assert!(
        err.starts_with(&format!("error: line {line}: ")),
        "{name}: {err}"
    );
}

/// Lines `bad` are bad input: without `--keep-going` the replay stops at the
/// first; with it, exactly those lines are listed under `rejected`. The
/// `--keep-going` report.
fn assert_rejected(name: &str, log: &[&str], bad: &[u64]) -> Value {
    assert_stops_at(name, log, &[], bad[0]);
    let (r, _) = report(name, log, &["--keep-going"]);
    let lines: Vec<u64> = r["rejected"]
        .as_array()
        .expect("rejected is a list")
        .iter()
        .map(|e| e["line"].as_u64().expect("a line number"))
        .collect();
    assert_eq!(lines, bad, "{name}: {}", r["rejected"]);
    r
}

fn alloc(stream: u64, memory: u64, size: u64) -> String {
    format!(r#"{{"op":"alloc","stream":{stream},"memory":{memory},"size":{size}}}"#)
}

/// A whole-allocation binding.
fn bind(stream: u64, memory: u64, access: &str) -> String {
    format!(r#"{{"stream":{stream},"memory":{memory},"access":"{access}"}}"#)
}

fn launch(kernel: &str, stream: u64, bindings: &[String], outcome: &str) -> String {
    format!(
        r#"{{"op":"launch","kernel":"{kernel}","stream":{stream},"bindings":[{}],"outcome":{}}}"#,
        bindings.join(","),
        quoted(outcome)
    )
}

fn host_write(stream: u64, memory: u64, outcome: &str) -> String {
    format!(
        r#"{{"op":"host_write","binding":{{"stream":{stream},"memory":{memory}}},"outcome":{}}}"#,
        quoted(outcome)
    )
}

fn read(stream: u64, memory: u64) -> String {
    format!(r#"{{"op":"read","binding":{{"stream":{stream},"memory":{memory}}}}}"#)
}

fn replay_line(graph: u64, stream: u64, outcome: &str) -> String {
    format!(
        r#"{{"op":"replay","graph":{graph},"stream":{stream},"outcome":{}}}"#,
        quoted(outcome)
    )
}

/// `ok` and `dry_run` as JSON strings; a failed outcome's object as given.
fn quoted(outcome: &str) -> String {
    if outcome.starts_with('{') {
        outcome.to_string()
    } else {
        format!("\"{outcome}\"")
    }
}

fn error(kind: &str, kernel: &str, message: &str) -> Value {
    json!({"kind": kind, "kernel": kernel, "message": message})
}

/// A tainted read's entry.
fn tainted(line: u64, memory: u64, failure: u64, err: Value, occurrences: u64) -> Value {
    tainted_via(line, memory, failure, err, occurrences, json!([]), false)
}

fn tainted_via(
    line: u64,
    memory: u64,
    failure: u64,
    err: Value,
    occurrences: u64,
    chain: Value,
    truncated: bool,
) -> Value {
    json!({"line": line, "memory": memory, "result": "tainted", "failure": failure,
           "error": err, "occurrences": occurrences, "chain": chain, "truncated": truncated})
}

fn clean(line: u64, memory: u64) -> Value {
    json!({"line": line, "memory": memory, "result": "clean"})
}

fn unresolved(line: u64, memory: u64) -> Value {
    json!({"line": line, "memory": memory, "result": "unresolved"})
}

fn hop(launch: u64, kernel: &str, needed: u64) -> Value {
    json!({"launch": launch, "kernel": kernel, "needed": needed})
}

fn final_state(live_failures: u64, allocations: u64, bytes: u64, claims: u64) -> Value {
    json!({"live_failures": live_failures, "tainted_allocations": allocations,
           "tainted_bytes": bytes, "claims": claims})
}

fn verdicts(ran: u64, failed: u64, skipped: u64, dry_run: u64) -> Value {
    json!({"ran": ran, "failed": failed, "skipped": skipped, "dry_run": dry_run})
}

// ---- 1. fault injection (§7, Appendix A "Failures") -------------------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn an_injected_failure_has_kind_injected_message_injected_failure_and_the_launchs_kernel() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        &launch("fill", 0, &[bind(0, 1, "write")], "ok"),
        &launch("gelu", 0, &[bind(0, 2, "write")], FAILED),
        &read(0, 1),
        &read(0, 2),
    ];
    let args = ["--fail-launch", "0", "--fail-launch", "1"];
    let (r, _) = report("injected_error.jsonl", &log, &args);
    assert_eq!(r["verdicts"], verdicts(0, 2, 0, 0));
    assert_eq!(
        r["launch_results"],
        json!([
            {"launch": 0, "line": 3, "verdict": "failed", "failure": 1},
            {"launch": 1, "line": 4, "verdict": "failed", "failure": 2},
        ])
    );
    // Whatever the log says (ok, or a compile failure), the error is the
    // injected one, with each launch's own kernel: two identities.
    assert_eq!(
        r["reads"],
        json!([
            tainted(5, 1, 1, error("injected", "fill", "injected failure"), 1),
            tainted(6, 2, 2, error("injected", "gelu", "injected failure"), 1),
        ])
    );
    assert_eq!(r["failures_minted"], 2);
    assert_eq!(r["final"], final_state(2, 2, 32, 2));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn an_injected_dry_run_launch_is_processed_as_failed() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &launch("fill", 0, &[bind(0, 1, "write")], "dry_run"),
        &read(0, 1),
    ];
    let (r, _) = report("injected_dry_run.jsonl", &log, &["--fail-launch", "0"]);
    assert_eq!(r["launches"], 1);
    assert_eq!(r["verdicts"], verdicts(0, 1, 0, 0));
    assert_eq!(
        r["launch_results"],
        json!([{"launch": 0, "line": 2, "verdict": "failed", "failure": 1}])
    );
    assert_eq!(
        r["reads"],
        json!([tainted(
            3,
            1,
            1,
            error("injected", "fill", "injected failure"),
            1
        )])
    );
    assert_eq!(r["failures_minted"], 1);
    assert_eq!(r["final"], final_state(1, 1, 16, 1));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_skip_takes_precedence_over_an_injected_failure() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        &launch("gelu", 0, &[bind(0, 1, "read"), bind(0, 2, "write")], "ok"),
        &read(0, 2),
    ];
    let (r, _) = report("injected_skipped.jsonl", &log, &["--fail-launch", "1"]);
    assert_eq!(r["verdicts"], verdicts(0, 1, 1, 0));
    assert_eq!(
        r["launch_results"],
        json!([
            {"launch": 0, "line": 3, "verdict": "failed", "failure": 1},
            {"launch": 1, "line": 4, "verdict": "skipped", "failure": 1, "needed": 1},
        ])
    );
    // No injected failure was minted and the skip added no occurrence.
    assert_eq!(r["failures_minted"], 1);
    assert_eq!(
        r["reads"],
        json!([tainted_via(
            5,
            2,
            1,
            error("compile", "fill", "bad PTX"),
            1,
            json!([hop(1, "gelu", 1)]),
            false
        )])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn an_injected_failure_counts_an_occurrence() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        &launch("fill", 0, &[bind(0, 1, "write")], "ok"),
        &launch("fill", 0, &[bind(0, 2, "write")], "ok"),
        &read(0, 1),
    ];
    let args = ["--fail-launch", "0", "--fail-launch", "1"];
    let (r, _) = report("injected_occurrences.jsonl", &log, &args);
    assert_eq!(
        r["launch_results"],
        json!([
            {"launch": 0, "line": 3, "verdict": "failed", "failure": 1},
            {"launch": 1, "line": 4, "verdict": "failed", "failure": 1},
        ])
    );
    assert_eq!(
        r["reads"],
        json!([tainted(
            5,
            1,
            1,
            error("injected", "fill", "injected failure"),
            2
        )])
    );
    assert_eq!(r["failures_minted"], 1);
    assert_eq!(r["final"], final_state(1, 2, 32, 2));
}

// ---- 2. header and command line (§1, §4, §7) --------------------------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_headers_max_streams_folds_stream_ids_onto_its_slots() {
    let log = [
        r#"{"op":"header","format":"taintworld-log","version":1,"max_streams":3}"#,
        &alloc(2, 1, 16),
        // 5 % 3 == 2: resolves (with the default 8 slots it would not).
        &host_write(5, 1, COPY_FAILED),
        // 8 % 3 == 2: resolves.
        &read(8, 1),
        // 10 % 3 == 1, never initialized (with 8 slots it would be slot 2).
        &read(10, 1),
    ];
    let (r, _) = report("header_max_streams.jsonl", &log, &[]);
    assert_eq!(r["events"], 4);
    assert_eq!(
        r["launch_results"],
        json!([{"host_write": true, "line": 3, "verdict": "failed", "failure": 1}])
    );
    assert_eq!(
        r["reads"],
        json!([
            tainted(4, 1, 1, error("copy", "host_write", "DMA error"), 1),
            unresolved(5, 1),
        ])
    );
    assert_eq!(r["unresolved_bindings"], 1);
    assert_eq!(r["final"], final_state(1, 1, 16, 1));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn max_streams_on_the_command_line_wins_over_the_headers() {
    let log = [
        r#"{"op":"header","format":"taintworld-log","version":1,"max_streams":4}"#,
        &alloc(1, 1, 16),
        &launch("fill", 1, &[bind(5, 1, "write")], FAILED),
        &read(1, 1),
        &read(5, 1),
    ];
    // The header alone: 5 % 4 == 1, the launch taints memory 1.
    let (by_header, _) = report("cli_max_streams.jsonl", &log, &[]);
    assert_eq!(
        by_header["reads"],
        json!([
            tainted(4, 1, 1, error("compile", "fill", "bad PTX"), 1),
            tainted(5, 1, 1, error("compile", "fill", "bad PTX"), 1),
        ])
    );
    assert_eq!(by_header["unresolved_bindings"], 0);
    assert_eq!(by_header["final"], final_state(1, 1, 16, 1));

    // `--max-streams 8`: stream 5 is slot 5, never initialized; the failed
    // launch's write set is empty, so its failure is minted and pruned.
    let (by_cli, _) = report("cli_max_streams.jsonl", &log, &["--max-streams", "8"]);
    assert_eq!(
        by_cli["launch_results"],
        json!([{"launch": 0, "line": 3, "verdict": "failed", "failure": 1}])
    );
    assert_eq!(by_cli["reads"], json!([clean(4, 1), unresolved(5, 1)]));
    assert_eq!(by_cli["unresolved_bindings"], 2);
    assert_eq!(by_cli["failures_minted"], 1);
    assert_eq!(by_cli["final"], final_state(0, 0, 0, 0));
}

/// A chain of four skips from a failed `fill` over memories 0..=4, then a
/// read of memories 1..=4 (lines 12..=15), under `header`.
fn chain_log(header: &str) -> Vec<String> {
    let mut log = vec![header.to_string()];
    log.extend((0..=4).map(|m| alloc(0, m, 16)));
    log.push(launch("fill", 0, &[bind(0, 0, "write")], FAILED));
    for m in 1..=4u64 {
        let kernel = format!("k{m}");
        log.push(launch(
            &kernel,
            0,
            &[bind(0, m - 1, "read"), bind(0, m, "write")],
            "ok",
        ));
    }
    log.extend((1..=4).map(|m| read(0, m)));
    log
}

fn chain_of(r: &Value, memory: u64) -> (Value, Value) {
    let entry = r["reads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["memory"] == memory)
        .expect("a read of that memory");
    assert_eq!(entry["result"], "tainted");
    assert_eq!(entry["failure"], 1);
    (entry["chain"].clone(), entry["truncated"].clone())
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_headers_chain_limit_cuts_chains_longer_than_it() {
    let log = chain_log(r#"{"op":"header","format":"taintworld-log","version":1,"chain_limit":2}"#);
    let log: Vec<&str> = log.iter().map(String::as_str).collect();
    let (r, _) = report("header_chain_limit.jsonl", &log, &[]);
    assert_eq!(r["verdicts"], verdicts(0, 1, 4, 0));
    assert_eq!(chain_of(&r, 1), (json!([hop(1, "k1", 0)]), json!(false)));
    assert_eq!(
        chain_of(&r, 2),
        (json!([hop(2, "k2", 1), hop(1, "k1", 0)]), json!(false))
    );
    // k3's record would have depth 3 > 2: it is cut.
    assert_eq!(chain_of(&r, 3), (json!([hop(3, "k3", 2)]), json!(true)));
    assert_eq!(
        chain_of(&r, 4),
        (json!([hop(4, "k4", 3), hop(3, "k3", 2)]), json!(true))
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn chain_limit_on_the_command_line_wins_over_the_headers() {
    let log = chain_log(r#"{"op":"header","format":"taintworld-log","version":1,"chain_limit":1}"#);
    let log: Vec<&str> = log.iter().map(String::as_str).collect();
    let (by_header, _) = report("cli_chain_limit.jsonl", &log, &[]);
    assert_eq!(
        chain_of(&by_header, 4),
        (json!([hop(4, "k4", 3)]), json!(true))
    );
    let (by_cli, _) = report("cli_chain_limit.jsonl", &log, &["--chain-limit", "4"]);
    assert_eq!(
        chain_of(&by_cli, 4),
        (
            json!([
                hop(4, "k4", 3),
                hop(3, "k3", 2),
                hop(2, "k2", 1),
                hop(1, "k1", 0)
            ]),
            json!(false)
        )
    );
}

// ---- 3. report entries (§8, Appendix A "Report shapes") ---------------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_failed_host_write_is_listed_with_host_write_true_line_verdict_and_failure_in_that_order() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &host_write(0, 1, COPY_FAILED),
        &read(0, 1),
    ];
    let (r, text) = report("host_write_entry.jsonl", &log, &[]);
    assert!(
        text.contains(
            r#""launch_results":[{"host_write":true,"line":2,"verdict":"failed","failure":1}]"#
        ),
        "{text}"
    );
    // A host write is not a launch.
    assert_eq!(r["launches"], 0);
    assert_eq!(r["verdicts"], verdicts(0, 0, 0, 0));
    assert_eq!(
        r["reads"],
        json!([tainted(
            3,
            1,
            1,
            error("copy", "host_write", "DMA error"),
            1
        )])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_dry_run_launch_is_listed_with_launch_line_and_verdict_only() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &launch("fill", 0, &[bind(0, 1, "write")], "dry_run"),
        &read(0, 1),
    ];
    let (r, text) = report("dry_run_entry.jsonl", &log, &[]);
    assert!(
        text.contains(r#""launch_results":[{"launch":0,"line":2,"verdict":"dry_run"}]"#),
        "{text}"
    );
    assert_eq!(r["verdicts"], verdicts(0, 0, 0, 1));
    assert_eq!(r["reads"], json!([clean(3, 1)]));
    assert_eq!(r["failures_minted"], 0);
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_failed_replay_is_listed_with_replay_true_graph_line_verdict_and_failure_in_that_order() {
    let log = [
        &alloc(0, 1, 16) as &str,
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":7}"#,
        &replay_line(7, 0, GRAPH_FAILED),
        &read(0, 1),
    ];
    let (r, text) = report("replay_entry.jsonl", &log, &[]);
    assert!(
        text.contains(
            r#""launch_results":[{"replay":true,"graph":7,"line":5,"verdict":"failed","failure":1}]"#
        ),
        "{text}"
    );
    // A replay is not a launch: only the captured launch is counted.
    assert_eq!(r["launches"], 1);
    assert_eq!(r["verdicts"], verdicts(1, 0, 0, 0));
    assert_eq!(
        r["captures"],
        json!([{"line": 4, "graph": 7, "result": "ok"}])
    );
    assert_eq!(
        r["reads"],
        json!([tainted(
            6,
            1,
            1,
            error("launch", "graph:7", "graph launch failed"),
            1
        )])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_failed_host_write_or_replay_with_an_empty_write_set_is_listed_mints_its_failure_and_is_pruned()
{
    let log = [
        &alloc(0, 1, 16) as &str,
        // Memory 9 is not live: the host write's binding is unresolved.
        &host_write(0, 9, COPY_FAILED),
        r#"{"op":"capture_begin","stream":1}"#,
        r#"{"op":"capture_end","stream":1,"graph":3}"#,
        // Graph 3 recorded nothing.
        &replay_line(3, 1, GRAPH_FAILED),
        &read(0, 1),
    ];
    let (r, _) = report("empty_write_sets.jsonl", &log, &[]);
    assert_eq!(
        r["launch_results"],
        json!([
            {"host_write": true, "line": 2, "verdict": "failed", "failure": 1},
            {"replay": true, "graph": 3, "line": 5, "verdict": "failed", "failure": 2},
        ])
    );
    assert_eq!(r["reads"], json!([clean(6, 1)]));
    assert_eq!(r["unresolved_bindings"], 1);
    assert_eq!(r["failures_minted"], 2);
    assert_eq!(r["final"], final_state(0, 0, 0, 0));

    // Pruned, not kept: the same identity later mints a new id.
    let write = host_write(0, 1, COPY_FAILED);
    let mut again = log.to_vec();
    again.push(&write);
    let (r, _) = report("empty_write_sets.jsonl", &again, &[]);
    assert_eq!(
        r["launch_results"][2],
        json!({"host_write": true, "line": 7, "verdict": "failed", "failure": 3})
    );
    assert_eq!(r["failures_minted"], 3);
    assert_eq!(r["final"], final_state(1, 1, 16, 1));
}

#[test]
fn failed_captures_host_writes_and_replays_are_counted_whether_or_not_the_lists_are_kept() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        // Doomed: the captured launch reads failure 1's bytes.
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("copy", 0, &[bind(0, 1, "read"), bind(0, 2, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        // Clean: a graph that writes memory 2.
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("zero", 0, &[bind(0, 2, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":2}"#,
        &replay_line(2, 0, "ok"),
        &replay_line(2, 0, GRAPH_FAILED),
        &host_write(0, 2, "ok"),
        &host_write(0, 2, COPY_FAILED),
    ]
    .join("\n");
    for keep_lists in [false, true] {
        let options = ReplayOptions {
            keep_lists,
            ..ReplayOptions::default()
        };
        let replayed = replay(LogReader::new(log.as_bytes()), options, |_| {}).expect("valid");
        assert_eq!(replayed.failed_captures(), 1, "keep_lists {keep_lists}");
        assert_eq!(
            replayed.failed_host_writes_and_replays(),
            2,
            "keep_lists {keep_lists}"
        );
        let (r, _) = replayed.finish();
        if keep_lists {
            // The counts are the lists' own.
            let failed_captures = r
                .captures
                .iter()
                .filter(|c| matches!(c.result, LogCapture::Failed(_)))
                .count();
            assert_eq!((r.captures.len(), failed_captures), (2, 1));
            assert_eq!(
                r.launch_results.len(),
                4,
                "a failure, a skip, a replay, a write"
            );
        } else {
            assert!(r.captures.is_empty() && r.launch_results.is_empty());
        }
    }
}

/// Without the lists, what a replay keeps for its summary is bounded
/// whatever the log's length: the first `SUMMARY_REJECTED` rejected lines
/// and the tallies of the first `SUMMARY_FAILURES` failures, the rest
/// counted. With them, every rejected line is listed.
#[test]
fn without_the_lists_a_replay_keeps_a_bounded_summary_and_counts_the_rest() {
    let mut log = vec![alloc(0, 1, 16)];
    for i in 0..(SUMMARY_FAILURES + 7) {
        log.push(launch(
            "fill",
            0,
            &[bind(0, 1, "write")],
            &format!(r#"{{"failed":{{"kind":"compile","message":"error {i}"}}}}"#),
        ));
    }
    log.push(launch("use", 0, &[bind(0, 1, "read_write")], "ok"));
    let bad = SUMMARY_REJECTED * 3;
    log.extend((0..bad).map(|_| r#"{"op":"free","memory":99}"#.to_string()));
    let log = log.join("\n");
    for keep_lists in [false, true] {
        let options = ReplayOptions {
            keep_lists,
            keep_going: true,
            ..ReplayOptions::default()
        };
        let replayed = replay(LogReader::new(log.as_bytes()), options, |_| {}).expect("valid");
        assert_eq!(replayed.rejected(), bad as u64);
        assert_eq!(replayed.tallies().len(), SUMMARY_FAILURES);
        assert_eq!(
            replayed.tallies().keys().copied().collect::<Vec<_>>(),
            (1..=SUMMARY_FAILURES as u64).collect::<Vec<_>>()
        );
        // Seven more failed launches, and the last failure's skip.
        let mut untallied = Untallied::default();
        untallied.failed = 7;
        untallied.skipped = 1;
        assert_eq!(replayed.untallied(), untallied);
        let (r, _) = replayed.finish();
        let listed = if keep_lists { bad } else { SUMMARY_REJECTED };
        assert_eq!(r.rejected.len(), listed, "keep_lists {keep_lists}");
    }
}

/// Without the lists, a replay keeps the first `SUMMARY_READS` tainted
/// reads and the first `SUMMARY_READS` unresolved ones, whichever path
/// answers them: the full read, or the cheaper question it asks once the
/// tainted reads it keeps are all there. With the lists, it keeps every
/// read. Either way it counts them all.
#[test]
fn without_the_lists_a_replay_keeps_the_first_few_tainted_and_unresolved_reads_on_either_path() {
    let each = SUMMARY_READS + 2;
    let tainted_reads = || (0..each).map(|_| read(0, 1));
    let unresolved_reads = || (0..each as u64).map(|memory| read(0, 100 + memory));
    for tainted_first in [false, true] {
        let mut log = vec![
            alloc(0, 1, 16),
            launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        ];
        if tainted_first {
            log.extend(tainted_reads().chain(unresolved_reads()));
        } else {
            log.extend(unresolved_reads().chain(tainted_reads()));
        }
        let log = log.join("\n");
        for keep_lists in [false, true] {
            let options = ReplayOptions {
                keep_lists,
                ..ReplayOptions::default()
            };
            let replayed = replay(LogReader::new(log.as_bytes()), options, |_| {}).expect("valid");
            let case = format!("tainted first {tainted_first}, keep_lists {keep_lists}");
            assert_eq!(replayed.tainted_read_count(), each as u64, "{case}");
            assert_eq!(replayed.unresolved_read_count(), each as u64, "{case}");
            let kept = if keep_lists { each } else { SUMMARY_READS };
            assert_eq!(replayed.tainted_reads().count(), kept, "{case}");
            let unresolved: Vec<u64> = replayed.unresolved_reads().map(|r| r.memory).collect();
            assert_eq!(
                unresolved,
                (100..100 + kept as u64).collect::<Vec<_>>(),
                "{case}"
            );
        }
    }
}

/// An allocation freed while it carries one failure in two ranges is one
/// allocation freed against that failure's tally, with both ranges' bytes.
#[test]
fn an_allocation_freed_with_two_ranges_of_one_failure_counts_once_with_the_bytes_of_both() {
    let write_at = |start: u64, end: u64| {
        format!(r#"{{"stream":0,"memory":1,"range":[{start},{end}],"access":"write"}}"#)
    };
    let log = [
        alloc(0, 1, 64),
        launch("fill", 0, &[write_at(0, 8), write_at(32, 40)], FAILED),
        r#"{"op":"free","memory":1}"#.to_string(),
    ]
    .join("\n");
    let replayed = replay(
        LogReader::new(log.as_bytes()),
        ReplayOptions::default(),
        |_| {},
    )
    .expect("valid");
    let tally = &replayed.tallies()[&1];
    assert_eq!((tally.freed, tally.freed_bytes), (1, 16));
    assert_eq!(replayed.untallied(), Untallied::default());
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn after_a_device_fault_reads_and_syncs_report_result_device_fault_with_an_error_object() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        r#"{"op":"sync"}"#,
        r#"{"op":"device_fault","error":{"kind":"xid","message":"illegal address"}}"#,
        &read(0, 1),
        &read(0, 9),
        r#"{"op":"sync"}"#,
        r#"{"op":"device_fault","error":{"kind":"xid","message":"second fault"}}"#,
        r#"{"op":"sync"}"#,
    ];
    let (r, text) = report("device_fault.jsonl", &log, &[]);
    let fault = r#"{"kind":"xid","kernel":"device","message":"illegal address"}"#;
    assert!(
        text.contains(&format!(
            r#"{{"line":5,"memory":1,"result":"device_fault","error":{fault}}}"#
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            r#"{{"line":7,"result":"device_fault","error":{fault}}}"#
        )),
        "{text}"
    );
    let fault = error("xid", "device", "illegal address");
    // An unresolved read stays unresolved: it resolves first.
    assert_eq!(
        r["reads"],
        json!([
            {"line": 5, "memory": 1, "result": "device_fault", "error": fault},
            unresolved(6, 9),
        ])
    );
    // The first fault wins.
    assert_eq!(
        r["syncs"],
        json!([
            {"line": 3, "result": "ok"},
            {"line": 7, "result": "device_fault", "error": fault},
            {"line": 9, "result": "device_fault", "error": fault},
        ])
    );
    // The fault mints no failure.
    assert_eq!(r["failures_minted"], 1);
    assert_eq!(r["final"], final_state(1, 1, 16, 1));
}

// ---- 4. events and the header (§8, Appendix A "Reading a log") -------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_rejected_header_counts_in_events_and_an_accepted_one_does_not() {
    let sync = r#"{"op":"sync"}"#;
    let rejected = [
        "# a comment",
        "",
        r#"{"op":"header","format":"taintworld-log","version":2}"#,
        &alloc(0, 1, 16),
        sync,
    ];
    let r = assert_rejected("header_rejected.jsonl", &rejected, &[3]);
    assert_eq!(r["events"], 3);
    assert_eq!(r["syncs"], json!([{"line": 5, "result": "ok"}]));

    let accepted = [
        "# a comment",
        "",
        r#"{"op":"header","format":"taintworld-log","version":1}"#,
        &alloc(0, 1, 16),
        sync,
    ];
    let (r, _) = report("header_accepted.jsonl", &accepted, &[]);
    assert_eq!(r["events"], 2);
    assert_eq!(r["rejected"], json!([]));
}

// ---- 5. a broken .gz (Appendix A "Reading a log") ---------------------------

#[test]
fn a_header_that_reaches_a_replay_after_an_event_is_bad_input_even_when_its_reader_read_it_first() {
    // Two logs replayed as one: the second's header is the first line its
    // own reader read, so the reader takes it as a header, but the replay
    // has had an event already.
    let first = alloc(0, 1, 16);
    let second = [
        r#"{"op":"header","format":"taintworld-log","version":1,"max_streams":1}"#,
        &read(0, 1),
    ]
    .join("\n");
    let lines = || LogReader::new(first.as_bytes()).chain(LogReader::new(second.as_bytes()));
    match replay(lines(), ReplayOptions::default(), |_| {}) {
        Err(ReplayError::BadLine { line, error, .. }) => {
            assert_eq!((line, &*error), (1, "header must be the first event"));
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a second header was accepted"),
    }
    let options = ReplayOptions {
        keep_going: true,
        keep_lists: true,
        ..ReplayOptions::default()
    };
    let (r, _) = replay(lines(), options, |_| {})
        .expect("keep_going")
        .finish();
    assert_eq!(r.rejected.len(), 1);
    // The world was not made again: memory 1 is still there to read.
    assert_eq!(r.events, 3, "a rejected header is an event");
    assert_eq!(r.unresolved_bindings, 0);
    assert!(matches!(r.reads[0].result, LogRead::Clean));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_broken_gz_log_is_an_error_with_exit_status_2_and_nothing_on_stdout() {
    let dir = scratch();
    let good = dir.path().join("good.jsonl.gz");
    let out = taintworld(&[
        "gen",
        "--seed",
        "5",
        "--launches",
        "2000",
        "--shape",
        "chain",
        "-o",
        good.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let bytes = std::fs::read(&good).unwrap();
    assert!(
        taintworld(&["replay", "--json", good.to_str().unwrap()])
            .status
            .success()
    );

    let mut bad_crc = bytes.clone();
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 0xff; // the gzip trailer's CRC-32
    let cases: [(&str, Vec<u8>); 3] = [
        ("not_gzip.jsonl.gz", b"this is not gzip\n".to_vec()),
        ("truncated.jsonl.gz", bytes[..bytes.len() / 2].to_vec()),
        ("bad_crc.jsonl.gz", bad_crc),
    ];
    for (name, content) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let out = taintworld(&["replay", "--json", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{name}: exit 2 prints nothing on stdout"
        );
        assert!(err.starts_with("error: "), "{name}: {err}");
    }
}

// ---- 6. captures and profiles (§6, Appendix A "Captures") ------------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn an_ok_host_write_on_a_captured_slot_is_not_recorded_into_the_window() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], "ok"),
        &host_write(0, 2, "ok"),
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        &host_write(0, 1, COPY_FAILED),
        &host_write(0, 2, COPY_FAILED),
        // Releases what the window recorded: memory 1, not memory 2.
        &replay_line(1, 0, "ok"),
        &read(0, 1),
        &read(0, 2),
    ];
    let (r, _) = report("host_write_not_recorded.jsonl", &log, &[]);
    assert_eq!(
        r["captures"],
        json!([{"line": 6, "graph": 1, "result": "ok"}])
    );
    assert_eq!(
        r["reads"],
        json!([
            clean(10, 1),
            tainted(11, 2, 1, error("copy", "host_write", "DMA error"), 2),
        ])
    );
    assert_eq!(r["final"], final_state(1, 1, 16, 1));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_replays_stream_plays_no_part_even_when_it_differs_from_the_captures() {
    let log = [
        &alloc(0, 1, 16) as &str,
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        // Stream 5 was never initialized: the replay still taints memory 1.
        &replay_line(1, 5, GRAPH_FAILED),
        &read(0, 1),
        r#"{"op":"capture_begin","stream":3}"#,
        // On the capturing slot 3: releases memory 1, is not recorded.
        &replay_line(1, 3, "ok"),
        r#"{"op":"capture_end","stream":3,"graph":2}"#,
        &read(0, 1),
        // Graph 2 recorded nothing: its failed replay taints nothing.
        &replay_line(2, 0, GRAPH_FAILED),
    ];
    let (r, _) = report("replay_stream_ignored.jsonl", &log, &[]);
    assert_eq!(
        r["reads"],
        json!([
            tainted(
                6,
                1,
                1,
                error("launch", "graph:1", "graph launch failed"),
                1
            ),
            clean(10, 1),
        ])
    );
    assert_eq!(
        r["captures"],
        json!([
            {"line": 4, "graph": 1, "result": "ok"},
            {"line": 9, "graph": 2, "result": "ok"},
        ])
    );
    assert_eq!(
        r["launch_results"],
        json!([
            {"replay": true, "graph": 1, "line": 5, "verdict": "failed", "failure": 1},
            {"replay": true, "graph": 2, "line": 11, "verdict": "failed", "failure": 2},
        ])
    );
    assert_eq!(r["unresolved_bindings"], 0);
    assert_eq!(r["failures_minted"], 2);
    assert_eq!(r["final"], final_state(0, 0, 0, 0));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn windows_and_profiles_still_open_at_the_end_are_neither_bad_input_nor_reported() {
    let log = [
        &alloc(0, 1, 16) as &str,
        r#"{"op":"profile_begin","profile":1}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        r#"{"op":"capture_begin","stream":1}"#,
        // Dooms the window on slot 0 and invalidates profile 1.
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        r#"{"op":"profile_begin","profile":2}"#,
    ];
    // Not bad input even when strict and without --keep-going.
    let (r, _) = report("left_open.jsonl", &log, &["--strict"]);
    assert_eq!(r["events"], 6);
    assert_eq!(r["captures"], json!([]));
    assert_eq!(r["profiles"], json!([]));
    assert_eq!(r["rejected"], json!([]));
    assert_eq!(r["final"], final_state(1, 1, 16, 1));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn an_open_doomed_window_still_pins_its_failure_at_the_end() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(1, 2, 16),
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        // The only carrier is rewritten: the window's pin keeps failure 1.
        &host_write(0, 1, "ok"),
        // So the same identity finds it: occurrences 2, no new id.
        &launch("fill", 1, &[bind(1, 2, "write")], FAILED),
        &read(1, 2),
        &host_write(1, 2, "ok"),
        &read(0, 1),
    ];
    let (r, _) = report("open_doomed_window.jsonl", &log, &[]);
    assert_eq!(
        r["launch_results"],
        json!([
            {"launch": 0, "line": 4, "verdict": "failed", "failure": 1},
            {"launch": 1, "line": 6, "verdict": "failed", "failure": 1},
        ])
    );
    assert_eq!(
        r["reads"],
        json!([
            tainted(7, 2, 1, error("compile", "fill", "bad PTX"), 2),
            clean(9, 1),
        ])
    );
    assert_eq!(r["captures"], json!([]));
    assert_eq!(r["failures_minted"], 1);
    assert_eq!(r["final"], final_state(1, 0, 0, 0));
}

// ---- 7. --strict through the command (§2, §9) ------------------------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn strict_stops_at_a_launch_with_an_unresolved_binding_and_without_it_the_binding_is_counted() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &launch("fill", 0, &[bind(0, 1, "write"), bind(0, 9, "read")], "ok"),
        r#"{"op":"sync"}"#,
    ];
    assert_stops_at("strict.jsonl", &log, &["--strict"], 2);

    let (r, _) = report("strict.jsonl", &log, &[]);
    assert_eq!(r["launches"], 1);
    assert_eq!(r["verdicts"], verdicts(1, 0, 0, 0));
    assert_eq!(r["unresolved_bindings"], 1);

    // Rejected whole under --keep-going: no launch number, nothing counted.
    let (r, _) = report("strict.jsonl", &log, &["--strict", "--keep-going"]);
    assert_eq!(r["rejected"].as_array().unwrap().len(), 1);
    assert_eq!(r["rejected"][0]["line"], 2);
    assert_eq!(r["events"], 3);
    assert_eq!(r["launches"], 0);
    assert_eq!(r["unresolved_bindings"], 0);
}

// ---- 8. unbalanced captures and profiles (§6, §9) ---------------------------

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_second_capture_begin_on_a_capturing_slot_is_bad_input() {
    let log = [
        &alloc(2, 1, 16) as &str,
        r#"{"op":"capture_begin","stream":2}"#,
        &launch("fill", 2, &[bind(2, 1, "write")], FAILED),
        r#"{"op":"capture_begin","stream":2}"#,
        r#"{"op":"capture_end","stream":2,"graph":1}"#,
    ];
    let r = assert_rejected("capture_begin_twice.jsonl", &log, &[4]);
    // The rejected line did not restart the window: it is still doomed.
    assert_eq!(
        r["captures"],
        json!([{"line": 5, "graph": 1, "result": "capture_failed", "failure": 1,
                "error": error("compile", "fill", "bad PTX"), "occurrences": 1,
                "chain": [], "truncated": false}])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn capture_end_with_no_open_window_is_bad_input() {
    let log = [
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        // Graph 1 was not made by the rejected line.
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
    ];
    let r = assert_rejected("capture_end_unopened.jsonl", &log, &[1]);
    assert_eq!(
        r["captures"],
        json!([{"line": 3, "graph": 1, "result": "ok"}])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn a_second_profile_begin_of_an_open_profile_is_bad_input() {
    let log = [
        &alloc(0, 1, 16) as &str,
        r#"{"op":"profile_begin","profile":1}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        r#"{"op":"profile_begin","profile":1}"#,
        r#"{"op":"profile_end","profile":1}"#,
    ];
    let r = assert_rejected("profile_begin_twice.jsonl", &log, &[4]);
    // The rejected line did not restart the profile: it is still invalid.
    assert_eq!(
        r["profiles"],
        json!([{"line": 5, "profile": 1, "result": "invalid", "failure": 1,
                "error": error("compile", "fill", "bad PTX")}])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn profile_end_of_a_profile_that_is_not_open_is_bad_input() {
    let log = [
        r#"{"op":"profile_end","profile":4}"#,
        r#"{"op":"profile_begin","profile":4}"#,
        r#"{"op":"profile_end","profile":4}"#,
        r#"{"op":"profile_end","profile":4}"#,
    ];
    let r = assert_rejected("profile_end_unopened.jsonl", &log, &[1, 4]);
    assert_eq!(
        r["profiles"],
        json!([{"line": 3, "profile": 4, "result": "valid"}])
    );
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn capture_end_naming_a_live_graph_is_rejected_and_the_window_stays_open() {
    let log = [
        &alloc(0, 1, 16) as &str,
        r#"{"op":"capture_begin","stream":0}"#,
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        r#"{"op":"capture_end","stream":0,"graph":2}"#,
        &host_write(0, 1, COPY_FAILED),
        // Graph 2 holds the launch's write: its replay releases memory 1.
        &replay_line(2, 0, "ok"),
        &read(0, 1),
    ];
    let r = assert_rejected("capture_end_live_graph.jsonl", &log, &[6]);
    assert_eq!(
        r["captures"],
        json!([
            {"line": 3, "graph": 1, "result": "ok"},
            {"line": 7, "graph": 2, "result": "ok"},
        ])
    );
    assert_eq!(r["reads"], json!([clean(10, 1)]));
    assert_eq!(r["final"], final_state(0, 0, 0, 0));
}

#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn capture_end_naming_a_live_graph_is_rejected_even_when_the_window_is_doomed() {
    let log = [
        &alloc(0, 1, 16) as &str,
        r#"{"op":"capture_begin","stream":0}"#,
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("fill", 0, &[bind(0, 1, "write")], FAILED),
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        r#"{"op":"capture_end","stream":0,"graph":2}"#,
    ];
    let r = assert_rejected("capture_end_live_graph_doomed.jsonl", &log, &[6]);
    assert_eq!(
        r["captures"],
        json!([
            {"line": 3, "graph": 1, "result": "ok"},
            {"line": 7, "graph": 2, "result": "capture_failed", "failure": 1,
             "error": error("compile", "fill", "bad PTX"), "occurrences": 1,
             "chain": [], "truncated": false},
        ])
    );
}

// ---- 9. library rules (§3, §4, §6, §6a) -------------------------------------

fn tainted_read(w: &mut World, b: Binding) -> TaintReport {
    match w.read(&b).unwrap() {
        ReadResult::Tainted(r) => r,
        other => panic!("expected a tainted read, got {other:?}"),
    }
}

#[test]
fn a_failed_launch_finds_a_failure_whose_only_carrier_is_exactly_its_write_set() {
    let mut w = World::default();
    w.alloc(0, 1, 16).unwrap();
    assert_eq!(go(&mut w, "fill", &[writes(0, 1)], FAIL), ("failed", 1, 0));
    // The look-up happens before the write set is tainted: failure 1 is
    // found, not pruned and replaced by a new id.
    assert_eq!(go(&mut w, "fill", &[writes(0, 1)], FAIL), ("failed", 1, 0));
    let f = w.failures().next().unwrap();
    assert_eq!((f.id.get(), f.occurrences, f.carriers), (1, 2, 1));
    assert_eq!(w.failures().count(), 1);
    assert_eq!(w.stats().failures_minted, 1);
    assert_eq!(claims(&w, 1), [(0, 16, 1, None)]);
    assert_eq!(tainted_read(&mut w, reads(0, 1)).occurrences, 2);
}

#[test]
fn two_failed_replays_of_one_identity_share_one_failure_id() {
    let mut w = World::default();
    w.alloc(0, 1, 16).unwrap();
    w.alloc(0, 2, 16).unwrap();
    w.alloc(0, 3, 16).unwrap();
    w.capture_begin(0).unwrap();
    go(
        &mut w,
        "fill",
        &[writes(0, 1), Binding::range(0, 2, 0, 8, Access::Write)],
        Outcome::Ok,
    );
    assert_eq!(w.capture_end(0, 1).unwrap(), CaptureResult::Ok);
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", &[writes(0, 3)], Outcome::Ok);
    assert_eq!(w.capture_end(0, 2).unwrap(), CaptureResult::Ok);

    let first = w.replay(1, FAIL).unwrap();
    assert!(
        matches!(first, Verdict::Failed(f) if f.get() == 1),
        "{first:?}"
    );
    // Part of the first replay's bytes are rewritten; the failure lives on.
    w.host_write(&writes(0, 1), Outcome::Ok).unwrap();
    let second = w.replay(1, FAIL).unwrap();
    assert!(
        matches!(second, Verdict::Failed(f) if f.get() == 1),
        "{second:?}"
    );
    // Another graph is another kernel, so another identity.
    let other = w.replay(2, FAIL).unwrap();
    assert!(
        matches!(other, Verdict::Failed(f) if f.get() == 2),
        "{other:?}"
    );

    let r = tainted_read(&mut w, reads(0, 2));
    assert_eq!(r.failure.get(), 1);
    assert_eq!(r.error, ErrorInfo::new("compile", "graph:1", "bad PTX"));
    assert_eq!(r.occurrences, 2);
    assert_eq!(claims(&w, 1), [(0, 16, 1, None)]);
    assert_eq!(claims(&w, 2), [(0, 8, 1, None)]);
    assert_eq!(
        tainted_read(&mut w, reads(0, 3)).error,
        ErrorInfo::new("compile", "graph:2", "bad PTX")
    );
    assert_eq!(w.stats().failures_minted, 2);
}

#[test]
fn an_unresolved_write_binding_releases_nothing() {
    let mut w = World::default();
    w.alloc(0, 1, 16).unwrap();
    w.alloc(1, 5, 16).unwrap(); // slot 1 initialized, memory 1 is not on it
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let unresolved = [
        writes(1, 1),
        Binding::whole(1, 1, Access::ReadWrite),
        writes(2, 1), // slot 2 never initialized
    ];
    // An unresolved read_write binding is not checked either: it runs.
    assert_eq!(go(&mut w, "zero", &unresolved, Outcome::Ok), ("ran", 0, 0));
    w.host_write(&writes(1, 1), Outcome::Ok).unwrap();
    assert_eq!(claims(&w, 1), [(0, 16, 1, None)]);
    assert_eq!(w.stats().unresolved_bindings, 4);
    let r = tainted_read(&mut w, reads(0, 1));
    assert_eq!(
        (r.failure.get(), r.error),
        (1, ErrorInfo::new("compile", "fill", "bad PTX"))
    );
}

#[test]
fn a_skip_over_a_failed_reservation_does_not_replace_the_reservations_claim() {
    let mut w = World::default();
    w.alloc_failed(0, 2, 16, "out_of_memory", "cudaMalloc failed")
        .unwrap();
    w.alloc(0, 1, 16).unwrap();
    assert_eq!(go(&mut w, "fill", &[writes(0, 1)], FAIL), ("failed", 2, 0));
    let b = [reads(0, 1), writes(0, 2)];
    assert_eq!(go(&mut w, "gelu", &b, Outcome::Ok), ("skipped", 2, 1));
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
    let r = tainted_read(&mut w, reads(0, 2));
    assert_eq!(r.failure.get(), 1);
    assert_eq!(
        r.error,
        ErrorInfo::new("out_of_memory", "alloc", "cudaMalloc failed")
    );
    assert_eq!((r.chain.len(), r.truncated), (0, false));
}

/// SPEC §8: `tainted_bytes` counts the bytes; it is not capped at
/// `u64::MAX` (an independent implementation of the SPEC printed the exact
/// count where the crate once saturated).
#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn tainted_bytes_past_u64_max_is_reported_exactly() {
    let log = [
        r#"{"op":"alloc","stream":0,"memory":1,"size":18446744073709551615,"outcome":{"failed":{"kind":"oom","message":"m"}}}"#,
        r#"{"op":"alloc","stream":0,"memory":2,"size":1,"outcome":{"failed":{"kind":"oom","message":"m"}}}"#,
    ];
    let (_, text) = report("tainted_bytes_past_u64_max", &log, &[]);
    assert!(
        text.contains(r#""final":{"live_failures":1,"tainted_allocations":2,"tainted_bytes":18446744073709551616,"claims":2}"#),
        "{text}"
    );
}

// ---- §7 fault injection numbering, §8 launch_results order -----------------

/// SPEC §7: "a rejected line takes no number" and "replays do not count as
/// launches", so "fail launch n" names the n-th accepted launch.
#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn fail_launch_counts_only_accepted_launches_and_no_replay_or_host_write() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("zero", 0, &[bind(0, 1, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        &replay_line(1, 0, "ok"),
        &host_write(0, 2, "ok"),
        // Rejected: a range past the end of memory 1. It takes no number.
        r#"{"op":"launch","kernel":"bad","stream":0,"bindings":[{"stream":0,"memory":1,"range":[0,17],"access":"write"}],"outcome":"ok"}"#,
        &launch("fill", 0, &[bind(0, 2, "write")], "ok"),
        &read(0, 1),
        &read(0, 2),
    ];
    let (r, _) = report(
        "fail_launch_numbering.jsonl",
        &log,
        &["--keep-going", "--fail-launch", "1"],
    );
    assert_eq!(r["launches"], 2);
    assert_eq!(
        r["launch_results"],
        json!([{"launch": 1, "line": 9, "verdict": "failed", "failure": 1}])
    );
    assert_eq!(
        r["reads"],
        json!([
            clean(10, 1),
            tainted(11, 2, 1, error("injected", "fill", "injected failure"), 1),
        ])
    );
}

/// SPEC §8: `launch_results` lists launches, failed replays and failed host
/// writes together, in log order.
#[test]
#[cfg_attr(miri, ignore = "runs the binary, and Miri cannot start a process")]
fn launch_results_interleave_launches_host_writes_and_replays_in_log_order() {
    let log = [
        &alloc(0, 1, 16) as &str,
        &alloc(0, 2, 16),
        &alloc(0, 3, 16),
        r#"{"op":"capture_begin","stream":0}"#,
        &launch("zero", 0, &[bind(0, 3, "write")], "ok"),
        r#"{"op":"capture_end","stream":0,"graph":4}"#,
        &host_write(0, 1, COPY_FAILED),
        &launch("gelu", 0, &[bind(0, 1, "read"), bind(0, 2, "write")], "ok"),
        &replay_line(4, 0, GRAPH_FAILED),
        &launch("fill", 0, &[bind(0, 2, "write")], "dry_run"),
        &host_write(0, 2, COPY_FAILED),
    ];
    let (_, text) = report("launch_results_order.jsonl", &log, &[]);
    let expected = concat!(
        r#""launch_results":["#,
        r#"{"host_write":true,"line":7,"verdict":"failed","failure":1},"#,
        r#"{"launch":1,"line":8,"verdict":"skipped","failure":1,"needed":1},"#,
        r#"{"replay":true,"graph":4,"line":9,"verdict":"failed","failure":2},"#,
        r#"{"launch":2,"line":10,"verdict":"dry_run"},"#,
        r#"{"host_write":true,"line":11,"verdict":"failed","failure":1}]"#,
    );
    assert!(text.contains(expected), "{text}");
}
