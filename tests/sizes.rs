//! What each entity costs in memory, pinned so a change that grows one is
//! seen. The crate docs (`lib.rs`, "Costs") state the same figures.

use std::mem::size_of;

#[path = "common/counting.rs"]
mod counting;

use counting::live_bytes as live;
use taintworld::components::allocation::Footprint;
use taintworld::{
    Access, Allocation, Binding, Claim, ClaimSet, Config, Failure, Launch, Outcome, Resolved,
    SkipRecord, World,
};

#[test]
#[cfg_attr(
    not(target_pointer_width = "64"),
    ignore = "pins a 64-bit target's sizes: a 32-bit target lays these types out smaller"
)]
fn each_component_has_the_size_the_docs_state() {
    assert_eq!(size_of::<Footprint>(), 16, "the hot part of an allocation");
    assert_eq!(size_of::<Allocation>(), 80, "an allocation's row");
    assert_eq!(size_of::<Claim>(), 32);
    assert_eq!(
        size_of::<ClaimSet>(),
        48,
        "one claim inline, and the count of a large set"
    );
    assert_eq!(size_of::<SkipRecord>(), 56);
    assert_eq!(size_of::<Failure>(), 120);
    assert_eq!(size_of::<Resolved>(), 32, "a resolved row");
    assert_eq!(size_of::<Binding>(), 64);
}

/// What the docs state is for the real thresholds: a build with small
/// claim sets keeps 4,000 claims in a tree.
#[test]
#[cfg_attr(
    taintworld_small_claim_sets,
    ignore = "measures the real thresholds, not a build with small claim sets"
)]
fn a_clean_allocation_a_claim_and_a_failure_cost_what_the_docs_state() {
    const N: u64 = 100_000;
    let mut world = World::default();
    let before = live();
    for memory in 0..N {
        world.alloc(0, memory, 4096).unwrap();
    }
    let per_allocation = (live() - before) as f64 / N as f64;
    println!("bytes per clean allocation: {per_allocation:.1}");
    assert!(
        (100.0..=200.0).contains(&per_allocation),
        "{per_allocation}"
    );

    // Claims: every other 16-byte range of large allocations, one failure,
    // so each is its own claim: 4,000 an allocation (the sorted vector),
    // then all in one (the tree past TREE_ABOVE claims).
    for (per_allocation, low, high) in [(4_000, 32.0, 64.0), (N, 48.0, 96.0)] {
        let mut world = World::default();
        let allocations: Vec<_> = (0..N / per_allocation)
            .map(|m| world.alloc(0, m, 32 * per_allocation).unwrap())
            .collect();
        let before = live();
        for (i, &key) in allocations.iter().enumerate() {
            for j in 0..per_allocation {
                let b = Binding::range(0, key, 32 * j, 32 * j + 16, Access::Write);
                fail(&mut world, b, "k", "m").unwrap_or_else(|e| panic!("allocation {i}: {e}"));
            }
        }
        assert_eq!(world.stats().claims, N);
        let per_claim = (live() - before) as f64 / N as f64;
        println!("bytes per claim, {per_allocation} an allocation: {per_claim:.1}");
        assert!((low..=high).contains(&per_claim), "{per_claim}");
    }

    // Failures: N distinct failures, each carried by its own allocation.
    let mut world = World::default();
    for memory in 0..N {
        world.alloc(0, memory, 64).unwrap();
    }
    let messages: Vec<String> = (0..N).map(|i| format!("{i:08}")).collect();
    let before = live();
    for (memory, message) in messages.iter().enumerate() {
        let b = Binding::whole(0, memory as u64, Access::Write);
        fail(&mut world, b, "compile", message).unwrap();
    }
    assert_eq!(world.stats().live_failures, N);
    let per_failure = (live() - before) as f64 / N as f64;
    println!("bytes per failure (with its claim and strings): {per_failure:.1}");
    assert!((128.0..=320.0).contains(&per_failure), "{per_failure}");
}

/// A stream slot costs what `components::stream::Streams` and
/// `docs/reliability.md` (*Stream slots*) state: about 54 bytes on a
/// 64-bit target at 100,000 slots (43 on i686), growth slack included.
#[test]
fn a_stream_slot_costs_what_the_docs_state() {
    const N: u64 = 100_000;
    let mut world = World::new(Config {
        max_streams: u64::MAX,
        ..Config::default()
    })
    .unwrap();
    let before = live();
    for stream in 0..N {
        world.initialize_stream(stream).unwrap();
    }
    let per_slot = (live() - before) as f64 / N as f64;
    println!("bytes per stream slot: {per_slot:.1}");
    assert!((40.0..=64.0).contains(&per_slot), "{per_slot}");
}

/// A captured graph holds what the crate docs' Costs table and
/// `docs/reliability.md` (*Graphs*) state, and gives it all back at
/// `graph_destroy`: for a launch that writes one allocation, its recorded
/// binding (96 bytes), its merged write (40), the launch (40) and its
/// name (`graph:<id>/<kernel>`, in the room `format!` gave it: its length
/// to twice that).
#[test]
#[cfg_attr(
    not(target_pointer_width = "64"),
    ignore = "pins a 64-bit target's sizes: a 32-bit target lays these types out smaller"
)]
fn a_graph_holds_its_recorded_bindings_merged_writes_and_launches_and_nothing_more() {
    const N: u64 = 1_000;
    let mut world = World::default();
    for memory in 0..N {
        world.alloc(0, memory, 4096).unwrap();
    }
    world.capture_begin(0).unwrap();
    for memory in 0..N {
        world
            .launch(&Launch {
                kernel: "fill",
                stream: 0.into(),
                bindings: &[Binding::whole(0, memory, Access::Write)],
                outcome: Outcome::Ok,
            })
            .unwrap();
    }
    world.capture_end(0, 7).unwrap();
    let before = live();
    world.graph_destroy(7).unwrap();
    let per_launch = (before - live()) as f64 / N as f64;
    println!("bytes a graph holds per launch writing one allocation: {per_launch:.1}");
    let name = "graph:7/fill".len() as f64;
    let kept = 96.0 + 40.0 + 40.0;
    assert!(
        (kept + name..=kept + 2.0 * name).contains(&per_launch),
        "{per_launch}"
    );
}

/// The log reader's line buffer keeps at most 1 MiB and a byte of a line,
/// and its room, grown by doubling, stops there too (`docs/reliability.md`,
/// *The reader*; a `Vec` left to itself doubles to 2 MiB for the last
/// byte): after a 3 MiB line the reader holds no more than that and its
/// `BufReader`'s buffer, and the next line adds nothing. Read in 8 KiB
/// chunks and in 512 KiB ones: a chunk that big finds the room past half
/// the limit and not enough, which the reader must grow itself rather
/// than leave to the `Vec`, whose doubling would pass the limit.
#[cfg(feature = "log")]
#[test]
fn the_log_readers_line_buffer_stays_within_one_mib_and_a_byte() {
    use std::io::BufReader;
    use taintworld::log::LogReader;

    // A short comment first, so that the long line comes in chunks that
    // are not the `BufReader`'s whole 8 KiB and the buffer's room is no
    // power of two: chunks that fill it exactly would reach 1 MiB and a
    // byte by any growth that stops there.
    let mut text = vec![b'#'; 99];
    text.push(b'\n');
    text.extend(std::iter::repeat_n(b'x', 3 << 20));
    text.extend_from_slice(b"\n{\"op\":\"alloc\",\"stream\":0,\"memory\":1,\"size\":64}\n");
    for ahead in [8 << 10, 512 << 10] {
        let before = live();
        let mut reader = LogReader::new(BufReader::with_capacity(ahead, &text[..]));
        assert!(reader.next().unwrap().unwrap().event.is_err(), "over-long");
        let held = live() - before;
        let most = isize::try_from((1 << 20) + 1 + ahead + 1024).expect("a few MiB");
        assert!(held <= most, "{held} read {ahead} bytes ahead");
        assert!(reader.next().unwrap().unwrap().event.is_ok());
        assert_eq!(live() - before, held, "the next line grew the buffer");
        // Printed last: the test harness's captured output is itself heap.
        println!("bytes the reader holds after a 3 MiB line, {ahead} read ahead: {held}");
    }
}

/// A launch too wide for a line, refused by the log writer, leaves the
/// writer no more room than the longest line it may write (1 MiB and a
/// byte): the line is built whole to be measured, and an 8 MiB kernel name
/// would otherwise stay held by the writer for good.
#[cfg(feature = "log")]
#[test]
fn a_refused_wide_line_leaves_the_writer_at_most_a_lines_room() {
    use taintworld::log::{Event, LogWriter, MAX_LINE_BYTES, Outcome};

    let wide = || Event::Launch {
        kernel: "k".repeat(8 << 20),
        stream: 0,
        bindings: Vec::new(),
        outcome: Outcome::Ok,
    };
    let before = live();
    let mut log = LogWriter::new(Vec::new());
    let refused = log.write_event(&wide()).expect_err("over the line limit");
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    drop(refused);
    let held = live() - before;
    let most = isize::try_from(MAX_LINE_BYTES + 1).expect("a mebibyte");
    assert!(held <= most, "{held}");
    log.write_event(&Event::Sync).expect("a short line after");
    assert_eq!(log.into_inner(), b"{\"op\":\"sync\"}\n");
}

/// The room a refused wide line leaves the writer is the longest line it
/// may write, newline included, and not a byte less: writing such a line
/// next allocates nothing. A byte less, and that line's last byte would
/// double the buffer to 2 MiB, the very room the refusal gave back.
#[cfg(feature = "log")]
#[test]
fn after_a_refused_wide_line_the_longest_line_the_writer_may_write_fits_the_room_it_kept() {
    use taintworld::log::{Event, LogWriter, MAX_LINE_BYTES, Outcome};

    let launch = |kernel: usize| Event::Launch {
        kernel: "k".repeat(kernel),
        stream: 0,
        bindings: Vec::new(),
        outcome: Outcome::Ok,
    };
    let frame = r#"{"op":"launch","kernel":"","stream":0,"bindings":[],"outcome":"ok"}"#.len();
    let longest = launch(MAX_LINE_BYTES - frame);
    let mut log = LogWriter::new(std::io::sink());
    log.write_event(&launch(8 << 20))
        .expect_err("over the line limit");
    let grown = counting::allocations_in(|| {
        log.write_event(&longest)
            .expect("a line of exactly the limit");
    });
    assert_eq!(grown, 0, "the longest line grew the writer's buffer");
}

/// What parsing a log line allocates (`log::parse`'s module docs): a
/// well-formed launch line only what its event keeps — the kernel's name
/// and the bindings' vector — a string with an escape one more, an
/// allocation none.
#[cfg(feature = "log")]
#[test]
fn a_log_line_allocates_what_its_event_keeps() {
    use std::io::BufReader;
    use taintworld::log::LogReader;

    for (line, expected) in [
        (
            r#"{"op":"launch","kernel":"matmul","stream":0,"bindings":[{"stream":0,"memory":1,"access":"read"},{"stream":0,"memory":2,"range":[0,64],"access":"read"},{"stream":0,"memory":3,"access":"write"}],"outcome":"ok"}"#,
            2,
        ),
        (
            r#"{"op":"launch","kernel":"mat\u006dul","stream":0,"bindings":[{"stream":0,"memory":1,"access":"write"}],"outcome":"ok"}"#,
            3,
        ),
        (r#"{"op":"alloc","stream":0,"memory":1,"size":64}"#, 0),
        (r#"{"op":"free","memory":1}"#, 0),
    ] {
        // The first line warms the reader's buffer; the second is counted.
        let text = format!("{line}\n{line}\n");
        let mut reader = LogReader::new(BufReader::new(text.as_bytes()));
        reader.next().unwrap().unwrap().event.unwrap();
        let mut event = None;
        let n = counting::allocations_in(|| event = Some(reader.next().unwrap().unwrap().event));
        event.unwrap().unwrap();
        assert_eq!(n, expected, "{line}");
    }
}

/// A launch of `fill` writing `binding` that fails with `kind` and
/// `message`.
fn fail(
    world: &mut World,
    binding: Binding,
    kind: &str,
    message: &str,
) -> Result<taintworld::LaunchResult, taintworld::Error> {
    world.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &[binding],
        outcome: Outcome::Failed { kind, message },
    })
}
