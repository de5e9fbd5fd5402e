//! The `taintworld` command (SPEC §7, §8, §9): the example logs' reports,
//! exit statuses, fault injection and generated logs.
//!
//! Every test here runs the binary, and Miri cannot start a process: under
//! Miri (`scripts/miri`) the file holds no tests. Nor does it without the
//! `cli` feature (`cargo test --no-default-features`), which the binary
//! needs.

#![cfg(all(feature = "cli", not(miri)))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The binary, to be given its arguments. Its output goes to pipes here,
/// where clap writes plain text, unless `CLICOLOR_FORCE` (which some CI
/// set for coloured logs) makes it colour its errors and help there too:
/// the tests that read them then read escape codes. They see what a pipe
/// gets with no variable forcing it.
fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_taintworld"));
    command.env_remove("CLICOLOR_FORCE");
    command
}

fn taintworld(args: &[&str]) -> Output {
    binary().args(args).output().expect("the binary runs")
}

/// What `taintworld ARGS | head -c N` leaves: the first `N` bytes of its
/// stdout, read before the pipe is closed under it, and how the run then
/// ended.
fn head_c<const N: usize>(args: &[&str]) -> ([u8; N], Output) {
    use std::io::Read;
    let mut child = binary()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut start = [0u8; N];
    {
        let mut stdout = child.stdout.take().expect("piped");
        stdout.read_exact(&mut start).expect("the output's start");
    }
    (start, child.wait_with_output().expect("the binary ends"))
}

/// A running `taintworld`, killed and waited for when the test lets go of
/// it, by a failed assertion too, so that no run outlives its test.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // It may have ended already; either way it is gone after this.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/logs")
}

/// A scratch folder that one test owns, removed with all in it when the
/// test ends, by a failed assertion too, so that runs leave nothing behind
/// in the temp folder. Files a test needs side by side (a log and the
/// `.partial` file `gen` writes beside it) are names in the one folder.
/// A test that runs `gen` in the background declares its folder before the
/// `Killed` guard, so the run is gone before its folder is.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Self {
        Scratch(
            tempfile::Builder::new()
                .prefix("taintworld-cli-")
                .tempdir()
                .expect("a scratch folder"),
        )
    }

    /// Where a file called `name` goes in this folder.
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

/// A log of `lines` in the scratch folder.
fn log_of(dir: &Scratch, name: &str, lines: &[&str]) -> PathBuf {
    let log = dir.path(name);
    std::fs::write(&log, lines.join("\n")).expect("writing the log");
    log
}

fn report(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&ran_ok(args).stdout).expect("the report is JSON")
}

#[test]
fn every_example_log_replays_to_its_checked_in_report_byte_for_byte() {
    let mut checked = 0;
    for entry in std::fs::read_dir(examples()).expect("examples/logs") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let expected =
            std::fs::read(path.with_extension("report.json")).expect("a checked-in report");
        let out = ran_ok(&["replay", "--json", path.to_str().unwrap()]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&expected),
            "{} replays to a different report",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 5, "five example stories");
}

#[test]
fn two_replays_of_one_log_print_the_same_bytes() {
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let a = ran_ok(&["replay", "--json", log.to_str().unwrap()]);
    let b = ran_ok(&["replay", "--json", log.to_str().unwrap()]);
    assert_eq!(a.stdout, b.stdout);
    assert!(!a.stdout.is_empty());
}

/// Every shipped log, the recorded ones too, and a generated one of many
/// failures on four streams, replayed twice — two processes, so every hash
/// map in them draws other seeds — with failures injected, graph replays
/// checked and bad lines passed over: the summary, the JSON report and the
/// notes on stderr are the same bytes, exit status included. The reports
/// list many failures, skips, reads, captures, graphs and profiles, so an
/// order taken from a hash map would show.
#[test]
fn two_replays_of_every_log_with_failures_injected_print_the_same_bytes() {
    let dir = Scratch::new();
    let generated = dir.path("many_failures.jsonl");
    ran_ok(&[
        "gen",
        "--launches",
        "2000",
        "--streams",
        "4",
        "--fail-rate",
        "0.2",
        "--seed",
        "7",
        "-o",
        generated.to_str().unwrap(),
    ]);
    let mut logs = vec![generated];
    for folder in [examples(), examples().join("real")] {
        for entry in std::fs::read_dir(folder).expect("the shipped logs") {
            let path = entry.expect("a folder entry").path();
            let name = path.to_string_lossy();
            if name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") {
                logs.push(path);
            }
        }
    }
    assert!(logs.len() > 10, "{logs:?}");
    let printed = |args: &[&str]| {
        let out = taintworld(args);
        (out.status.code(), out.stdout, out.stderr)
    };
    for log in &logs {
        let log = log.to_str().unwrap();
        for json in [false, true] {
            let mut args = vec!["replay", log, "--keep-going", "--checked-replays"];
            args.extend(["--fail-launch", "3", "--fail-launch", "40"]);
            if json {
                args.push("--json");
            }
            let first = printed(&args);
            assert_eq!(
                first.0,
                Some(0),
                "{log}: {}",
                String::from_utf8_lossy(&first.2)
            );
            assert!(!first.1.is_empty(), "{log}");
            assert!(
                printed(&args) == first,
                "{log} (json: {json}) printed other bytes"
            );
        }
    }
    let text = stdout_of(&["replay", logs[0].to_str().unwrap()]);
    // Several failures, each carried by many allocations, and many reads.
    assert!(text.contains("failure 6 taints memory"), "{text}");
    assert!(text.contains("more tainted reads"), "{text}");
}

#[test]
fn the_summary_names_the_root_error_and_every_hop_of_the_chain() {
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let text = stdout_of(&["replay", log.to_str().unwrap()]);
    assert!(
        text.contains("4 launches: 0 ran, 1 failed, 3 skipped"),
        "{text}"
    );
    assert!(
        text.contains(
            "failure 1: launch in embedding: too many resources requested for launch (1 occurrence, skipped 3 launches)"
        ),
        "{text}"
    );
    let hops: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("skipped launch"))
        .collect();
    assert_eq!(hops.len(), 3, "{text}");
    assert!(
        hops[0].contains("softmax") && hops[1].contains("layernorm") && hops[2].contains("matmul")
    );
}

#[test]
fn a_bad_line_stops_the_replay_with_its_number_and_exit_status_2() {
    let dir = Scratch::new();
    let log = dir.path("bad.jsonl");
    std::fs::write(
        &log,
        "{\"op\":\"alloc\",\"stream\":0,\"memory\":1,\"size\":8}\n\n# note\n{\"op\":\"free\",\"memory\":2}\n{\"op\":\"sync\"}\n",
    )
    .unwrap();
    let out = taintworld(&["replay", "--json", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "exit 2 prints nothing on stdout");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("error: line 4: "), "{err}");
    assert!(err.contains("memory 2"), "{err}");
}

#[test]
fn keep_going_lists_the_bad_line_and_applies_every_other_one() {
    let dir = Scratch::new();
    let log = dir.path("keep_going.jsonl");
    std::fs::write(
        &log,
        "{\"op\":\"alloc\",\"stream\":0,\"memory\":1,\"size\":8}\n{\"op\":\"frobnicate\"}\n{\"op\":\"launch\",\"kernel\":\"k\",\"stream\":0,\"bindings\":[{\"stream\":0,\"memory\":1,\"access\":\"write\"}],\"outcome\":{\"failed\":{\"kind\":\"compile\",\"message\":\"m\"}}}\n{\"op\":\"sync\"}\n",
    )
    .unwrap();
    let r = report(&["replay", "--json", "--keep-going", log.to_str().unwrap()]);
    assert_eq!(r["events"], 4);
    assert_eq!(r["launches"], 1);
    assert_eq!(r["rejected"].as_array().unwrap().len(), 1);
    assert_eq!(r["rejected"][0]["line"], 2);
    assert_eq!(r["verdicts"]["failed"], 1);
    assert_eq!(r["syncs"][0]["result"], "ok");
    assert_eq!(r["final"]["tainted_bytes"], 8);
    // The summary lists it too, and no unresolved binding.
    let out = taintworld(&["replay", "--keep-going", log.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 line rejected:\n    line 2: "), "{text}");
    assert!(!text.contains("unresolved"), "{text}");
}

/// Ten rejected lines are all listed, and no line counts more of them:
/// the count of the rest appears only past the tenth.
#[test]
fn ten_rejected_lines_are_all_listed_and_no_line_counts_more() {
    let dir = Scratch::new();
    let log = log_of(&dir, "ten_bad.jsonl", &[r#"{"op":"free","memory":99}"#; 10]);
    let text = summary_of_with(&["--keep-going"], &log);
    assert!(text.contains("10 lines rejected:\n"), "{text}");
    let listed = text.lines().filter(|l| l.starts_with("    line ")).count();
    assert_eq!(listed, 10, "{text}");
    assert!(!text.contains(" more "), "{text}");
}

#[test]
fn the_summary_counts_unresolved_bindings_only_when_there_are_some() {
    let summary = |name: &str| {
        let out = taintworld(&["replay", examples().join(name).to_str().unwrap()]);
        String::from_utf8(out.stdout).unwrap()
    };
    let folding = summary("folding_streams.jsonl");
    assert!(
        folding.contains("\n2 unresolved bindings, the first at line 10\n"),
        "{folding}"
    );
    let chain = summary("skip_chain_three_kernels.jsonl");
    assert!(
        !chain.contains("unresolved") && !chain.contains("rejected"),
        "{chain}"
    );
}

#[test]
fn a_missing_log_is_an_error_with_exit_status_2() {
    let out = taintworld(&["replay", "/no/such/log.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert_eq!(
        stderr.matches("/no/such/log.jsonl").count(),
        1,
        "the path, named once: {stderr}"
    );
}

/// A folder opens, but it cannot be read as a log: the error says so and
/// names it, with exit status 2.
#[test]
fn a_log_that_is_a_folder_is_an_error_with_exit_status_2_naming_it() {
    let dir = Scratch::new();
    let folder = dir.path("a_folder.jsonl");
    std::fs::create_dir(&folder).unwrap();
    let out = taintworld(&["replay", folder.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("error: cannot read {}: ", folder.display())),
        "{stderr}"
    );
}

#[test]
fn gen_rejects_a_fail_rate_that_is_not_a_probability() {
    for bad in ["2", "-0.5", "nan", "often"] {
        let out = taintworld(&["gen", "--launches", "3", &format!("--fail-rate={bad}")]);
        assert_eq!(out.status.code(), Some(2), "--fail-rate {bad}");
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("'{bad}' is not a")), "{stderr}");
    }
    ran_ok(&["gen", "--launches", "3", "--fail-rate", "1"]);
}

#[test]
fn a_reader_that_stops_early_is_no_error() {
    let mut child = binary()
        .args(["gen", "--launches", "200000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Read one line, then close the pipe, as `| head -1` does.
    let mut first = String::new();
    {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("piped");
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .expect("a first line");
    }
    let out = child.wait_with_output().expect("the binary ends");
    assert!(first.contains(r#""op":"header""#), "{first}");
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fault_injection_on_a_chain_skips_exactly_the_downstream_launches() {
    let dir = Scratch::new();
    let log = dir.path("chain.jsonl");
    ran_ok(&[
        "gen",
        "--seed",
        "1",
        "--launches",
        "500",
        "--shape",
        "chain",
        "-o",
        log.to_str().unwrap(),
    ]);
    let clean = report(&["replay", "--json", log.to_str().unwrap()]);
    assert_eq!(clean["verdicts"]["ran"], 500);
    let r = report(&[
        "replay",
        "--json",
        "--fail-launch",
        "100",
        log.to_str().unwrap(),
    ]);
    assert_eq!(r["verdicts"]["failed"], 1);
    assert_eq!(r["verdicts"]["ran"], 100, "the launches before it ran");
    assert_eq!(
        r["verdicts"]["skipped"], 399,
        "every launch after it read its output"
    );
    let results = r["launch_results"].as_array().unwrap();
    assert_eq!(results[0]["launch"], 100);
    assert_eq!(results[0]["verdict"], "failed");
    assert!(
        results[1..]
            .iter()
            .all(|e| e["verdict"] == "skipped" && e["failure"] == 1)
    );
    let first_skip = &results[1];
    assert_eq!(first_skip["launch"], 101);
}

#[test]
fn an_injected_failure_past_the_last_launch_does_nothing() {
    let log = examples().join("compile_failure_released.jsonl");
    let plain = ran_ok(&["replay", "--json", log.to_str().unwrap()]);
    let injected = ran_ok(&[
        "replay",
        "--json",
        "--fail-launch",
        "99",
        log.to_str().unwrap(),
    ]);
    assert_eq!(plain.stdout, injected.stdout);
}

#[test]
fn generated_logs_of_every_shape_replay_with_no_rejected_line_even_when_strict() {
    let dir = Scratch::new();
    for shape in ["chain", "fanout", "random", "training-step"] {
        let log = dir.path(&format!("{shape}.jsonl.gz"));
        let out = taintworld(&[
            "gen",
            "--seed",
            "7",
            "--launches",
            "2000",
            "--streams",
            "3",
            "--fail-rate",
            "0.01",
            "--shape",
            shape,
            "-o",
            log.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{shape}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = report(&[
            "replay",
            "--json",
            "--keep-going",
            "--strict",
            log.to_str().unwrap(),
        ]);
        assert_eq!(
            r["rejected"].as_array().unwrap().len(),
            0,
            "{shape}: {}",
            r["rejected"]
        );
        assert_eq!(r["launches"], 2000, "{shape}");
        assert_eq!(r["unresolved_bindings"], 0, "{shape}");
    }
}

#[test]
fn gen_is_deterministic_for_a_seed_and_differs_across_seeds() {
    let gen_of = |seed| {
        ran_ok(&[
            "gen",
            "--seed",
            seed,
            "--launches",
            "300",
            "--shape",
            "random",
        ])
    };
    let (a, b, c) = (gen_of("3"), gen_of("3"), gen_of("4"));
    assert_eq!(a.stdout, b.stdout);
    assert_ne!(a.stdout, c.stdout);
}

/// The logs `gen` wrote when they were checked in, one for each shape with
/// no failures and with a quarter of the launches failing: the same options
/// must go on giving the same bytes from one version of the crate to the
/// next, or a figure measured on a generated log (W5's workload, the replay
/// speeds) could no longer be made again. A change to the generator that
/// moves them is then a choice, made by writing the files again with the
/// command in the failure message.
#[test]
fn gen_writes_the_bytes_it_wrote_when_its_logs_were_checked_in() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    for shape in ["chain", "fanout", "random", "training-step"] {
        for rate in ["0", "0.25"] {
            let args = [
                "gen",
                "--seed",
                "5",
                "--launches",
                "24",
                "--streams",
                "2",
                "--fail-rate",
                rate,
                "--shape",
                shape,
            ];
            let name = format!("gen-{shape}-fail-rate-{rate}.jsonl");
            let made = stdout_of(&args);
            let kept = std::fs::read_to_string(golden.join(&name)).expect("a checked-in log");
            // The lines both share from the start; the next one differs,
            // or is there in one only.
            let same = kept.lines().zip(made.lines()).take_while(|(k, m)| k == m);
            assert!(
                made == kept,
                "`taintworld {}` no longer writes tests/golden/{name} (first differing line: {}); \
                 if the change is meant, write the file again from that command's output",
                args.join(" "),
                same.count() + 1,
            );
        }
    }
}

/// The skip-chain example with `header` as its first event (one failure,
/// then three launches each reading the last one's output, then a read of
/// the end of the chain), written to a scratch file called `name`.
fn three_skip_chain(dir: &Scratch, name: &str, header: &str) -> PathBuf {
    let example = std::fs::read_to_string(examples().join("skip_chain_three_kernels.jsonl"))
        .expect("the example log");
    let log = example.replace(
        r#"{"op":"header","format":"taintworld-log","version":1}"#,
        header,
    );
    let path = dir.path(name);
    std::fs::write(&path, log).expect("a scratch log");
    path
}

#[test]
fn a_chain_limit_over_u32_max_is_accepted_and_keeps_every_chain_whole() {
    let dir = Scratch::new();
    let read_chain = |r: &serde_json::Value| {
        let read = &r["reads"][0];
        assert_eq!(read["result"], "tainted");
        (
            read["chain"].as_array().unwrap().len(),
            read["truncated"].clone(),
        )
    };
    let huge = three_skip_chain(
        &dir,
        "huge_chain_limit.jsonl",
        r#"{"op":"header","format":"taintworld-log","version":1,"chain_limit":5000000000}"#,
    );
    let r = report(&["replay", "--json", huge.to_str().unwrap()]);
    assert_eq!(r["rejected"], serde_json::json!([]));
    assert_eq!(read_chain(&r), (3, serde_json::json!(false)));

    // The same limit on the command line, over a header of 2: with the
    // header's, the third skip's cause would be at depth 3, so it is cut
    // and the read's chain is that one record; the command line wins, and
    // nothing is cut.
    let short = three_skip_chain(
        &dir,
        "short_chain_limit.jsonl",
        r#"{"op":"header","format":"taintworld-log","version":1,"chain_limit":2}"#,
    );
    let cut = report(&["replay", "--json", short.to_str().unwrap()]);
    assert_eq!(read_chain(&cut), (1, serde_json::json!(true)));
    let whole = report(&[
        "replay",
        "--json",
        "--chain-limit",
        "18446744073709551615",
        short.to_str().unwrap(),
    ]);
    assert_eq!(read_chain(&whole), (3, serde_json::json!(false)));
}

#[test]
fn a_pruned_failures_occurrences_still_count_in_the_summary() {
    let dir = Scratch::new();
    let log = dir.path("pruned_failure.jsonl");
    let fill = r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad PTX"}}}"#;
    let lines = [
        r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#,
        fill,
        fill,
        // The copy rewrites the only carrier: failure 1 is pruned.
        r#"{"op":"host_write","binding":{"stream":0,"memory":1},"outcome":"ok"}"#,
        fill,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = ran_ok(&["replay", log.to_str().unwrap()]);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("failure 1: compile in fill: bad PTX (2 occurrences, skipped 0 launches)"),
        "{summary}"
    );
    assert!(
        summary.contains("failure 2: compile in fill: bad PTX (1 occurrence, skipped 0 launches)"),
        "{summary}"
    );
}

/// The human summary of `log`, after checking the replay succeeded.
fn summary_of(log: &Path) -> String {
    summary_of_with(&[], log)
}

/// The summary of a replay of `log` with the options `args`, which must
/// end with exit status 0.
fn summary_of_with(args: &[&str], log: &Path) -> String {
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    all.push(log.to_str().unwrap());
    stdout_of(&all)
}

/// What `taintworld` with `args` prints on stdout, where it must end with
/// exit status 0 (its stderr is the failure message otherwise).
fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(ran_ok(args).stdout).expect("taintworld prints UTF-8")
}

/// `taintworld` run with `args`, where it must end with exit status 0 (its
/// stderr is the failure message otherwise).
fn ran_ok(args: &[&str]) -> Output {
    let out = taintworld(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A log in which launch 0 fails writing memory 0 and launches 1 to `skips`
/// each read the last one's output, so each is skipped; then a read of the
/// end of the chain, whose chain has `skips` hops.
fn skip_chain_of(dir: &Scratch, name: &str, skips: u64) -> PathBuf {
    let mut lines = vec![r#"{"op":"header","format":"taintworld-log","version":1}"#.to_string()];
    for m in 0..=skips {
        lines.push(format!(
            r#"{{"op":"alloc","stream":0,"memory":{m},"size":16}}"#
        ));
    }
    lines.push(
        r#"{"op":"launch","kernel":"k0","stream":0,"bindings":[{"stream":0,"memory":0,"access":"write"}],"outcome":{"failed":{"kind":"launch","message":"boom"}}}"#
            .to_string(),
    );
    for m in 1..=skips {
        lines.push(format!(
            r#"{{"op":"launch","kernel":"k{m}","stream":0,"bindings":[{{"stream":0,"memory":{},"access":"read"}},{{"stream":0,"memory":{m},"access":"write"}}],"outcome":"ok"}}"#,
            m - 1
        ));
    }
    lines.push(format!(
        r#"{{"op":"read","binding":{{"stream":0,"memory":{skips}}}}}"#
    ));
    let path = dir.path(name);
    std::fs::write(&path, lines.join("\n") + "\n").expect("a scratch log");
    path
}

#[test]
fn a_long_chain_in_the_summary_shows_twelve_newest_hops_then_how_many_are_left_out_then_the_first()
{
    let dir = Scratch::new();
    let text = summary_of(&skip_chain_of(&dir, "twenty_skips.jsonl", 20));
    let hops: Vec<&str> = text.lines().filter(|l| l.starts_with("    ")).collect();
    assert_eq!(hops.len(), 14, "{text}");
    for (shown, kernel) in hops[..12].iter().zip((9..=20).rev()) {
        assert!(
            shown.contains(&format!("skipped launch {kernel} (k{kernel})")),
            "{text}"
        );
    }
    assert_eq!(hops[12], "    … 7 more hops …", "{text}");
    assert!(hops[13].contains("skipped launch 1 (k1)"), "{text}");

    // Fourteen leave one out, and say so in the singular.
    let text = summary_of(&skip_chain_of(&dir, "fourteen_skips.jsonl", 14));
    assert!(text.contains("\n    … 1 more hop …\n"), "{text}");

    // Thirteen hops all fit without a gap: no line says none were left out.
    let text = summary_of(&skip_chain_of(&dir, "thirteen_skips.jsonl", 13));
    assert!(!text.contains("more hop"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("skipped launch"))
            .count(),
        13,
        "{text}"
    );
}

#[test]
fn the_summary_counts_failed_captures_and_failed_host_writes_or_replays_only_when_there_are_some() {
    let dir = Scratch::new();
    // One capture doomed by a skip and one failed graph replay, each with
    // its line.
    let text = summary_of(&examples().join("capture_doomed_by_skip.jsonl"));
    assert!(text.contains("\n1 capture failed, at line 13\n"), "{text}");
    assert!(
        text.contains("\n1 host write or graph replay failed, at line 21\n"),
        "{text}"
    );

    // Two failed host writes, no capture.
    let log = dir.path("failed_host_writes.jsonl");
    let write = r#"{"op":"host_write","binding":{"stream":0,"memory":1},"outcome":{"failed":{"kind":"copy","message":"bad copy"}}}"#;
    let lines = [
        r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#,
        write,
        write,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let text = summary_of(&log);
    assert!(
        text.contains(
            "\n2 host writes or graph replays failed, the first at line 2 (--json lists them)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("capture"), "{text}");

    // Neither.
    let text = summary_of(&examples().join("skip_chain_three_kernels.jsonl"));
    assert!(
        !text.contains("capture") && !text.contains("host write"),
        "{text}"
    );
}

/// `--checked-replays` on a graph whose replay reads what the one before it
/// wrote (memory 1, appended to in place by `append`, which also writes
/// memory 2, which `emit` reads to write memory 3): after a failed replay,
/// the next is listed as skipped in the JSON (by its first skip, `append`
/// for memory 1, and with both captured launches it skipped, 0 and 1,
/// listed), its two skipped launches are counted in the summary's
/// tally, and the read after it is tainted with the chain through both
/// captured launches; without the flag the same log reads clean.
#[test]
fn checked_replays_skip_a_replay_that_reads_what_a_failed_one_left() {
    let dir = Scratch::new();
    let log = log_of(
        &dir,
        "stateful_graph.jsonl",
        &[
            r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#,
            r#"{"op":"alloc","stream":0,"memory":2,"size":64}"#,
            r#"{"op":"alloc","stream":0,"memory":3,"size":64}"#,
            r#"{"op":"capture_begin","stream":0}"#,
            r#"{"op":"launch","kernel":"append","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read_write"},{"stream":0,"memory":2,"access":"write"}],"outcome":"ok"}"#,
            r#"{"op":"launch","kernel":"emit","stream":0,"bindings":[{"stream":0,"memory":2,"access":"read"},{"stream":0,"memory":3,"access":"write"}],"outcome":"ok"}"#,
            r#"{"op":"capture_end","stream":0,"graph":1}"#,
            r#"{"op":"replay","graph":1,"outcome":{"failed":{"kind":"launch","message":"graph launch failed"}}}"#,
            r#"{"op":"replay","graph":1,"outcome":"ok"}"#,
            r#"{"op":"read","binding":{"stream":0,"memory":3}}"#,
        ],
    );
    let path = log.to_str().unwrap();
    let r = report(&["replay", "--json", "--checked-replays", path]);
    assert_eq!(
        r["launch_results"],
        serde_json::json!([
            {"replay": true, "graph": 1, "line": 8, "verdict": "failed", "failure": 1},
            {"replay": true, "graph": 1, "line": 9, "verdict": "skipped", "failure": 1, "needed": 1, "launches": [0, 1]},
        ])
    );
    assert_eq!(r["launches"], 2, "a replay is no launch line");
    assert_eq!(r["reads"][0]["result"], "tainted");
    assert_eq!(
        r["reads"][0]["chain"],
        serde_json::json!([
            {"launch": 1, "kernel": "graph:1/emit", "needed": 2},
            {"launch": 0, "kernel": "graph:1/append", "needed": 1},
        ])
    );
    let text = summary_of_with(&["--checked-replays"], &log);
    assert!(
        text.contains("\n1 graph replay skipped a launch that read tainted bytes, at line 9\n"),
        "{text}"
    );
    assert!(
        text.contains("skipped 2 launches, all captured ones in graph replays)"),
        "{text}"
    );
    // A launch of the log's own reading the replay's output is skipped too,
    // and counted apart from the captured ones.
    let mut lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.push(r#"{"op":"launch","kernel":"use","stream":0,"bindings":[{"stream":0,"memory":3,"access":"read"},{"stream":0,"memory":1,"access":"write"}],"outcome":"ok"}"#.to_owned());
    let mixed = log_of(
        &dir,
        "stateful_graph_then_a_launch.jsonl",
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let text = summary_of_with(&["--checked-replays"], &mixed);
    assert!(text.contains("1 skipped, 0 dry runs"), "{text}");
    assert!(
        text.contains("skipped 3 launches, 2 of them captured ones in graph replays"),
        "{text}"
    );

    let r = report(&["replay", "--json", path]);
    assert_eq!(r["reads"][0]["result"], "clean");
    let text = summary_of(&log);
    assert!(!text.contains("skipped a launch"), "{text}");
}

/// A failure's tally says how many of the launches it skipped were
/// captured ones in words that agree with that count: one captured launch
/// skipped by a checked replay, alone or among launches of the log's own,
/// is "a captured one", never "all captured ones" or "1 of them captured
/// ones".
#[test]
fn a_failure_that_skipped_one_captured_launch_calls_it_a_captured_one() {
    let dir = Scratch::new();
    let mut lines = vec![
        r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#,
        r#"{"op":"alloc","stream":0,"memory":2,"size":64}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        r#"{"op":"launch","kernel":"append","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read_write"},{"stream":0,"memory":2,"access":"write"}],"outcome":"ok"}"#,
        r#"{"op":"capture_end","stream":0,"graph":1}"#,
        r#"{"op":"replay","graph":1,"outcome":{"failed":{"kind":"launch","message":"graph launch failed"}}}"#,
        r#"{"op":"replay","graph":1,"outcome":"ok"}"#,
    ];
    let alone = log_of(&dir, "one_captured.jsonl", &lines);
    let text = summary_of_with(&["--checked-replays"], &alone);
    assert!(
        text.contains(
            "failure 1: launch in graph:1: graph launch failed \
             (1 occurrence, skipped 1 launch, a captured one in a graph replay)\n"
        ),
        "{text}"
    );
    lines.extend([
        r#"{"op":"alloc","stream":0,"memory":3,"size":64}"#,
        r#"{"op":"launch","kernel":"use","stream":0,"bindings":[{"stream":0,"memory":2,"access":"read"},{"stream":0,"memory":3,"access":"write"}],"outcome":"ok"}"#,
        r#"{"op":"launch","kernel":"again","stream":0,"bindings":[{"stream":0,"memory":3,"access":"read"},{"stream":0,"memory":2,"access":"write"}],"outcome":"ok"}"#,
    ]);
    let among = log_of(&dir, "one_captured_among_three.jsonl", &lines);
    let text = summary_of_with(&["--checked-replays"], &among);
    assert!(
        text.contains(
            "failure 1: launch in graph:1: graph launch failed \
             (1 occurrence, skipped 3 launches, 1 of them a captured one in a graph replay)\n"
        ),
        "{text}"
    );
}

/// Replays or generates with stdout on `/dev/full`, where every write fails
/// with "no space left", which is an error, not a reader gone away.
#[cfg(target_os = "linux")]
fn onto_a_full_device(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    binary()
        .args(args)
        .stdout(full)
        .output()
        .expect("the binary runs")
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_to_stdout_that_is_not_a_closed_pipe_is_an_error_with_exit_status_2() {
    let log = examples().join("skip_chain_three_kernels.jsonl");
    for args in [
        vec!["replay", log.to_str().unwrap()],
        vec!["replay", "--json", log.to_str().unwrap()],
    ] {
        let out = onto_a_full_device(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: writing the report: "),
            "{args:?}: {stderr}"
        );
    }
    let out = onto_a_full_device(&["gen", "--launches", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: writing the log: "), "{stderr}");
}

/// `gen -o` onto a device is written in place, with no `.partial` beside
/// it; a write there that fails (no space left, on `/dev/full`) is an
/// error that names the device, as the error of a `.partial` file names
/// the file, since nothing else on the line says where the log went.
#[cfg(target_os = "linux")]
#[test]
fn a_log_written_in_place_onto_a_full_device_is_an_error_naming_the_device() {
    let out = taintworld(&["gen", "--launches", "10", "-o", "/dev/full"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: /dev/full: No space left on device"),
        "{stderr}"
    );
}

/// Runs `args` with stderr on `/dev/full`, where every write fails.
#[cfg(target_os = "linux")]
fn with_stderr_on_a_full_device(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    binary()
        .args(args)
        .stderr(full)
        .output()
        .expect("the binary runs")
}

/// A stderr that cannot be written (a full disk, a closed pipe) loses what
/// the command had to say there, and the exit status still tells how the
/// run went: 2 for an error, 0 for a run whose stderr had only a note.
/// `eprintln!` would panic there and exit 101.
#[cfg(target_os = "linux")]
#[test]
fn a_stderr_that_cannot_be_written_leaves_the_exit_status_as_it_was() {
    let dir = Scratch::new();
    let bad = log_of(&dir, "bad.jsonl", &["not json"]);
    let missing = dir.path("missing.jsonl");
    let nowhere = dir.path("no-such-folder/log.jsonl");
    let good = examples().join("skip_chain_three_kernels.jsonl");
    for args in [
        vec!["replay", bad.to_str().unwrap()],
        vec!["replay", missing.to_str().unwrap()],
        vec!["gen", "--launches", "10", "-o", nowhere.to_str().unwrap()],
    ] {
        let out = with_stderr_on_a_full_device(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // The summary is whole on stdout; the note past the last launch is lost.
    let out =
        with_stderr_on_a_full_device(&["replay", good.to_str().unwrap(), "--fail-launch", "99"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        out.stdout,
        ran_ok(&["replay", good.to_str().unwrap()]).stdout
    );
}

/// `--help` and `--version` that cannot be written to stdout are an error,
/// as a report that cannot be is: clap's own exit would say 0 with the text
/// lost. The error names the text it could not write. A reader gone away
/// (`| head -1`) is no error here either.
#[cfg(target_os = "linux")]
#[test]
fn help_or_version_that_cannot_be_written_is_an_error_with_exit_status_2() {
    for (args, what) in [
        (vec!["--help"], "help"),
        (vec!["--version"], "version"),
        (vec!["replay", "--help"], "help"),
        (vec!["gen", "-h"], "help"),
    ] {
        let out = onto_a_full_device(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("error: writing the {what}: ")),
            "{args:?}: {stderr}"
        );
        let out = taintworld(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty() && out.stderr.is_empty(), "{args:?}");
    }
    let child = binary()
        .arg("--help")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut child = Killed(child);
    drop(child.0.stdout.take());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().expect("piped"), &mut stderr)
        .expect("stderr");
    let status = child.0.wait().expect("the binary ends");
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
}

/// A replay whose stdout is its own log (`replay LOG >> LOG`, or `> LOG`,
/// which the shell empties first) is refused before a line is read: the
/// report would go into the log it replays, and an emptied log would
/// replay as a report of nothing with exit status 0.
#[cfg(unix)]
#[test]
fn a_replay_whose_stdout_is_its_own_log_is_refused_and_leaves_the_log_as_it_was() {
    let dir = Scratch::new();
    let log = dir.path("log.jsonl");
    let text = std::fs::read(examples().join("skip_chain_three_kernels.jsonl")).expect("example");
    for json in [false, true] {
        std::fs::write(&log, &text).expect("the log");
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("the log opens");
        let mut args = vec!["replay", log.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let out = binary()
            .args(&args)
            .stdout(appended)
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {} is also standard output", log.display())),
            "{stderr}"
        );
        assert_eq!(std::fs::read(&log).expect("the log"), text);
    }
    // Another file as stdout is no concern of the replay's.
    let other = std::fs::File::create(dir.path("report.txt")).expect("a report file");
    let out = binary()
        .args(["replay", log.to_str().unwrap()])
        .stdout(other)
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(0));
}

/// The own-log refusal holds for a run with few file descriptors to
/// spare: `sh` sends stdout into the log, closes descriptors 3 to 9 (one
/// the test's process passed on, at 3, would leave the run none to load
/// its shared libraries with at limit 4, and a lower free one than the
/// limit expects at the others) and lowers the limit (`ulimit -n`, 4 to
/// 12; at 4 the log takes the last descriptor). Each run is
/// refused, or cannot open its log, and leaves the log as it was; when
/// stdout's look-up came after the log's open, the run at the last
/// descriptor had none to look with and appended its report to the log.
#[cfg(unix)]
#[test]
fn a_replay_into_its_own_log_is_refused_with_no_descriptor_to_spare() {
    let dir = Scratch::new();
    let log = dir.path("log.jsonl");
    let text = std::fs::read(examples().join("skip_chain_three_kernels.jsonl")).expect("example");
    let mut refused = 0;
    for limit in 4..=12 {
        std::fs::write(&log, &text).expect("the log");
        let out = Command::new("sh")
            .args([
                "-c",
                r#"exec >>"$1" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; ulimit -n "$2" && exec "$0" replay "$1""#,
            ])
            .arg(env!("CARGO_BIN_EXE_taintworld"))
            .arg(&log)
            .arg(limit.to_string())
            .output()
            .expect("sh runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "limit {limit}: {stderr}");
        let own = format!("error: {} is also standard output", log.display());
        assert!(
            stderr.starts_with(&own) || stderr.contains("Too many open files"),
            "limit {limit}: {stderr}"
        );
        refused += usize::from(stderr.starts_with(&own));
        assert_eq!(std::fs::read(&log).expect("the log"), text, "limit {limit}");
    }
    assert!(refused > 0, "no run got as far as the refusal");
}

/// Only a regular file is refused as a log that is also standard output:
/// `replay -` typed at a terminal reads and writes the same device, as
/// `replay - </dev/null >/dev/null` does, and neither is the log the
/// report would go into.
#[cfg(unix)]
#[test]
fn a_replay_whose_log_and_stdout_are_one_device_is_not_refused() {
    let null = || {
        std::fs::File::options()
            .read(true)
            .write(true)
            .open("/dev/null")
            .expect("/dev/null")
    };
    for log in ["-", "/dev/null"] {
        let out = Command::new(env!("CARGO_BIN_EXE_taintworld"))
            .args(["replay", log])
            .stdin(null())
            .stdout(null())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{log}: {stderr}");
    }
}

#[test]
fn a_failure_that_claimed_nothing_keeps_its_error_and_its_occurrence_in_the_summary() {
    // Each failure here writes nothing (no write binding, an unresolved
    // one, an empty graph), so the world forgets it at once.
    let dir = Scratch::new();
    let log = dir.path("claimed_nothing.jsonl");
    let lines = [
        r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[],"outcome":{"failed":{"kind":"compile","message":"bad PTX"}}}"#,
        r#"{"op":"host_write","binding":{"stream":0,"memory":9},"outcome":{"failed":{"kind":"copy","message":"DMA error"}}}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        r#"{"op":"capture_end","stream":0,"graph":4}"#,
        r#"{"op":"replay","graph":4,"stream":0,"outcome":{"failed":{"kind":"launch","message":"graph launch failed"}}}"#,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let text = summary_of(&log);
    for line in [
        "failure 1: compile in fill: bad PTX (1 occurrence, skipped 0 launches)",
        "failure 2: copy in host_write: DMA error (1 occurrence, skipped 0 launches)",
        "failure 3: launch in graph:4: graph launch failed (1 occurrence, skipped 0 launches)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    let injected = taintworld(&["replay", "--fail-launch", "0", log.to_str().unwrap()]);
    let text = String::from_utf8(injected.stdout).unwrap();
    assert!(
        text.contains(
            "\nfailure 1: injected in fill: injected failure (1 occurrence, skipped 0 launches)\n"
        ),
        "{text}"
    );
}

#[test]
fn the_summary_shows_a_tainted_read_that_comes_after_many_clean_ones() {
    // Six clean reads of memory 1, then a read of memory 2, which the
    // failed launch wrote: the summary keeps the first tainted reads, and
    // clean ones take none of their places.
    let dir = Scratch::new();
    let log = dir.path("clean_reads_first.jsonl");
    let mut lines = vec![
        r#"{"op":"alloc","stream":0,"memory":1,"size":8}"#,
        r#"{"op":"alloc","stream":0,"memory":2,"size":8}"#,
        r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":2,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad PTX"}}}"#,
    ];
    lines.extend([r#"{"op":"read","binding":{"stream":0,"memory":1}}"#; 6]);
    lines.push(r#"{"op":"read","binding":{"stream":0,"memory":2}}"#);
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let text = summary_of(&log);
    assert!(
        text.contains(
            "\nline 10: read of memory 2 is tainted by failure 1 (compile in fill: bad PTX)\n"
        ),
        "{text}"
    );
    assert_eq!(text.matches("read of memory").count(), 1, "{text}");
}

#[test]
fn a_zero_max_streams_or_chain_limit_on_the_command_line_is_refused_naming_the_range() {
    let log = examples().join("skip_chain_three_kernels.jsonl");
    for flag in ["--max-streams", "--chain-limit"] {
        let out = taintworld(&["replay", flag, "0", log.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(out.stdout.is_empty(), "{flag}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // An inclusive range: u64::MAX is a valid setting.
        assert!(
            stderr.contains("0 is not in 1..=18446744073709551615"),
            "{flag}: {stderr}"
        );
    }
}

/// A log's strings are text in the summary: a kernel name or message with
/// a line break, a NUL, a terminal escape, a line separator or a
/// right-to-left override is shown escaped, so it can neither forge a
/// summary line, drive the terminal nor reorder the line; a backslash is
/// doubled, so `\n` written out and a line break read differently (the
/// JSON report carries the strings exactly).
#[test]
fn the_summary_shows_control_characters_of_the_log_escaped() {
    let dir = Scratch::new();
    let log = dir.path("escapes.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"op":"alloc","stream":0,"memory":1,"size":16}"#,
            "\n",
            r#"{"op":"launch","kernel":"k\u001b[1m","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"#,
            r#""outcome":{"failed":{"kind":"a\nfinal: forged","message":"m\u0000\u2028é\\n\u202e"}}}"#,
            "\n",
            r#"{"op":"read","binding":{"stream":0,"memory":1}}"#,
            "\n",
        ),
    )
    .unwrap();
    let summary = summary_of(&log);
    assert!(
        !summary
            .chars()
            .any(|c| (c != '\n' && c.is_control()) || c == '\u{2028}' || c == '\u{202e}'),
        "{summary:?}"
    );
    assert_eq!(
        summary.lines().filter(|l| l.starts_with("final:")).count(),
        1
    );
    assert!(
        summary.contains(r"failure 1: a\nfinal: forged in k\u{1b}[1m: m\0\u{2028}é\\n\u{202e} ("),
        "{summary}"
    );
    let json = report(&["replay", "--json", log.to_str().unwrap()]);
    assert_eq!(json["reads"][0]["error"]["kind"], "a\nfinal: forged");
}

/// A negative number given to any numeric option reaches that option's
/// parser, which names the option and the value, rather than reading as
/// an unknown argument.
#[test]
fn a_negative_number_for_any_numeric_option_is_named_as_its_value() {
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let log = log.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["replay", log, "--fail-launch", "-1"], "--fail-launch"),
        (&["replay", log, "--max-streams", "-1"], "--max-streams"),
        (&["replay", log, "--chain-limit", "-1"], "--chain-limit"),
        (&["gen", "--launches", "-1"], "--launches"),
        (&["gen", "--launches", "5", "--seed", "-1"], "--seed"),
        (&["gen", "--launches", "5", "--streams", "-1"], "--streams"),
        (
            &["gen", "--launches", "5", "--fail-rate", "-1"],
            "--fail-rate",
        ),
    ];
    for (args, option) in cases {
        let out = taintworld(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("error: invalid value '-1' for '{option} ")),
            "{args:?}: {stderr}"
        );
    }
}

/// `taintworld replay -` with `input` on its standard input.
#[cfg(unix)]
fn replayed_from_stdin(input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = binary()
        .args(["replay", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// `-` replays standard input, plain or gzipped, as the file itself.
#[cfg(unix)]
#[test]
fn a_log_named_dash_is_read_from_standard_input_gzipped_or_not() {
    use std::io::Write;
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let plain = std::fs::read(&log).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let zipped = gz.finish().unwrap();
    let from_file = ran_ok(&["replay", log.to_str().unwrap()]);
    for input in [plain, zipped] {
        let out = replayed_from_stdin(&input);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, from_file.stdout);
    }
}

/// The summary shows the first five tainted reads, each with its chain,
/// and says how many more there were; a log with none past five says
/// nothing of more.
#[test]
fn the_summary_shows_five_tainted_reads_and_counts_the_rest() {
    let dir = Scratch::new();
    let mut lines = vec![
        r#"{"op":"alloc","stream":0,"memory":1,"size":16}"#.to_string(),
        r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad"}}}"#.to_string(),
    ];
    let read = r#"{"op":"read","binding":{"stream":0,"memory":1}}"#;
    lines.extend(std::iter::repeat_n(read.to_string(), 5));
    let five = dir.path("five_tainted_reads.jsonl");
    std::fs::write(&five, lines.join("\n")).unwrap();
    let summary = summary_of(&five);
    let shown = |summary: &str| {
        summary
            .lines()
            .filter(|l| l.contains("is tainted by failure 1"))
            .count()
    };
    assert_eq!(shown(&summary), 5, "{summary}");
    assert!(!summary.contains("more tainted read"), "{summary}");
    // Two more, and a clean read between, which is not counted.
    lines.push(r#"{"op":"alloc","stream":0,"memory":2,"size":16}"#.to_string());
    lines.push(r#"{"op":"read","binding":{"stream":0,"memory":2}}"#.to_string());
    lines.extend(std::iter::repeat_n(read.to_string(), 2));
    let seven = dir.path("seven_tainted_reads.jsonl");
    std::fs::write(&seven, lines.join("\n")).unwrap();
    let summary = summary_of(&seven);
    assert_eq!(shown(&summary), 5, "{summary}");
    assert!(
        summary.contains("… 2 more tainted reads (--json lists every read)"),
        "{summary}"
    );
}

/// Without `--json` the summary's memory follows the world, not the log:
/// it keeps the first twenty failures' tallies and the first ten rejected
/// lines, and counts the rest.
/// A log with no event — empty, or only blank lines and comments — is a
/// replay of nothing: exit status 0, every count 0 and every list empty,
/// and the summary says there were no failures.
#[test]
fn an_empty_log_or_one_of_comments_alone_replays_to_a_report_of_nothing() {
    let dir = Scratch::new();
    let empty = log_of(&dir, "empty.jsonl", &[]);
    let comments = log_of(&dir, "comments.jsonl", &["# nothing happens", "", "\t"]);
    for log in [empty, comments] {
        let r = report(&["replay", "--json", log.to_str().unwrap()]);
        assert_eq!(
            (&r["events"], &r["launches"]),
            (&0.into(), &0.into()),
            "{r}"
        );
        assert_eq!(
            r["final"],
            serde_json::json!({"live_failures":0,"tainted_allocations":0,"tainted_bytes":0,"claims":0}),
        );
        for list in [
            "launch_results",
            "reads",
            "captures",
            "profiles",
            "syncs",
            "rejected",
        ] {
            assert_eq!(r[list], serde_json::json!([]), "{list}");
        }
        assert_eq!(
            (&r["failures_minted"], &r["unresolved_bindings"]),
            (&0.into(), &0.into())
        );
        let text = summary_of(&log);
        assert_eq!(
            text,
            "0 events, 0 launches: 0 ran, 0 failed, 0 skipped, 0 dry runs\nno failures\nfinal: 0 live failures, 0 tainted allocations, 0 tainted bytes, 0 claims\n"
        );
    }
}

/// A read whose chain ends at a cut made by the chain limit says so under
/// its last hop; a whole chain says nothing of the kind.
#[test]
fn a_chain_cut_by_the_chain_limit_says_so_under_its_last_hop_in_the_summary() {
    let dir = Scratch::new();
    let hops = |text: &str| -> Vec<String> {
        let lines = text.lines().filter(|l| l.starts_with("    "));
        lines.map(String::from).collect()
    };
    // With a limit of 2 the third skip's cause would be at depth 3: it is
    // cut, and the read's chain is that one record.
    let short = three_skip_chain(
        &dir,
        "short_chain_limit.jsonl",
        r#"{"op":"header","format":"taintworld-log","version":1,"chain_limit":2}"#,
    );
    let text = summary_of(&short);
    assert_eq!(
        hops(&text),
        [
            "    skipped launch 3 (softmax), which needed memory 12",
            "    … chain cut at chain_limit",
        ],
        "{text}"
    );
    let text = summary_of(&examples().join("skip_chain_three_kernels.jsonl"));
    assert_eq!(hops(&text).len(), 3, "{text}");
    assert!(!text.contains("chain cut"), "{text}");
}

/// Past the first twenty failures, the allocations their failures tainted
/// when the program freed them are counted on a line of their own, as a
/// listed failure counts its own in its line; none freed, no such line.
#[test]
fn the_summary_counts_what_failures_past_the_twentieth_tainted_when_freed() {
    let dir = Scratch::new();
    // 25 failures, failure i the only one writing memory i (16 bytes) …
    let mut lines: Vec<String> = (1..=25)
        .map(|m| format!(r#"{{"op":"alloc","stream":0,"memory":{m},"size":16}}"#))
        .collect();
    lines.extend((1..=25).map(|m| {
        format!(
            r#"{{"op":"launch","kernel":"k","stream":0,"bindings":[{{"stream":0,"memory":{m},"access":"write"}}],"outcome":{{"failed":{{"kind":"compile","message":"error {m}"}}}}}}"#
        )
    }));
    let kept = dir.path("none_freed.jsonl");
    std::fs::write(&kept, lines.join("\n")).unwrap();
    let text = summary_of(&kept);
    assert!(
        text.contains("… failures past the first 20 failed 5 more operations"),
        "{text}"
    );
    assert!(!text.contains("freed while tainted"), "{text}");

    // … then memory 3, of a listed failure, and 21 to 23, of three past
    // the twentieth, are freed while they carry them.
    lines.extend([3, 21, 22, 23].map(|m| format!(r#"{{"op":"free","memory":{m}}}"#)));
    let freed = dir.path("some_freed.jsonl");
    std::fs::write(&freed, lines.join("\n")).unwrap();
    let text = summary_of(&freed);
    assert!(
        text.contains(
            "failure 3: compile in k: error 3 (1 occurrence, skipped 0 launches; 1 allocation freed while tainted, 16 bytes)\n"
        ),
        "{text}"
    );
    let past = text
        .lines()
        .position(|l| l.starts_with("… failures past the first 20"))
        .expect("the line that counts the rest");
    assert_eq!(
        text.lines().nth(past + 1),
        Some("… and their 3 allocations freed while tainted, 48 bytes"),
        "{text}"
    );
}

#[test]
fn the_summary_lists_the_first_twenty_failures_and_ten_rejected_lines_and_counts_the_rest() {
    let dir = Scratch::new();
    let mut lines = vec![r#"{"op":"alloc","stream":0,"memory":1,"size":16}"#.to_string()];
    // 25 distinct failures, each of one failed launch writing memory 1 …
    for i in 0..25 {
        lines.push(format!(
            r#"{{"op":"launch","kernel":"k","stream":0,"bindings":[{{"stream":0,"memory":1,"access":"write"}}],"outcome":{{"failed":{{"kind":"compile","message":"error {i}"}}}}}}"#
        ));
    }
    // … the last of which skips three launches reading it …
    for _ in 0..3 {
        lines.push(
            r#"{"op":"launch","kernel":"r","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read_write"}],"outcome":"ok"}"#
                .to_string(),
        );
    }
    // … and fifteen bad lines.
    for _ in 0..15 {
        lines.push(r#"{"op":"free","memory":99}"#.to_string());
    }
    let log = dir.path("many_failures.jsonl");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let summary = stdout_of(&["replay", "--keep-going", log.to_str().unwrap()]);
    let listed: Vec<&str> = summary
        .lines()
        // A tally's line, "failure N: …", not what one taints.
        .filter(|l| {
            l.starts_with("failure ") && l.split(' ').nth(1).is_some_and(|id| id.ends_with(':'))
        })
        .collect();
    assert_eq!(listed.len(), 20, "{summary}");
    assert!(listed[19].starts_with("failure 20: compile in k: error 19 "));
    // What the last failure taints at the end is named all the same.
    assert!(
        summary.contains("failure 25 taints memory 1 (1 allocation, 16 bytes)\n"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "… failures past the first 20 failed 5 more operations (launches, host writes, replays, reservations) and skipped 3 more launches (--json lists the launches, host writes and replays by failure id)"
        ),
        "{summary}"
    );
    assert!(summary.contains("15 lines rejected:"), "{summary}");
    assert!(
        summary.contains("    … 5 more (--keep-going --json lists every one)"),
        "{summary}"
    );
    let shown = summary
        .lines()
        .filter(|l| l.contains("memory 99 is not a live allocation"))
        .count();
    assert_eq!(shown, 10, "{summary}");
    // The JSON report still lists every one.
    let json = report(&["replay", "--json", "--keep-going", log.to_str().unwrap()]);
    assert_eq!(json["rejected"].as_array().map(Vec::len), Some(15));
    assert_eq!(json["failures_minted"], 25);
    assert_eq!(json["verdicts"]["skipped"], 3);
}

#[test]
fn a_reader_that_stops_early_is_no_error_for_the_json_report_either() {
    let dir = Scratch::new();
    let log = dir.path("long_report.jsonl");
    // Every launch after the first failure is skipped and listed: a report
    // of about a megabyte, far past what a pipe holds.
    ran_ok(&[
        "gen",
        "--seed",
        "3",
        "--launches",
        "20000",
        "--shape",
        "chain",
        "--fail-rate",
        "0.001",
        "-o",
        log.to_str().unwrap(),
    ]);
    let (start, out) = head_c::<20>(&["replay", "--json", log.to_str().unwrap()]);
    assert!(start.starts_with(br#"{"format""#));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
}

#[test]
fn the_summary_lists_failed_reservations_device_faults_and_invalid_profiles() {
    let dir = Scratch::new();
    let log = dir.path("reservations_and_faults.jsonl");
    let lines = [
        r#"{"op":"alloc","stream":0,"memory":1,"size":4096,"outcome":{"failed":{"kind":"out_of_memory","message":"cudaMalloc"}}}"#,
        r#"{"op":"read","binding":{"stream":0,"memory":1}}"#,
        // A zero-size reservation of a new error: failure 2, minted and
        // pruned at once (it claims nothing), yet listed.
        r#"{"op":"alloc","stream":0,"memory":4,"size":0,"outcome":{"failed":{"kind":"out_of_memory","message":"empty"}}}"#,
        // Failure 1's error again, on a reservation that claims nothing:
        // an occurrence of failure 1 (not of 2, the last minted), which
        // the summary must count.
        r#"{"op":"alloc","stream":0,"memory":2,"size":0,"outcome":{"failed":{"kind":"out_of_memory","message":"cudaMalloc"}}}"#,
        r#"{"op":"alloc","stream":0,"memory":3,"size":8}"#,
        r#"{"op":"profile_begin","profile":7}"#,
        r#"{"op":"launch","kernel":"copy","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read"},{"stream":0,"memory":3,"access":"write"}],"outcome":"ok"}"#,
        r#"{"op":"profile_end","profile":7}"#,
        r#"{"op":"device_fault","error":{"kind":"device","message":"illegal address"}}"#,
        r#"{"op":"device_fault","error":{"kind":"device","message":"a later one"}}"#,
        r#"{"op":"sync"}"#,
        r#"{"op":"read","binding":{"stream":0,"memory":3}}"#,
        r#"{"op":"read","binding":{"stream":0,"memory":99}}"#,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let summary = stdout_of(&["replay", log.to_str().unwrap()]);
    let expected = [
        "13 events, 1 launch: 0 ran, 0 failed, 1 skipped, 0 dry runs",
        "failure 1: out_of_memory in alloc: cudaMalloc (2 occurrences, skipped 1 launch)",
        "failure 2: out_of_memory in alloc: empty (1 occurrence, skipped 0 launches)",
        "line 2: read of memory 1 is tainted by failure 1 (out_of_memory in alloc: cudaMalloc)",
        // The read of memory 99 answers `unresolved`, not the fault.
        "line 13: read of memory 99 did not resolve (no allocation of that id was live)",
        "1 profile invalid, at line 8",
        // The first fault wins.
        "line 9: device fault (device: illegal address); 1 read and 1 sync after it answered device_fault",
        "1 unresolved binding, at line 13",
        "final: 1 live failure, 2 tainted allocations, 4104 tainted bytes, 2 claims",
        "failure 1 taints memory 1, 3 (2 allocations, 4104 bytes)",
    ];
    assert_eq!(summary.lines().collect::<Vec<_>>(), expected, "{summary}");
    // The JSON report agrees on the occurrences and the fault's answers.
    let json = report(&["replay", "--json", log.to_str().unwrap()]);
    assert_eq!(json["reads"][0]["occurrences"], 1);
    assert_eq!(json["syncs"][0]["result"], "device_fault");
    assert_eq!(json["reads"][1]["result"], "device_fault");
    assert_eq!(json["profiles"][0]["result"], "invalid");
}

/// SPEC §7: a `--fail-launch` number past the last launch does nothing —
/// the report is the one without it — and the command says so on stderr,
/// naming the number and how many launches there were, so a typo does not
/// pass for a failure that tainted nothing. A number that is a launch gets
/// no note.
#[test]
fn a_fail_launch_past_the_last_launch_changes_nothing_and_is_noted_on_stderr() {
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let log = log.to_str().unwrap();
    assert_eq!(
        injected_in_vain(log, "99"),
        "note: --fail-launch 99: past the last launch (the log has 4 launches, 0 to 3), \
         so nothing was injected there\n"
    );

    let both = ran_ok(&["replay", "--fail-launch", "0", "--fail-launch", "4", log]);
    assert_eq!(
        String::from_utf8_lossy(&both.stderr),
        "note: --fail-launch 4: past the last launch (the log has 4 launches, 0 to 3), \
         so nothing was injected there\n"
    );

    // Launch 0 fails in the log already: the injected error replaces its own.
    let within = ran_ok(&["replay", "--fail-launch", "0", log]);
    assert!(
        within.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&within.stderr)
    );
}

/// What `replay --fail-launch NUMBER` of `log` says on stderr, having
/// checked that it succeeds with the report of the log replayed without
/// the flag: the injection changed nothing.
fn injected_in_vain(log: &str, number: &str) -> String {
    let plain = ran_ok(&["replay", "--json", log]);
    let injected = ran_ok(&["replay", "--json", "--fail-launch", number, log]);
    assert_eq!(injected.stdout, plain.stdout);
    String::from_utf8_lossy(&injected.stderr).into_owned()
}

/// `args` run on a pseudo-terminal, as a person at a terminal runs them:
/// util-linux's `script` gives the command one and copies all it writes,
/// stdout and stderr together, to its own stdout.
///
/// The terminal is named, as a person's is: indicatif draws nothing where
/// `TERM` is unset or `dumb`, which is how a CI job, a container or
/// `env -i` often leaves it, and `script` passes on whatever it was given.
fn on_a_terminal(command: &str) -> String {
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .expect("util-linux's `script` runs (the CI script installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{command}: {text}");
    text
}

/// The summary's first line as a terminal shows it: what follows the last
/// line clear on it, so that a bar left drawn shows up in front.
fn summary_as_shown(text: &str) -> &str {
    let line = text
        .split('\n')
        .find(|line| line.contains(" events, "))
        .unwrap_or_default();
    line.rsplit("\x1b[2K").next().unwrap_or_default()
}

/// Whether the summary's first line, as a terminal shows it, is the whole
/// line for `launches` launches, with nothing of a bar in front.
fn shows_summary_of(text: &str, launches: u64) -> bool {
    summary_as_shown(text)
        .split_once(" events, ")
        .is_some_and(|(events, rest)| {
            events.parse::<u64>().is_ok() && rest.starts_with(&format!("{launches} launches"))
        })
}

/// A generated chain log of `launches` launches, written by `gen`.
fn chain_log(dir: &Scratch, name: &str, launches: u64) -> PathBuf {
    let log = dir.path(name);
    ran_ok(&[
        "gen",
        "--launches",
        &launches.to_string(),
        "--shape",
        "chain",
        "-o",
        log.to_str().expect("a UTF-8 temp path"),
    ]);
    log
}

/// A path or program as one word for `sh -c`.
fn quoted(word: &Path) -> String {
    format!("'{}'", word.display().to_string().replace('\'', r"'\''"))
}

/// On a terminal, a replay that takes over a second draws a bar on stderr:
/// the share of the log file's bytes read and the line it is at, or from a
/// pipe the line and the time so far; a replay that ends sooner draws
/// nothing. The summary follows either way.
///
/// What takes over a second depends on the machine, so the test does not
/// lean on one log's replay time: a file replay that drew nothing in under
/// a second and a half is tried again with a log twice as long, and the
/// pipe is made to stall for over a second between its halves.
#[test]
fn on_a_terminal_a_replay_over_a_second_draws_its_bar_and_a_shorter_one_does_not() {
    let dir = Scratch::new();
    let bin = quoted(Path::new(env!("CARGO_BIN_EXE_taintworld")));
    // About 2.5 s to replay here, so one try on a machine like this one.
    let mut launches = 300_000;
    let file = loop {
        let log = chain_log(&dir, "long.jsonl.gz", launches);
        let started = Instant::now();
        let file = on_a_terminal(&format!("{bin} replay {}", quoted(&log)));
        let took = started.elapsed();
        if file.contains("replaying [") {
            break file;
        }
        assert!(
            took < Duration::from_millis(1500) && launches < 4_800_000,
            "no bar in {took:?} of replaying {launches} launches: {file}"
        );
        launches *= 2;
    };
    assert!(file.contains("% of "), "no share of the file: {file}");
    assert!(
        shows_summary_of(&file, launches),
        "the bar is not cleared before the summary: {:?}",
        summary_as_shown(&file)
    );
    assert!(
        file.contains("final: 0 live failures"),
        "no summary: {file}"
    );

    // Past the 4096 lines at which the bar is looked at, in a tenth of a
    // second here.
    let short = chain_log(&dir, "short.jsonl", 10_000);
    let started = Instant::now();
    let quick = on_a_terminal(&format!("{bin} replay {}", quoted(&short)));
    let took = started.elapsed();
    // Over a second (`script` included) the replay may draw: the rule
    // holds either way, and only a quicker run can show it draws nothing.
    assert!(
        took >= Duration::from_secs(1) || !quick.contains("replaying"),
        "a bar for a replay of {took:?}: {quick}"
    );
    assert!(
        quick.contains("final: 0 live failures"),
        "no summary: {quick}"
    );

    // The same log through a pipe that stalls for 1.2 s after 5,000 of its
    // lines: the look at line 8192 is past the second whatever the machine.
    let pipe = on_a_terminal(&format!(
        "{{ head -n 5000 {log}; sleep 1.2; tail -n +5001 {log}; }} | {bin} replay /dev/stdin",
        log = quoted(&short)
    ));
    assert!(pipe.contains("replaying: line "), "no line count: {pipe}");
    assert!(
        shows_summary_of(&pipe, 10_000),
        "the bar is not cleared before the summary: {:?}",
        summary_as_shown(&pipe)
    );
    assert!(!pipe.contains("% of "), "a share of a pipe: {pipe}");
    assert!(
        pipe.contains("final: 0 live failures"),
        "no summary: {pipe}"
    );
}

#[test]
fn a_fail_launch_on_a_launch_that_is_skipped_anyway_changes_nothing_and_is_noted_on_stderr() {
    // Launch 0 fails; 1, 2 and 3 read what it tainted and are skipped.
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let log = log.to_str().unwrap();
    assert_eq!(
        injected_in_vain(log, "2"),
        "note: --fail-launch: launch 2 (line 11) read tainted bytes and was skipped, \
         which wins over any outcome, so nothing was injected there\n"
    );
    let two = ran_ok(&["replay", "--fail-launch", "3", "--fail-launch", "1", log]);
    assert_eq!(
        String::from_utf8_lossy(&two.stderr),
        "note: --fail-launch: launches 1 (line 10), 3 (line 12) read tainted bytes and were \
         skipped, which wins over any outcome, so nothing was injected there\n"
    );
}

#[test]
fn the_summary_names_each_unresolved_read_by_line_and_memory_and_counts_past_five() {
    let dir = Scratch::new();
    let mut lines = vec![
        r#"{"op":"alloc","stream":0,"memory":1,"size":16}"#.to_string(),
        r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad"}}}"#.to_string(),
    ];
    // Memory 7 was never made; memory 1 is not on stream 1's slot.
    lines.push(r#"{"op":"read","binding":{"stream":0,"memory":7}}"#.to_string());
    lines.push(r#"{"op":"read","binding":{"stream":1,"memory":1}}"#.to_string());
    let two = dir.path("two_unresolved_reads.jsonl");
    std::fs::write(&two, lines.join("\n")).unwrap();
    let summary = summary_of(&two);
    assert!(
        summary.contains(
            "line 3: read of memory 7 did not resolve (no allocation of that id was live)\n\
             line 4: read of memory 1 did not resolve (it was live on slot 0, not on slot 1, the read's stream's)\n"
        ),
        "{summary}"
    );
    assert!(!summary.contains("more unresolved read"), "{summary}");
    // Five tainted reads fill the summary's list, so the reads after them
    // take the replay's cheaper path, which must still see these.
    let tainted = r#"{"op":"read","binding":{"stream":0,"memory":1}}"#;
    lines.extend(std::iter::repeat_n(tainted.to_string(), 5));
    for memory in 10..15 {
        lines.push(format!(
            r#"{{"op":"read","binding":{{"stream":0,"memory":{memory}}}}}"#
        ));
    }
    let many = dir.path("many_unresolved_reads.jsonl");
    std::fs::write(&many, lines.join("\n")).unwrap();
    let summary = summary_of(&many);
    let named = summary
        .lines()
        .filter(|l| l.contains("did not resolve"))
        .count();
    assert_eq!(named, 5, "{summary}");
    assert!(
        summary.contains("line 12: read of memory 12 did not resolve"),
        "{summary}"
    );
    assert!(!summary.contains("memory 13 did not resolve"), "{summary}");
    assert!(
        summary.contains("… 2 more unresolved reads (--json lists every read)"),
        "{summary}"
    );
    assert!(
        summary.contains("\n7 unresolved bindings, the first at line 3\n"),
        "{summary}"
    );
}

#[test]
fn a_range_past_its_allocations_end_is_an_error_naming_the_binding() {
    let dir = Scratch::new();
    let log = log_of(
        &dir,
        "range_past_the_end.jsonl",
        &[
            r#"{"op":"alloc","stream":0,"memory":1,"size":1024}"#,
            r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read"},{"stream":0,"memory":1,"range":[512,2048],"access":"write"}],"outcome":"ok"}"#,
        ],
    );
    let out = taintworld(&["replay", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: line 2: range [512, 2048) runs past the end of memory 1 (size 1024) in bindings[1]\n"
    );
    // The same range on a stream where memory 1 was not made does not
    // resolve, so it is never held to the size: the second binding is
    // the one past the end.
    let log = log_of(
        &dir,
        "range_past_the_end_on_another_stream.jsonl",
        &[
            r#"{"op":"alloc","stream":0,"memory":1,"size":1024}"#,
            r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":3,"memory":1,"range":[512,2048],"access":"read"},{"stream":0,"memory":1,"range":[512,2048],"access":"read"}],"outcome":"ok"}"#,
        ],
    );
    let out = taintworld(&["replay", log.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: line 2: range [512, 2048) runs past the end of memory 1 (size 1024) in bindings[1]\n"
    );
}

#[test]
fn gen_writes_gzip_to_a_name_ending_in_gz_in_any_case_and_replay_reads_it_back() {
    let dir = Scratch::new();
    for name in ["upper.JSONL.GZ", "mixed.jsonl.Gz", "lower.jsonl.gz"] {
        let path = dir.path(name);
        ran_ok(&["gen", "--launches", "20", "-o", path.to_str().unwrap()]);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[..2], [0x1f, 0x8b], "{name} is not gzip");
        let replayed = report(&["replay", "--json", path.to_str().unwrap()]);
        assert_eq!(replayed["launches"], 20, "{name}");
    }
}

#[test]
fn gen_writes_its_log_under_a_partial_name_and_renames_it_only_when_whole() {
    // Declared before the run's `Killed` guard below, so the run is killed
    // before its folder goes.
    let dir = Scratch::new();
    let path = dir.path("whole.jsonl");
    let partial = dir.path("whole.jsonl.partial");
    ran_ok(&["gen", "--launches", "20", "-o", path.to_str().unwrap()]);
    assert!(path.exists() && !partial.exists());

    // Killed part way (by SIGKILL, which no run can catch), a run leaves
    // its bytes under the partial name only.
    let path = dir.path("killed.jsonl");
    let partial = dir.path("killed.jsonl.partial");
    drop(gen_under_way(&path));
    assert!(!path.exists(), "a cut log lies under the name asked for");
    assert!(partial.exists());
    std::fs::remove_file(&partial).unwrap();
}

/// `gen -o path` of a million launches, started and left running once its
/// partial file holds bytes (by then it catches its signals: the catch
/// comes before the file). A million launches (about 330 MB, 12 s in a
/// debug build) outlast any wait here by far, yet bound what a run the
/// test loses hold of can write: a test the harness kills runs no drop,
/// and an endless one filled a disk under mutation testing. Its stderr is
/// a pipe, for [`ended`] to read.
fn gen_under_way(path: &Path) -> Killed {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let child = Killed(
        binary()
            .args(["gen", "--launches", "1000000", "-o", path.to_str().unwrap()])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary runs"),
    );
    let started = Instant::now();
    while std::fs::metadata(&partial).map_or(true, |m| m.len() == 0) {
        assert!(
            !path.exists(),
            "the log is written under the name asked for"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no partial log after a minute"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Sends `signals` (`INT`, `TERM`, …) to the run, in order, each sent
/// before the next, by the shell's own `kill`: a `kill` program may not
/// be installed.
fn send(child: &Killed, signals: &[&str]) {
    let script: Vec<String> = signals
        .iter()
        .map(|signal| format!("kill -{signal} \"$0\""))
        .collect();
    let pid = child.0.id().to_string();
    let sent = Command::new("sh")
        .args(["-c", &script.join(" && "), &pid])
        .status()
        .expect("sh runs");
    assert!(sent.success(), "{signals:?} to {pid}");
}

/// How a run [`gen_under_way`] started ended, and what it wrote to stderr.
fn ended(mut child: Killed) -> (std::process::ExitStatus, String) {
    let mut stderr = String::new();
    let pipe = child.0.stderr.as_mut().expect("stderr is a pipe");
    std::io::Read::read_to_string(pipe, &mut stderr).unwrap();
    (child.0.wait().unwrap(), stderr)
}

/// SIGINT or SIGTERM stops `gen -o` part way: it removes its partial
/// file, says so, and then dies of the signal, as it would have without
/// catching it, so that a shell sees the interruption. The next run to
/// the same name then goes ahead, where a partial file left behind would
/// stop it.
#[cfg(unix)]
#[test]
fn gen_stopped_by_sigint_or_sigterm_removes_its_partial_file_and_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let dir = Scratch::new();
    let path = dir.path("stopped.jsonl");
    let partial = dir.path("stopped.jsonl.partial");
    for (signal, number) in [("INT", 2), ("TERM", 15)] {
        let child = gen_under_way(&path);
        send(&child, &[signal]);
        let (status, stderr) = ended(child);
        assert_eq!(
            status.signal(),
            Some(number),
            "SIG{signal}: {status:?}, {stderr}"
        );
        assert_eq!(
            stderr,
            format!(
                "error: {}: interrupted by SIG{signal}; {} removed\n",
                path.display(),
                partial.display()
            )
        );
        assert!(!partial.exists(), "SIG{signal} left the partial file");
        assert!(!path.exists(), "SIG{signal} left a cut log under the name");
    }
    ran_ok(&["gen", "--launches", "20", "-o", path.to_str().unwrap()]);
    assert!(path.exists() && !partial.exists());
}

/// A second signal while `gen -o` is stopping ends it at once, with
/// status 128 + that signal's number, for a run whose clean-up hangs: the
/// run is stopped (SIGSTOP), sent SIGINT and SIGTERM, and let go
/// (SIGCONT), so that both are taken before it runs a line more. Which of
/// the two is taken second is the kernel's choice, so either status is
/// right; the partial file is left, as nothing ran to remove it.
#[cfg(unix)]
#[test]
fn a_second_signal_ends_gen_at_once_with_128_and_its_number() {
    use std::os::unix::process::ExitStatusExt;
    let dir = Scratch::new();
    let path = dir.path("twice.jsonl");
    let partial = dir.path("twice.jsonl.partial");
    let child = gen_under_way(&path);
    send(&child, &["STOP", "INT", "TERM", "CONT"]);
    let (status, stderr) = ended(child);
    assert_eq!(status.signal(), None, "{status:?}, {stderr}");
    assert!(
        matches!(status.code(), Some(130 | 143)),
        "{status:?}, {stderr}"
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert!(
        partial.exists(),
        "the run went on to remove its partial file"
    );
    assert!(!path.exists(), "a cut log lies under the name asked for");
    std::fs::remove_file(&partial).unwrap();
}

/// A write past the file-size limit (`ulimit -f`) is a failed write, not
/// a death by SIGXFSZ: `gen -o` says the file is too large, removes its
/// partial file and exits 2, gzip or not.
#[cfg(unix)]
#[test]
fn gen_past_the_file_size_limit_is_an_error_that_removes_its_partial_file() {
    let dir = Scratch::new();
    for name in ["limited.jsonl", "limited.jsonl.gz"] {
        let path = dir.path(name);
        let partial = dir.path(&format!("{name}.partial"));
        // 100 blocks of 512 bytes: far less than a million launches.
        let out = Command::new("sh")
            .args([
                "-c",
                r#"ulimit -f 100 && exec "$0" gen --launches 1000000 -o "$1""#,
                env!("CARGO_BIN_EXE_taintworld"),
                path.to_str().unwrap(),
            ])
            .env_remove("CLICOLOR_FORCE")
            .output()
            .expect("sh runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name}: {:?}, {stderr}",
            out.status
        );
        assert!(
            stderr.starts_with(&format!("error: {}: File too large", path.display())),
            "{name}: {stderr}"
        );
        assert!(!partial.exists(), "{name}: the partial file is left");
        assert!(!path.exists(), "{name}: a cut log lies under the name");
    }
}

#[test]
fn gen_refuses_a_partial_file_that_exists_and_leaves_it_and_the_log_as_they_were() {
    let dir = Scratch::new();
    let path = dir.path("taken.jsonl");
    let partial = dir.path("taken.jsonl.partial");
    std::fs::write(&path, "the old log\n").unwrap();
    std::fs::write(&partial, "another run's\n").unwrap();
    let out = taintworld(&["gen", "--launches", "5", "-o", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("error: {} exists: ", partial.display()))
            && stderr.contains("remove it to go on"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "the old log\n");
    assert_eq!(
        std::fs::read_to_string(&partial).unwrap(),
        "another run's\n"
    );
}

/// A log `gen` cannot make is an error with exit status 2 that names the
/// file it could not create: in a folder that does not exist (its partial
/// file, the first it makes), over a folder, or through a plain file. It
/// leaves nothing behind.
#[test]
fn gen_that_cannot_create_its_log_names_the_file_and_leaves_nothing() {
    let dir = Scratch::new();
    let file = dir.path("a_file");
    std::fs::write(&file, "").unwrap();
    let missing = dir.path("missing").join("log.jsonl");
    let mut partial = missing.clone().into_os_string();
    partial.push(".partial");
    let cases = [
        (missing.clone(), PathBuf::from(partial)),
        (dir.path(""), dir.path("")),
        (file.join("log.jsonl"), file.join("log.jsonl")),
    ];
    for (path, named) in cases {
        let out = taintworld(&["gen", "--launches", "5", "-o", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("error: cannot create {}: ", named.display())),
            "{stderr}"
        );
    }
    assert!(!dir.path("missing").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path("")).unwrap().collect();
    assert_eq!(left.len(), 1, "only the plain file: {left:?}");
    assert_eq!(std::fs::read(&file).unwrap(), b"");
}

/// A link where the partial file would go is not followed, and a link
/// named as the log is written through, as before there was a partial file.
#[cfg(unix)]
#[test]
fn gen_follows_a_link_named_as_its_log_but_never_one_named_as_its_partial_file() {
    use std::os::unix::fs::symlink;
    let dir = Scratch::new();
    let victim = dir.path("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let path = dir.path("linked_partial.jsonl");
    let partial = dir.path("linked_partial.jsonl.partial");
    symlink(&victim, &partial).unwrap();
    let out = taintworld(&["gen", "--launches", "5", "-o", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!path.exists());

    let target = dir.path("link_target.jsonl");
    let link = dir.path("link_to_log.jsonl");
    std::fs::write(&target, "").unwrap();
    symlink(&target, &link).unwrap();
    ran_ok(&["gen", "--launches", "5", "-o", link.to_str().unwrap()]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        report(&["replay", "--json", target.to_str().unwrap()])["launches"],
        5
    );
}

#[cfg(unix)]
#[test]
fn gen_replacing_a_log_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new();
    let path = dir.path("private.jsonl");
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    ran_ok(&["gen", "--launches", "5", "-o", path.to_str().unwrap()]);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        report(&["replay", "--json", path.to_str().unwrap()])["launches"],
        5
    );
}

#[test]
fn a_fail_launch_on_a_dry_run_makes_it_a_checked_launch_and_is_not_noted() {
    let dir = Scratch::new();
    let log = log_of(
        &dir,
        "dry_run_injected.jsonl",
        &[
            r#"{"op":"alloc","stream":0,"memory":1,"size":100}"#,
            r#"{"op":"alloc","stream":0,"memory":2,"size":100}"#,
            r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad"}}}"#,
            r#"{"op":"launch","kernel":"probe","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read"},{"stream":0,"memory":2,"access":"write"}],"outcome":"dry_run"}"#,
        ],
    );
    let log = log.to_str().unwrap();
    let plain = report(&["replay", "--json", log]);
    assert_eq!(plain["verdicts"]["dry_run"], 1);
    let out = ran_ok(&["replay", "--json", "--fail-launch", "1", log]);
    let injected: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(injected["verdicts"]["skipped"], 1);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn freed_memory_named_again_is_said_to_have_been_freed_and_where() {
    let dir = Scratch::new();
    let log = log_of(
        &dir,
        "freed_memory.jsonl",
        &[
            r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#,
            r#"{"op":"alloc","stream":0,"memory":2,"size":64}"#,
            r#"{"op":"free","memory":1}"#,
            r#"{"op":"read","binding":{"stream":0,"memory":1,"range":[0,8]}}"#,
            r#"{"op":"read","binding":{"stream":0,"memory":3,"range":[0,8]}}"#,
            // Memory 1 was made on slot 0: live, it would not resolve on
            // slot 1 either, so its free is no reason to give.
            r#"{"op":"read","binding":{"stream":1,"memory":1,"range":[0,8]}}"#,
            r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":2,"access":"read"},{"stream":0,"memory":1,"access":"read"}],"outcome":"ok"}"#,
            r#"{"op":"free","memory":1}"#,
        ],
    );
    let log = log.to_str().unwrap();
    // The second free stops the replay, naming the first.
    let out = taintworld(&["replay", log]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: line 8: memory 1 is not a live allocation (freed at line 3)\n"
    );
    // In strict mode the reads and the launch are bad input too, and say
    // so where the free is the reason.
    let out = ran_ok(&["replay", "--strict", "--keep-going", log]);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains(
            "    line 4: binding of memory 1 on stream slot 0 does not resolve (strict mode) (memory 1 was freed at line 3)\n\
             \x20   line 5: binding of memory 3 on stream slot 0 does not resolve (strict mode)\n\
             \x20   line 6: binding of memory 1 on stream slot 1 does not resolve (strict mode)\n\
             \x20   line 7: binding of memory 1 on stream slot 0 does not resolve (strict mode) in bindings[1] (memory 1 was freed at line 3)\n\
             \x20   line 8: memory 1 is not a live allocation (freed at line 3)\n"
        ),
        "{summary}"
    );
    // Without strict mode the reads are unresolved, and the summary says
    // which was of freed memory.
    let out = taintworld(&["replay", "--keep-going", log]);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains(
            "line 4: read of memory 1 did not resolve (it was freed at line 3)\n\
             line 5: read of memory 3 did not resolve (no allocation of that id was live)\n\
             line 6: read of memory 1 did not resolve (no allocation of that id was live)\n"
        ),
        "{summary}"
    );
}

/// The text block of the README that follows `before`.
fn readme_block(before: &str) -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("the README");
    readme
        .split(&format!("{before}```text\n"))
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("the README has a text block after {before:?}"))
        .to_string()
}

/// The README's first set-up command prints what the README shows, line
/// for line: the block is the documentation a newcomer reads first.
#[test]
fn the_readme_shows_exactly_what_the_main_job_prints() {
    let shown = readme_block("The first prints:\n\n");
    let log = examples().join("skip_chain_three_kernels.jsonl");
    let printed = summary_of(&log);
    assert_eq!(printed, shown);
}

/// `--fail-launch`'s help says where launch numbers start, as the
/// README's usage does: without it, a user meaning the log's first launch
/// could give 1 and fail the second without a word.
#[test]
fn the_fail_launch_help_says_launches_are_numbered_from_0() {
    let help = taintworld(&["replay", "--help"]);
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    assert!(
        text.contains(
            "Process launch N (numbered from 0 in log order, as the report numbers launches) \
             as if it failed (repeatable)."
        ),
        "{text}"
    );
}

#[test]
fn the_readmes_usage_names_every_option_the_commands_help_lists_and_no_other() {
    // A flag added to the command and not to the README's usage block (or
    // one left there after it went) fails here, not in a reader's hands.
    let usage = readme_block("## The command\n\n");
    let options = |text: &str| {
        let mut found: Vec<String> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|word| word.starts_with("--") && word.len() > 2 && word != &"--help")
            .map(String::from)
            .collect();
        found.sort();
        found.dedup();
        found
    };
    for command in ["replay", "gen"] {
        let shown: Vec<&str> = usage
            .lines()
            .skip_while(|line| !line.starts_with(&format!("taintworld {command}")))
            .take_while(|line| {
                line.starts_with(&format!("taintworld {command}")) || line.starts_with(' ')
            })
            .collect();
        let help = taintworld(&[command, "--help"]);
        assert!(help.status.success(), "{command} --help failed");
        let listed = options(&String::from_utf8_lossy(&help.stdout));
        assert!(listed.len() >= 3, "{command} --help lists {listed:?}");
        assert_eq!(
            options(&shown.join("\n")),
            listed,
            "the README's usage of {command} against its --help"
        );
    }
}

#[test]
fn the_summary_names_what_each_failure_taints_at_the_end_and_what_it_tainted_that_was_freed() {
    let dir = Scratch::new();
    let mut lines = vec![
        r#"{"op":"alloc","stream":0,"memory":100,"size":8}"#.to_string(),
        r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":100,"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"bad"}}}"#.to_string(),
    ];
    // Fourteen launches read it and are skipped, tainting what they write.
    for m in 1..=14 {
        lines.push(format!(
            r#"{{"op":"alloc","stream":0,"memory":{m},"size":16}}"#
        ));
        lines.push(format!(
            r#"{{"op":"launch","kernel":"use","stream":0,"bindings":[{{"stream":0,"memory":100,"access":"read"}},{{"stream":0,"memory":{m},"access":"write"}}],"outcome":"ok"}}"#
        ));
    }
    lines.push(r#"{"op":"free","memory":3}"#.to_string());
    lines.push(r#"{"op":"free","memory":100}"#.to_string());
    let log = dir.path("tainted.jsonl");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let summary = summary_of(&log);
    assert!(
        summary.contains(
            "failure 1: compile in fill: bad (1 occurrence, skipped 14 launches; \
             2 allocations freed while tainted, 24 bytes)\n"
        ),
        "{summary}"
    );
    assert!(
        summary.contains(
            "final: 1 live failure, 13 tainted allocations, 208 tainted bytes, 13 claims\n\
             failure 1 taints memory 1, 2, 4, 5, 6, 7, 8, 9, 10, 11 and 3 more (13 allocations, 208 bytes)\n"
        ),
        "{summary}"
    );
}

#[test]
fn past_twenty_failures_that_taint_at_the_end_one_line_counts_the_bytes_of_the_rest() {
    let dir = Scratch::new();
    let mut lines = Vec::new();
    for m in 1..=22 {
        lines.push(format!(
            r#"{{"op":"alloc","stream":0,"memory":{m},"size":{m}}}"#
        ));
        lines.push(format!(
            r#"{{"op":"launch","kernel":"k","stream":0,"bindings":[{{"stream":0,"memory":{m},"access":"write"}}],"outcome":{{"failed":{{"kind":"compile","message":"error {m}"}}}}}}"#
        ));
    }
    let log = dir.path("twenty_two_failures.jsonl");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let summary = summary_of(&log);
    let taints: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("failure ") && l.contains(" taints memory "))
        .collect();
    assert_eq!(taints.len(), 20, "{summary}");
    assert_eq!(
        taints[19],
        "failure 20 taints memory 20 (1 allocation, 20 bytes)"
    );
    // Memory 21 and 22 hold 43 bytes.
    assert!(
        summary.ends_with("\n… 2 more failures taint 43 more bytes\n"),
        "{summary}"
    );
    // One left out takes the verb's singular.
    std::fs::write(&log, lines[..42].join("\n")).unwrap();
    let summary = summary_of(&log);
    assert!(
        summary.ends_with("\n… 1 more failure taints 21 more bytes\n"),
        "{summary}"
    );
}

#[test]
fn a_live_failure_that_taints_no_byte_is_said_to_be_held_by_the_capture_window_it_doomed() {
    let dir = Scratch::new();
    let fail = |stream: u64, memory: u64| {
        format!(
            r#"{{"op":"launch","kernel":"k","stream":{stream},"bindings":[{{"stream":{stream},"memory":{memory},"access":"write"}}],"outcome":{{"failed":{{"kind":"compile","message":"bad {memory}"}}}}}}"#
        )
    };
    let mut lines = vec![
        r#"{"op":"alloc","stream":0,"memory":1,"size":16}"#.to_string(),
        r#"{"op":"alloc","stream":1,"memory":2,"size":16}"#.to_string(),
        r#"{"op":"capture_begin","stream":0}"#.to_string(),
        fail(0, 1),
        r#"{"op":"free","memory":1}"#.to_string(),
    ];
    let log = dir.path("pinned.jsonl");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let summary = summary_of(&log);
    assert!(
        summary.ends_with(
            "final: 1 live failure, 0 tainted allocations, 0 tainted bytes, 0 claims\n\
             1 live failure taints no byte: only the open capture window it doomed holds it\n"
        ),
        "{summary}"
    );
    // A second window, doomed by a second failure, whose buffer is freed.
    lines.extend([
        r#"{"op":"capture_begin","stream":1}"#.to_string(),
        fail(1, 2),
        r#"{"op":"free","memory":2}"#.to_string(),
    ]);
    std::fs::write(&log, lines.join("\n")).unwrap();
    let summary = summary_of(&log);
    assert!(
        summary.ends_with(
            "2 live failures taint no byte: only the open capture windows they doomed hold them\n"
        ),
        "{summary}"
    );
    // Once the windows end, the failures go.
    lines.extend([
        r#"{"op":"capture_end","stream":0,"graph":1}"#.to_string(),
        r#"{"op":"capture_end","stream":1,"graph":2}"#.to_string(),
    ]);
    std::fs::write(&log, lines.join("\n")).unwrap();
    let summary = summary_of(&log);
    assert!(!summary.contains("no byte"), "{summary}");
    assert!(summary.contains("final: 0 live failures"), "{summary}");
}

/// A failure injected into a captured launch fails the capture, which makes
/// no graph (SPEC §6), so the log's replay of that graph, recorded from a run
/// where the capture worked, is bad input: the error names the line where
/// the capture failed, and a note says why that can happen and that
/// `--keep-going` replays past it, of "the injected failure" for one and
/// "the injected failures" for two. The same log failing on its own gets the
/// error without the note, and the summary of `--keep-going` lists the
/// replay and the `graph_destroy` with the reason.
#[test]
fn a_replay_of_a_graph_whose_capture_an_injection_failed_names_the_capture_and_suggests_keep_going()
{
    let dir = Scratch::new();
    let capture = [
        r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#,
        r#"{"op":"capture_begin","stream":0}"#,
        r#"{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":"ok"}"#,
        r#"{"op":"capture_end","stream":0,"graph":7}"#,
        r#"{"op":"replay","graph":7,"stream":0,"outcome":"ok"}"#,
        r#"{"op":"graph_destroy","graph":7}"#,
        r#"{"op":"free","memory":1}"#,
    ];
    let log = log_of(&dir, "graph.jsonl", &capture);
    let log = log.to_str().unwrap();
    ran_ok(&["replay", log]);

    let out = taintworld(&["replay", "--fail-launch", "0", log]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "error: line 5: graph 7 is not a live graph (its capture failed at line 4, \
         with failure 1, and made no graph)\n\
         note: --fail-launch: the injected failure can make a later line bad input \
         (a replay of a graph whose capture it failed, which made no graph); \
         --keep-going lists such lines and replays the rest\n"
    );

    // Two injections that took effect, one before the capture, are "the
    // injected failures".
    let fill = r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":"ok"}"#;
    let mut filled = capture.to_vec();
    filled.insert(1, fill);
    let two = log_of(&dir, "fill_then_graph.jsonl", &filled);
    let two = two.to_str().unwrap();
    let out = taintworld(&["replay", "--fail-launch", "0", "--fail-launch", "1", two]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: line 6: graph 7 is not a live graph (its capture failed at line 5, \
         with failure 2, and made no graph)\n\
         note: --fail-launch: the injected failures can make a later line bad input \
         (a replay of a graph whose capture they failed, which made no graph); \
         --keep-going lists such lines and replays the rest\n"
    );

    let text = summary_of_with(&["--fail-launch", "0", "--keep-going"], Path::new(log));
    assert!(text.contains("\n1 capture failed, at line 4\n"), "{text}");
    assert!(
        text.contains(
            "2 lines rejected:\n    \
             line 5: graph 7 is not a live graph (its capture failed at line 4, with failure 1, and made no graph)\n    \
             line 6: graph 7 is not a live graph (its capture failed at line 4, with failure 1, and made no graph)\n"
        ),
        "{text}"
    );

    // The launch failing in the log itself: the same error, and no note,
    // since nothing was injected.
    let failed = capture[2].replace(
        r#""outcome":"ok""#,
        r#""outcome":{"failed":{"kind":"launch","message":"m"}}"#,
    );
    let mut lines = capture.to_vec();
    lines[2] = &failed;
    let log = log_of(&dir, "failed_in_the_log.jsonl", &lines);
    let out = taintworld(&["replay", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "error: line 5: graph 7 is not a live graph (its capture failed at line 4, \
         with failure 1, and made no graph)\n"
    );
}

/// The `--fail-launch` note blames the injection only when one took effect
/// before the bad line: not for a launch number the replay never reached,
/// nor for one that was skipped anyway (its failure changed nothing).
#[test]
fn the_fail_launch_note_is_given_only_when_an_injection_took_effect_before_the_bad_line() {
    let dir = Scratch::new();
    let lines = [
        r#"{"op":"alloc","stream":0,"memory":1,"size":16}"#,
        r#"{"op":"alloc","stream":0,"memory":2,"size":16}"#,
        r#"{"op":"launch","kernel":"fill","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":{"failed":{"kind":"launch","message":"m"}}}"#,
        r#"{"op":"launch","kernel":"copy","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read"},{"stream":0,"memory":2,"access":"write"}],"outcome":"ok"}"#,
        r#"{"op":"launch","kernel":"bad","stream":0,"bindings":[{"stream":0,"memory":1,"range":[0,99],"access":"read"}],"outcome":"ok"}"#,
        r#"{"op":"launch","kernel":"late","stream":0,"bindings":[{"stream":0,"memory":2,"access":"write"}],"outcome":"ok"}"#,
    ];
    let log = log_of(&dir, "bad_range.jsonl", &lines);
    let log = log.to_str().unwrap();
    let error =
        "error: line 5: range [0, 99) runs past the end of memory 1 (size 16) in bindings[0]\n";
    let stderr = |flags: &[&str]| {
        let mut args = vec!["replay"];
        args.extend_from_slice(flags);
        args.push(log);
        let out = taintworld(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    // Launch 2 is the bad line's, which takes no number; 50 is past the log;
    // launch 1 reads memory 1, which launch 0 tainted, so it is skipped
    // whatever its outcome.
    for flags in [
        &[][..],
        &["--fail-launch", "2"],
        &["--fail-launch", "50"],
        &["--fail-launch", "1"],
    ] {
        assert_eq!(stderr(flags), error, "{flags:?}");
    }
    // Launch 0 failed in the log already; injected, it fails again, which
    // took effect: the note is given.
    let noted = stderr(&["--fail-launch", "0"]);
    assert!(noted.starts_with(error), "{noted}");
    assert!(
        noted.contains("note: --fail-launch: the injected failure can"),
        "{noted}"
    );
}

/// A gzip log cut short is bad input whole (the lines before the cut were
/// replayed, but there is no report); the error says it stops early and
/// a note says how to replay what it holds. From standard input there is
/// no file name to give, and no note.
#[test]
fn a_gzip_log_cut_short_says_so_and_how_to_replay_the_lines_it_holds() {
    use std::io::Write;
    let dir = Scratch::new();
    let plain = std::fs::read(examples().join("skip_chain_three_kernels.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(&plain).unwrap();
    let zipped = gz.finish().unwrap();
    let cut = dir.path("cut.jsonl.gz");
    std::fs::write(&cut, &zipped[..zipped.len() / 2]).unwrap();
    let cut = cut.to_str().unwrap();
    let out = taintworld(&["replay", "--keep-going", cut]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the gzip data stops early (the file is cut short, or empty)\n"),
        "{err}"
    );
    assert!(
        err.ends_with(&format!(
            "note: a gzip log cut short is bad input whole; to replay the lines it holds, \
             decompress them and replay those: zcat {cut} | taintworld replay - --keep-going\n"
        )),
        "{err}"
    );
    #[cfg(unix)]
    {
        let out = replayed_from_stdin(&zipped[..zipped.len() / 2]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("the gzip data stops early"), "{err}");
        assert!(!err.contains("note:"), "{err}");
    }
}

/// A gzip log empty, or cut short before its first line ends, holds no
/// line to replay: the error says it stops early before its first line,
/// and no note offers to replay the lines it holds.
#[test]
fn a_gzip_log_cut_before_its_first_line_gets_no_note_on_replaying_its_lines() {
    use std::io::Write;
    let dir = Scratch::new();
    let empty = dir.path("empty.jsonl.gz");
    std::fs::write(&empty, b"").unwrap();
    let empty = empty.to_str().unwrap();
    let out = taintworld(&["replay", empty]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "error: cannot read {empty} before its first line: unexpected end of file: \
             the gzip data stops early (the file is cut short, or empty)\n"
        )
    );
    let plain = std::fs::read(examples().join("skip_chain_three_kernels.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(&plain).unwrap();
    let zipped = gz.finish().unwrap();
    let first_line = plain.iter().position(|&b| b == b'\n').unwrap();
    // Stored blocks keep the bytes as they are, after a 10-byte gzip
    // header and a 5-byte block header: cut halfway into the first line.
    let cut = dir.path("cut_in_line_1.jsonl.gz");
    std::fs::write(&cut, &zipped[..15 + first_line / 2]).unwrap();
    let cut = cut.to_str().unwrap();
    let out = taintworld(&["replay", "--keep-going", cut]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(&format!("error: cannot read {cut} before its first line: ")),
        "{err}"
    );
    assert!(err.contains("the gzip data stops early"), "{err}");
    assert!(!err.contains("note:"), "{err}");
}

/// `gen -o /dev/stdout | head -c 20` ends as `gen | head -c 20` does: the
/// reader going away from a path written in place is no error.
#[cfg(target_os = "linux")]
#[test]
fn gen_into_a_pipe_by_its_path_whose_reader_goes_away_exits_0_as_into_stdout() {
    let (start, out) = head_c::<20>(&[
        "gen",
        "--seed",
        "3",
        "--launches",
        "20000",
        "-o",
        "/dev/stdout",
    ]);
    assert!(
        start.starts_with(b"{"),
        "{}",
        String::from_utf8_lossy(&start)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
}
