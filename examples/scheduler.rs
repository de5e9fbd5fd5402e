//! A scheduler that embeds the world on its hot path, the way the crate is
//! meant to be embedded: buffers allocated once, every binding resolved
//! once into a [`Resolved`] row it keeps, kernel names registered once, and
//! each training step handed to the world as one batch whose outcomes are
//! what the device reported.
//!
//! One launch of the second step fails. The example shows what that one
//! failure poisons — the loss at once, and through the skipped optimizer
//! launch the weights, so every later step is garbage too — what a host
//! read of the loss says about it, and how reloading the weights from a
//! checkpoint (a host write) releases the taint.
//!
//! ```text
//! cargo run --example scheduler
//! ```

use std::error::Error;

use taintworld::{
    Access, AllocKey, Binding, Launch, LaunchResult, Outcome, ReadResult, Resolved, World,
};

// The scheduler's kernels. Registered with the world once, so that a skip
// finds each interned name by this string's address instead of hashing it.
static EMBED: &str = "embed";
static LOSS: &str = "loss";
static LOSS_BACKWARD: &str = "loss_backward";
static SGD: &str = "sgd";

/// Memory ids of the buffers, as the device allocator handed them out.
const INPUT: u64 = 1;
const WEIGHTS: u64 = 2;
const HIDDEN: u64 = 3;
const LOSS_VALUE: u64 = 4;
const GRAD: u64 = 5;

/// All work runs on stream 0.
const STREAM: u64 = 0;

/// One planned launch: its kernel and the rows it binds, resolved once.
struct Planned {
    kernel: &'static str,
    rows: Vec<Resolved>,
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut world = World::default();
    for kernel in [EMBED, LOSS, LOSS_BACKWARD, SGD] {
        world.register_kernel(kernel);
    }
    // Room for every buffer the scheduler will hold, asked for once here
    // instead of found short by an allocation in its loop.
    world.reserve_allocations(5)?;
    let key = |world: &mut World, memory, size| world.alloc(STREAM, memory, size);
    let input = key(&mut world, INPUT, 4096)?;
    let weights = key(&mut world, WEIGHTS, 1 << 20)?;
    let hidden = key(&mut world, HIDDEN, 8192)?;
    let loss = key(&mut world, LOSS_VALUE, 4)?;
    let grad = key(&mut world, GRAD, 1 << 20)?;

    // The step's launches, each binding resolved once: from here on the
    // world checks each row in place instead of resolving it again.
    let row = |world: &World, key: AllocKey, access| -> Result<Resolved, Box<dyn Error>> {
        let binding = Binding::whole(STREAM, key, access);
        let row = world.resolve_binding(&binding)?;
        Ok(row.ok_or_else(|| format!("{key:?} does not resolve"))?)
    };
    use Access::{Read, ReadWrite, Write};
    let plan = [
        (EMBED, vec![(input, Read), (weights, Read), (hidden, Write)]),
        (LOSS, vec![(hidden, Read), (loss, Write)]),
        (
            LOSS_BACKWARD,
            vec![(hidden, Read), (loss, Read), (grad, Write)],
        ),
        (SGD, vec![(grad, Read), (weights, ReadWrite)]),
    ]
    .into_iter()
    .map(|(kernel, bindings)| {
        let rows = bindings
            .into_iter()
            .map(|(key, access)| row(&world, key, access))
            .collect::<Result<_, _>>()?;
        Ok(Planned { kernel, rows })
    })
    .collect::<Result<Vec<_>, Box<dyn Error>>>()?;

    // Reused every step: after the first, a step allocates nothing.
    let mut batch: Vec<Launch<'_, Resolved>> = Vec::with_capacity(plan.len());
    let mut results: Vec<LaunchResult> = Vec::with_capacity(plan.len());
    let mut clean_steps = Vec::new();
    for step in 1..=4 {
        // The host copies this step's input in; before step 4 it also
        // reloads the weights from a checkpoint, which releases them.
        world.host_write(&Binding::whole(STREAM, input, Write), Outcome::Ok)?;
        if step == 4 {
            world.host_write(&Binding::whole(STREAM, weights, Write), Outcome::Ok)?;
            println!("(weights reloaded from the checkpoint)");
        }
        // What the device reported: in step 2 the embedding launch was
        // rejected.
        let outcome = |kernel: &str| {
            if step == 2 && kernel == EMBED {
                Outcome::Failed {
                    kind: "launch",
                    message: "too many resources requested for launch",
                }
            } else {
                Outcome::Ok
            }
        };
        batch.clear();
        batch.extend(plan.iter().map(|p| Launch {
            kernel: p.kernel,
            stream: STREAM.into(),
            bindings: &p.rows[..],
            outcome: outcome(p.kernel),
        }));
        results.clear();
        world.launch_batch(&batch, &mut results)?;

        // The answers print in the replay summary's words: a verdict in a
        // few, a tainted read as its root error and then each hop.
        let verdicts: Vec<String> = plan
            .iter()
            .zip(&results)
            .map(|(p, r)| format!("{} {}", p.kernel, r.verdict))
            .collect();
        println!("step {step}: {}", verdicts.join(", "));

        let read = world.read(&Binding::whole(STREAM, loss, Read))?;
        if read == ReadResult::Clean {
            clean_steps.push(step);
        }
        println!("  loss: {read}");
        let stats = world.stats();
        println!(
            "  {} live failure(s), {} skip record(s), {} tainted allocation(s)",
            stats.live_failures, stats.live_records, stats.tainted_allocations
        );
    }
    // The story above, checked, so that CI running this example tests it:
    // only the steps before the failure and after the reload are clean.
    if clean_steps != [1, 4] {
        return Err(format!("the loss was clean after steps {clean_steps:?}, not 1 and 4").into());
    }
    Ok(())
}
