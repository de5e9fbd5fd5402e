//! A scheduler keeps the world on its device thread and asks it from
//! others. `World`'s docs promise it is `Send` and holds no locks; these
//! tests hold the crate to that, so that a field added later (an `Rc`, a
//! `Cell` behind a shared reference) cannot quietly take it away.

use std::sync::mpsc;
use std::thread;

#[cfg(feature = "log")]
use taintworld::log::{Replay, Report};
use taintworld::pool::{ReadFailure, StreamAllocations, StreamPool};
use taintworld::{
    Access, Binding, Error, ErrorInfo, Launch, LaunchResult, Outcome, ReadResult, Resolved,
    TaintReport, Verdict, World,
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
    movable::<ErrorInfo>();
    movable::<Error>();
    shareable::<Error>();
    // The replay and its report are the `log` feature's.
    #[cfg(feature = "log")]
    {
        movable::<Replay>();
        movable::<Report>();
    }
    movable::<ReadFailure>();
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
