//! The seed's pool path (`pool::taint`, `taint_with`, `written`,
//! `read_failure`, a stream's `free`, the graph's `prune`) driven by random
//! operations beside a per-byte model of every (slot, memory), and the seed
//! behaviours a backend relies on that `tests/pool_parity.rs` does not
//! show: a binding's stream id folding, access ignored as the seed has
//! none, out-of-range special streams, and pools of more than 255 slots.

mod scale;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use taintworld::pool::{
    self, StreamAllocations, StreamFactory, StreamId, StreamMemory, StreamPool,
};
use taintworld::{Access, Binding, ErrorInfo, FailureGraph, FailureId, MemoryRef, StreamRef};

/// A factory of plain stream memories that counts its creations.
#[derive(Debug, Default)]
struct Factory {
    created: u32,
}

impl StreamFactory for Factory {
    type Stream = StreamAllocations;
    type Error = ErrorInfo;
    fn create(&mut self) -> Result<StreamAllocations, ErrorInfo> {
        self.created += 1;
        Ok(StreamAllocations::default())
    }
}

fn id(value: u64) -> StreamId {
    StreamId { value }
}

/// The claims of memory `m` on `stream`, as `(start, end, failure id)`.
fn claims(p: &StreamPool<Factory>, g: &FailureGraph, stream: StreamRef, m: u64) -> Vec<[u64; 3]> {
    let memory = p.try_get_ref(stream).and_then(|s| s.get(m));
    memory
        .into_iter()
        .flat_map(|a| a.claims.iter())
        .map(|c| {
            let failure = g
                .failures
                .get(c.failure)
                .expect("a claimed failure is live");
            [c.start, c.end, failure.id.get()]
        })
        .collect()
}

fn fill(stream: u64, memory: u64) -> Binding {
    Binding::whole(stream, memory, Access::Write)
}

#[test]
fn a_bindings_stream_id_folds_in_taint_written_and_read_failure() {
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    let mut g = FailureGraph::new();
    p.get_mut(&id(1)).alloc(9, 16).unwrap();
    let error = ErrorInfo::new("compile", "fill", "bad PTX");
    // Stream 5 is slot 1 of four.
    let f = pool::taint(&mut p, error, [&fill(5, 9)].into_iter(), &mut g);
    assert_eq!(claims(&p, &g, StreamRef::Id(1), 9), [[0, 16, f.get()]]);
    // 2^64 - 3 is slot 1 too.
    let read = Binding::whole(u64::MAX - 2, 9, Access::Read);
    let hit = pool::read_failure(&p, [&read].into_iter(), &g).expect("tainted");
    assert_eq!((hit.failure, hit.needed), (f, 9));
    pool::written(&mut p, [&fill(9, 9)].into_iter(), &mut g);
    assert_eq!(claims(&p, &g, StreamRef::Id(1), 9), Vec::<[u64; 3]>::new());
    assert_eq!(p.factory_mut().created, 1, "no other slot was made");
}

#[test]
fn taint_and_written_act_on_every_binding_passed_whatever_its_access() {
    // The seed's bindings have no access: the caller passes the write set.
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    let mut g = FailureGraph::new();
    p.get_mut(&id(0)).alloc(1, 8).unwrap();
    p.get_mut(&id(0)).alloc(2, 8).unwrap();
    let read = Binding::whole(0, 1, Access::Read);
    let dead = Binding::whole(0, 2, Access::Dead);
    let error = ErrorInfo::new("compile", "fill", "bad PTX");
    let f = pool::taint(&mut p, error, [&read, &dead].into_iter(), &mut g);
    assert_eq!(claims(&p, &g, StreamRef::Id(0), 1), [[0, 8, f.get()]]);
    assert_eq!(claims(&p, &g, StreamRef::Id(0), 2), [[0, 8, f.get()]]);
    let dead_first = Binding::whole(0, 1, Access::Dead);
    pool::written(&mut p, [&dead_first].into_iter(), &mut g);
    assert_eq!(claims(&p, &g, StreamRef::Id(0), 1), Vec::<[u64; 3]>::new());
}

#[test]
fn a_binding_on_a_special_stream_past_num_special_is_passed_over() {
    let mut p = StreamPool::new(Factory::default(), 2, 1).unwrap();
    let mut g = FailureGraph::new();
    p.get_special(0).alloc(3, 8).unwrap();
    let past = Binding::whole(StreamRef::Special(1), 3, Access::Write);
    let error = ErrorInfo::new("compile", "fill", "bad PTX");
    let f = pool::taint(&mut p, error, [&past].into_iter(), &mut g);
    assert_eq!(
        claims(&p, &g, StreamRef::Special(0), 3),
        Vec::<[u64; 3]>::new()
    );
    assert!(g.failures.key_of(f).is_none(), "it claimed nothing");
    pool::written(&mut p, [&past].into_iter(), &mut g);
    let read = Binding::whole(StreamRef::Special(1), 3, Access::Read);
    assert_eq!(pool::read_failure(&p, [&read].into_iter(), &g), None);
}

#[test]
fn a_pool_may_hold_more_than_255_slots() {
    // The seed added its counts as `u8` and stopped at 255 slots.
    let mut p = StreamPool::new(Factory::default(), 255, 255).unwrap();
    assert_eq!(p.num_special(), 255);
    assert!(p.get_or_create_special(254).is_ok());
    let last = p.get_mut_index(509) as *const StreamAllocations;
    assert!(std::ptr::eq(last, p.get_special(254)));
}

// The model.

const MAX_STREAMS: u64 = 3;
const NUM_SPECIAL: u8 = 1;
const SIZE: u64 = 24;
const MEMORIES: u64 = 3;

/// The initialized slots; slot 2 never is.
const LIVE_SLOTS: [StreamRef; 3] = [StreamRef::Id(0), StreamRef::Id(1), StreamRef::Special(0)];

/// What the pool path can be asked.
#[derive(Clone, Debug)]
enum Op {
    /// `pool::taint` with error identity `error` (one of three).
    Taint {
        error: usize,
        bindings: Vec<Binding>,
    },
    /// `pool::taint_with` a failure still in the graph — carried, or
    /// unheld and not pruned yet, as a backend may still hold its id — the
    /// `pick`th of them by id, if any; `through_stream`: by each binding's
    /// stream's own `StreamMemory::taint`, as a backend may, instead.
    TaintWith {
        pick: usize,
        bindings: Vec<Binding>,
        through_stream: bool,
    },
    /// `pool::written`.
    Written { bindings: Vec<Binding> },
    /// `pool::read_failure`.
    Read { bindings: Vec<Binding> },
    /// Free memory `memory` of `LIVE_SLOTS[slot]` and allocate it again.
    Reallocate { slot: usize, memory: u64 },
    /// The graph's `prune`.
    Prune,
}

const ERRORS: [(&str, &str); 3] = [("compile", "fill"), ("launch", "gelu"), ("compile", "mm")];

/// Bindings on any stream id (folding onto three slots, one never made) or
/// either special index (one past `num_special`), with any access, whole
/// or over any range — reversed and past the end among them.
fn binding() -> impl Strategy<Value = Binding> {
    let stream = prop_oneof![
        5 => (0u64..8).prop_map(StreamRef::Id),
        1 => (0u16..2).prop_map(StreamRef::Special),
    ];
    let access = prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::ReadWrite),
        Just(Access::Dead),
    ];
    let range = prop_oneof![
        1 => Just(None),
        3 => (0..SIZE + 6, 0..SIZE + 6).prop_map(Some),
    ];
    (stream, 1..=MEMORIES, access, range).prop_map(|(stream, memory, access, range)| Binding {
        stream,
        memory: MemoryRef::Id(memory),
        range,
        access,
    })
}

fn op() -> impl Strategy<Value = Op> {
    let bindings = || prop::collection::vec(binding(), 1..4);
    prop_oneof![
        4 => (0usize..3, bindings()).prop_map(|(error, bindings)| Op::Taint { error, bindings }),
        2 => (0usize..4, bindings(), any::<bool>()).prop_map(|(pick, bindings, through_stream)| {
            Op::TaintWith { pick, bindings, through_stream }
        }),
        3 => bindings().prop_map(|bindings| Op::Written { bindings }),
        1 => bindings().prop_map(|bindings| Op::Read { bindings }),
        1 => (0usize..3, 1..=MEMORIES).prop_map(|(slot, memory)| Op::Reallocate { slot, memory }),
        1 => Just(Op::Prune),
    ]
}

/// Every byte of every (slot, memory): the id of the failure claiming it,
/// or 0.
#[derive(Debug)]
struct Model {
    bytes: BTreeMap<(u64, u64), Vec<u64>>,
    /// Every failure in the graph (not pruned yet), by id: its error
    /// identity.
    alive: BTreeMap<u64, usize>,
    minted: u64,
}

fn slot_of(stream: StreamRef) -> Option<u64> {
    match stream {
        StreamRef::Id(v) => Some(v % MAX_STREAMS),
        StreamRef::Special(i) if i < u16::from(NUM_SPECIAL) => Some(MAX_STREAMS + u64::from(i)),
        StreamRef::Special(_) => None,
    }
}

impl Model {
    fn new() -> Self {
        let mut bytes = BTreeMap::new();
        for stream in LIVE_SLOTS {
            for m in 1..=MEMORIES {
                let slot = slot_of(stream).expect("a live slot");
                bytes.insert((slot, m), vec![0; SIZE as usize]);
            }
        }
        Model {
            bytes,
            alive: BTreeMap::new(),
            minted: 0,
        }
    }

    /// The bytes a binding names, if its slot and memory exist.
    fn of(&mut self, b: &Binding) -> Option<&mut Vec<u64>> {
        let MemoryRef::Id(m) = b.memory else {
            return None;
        };
        self.bytes.get_mut(&(slot_of(b.stream)?, m))
    }

    /// Sets every byte the bindings name (clamped at the end; a reversed
    /// range names none) to `failure`.
    fn set(&mut self, bindings: &[Binding], failure: u64) {
        for b in bindings {
            let (start, end) = b.range.unwrap_or((0, SIZE));
            if let Some(bytes) = self.of(b) {
                for byte in bytes.iter_mut().take(end as usize).skip(start as usize) {
                    *byte = failure;
                }
            }
        }
    }

    /// How many allocations carry each failure id.
    fn carried(&self) -> BTreeMap<u64, u64> {
        let mut out = BTreeMap::new();
        for bytes in self.bytes.values() {
            let ids: BTreeSet<u64> = bytes.iter().copied().filter(|&f| f != 0).collect();
            for f in ids {
                *out.entry(f).or_insert(0) += 1;
            }
        }
        out
    }

    /// What `read_failure` must answer: the first read-visible binding
    /// with a claimed byte, its failure and memory. Which accesses read is
    /// spelled here, not asked of the crate's `Access::reads`.
    fn read(&mut self, bindings: &[Binding]) -> Option<(u64, u64)> {
        let reads = |b: &&Binding| matches!(b.access, Access::Read | Access::ReadWrite);
        bindings.iter().filter(reads).find_map(|b| {
            let MemoryRef::Id(m) = b.memory else {
                return None;
            };
            let (start, end) = b.range.unwrap_or((0, SIZE));
            let bytes = self.of(b)?;
            let named = bytes.iter().take(end as usize).skip(start as usize);
            named.copied().find(|&f| f != 0).map(|f| (f, m))
        })
    }
}

/// The pool equals the model: each allocation's claims are canonical
/// (sorted, non-empty, disjoint, touching ones labelled differently) and
/// spell its bytes, and each live failure's carrier count is the number of
/// allocations holding it.
fn agrees(p: &StreamPool<Factory>, g: &FailureGraph, model: &Model) -> Result<(), TestCaseError> {
    for stream in LIVE_SLOTS {
        let slot = slot_of(stream).expect("a live slot");
        let memory = p.try_get_ref(stream).expect("made at the start");
        for m in 1..=MEMORIES {
            let set: Vec<_> = memory
                .get(m)
                .expect("allocated")
                .claims
                .iter()
                .copied()
                .collect();
            let mut spelled = vec![0u64; SIZE as usize];
            for pair in set.windows(2) {
                prop_assert!(pair[0].end <= pair[1].start, "sorted and disjoint: {set:?}");
                let same = (pair[0].failure, pair[0].origin) == (pair[1].failure, pair[1].origin);
                prop_assert!(!(pair[0].end == pair[1].start && same), "merged: {set:?}");
            }
            for c in set {
                prop_assert!(c.start < c.end && c.end <= SIZE, "in range: {c:?}");
                let failure = g.failures.get(c.failure);
                prop_assert!(failure.is_some(), "claims a live failure: {c:?}");
                let id = failure.map_or(0, |f| f.id.get());
                spelled[c.start as usize..c.end as usize].fill(id);
            }
            prop_assert_eq!(
                &spelled,
                &model.bytes[&(slot, m)],
                "slot {} memory {}",
                slot,
                m
            );
        }
    }
    let carried = model.carried();
    for (_, f) in g.failures.iter() {
        let n = carried.get(&f.id.get()).copied().unwrap_or(0);
        prop_assert_eq!(f.carriers, n, "carriers of failure {}", f.id);
    }
    for id in carried.keys() {
        prop_assert!(
            g.failures.iter().any(|(_, f)| f.id.get() == *id),
            "carried failure {} is live",
            id
        );
    }
    Ok(())
}

fn live_id(g: &FailureGraph, id: u64) -> Option<FailureId> {
    g.failures.iter().map(|(_, f)| f.id).find(|f| f.get() == id)
}

proptest! {
    #![proptest_config(scale::config(256))]

    #[test]
    fn the_pool_path_gives_what_a_per_byte_model_gives(ops in prop::collection::vec(op(), 1..200)) {
        let mut p = StreamPool::new(Factory::default(), MAX_STREAMS as u8, NUM_SPECIAL).unwrap();
        let mut g = FailureGraph::new();
        let mut model = Model::new();
        for stream in LIVE_SLOTS {
            let memory = p.try_get_ref_mut(stream).map(|_| ());
            prop_assert!(memory.is_none(), "no slot is made before it is asked for");
            let memory = match stream {
                StreamRef::Id(v) => p.get_mut(&id(v)),
                StreamRef::Special(i) => p.get_special(i as u8),
            };
            for m in 1..=MEMORIES {
                memory.alloc(m, SIZE).unwrap();
            }
        }
        for op in &ops {
            match op {
                Op::Taint { error, bindings } => {
                    // SPEC §4: the carried failure of this identity (the
                    // one minted last, where a backend's old id made two),
                    // or a new one.
                    let carried = model.carried();
                    let held = model
                        .alive
                        .iter()
                        .filter(|&(f, e)| e == error && carried.contains_key(f))
                        .map(|(&f, _)| f)
                        .max();
                    let expected = held.unwrap_or_else(|| {
                        model.minted += 1;
                        model.alive.insert(model.minted, *error);
                        model.minted
                    });
                    let (kind, kernel) = ERRORS[*error];
                    let error_info = ErrorInfo::new(kind, kernel, "m");
                    let got = pool::taint(&mut p, error_info, bindings.iter(), &mut g);
                    prop_assert_eq!(got.get(), expected);
                    model.set(bindings, expected);
                    if !model.carried().contains_key(&expected) {
                        prop_assert!(g.failures.key_of(got).is_none(), "pruned at once");
                        model.alive.remove(&expected);
                    }
                }
                Op::TaintWith { pick, bindings, through_stream } => {
                    let Some(&f) = model.alive.keys().nth(pick % model.alive.len().max(1)) else {
                        continue;
                    };
                    let failure = live_id(&g, f);
                    prop_assert!(failure.is_some(), "failure {} is live", f);
                    if *through_stream {
                        for b in bindings {
                            if let Some(memory) = p.try_get_ref_mut(b.stream) {
                                memory.taint(b, failure.unwrap(), &mut g);
                            }
                        }
                    } else {
                        pool::taint_with(&mut p, failure.unwrap(), bindings.iter(), &mut g);
                    }
                    model.set(bindings, f);
                }
                Op::Written { bindings } => {
                    pool::written(&mut p, bindings.iter(), &mut g);
                    model.set(bindings, 0);
                }
                Op::Read { bindings } => {
                    let got = pool::read_failure(&p, bindings.iter(), &g)
                        .map(|hit| (hit.failure.get(), hit.needed));
                    prop_assert_eq!(got, model.read(bindings));
                }
                Op::Reallocate { slot, memory } => {
                    let stream = LIVE_SLOTS[*slot];
                    let allocations = p.try_get_ref_mut(stream).expect("made at the start");
                    allocations.free(*memory, &mut g).unwrap();
                    allocations.alloc(*memory, SIZE).unwrap();
                    let key = (slot_of(stream).expect("a live slot"), *memory);
                    model.bytes.insert(key, vec![0; SIZE as usize]);
                }
                Op::Prune => {
                    g.prune();
                    let carried = model.carried();
                    model.alive.retain(|f, _| carried.contains_key(f));
                    prop_assert_eq!(g.failures.len(), carried.len());
                }
            }
            agrees(&p, &g, &model)?;
            let live: BTreeSet<u64> = g.failures.iter().map(|(_, f)| f.id.get()).collect();
            prop_assert_eq!(&live, &model.alive.keys().copied().collect(), "the failures in the graph");
        }
        prop_assert_eq!(g.failures.minted(), model.minted);
    }
}
