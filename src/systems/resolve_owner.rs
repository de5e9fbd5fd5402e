//! `resolve_owner`: bindings to the allocations that own them.

use alloc::vec::Vec;

use crate::components::allocation::{AllocKey, Allocations, Footprint};
use crate::components::binding::{Access, Binding, MemoryRef, Resolved, Stamp};
use crate::components::stream::{StreamRef, Streams, fold};
use crate::error::Error;

/// Resolves a batch of bindings into compact rows, appended to `rows` in
/// order, and returns how many bindings were unresolved and whether any
/// resolved one was claimed.
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
#[inline(always)]
pub fn resolve_owner(
    bindings: &[Binding],
    streams: &Streams,
    allocs: &Allocations,
    strict: bool,
    rows: &mut Vec<Resolved>,
) -> Result<Resolution, Error> {
    let mark = rows.len();
    rows.reserve(bindings.len());
    let max_streams = common_slots(streams);
    let mut resolution = Resolution::default();
    for binding in bindings {
        if let Some((key, footprint)) = common(binding, allocs, max_streams) {
            if let Some(row) = row_of(binding, key, footprint.size) {
                resolution.claimed |= footprint.claimed;
                rows.push(row);
            }
            continue;
        }
        match resolve_rare(binding, streams, allocs, strict, |row| rows.push(row)) {
            Ok(r) => {
                resolution.unresolved += r.unresolved;
                resolution.claimed |= r.claimed;
            }
            Err(error) => {
                rows.truncate(mark);
                return Err(error);
            }
        }
    }
    Ok(resolution)
}

/// [`resolve_each`] for one binding that is not of the common shape: the
/// way [`resolve_owner`] and [`count_unresolved`] take, out of line.
#[inline(never)]
fn resolve_rare(
    binding: &Binding,
    streams: &Streams,
    allocs: &Allocations,
    strict: bool,
    emit: impl FnMut(Resolved),
) -> Result<Resolution, Error> {
    resolve_each(
        core::slice::from_ref(binding),
        streams,
        allocs,
        strict,
        emit,
    )
}

/// [`resolve_owner`] handing each row to `emit` instead of a buffer: with
/// an `emit` that keeps nothing, it is the check that a batch of bindings
/// is good input and the question whether any of them is claimed, at the
/// cost of the look-ups alone.
#[inline]
pub fn resolve_each(
    bindings: &[Binding],
    streams: &Streams,
    allocs: &Allocations,
    strict: bool,
    mut emit: impl FnMut(Resolved),
) -> Result<Resolution, Error> {
    let max_streams = streams.max_streams();
    let wide = streams.wide();
    let mut unresolved = 0u64;
    let mut claimed = false;
    for binding in bindings {
        let slot = match binding.stream {
            StreamRef::Id(id) => fold(id, max_streams),
            special => streams.slot_of(special)?,
        };
        let key = match binding.memory {
            MemoryRef::Key(key) => Some(key),
            MemoryRef::Id(memory) => allocs.key_of(memory),
        };
        let found = key.and_then(|key| allocs.footprint(key).map(|f| (key, *f)));
        if let Some((key, footprint)) = found
            && footprint.slot == slot as u32
            && (!wide || allocs.get(key).is_some_and(|a| a.slot == slot))
        {
            if binding
                .range
                .is_some_and(|(start, end)| start > end || end > footprint.size)
            {
                return Err(bad_range(binding, allocs, found));
            }
            if let Some(row) = row_of(binding, key, footprint.size) {
                claimed |= footprint.claimed;
                emit(row);
            }
            continue;
        }
        if binding.range.is_some_and(|(start, end)| end < start) {
            return Err(bad_range(binding, allocs, found));
        }
        if strict {
            return Err(unresolved_error(binding, allocs, found, slot));
        }
        unresolved += 1;
    }
    Ok(Resolution {
        unresolved,
        claimed,
    })
}

/// How many of `bindings` are unresolved, or the error that makes them bad
/// input: [`resolve_each`] with nothing kept, for a world where no byte is
/// claimed (so there is nothing to find but bad input and unresolved
/// bindings).
///
/// The common binding — a regular stream id that is already a slot, an
/// [`AllocKey`], a live allocation on that slot, a range inside it — costs
/// one slot-map look-up and about thirty instructions; any other goes
/// through [`resolve_each`], out of line.
#[inline(always)]
pub fn count_unresolved(
    bindings: &[Binding],
    streams: &Streams,
    allocs: &Allocations,
    strict: bool,
) -> Result<u64, Error> {
    let max_streams = common_slots(streams);
    let mut unresolved = 0u64;
    for binding in bindings {
        if common(binding, allocs, max_streams).is_some() {
            continue;
        }
        unresolved += resolve_rare(binding, streams, allocs, strict, |_| {})?.unresolved;
    }
    Ok(unresolved)
}

/// Whether every binding is of the common shape (see [`count_unresolved`]):
/// then all of them resolve and are good input, with nothing to count.
/// With `unclaimed`, also none that a later system looks at (any but a
/// dead one) names a claimed allocation: then a launch that does not fail
/// reads clean bytes and has nothing to release, in any world. Stops at the
/// first binding that is not so, leaving it to [`resolve_owner`].
#[inline(always)]
pub(crate) fn all_common(
    bindings: &[Binding],
    streams: &Streams,
    allocs: &Allocations,
    unclaimed: bool,
) -> bool {
    let max_streams = common_slots(streams);
    bindings.iter().all(|binding| {
        common(binding, allocs, max_streams)
            .is_some_and(|(_, f)| !unclaimed || !f.claimed || binding.access == Access::Dead)
    })
}

/// [`resolve_owner`] for bindings that are all of the common shape: their
/// rows appended to `rows`, or `false` at the first that is not — with
/// `rows` holding whatever came before it, for the caller to drop — so
/// that the rare shapes, the errors and the counting are left to
/// [`resolve_owner`]. One look-up a binding and no bookkeeping: the loop
/// a batch of plain launches needs.
///
/// A dead binding gets its row too, with its access: every system passes
/// over a dead row, as over a caller's pre-resolved one, and a row for
/// every binding lets the caller find a launch's rows from its bindings'
/// count alone, without keeping where each launch's rows end.
#[inline(always)]
pub(crate) fn resolve_common(
    bindings: &[Binding],
    streams: &Streams,
    allocs: &Allocations,
    rows: &mut Vec<Resolved>,
) -> bool {
    let max_streams = common_slots(streams);
    for binding in bindings {
        let Some((key, footprint)) = common(binding, allocs, max_streams) else {
            return false;
        };
        rows.push(row_with_dead(binding, key, footprint.size));
    }
    true
}

/// The row of a binding resolved to allocation `key` of `size` bytes: its
/// range (checked by the caller), or the whole allocation when it names
/// none. `None` for a dead binding, which no later system looks at.
#[inline(always)]
fn row_of(binding: &Binding, key: AllocKey, size: u64) -> Option<Resolved> {
    (binding.access != Access::Dead).then(|| row_with_dead(binding, key, size))
}

/// [`row_of`], a dead binding's row included.
#[inline(always)]
fn row_with_dead(binding: &Binding, key: AllocKey, size: u64) -> Resolved {
    let (start, end) = binding.range.unwrap_or((0, size));
    Resolved {
        alloc: key,
        start,
        end,
        access: binding.access,
        made_by: Stamp::NONE,
        epoch: 0,
    }
}

/// The slots a common binding's stream id may name: every regular one, or
/// none past 2^32 slots, where a footprint's slot is not the whole slot.
#[inline(always)]
fn common_slots(streams: &Streams) -> u64 {
    if streams.wide() {
        0
    } else {
        streams.max_streams()
    }
}

/// A binding of the common shape — a regular stream id that is already a
/// slot, a key, a live allocation made on that slot, a range inside it —
/// as its key and footprint; `None` for any other binding, which
/// [`resolve_each`] answers (bad input included).
#[inline(always)]
fn common<'a>(
    binding: &Binding,
    allocs: &'a Allocations,
    max_streams: u64,
) -> Option<(AllocKey, &'a Footprint)> {
    if let StreamRef::Id(slot) = binding.stream
        && let MemoryRef::Key(key) = binding.memory
        && let Some(footprint) = allocs.footprint(key)
        && slot < max_streams
        && u64::from(footprint.slot) == slot
    {
        match binding.range {
            None => return Some((key, footprint)),
            Some((start, end)) if start <= end && end <= footprint.size => {
                return Some((key, footprint));
            }
            Some(_) => {}
        }
    }
    None
}

/// Checks pre-resolved rows as [`resolve_owner`] checks bindings: a row
/// whose key is stale is unresolved (counted; with `strict`, rejected as
/// [`Error::UnknownKey`]); a reversed range, or a live row's range running
/// past its allocation's end, is bad input. Nothing is copied: the systems
/// read the caller's rows, passing over stale ones as they pass over any
/// key that names nothing.
///
/// Cost: per row one slot-map look-up and two compares.
#[inline]
pub fn check_rows(
    rows: &[Resolved],
    allocs: &Allocations,
    strict: bool,
) -> Result<Resolution, Error> {
    let mut claimed = false;
    for (i, row) in rows.iter().enumerate() {
        match good(row, allocs) {
            Some(footprint) => claimed |= footprint.claimed & (row.access != Access::Dead),
            None => return check_rows_from(rows, i, claimed, allocs, strict),
        }
    }
    Ok(Resolution {
        unresolved: 0,
        claimed,
    })
}

/// [`check_rows`] from the first row that is not good, `rows[first]`, on:
/// the rows before it were good, `claimed` says whether any of them was.
/// Out of line, so that the common loop keeps no count and no error.
#[inline(never)]
pub(crate) fn check_rows_from(
    rows: &[Resolved],
    first: usize,
    claimed: bool,
    allocs: &Allocations,
    strict: bool,
) -> Result<Resolution, Error> {
    let mut resolution = Resolution {
        unresolved: 0,
        claimed,
    };
    for row in rows.get(first..).unwrap_or_default() {
        if let Some(footprint) = good(row, allocs) {
            resolution.claimed |= footprint.claimed & (row.access != Access::Dead);
            continue;
        }
        resolution.unresolved += check_row(row, allocs, strict)?;
    }
    Ok(resolution)
}

/// Whether every row is good ([`check_rows`]'s common case): then they are
/// good input with nothing to count. A row `stamp` finds fresh is good
/// without a look-up. With `unclaimed`, also none but a dead one names a
/// claimed allocation (see [`all_common`]), which every row's footprint
/// says.
#[inline]
pub(crate) fn all_good(
    rows: &[Resolved],
    allocs: &Allocations,
    stamp: &Stamp,
    unclaimed: bool,
) -> bool {
    rows.iter().all(|row| {
        (!unclaimed && stamp.fresh(row))
            || good(row, allocs)
                .is_some_and(|f| !unclaimed || !f.claimed || row.access == Access::Dead)
    })
}

/// Whether every row is good input, all that a world where nothing is
/// claimed asks: fresh ([`Stamp::fresh`]: nothing freed since this world
/// made it), or its key live and its range inside — known for a row this
/// world made (`stamp` vouches for it: its range was checked when it was
/// made; see [`Resolved`]), compared for any other. A stale row, or one
/// past its allocation's end, fails here and goes to [`check_rows`], which
/// counts it or names the error.
///
/// Cost: per row one compare of stamp and epoch where the row is fresh;
/// else also one slot-map version compare, and for a row this world did
/// not make (another world's, or its own from before a redraw of its
/// stamp) two range compares — in line, so that a redraw every
/// [`FREES_PER_STAMP`](crate::components::binding::FREES_PER_STAMP)
/// frees costs the rows a scheduler keeps two compares each, not the
/// general path.
#[inline]
pub(crate) fn all_live(rows: &[Resolved], allocs: &Allocations, stamp: &Stamp) -> bool {
    rows.iter().all(|row| {
        stamp.fresh(row)
            || allocs.footprint(row.alloc).is_some_and(|f| {
                stamp.vouches_for(row) || (row.start <= row.end && row.end <= f.size)
            })
    })
}

/// The footprint of a good row — live key, range inside the allocation —
/// or `None` for any other, which [`check_row`] answers.
#[inline(always)]
fn good<'a>(row: &Resolved, allocs: &'a Allocations) -> Option<&'a Footprint> {
    allocs
        .footprint(row.alloc)
        .filter(|f| row.start <= row.end && row.end <= f.size)
}

/// [`check_rows`] past its common case: 1 for a stale key, or the error.
#[inline(never)]
fn check_row(row: &Resolved, allocs: &Allocations, strict: bool) -> Result<u64, Error> {
    let (start, end) = (row.start, row.end);
    let live = allocs.get(row.alloc).map(|a| a.memory);
    let memory = live.unwrap_or(0);
    match allocs.footprint(row.alloc) {
        _ if end < start => Err(match live {
            Some(memory) => Error::RangeReversed { memory, start, end },
            None => Error::KeyRangeReversed {
                key: row.alloc,
                start,
                end,
            },
        }),
        Some(footprint) if end > footprint.size => Err(Error::RangePastEnd {
            memory,
            start,
            end,
            size: footprint.size,
        }),
        Some(_) => Ok(0),
        None if strict => Err(Error::UnknownKey { key: row.alloc }),
        None => Ok(1),
    }
}

/// What [`resolve_owner`] found besides the rows.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Bindings that did not resolve.
    pub unresolved: u64,
    /// Whether any resolved (not dead) binding's allocation held a claim
    /// when it was resolved. When none did and no failure is in play, the
    /// later systems have nothing to find and nothing to release.
    pub claimed: bool,
}

/// The memory id an error names.
#[cold]
fn named(binding: &Binding, allocs: &Allocations, found: Option<(AllocKey, Footprint)>) -> u64 {
    match (binding.memory, found) {
        (_, Some((key, _))) => allocs.get(key).map_or(0, |a| a.memory),
        (MemoryRef::Id(memory), None) => memory,
        // Not named: a stale key is named by its key.
        (MemoryRef::Key(_), None) => 0,
    }
}

/// The error of a binding that does not resolve, in strict mode: a stale
/// key is named as a stale row is ([`Error::UnknownKey`]); anything else by
/// its memory id and slot.
#[cold]
fn unresolved_error(
    binding: &Binding,
    allocs: &Allocations,
    found: Option<(AllocKey, Footprint)>,
    slot: u64,
) -> Error {
    match (binding.memory, found) {
        (MemoryRef::Key(key), None) => Error::UnknownKey { key },
        _ => Error::Unresolved {
            memory: named(binding, allocs, found),
            slot,
            made_on: found.and_then(|(key, _)| allocs.get(key)).map(|a| a.slot),
        },
    }
}

/// The error of a range that is reversed, or runs past a resolved
/// allocation's end.
#[cold]
fn bad_range(
    binding: &Binding,
    allocs: &Allocations,
    found: Option<(AllocKey, Footprint)>,
) -> Error {
    let (start, end) = binding.range.unwrap_or((0, 0));
    let memory = named(binding, allocs, found);
    match (found, binding.memory) {
        (Some((_, footprint)), _) if start <= end => Error::RangePastEnd {
            memory,
            start,
            end,
            size: footprint.size,
        },
        (None, MemoryRef::Key(key)) => Error::KeyRangeReversed { key, start, end },
        _ => Error::RangeReversed { memory, start, end },
    }
}
