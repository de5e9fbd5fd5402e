//! Claims: maximal byte ranges of one allocation carrying one failure through
//! one origin, and the sorted set of them each allocation holds.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, btree_map};
use core::mem::ManuallyDrop;
use core::ops::{Bound, Deref, DerefMut};

use hashbrown::HashMap;
use smallvec::SmallVec;

use crate::components::InKeyOrder;
use crate::components::failure::{FailureKey, Failures};
use crate::components::record::{RecordKey, Records};

/// How a claim's bytes came to carry their failure.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Directly: the failed work, failed reservation or injected failure
    /// itself.
    Root,
    /// Through a skipped launch, whose record says which.
    Skip(RecordKey),
}

/// One claim: the bytes `[start, end)` carry `failure` through `origin`.
/// 32 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// First byte.
    pub start: u64,
    /// One past the last byte; `start < end` always.
    pub end: u64,
    /// The failure the bytes carry.
    pub failure: FailureKey,
    /// How they came to carry it.
    pub origin: Origin,
}

impl Claim {
    #[inline]
    fn same_label(&self, failure: FailureKey, origin: Origin) -> bool {
        self.failure == failure && self.origin == origin
    }
}

/// The claims of one allocation, sorted by `start`, kept canonical after
/// every operation: non-empty, pairwise disjoint, and two claims of the same
/// failure and origin never touch.
///
/// They live inline in the allocation rather than in a store of their own:
/// every question about claims is asked of one allocation at a time, and a
/// sorted run of 32-byte rows answers "what overlaps `[start, end)`" with a
/// binary search over contiguous memory. A clean allocation costs one length
/// check; the first claim is stored inline (no heap allocation); a set of
/// `n` claims costs `32·n` bytes, and past [`COUNTED_ABOVE`] claims a
/// table of its failures besides (below).
///
/// Every change keeps the reference counts of the failure graph: a record
/// is referenced once per claim that names it, and a failure gains or loses
/// a carrier when this allocation starts or stops holding any claim of it.
/// That is why the mutating calls take the [`Failures`] and [`Records`]
/// stores: the claim set is the one place where bytes and provenance meet,
/// shared by [`World`](crate::World) and the seed-shaped
/// [`pool`](crate::pool) path.
///
/// Whether the set carries a failure is asked on every change (does the
/// failure gain or lose this allocation as a carrier?). A small set answers
/// by scanning its claims; a set of more than [`COUNTED_ABOVE`] claims
/// keeps a count of its claims per failure and answers from it. Without
/// the count, a log tainting one buffer with n different failures took
/// O(n²): 100,000 of them took 4.1 s to replay, and one write releasing
/// them all 5.4 s more.
///
/// A change in the middle of a sorted vector shifts the claims on one side
/// of it. In a counted set (one that has held more than [`COUNTED_ABOVE`]
/// claims and not shrunk to [`UNCOUNTED_AT`]) a change that leaves fewer
/// claims shifts the shorter side: it moves the claims before its window
/// up and leaves dead slots at the front of the vector (claims ending at
/// 0, which the binary search passes over). One that adds claims moves
/// those before it back into dead slots when they are fewer than those
/// after and there are dead slots enough, and shifts the tail otherwise.
/// A write carving 100 claims a tenth of the way into W3's 1,000 moves
/// 100 claims instead of 800; through the middle, 450 either way. The
/// shift is nothing for the claims a buffer usually holds but made 100,000
/// one-byte taints landing in descending order take 3.2–3.3 s to replay. So a set of more than [`TREE_ABOVE`]
/// claims keeps them in a B-tree by `start` instead, where a change costs
/// O(log n) for each claim it touches, and goes back to the vector at
/// [`FLAT_AT`]. Below that, the vector's binary search over contiguous
/// memory is what keeps a read check fast (W3's 1,000 claims).
///
/// A clone copies the claims and counts them nowhere: it agrees only with a
/// clone of the stores made with it, as when a whole [`World`](crate::World)
/// is cloned. Used beside the stores the original counts in, its failures
/// and records can be pruned from under it.
#[derive(Clone, Debug, Default)]
pub struct ClaimSet {
    /// The claims, sorted by `start` — empty while they are in the tree.
    claims: SmallVec<[Claim; 1]>,
    /// What a counted set (see above: one that has held more than
    /// [`COUNTED_ABOVE`] claims and not shrunk to [`UNCOUNTED_AT`]) keeps
    /// besides.
    large: LargePart,
}

/// A claim set's large part, when it has one. Dropping none costs a test
/// in line: every free drops its allocation's claim set, nearly always
/// clean, and the drop glue of an `Option<Box<Large>>` is a call, out of
/// line, which cost a real program's step 22 instructions a launch.
#[derive(Clone, Debug, Default)]
struct LargePart(ManuallyDrop<Option<Box<Large>>>);

impl Deref for LargePart {
    type Target = Option<Box<Large>>;

    #[inline]
    fn deref(&self) -> &Option<Box<Large>> {
        &self.0
    }
}

impl DerefMut for LargePart {
    #[inline]
    fn deref_mut(&mut self) -> &mut Option<Box<Large>> {
        &mut self.0
    }
}

impl Drop for LargePart {
    #[inline]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_large(&mut self.0);
        }
    }
}

/// Drops a large part (taken out, so that the `ManuallyDrop` holds none).
#[cold]
#[inline(never)]
fn drop_large(large: &mut Option<Box<Large>>) {
    drop(large.take());
}

/// What a large claim set keeps besides its vector.
#[derive(Clone, Default)]
struct Large {
    /// How many claims carry each failure, only failures carried.
    counts: Counts,
    /// The claims by `start`, while there are more than [`FLAT_AT`] and
    /// there have been more than [`TREE_ABOVE`]; the vector is then empty.
    tree: Option<BTreeMap<u64, Claim>>,
    /// How many slots at the front of the vector hold no claim (each
    /// [`DEAD`]): a change that leaves fewer claims shifts the claims
    /// before its window instead of those after, when they are fewer, and
    /// a change that adds claims shifts them into these slots. Never more
    /// than the claims after a change (see `ClaimSet::recount`); 0 while
    /// the claims are in the tree.
    dead: usize,
}

/// What a dead slot at the front of a large set's vector holds: a claim
/// whose `end` is 0, which no range starts before, so that a binary
/// search for the first claim ending past a byte passes over dead slots
/// without knowing how many there are (the read check, which must stay
/// small). It names the null key, under which no failure is stored, and
/// is never a claim of the set. A constant, not built from
/// `FailureKey::null()` (not a `const fn`): filling dead slots with a
/// constant counted 88 instructions fewer on W3's carving write.
const DEAD: Claim = Claim {
    start: 0,
    end: 0,
    failure: FailureKey::DEAD,
    origin: Origin::Root,
};

/// How many claims of one set carry each failure.
type Counts = HashMap<FailureKey, usize>;

/// The counts by failure key (`InKeyOrder`): two sets given the same
/// calls, in one run or two, print the same.
impl core::fmt::Debug for Large {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Large")
            .field("counts", &InKeyOrder(&self.counts))
            .field("tree", &self.tree)
            .field("dead", &self.dead)
            .finish()
    }
}

/// Whether this is a build for finding bugs, whose claim sets change form
/// at a handful of claims (see [`COUNTED_ABOVE`]).
const SMALL_SETS: bool = cfg!(any(fuzzing, taintworld_small_claim_sets));

/// A set of more claims than this counts them per failure: scanning this
/// many costs about what a hash look-up does.
///
/// In a build for finding bugs this and the other three thresholds are a
/// handful — counted past 3 claims, uncounted at 1, in the tree past 6,
/// back in the vector at 2 — so that small allocations meet every form of
/// a set and every move between two. Such a build is one under `cargo
/// fuzz` (`--cfg fuzzing`, which reaches every crate of the build, so a
/// fuzzed program that embeds this one gets it too) or with `--cfg
/// taintworld_small_claim_sets`, which CI sets to run the tests once more.
/// The fuzz targets and the model tests make allocations of at most a few
/// hundred bytes, which rarely reach 32 claims on one and never 4,096.
/// Answers are the same in every build; only the forms, and so the speed
/// of a large set, differ.
pub const COUNTED_ABOVE: usize = if SMALL_SETS { 3 } else { 32 };

/// A counted set that shrinks to this many claims or fewer drops its
/// count: half of [`COUNTED_ABOVE`], so that a set hovering about that
/// size does not make and drop its count on every change (1 in a build
/// for finding bugs).
pub const UNCOUNTED_AT: usize = if SMALL_SETS { 1 } else { COUNTED_ABOVE / 2 };

/// A set of more claims than this keeps them in a B-tree: shifting this
/// many 32-byte claims (128 KiB) costs some microseconds, and W3's 1,000
/// stay in the vector, whose binary search is the faster read check (6 in
/// a build for finding bugs).
pub const TREE_ABOVE: usize = if SMALL_SETS { 6 } else { 4096 };

/// A set in a tree that shrinks to this many claims or fewer goes back to
/// the vector: a quarter of [`TREE_ABOVE`], so that moving between the two
/// is rare (2 in a build for finding bugs: above [`UNCOUNTED_AT`], so that
/// a set can leave its tree and stay counted there too).
pub const FLAT_AT: usize = if SMALL_SETS { 2 } else { TREE_ABOVE / 4 };

// What the forms need of the thresholds, in a build for finding bugs as in
// any other. A set of one claim is never counted (`taint`'s and
// `clear_claimed`'s one-claim shortcuts skip the count), and a set is
// uncounted below the size it is counted above. The tree lives beside the
// count, and dropping the count drops the tree: a set must leave its tree
// no later than it is uncounted, below the size it enters it above, and be
// counted before it can pass `TREE_ABOVE` — a change adds at most two
// claims (one claim split around a new one).
const _: () = assert!(
    1 <= UNCOUNTED_AT
        && UNCOUNTED_AT < COUNTED_ABOVE
        && UNCOUNTED_AT <= FLAT_AT
        && FLAT_AT < TREE_ABOVE
        && COUNTED_ABOVE + 2 <= TREE_ABOVE
);

/// A canonical set of claims rebuilt around one range holds at most this
/// many claims where it held some window: a left remnant, the new claim, a
/// right remnant.
type Pieces = SmallVec<[Claim; 3]>;

/// The failures a change took claims of, when a small set lists them.
type Lost = SmallVec<[FailureKey; 2]>;

/// The claims of a set in order, from its vector or its tree.
#[derive(Clone, Debug)]
pub struct Claims<'a>(ClaimsFrom<'a>);

#[derive(Clone, Debug)]
enum ClaimsFrom<'a> {
    Vector(core::slice::Iter<'a, Claim>),
    Tree(btree_map::Values<'a, u64, Claim>),
}

impl<'a> Iterator for Claims<'a> {
    type Item = &'a Claim;

    #[inline]
    fn next(&mut self) -> Option<&'a Claim> {
        match &mut self.0 {
            ClaimsFrom::Vector(claims) => claims.next(),
            ClaimsFrom::Tree(claims) => claims.next(),
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            ClaimsFrom::Vector(claims) => claims.size_hint(),
            ClaimsFrom::Tree(claims) => claims.size_hint(),
        }
    }
}

impl ExactSizeIterator for Claims<'_> {}

impl ClaimSet {
    /// The claims, sorted by `start`.
    #[inline]
    pub fn iter(&self) -> Claims<'_> {
        Claims(match self.tree() {
            Some(tree) => ClaimsFrom::Tree(tree.values()),
            None => ClaimsFrom::Vector(self.live().iter()),
        })
    }

    /// The claims themselves, to change by hand past every rule: only for
    /// the tests that break a world on purpose (on a set in its vector).
    #[cfg(test)]
    pub(crate) fn raw_mut(&mut self) -> &mut SmallVec<[Claim; 1]> {
        &mut self.claims
    }

    /// The count of claims per failure, to change by hand past every
    /// rule: only for the tests that break a world on purpose.
    #[cfg(test)]
    pub(crate) fn raw_counts_mut(&mut self) -> Option<&mut Counts> {
        self.large.as_deref_mut().map(|large| &mut large.counts)
    }

    /// Whether the set keeps any heap memory: its vector spilled, or a
    /// large part. What the world's invariant check asks of a freed row.
    pub(crate) fn holds_heap(&self) -> bool {
        self.claims.spilled() || self.large.is_some()
    }

    /// How many slots at the front of the vector are dead (see
    /// [`Large::dead`]).
    #[inline]
    fn dead(&self) -> usize {
        self.large.as_deref().map_or(0, |large| large.dead)
    }

    /// The vector's claims, past its dead slots.
    #[inline]
    fn live(&self) -> &[Claim] {
        self.claims.get(self.dead()..).unwrap_or_default()
    }

    /// Whether the vector's dead slots are as [`Large::dead`] says: each
    /// [`DEAD`], none while the claims are in the tree, and no more than
    /// the claims: for the world's invariant check.
    pub(crate) fn dead_slots_agree(&self) -> bool {
        let Some(large) = self.large.as_deref() else {
            return true;
        };
        if large.tree.is_some() {
            return large.dead == 0;
        }
        self.claims
            .get(..large.dead)
            .is_some_and(|dead| dead.iter().all(|c| *c == DEAD))
            && large.dead <= self.claims.len() - large.dead
    }

    /// The vector's window `lo..hi` of a change: its claims past the dead
    /// slots, after those `before` a range, that begin `within` its reach
    /// (a dead slot's end, 0, would touch a range starting at 0).
    #[inline(always)]
    fn window(
        &self,
        before: impl Fn(&Claim) -> bool,
        within: impl Fn(&Claim) -> bool,
    ) -> (usize, usize) {
        let dead = self.dead();
        let lo = dead + self.claims[dead..].partition_point(before);
        (lo, lo + gallop(&self.claims[lo..], within))
    }

    /// The tree the claims are in, if they are.
    #[inline]
    fn tree(&self) -> Option<&BTreeMap<u64, Claim>> {
        self.large.as_deref().and_then(|large| large.tree.as_ref())
    }

    /// Whether the claims are in a tree (the set has more than
    /// [`FLAT_AT`] and has had more than [`TREE_ABOVE`]): for the world's
    /// invariant check.
    pub(crate) fn in_tree(&self) -> bool {
        self.tree().is_some()
    }

    /// Whether the vector holds no claim, which it must not while the
    /// claims are in the tree (`iter` would not show them): for the
    /// world's invariant check.
    pub(crate) fn vector_is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    /// Whether no byte carries a failure.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // A set in its tree has more than `FLAT_AT` claims, and its vector
        // is empty: only `large` tells the two apart.
        self.claims.is_empty() && self.large.is_none()
    }

    /// How many claims there are.
    #[inline]
    pub fn len(&self) -> usize {
        match self.tree() {
            Some(tree) => tree.len(),
            None => self.live().len(),
        }
    }

    /// The claim with the lowest `start` among those overlapping
    /// `[start, end)`. An empty range overlaps nothing. O(log n).
    #[inline]
    pub fn first_overlap(&self, start: u64, end: u64) -> Option<&Claim> {
        if start >= end {
            return None;
        }
        if self.claims.is_empty() {
            return self.first_overlap_in_tree(start, end);
        }
        // Dead slots end at 0: the search passes over them.
        let i = self.claims.partition_point(|c| c.end <= start);
        self.claims.get(i).filter(|c| c.start < end)
    }

    /// [`first_overlap`](Self::first_overlap) of a set whose vector is
    /// empty: it is clean, or its claims are in the tree. Out of line, so
    /// that the read check every launch makes stays small.
    #[cold]
    #[inline(never)]
    fn first_overlap_in_tree(&self, start: u64, end: u64) -> Option<&Claim> {
        let tree = self.tree()?;
        // The claim holding `start`, or else the first to begin inside.
        if let Some((_, c)) = tree.range(..=start).next_back()
            && c.end > start
        {
            return Some(c);
        }
        let inside = (Bound::Excluded(start), Bound::Excluded(end));
        tree.range(inside).next().map(|(_, c)| c)
    }

    /// Whether any claim carries `failure`: one hash look-up in a set of
    /// more than [`COUNTED_ABOVE`] claims, a scan of at most that many
    /// below.
    #[inline]
    pub fn carries(&self, failure: FailureKey) -> bool {
        match self.large.as_deref() {
            Some(large) => large.counts.contains_key(&failure),
            None => self.claims.iter().any(|c| c.failure == failure),
        }
    }

    /// How many claims carry each failure, if the set counts them (it
    /// holds more than [`UNCOUNTED_AT`] claims and has held more than
    /// [`COUNTED_ABOVE`]): for the world's invariant check.
    pub(crate) fn counts(&self) -> Option<&Counts> {
        self.large.as_deref().map(|large| &large.counts)
    }

    /// Moves the set between its forms after a change to how many claims
    /// it has: counted past [`COUNTED_ABOVE`] claims, uncounted at
    /// [`UNCOUNTED_AT`]; in a tree past [`TREE_ABOVE`], back in the vector
    /// at [`FLAT_AT`]. A vector with more dead slots than claims drops
    /// them, each claim moving once for at least as many that went; so
    /// does one leaving the counted form, and one going into the tree
    /// leaves them behind (both O(n) changes anyway).
    #[inline]
    fn recount(&mut self) {
        let n = self.len();
        let Some(large) = self.large.as_deref_mut() else {
            if n > COUNTED_ABOVE {
                let mut counts = Counts::default();
                for c in &self.claims {
                    *counts.entry(c.failure).or_default() += 1;
                }
                *self.large = Some(Box::new(Large {
                    counts,
                    tree: None,
                    dead: 0,
                }));
            }
            return;
        };
        match large.tree.take() {
            // One wide release can take a set in its tree down past both
            // thresholds: back in the vector, and then uncounted below.
            Some(tree) if n <= FLAT_AT => self.claims = tree.into_values().collect(),
            Some(tree) => large.tree = Some(tree),
            None if n > TREE_ABOVE => {
                let claims = core::mem::take(&mut self.claims);
                let live = claims.into_iter().skip(large.dead);
                large.tree = Some(live.map(|c| (c.start, c)).collect());
                large.dead = 0;
            }
            None if large.dead > n || (large.dead > 0 && n <= UNCOUNTED_AT) => {
                self.claims.drain(..large.dead);
                large.dead = 0;
            }
            None => {}
        }
        if n <= UNCOUNTED_AT {
            *self.large = None;
            // A counted set held more than `COUNTED_ABOVE` claims; down to
            // `UNCOUNTED_AT` it gives back the room its vector grew to,
            // which a buffer once fragmented into thousands of claims and
            // written whole again would otherwise keep as long as it lives
            // (128 KiB at 4,096). The gap between the two thresholds keeps
            // a set hovering about one size from moving its claims on
            // every change.
            self.claims.shrink_to_fit();
        }
    }

    /// How many bytes carry a failure: at most the allocation's size, since
    /// claims are disjoint ranges of it (so the sum never saturates) — as
    /// long as nothing tainted a range past the end, which no world does
    /// and a system handed an unchecked row can ([What they
    /// trust](crate::systems#what-they-trust)).
    pub fn tainted_bytes(&self) -> u64 {
        self.iter()
            .fold(0u64, |n, c| n.saturating_add(c.end - c.start))
    }

    /// Sets `[start, end)` to carry `failure` through `origin` — sets, never
    /// adds: other claims lose those bytes (split where needed), and the range
    /// fuses with any claim of the same failure and origin it overlaps or
    /// touches. Tainting bytes already claimed the same way changes nothing.
    /// O(log n + k) for k claims touched, plus, in a set of at most
    /// [`TREE_ABOVE`] claims, the shift of the claims on one side (see
    /// [`ClaimSet`]).
    ///
    /// Returns whether the set was empty and now holds a claim: the one way
    /// a taint changes whether an allocation is claimed, which its
    /// [`Footprint`](crate::components::allocation::Footprint) mirrors.
    #[inline(always)]
    pub fn taint(
        &mut self,
        start: u64,
        end: u64,
        failure: FailureKey,
        origin: Origin,
        failures: &mut Failures,
        records: &mut Records,
    ) -> bool {
        if let [only] = self.claims.as_mut_slice()
            && only.start == start
            && only.end == end
        {
            // The set is exactly one claim of the range, the common case of
            // a buffer written whole again and again: a claim of the same
            // label stays (the retaint loop), another is relabelled in place
            // (a chain of skips). The set held nothing else, so the new
            // failure was not carried before and the old one is not after.
            let old = *only;
            if !old.same_label(failure, origin) {
                only.failure = failure;
                only.origin = origin;
                relabeled(old, *only, (false, false), failures, records);
            }
            return false;
        }
        self.set(
            Claim {
                start,
                end,
                failure,
                origin,
            },
            failures,
            records,
        )
    }

    /// [`taint`](Self::taint) where the set is not exactly one claim of the
    /// range: sets `new`'s bytes to carry its failure through its origin,
    /// in an empty range (nothing), a clean allocation (the claim is the
    /// range) or a window of claims.
    fn set(&mut self, new: Claim, failures: &mut Failures, records: &mut Records) -> bool {
        if new.start >= new.end {
            return false;
        }
        if self.is_empty() {
            if let Origin::Skip(r) = new.origin {
                records.add_ref(r);
            }
            self.claims.push(new);
            failures.gain_carrier(new.failure);
            return true;
        }
        self.taint_window(new, failures, records);
        false
    }

    /// [`taint`](Self::taint) where claims overlap or touch the range in
    /// any other way than one claim being exactly it.
    #[inline(never)]
    fn taint_window(&mut self, new: Claim, failures: &mut Failures, records: &mut Records) {
        if let Some(large) = self.large.as_deref_mut()
            && let Some(tree) = &mut large.tree
        {
            taint_tree(tree, &mut large.counts, new, failures, records);
            self.recount();
            return;
        }
        let Claim {
            start,
            end,
            failure,
            ..
        } = new;
        // Claims that overlap or touch the range.
        let (lo, hi) = self.window(|c| c.end < start, |c| c.start <= end);
        let window = &self.claims[lo..hi];
        // Already claimed exactly this way: nothing to do (the retaint loop
        // of a kernel failing on the same buffer again and again).
        if holds(window, new) {
            return;
        }
        if let [only] = window
            && only.start == start
            && only.end == end
        {
            // The range is exactly one claim and touches no other: relabel
            // it in place (a chain of skips retainting whole buffers).
            let old = *only;
            let had = old.failure == failure || self.carries(failure);
            self.claims[lo] = new;
            if let Some(large) = self.large.as_deref_mut() {
                uncount(&mut large.counts, old.failure);
                *large.counts.entry(failure).or_default() += 1;
            }
            let kept = old.failure == failure || self.carries(old.failure);
            relabeled(old, new, (had, kept), failures, records);
            return;
        }
        let had = self.carries(failure);
        // A counted set finds what its failures lose from the count; a
        // small one lists them (at most `COUNTED_ABOVE`) and scans after.
        let mut lost = Lost::new();
        let listed = self.large.is_none().then_some(&mut lost);
        let pieces = taint_pieces(window, new, records, listed);
        if !had {
            failures.gain_carrier(failure);
        }
        self.replace_in_vector((lo, hi), pieces, lost, failures);
    }

    /// Removes the bytes `[start, end)` from every claim, and only those
    /// bytes: something wrote them, so they no longer carry anything.
    /// O(log n + k) for k claims touched, plus, in a set of at most
    /// [`TREE_ABOVE`] claims, the shift of the claims on one side (see
    /// [`ClaimSet`]).
    pub fn release(
        &mut self,
        start: u64,
        end: u64,
        failures: &mut Failures,
        records: &mut Records,
    ) {
        if start >= end {
            return;
        }
        if let [only] = self.claims.as_slice()
            && start <= only.start
            && only.end <= end
        {
            // The set is one claim and the write covers it: a buffer
            // tainted whole and written whole again (a good graph replay
            // after a failed one, a host write over a failed launch's
            // output). It goes as a freed allocation's one claim goes.
            // A set of at most `UNCOUNTED_AT` claims has no `Large` part
            // (no count, no tree, no dead slots: a form rule
            // `World::check_invariants` holds), so a vector of one claim
            // is the whole set and there is no count to move, as
            // `clear_claimed` relies on too.
            let only = *only;
            self.drop_only(only, failures, records);
            return;
        }
        if self.claims.is_empty() {
            if let Some(large) = self.large.as_deref_mut()
                && let Some(tree) = &mut large.tree
            {
                release_tree(tree, &mut large.counts, (start, end), failures, records);
                self.recount();
            }
            return;
        }
        let (lo, hi) = self.window(|c| c.end <= start, |c| c.start < end);
        if lo == hi {
            return;
        }
        let mut lost = Lost::new();
        let listed = self.large.is_none().then_some(&mut lost);
        let pieces = release_pieces(&self.claims[lo..hi], (start, end), records, listed);
        self.replace_in_vector((lo, hi), pieces, lost, failures);
    }

    /// Removes every claim (the allocation is freed), and lets go of the
    /// heap memory the vector kept if it ever held more than one claim: a
    /// freed allocation's row stays in the store until its slot is taken
    /// again. Most freed allocations are clean: those only check that
    /// their vector never spilled.
    #[inline]
    pub fn clear(&mut self, failures: &mut Failures, records: &mut Records) {
        if !self.is_empty() {
            self.clear_claimed(failures, records);
        }
        if self.claims.spilled() {
            self.claims = SmallVec::new();
        }
    }

    /// [`clear`](Self::clear) of a set that holds claims: out of line.
    #[inline(never)]
    fn clear_claimed(&mut self, failures: &mut Failures, records: &mut Records) {
        // Each failure loses one carrier, however many claims carried it.
        if let [only] = self.claims.as_slice() {
            // The common case: a buffer written whole, then freed.
            let only = *only;
            self.drop_only(only, failures, records);
            return;
        }
        let (mut counts, tree, dead) = match self.large.take() {
            Some(large) => {
                let Large { counts, tree, dead } = *large;
                (Some(counts), tree, dead)
            }
            None => (None, None, 0),
        };
        // Failures lose the allocation in the order of their first claims,
        // counted or not: the order their prune is queued in.
        let mut lost = Lost::new();
        for c in self
            .claims
            .get(dead..)
            .unwrap_or_default()
            .iter()
            .chain(tree.iter().flat_map(|t| t.values()))
        {
            if let Origin::Skip(r) = c.origin {
                records.drop_ref(r);
            }
            let first = match &mut counts {
                Some(counts) => counts.remove(&c.failure).is_some(),
                None => !lost.contains(&c.failure),
            };
            if first {
                lost.push(c.failure);
            }
        }
        self.claims.clear();
        for &f in &lost {
            failures.lose_carrier(f);
        }
    }

    /// Empties a set whose one claim is `only`: its record loses a
    /// reference and its failure this allocation as a carrier.
    #[inline(always)]
    fn drop_only(&mut self, only: Claim, failures: &mut Failures, records: &mut Records) {
        self.claims.clear();
        if let Origin::Skip(r) = only.origin {
            records.drop_ref(r);
        }
        failures.lose_carrier(only.failure);
    }

    /// `claims[lo..hi]` give way to `pieces`: a counted set moves its
    /// count (see [`recount_window`]); in a small one, each failure of
    /// `lost` that no claim carries any more loses this allocation as a
    /// carrier. Then the set takes the form its new size asks for.
    fn replace_in_vector(
        &mut self,
        (lo, hi): (usize, usize),
        pieces: Pieces,
        lost: Lost,
        failures: &mut Failures,
    ) {
        if let Some(large) = self.large.as_deref_mut() {
            recount_window(&mut large.counts, &self.claims[lo..hi], &pieces, failures);
        }
        self.splice(lo, hi, pieces);
        for f in lost {
            if !self.carries(f) {
                failures.lose_carrier(f);
            }
        }
        self.recount();
    }

    /// Replaces `claims[lo..hi]` with `pieces`, shifting once whichever
    /// side of the window moves fewer claims: the tail, or in a counted
    /// set the claims before the window, into or out of its dead slots.
    fn splice(&mut self, lo: usize, hi: usize, pieces: Pieces) {
        let window = hi - lo;
        let n = pieces.len();
        if let Some(large) = self.large.as_deref_mut()
            && window != n
            && lo - large.dead < self.claims.len() - hi
        {
            let dead = large.dead;
            if window > n {
                // Fewer claims: those before the window move up to it, and
                // the slots they leave die.
                let gone = window - n;
                self.claims.copy_within(dead..lo, dead + gone);
                self.claims[hi - n..hi].copy_from_slice(&pieces);
                self.claims[dead..dead + gone].fill(DEAD);
                large.dead = dead + gone;
                return;
            }
            let more = n - window;
            if more <= dead {
                // More claims, and dead slots enough before them.
                self.claims.copy_within(dead..lo, dead - more);
                self.claims[lo - more..hi].copy_from_slice(&pieces);
                large.dead = dead - more;
                return;
            }
        }
        let common = window.min(n);
        self.claims[lo..lo + common].copy_from_slice(&pieces[..common]);
        if n == window + 1 {
            self.claims.insert(lo + common, pieces[common]);
        } else if n > window {
            self.claims
                .insert_many(lo + common, pieces.into_iter().skip(common));
        } else if window > n {
            self.claims.drain(lo + n..hi);
        }
    }
}

/// `claims.partition_point(within)`, searched from the front: the probes
/// double (1, 2, 4, … claims in) until one is not `within`, and a binary
/// search takes the last stretch. A change's window starts at the front of
/// `claims` and mostly holds a claim or two, so its end is found in a
/// probe or two on the window's own cache lines, where a binary search of
/// the whole rest of a large set takes its ten-odd steps across it.
#[inline(always)]
fn gallop(claims: &[Claim], within: impl Fn(&Claim) -> bool) -> usize {
    // `claims[..known]` are all `within`; the first that is not lies
    // before `known + step`.
    let (mut known, mut step) = (0usize, 1usize);
    while let Some(c) = claims.get(known.saturating_add(step) - 1)
        && within(c)
    {
        known = known.saturating_add(step);
        step = step.saturating_mul(2);
    }
    let hi = claims.len().min(known.saturating_add(step) - 1);
    let rest = claims.get(known..hi).unwrap_or_default();
    known + rest.partition_point(within)
}

/// Whether `window` already claims all of `new`'s bytes with its label.
#[inline]
fn holds(window: &[Claim], new: Claim) -> bool {
    // A claim holding all of `new`'s bytes leaves room in the window only
    // for one claim touching it on each side: a longer window is never
    // held, and is not scanned.
    window.len() <= 3
        && window.iter().any(|c| {
            c.same_label(new.failure, new.origin) && c.start <= new.start && new.end <= c.end
        })
}

/// What replaces `window` — the claims overlapping or touching `new`'s
/// range — when `new` is tainted: the claims of `new`'s label fused into
/// it, and of the others what lies outside its range. Moves the records'
/// references with them, and lists in `lost` (when given) each other
/// failure that lost bytes.
fn taint_pieces(
    window: &[Claim],
    new: Claim,
    records: &mut Records,
    mut lost: Option<&mut Lost>,
) -> Pieces {
    let Claim {
        start,
        end,
        failure,
        origin,
    } = new;
    let mut merged = new;
    let mut left: Option<Claim> = None;
    let mut right: Option<Claim> = None;
    let (head, middle, tail) = ends_and_middle(window, lost.is_none());
    let mut take = |c: &Claim, records: &mut Records| {
        if c.same_label(failure, origin) {
            merged.start = merged.start.min(c.start);
            merged.end = merged.end.max(c.end);
            // Fused into the new claim: one reference fewer.
            if let Origin::Skip(r) = c.origin {
                records.drop_ref(r);
            }
            return;
        }
        // Another label: it keeps only what lies outside the range.
        if c.end <= start {
            left = Some(*c);
            return;
        }
        if c.start >= end {
            right = Some(*c);
            return;
        }
        let mut kept = 0u32;
        if c.start < start {
            left = Some(Claim { end: start, ..*c });
            kept += 1;
        }
        if c.end > end {
            right = Some(Claim { start: end, ..*c });
            kept += 1;
        }
        adjust_refs(c.origin, kept, records);
        if let Some(lost) = lost.as_deref_mut()
            && c.failure != failure
            && !lost.contains(&c.failure)
        {
            lost.push(c.failure);
        }
    };
    head.iter().for_each(|c| take(c, records));
    // Between the ends every claim lies inside the range: fused into the
    // new claim or cut away whole, it gives up its record's reference and
    // nothing else.
    drop_refs(middle, records);
    tail.iter().for_each(|c| take(c, records));
    if let Origin::Skip(r) = origin {
        records.add_ref(r);
    }
    let mut pieces = Pieces::new();
    if let Some(left) = left {
        pieces.push(left);
    }
    pieces.push(merged);
    if let Some(right) = right {
        pieces.push(right);
    }
    pieces
}

/// `window` as its first claim, the claims between, and its last claim,
/// when `split` and it has claims between; else all of it as the first
/// part. The window of a change is sorted and disjoint, so only its ends
/// can reach past the changed range: the claims between lie inside it.
/// Only a set that counts its claims per failure splits (its caller
/// recounts the window, so no claim's failure need be listed), the only
/// sets whose windows hold many claims.
#[inline(always)]
fn ends_and_middle(window: &[Claim], split: bool) -> (&[Claim], &[Claim], &[Claim]) {
    match window {
        [first, middle @ .., last] if split && !middle.is_empty() => (
            core::slice::from_ref(first),
            middle,
            core::slice::from_ref(last),
        ),
        _ => (window, &[], &[]),
    }
}

/// The claims of `middle`, each changed away whole, give up their records'
/// references.
#[inline(always)]
fn drop_refs(middle: &[Claim], records: &mut Records) {
    for c in middle {
        if let Origin::Skip(r) = c.origin {
            records.drop_ref(r);
        }
    }
}

/// What replaces `window` — the claims overlapping `[start, end)` — when
/// those bytes are released: what lies outside the range. Moves the
/// records' references with them, and lists in `lost` (when given) each
/// failure that lost bytes.
fn release_pieces(
    window: &[Claim],
    range: (u64, u64),
    records: &mut Records,
    mut lost: Option<&mut Lost>,
) -> Pieces {
    let mut pieces = Pieces::new();
    let (head, middle, tail) = ends_and_middle(window, lost.is_none());
    for c in head {
        release_from(c, range, &mut pieces, records, lost.as_deref_mut());
    }
    // A write carving through many claims releases those between the
    // ends whole.
    drop_refs(middle, records);
    for c in tail {
        release_from(c, range, &mut pieces, records, lost.as_deref_mut());
    }
    pieces
}

/// What claim `c` keeps of itself outside `[start, end)`, pushed onto
/// `pieces`, its record's references moved with it; its failure listed in
/// `lost` (when given).
#[inline(always)]
fn release_from(
    c: &Claim,
    (start, end): (u64, u64),
    pieces: &mut Pieces,
    records: &mut Records,
    lost: Option<&mut Lost>,
) {
    let mut kept = 0u32;
    if c.start < start {
        pieces.push(Claim { end: start, ..*c });
        kept += 1;
    }
    if c.end > end {
        pieces.push(Claim { start: end, ..*c });
        kept += 1;
    }
    adjust_refs(c.origin, kept, records);
    if let Some(lost) = lost
        && !lost.contains(&c.failure)
    {
        lost.push(c.failure);
    }
}

/// The claims of `tree` that overlap `[start, end)`, a non-empty range,
/// or, when `touching`, also touch it: the one before `start` if it
/// reaches that far, and those beginning inside (at `end` too, touching).
fn tree_window(
    tree: &BTreeMap<u64, Claim>,
    (start, end): (u64, u64),
    touching: bool,
) -> SmallVec<[Claim; 4]> {
    let mut window = SmallVec::new();
    if let Some((_, c)) = tree.range(..start).next_back()
        && (c.end > start || (touching && c.end == start))
    {
        window.push(*c);
    }
    let last = if touching {
        Bound::Included(end)
    } else {
        Bound::Excluded(end)
    };
    window.extend(tree.range((Bound::Included(start), last)).map(|(_, c)| *c));
    window
}

/// `window`'s claims in `tree` give way to `pieces`, and `counts` moves
/// from the one to the other (see [`recount_window`]).
fn replace_in_tree(
    tree: &mut BTreeMap<u64, Claim>,
    counts: &mut Counts,
    window: &[Claim],
    pieces: Pieces,
    failures: &mut Failures,
) {
    recount_window(counts, window, &pieces, failures);
    for c in window {
        tree.remove(&c.start);
    }
    tree.extend(pieces.into_iter().map(|c| (c.start, c)));
}

/// [`ClaimSet::taint`] of `new` (a non-empty range) on a set in its tree.
fn taint_tree(
    tree: &mut BTreeMap<u64, Claim>,
    counts: &mut Counts,
    new: Claim,
    failures: &mut Failures,
    records: &mut Records,
) {
    let window = tree_window(tree, (new.start, new.end), true);
    if holds(&window, new) {
        return;
    }
    let had = counts.contains_key(&new.failure);
    let pieces = taint_pieces(&window, new, records, None);
    if !had {
        failures.gain_carrier(new.failure);
    }
    replace_in_tree(tree, counts, &window, pieces, failures);
}

/// [`ClaimSet::release`] of `[start, end)` (a non-empty range) on a set in
/// its tree.
fn release_tree(
    tree: &mut BTreeMap<u64, Claim>,
    counts: &mut Counts,
    range: (u64, u64),
    failures: &mut Failures,
    records: &mut Records,
) {
    let window = tree_window(tree, range, false);
    if window.is_empty() {
        return;
    }
    let pieces = release_pieces(&window, range, records, None);
    replace_in_tree(tree, counts, &window, pieces, failures);
}

/// The claim `old` was replaced by `new`, which covers exactly its bytes:
/// the reference its origin held moves to `new`'s, and when the failure
/// changed, the new one gains a carrier unless the set already carried it
/// (`had`) and the old one loses one unless the set still carries it
/// (`kept`).
#[inline(always)]
fn relabeled(
    old: Claim,
    new: Claim,
    (had, kept): (bool, bool),
    failures: &mut Failures,
    records: &mut Records,
) {
    if let Origin::Skip(r) = new.origin {
        records.add_ref(r);
    }
    if let Origin::Skip(r) = old.origin {
        records.drop_ref(r);
    }
    if old.failure != new.failure {
        if !had {
            failures.gain_carrier(new.failure);
        }
        if !kept {
            failures.lose_carrier(old.failure);
        }
    }
}

/// One claim of `failure` fewer in `counts`: the failure leaves the count
/// with its last claim.
#[inline]
fn uncount(counts: &mut Counts, failure: FailureKey) {
    match counts.get_mut(&failure) {
        Some(n) if *n > 1 => *n -= 1,
        Some(_) => {
            counts.remove(&failure);
        }
        None => {}
    }
}

/// `window`'s claims are replaced by `pieces`: moves `counts` from the one
/// to the other, and each failure of the window none of the set's claims
/// carries after loses this allocation as a carrier — in the order of its
/// first claim in the window, as a small set's list of lost failures has
/// them. The pieces are counted first, so a failure whose claim is only
/// cut shorter never leaves the count. The window is taken a run of
/// claims of one failure at a time, one look-up a run: a write carving
/// through many claims mostly meets few failures — and in a set that
/// carried one failure, only that one, so its window is one run whose
/// length is the window's, with no claim compared (W3's carving write
/// 3,320 → 2,509 instructions; `docs/performance.md`).
fn recount_window(
    counts: &mut Counts,
    window: &[Claim],
    pieces: &[Claim],
    failures: &mut Failures,
) {
    // A set that carried one failure before the change (a buffer tainted
    // once and written in many places since) has the window as one run of
    // it: no claim to compare.
    let sole = match counts.len() {
        1 => counts.keys().next().copied(),
        _ => None,
    };
    for p in pieces {
        *counts.entry(p.failure).or_default() += 1;
    }
    if let Some(failure) = sole {
        if let Some(n) = counts.get_mut(&failure) {
            *n = n.saturating_sub(window.len());
            if *n == 0 {
                counts.remove(&failure);
                failures.lose_carrier(failure);
            }
        }
        return;
    }
    let mut emptied = false;
    for (failure, len) in runs(window) {
        if let Some(n) = counts.get_mut(&failure) {
            *n = n.saturating_sub(len);
            emptied |= *n == 0;
        }
    }
    // Most changes leave every failure some claim: nothing to walk again.
    if !emptied {
        return;
    }
    for (failure, _) in runs(window) {
        if counts.get(&failure) == Some(&0) {
            counts.remove(&failure);
            failures.lose_carrier(failure);
        }
    }
}

/// The runs of claims of one failure in `window`, in order: each run's
/// failure and length.
#[inline]
fn runs(window: &[Claim]) -> impl Iterator<Item = (FailureKey, usize)> + '_ {
    let mut rest = window;
    core::iter::from_fn(move || {
        let failure = rest.first()?.failure;
        let len = rest
            .iter()
            .position(|c| c.failure != failure)
            .unwrap_or(rest.len());
        rest = rest.get(len..).unwrap_or_default();
        Some((failure, len))
    })
}

/// A claim of `origin` was replaced by `kept` pieces of itself.
#[inline]
fn adjust_refs(origin: Origin, kept: u32, records: &mut Records) {
    if let Origin::Skip(r) = origin {
        match kept {
            0 => records.drop_ref(r),
            1 => {}
            _ => records.add_ref(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::boxed::Box;
    use core::mem::ManuallyDrop;

    use slotmap::SlotMap;
    use smallvec::SmallVec;

    use super::{Claim, ClaimSet, Counts, DEAD, Large, LargePart, Origin, gallop};
    use crate::components::failure::FailureKey;

    /// A counted set in its vector: `dead` slots as given, then `live`
    /// one-byte claims of one failure two bytes apart, counted.
    fn counted(dead: &[Claim], live: usize) -> ClaimSet {
        let failure = SlotMap::<FailureKey, ()>::with_key().insert(());
        let claims: SmallVec<[Claim; 1]> = (dead.iter().copied())
            .chain((0..live as u64).map(|i| Claim {
                start: 2 * i + 1,
                end: 2 * i + 2,
                failure,
                origin: Origin::Root,
            }))
            .collect();
        let counts = Counts::from_iter([(failure, live)]);
        ClaimSet {
            claims,
            large: LargePart(ManuallyDrop::new(Some(Box::new(Large {
                counts,
                tree: None,
                dead: dead.len(),
            })))),
        }
    }

    /// `set`'s form after `recount`: whether it counts its claims, whether
    /// they are in a tree, and its dead slots.
    fn form_after_recount(mut set: ClaimSet) -> (bool, bool, usize) {
        set.recount();
        (set.counts().is_some(), set.in_tree(), set.dead())
    }

    /// `live` claims in the vector, uncounted.
    fn uncounted(live: usize) -> ClaimSet {
        let mut set = counted(&[], live);
        *set.large = None;
        set
    }

    /// A set that was counted gives back its vector's room when it falls
    /// to `UNCOUNTED_AT` claims or fewer: written clean again, a buffer
    /// once fragmented into thousands of claims keeps no heap memory while
    /// it lives. A set never counted keeps its small room, so that one
    /// going between none and a few claims does not allocate each time.
    #[test]
    fn a_set_written_clean_after_it_was_counted_gives_its_room_back() {
        use super::{COUNTED_ABOVE, TREE_ABOVE};
        use crate::components::failure::Failures;
        use crate::components::record::Records;
        let (mut failures, mut records) = (Failures::default(), Records::default());
        let failure = failures.find_or_mint("kind", "kernel", "message");
        let mut set = ClaimSet::default();
        let taint = |set: &mut ClaimSet, n: u64, failures: &mut Failures, records: &mut Records| {
            for i in 0..n {
                set.taint(2 * i, 2 * i + 1, failure, Origin::Root, failures, records);
            }
        };
        for left in [0, 1] {
            taint(&mut set, TREE_ABOVE as u64, &mut failures, &mut records);
            assert!(set.counts().is_some() && !set.in_tree());
            assert!(set.claims.capacity() >= TREE_ABOVE);
            set.release(2 * left, 2 * TREE_ABOVE as u64, &mut failures, &mut records);
            assert_eq!(set.len(), left as usize);
            assert!(!set.holds_heap(), "{left} claims left");
        }
        set.release(0, 2, &mut failures, &mut records);
        taint(&mut set, COUNTED_ABOVE as u64, &mut failures, &mut records);
        assert!(set.counts().is_none() && set.holds_heap());
        set.release(0, 2 * COUNTED_ABOVE as u64, &mut failures, &mut records);
        assert!(
            set.is_empty() && set.holds_heap(),
            "a set never counted keeps its room"
        );
        // Emptied as a freed allocation's set is, before the stores go.
        set.clear(&mut failures, &mut records);
    }

    #[test]
    fn a_set_is_counted_past_counted_above_claims_and_in_its_tree_past_tree_above() {
        use super::{COUNTED_ABOVE, TREE_ABOVE};
        assert_eq!(
            form_after_recount(uncounted(COUNTED_ABOVE)),
            (false, false, 0)
        );
        assert_eq!(
            form_after_recount(uncounted(COUNTED_ABOVE + 1)),
            (true, false, 0)
        );
        assert_eq!(
            form_after_recount(counted(&[], TREE_ABOVE)),
            (true, false, 0)
        );
        assert_eq!(
            form_after_recount(counted(&[], TREE_ABOVE + 1)),
            (true, true, 0)
        );
        // Dead slots are left behind on the way into the tree.
        assert_eq!(
            form_after_recount(counted(&[DEAD], TREE_ABOVE + 1)),
            (true, true, 0)
        );
    }

    #[test]
    fn recount_keeps_dead_slots_up_to_the_live_claims_and_drops_them_past_that_or_uncounted() {
        use super::UNCOUNTED_AT;
        // Counted: as many dead slots as claims stay, one more go.
        let n = UNCOUNTED_AT + 1;
        let dead = alloc::vec![DEAD; n + 1];
        assert_eq!(form_after_recount(counted(&dead[..n], n)), (true, false, n));
        assert_eq!(form_after_recount(counted(&dead, n)), (true, false, 0));
        // Uncounted at UNCOUNTED_AT, with no dead slot left in the vector.
        let mut set = counted(&dead[..1], UNCOUNTED_AT);
        set.recount();
        assert!(set.counts().is_none());
        assert_eq!(set.claims.len(), UNCOUNTED_AT);
        assert!(set.claims.iter().all(|c| *c != DEAD));
    }

    #[test]
    fn dead_slots_agree_when_each_is_dead_and_they_are_no_more_than_the_live_claims() {
        assert!(counted(&[], 3).dead_slots_agree());
        assert!(counted(&[DEAD, DEAD], 3).dead_slots_agree());
        assert!(counted(&[DEAD, DEAD], 2).dead_slots_agree());
        // More dead slots than live claims: a change leaves no more.
        assert!(!counted(&[DEAD, DEAD, DEAD], 2).dead_slots_agree());
        // A slot counted dead that holds something else.
        let mut not_dead = DEAD;
        not_dead.end = 1;
        assert!(!counted(&[DEAD, not_dead], 3).dead_slots_agree());
    }

    #[test]
    fn the_claims_iterator_knows_its_length_past_the_dead_slots_and_in_the_tree() {
        let set = counted(&[DEAD, DEAD], 3);
        let mut claims = set.iter();
        assert_eq!((claims.len(), claims.size_hint()), (3, (3, Some(3))));
        assert_eq!(claims.next().map(|c| c.start), Some(1));
        assert_eq!((claims.len(), claims.size_hint()), (2, (2, Some(2))));
        assert_eq!(set.len(), 3);

        // The same claims in a tree.
        let mut tree = counted(&[], 3);
        let large = tree.large.as_deref_mut().expect("counted");
        large.tree = Some(tree.claims.drain(..).map(|c| (c.start, c)).collect());
        let mut claims = tree.iter();
        assert_eq!((claims.len(), claims.size_hint()), (3, (3, Some(3))));
        assert_eq!(claims.next().map(|c| c.start), Some(1));
        assert_eq!((claims.len(), claims.size_hint()), (2, (2, Some(2))));
    }

    #[test]
    fn gallop_finds_where_binary_search_does_for_every_length_and_cut() {
        let failure = SlotMap::<FailureKey, ()>::with_key().insert(());
        for len in 0..=80u64 {
            let claims: alloc::vec::Vec<Claim> = (0..len)
                .map(|i| Claim {
                    start: 2 * i,
                    end: 2 * i + 1,
                    failure,
                    origin: Origin::Root,
                })
                .collect();
            for cut in 0..=2 * len + 1 {
                let within = |c: &Claim| c.start < cut;
                assert_eq!(
                    gallop(&claims, within),
                    claims.partition_point(within),
                    "{len} claims, cut at byte {cut}"
                );
            }
        }
    }
}
