//! `World::replay_checked`, the replay for a graph that reads its own state:
//! each rule of its doc comment, worked out by hand. The per-byte model
//! holds it to the same rules over random captures (`world_matches_model`),
//! and `tests/real_logs.rs` on a recorded decoding pass.

mod common;

use common::{FAIL, claims, go, named, reads, writes};
use taintworld::{Access, Binding, Config, Outcome, ReadResult, World};

/// A world with a cache (memory 1), a token (memory 2) and an output
/// (memory 3) on stream 0, and graph 7 of two launches: `append` reads
/// the token and appends to the cache, bound whole read-write (launch 0),
/// and `attend` reads the cache and writes the output and the next token
/// (launch 1).
fn decoder(config: Config) -> World {
    let mut w = World::new(config).unwrap();
    for memory in 1..=3 {
        w.alloc(0, memory, 64).unwrap();
    }
    let append = [reads(0, 2), Binding::whole(0, 1, Access::ReadWrite)];
    let attend = [reads(0, 1), writes(0, 3), writes(0, 2)];
    w.capture_begin(0).unwrap();
    assert_eq!(go(&mut w, "append", &append, Outcome::Ok).0, "ran");
    assert_eq!(go(&mut w, "attend", &attend, Outcome::Ok).0, "ran");
    w.capture_end(0, 7).unwrap();
    w
}

#[test]
fn a_checked_replay_after_a_failed_one_skips_the_launches_that_read_what_it_left() {
    let mut w = decoder(Config::default());
    let failed = named(w.replay_checked(7, FAIL).unwrap());
    assert_eq!(failed.0, "failed");
    // The next replay's first launch reads the token the failed one left:
    // both launches are skipped, the first for the token, the second for
    // the cache the first would have appended to.
    assert_eq!(
        named(w.replay_checked(7, Outcome::Ok).unwrap()),
        ("skipped", failed.1, 2)
    );
    assert_eq!(claims(&w, 1), [(0, 64, failed.1, Some(0))]);
    assert_eq!(claims(&w, 2), [(0, 64, failed.1, Some(1))]);
    assert_eq!(claims(&w, 3), [(0, 64, failed.1, Some(1))]);
    let ReadResult::Tainted(report) = w.read(&reads(0, 3)).unwrap() else {
        panic!("the output was made from garbage");
    };
    assert_eq!(report.error.kernel, "graph:7");
    let hops: Vec<(u64, &str, u64)> = report
        .chain
        .iter()
        .map(|h| (h.launch, h.kernel.as_str(), h.needed))
        .collect();
    assert_eq!(hops, [(1, "graph:7/attend", 1), (0, "graph:7/append", 2)]);
    w.check_invariants().unwrap();
}

#[test]
fn each_captured_launch_a_checked_replay_settles_is_handed_over_with_its_number_and_verdict() {
    let mut w = decoder(Config::default());
    let mut seen = Vec::new();
    w.replay_checked_each(7, Outcome::Ok, |r| seen.push((r.launch, named(r.verdict))))
        .unwrap();
    assert_eq!(seen, [(0, ("ran", 0, 0)), (1, ("ran", 0, 0))]);

    // A failed replay settles none of its launches.
    seen.clear();
    let failed = named(
        w.replay_checked_each(7, FAIL, |r| seen.push((r.launch, named(r.verdict))))
            .unwrap(),
    );
    assert!(seen.is_empty());
    let skipped = |needed| ("skipped", failed.1, needed);
    w.replay_checked_each(7, Outcome::Ok, |r| seen.push((r.launch, named(r.verdict))))
        .unwrap();
    assert_eq!(seen, [(0, skipped(2)), (1, skipped(1))]);
}

#[test]
fn a_plain_replay_after_a_failed_one_releases_what_a_checked_one_keeps_tainted() {
    let mut plain = decoder(Config::default());
    let mut checked = plain.clone();
    plain.replay(7, FAIL).unwrap();
    checked.replay_checked(7, FAIL).unwrap();
    // A failed checked replay is a plain failed replay.
    assert_eq!(format!("{checked:?}"), format!("{plain:?}"));
    assert_eq!(named(plain.replay(7, Outcome::Ok).unwrap()).0, "ran");
    assert_eq!(
        named(checked.replay_checked(7, Outcome::Ok).unwrap()).0,
        "skipped"
    );
    assert_eq!(plain.read(&reads(0, 3)).unwrap(), ReadResult::Clean);
    assert!(matches!(
        checked.read(&reads(0, 3)).unwrap(),
        ReadResult::Tainted(_)
    ));
}

#[test]
fn a_checked_replay_over_clean_state_runs_and_releases_as_a_plain_replay_does() {
    let mut w = decoder(Config::default());
    go(&mut w, "spoil", &[writes(0, 3)], FAIL);
    let mut plain = w.clone();
    assert_eq!(named(w.replay_checked(7, Outcome::Ok).unwrap()).0, "ran");
    assert_eq!(named(plain.replay(7, Outcome::Ok).unwrap()).0, "ran");
    assert_eq!(format!("{w:?}"), format!("{plain:?}"));
    assert_eq!(w.stats().tainted_bytes, 0);
}

#[test]
fn a_checked_replay_takes_no_launch_number_and_no_capture_window_sees_it() {
    let mut w = decoder(Config::default());
    w.replay_checked(7, FAIL).unwrap();
    w.capture_begin(0).unwrap();
    let before = w.stats().launches;
    assert_eq!(
        named(w.replay_checked(7, Outcome::Ok).unwrap()).0,
        "skipped"
    );
    assert_eq!(w.stats().launches, before);
    // The window saw neither the skips nor the replay: it ends good, with
    // a graph that holds nothing.
    assert_eq!(w.capture_end(0, 8).unwrap(), taintworld::CaptureResult::Ok);
    let carried = |w: &World| -> Vec<u64> { (1..=3).map(|m| claims(w, m)[0].2).collect() };
    let before = carried(&w);
    let (verdict, graph_8s, _) = named(w.replay(8, FAIL).unwrap());
    assert_eq!(verdict, "failed");
    // Graph 8 wrote nothing: each buffer still carries what graph 7's
    // failed replay left, and none the failure of graph 8's.
    assert!(!before.contains(&graph_8s));
    assert_eq!(carried(&w), before, "graph 8 wrote nothing");
}

#[test]
fn an_open_profile_sees_a_checked_replays_skips() {
    let mut w = decoder(Config::default());
    w.replay_checked(7, FAIL).unwrap();
    w.profile_begin(1).unwrap();
    w.replay_checked(7, Outcome::Ok).unwrap();
    assert!(matches!(
        w.profile_end(1).unwrap(),
        taintworld::ProfileResult::Invalid { .. }
    ));
}

#[test]
fn a_checked_replay_resolves_a_freed_id_again_and_when_strict_rejects_it_changing_nothing() {
    let strict = Config {
        strict: true,
        ..Config::default()
    };
    let mut w = decoder(strict);
    w.replay_checked(7, FAIL).unwrap();
    w.free(3).unwrap();
    let before = format!("{w:?}");
    assert!(w.replay_checked(7, Outcome::Ok).is_err());
    assert_eq!(format!("{w:?}"), before);

    // Not strict, the freed output is counted unresolved (once a replay,
    // written by `attend`), and the launches are skipped as before.
    let mut w = decoder(Config::default());
    w.replay_checked(7, FAIL).unwrap();
    w.free(3).unwrap();
    let failure = w.failures().next().expect("the replay's failure").id.get();
    assert_eq!(
        named(w.replay_checked(7, Outcome::Ok).unwrap()),
        ("skipped", failure, 2)
    );
    assert_eq!(w.stats().unresolved_bindings, 1);
    // A new allocation of the id is the one a replay then writes; one too
    // small for the recorded range is bad input.
    w.alloc(0, 3, 16).unwrap();
    assert!(w.replay_checked(7, Outcome::Ok).is_err());
    w.free(3).unwrap();
    w.alloc(0, 3, 64).unwrap();
    w.replay_checked(7, Outcome::Ok).unwrap();
    assert_eq!(claims(&w, 3), [(0, 64, failure, Some(1))]);
}

#[test]
fn an_unknown_graph_is_bad_input_for_a_checked_replay_as_for_any() {
    let mut w = decoder(Config::default());
    assert!(w.replay_checked(8, Outcome::Ok).is_err());
    assert!(w.replay_checked(8, FAIL).is_err());
    assert!(w.replay_checked(7, Outcome::DryRun).is_err());
}
