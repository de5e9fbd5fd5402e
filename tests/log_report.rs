//! The replay report's byte layout (SPEC §8, Appendix A "Report shapes and
//! key order"): each shape against the literal text it must be.
//!
//! The report is the `log` feature's: built without it
//! (`cargo test --no-default-features`) the file holds no tests.

#![cfg(feature = "log")]

use taintworld::log::{
    CaptureEntry, CaptureResult, LaunchResult, ProfileEntry, ProfileResult, ReadEntry, ReadResult,
    Rejected, Report, SyncEntry, SyncResult, TaintReport,
};
use taintworld::{ChainHop, ErrorInfo};

fn json(report: &Report) -> String {
    let mut out = Vec::new();
    report.write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn error() -> ErrorInfo {
    ErrorInfo {
        kind: "compile".to_owned(),
        kernel: "fill".to_owned(),
        message: "ptxas: élan".to_owned(),
    }
}

const ERROR: &str = r#"{"kind":"compile","kernel":"fill","message":"ptxas: élan"}"#;

fn taint() -> TaintReport {
    TaintReport {
        failure: 1,
        error: error(),
        occurrences: 2,
        chain: vec![
            ChainHop {
                launch: 4,
                kernel: "gelu".to_owned(),
                needed: 7,
            },
            ChainHop {
                launch: 2,
                kernel: "matmul".to_owned(),
                needed: 3,
            },
        ],
        truncated: false,
    }
}

/// The report with only `field` changed, as the text between the keys
/// around it.
fn with(change: impl FnOnce(&mut Report)) -> String {
    let mut report = Report::default();
    change(&mut report);
    json(&report)
}

#[test]
fn an_empty_report_has_every_key_and_every_list_in_order() {
    assert_eq!(
        with(|_| {}),
        concat!(
            r#"{"format":"taintworld-report","version":1,"events":0,"launches":0,"#,
            r#""verdicts":{"ran":0,"failed":0,"skipped":0,"dry_run":0},"#,
            r#""launch_results":[],"reads":[],"captures":[],"profiles":[],"syncs":[],"#,
            r#""unresolved_bindings":0,"failures_minted":0,"#,
            r#""final":{"live_failures":0,"tainted_allocations":0,"tainted_bytes":0,"claims":0},"#,
            r#""rejected":[]}"#,
            "\n"
        )
    );
}

#[test]
fn counts_go_where_section_eight_puts_them() {
    let text = with(|r| {
        r.events = 10;
        r.launches = 9;
        r.verdicts.ran = 1;
        r.verdicts.failed = 2;
        r.verdicts.skipped = 3;
        r.verdicts.dry_run = 4;
        r.unresolved_bindings = 5;
        r.failures_minted = 6;
        r.final_state.live_failures = 7;
        r.final_state.tainted_allocations = 8;
        r.final_state.tainted_bytes = 18446744073709551615;
        r.final_state.claims = 11;
        r.rejected = vec![Rejected {
            line: 12,
            error: "unknown op \"x\"".to_owned(),
        }];
    });
    assert_eq!(
        text,
        concat!(
            r#"{"format":"taintworld-report","version":1,"events":10,"launches":9,"#,
            r#""verdicts":{"ran":1,"failed":2,"skipped":3,"dry_run":4},"#,
            r#""launch_results":[],"reads":[],"captures":[],"profiles":[],"syncs":[],"#,
            r#""unresolved_bindings":5,"failures_minted":6,"#,
            r#""final":{"live_failures":7,"tainted_allocations":8,"tainted_bytes":18446744073709551615,"claims":11},"#,
            r#""rejected":[{"line":12,"error":"unknown op \"x\""}]}"#,
            "\n"
        )
    );
}

fn launch_results(entries: Vec<LaunchResult>) -> String {
    let text = with(|r| r.launch_results = entries);
    let start = text.find("\"launch_results\":").unwrap() + "\"launch_results\":".len();
    let end = text.find(",\"reads\":").unwrap();
    text[start..end].to_owned()
}

#[test]
fn launch_results_have_one_shape_per_verdict() {
    assert_eq!(
        launch_results(vec![
            LaunchResult::DryRun { launch: 0, line: 3 },
            LaunchResult::Failed {
                launch: 1,
                line: 4,
                failure: 1,
            },
            LaunchResult::Skipped {
                launch: 2,
                line: 5,
                failure: 1,
                needed: 7,
            },
            LaunchResult::ReplayFailed {
                graph: 9,
                line: 6,
                failure: 2,
            },
            LaunchResult::HostWriteFailed {
                line: 7,
                failure: 3,
            },
            LaunchResult::ReplaySkipped {
                graph: 9,
                line: 8,
                failure: 1,
                needed: 4,
                launches: vec![0, 2],
            },
        ]),
        concat!(
            "[",
            r#"{"launch":0,"line":3,"verdict":"dry_run"},"#,
            r#"{"launch":1,"line":4,"verdict":"failed","failure":1},"#,
            r#"{"launch":2,"line":5,"verdict":"skipped","failure":1,"needed":7},"#,
            r#"{"replay":true,"graph":9,"line":6,"verdict":"failed","failure":2},"#,
            r#"{"host_write":true,"line":7,"verdict":"failed","failure":3},"#,
            r#"{"replay":true,"graph":9,"line":8,"verdict":"skipped","failure":1,"needed":4,"launches":[0,2]}"#,
            "]"
        )
    );
}

#[test]
fn reads_have_one_shape_per_result() {
    let text = with(|r| {
        r.reads = vec![
            ReadEntry {
                line: 1,
                memory: 7,
                result: ReadResult::Clean,
            },
            ReadEntry {
                line: 2,
                memory: 9,
                result: ReadResult::Tainted(taint()),
            },
            ReadEntry {
                line: 3,
                memory: 3,
                result: ReadResult::Unresolved,
            },
            ReadEntry {
                line: 4,
                memory: 5,
                result: ReadResult::DeviceFault(ErrorInfo {
                    kind: "device".to_owned(),
                    kernel: "device".to_owned(),
                    message: "illegal address".to_owned(),
                }),
            },
            ReadEntry {
                line: 5,
                memory: 9,
                result: ReadResult::Tainted(TaintReport {
                    chain: vec![],
                    truncated: true,
                    ..taint()
                }),
            },
        ];
    });
    let expected = format!(
        concat!(
            r#""reads":["#,
            r#"{{"line":1,"memory":7,"result":"clean"}},"#,
            r#"{{"line":2,"memory":9,"result":"tainted","failure":1,"error":{error},"occurrences":2,"#,
            r#""chain":[{{"launch":4,"kernel":"gelu","needed":7}},{{"launch":2,"kernel":"matmul","needed":3}}],"truncated":false}},"#,
            r#"{{"line":3,"memory":3,"result":"unresolved"}},"#,
            r#"{{"line":4,"memory":5,"result":"device_fault","error":{{"kind":"device","kernel":"device","message":"illegal address"}}}},"#,
            r#"{{"line":5,"memory":9,"result":"tainted","failure":1,"error":{error},"occurrences":2,"chain":[],"truncated":true}}"#,
            r#"],"captures":"#
        ),
        error = ERROR
    );
    assert!(text.contains(&expected), "{text}\n{expected}");
}

#[test]
fn captures_are_ok_or_carry_the_report_of_a_tainted_read() {
    let text = with(|r| {
        r.captures = vec![
            CaptureEntry {
                line: 10,
                graph: 1,
                result: CaptureResult::Ok,
            },
            CaptureEntry {
                line: 11,
                graph: 2,
                result: CaptureResult::Failed(TaintReport {
                    chain: vec![],
                    ..taint()
                }),
            },
        ];
    });
    let expected = format!(
        concat!(
            r#""captures":["#,
            r#"{{"line":10,"graph":1,"result":"ok"}},"#,
            r#"{{"line":11,"graph":2,"result":"capture_failed","failure":1,"error":{error},"occurrences":2,"chain":[],"truncated":false}}"#,
            r#"],"profiles":"#
        ),
        error = ERROR
    );
    assert!(text.contains(&expected), "{text}\n{expected}");
}

#[test]
fn profiles_are_valid_or_carry_their_first_failure() {
    let text = with(|r| {
        r.profiles = vec![
            ProfileEntry {
                line: 3,
                profile: 1,
                result: ProfileResult::Valid,
            },
            ProfileEntry {
                line: 8,
                profile: 2,
                result: ProfileResult::Invalid {
                    failure: 4,
                    error: error(),
                },
            },
        ];
    });
    let expected = format!(
        concat!(
            r#""profiles":["#,
            r#"{{"line":3,"profile":1,"result":"valid"}},"#,
            r#"{{"line":8,"profile":2,"result":"invalid","failure":4,"error":{error}}}"#,
            r#"],"syncs":"#
        ),
        error = ERROR
    );
    assert!(text.contains(&expected), "{text}\n{expected}");
}

#[test]
fn syncs_are_ok_or_carry_the_device_fault() {
    let text = with(|r| {
        r.syncs = vec![
            SyncEntry {
                line: 2,
                result: SyncResult::Ok,
            },
            SyncEntry {
                line: 9,
                result: SyncResult::DeviceFault(error()),
            },
        ];
    });
    let expected = format!(
        concat!(
            r#""syncs":["#,
            r#"{{"line":2,"result":"ok"}},"#,
            r#"{{"line":9,"result":"device_fault","error":{error}}}"#,
            r#"],"unresolved_bindings":"#
        ),
        error = ERROR
    );
    assert!(text.contains(&expected), "{text}\n{expected}");
}

/// The report of one rejected line whose error text is `error`: a string
/// the report writes as it is given.
fn with_rejected(error: &str) -> String {
    with(|r| {
        r.rejected = vec![Rejected {
            line: 1,
            error: error.to_owned(),
        }];
    })
}

#[test]
fn the_report_is_one_line_of_utf8_with_non_ascii_unescaped() {
    let text = with_rejected("kernel \"核\"\nnext");
    assert_eq!(text.matches('\n').count(), 1);
    assert!(text.ends_with("}\n"));
    assert!(
        text.contains(r#"{"line":1,"error":"kernel \"核\"\nnext"}"#),
        "{text}"
    );
}

#[test]
fn the_report_escapes_only_quotes_backslashes_and_control_characters_as_log_mod_says() {
    let text = with_rejected("q\" b\\ \u{8}\u{c}\n\r\t \u{1}\u{1f} / \u{7f} \u{2028} é");
    let expected = "\"error\":\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f / \u{7f} \u{2028} é\"";
    assert!(text.contains(expected), "{text}\n{expected}");
}
