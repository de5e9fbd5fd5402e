//! SPEC.md §10, checked over a whole world: for tests and fuzzing.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashMap;

use super::World;
use crate::components::claim::{COUNTED_ABOVE, Claim, FLAT_AT, Origin, TREE_ABOVE, UNCOUNTED_AT};
use crate::components::failure::FailureKey;
use crate::components::record::RecordKey;

impl World {
    /// Checks SPEC.md §10's invariants over the whole world: canonical
    /// claims, carrier and reference counts that match what refers to each
    /// entity, failures alive iff carried or pinned and never more of them
    /// than claims plus open pins, records alive iff referenced, chains no
    /// longer than `chain_limit`, kernel names alive iff a record names
    /// them or they are registered; and the stores' own agreements (the
    /// failures' identity and id indexes, the kernel names' index, each
    /// allocation's footprint, row and index entry; a freed allocation's
    /// row left with no claim and no heap memory; the open profiles' count
    /// of clean ones, and the failure kept once for the profiles that saw
    /// it first, with their number). O(everything): for
    /// tests and fuzzing. Returns what is broken.
    ///
    /// # Errors
    ///
    /// A `String` naming the first broken invariant it finds (the entity
    /// and what is wrong with it), not an [`Error`](crate::Error): no input
    /// should ever break one (SPEC §10), so an `Err` here is a bug in the
    /// world. It only looks: the world is unchanged.
    pub fn check_invariants(&self) -> Result<(), String> {
        let g = &self.graph;
        let mut carriers: HashMap<FailureKey, u64> = HashMap::default();
        let mut pins: HashMap<FailureKey, u64> = HashMap::default();
        let mut refs: HashMap<RecordKey, u64> = HashMap::default();
        let mut all_claims = 0u64;
        let mut rows = 0usize;
        for (key, a) in self.allocs.iter() {
            let claims: Vec<Claim> = a.claims.iter().copied().collect();
            all_claims += claims.len() as u64;
            // How many claims carry each failure: each failure it names
            // has this allocation as one carrier.
            let mut per_failure: HashMap<FailureKey, usize> = HashMap::default();
            for (i, c) in claims.iter().enumerate() {
                if c.start >= c.end {
                    return Err(format!(
                        "memory {}: empty claim [{}, {})",
                        a.memory, c.start, c.end
                    ));
                }
                if c.end > a.size {
                    return Err(format!("memory {}: claim past the end", a.memory));
                }
                if i > 0 {
                    let p = &claims[i - 1];
                    if p.end > c.start {
                        return Err(format!(
                            "memory {}: claims overlap or are unsorted",
                            a.memory
                        ));
                    }
                    if p.end == c.start && p.failure == c.failure && p.origin == c.origin {
                        return Err(format!(
                            "memory {}: same-label claims touch at {}",
                            a.memory, c.start
                        ));
                    }
                }
                if g.failures.get(c.failure).is_none() {
                    return Err(format!("memory {}: claim of a dead failure", a.memory));
                }
                *per_failure.entry(c.failure).or_default() += 1;
                if let Origin::Skip(r) = c.origin {
                    match g.records.get(r) {
                        Some(rec) if rec.failure == c.failure => {}
                        Some(_) => {
                            return Err(format!(
                                "memory {}: claim's record is of another failure",
                                a.memory
                            ));
                        }
                        None => return Err(format!("memory {}: claim of a dead record", a.memory)),
                    }
                    *refs.entry(r).or_default() += 1;
                }
            }
            if let Some(u) = a.unbacked {
                let whole = claims.len() == 1
                    && claims[0].failure == u
                    && claims[0].start == 0
                    && claims[0].end == a.size;
                if a.size > 0 && !whole {
                    return Err(format!(
                        "memory {}: unbacked allocation not wholly claimed",
                        a.memory
                    ));
                }
            }
            for &f in per_failure.keys() {
                *carriers.entry(f).or_default() += 1;
            }
            // A large set's count of its claims per failure is theirs.
            match a.claims.counts() {
                Some(counts) if *counts != per_failure || claims.len() <= UNCOUNTED_AT => {
                    return Err(format!(
                        "memory {}: the claim set's count per failure is not its claims'",
                        a.memory
                    ));
                }
                None if claims.len() > COUNTED_ABOVE => {
                    return Err(format!(
                        "memory {}: {} claims and no count per failure",
                        a.memory,
                        claims.len()
                    ));
                }
                _ => {}
            }
            // In the tree only while it has more than FLAT_AT claims, and
            // in the vector only while it has at most TREE_ABOVE.
            let in_tree = a.claims.in_tree();
            if in_tree && !a.claims.vector_is_empty() {
                return Err(format!(
                    "memory {}: claims in the vector beside the tree",
                    a.memory
                ));
            }
            if (in_tree && claims.len() <= FLAT_AT) || (!in_tree && claims.len() > TREE_ABOVE) {
                return Err(format!(
                    "memory {}: {} claims {} a tree",
                    a.memory,
                    claims.len(),
                    if in_tree { "in" } else { "not in" }
                ));
            }
            if !a.claims.dead_slots_agree() {
                return Err(format!(
                    "memory {}: the claim set's dead slots are not as it counts them",
                    a.memory
                ));
            }
            // The row, its footprint and the memory-id index agree.
            rows += 1;
            let agrees = self.allocs.footprint(key).is_some_and(|f| {
                f.size == a.size && f.slot == a.slot as u32 && f.claimed != claims.is_empty()
            });
            if !agrees {
                return Err(format!("memory {}: footprint and row disagree", a.memory));
            }
            if self.allocs.key_of(a.memory) != Some(key) {
                return Err(format!("memory {}: the index names another key", a.memory));
            }
        }
        if rows != self.allocs.len() {
            return Err(format!(
                "{} footprints but {rows} allocation rows",
                self.allocs.len()
            ));
        }
        if !self.allocs.freed_rows_are_empty() {
            return Err("a freed allocation's row still holds claims or heap memory".into());
        }
        if self.allocs.indexed() != rows {
            return Err(format!(
                "{} memory ids indexed for {rows} allocations",
                self.allocs.indexed()
            ));
        }
        for window in self.windows.values() {
            if let Some(doom) = window.doom {
                *pins.entry(doom.failure).or_default() += 1;
                if let Some(r) = doom.record {
                    *refs.entry(r).or_default() += 1;
                }
            }
        }
        for (_, r) in g.records.iter() {
            if let Some(c) = r.cause {
                *refs.entry(c).or_default() += 1;
                let Some(cause) = g.records.get(c) else {
                    return Err(format!("record of launch {}: dead cause", r.launch));
                };
                if cause.depth + 1 != r.depth {
                    return Err(format!(
                        "record of launch {}: depth {} after {}",
                        r.launch, r.depth, cause.depth
                    ));
                }
            } else if r.depth != 1 {
                return Err(format!(
                    "record of launch {}: rootless depth {}",
                    r.launch, r.depth
                ));
            }
            if r.depth > self.config.chain_limit {
                return Err(format!(
                    "record of launch {}: depth past chain_limit",
                    r.launch
                ));
            }
        }
        for (key, r) in g.records.iter() {
            let expected = refs.get(&key).copied().unwrap_or(0);
            if r.refs() != expected {
                return Err(format!(
                    "record of launch {}: {} refs counted, {} real",
                    r.launch,
                    r.refs(),
                    expected
                ));
            }
            if expected == 0 {
                return Err(format!(
                    "record of launch {}: alive with nothing referring to it",
                    r.launch
                ));
            }
        }
        g.records.check_kernels()?;
        g.failures.check_index()?;
        self.check_profiles()?;
        let open_pins: u64 = pins.values().sum();
        let live = g.failures.len() as u64;
        if live > all_claims + open_pins {
            return Err(format!(
                "{live} live failures, more than {all_claims} claims and {open_pins} open pins"
            ));
        }
        for (key, f) in g.failures.iter() {
            let c = carriers.get(&key).copied().unwrap_or(0);
            let p = pins.get(&key).copied().unwrap_or(0);
            if f.carriers != c || f.pins != p {
                return Err(format!(
                    "failure {}: counts {}/{} vs real {}/{}",
                    f.id, f.carriers, f.pins, c, p
                ));
            }
            if c == 0 && p == 0 {
                return Err(format!("failure {}: alive with nothing holding it", f.id));
            }
        }
        Ok(())
    }

    /// The open profiles' bookkeeping: the clean ones (begun in the current
    /// epoch) counted, and each ended epoch that open profiles began in
    /// keeping its failure once, with the number of them open — no more, no
    /// fewer, and nothing kept for an epoch no open profile began in.
    /// Epochs are looked at in order, not in their maps' (which each map's
    /// hash seed decides, anew in every run), so that of several broken
    /// epochs the same one is named every time.
    fn check_profiles(&self) -> Result<(), String> {
        let mut clean = 0usize;
        let mut open: BTreeMap<u64, usize> = BTreeMap::new();
        for &epoch in self.profiles.values() {
            if epoch == self.profile_epoch {
                clean += 1;
            } else {
                *open.entry(epoch).or_default() += 1;
            }
        }
        if clean != self.clean_profiles {
            return Err(format!(
                "{} clean profiles counted, {clean} real",
                self.clean_profiles
            ));
        }
        let mut kept: Vec<_> = self.profile_failures.iter().collect();
        kept.sort_unstable_by_key(|&(epoch, _)| *epoch);
        for (&epoch, seen) in kept {
            if epoch >= self.profile_epoch {
                return Err(format!(
                    "profile epoch {epoch}: a failure kept before the epoch ended"
                ));
            }
            let real = open.get(&epoch).copied().unwrap_or(0);
            if real == 0 {
                // Its count may agree (none), but nothing will let it go.
                return Err(format!(
                    "profile epoch {epoch}: a failure kept for no open profile"
                ));
            }
            if seen.open != real {
                return Err(format!(
                    "profile epoch {epoch}: {} open profiles counted, {real} real",
                    seen.open
                ));
            }
        }
        if let Some(epoch) = open
            .keys()
            .find(|epoch| !self.profile_failures.contains_key(*epoch))
        {
            return Err(format!(
                "profile epoch {epoch}: no failure kept for its open profiles"
            ));
        }
        Ok(())
    }
}

/// The check itself, held to its word: each test breaks one thing in a
/// sound world by hand — past every rule the stores keep — and the check
/// must name it. A check that passed every world would pass every fuzz run
/// and property test too, so these are what make those runs mean anything.
#[cfg(test)]
mod tests {
    use alloc::string::String;

    use super::World;
    use crate::components::allocation::AllocKey;
    use crate::components::claim::{COUNTED_ABOVE, Claim, Origin, TREE_ABOVE};
    use crate::components::failure::FailureKey;
    use crate::components::record::RecordKey;
    use crate::{Access, Binding, Launch, Outcome};

    /// Memory 1, 2 and 3 (256 bytes each) hold a failure and a chain of two
    /// skips: `fill` failed writing memory 1; `gelu` read it and was
    /// skipped, tainting memory 2 (launch 1); `tanh` read memory 2 and was
    /// skipped, tainting memory 3 (launch 2). Memory 4 is clean. Sound:
    /// checked before it is handed out.
    fn chained() -> World {
        let mut w = World::default();
        for memory in 1..=4 {
            w.alloc(0, memory, 256).expect("a new memory id");
        }
        let failed = Outcome::Failed {
            kind: "compile",
            message: "bad PTX",
        };
        launch(&mut w, "fill", &[(1, Access::Write)], failed);
        launch(
            &mut w,
            "gelu",
            &[(1, Access::Read), (2, Access::Write)],
            Outcome::Ok,
        );
        launch(
            &mut w,
            "tanh",
            &[(2, Access::Read), (3, Access::Write)],
            Outcome::Ok,
        );
        assert_eq!(w.check_invariants(), Ok(()));
        w
    }

    fn launch(w: &mut World, kernel: &str, buffers: &[(u64, Access)], outcome: Outcome<'_>) {
        let bindings: alloc::vec::Vec<_> = buffers
            .iter()
            .map(|&(memory, access)| Binding::whole(0, memory, access))
            .collect();
        w.launch(&Launch {
            kernel,
            stream: 0.into(),
            bindings: &bindings,
            outcome,
        })
        .expect("a good launch");
    }

    fn key(w: &World, memory: u64) -> AllocKey {
        w.allocs.key_of(memory).expect("a live memory id")
    }

    /// The world's one failure.
    fn failure(w: &World) -> FailureKey {
        let mut failures = w.graph.failures.iter();
        let (key, _) = failures.next().expect("a failure");
        assert!(failures.next().is_none(), "one failure only");
        key
    }

    /// The record of the skip of launch `launch`.
    fn record(w: &World, launch: u64) -> RecordKey {
        let found = w.graph.records.iter().find(|(_, r)| r.launch == launch);
        found.expect("a record of that launch").0
    }

    /// The claims of `memory`, to break.
    fn claims(w: &mut World, memory: u64) -> &mut smallvec::SmallVec<[Claim; 1]> {
        let key = key(w, memory);
        // The claims are about to be given some: the footprint says so,
        // so that only what a test breaks on purpose is named.
        w.allocs.mark_claimed(key);
        let row = w.allocs.row_mut(key).expect("a live allocation");
        row.claims.raw_mut()
    }

    /// Memory `memory`'s claims become `ranges`, each of the world's one
    /// failure, directly: its carrier count stays right.
    fn root_claims(w: &mut World, memory: u64, ranges: &[(u64, u64)]) {
        let f = failure(w);
        let made = ranges
            .iter()
            .map(|&(start, end)| claim(start, end, f, Origin::Root));
        *claims(w, memory) = made.collect();
    }

    fn claim(start: u64, end: u64, failure: FailureKey, origin: Origin) -> Claim {
        Claim {
            start,
            end,
            failure,
            origin,
        }
    }

    /// The check fails, and its answer names what is broken.
    #[track_caller]
    fn names(w: &World, what: &str) {
        let answer: Result<(), String> = w.check_invariants();
        match answer {
            Err(e) => assert!(e.contains(what), "{e:?} does not say {what:?}"),
            Ok(()) => panic!("the broken world passed; expected {what:?}"),
        }
    }

    /// Memory 9 holds `n` one-byte claims two bytes apart, each of its own
    /// failure, so that none fuse: a counted set past `COUNTED_ABOVE`, in
    /// its tree past `TREE_ABOVE`. Sound: checked before it is handed out.
    fn many_claims(n: u64) -> World {
        let mut w = World::default();
        w.alloc(0, 9, 2 * n).expect("a new memory id");
        for i in 0..n {
            let kind = alloc::format!("kind {i}");
            let write = [Binding::range(0, 9, 2 * i, 2 * i + 1, Access::Write)];
            let failed = Outcome::Failed {
                kind: &kind,
                message: "bad PTX",
            };
            w.launch(&Launch {
                kernel: "fill",
                stream: 0.into(),
                bindings: &write,
                outcome: failed,
            })
            .expect("a good launch");
        }
        assert_eq!(w.stats().claims, n);
        assert_eq!(w.check_invariants(), Ok(()));
        w
    }

    /// Any failure of the world.
    /// Puts one more claim on memory 9 of [`many_claims`]`(n)`, by hand:
    /// `[2n - 1, 2n)`, of its first claim's failure, so that it touches
    /// only the last claim (`[2n - 2, 2n - 1)`, of another failure).
    /// Returns that failure.
    fn claim_past_the_last(w: &mut World, n: u64) -> FailureKey {
        let vector = claims(w, 9);
        let first = vector[0].failure;
        vector.push(claim(2 * n - 1, 2 * n, first, Origin::Root));
        first
    }

    fn some_failure(w: &World) -> FailureKey {
        w.graph.failures.iter().next().expect("a failure").0
    }

    #[test]
    fn an_empty_claim_is_named_with_its_range() {
        let mut w = chained();
        claims(&mut w, 1)[0].end = 0;
        names(&w, "memory 1: empty claim [0, 0)");
    }

    #[test]
    fn a_claim_past_its_allocations_end_is_named() {
        let mut w = chained();
        claims(&mut w, 1)[0].end = 257;
        names(&w, "memory 1: claim past the end");
    }

    #[test]
    fn overlapping_or_unsorted_claims_are_named() {
        for ranges in [[(0, 129), (128, 256)], [(128, 256), (0, 64)]] {
            let mut w = chained();
            root_claims(&mut w, 1, &ranges);
            names(&w, "memory 1: claims overlap or are unsorted");
        }
    }

    #[test]
    fn two_touching_claims_of_one_failure_and_origin_are_named() {
        let mut w = chained();
        root_claims(&mut w, 1, &[(0, 128), (128, 256)]);
        names(&w, "memory 1: same-label claims touch at 128");
    }

    /// The other side of the rule above: touching claims are canonical when
    /// their labels differ in failure or in origin alone.
    #[test]
    fn touching_claims_of_different_labels_pass() {
        let mut w = chained();
        let (f, r1) = (failure(&w), record(&w, 1));
        // One origin differs: the record gains the claim's reference.
        *claims(&mut w, 1) = [
            claim(0, 128, f, Origin::Root),
            claim(128, 256, f, Origin::Skip(r1)),
        ]
        .into_iter()
        .collect();
        w.graph.records.add_ref(r1);
        assert_eq!(w.check_invariants(), Ok(()));
        // The failure differs too: a second failure, carried by memory 4.
        let other = w.graph.failures.find_or_mint("launch", "other", "rejected");
        w.graph.failures.gain_carrier(other);
        *claims(&mut w, 4) = [
            claim(0, 128, f, Origin::Root),
            claim(128, 256, other, Origin::Root),
        ]
        .into_iter()
        .collect();
        w.graph.failures.gain_carrier(f);
        assert_eq!(w.check_invariants(), Ok(()));
    }

    #[test]
    fn claims_in_the_vector_beside_the_tree_are_named() {
        let mut w = many_claims(TREE_ABOVE as u64 + 1);
        let f = some_failure(&w);
        // The set is in its tree, its vector empty: a claim put there
        // would be missed by every read.
        assert!(claims(&mut w, 9).is_empty());
        claims(&mut w, 9).push(claim(1, 2, f, Origin::Root));
        names(&w, "memory 9: claims in the vector beside the tree");
    }

    /// The set's count per failure is held to its claims: one claim
    /// given another failure's label leaves the count behind.
    #[test]
    fn a_count_per_failure_that_is_not_the_claims_is_named() {
        let mut w = many_claims(COUNTED_ABOVE as u64 + 1);
        let vector = claims(&mut w, 9);
        vector[0].failure = vector[1].failure;
        names(
            &w,
            "memory 9: the claim set's count per failure is not its claims'",
        );
    }

    /// A set of `COUNTED_ABOVE` claims is sound without a count; one more
    /// claim and it must have one.
    #[test]
    fn a_set_past_counted_above_without_a_count_is_named() {
        let n = COUNTED_ABOVE as u64;
        let mut w = many_claims(n);
        let key = key(&w, 9);
        assert!(w.allocs.get(key).expect("live").claims.counts().is_none());
        claim_past_the_last(&mut w, n);
        names(
            &w,
            &alloc::format!("memory 9: {} claims and no count per failure", n + 1),
        );
    }

    /// A set of `TREE_ABOVE` claims is sound in its vector; one more claim,
    /// counted as the rules want, and it must be in its tree.
    #[test]
    fn a_set_past_tree_above_left_in_its_vector_is_named() {
        let n = TREE_ABOVE as u64;
        let mut w = many_claims(n);
        let first = claim_past_the_last(&mut w, n);
        let key = key(&w, 9);
        let row = w.allocs.row_mut(key).expect("live");
        let counts = row.claims.raw_counts_mut().expect("a counted set");
        *counts.get_mut(&first).expect("a counted failure") += 1;
        names(
            &w,
            &alloc::format!("memory 9: {} claims not in a tree", n + 1),
        );
    }

    #[test]
    fn a_dead_slot_holding_something_else_is_named() {
        // Counted, and in its vector in every build.
        let mut w = many_claims(COUNTED_ABOVE as u64 + 3);
        // A host write over the second, third and fourth claims: the first,
        // fewer than those after, moves up into the third's place and
        // leaves three dead slots at the front.
        let write = Binding::range(0, 9, 2, 8, Access::Write);
        w.host_write(&write, Outcome::Ok).expect("a good write");
        assert_eq!(w.check_invariants(), Ok(()));
        assert_eq!(w.stats().claims, COUNTED_ABOVE as u64);
        let vector = claims(&mut w, 9);
        assert_eq!(vector.len(), COUNTED_ABOVE + 3, "three dead slots kept");
        // A slot counted dead that holds a claim ending past 0: the binary
        // search would no longer pass over it.
        vector[0].end = 1;
        names(
            &w,
            "memory 9: the claim set's dead slots are not as it counts them",
        );
    }

    /// The footprint mirrors its row: one that says claimed over a clean
    /// row would send launches down the wrong path.
    #[test]
    fn a_footprint_that_disagrees_with_its_row_is_named() {
        let mut w = chained();
        let clean = key(&w, 4);
        w.allocs.mark_claimed(clean);
        names(&w, "memory 4: footprint and row disagree");
    }

    /// The memory-id index finds each live allocation's own key: one that
    /// gave another would send a binding of that id to other bytes.
    #[test]
    fn a_memory_id_indexed_under_another_key_is_named() {
        let mut w = chained();
        let other = key(&w, 3);
        *w.allocs.indexed_key_mut(4).expect("indexed") = other;
        names(&w, "memory 4: the index names another key");
    }

    /// Every footprint has its row: a footprint alone would be an
    /// allocation a launch finds and the check never looks at.
    #[test]
    fn a_footprint_without_its_row_is_named() {
        let mut w = chained();
        let last = key(&w, 4);
        w.allocs.drop_rows_from(last);
        names(&w, "4 footprints but 3 allocation rows");
    }

    /// A freed row keeps nothing: claims left in it would count carriers
    /// of failures no live allocation holds.
    #[test]
    fn a_freed_row_holding_a_claim_is_named() {
        let mut w = chained();
        let (clean, f) = (key(&w, 4), failure(&w));
        w.free(4).expect("a live memory id");
        assert_eq!(w.check_invariants(), Ok(()));
        let row = w.allocs.row_at_mut(clean).expect("the freed row is kept");
        row.claims.raw_mut().push(claim(0, 8, f, Origin::Root));
        names(
            &w,
            "a freed allocation's row still holds claims or heap memory",
        );
    }

    /// The index holds the live ids and nothing else: an id indexed for
    /// no allocation of its own would turn an allocation of that id away
    /// and send a binding of it to another allocation's bytes.
    #[test]
    fn a_memory_id_indexed_for_no_allocation_is_named() {
        let mut w = chained();
        let clean = key(&w, 4);
        w.allocs.index_also(99, clean);
        names(&w, "5 memory ids indexed for 4 allocations");
    }

    #[test]
    fn a_claim_of_a_dead_failure_is_named() {
        let mut w = chained();
        claims(&mut w, 4).push(claim(0, 8, FailureKey::default(), Origin::Root));
        names(&w, "memory 4: claim of a dead failure");
    }

    #[test]
    fn a_claim_through_a_record_of_another_failure_is_named() {
        let mut w = chained();
        let other = w.graph.failures.find_or_mint("launch", "other", "rejected");
        claims(&mut w, 2)[0].failure = other;
        names(&w, "memory 2: claim's record is of another failure");
    }

    #[test]
    fn a_claim_through_a_dead_record_is_named() {
        let mut w = chained();
        let f = failure(&w);
        claims(&mut w, 4).push(claim(0, 8, f, Origin::Skip(RecordKey::default())));
        names(&w, "memory 4: claim of a dead record");
    }

    /// An unbacked allocation holds exactly one claim, of its own failure,
    /// over every byte: each way of falling short of that is named.
    #[test]
    fn an_unbacked_allocation_not_wholly_claimed_by_its_failure_is_named() {
        let breaks: [fn(&mut Claim, FailureKey); 3] = [
            |c, _| c.start = 1,
            |c, _| c.end = 255,
            |c, other| c.failure = other,
        ];
        for (i, break_it) in breaks.into_iter().enumerate() {
            let mut w = chained();
            let other = failure(&w);
            w.alloc_failed(0, 5, 256, "out_of_memory", "cudaMalloc failed")
                .expect("a new memory id");
            // Zero bytes unbacked carry nothing, and that is whole.
            w.alloc_failed(0, 6, 0, "out_of_memory", "cudaMalloc failed")
                .expect("a new memory id");
            assert_eq!(w.check_invariants(), Ok(()), "case {i}");
            break_it(&mut claims(&mut w, 5)[0], other);
            names(&w, "memory 5: unbacked allocation not wholly claimed");
        }
        // And one with no claim at all.
        let mut w = chained();
        let f = failure(&w);
        let clean = key(&w, 4);
        w.allocs.row_mut(clean).expect("live").unbacked = Some(f);
        names(&w, "memory 4: unbacked allocation not wholly claimed");
    }

    #[test]
    fn a_record_whose_cause_is_dead_is_named() {
        let mut w = chained();
        let r2 = record(&w, 2);
        w.graph.records.get_mut(r2).expect("live").cause = Some(RecordKey::default());
        names(&w, "record of launch 2: dead cause");
    }

    #[test]
    fn a_record_not_one_deeper_than_its_cause_is_named() {
        let mut w = chained();
        let r2 = record(&w, 2);
        w.graph.records.get_mut(r2).expect("live").depth = 3;
        names(&w, "record of launch 2: depth 3 after 1");
    }

    #[test]
    fn a_record_without_a_cause_deeper_than_one_is_named() {
        let mut w = chained();
        let r2 = record(&w, 2);
        // Its cause's count now runs one over, but the depth is found first.
        w.graph.records.get_mut(r2).expect("live").cause = None;
        names(&w, "record of launch 2: rootless depth 2");
    }

    #[test]
    fn a_record_past_the_chain_limit_is_named() {
        let mut w = chained();
        w.config.chain_limit = 1;
        names(&w, "record of launch 2: depth past chain_limit");
        // At the limit is within it.
        w.config.chain_limit = 2;
        assert_eq!(w.check_invariants(), Ok(()));
    }

    #[test]
    fn a_record_with_a_wrong_reference_count_is_named() {
        let mut w = chained();
        // Launch 1's record is named by memory 2's claim and by launch 2's
        // record.
        let r1 = record(&w, 1);
        w.graph.records.add_ref(r1);
        names(&w, "record of launch 1: 3 refs counted, 2 real");
    }

    #[test]
    fn a_kernel_name_with_a_wrong_reference_count_is_named() {
        let mut w = chained();
        let kernel = w.graph.records.get(record(&w, 1)).expect("live").kernel;
        let name = String::from(w.graph.records.kernel_name(kernel));
        w.graph.records.miscount_kernel(kernel);
        // Launch 1's record is the one record of its kernel.
        names(
            &w,
            &alloc::format!("kernel {name:?}: 2 references counted, 1 real"),
        );
    }

    #[test]
    fn a_record_nothing_refers_to_is_named() {
        let mut w = chained();
        let f = failure(&w);
        w.graph
            .records
            .make(9, ("orphan", false), 4, Origin::Root, f, 1024);
        names(&w, "record of launch 9: alive with nothing referring to it");
    }

    #[test]
    fn more_live_failures_than_claims_and_pins_are_named() {
        let mut w = World::default();
        w.graph.failures.find_or_mint("launch", "k", "one");
        w.graph.failures.find_or_mint("launch", "k", "two");
        names(&w, "2 live failures, more than 0 claims and 0 open pins");
    }

    #[test]
    fn a_failure_nothing_holds_is_named() {
        let mut w = chained();
        let other = w.graph.failures.find_or_mint("launch", "other", "rejected");
        let id = w.graph.failures.get(other).expect("live").id;
        names(
            &w,
            &alloc::format!("failure {id}: alive with nothing holding it"),
        );
    }

    #[test]
    fn a_failure_with_a_wrong_carrier_or_pin_count_is_named() {
        let mut w = chained();
        let f = failure(&w);
        let id = w.graph.failures.get(f).expect("live").id;
        w.graph.failures.gain_carrier(f);
        names(&w, &alloc::format!("failure {id}: counts 4/0 vs real 3/0"));
        let mut w = chained();
        w.graph.failures.pin(f);
        names(&w, &alloc::format!("failure {id}: counts 3/1 vs real 3/0"));
    }

    /// A capture window doomed by a skip pins the failure and holds the
    /// skip's record: once every claim is written over, those are all that
    /// keep them, and the check counts them — then names each when it goes
    /// missing.
    #[test]
    fn a_doomed_windows_pin_and_record_are_counted() {
        let doomed = || {
            let mut w = chained();
            w.capture_begin(0).expect("no window open");
            launch(
                &mut w,
                "exp",
                &[(3, Access::Read), (4, Access::Write)],
                Outcome::Ok,
            );
            for memory in 1..=4 {
                w.host_write(&Binding::whole(0, memory, Access::Write), Outcome::Ok)
                    .expect("a good write");
            }
            assert_eq!(w.stats().claims, 0);
            assert_eq!(w.check_invariants(), Ok(()));
            w
        };
        let mut w = doomed();
        let (f, r3) = (failure(&w), record(&w, 3));
        let id = w.graph.failures.get(f).expect("live").id;
        w.graph.failures.pin(f);
        names(&w, &alloc::format!("failure {id}: counts 0/2 vs real 0/1"));
        let mut w = doomed();
        w.graph.records.add_ref(r3);
        names(&w, "record of launch 3: 2 refs counted, 1 real");
    }

    /// Two profiles see failure 1 first and one stays clean: the clean
    /// count and the kept failure's count of open profiles are checked,
    /// and a kept failure with no open profile (whatever its count says),
    /// or missing for open ones, or kept for an epoch not yet ended, is
    /// named.
    #[test]
    fn the_profiles_bookkeeping_is_checked() {
        let profiled = || {
            let mut w = World::default();
            w.alloc(0, 1, 64).expect("a new allocation");
            w.profile_begin(1).expect("not open");
            w.profile_begin(2).expect("not open");
            launch(
                &mut w,
                "fill",
                &[(1, Access::Write)],
                Outcome::Failed {
                    kind: "launch",
                    message: "bad grid",
                },
            );
            w.profile_begin(3).expect("not open");
            assert_eq!(w.check_invariants(), Ok(()));
            w
        };
        let mut w = profiled();
        w.clean_profiles += 1;
        names(&w, "2 clean profiles counted, 1 real");
        let mut w = profiled();
        w.profile_failures.get_mut(&0).expect("epoch 0 ended").open += 1;
        names(&w, "profile epoch 0: 3 open profiles counted, 2 real");
        let mut w = profiled();
        let seen = w.profile_failures.remove(&0).expect("epoch 0 ended");
        names(&w, "profile epoch 0: no failure kept for its open profiles");
        let mut w = profiled();
        w.profile_failures.insert(1, seen.clone());
        names(&w, "profile epoch 1: a failure kept before the epoch ended");
        // Kept with a count of none, for the profiles of epoch 0 all ended
        // (a last `profile_end` that did not let it go), or for an epoch
        // no profile began in (a failure that found no clean profile and
        // ended the epoch anyway): no count disagrees, yet the error is
        // kept for ever.
        let mut w = profiled();
        w.profile_end(1).expect("open");
        w.profile_end(2).expect("open");
        w.profile_failures.insert(0, seen.clone());
        w.profile_failures.get_mut(&0).expect("put back").open = 0;
        names(&w, "profile epoch 0: a failure kept for no open profile");
        let mut w = profiled();
        w.profile_end(3).expect("open");
        w.profile_failures.insert(1, seen);
        w.profile_failures.get_mut(&1).expect("put back").open = 0;
        w.profile_epoch += 1;
        names(&w, "profile epoch 1: a failure kept for no open profile");
        let mut w = profiled();
        w.profile_end(1).expect("open");
        w.profile_end(2).expect("open");
        assert_eq!(w.check_invariants(), Ok(()));
        assert!(w.profile_failures.is_empty(), "let go with the last");
    }

    /// Of several epochs whose bookkeeping is broken, the first is named,
    /// in every world: each world's maps hash with a seed of their own, and
    /// the check looked at the epochs in the maps' order, so it named one
    /// epoch in one world (or run) and another elsewhere.
    #[test]
    fn of_several_broken_profile_epochs_the_first_is_named_whatever_the_hash_seed() {
        let profiled = || {
            let mut w = World::default();
            w.alloc(0, 1, 64).expect("a new allocation");
            // Each profile sees its own epoch's failure first.
            for epoch in 0..8 {
                w.profile_begin(epoch + 1).expect("not open");
                let message = alloc::format!("bad grid {epoch}");
                let outcome = Outcome::Failed {
                    kind: "launch",
                    message: &message,
                };
                launch(&mut w, "fill", &[(1, Access::Write)], outcome);
            }
            assert_eq!(w.check_invariants(), Ok(()));
            w
        };
        for world in 0..50 {
            let mut w = profiled();
            for seen in w.profile_failures.values_mut() {
                seen.open += 1;
            }
            assert_eq!(
                w.check_invariants(),
                Err("profile epoch 0: 2 open profiles counted, 1 real".into()),
                "world {world}"
            );
            let mut w = profiled();
            w.profile_failures.clear();
            assert_eq!(
                w.check_invariants(),
                Err("profile epoch 0: no failure kept for its open profiles".into()),
                "world {world}"
            );
        }
    }
}
