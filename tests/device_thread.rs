//! A scheduler keeps the world on its device thread and asks it from
//! others. `World`'s docs promise it is `Send` and holds no locks; these
//! tests hold the crate to that, so that a field added later (an `Rc`, a
//! `Cell` behind a shared reference) cannot quietly take it away; that
//! worlds on two threads never share a stamp; and that a world behind a
//! lock its scope body poisoned is whole.

use std::sync::mpsc;
use std::thread;

#[cfg(feature = "log")]
use taintworld::log::{Replay, Report};
use taintworld::pool::{ReadFailure, StreamAllocations, StreamPool};
use taintworld::{
    Access, Binding, Chain, ChainHopRef, Error, ErrorInfo, Launch, LaunchResult, Outcome,
    ReadResult, Resolved, TaintRef, TaintReport, Verdict, World,
};

/// Compiles only for types that may move to another thread.
fn movable<T: Send>() {}

/// Compiles only for types that may be shared between threads.
fn shareable<T: Sync>() {}

#[test]
fn the_world_its_answers_and_its_errors_may_move_between_threads() {
    movable::<World>();
    shareable::<World>();
    movable::<Resolved>();
    movable::<LaunchResult>();
    movable::<ReadResult>();
    movable::<TaintReport>();
    // Borrowed answers: a thread holding a shared world may read in place.
    movable::<TaintRef<'static>>();
    shareable::<TaintRef<'static>>();
    movable::<Chain<'static>>();
    movable::<ChainHopRef<'static>>();
    movable::<ErrorInfo>();
    movable::<Error>();
    shareable::<Error>();
    // The replay and its report are the `log` feature's.
    #[cfg(feature = "log")]
    {
        movable::<Replay>();
        shareable::<Replay>();
        movable::<Report>();
        shareable::<Report>();
        passable::<taintworld::log::ReplayError>();
        passable::<taintworld::log::LineError>();
    }
    movable::<ReadFailure>();
    passable::<Error>();
    passable::<taintworld::pool::PoolError<std::io::Error>>();
}

/// Compiles only for errors another thread may take and box, as
/// `Box<dyn Error + Send + Sync>` or an error-reporting crate does.
fn passable<E: core::error::Error + Send + Sync + 'static>() {}

/// A row is marked by the stamp of the world that made it, and a world
/// takes only its own stamp's rows on trust. The stamps come from one
/// process-wide counter: two fresh threads that each make their own
/// worlds never draw the same stamp. (Were the counter a thread's own, the
/// n-th world of each thread would share a stamp, and the world on the
/// second thread would take a 1 KiB row of the first's as its own, on its
/// 16-byte allocation under the same key.)
#[test]
fn worlds_made_on_two_threads_never_take_each_others_rows_on_trust() {
    const WORLDS: usize = 200;
    let rows = thread::spawn(|| {
        (0..WORLDS)
            .map(|_| {
                let mut made = World::default();
                let key = made.alloc(0, 1, 1024).expect("a fresh id");
                made.resolve_binding(&Binding::whole(0, key, Access::Write))
                    .expect("a valid binding")
                    .expect("a live allocation")
            })
            .collect::<Vec<Resolved>>()
    })
    .join()
    .expect("the first thread makes its rows");
    let verdicts = thread::spawn(move || {
        rows.iter()
            .map(|row| {
                let mut other = World::default();
                other.alloc(0, 1, 16).expect("a fresh id");
                let launch = Launch {
                    kernel: "fill",
                    stream: 0.into(),
                    bindings: core::slice::from_ref(row),
                    outcome: Outcome::Ok,
                };
                let one = other.launch(&launch);
                let batch = other.launch_batch(&[launch], &mut Vec::new());
                other.check_invariants().expect("a consistent world");
                (one.map(|r| r.verdict), batch.is_err())
            })
            .collect::<Vec<_>>()
    })
    .join()
    .expect("the second thread launches them");
    assert_eq!(verdicts.len(), WORLDS);
    for (i, (one, batch_rejected)) in verdicts.into_iter().enumerate() {
        assert!(
            matches!(one, Err(Error::RangePastEnd { memory: 1, .. })),
            "world {i} took another thread's row on trust: {one:?}"
        );
        assert!(batch_rejected, "world {i}'s batch took the row on trust");
    }
}

/// A scope body that panics while the world sits behind a `Mutex` poisons
/// the lock; the world inside is whole, its write set torn down, so a
/// scheduler may take it out of the poisoned lock and go on.
#[test]
fn a_world_whose_scope_body_panicked_behind_a_mutex_is_whole_once_taken_out() {
    let shared = std::sync::Arc::new(std::sync::Mutex::new(World::default()));
    shared.lock().unwrap().alloc(0, 1, 256).expect("a fresh id");
    let worker = std::sync::Arc::clone(&shared);
    let panicked = thread::spawn(move || {
        let mut world = worker.lock().unwrap();
        let out = [Binding::whole(0, 1, Access::Write)];
        let _ = world.scope("fill", 0, &out, || -> Result<(), ErrorInfo> {
            panic!("the kernel's host code panicked")
        });
    })
    .join();
    assert!(panicked.is_err(), "the body's panic reached the thread");
    assert!(shared.is_poisoned());
    let mut world = match std::sync::Arc::try_unwrap(shared) {
        Ok(lock) => lock
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
        Err(_) => panic!("the worker let its handle go"),
    };
    world
        .check_invariants()
        .expect("the world stayed consistent");
    let Ok(ReadResult::Tainted(why)) = world.read(&Binding::whole(0, 1, Access::Read)) else {
        panic!("memory 1 should read as torn down");
    };
    assert_eq!(
        (why.error.kind.as_str(), why.error.kernel.as_str()),
        ("torn_down", "fill")
    );
}

/// The seed's pool is as movable as the streams its factory makes.
#[test]
fn a_pool_of_movable_streams_may_move_between_threads() {
    struct Streams;
    impl taintworld::pool::StreamFactory for Streams {
        type Stream = StreamAllocations;
        type Error = std::io::Error;
        fn create(&mut self) -> Result<Self::Stream, Self::Error> {
            Ok(StreamAllocations::default())
        }
    }
    movable::<StreamPool<Streams>>();
}

/// What the scheduler's other threads send the device thread.
enum Ask {
    /// A kernel launch, with the outcome the runtime reported.
    Launch {
        kernel: &'static str,
        bindings: Vec<Binding>,
        failed: bool,
    },
    /// A host read of one binding.
    Read(Binding),
}

/// What the device thread answers.
enum Answer {
    Launched(Result<LaunchResult, Error>),
    Read(Result<ReadResult, Error>),
}

/// The world lives on a device thread; another thread launches work
/// through a channel and reads back why a buffer cannot be trusted, and
/// the world comes home with its claims intact when the thread ends.
#[test]
fn a_world_on_a_device_thread_answers_launches_and_reads_sent_from_another() {
    let (ask, asked) = mpsc::channel::<Ask>();
    let (answer, answers) = mpsc::channel::<Answer>();
    let device = thread::spawn(move || -> World {
        let mut world = World::default();
        for memory in 1..=3 {
            world.alloc(0, memory, 256).expect("a fresh id");
        }
        for ask in asked {
            let reply = match ask {
                Ask::Launch {
                    kernel,
                    bindings,
                    failed,
                } => Answer::Launched(world.launch(&Launch {
                    kernel,
                    stream: 0.into(),
                    bindings: &bindings,
                    outcome: if failed {
                        Outcome::Failed {
                            kind: "compile",
                            message: "bad PTX",
                        }
                    } else {
                        Outcome::Ok
                    },
                })),
                Ask::Read(binding) => Answer::Read(world.read(&binding)),
            };
            answer.send(reply).expect("the asking thread waits");
        }
        world
    });

    let launched = |kernel, bindings: Vec<Binding>, failed| {
        ask.send(Ask::Launch {
            kernel,
            bindings,
            failed,
        })
        .expect("the device thread runs");
        match answers.recv().expect("an answer") {
            Answer::Launched(result) => result.expect("a valid launch").verdict,
            Answer::Read(_) => panic!("a read's answer to a launch"),
        }
    };
    let fill = vec![Binding::whole(0, 1, Access::Write)];
    let Verdict::Failed(failure) = launched("fill", fill, true) else {
        panic!("the launch was reported failed");
    };
    let copy = vec![
        Binding::whole(0, 1, Access::Read),
        Binding::whole(0, 2, Access::Write),
    ];
    assert_eq!(
        launched("copy", copy, false),
        Verdict::Skipped { failure, needed: 1 }
    );

    ask.send(Ask::Read(Binding::whole(0, 2, Access::Read)))
        .expect("the device thread runs");
    let Answer::Read(Ok(ReadResult::Tainted(why))) = answers.recv().expect("an answer") else {
        panic!("memory 2 was written by a skipped launch");
    };
    assert_eq!((why.failure, why.error.kernel.as_str()), (failure, "fill"));
    assert_eq!(why.chain.len(), 1, "one skipped launch between: copy");
    assert_eq!(why.chain[0].kernel, "copy");

    drop(ask);
    let mut world = device.join().expect("the device thread ends cleanly");
    assert_eq!(
        world.read(&Binding::whole(0, 3, Access::Read)),
        Ok(ReadResult::Clean)
    );
    assert!(matches!(
        world.read(&Binding::whole(0, 1, Access::Read)),
        Ok(ReadResult::Tainted(_))
    ));
    world
        .check_invariants()
        .expect("the world came home consistent");
}
