//! A batch in a world where nothing is claimed takes a short path: one
//! predicate over the whole batch when every launch ran on a regular stream
//! and binds bindings of the common shape (a key, the allocation's own slot,
//! a range inside it) or good pre-resolved rows, and a counting pass
//! otherwise. Either way the batch must give exactly what one launch at a
//! time gives (SPEC §10, invariant 5): the same results, the same counters
//! and the same state (claims, failures, skip records), and for bad input
//! anywhere, an error and a world left as it was. The
//! same launches, some of them failing, in a world where something is
//! claimed take the full path, whose first pass resolves plain bindings in
//! one loop and hands the batch to the general one at the first binding
//! that is not plain: they must agree with one launch at a time too. And a
//! batch in a world that holds a failure, where no launch fails and none
//! binds anything claimed, is answered from one look-up a binding, as each
//! of its launches alone is: it must agree as well, beside the failure and
//! with the failure on bytes the batch binds.

mod model;
mod scale;

use model::bridge::state;
use proptest::prelude::*;
use taintworld::{
    Access, Bind, Binding, Config, Launch, LaunchResult, MemoryRef, Outcome, Resolved, StreamRef,
    World,
};

/// How one binding of a generated launch names its buffer.
#[derive(Clone, Copy, Debug)]
enum Named {
    /// By key, on the allocation's own slot: the common shape.
    Plain,
    /// By key, on another stream id that folds onto the same slot.
    Folded,
    /// By memory id.
    ById,
    /// By the key of an allocation freed before the batch: unresolved.
    Stale,
}

#[derive(Clone, Debug)]
struct GenBinding {
    alloc: usize,
    named: Named,
    range: Option<(u64, u64)>,
    access: Access,
}

#[derive(Clone, Debug)]
struct GenLaunch {
    bindings: Vec<GenBinding>,
    dry_run: bool,
    special_stream: bool,
    /// Fails (only in a claimed world; a quiet world's batches all run).
    fails: bool,
}

const ALLOCS: usize = 4;
const SIZE: u64 = 64;
const MAX_STREAMS: u64 = 2;

fn gen_binding() -> impl Strategy<Value = GenBinding> {
    let named = prop_oneof![
        12 => Just(Named::Plain),
        1 => Just(Named::Folded),
        1 => Just(Named::ById),
        1 => Just(Named::Stale),
    ];
    let range = prop_oneof![
        3 => Just(None),
        12 => (0u64..=SIZE, 0u64..=SIZE).prop_map(|(a, b)| Some((a.min(b), a.max(b)))),
        // Past the end or reversed: bad input.
        1 => (0u64..=SIZE + 8, 0u64..=SIZE + 8).prop_map(|(a, b)| Some((a, b))),
    ];
    let access = prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::ReadWrite),
        Just(Access::Dead),
    ];
    (0..ALLOCS, named, range, access).prop_map(|(alloc, named, range, access)| GenBinding {
        alloc,
        named,
        range,
        access,
    })
}

fn gen_launch() -> impl Strategy<Value = GenLaunch> {
    (
        prop::collection::vec(gen_binding(), 0..5),
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.03),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(bindings, dry_run, special_stream, fails)| GenLaunch {
            bindings,
            dry_run,
            special_stream,
            fails,
        })
}

/// What a scheduler holds for the quiet world: each allocation's whole row
/// (its key with it); the whole row of an allocation freed before the batch
/// (stale); and the whole rows another world made for allocations with the
/// same keys but 8 bytes longer — rows kept from the wrong world, which
/// name this world's allocations with ranges this world never checked.
struct Kept {
    rows: Vec<Resolved>,
    stale_row: Resolved,
    foreign: Vec<Resolved>,
}

/// A world of `ALLOCS` allocations of `size` bytes spread over the slots,
/// with their whole rows, and the whole row of one more, freed.
fn world_of(strict: bool, size: u64) -> (World, Vec<Resolved>, Resolved) {
    let mut world = World::new(Config {
        max_streams: MAX_STREAMS,
        num_special: 1,
        chain_limit: 1024,
        strict,
    })
    .expect("valid config");
    let mut whole = |memory: u64, stream: u64| {
        world.alloc(stream, memory, size).expect("fresh memory id");
        world
            .resolve_binding(&Binding::whole(stream, memory, Access::Read))
            .expect("good input")
            .expect("live")
    };
    let rows = (0..ALLOCS as u64)
        .map(|i| whole(i, i % MAX_STREAMS))
        .collect();
    let stale_row = whole(99, 0);
    world.free(99).expect("live");
    (world, rows, stale_row)
}

/// A quiet world and what a scheduler holds for it ([`Kept`]).
fn quiet_world(strict: bool) -> (World, Kept) {
    let (world, rows, stale_row) = world_of(strict, SIZE);
    let (_, foreign, _) = world_of(strict, SIZE + 8);
    let keys = |rows: &[Resolved]| rows.iter().map(Resolved::alloc).collect::<Vec<_>>();
    assert_eq!(
        keys(&rows),
        keys(&foreign),
        "both worlds made the same keys"
    );
    let kept = Kept {
        rows,
        stale_row,
        foreign,
    };
    (world, kept)
}

fn binding(g: &GenBinding, kept: &Kept) -> Binding {
    let key = kept.rows[g.alloc].alloc();
    let slot = g.alloc as u64 % MAX_STREAMS;
    let (stream, memory) = match g.named {
        Named::Plain => (slot, MemoryRef::Key(key)),
        Named::Folded => (slot + MAX_STREAMS, MemoryRef::Key(key)),
        Named::ById => (slot, MemoryRef::Id(g.alloc as u64)),
        Named::Stale => (slot, MemoryRef::Key(kept.stale_row.alloc())),
    };
    Binding {
        stream: StreamRef::Id(stream),
        memory,
        range: g.range,
        access: g.access,
    }
}

/// The batch's launches over `bound` (one vector of bindings or rows a
/// launch); with `failing`, the launches generated to fail do.
fn launches<'a, B: Bind>(
    work: &[GenLaunch],
    bound: &'a [Vec<B>],
    failing: bool,
) -> Vec<Launch<'a, B>> {
    work.iter()
        .zip(bound)
        .map(|(g, bindings)| Launch {
            kernel: "k",
            stream: if g.special_stream {
                StreamRef::Special(0)
            } else {
                StreamRef::Id(0)
            },
            bindings,
            outcome: if g.dry_run {
                Outcome::DryRun
            } else if failing && g.fails {
                Outcome::Failed {
                    kind: "compile",
                    message: "bad PTX",
                }
            } else {
                Outcome::Ok
            },
        })
        .collect()
}

/// Runs the launches one at a time on one of `world` and a copy of it, and
/// as one batch on the other, and checks that they agree. A copy is
/// another world to the rows `world` made (it checks their ranges, where
/// `world` checks their keys), so `batch_on_copy` says which side takes
/// the rows as its own.
fn batch_matches_one_at_a_time<B: Bind>(
    world: &mut World,
    batch: &[Launch<'_, B>],
    batch_on_copy: bool,
) -> Result<(), TestCaseError> {
    let before = (world.stats(), state(world));
    let mut copy = world.clone();
    let (single, batched) = if batch_on_copy {
        (world, &mut copy)
    } else {
        (&mut copy, world)
    };
    let expected: Result<Vec<LaunchResult>, ()> = batch
        .iter()
        .map(|l| single.launch(l).map_err(|_| ()))
        .collect();
    let mut results = Vec::new();
    let got = batched.launch_batch(batch, &mut results);
    match expected {
        Ok(expected) => {
            prop_assert!(got.is_ok(), "the batch was rejected: {:?}", got);
            prop_assert_eq!(results, expected);
            prop_assert_eq!(batched.stats(), single.stats());
            // And the same state: every claim with its failure and origin,
            // every failure's counts, every skip record.
            prop_assert_eq!(state(batched), state(single));
        }
        Err(()) => {
            prop_assert!(got.is_err(), "a batch with a bad launch was accepted");
            prop_assert!(results.is_empty());
            prop_assert_eq!((batched.stats(), state(batched)), before);
        }
    }
    Ok(())
}

/// Where a generated batch runs: whether a failed launch has claimed one
/// more allocation first (and with `bound`, the first 16 bytes of the
/// first allocation the batch binds too), whether the launches generated
/// to fail do, and which side of the comparison runs on the world that
/// made the rows.
#[derive(Copy, Clone, Debug)]
struct Setting {
    claimed: bool,
    bound: bool,
    failing: bool,
    batch_on_copy: bool,
}

/// Builds `work` in a quiet world — or, with `claimed`, in the same world
/// once a failed launch has claimed one more allocation — with the
/// launches generated to fail failing if `failing`, each binding made a
/// `B` by `bind`, and checks the batch against one launch at a time.
fn check<B: Bind>(
    work: &[GenLaunch],
    strict: bool,
    setting: Setting,
    bind: impl Fn(&GenBinding, &Kept) -> B,
) -> Result<(), TestCaseError> {
    let (mut world, kept) = quiet_world(strict);
    if setting.claimed {
        world.alloc(0, 50, SIZE).expect("fresh memory id");
        let mut out = vec![Binding::whole(0, 50, Access::Write)];
        if setting.bound {
            out.push(Binding::range(0, 0, 0, 16, Access::Write));
        }
        world
            .launch(&Launch {
                kernel: "fill",
                stream: StreamRef::Id(0),
                bindings: &out,
                outcome: Outcome::Failed {
                    kind: "launch",
                    message: "too many resources",
                },
            })
            .expect("good input");
    }
    let bound: Vec<Vec<B>> = work
        .iter()
        .map(|g| g.bindings.iter().map(|b| bind(b, &kept)).collect())
        .collect();
    batch_matches_one_at_a_time(
        &mut world,
        &launches(work, &bound, setting.failing),
        setting.batch_on_copy,
    )
}

/// The row a scheduler would keep for a generated binding: the part of its
/// allocation's row it names (a stale row stays stale). No world makes a
/// row past its allocation's end, so such a range is the part of a row kept
/// from the other world; nor a reversed one, so that binding keeps the
/// whole row.
fn row(b: &GenBinding, kept: &Kept) -> Resolved {
    let whole = match b.named {
        Named::Stale => kept.stale_row,
        _ => kept.rows[b.alloc],
    }
    .with_access(b.access);
    let Some((start, end)) = b.range else {
        return whole;
    };
    whole
        .narrow(start, end)
        .or_else(|| {
            kept.foreign[b.alloc]
                .with_access(b.access)
                .narrow(start, end)
        })
        .unwrap_or(whole)
}

/// The settings a batch runs in, each with either side of the comparison
/// on the world that made the rows: a quiet world where every launch runs
/// (the clean path: one predicate over the batch, or the counting pass); a
/// quiet world where some launches fail, so the batch leaves the clean
/// path while one launch at a time meets a quiet world until the first
/// failure; a world where something is claimed, beside the batch or on
/// bytes it binds, with some launches failing (the full path, plain
/// bindings resolved in one loop until the first that is not); and the
/// same two worlds with no launch failing (the unclaimed path where
/// nothing the batch binds is claimed, the full path where something is).
fn gen_setting() -> impl Strategy<Value = Setting> {
    let world = prop_oneof![
        Just((false, false, false)),
        Just((false, false, true)),
        Just((true, false, true)),
        Just((true, true, true)),
        // A failure lives and no launch fails: the batch beside it, or
        // over its bytes.
        Just((true, false, false)),
        Just((true, true, false)),
    ];
    (world, any::<bool>()).prop_map(|((claimed, bound, failing), batch_on_copy)| Setting {
        claimed,
        bound,
        failing,
        batch_on_copy,
    })
}

proptest! {
    #![proptest_config(scale::config(1536))]

    /// Bindings: mostly of the common shape, so that whole batches take the
    /// one-predicate path, with now and then a folded stream, a memory id, a
    /// stale key, a bad range, a dry run or a special stream that sends the
    /// batch down the counting path.
    #[test]
    fn a_batch_of_bindings_gives_what_one_launch_at_a_time_gives(
        work in prop::collection::vec(gen_launch(), 0..12),
        strict in prop::bool::weighted(0.2),
        setting in gen_setting(),
    ) {
        check(&work, strict, setting, binding)?;
    }

    /// The same launches bound by pre-resolved rows, some of them kept
    /// from another world.
    #[test]
    fn a_batch_of_rows_gives_what_one_launch_at_a_time_gives(
        work in prop::collection::vec(gen_launch(), 0..12),
        strict in prop::bool::weighted(0.2),
        setting in gen_setting(),
    ) {
        check(&work, strict, setting, row)?;
    }
}
