//! Synthetic launch logs (`taintworld gen`): valid logs of a chosen shape,
//! deterministic for a seed, for benchmarks, demos and tests.

use std::io;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::Access;
use crate::log::{ErrorObject, Event, Header, LogBinding, Outcome};

/// The shape of a generated workload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Each launch reads the previous launch's output, round a ring of
    /// buffers: one failure taints everything after it.
    Chain,
    /// One input read by every launch, each writing its own output: one
    /// failure taints every output at once.
    Fanout,
    /// Random bindings, accesses and ranges over a churning pool of
    /// allocations.
    Random,
    /// Training steps of a small layered model: forward, loss, backward and
    /// optimizer launches, the loss read back at the end of each step.
    TrainingStep,
}

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct GenOptions {
    /// The seed: the same options give the same log, byte for byte.
    pub seed: u64,
    /// How many launches.
    pub launches: u64,
    /// How many streams the allocations and launches spread over (≥ 1).
    pub streams: u64,
    /// The probability that a launch fails (`kind` `launch`).
    pub fail_rate: f64,
    /// The shape.
    pub shape: Shape,
}

/// Allocation size of the generated buffers.
const BUFFER: u64 = 4096;

struct Gen<'a, E> {
    rng: ChaCha8Rng,
    options: &'a GenOptions,
    emit: E,
    launched: u64,
}

impl<E: FnMut(Event) -> io::Result<()>> Gen<'_, E> {
    fn outcome(&mut self) -> Outcome {
        if self.options.fail_rate > 0.0 && self.rng.random_bool(self.options.fail_rate.min(1.0)) {
            Outcome::Failed(ErrorObject {
                kind: "launch".into(),
                message: "generated failure".into(),
            })
        } else {
            Outcome::Ok
        }
    }

    fn stream_of(&self, memory: u64) -> u64 {
        memory % self.options.streams
    }

    fn bind(&self, memory: u64, access: Access) -> LogBinding {
        LogBinding {
            stream: self.stream_of(memory),
            memory,
            range: None,
            access,
        }
    }

    fn alloc(&mut self, memory: u64, size: u64) -> io::Result<()> {
        let stream = self.stream_of(memory);
        (self.emit)(Event::Alloc {
            stream,
            memory,
            size,
            outcome: None,
        })
    }

    fn launch(&mut self, kernel: &str, stream: u64, bindings: Vec<LogBinding>) -> io::Result<bool> {
        if self.launched >= self.options.launches {
            return Ok(false);
        }
        self.launched += 1;
        let outcome = self.outcome();
        (self.emit)(Event::Launch {
            kernel: kernel.into(),
            stream,
            bindings,
            outcome,
        })?;
        Ok(true)
    }

    fn read(&mut self, memory: u64) -> io::Result<()> {
        let binding = self.bind(memory, Access::Read);
        (self.emit)(Event::Read { binding })
    }

    fn done(&self) -> bool {
        self.launched >= self.options.launches
    }

    fn chain(&mut self) -> io::Result<()> {
        const RING: u64 = 64;
        let weights = [RING, RING + 1];
        for m in 0..RING + 2 {
            self.alloc(m, BUFFER)?;
        }
        let mut i = 0u64;
        while !self.done() {
            let (input, output) = (i % RING, (i + 1) % RING);
            let bindings = vec![
                self.bind(input, Access::Read),
                self.bind(weights[(i % 2) as usize], Access::Read),
                self.bind(weights[((i + 1) % 2) as usize], Access::Dead),
                self.bind(output, Access::Write),
            ];
            let kernel = ["gemm", "gelu", "layernorm", "softmax"][(i % 4) as usize];
            self.launch(kernel, self.stream_of(output), bindings)?;
            i += 1;
            if i.is_multiple_of(100) {
                self.read(output)?;
            }
        }
        Ok(())
    }

    fn fanout(&mut self) -> io::Result<()> {
        const OUTPUTS: u64 = 256;
        let (input, params) = (OUTPUTS, OUTPUTS + 1);
        for m in 0..OUTPUTS + 2 {
            self.alloc(m, BUFFER)?;
        }
        let fill = vec![self.bind(input, Access::Write)];
        self.launch("fill", self.stream_of(input), fill)?;
        let mut i = 0u64;
        while !self.done() {
            let output = i % OUTPUTS;
            let bindings = vec![
                self.bind(input, Access::Read),
                self.bind(params, Access::Read),
                self.bind(output, Access::ReadWrite),
                self.bind(output, Access::Write),
            ];
            self.launch("expert", self.stream_of(output), bindings)?;
            i += 1;
            if i.is_multiple_of(128) {
                self.read(output)?;
            }
        }
        Ok(())
    }

    fn random(&mut self) -> io::Result<()> {
        const POOL: u64 = 256;
        let mut sizes = [0u64; POOL as usize];
        for (m, size) in sizes.iter_mut().enumerate() {
            *size = self.rng.random_range(1..=BUFFER);
            self.alloc(m as u64, *size)?;
        }
        let mut next_id = POOL;
        let mut ids: Vec<u64> = (0..POOL).collect();
        while !self.done() {
            if self.rng.random_bool(0.01) {
                // Churn: free one buffer and make another in its place.
                let slot = self.rng.random_range(0..POOL as usize);
                (self.emit)(Event::Free { memory: ids[slot] })?;
                ids[slot] = next_id;
                next_id += 1;
                sizes[slot] = self.rng.random_range(0..=BUFFER);
                self.alloc(ids[slot], sizes[slot])?;
            }
            let mut bindings = Vec::with_capacity(4);
            for _ in 0..4 {
                let slot = self.rng.random_range(0..POOL as usize);
                let size = sizes[slot];
                let start = self.rng.random_range(0..=size);
                let end = self.rng.random_range(start..=size);
                let access = match self.rng.random_range(0..20u32) {
                    0..=9 => Access::Read,
                    10..=15 => Access::Write,
                    16..=18 => Access::ReadWrite,
                    _ => Access::Dead,
                };
                bindings.push(LogBinding {
                    stream: self.stream_of(ids[slot]),
                    memory: ids[slot],
                    range: Some((start, end)),
                    access,
                });
            }
            let stream = self.rng.random_range(0..self.options.streams);
            let kernel = ["k_a", "k_b", "k_c", "k_d", "k_e"][self.rng.random_range(0..5usize)];
            self.launch(kernel, stream, bindings)?;
            if self.rng.random_bool(0.02) {
                let slot = self.rng.random_range(0..POOL as usize);
                let binding = self.bind(ids[slot], Access::Write);
                (self.emit)(Event::HostWrite {
                    binding,
                    outcome: Outcome::Ok,
                })?;
            }
            if self.rng.random_bool(0.02) {
                let slot = self.rng.random_range(0..POOL as usize);
                self.read(ids[slot])?;
            }
        }
        Ok(())
    }

    fn training_step(&mut self) -> io::Result<()> {
        const LAYERS: u64 = 32;
        // Memory ids: activations a_0..=a_L, then per layer a weight, its
        // gradient, two optimizer moments, and an activation gradient;
        // then the target and the loss.
        let act = |i: u64| i;
        let weight = |i: u64| LAYERS + 1 + 5 * i;
        let grad = |i: u64| weight(i) + 1;
        let moment = |i: u64, k: u64| weight(i) + 2 + k;
        let act_grad = |i: u64| weight(i) + 4;
        let out_grad = LAYERS + 1 + 5 * LAYERS;
        let target = out_grad + 1;
        let loss = target + 1;
        for m in 0..=loss {
            self.alloc(m, if m == loss { 4 } else { BUFFER })?;
        }
        let compute = 0;
        let optimizer = 1 % self.options.streams;
        while !self.done() {
            let input = self.bind(act(0), Access::Write);
            (self.emit)(Event::HostWrite {
                binding: input,
                outcome: Outcome::Ok,
            })?;
            for i in 0..LAYERS {
                let b = vec![
                    self.bind(act(i), Access::Read),
                    self.bind(weight(i), Access::Read),
                    self.bind(moment(i, 0), Access::Dead),
                    self.bind(act(i + 1), Access::Write),
                ];
                self.launch(&format!("linear_fwd_{i}"), compute, b)?;
            }
            let b = vec![
                self.bind(act(LAYERS), Access::Read),
                self.bind(target, Access::Read),
                self.bind(loss, Access::Write),
                self.bind(out_grad, Access::Write),
            ];
            self.launch("cross_entropy", compute, b)?;
            let mut upstream = out_grad;
            for i in (0..LAYERS).rev() {
                let b = vec![
                    self.bind(upstream, Access::Read),
                    self.bind(act(i), Access::Read),
                    self.bind(grad(i), Access::Write),
                    self.bind(act_grad(i), Access::Write),
                ];
                self.launch(&format!("linear_bwd_{i}"), compute, b)?;
                upstream = act_grad(i);
            }
            for i in 0..LAYERS {
                let b = vec![
                    self.bind(grad(i), Access::Read),
                    self.bind(weight(i), Access::ReadWrite),
                    self.bind(moment(i, 0), Access::ReadWrite),
                    self.bind(moment(i, 1), Access::ReadWrite),
                ];
                self.launch("adamw", optimizer, b)?;
            }
            self.read(loss)?;
        }
        Ok(())
    }
}

/// Generates the log `options` describe, handing each event to `emit` in
/// order (a header first). Deterministic for a seed, and the same from
/// one version of the crate to the next, so that a figure measured on a
/// generated log can be made again (the crate's tests hold `taintworld
/// gen` to logs it wrote before).
pub fn generate(
    options: &GenOptions,
    mut emit: impl FnMut(Event) -> io::Result<()>,
) -> io::Result<()> {
    let streams = options.streams.max(1);
    emit(Event::Header(Header {
        max_streams: Some(streams.max(8)),
        chain_limit: None,
    }))?;
    let options = GenOptions {
        streams,
        ..options.clone()
    };
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(options.seed),
        options: &options,
        emit,
        launched: 0,
    };
    match options.shape {
        Shape::Chain => g.chain(),
        Shape::Fanout => g.fanout(),
        Shape::Random => g.random(),
        Shape::TrainingStep => g.training_step(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use super::{GenOptions, Shape, generate};
    use crate::log::{Event, Outcome};

    const SHAPES: [Shape; 4] = [
        Shape::Chain,
        Shape::Fanout,
        Shape::Random,
        Shape::TrainingStep,
    ];

    fn events(shape: Shape, launches: u64, streams: u64, fail_rate: f64) -> Vec<Event> {
        let options = GenOptions {
            seed: 11,
            launches,
            streams,
            fail_rate,
            shape,
        };
        let mut events = Vec::new();
        generate(&options, |e| {
            events.push(e);
            Ok(())
        })
        .expect("a Vec takes every event");
        events
    }

    /// Asking for several streams spreads the buffers over all of them, and
    /// every binding (a read's too) names the stream its buffer was made on, as a real
    /// program's bindings do (the replay's strict run finds no unresolved
    /// binding; this says the spread is real, not every buffer on one
    /// stream).
    #[test]
    fn every_shape_makes_buffers_on_every_stream_binds_each_on_its_own_and_reads_some_back() {
        for shape in SHAPES {
            let (mut made_on, mut reads) = (HashMap::new(), 0);
            for event in events(shape, 500, 3, 0.0) {
                match event {
                    Event::Alloc { stream, memory, .. } => {
                        made_on.insert(memory, stream);
                    }
                    Event::Launch { bindings, .. } => {
                        for b in bindings {
                            assert_eq!(made_on.get(&b.memory), Some(&b.stream), "{shape:?}");
                        }
                    }
                    Event::Read { binding: b } => {
                        assert_eq!(made_on.get(&b.memory), Some(&b.stream), "{shape:?}");
                        reads += 1;
                    }
                    _ => {}
                }
            }
            let streams: BTreeSet<u64> = made_on.values().copied().collect();
            assert_eq!(streams, BTreeSet::from([0, 1, 2]), "{shape:?}");
            // Every shape reads results back now and then, as a training
            // loop reads its loss: what a replay reports on.
            assert!(reads > 0, "{shape:?} never reads");
        }
    }

    /// The fixed shapes make no buffer they never use: after a few hundred
    /// launches (one training step is 97) every buffer made has been bound,
    /// so the ring, the fan and the layers are the sizes they say. (The
    /// random shape makes new buffers as it goes, and binds them by chance.)
    #[test]
    fn every_buffer_a_fixed_shape_makes_is_bound_by_some_launch() {
        for shape in [Shape::Chain, Shape::Fanout, Shape::TrainingStep] {
            let (mut made, mut bound) = (BTreeSet::new(), BTreeSet::new());
            for event in events(shape, 500, 1, 0.0) {
                match event {
                    Event::Alloc { memory, .. } => {
                        made.insert(memory);
                    }
                    Event::Launch { bindings, .. } => {
                        bound.extend(bindings.iter().map(|b| b.memory));
                    }
                    _ => {}
                }
            }
            let unbound: Vec<_> = made.difference(&bound).collect();
            assert!(unbound.is_empty(), "{shape:?} never binds {unbound:?}");
            assert!(bound.is_subset(&made), "{shape:?} binds what it never made");
        }
    }

    /// A training step computes on stream 0 and steps the optimizer on
    /// stream 1, as a runtime with a side stream for the optimizer does;
    /// with one stream, everything is on stream 0.
    #[test]
    fn a_training_step_runs_its_optimizer_on_a_stream_of_its_own() {
        for (streams, optimizer) in [(3, 1), (1, 0)] {
            let mut seen = BTreeSet::new();
            for event in events(Shape::TrainingStep, 200, streams, 0.0) {
                if let Event::Launch { kernel, stream, .. } = event {
                    seen.insert((kernel == "adamw", stream));
                }
            }
            assert_eq!(seen, BTreeSet::from([(false, 0), (true, optimizer)]));
        }
    }

    /// A training step of 32 layers makes 196 buffers, one per role: 33
    /// activations, five per layer (weight, gradient, two optimizer
    /// moments, activation gradient), the output gradient, the target and
    /// the loss — a 4-byte scalar, the one buffer read back each step.
    #[test]
    fn a_training_step_makes_one_buffer_per_role_and_reads_back_a_scalar_loss() {
        let (mut sizes, mut read_back) = (HashMap::new(), BTreeSet::new());
        for event in events(Shape::TrainingStep, 300, 1, 0.0) {
            match event {
                Event::Alloc { memory, size, .. } => {
                    sizes.insert(memory, size);
                }
                Event::Read { binding } => {
                    read_back.insert(binding.memory);
                }
                _ => {}
            }
        }
        assert_eq!(sizes.len(), 33 + 5 * 32 + 3);
        let [loss] = read_back.into_iter().collect::<Vec<_>>()[..] else {
            panic!("one buffer read back");
        };
        for (memory, size) in sizes {
            assert_eq!(
                size,
                if memory == loss { 4 } else { 4096 },
                "memory {memory}"
            );
        }
    }

    /// A stream count of zero is taken as one (`GenOptions::streams` asks
    /// for at least one), not a division by zero.
    #[test]
    fn a_stream_count_of_zero_generates_on_one_stream() {
        for shape in SHAPES {
            for event in events(shape, 300, 0, 0.0) {
                if let Event::Alloc { stream, .. } | Event::Launch { stream, .. } = event {
                    assert_eq!(stream, 0, "{shape:?}");
                }
            }
        }
    }

    /// Random bindings take every kind of access.
    #[test]
    fn the_random_shape_binds_with_every_access() {
        let mut seen = BTreeSet::new();
        for event in events(Shape::Random, 500, 1, 0.0) {
            if let Event::Launch { bindings, .. } = event {
                seen.extend(bindings.iter().map(|b| b.access.name()));
            }
        }
        assert_eq!(
            seen,
            BTreeSet::from(["dead", "read", "read_write", "write"])
        );
    }

    /// The fail rate is each launch's chance to fail: none at 0, every one
    /// at 1, and about a quarter at 0.25 (the seed is fixed, so the count
    /// is too; the bounds sit over ten standard deviations out).
    #[test]
    fn a_fail_rate_fails_that_share_of_the_launches() {
        for shape in SHAPES {
            for (rate, least, most) in [(0.0, 0, 0), (0.25, 300, 700), (1.0, 2000, 2000)] {
                let (mut launches, mut failed) = (0, 0);
                for event in events(shape, 2000, 2, rate) {
                    if let Event::Launch { outcome, .. } = event {
                        launches += 1;
                        failed += u32::from(matches!(outcome, Outcome::Failed(_)));
                    }
                }
                assert_eq!(launches, 2000, "{shape:?}");
                assert!(
                    (least..=most).contains(&failed),
                    "{shape:?} at {rate}: {failed} of 2000 failed"
                );
            }
        }
    }
}
