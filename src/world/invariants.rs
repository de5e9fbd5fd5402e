//! SPEC.md §10, checked over a whole world: for tests and fuzzing.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashMap;

use super::World;
use crate::components::claim::Origin;
use crate::components::failure::FailureKey;
use crate::components::record::RecordKey;

impl World {
    /// Checks SPEC.md §10's invariants over the whole world: canonical
    /// claims, carrier and reference counts that match what refers to each
    /// entity, failures alive iff carried or pinned and never more of them
    /// than claims plus open pins, records alive iff referenced, chains no
    /// longer than `chain_limit`. O(everything): for tests and fuzzing.
    /// Returns what is broken.
    pub fn check_invariants(&self) -> Result<(), String> {
        let g = &self.graph;
        let mut carriers: HashMap<FailureKey, u64> = HashMap::default();
        let mut pins: HashMap<FailureKey, u64> = HashMap::default();
        let mut refs: HashMap<RecordKey, u64> = HashMap::default();
        let mut all_claims = 0u64;
        for (_, a) in self.allocs.iter() {
            let claims = a.claims.as_slice();
            all_claims += claims.len() as u64;
            let mut carried: Vec<FailureKey> = Vec::new();
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
                if !carried.contains(&c.failure) {
                    carried.push(c.failure);
                }
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
            for f in carried {
                *carriers.entry(f).or_default() += 1;
            }
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
}
