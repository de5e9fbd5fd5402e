//! `resolve_owner`: bindings to the allocations that own them.

use alloc::vec::Vec;

use crate::components::allocation::Allocations;
use crate::components::binding::{Access, Binding, MemoryRef, Resolved};
use crate::components::stream::Streams;
use crate::error::Error;

/// Resolves a batch of bindings into compact rows, appended to `rows` in
/// order, and returns how many bindings were unresolved.
///
/// A binding resolves when its memory names a live allocation made on the
/// slot its stream folds onto (an allocation exists only on an initialized
/// slot, so that check is implied, and resolving never initializes one).
/// Unresolved bindings are not this world's to answer for: they get no row
/// and are only counted — or, with `strict`, rejected. `dead` bindings are
/// resolved and range-checked but get no row either: no later system looks
/// at them.
///
/// Bad input (a reversed range on any binding, a range past the end of a
/// resolved one, an out-of-range special stream, an unresolved binding when
/// strict) truncates `rows` back to its length on entry and returns the
/// error, so the caller's state is exactly as before.
///
/// Cost: per binding one slot fold and one slot-map look-up by key, or one
/// hash probe by memory id; no heap allocation once `rows` has grown to the
/// batch's size.
pub fn resolve_owner(
    bindings: &[Binding],
    streams: &Streams,
    allocs: &Allocations,
    strict: bool,
    rows: &mut Vec<Resolved>,
) -> Result<u64, Error> {
    let mark = rows.len();
    let mut unresolved = 0u64;
    for binding in bindings {
        match resolve_one(binding, streams, allocs, strict) {
            Ok(Some(row)) => {
                if row.access != Access::Dead {
                    rows.push(row);
                }
            }
            Ok(None) => unresolved += 1,
            Err(error) => {
                rows.truncate(mark);
                return Err(error);
            }
        }
    }
    Ok(unresolved)
}

/// One binding: `Ok(None)` when it does not resolve.
#[inline]
pub(crate) fn resolve_one(
    binding: &Binding,
    streams: &Streams,
    allocs: &Allocations,
    strict: bool,
) -> Result<Option<Resolved>, Error> {
    let slot = streams.slot_of(binding.stream)?;
    let found = match binding.memory {
        MemoryRef::Key(key) => allocs.get(key).map(|a| (key, a)),
        MemoryRef::Id(memory) => allocs
            .key_of(memory)
            .and_then(|key| allocs.get(key).map(|a| (key, a))),
    };
    let named = match (binding.memory, found) {
        (_, Some((_, a))) => a.memory,
        (MemoryRef::Id(memory), None) => memory,
        (MemoryRef::Key(_), None) => 0,
    };
    if let Some((start, end)) = binding.range {
        if end < start {
            return Err(Error::RangeReversed {
                memory: named,
                start,
                end,
            });
        }
    }
    let (key, allocation) = match found {
        Some((key, a)) if a.slot == slot => (key, a),
        _ if strict => {
            return Err(Error::Unresolved {
                memory: named,
                slot,
            });
        }
        _ => return Ok(None),
    };
    let (start, end) = binding.range.unwrap_or((0, allocation.size));
    if end > allocation.size {
        return Err(Error::RangePastEnd {
            memory: allocation.memory,
            start,
            end,
            size: allocation.size,
        });
    }
    Ok(Some(Resolved {
        alloc: key,
        start,
        end,
        access: binding.access,
    }))
}
