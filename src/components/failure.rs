//! Failures: what went wrong, how often, and who still carries it.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use slotmap::{SlotMap, new_key_type};

use crate::components::CloneWithRoom;

new_key_type! {
    /// A failure's slot in the [`Failures`] store. Keys are internal handles;
    /// the public name of a failure is its [`FailureId`].
    pub struct FailureKey;
}

impl FailureKey {
    /// The null key, as a constant: what a claim set's dead slot names
    /// (no failure is ever stored under it).
    pub(crate) const DEAD: FailureKey =
        FailureKey(slotmap::KeyData::from_ffi((1 << 32) | 0xffff_ffff));
}

/// The public name of a failure: minted `1, 2, 3, …` in order of creation and
/// never reused, so two implementations of SPEC.md name the same failure
/// with the same number.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FailureId(u64);

impl FailureId {
    /// No failure: ids start at 1. Stands in where a failure has been
    /// pruned before its id could be read, which the world never does.
    pub(crate) const ZERO: FailureId = FailureId(0);

    /// The number itself.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The id numbered `n`: the `n`th failure a world minted, as a replay
    /// report, a log's reader or a scheduler's own records name it; `None`
    /// for 0, which no failure is. For looking a failure up by its number
    /// ([`World::failure`](crate::World::failure)) and for writing the
    /// verdicts a test expects. An id no live failure has names nothing:
    /// every call that takes one answers for it as for a pruned failure.
    ///
    /// ```
    /// use taintworld::{Access, Binding, FailureId, Launch, Outcome, Verdict, World};
    ///
    /// let mut world = World::default();
    /// world.alloc(0, 7, 64)?;
    /// let out = [Binding::whole(0, 7, Access::Write)];
    /// let outcome = Outcome::Failed { kind: "launch", message: "bad grid" };
    /// let fill = Launch { kernel: "fill", stream: 0.into(), bindings: &out[..], outcome };
    /// let verdict = world.launch(&fill)?.verdict;
    /// let first = FailureId::new(1).expect("ids start at 1");
    /// assert_eq!(verdict, Verdict::Failed(first));
    /// assert_eq!(world.failure(first).map(|f| f.error.message.as_str()), Some("bad grid"));
    /// assert_eq!(FailureId::new(0), None);
    /// # Ok::<(), taintworld::Error>(())
    /// ```
    pub const fn new(n: u64) -> Option<Self> {
        if n == 0 { None } else { Some(FailureId(n)) }
    }
}

/// The number itself, as [`FailureId::get`] gives it.
impl From<FailureId> for u64 {
    fn from(id: FailureId) -> u64 {
        id.0
    }
}

impl fmt::Display for FailureId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The error a failure records: what kind of thing failed, in which kernel,
/// and what the driver said. `(kind, kernel, message)` is also the failure's
/// identity: a second failed outcome with the same three is the same failure
/// occurring again.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ErrorInfo {
    /// The class of error (`compile`, `launch`, `injected`, …).
    pub kind: String,
    /// The kernel whose work failed (`host_write`, `alloc`, `graph:<id>` for
    /// the world's own operations).
    pub kernel: String,
    /// What the runtime said.
    pub message: String,
}

/// A copy whose strings have the room its original's have, so that a
/// clone's spare error takes the strings its original's would.
impl CloneWithRoom for ErrorInfo {
    fn clone_with_room(&self) -> Self {
        ErrorInfo {
            kind: self.kind.clone_with_room(),
            kernel: self.kernel.clone_with_room(),
            message: self.message.clone_with_room(),
        }
    }
}

/// `kind in kernel: message`, as the replay summary shows a root error.
impl fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in {}: {}", self.kind, self.kernel, self.message)
    }
}

impl ErrorInfo {
    /// An error from its three parts.
    pub fn new(kind: &str, kernel: &str, message: &str) -> Self {
        ErrorInfo {
            kind: kind.into(),
            kernel: kernel.into(),
            message: message.into(),
        }
    }

    /// The room of its roomiest string.
    fn room(&self) -> usize {
        self.kind
            .capacity()
            .max(self.kernel.capacity())
            .max(self.message.capacity())
    }

    /// Makes it `(kind, kernel, message)` in the room its strings have,
    /// allocating only for a string longer than the room it takes.
    fn refill(&mut self, kind: &str, kernel: &str, message: &str) {
        for (into, from) in [
            (&mut self.kind, kind),
            (&mut self.kernel, kernel),
            (&mut self.message, message),
        ] {
            into.clear();
            into.push_str(from);
        }
    }

    /// Whether this is the identity `(kind, kernel, message)`.
    #[inline]
    fn is(&self, kind: &str, kernel: &str, message: &str) -> bool {
        self.kind == kind && self.kernel == kernel && self.message == message
    }
}

/// One failure entity.
///
/// It lives exactly while some allocation carries it (`carriers > 0`) or
/// something pins it (`pins > 0`): a failure no buffer holds has nothing to
/// wait for. 120 bytes, and the three strings of its error on the heap.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The public id.
    pub id: FailureId,
    /// The root error.
    pub error: ErrorInfo,
    /// How many failed outcomes had this identity while it was alive.
    pub occurrences: u64,
    /// How many launches a read of it skipped.
    pub skipped: u64,
    /// How many allocations carry it (hold at least one claim of it).
    pub carriers: u64,
    /// How many doomed capture windows hold it.
    pub pins: u64,
    /// The hash of `(kind, kernel, message)`, kept with [`PARKED`] clear;
    /// that bit says the failure is out of the identity index.
    identity: u64,
}

/// The bit of a failure's stored identity hash that says
/// [`Failures::find_held_or_mint`] took it out of the identity index while
/// nothing held it. Hashes are kept with it clear, so it never changes
/// where a hash leads, and a taint that holds the failure again reads it
/// beside the carrier count it raises: no look-up on the world's path.
const PARKED: u64 = 1;

impl Failure {
    /// Whether an allocation carries it or something pins it: a failure
    /// exists only while it is held (SPEC §4).
    #[inline]
    pub fn held(&self) -> bool {
        self.carriers != 0 || self.pins != 0
    }

    /// Its identity hash, the [`PARKED`] bit left out.
    #[inline]
    fn hash(&self) -> u64 {
        self.identity & !PARKED
    }

    /// Whether it is out of the identity index ([`PARKED`]).
    #[inline]
    fn parked(&self) -> bool {
        self.identity & PARKED != 0
    }
}

/// The failure store: a slot map of [`Failure`]s, an identity index for
/// dedup by `(kind, kernel, message)`, and an index from public id to key.
///
/// Costs: look-up by key O(1); find-or-mint O(1) expected (one hash of the
/// three strings; no allocation when the failure exists, nor when its
/// strings fit those of the failure removed last); per live failure its
/// 120 bytes in a 128-byte slot, its two index entries and the stores'
/// room (about 200 bytes all told over 100,000 failures, 184 to 252 from
/// 1,000 to 200,000), plus its strings' room (which, minted into the
/// strings of the failure removed last, may be up to 1 KiB a string).
#[derive(Debug, Default)]
pub struct Failures {
    store: SlotMap<FailureKey, Failure>,
    by_identity: HashTable<FailureKey>,
    by_id: HashMap<FailureId, FailureKey>,
    hasher: DefaultHashBuilder,
    minted: u64,
    /// Failures whose carriers or pins dropped to zero since the last prune:
    /// the only ones `prune_failures` has to look at.
    unheld: Vec<FailureKey>,
    /// The failure found or minted last: a kernel failing again and again
    /// compares three strings instead of hashing them. Forgotten when a
    /// parked failure is held again (`regain`).
    last: Option<FailureKey>,
    /// Failures [`find_held_or_mint`](Self::find_held_or_mint) took out of
    /// the identity index while nothing held them (and keys of some since
    /// put back or removed, dropped when next looked at). Always empty on
    /// the world's path.
    parked: Vec<FailureKey>,
    /// A parked failure is held again since the parked ones were last
    /// looked at: the next look-up by identity puts it back first.
    regained: bool,
    /// A parked failure went back into the identity index, where another
    /// failure of its error may be: only then can an identity name two
    /// entries, and a look-up by identity must walk them all and take the
    /// one minted last. Their order in the index is the hasher's (its seed
    /// is drawn anew for each store) and the other entries', so taking the
    /// first found named the older one in some stores and the newer in
    /// others. Never set on the world's path, which never parks: there a
    /// look-up stops at its first match.
    shared: bool,
    /// The error of the failure removed last, kept for the room of its
    /// strings: the next failure minted writes its own into them, so a
    /// failure that comes and goes (a launch fails, a later launch writes
    /// its bytes again, it fails again) allocates nothing once its strings
    /// fit.
    spare: Spare,
}

/// The error of the failure removed last, kept for the room of its
/// strings ([`Failures`]' `spare`). One error at most, and only one whose
/// strings have no more than [`SPARE_ROOM`] bytes of room each, so that a
/// failure minted into it holds at most that much more than its own
/// strings.
#[derive(Default)]
struct Spare(Option<ErrorInfo>);

/// With its room, so that a clone's next new failure allocates what its
/// original's would.
impl Clone for Spare {
    fn clone(&self) -> Self {
        Spare(self.0.as_ref().map(CloneWithRoom::clone_with_room))
    }
}

/// Room, and no failure of the world's: printed as its name alone, so that
/// two worlds holding the same failures print the same whatever went
/// before them.
impl fmt::Debug for Spare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Spare")
    }
}

/// The most room a kept error's string may have ([`Failures`]' spare): a
/// runtime's error messages are a line or two; a longer one is given
/// back when its failure goes.
const SPARE_ROOM: usize = 1024;

/// A copy with the room its original has (`CloneWithRoom`), so that a
/// clone's first new failure allocates only its strings, as its
/// original's would.
impl Clone for Failures {
    fn clone(&self) -> Self {
        Failures {
            store: self.store.clone_with_room(),
            by_identity: self.by_identity.clone(),
            by_id: self.by_id.clone(),
            hasher: self.hasher.clone(),
            minted: self.minted,
            unheld: self.unheld.clone_with_room(),
            last: self.last,
            parked: self.parked.clone_with_room(),
            regained: self.regained,
            shared: self.shared,
            spare: self.spare.clone(),
        }
    }
}

impl Failures {
    /// The live failure behind `key`.
    #[inline]
    pub fn get(&self, key: FailureKey) -> Option<&Failure> {
        self.store.get(key)
    }

    /// The identity hash of `(kind, kernel, message)`, [`PARKED`] clear.
    #[inline]
    fn identity_of(&self, kind: &str, kernel: &str, message: &str) -> u64 {
        self.hasher.hash_one((kind, kernel, message)) & !PARKED
    }

    /// The key of the live failure named `id`.
    pub fn key_of(&self, id: FailureId) -> Option<FailureKey> {
        self.by_id.get(&id).copied()
    }

    /// Every live failure, in no particular order: slot order, which the
    /// calls alone decide (not the indexes' hash seed), so the same for
    /// the same calls in every run.
    pub fn iter(&self) -> impl Iterator<Item = (FailureKey, &Failure)> {
        self.store.iter()
    }

    /// How many failures are alive.
    #[inline]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether no failure is alive.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// How many failure ids were ever minted.
    #[inline]
    pub fn minted(&self) -> u64 {
        self.minted
    }

    /// The live failure with identity `(kind, kernel, message)`, without
    /// counting an occurrence: one hash of the three strings. Where an
    /// identity names more than one failure, which only a caller of
    /// [`find_held_or_mint`](Self::find_held_or_mint) that prunes seldom
    /// can make, the one minted last (a held one whose return to the
    /// identity index waits for the next look-up that counts included), as
    /// [`find_or_mint`](Self::find_or_mint) counts: the same answer in
    /// every run, whatever seed the hasher drew. (`find_held_or_mint`
    /// takes the one minted last of those something holds, so where the
    /// newest is held no longer and not yet pruned, it names an older
    /// one.)
    pub fn find(&self, kind: &str, kernel: &str, message: &str) -> Option<FailureKey> {
        let identity = self.identity_of(kind, kernel, message);
        let indexed = self.find_hashed(identity, kind, kernel, message);
        if !self.regained {
            return indexed;
        }
        let regained = self.parked.iter().copied().filter(|&k| {
            self.store
                .get(k)
                .is_some_and(|f| f.parked() && f.held() && f.error.is(kind, kernel, message))
        });
        self.newest(indexed.into_iter().chain(regained))
    }

    /// [`find`](Self::find) of an identity whose hash is `identity`, in the
    /// identity index alone: its first entry of that error, or, once an
    /// identity may name more than one (`shared`), the one minted last.
    fn find_hashed(
        &self,
        identity: u64,
        kind: &str,
        kernel: &str,
        message: &str,
    ) -> Option<FailureKey> {
        let store = &self.store;
        if !self.shared {
            return self
                .by_identity
                .find(identity, |&k| store[k].error.is(kind, kernel, message))
                .copied();
        }
        self.newest(self.by_identity.iter_hash(identity).copied().filter(|&k| {
            store
                .get(k)
                .is_some_and(|f| f.error.is(kind, kernel, message))
        }))
    }

    /// The live failure among `keys` minted last: ids are minted in order,
    /// so the greatest id, whatever order the keys come in.
    fn newest(&self, keys: impl Iterator<Item = FailureKey>) -> Option<FailureKey> {
        keys.filter_map(|k| Some((k, self.store.get(k)?.id)))
            .max_by_key(|&(_, id)| id)
            .map(|(k, _)| k)
    }

    /// The live failure with identity `(kind, kernel, message)`, its
    /// occurrence count raised by one; or a newly minted one with one
    /// occurrence. A new failure carries nothing yet, so it is queued for
    /// pruning: if the taint that follows claims no byte, it goes.
    pub fn find_or_mint(&mut self, kind: &str, kernel: &str, message: &str) -> FailureKey {
        self.occur(kind, kernel, message, false).0
    }

    /// [`find_or_mint`](Self::find_or_mint), with the failure's public id.
    /// `repeat`: the three strings are known to be those of the previous
    /// call (the same bytes), so they need not be compared again.
    #[inline]
    pub(crate) fn occur(
        &mut self,
        kind: &str,
        kernel: &str,
        message: &str,
        repeat: bool,
    ) -> (FailureKey, FailureId) {
        if let Some(key) = self.last
            && let Some(failure) = self.store.get_mut(key)
            && (repeat || failure.error.is(kind, kernel, message))
        {
            failure.occurrences = failure.occurrences.saturating_add(1);
            return (key, failure.id);
        }
        self.occur_hashed(kind, kernel, message)
    }

    #[inline(never)]
    fn occur_hashed(&mut self, kind: &str, kernel: &str, message: &str) -> (FailureKey, FailureId) {
        let key = self.find_or_mint_hashed(kind, kernel, message);
        self.last = Some(key);
        (key, self.store.get(key).map_or(FailureId::ZERO, |f| f.id))
    }

    fn find_or_mint_hashed(&mut self, kind: &str, kernel: &str, message: &str) -> FailureKey {
        if self.regained {
            self.unpark_regained();
        }
        let identity = self.identity_of(kind, kernel, message);
        if let Some(key) = self.find_hashed(identity, kind, kernel, message) {
            let failure = &mut self.store[key];
            failure.occurrences = failure.occurrences.saturating_add(1);
            return key;
        }
        self.mint(identity, kind, kernel, message)
    }

    /// A new failure of identity `(kind, kernel, message)`, whose hash is
    /// `identity`, with one occurrence. It carries nothing yet, so it is
    /// queued for pruning: if the taint that follows claims no byte, it
    /// goes.
    fn mint(&mut self, identity: u64, kind: &str, kernel: &str, message: &str) -> FailureKey {
        self.minted = self.minted.saturating_add(1);
        let id = FailureId(self.minted);
        let error = match self.spare.0.take() {
            Some(mut spare) => {
                spare.refill(kind, kernel, message);
                spare
            }
            None => ErrorInfo::new(kind, kernel, message),
        };
        let key = self.store.insert(Failure {
            id,
            error,
            occurrences: 1,
            skipped: 0,
            carriers: 0,
            pins: 0,
            identity,
        });
        let store = &self.store;
        self.by_identity
            .insert_unique(identity, key, |&k| store[k].hash());
        self.by_id.insert(id, key);
        self.queue_unheld(key);
        key
    }

    /// One more allocation carries `key`.
    #[inline]
    pub(crate) fn gain_carrier(&mut self, key: FailureKey) {
        if let Some(f) = self.store.get_mut(key) {
            f.carriers = f.carriers.saturating_add(1);
            if f.parked() {
                self.regain();
            }
        }
    }

    /// A parked failure is held again: the next look-up by identity puts
    /// it back in the index first. The failure found last is forgotten
    /// too, since the one held again may be a newer failure of its error,
    /// which `occur`'s comparison of strings with the last one would pass
    /// over, counting the older. Never on the world's path, which never
    /// parks.
    #[cold]
    fn regain(&mut self) {
        self.regained = true;
        self.last = None;
    }

    /// Puts every parked failure that something holds again back in the
    /// identity index, and forgets the parked keys of failures removed or
    /// put back since. A failure
    /// [`find_held_or_mint`](Self::find_held_or_mint) took out of the index
    /// while nothing held it is so found by its error again once a taint of
    /// its id holds it, whatever the path: [`pool::taint_with`](crate::pool::taint_with),
    /// a [`StreamMemory`](crate::pool::StreamMemory) or a [`ClaimSet`](crate::ClaimSet)
    /// called directly. Runs only after such a taint (the taint sets
    /// `regained`, no more, so the world's path pays one bit test), once,
    /// at the next look-up: O(p) for p parked keys.
    #[cold]
    #[inline(never)]
    fn unpark_regained(&mut self) {
        self.regained = false;
        let mut parked = core::mem::take(&mut self.parked);
        parked.retain(|&key| {
            let Some(f) = self.store.get_mut(key).filter(|f| f.parked()) else {
                return false;
            };
            if !f.held() {
                return true;
            }
            f.identity &= !PARKED;
            let identity = f.identity;
            self.shared = true;
            let store = &self.store;
            self.by_identity
                .insert_unique(identity, key, |&k| store[k].hash());
            false
        });
        self.parked = parked;
    }

    /// One allocation no longer carries `key`.
    #[inline]
    pub(crate) fn lose_carrier(&mut self, key: FailureKey) {
        if let Some(f) = self.store.get_mut(key) {
            f.carriers = f.carriers.saturating_sub(1);
            if !f.held() {
                self.queue_unheld(key);
            }
        }
    }

    /// Queues `key`, which nothing holds any more, for the next prune —
    /// keeping the queue bounded for a caller that prunes seldom (the
    /// world prunes after every event, so for it the bound never acts).
    #[inline]
    fn queue_unheld(&mut self, key: FailureKey) {
        self.unheld.push(key);
        self.bound_unheld();
    }

    /// Something (a doomed capture window) holds `key` alive.
    pub(crate) fn pin(&mut self, key: FailureKey) {
        if let Some(f) = self.store.get_mut(key) {
            f.pins = f.pins.saturating_add(1);
            if f.parked() {
                self.regain();
            }
        }
    }

    /// The pin taken by [`pin`](Self::pin) is let go.
    pub(crate) fn unpin(&mut self, key: FailureKey) {
        if let Some(f) = self.store.get_mut(key) {
            f.pins = f.pins.saturating_sub(1);
            if !f.held() {
                self.queue_unheld(key);
            }
        }
    }

    /// A launch was skipped because it read bytes `key` taints; returns the
    /// failure's public id.
    #[inline]
    pub(crate) fn count_skip(&mut self, key: FailureKey) -> FailureId {
        match self.store.get_mut(key) {
            Some(f) => {
                f.skipped = f.skipped.saturating_add(1);
                f.id
            }
            None => FailureId::ZERO,
        }
    }

    /// Whether some failure may have nothing left holding it.
    #[inline]
    pub(crate) fn has_unheld(&self) -> bool {
        !self.unheld.is_empty()
    }

    /// The next failure that may have nothing left holding it.
    #[inline]
    pub(crate) fn pop_unheld(&mut self) -> Option<FailureKey> {
        self.unheld.pop()
    }

    /// [`find_or_mint`](Self::find_or_mint) for a caller that prunes when
    /// it likes, as the seed-shaped [`pool`](crate::pool) does: the failure
    /// of that identity that something carries or pins, its occurrences
    /// raised by one; or, when none is held, a newly minted one — the id
    /// the world, which prunes after every event, gives (SPEC §4: a failure
    /// exists while it is carried or pinned).
    ///
    /// A failure of that identity that nothing holds any more, kept only
    /// because the caller has not pruned yet, stays in the store under its
    /// id until the caller prunes: a caller holding that id may still taint
    /// with it ([`pool::taint_with`](crate::pool::taint_with)), which holds
    /// it again, and then it is found here again. So on this path an
    /// identity may name more than one failure at once (one held through
    /// its old id, one minted since); this finds the held one minted last.
    /// The world's own path ([`find_or_mint`](Self::find_or_mint)) never
    /// sees two.
    ///
    /// The unheld failures of that identity it passes over leave the
    /// index (each once, so O(1) amortized) and come back only when held
    /// again, by a taint of their id through any path: however many a
    /// caller leaves unpruned, the look-up walks only the held ones.
    ///
    /// Those it does walk: every held failure of that identity, so a
    /// look-up is O(h) for h of them, and the first look-up after a taint
    /// of their ids held h again puts them back in the index at about
    /// O(h²) (their entries share one hash). The world's path never holds
    /// two; a caller that keeps tainting with the ids of failures its
    /// error minted anew gets h of them. Minting h = 100,000 (release,
    /// taint the error again, h times) and then holding every id again
    /// with [`pool::taint_with`](crate::pool::taint_with) took 56 ms; the
    /// next look-up 0.29 s, and each after it 2.7 ms (10 µs at h =
    /// 1,000, 138 µs at 10,000), a [`pool::taint`](crate::pool::taint)
    /// and [`pool::written`](crate::pool::written) of one binding each,
    /// which take 150 ns in all at h = 1.
    pub fn find_held_or_mint(&mut self, kind: &str, kernel: &str, message: &str) -> FailureKey {
        if self.regained {
            self.unpark_regained();
        }
        let identity = self.identity_of(kind, kernel, message);
        loop {
            let store = &self.store;
            let Ok(unheld) = self.by_identity.find_entry(identity, |&k| {
                store
                    .get(k)
                    .is_some_and(|f| !f.held() && f.error.is(kind, kernel, message))
            }) else {
                break;
            };
            let (key, _) = unheld.remove();
            self.park(key);
        }
        let store = &self.store;
        let held = self
            .by_identity
            .iter_hash(identity)
            .filter_map(|&k| Some((k, store.get(k)?)))
            .filter(|(_, f)| f.error.is(kind, kernel, message))
            .max_by_key(|(_, f)| f.id)
            .map(|(k, _)| k);
        let key = match held.and_then(|key| Some((key, self.store.get_mut(key)?))) {
            Some((key, failure)) => {
                failure.occurrences = failure.occurrences.saturating_add(1);
                key
            }
            None => self.mint(identity, kind, kernel, message),
        };
        // Found or minted last, for `occur`'s comparison of strings: left
        // at an older failure of this error, a later `find_or_mint` would
        // count that one, not this newer one.
        self.last = Some(key);
        key
    }

    /// Marks `key`, just taken out of the identity index, as parked, and
    /// keeps the list of parked keys no longer than about twice the live
    /// failures (and 64) by the same [`bound`] as the prune queue: O(1)
    /// amortized.
    fn park(&mut self, key: FailureKey) {
        if let Some(f) = self.store.get_mut(key) {
            f.identity |= PARKED;
            self.parked.push(key);
        }
        bound(&mut self.parked, &self.store, Failure::parked);
    }

    /// Removes `key` if nothing holds it, and no other failure: what a
    /// caller that prunes when it likes does with the failure it just
    /// found or minted. Whether it went. O(log n) amortized for n live
    /// failures: the queue of failures a prune will look at is kept no
    /// longer than about twice the live failures, however seldom the
    /// caller prunes.
    pub(crate) fn remove_if_unheld(&mut self, key: FailureKey) -> bool {
        let removed = self.get(key).is_some_and(|f| !f.held()) && self.remove(key);
        self.bound_unheld();
        removed
    }

    /// Keeps the queue of failures that may have nothing left holding them
    /// no longer than the live failures, for a caller that prunes seldom:
    /// keys of failures removed since, or held again, go, and each key is
    /// kept once. O(q log q) for a queue of q keys when it runs, which is
    /// only once the queue has grown past twice the live failures (and
    /// 64): O(log q) amortized a push.
    fn bound_unheld(&mut self) {
        if bound(&mut self.unheld, &self.store, |f| !f.held()) {
            self.unheld.sort_unstable();
            self.unheld.dedup();
        }
    }

    /// How many keys the list of parked failures holds.
    #[cfg(test)]
    pub(crate) fn parked(&self) -> usize {
        self.parked.len()
    }

    /// How many keys wait in the queue of failures to look at when pruning.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.unheld.len()
    }

    /// Removes `key` and its index entries, keeping its error's strings
    /// for the next failure minted. Whether there was such a failure.
    pub(crate) fn remove(&mut self, key: FailureKey) -> bool {
        let Some(failure) = self.store.remove(key) else {
            return false;
        };
        if let Ok(entry) = self.by_identity.find_entry(failure.hash(), |&k| k == key) {
            entry.remove();
        }
        self.by_id.remove(&failure.id);
        if failure.error.room() <= SPARE_ROOM {
            self.spare.0 = Some(failure.error);
        }
        true
    }

    /// Gives back the spare error's strings, kept for the next failure
    /// minted, which then allocates its own.
    pub(crate) fn give_back_spare(&mut self) {
        self.spare.0 = None;
    }

    /// The indexes' own agreements, for
    /// [`World::check_invariants`](crate::World::check_invariants) and the
    /// pool's tests: each live failure's stored identity is its error's
    /// hash (its [`PARKED`] bit aside); it is in the identity index once
    /// unless parked, and not at all if parked; the index holds nothing
    /// else; and the id index maps exactly the live failures' ids to
    /// them. An entry too many is memory a caller that never prunes would
    /// lose for good; one too few, a failure its error no longer finds.
    /// O(failures): for tests and fuzzing. Returns what is broken.
    pub(crate) fn check_index(&self) -> Result<(), String> {
        let mut indexed = 0usize;
        for (key, f) in self.store.iter() {
            let e = &f.error;
            if f.hash() != self.identity_of(&e.kind, &e.kernel, &e.message) {
                return Err(format!(
                    "failure {}: its identity is not its error's hash",
                    f.id
                ));
            }
            let entries = self
                .by_identity
                .iter_hash(f.hash())
                .filter(|&&k| k == key)
                .count();
            let expected = usize::from(!f.parked());
            if entries != expected {
                return Err(format!(
                    "failure {}: {entries} identity index entries, {expected} expected",
                    f.id
                ));
            }
            indexed += expected;
            if self.by_id.get(&f.id) != Some(&key) {
                return Err(format!("failure {}: not found by its id", f.id));
            }
        }
        if self.by_identity.len() != indexed {
            return Err(format!(
                "the identity index holds {} entries for {indexed} indexed failures",
                self.by_identity.len()
            ));
        }
        if self.by_id.len() != self.store.len() {
            return Err(format!(
                "the id index holds {} ids for {} failures",
                self.by_id.len(),
                self.store.len()
            ));
        }
        Ok(())
    }
}

/// The bound on a list of failures to look at later (the prune queue, the
/// parked failures): once `keys` is longer than twice the live failures and
/// 64, only the keys of live failures that `keep` takes stay. Whether it
/// compacted the list.
fn bound(
    keys: &mut Vec<FailureKey>,
    store: &SlotMap<FailureKey, Failure>,
    keep: impl Fn(&Failure) -> bool,
) -> bool {
    if keys.len() <= 2 * store.len() + 64 {
        return false;
    }
    keys.retain(|&k| store.get(k).is_some_and(&keep));
    true
}

#[cfg(test)]
mod tests {
    use super::{ErrorInfo, FailureId, FailureKey, Failures};
    use alloc::format;
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    /// Many identities that share their kind and kernel and differ in
    /// their message: each finds its own failure without counting an
    /// occurrence, and an identity never minted finds none. (Identities
    /// that differ hash apart, so this pins the message's comparison; the
    /// kind's and kernel's matter only when two hashes meet.)
    #[test]
    fn find_names_each_of_many_look_alike_identities_and_counts_nothing() {
        let mut failures = Failures::default();
        let keys: Vec<_> = (0..2_000)
            .map(|i| {
                let message = format!("error {i}");
                (failures.find_or_mint("compile", "fill", &message), message)
            })
            .collect();
        for (key, message) in &keys {
            assert_eq!(failures.find("compile", "fill", message), Some(*key));
            assert_eq!(failures.get(*key).map(|f| f.occurrences), Some(1));
            assert_eq!(failures.find("launch", "fill", message), None);
            assert_eq!(failures.find("compile", "gelu", message), None);
        }
        assert_eq!(failures.find("compile", "fill", "error 2000"), None);
    }

    #[test]
    fn the_strings_kept_for_the_next_failure_are_not_printed_nor_kept_when_long() {
        let mut failures = Failures::default();
        let key = failures.find_or_mint("launch", "fill", "secret A");
        assert!(failures.remove(key));
        assert!(failures.spare.0.is_some(), "a short error is kept");
        let printed = format!("{failures:?}");
        assert!(!printed.contains("secret A"), "{printed}");
        assert!(printed.contains("spare: Spare"), "{printed}");
        assert!(printed.contains("minted: 1"), "{printed}");

        let long = "x".repeat(super::SPARE_ROOM + 1);
        let key = failures.find_or_mint("launch", "fill", &long);
        assert!(failures.spare.0.is_none(), "the kept error went into it");
        assert!(failures.remove(key));
        assert!(failures.spare.0.is_none(), "an error past the room kept");
    }

    /// Two failures, sound; the key of the first, failure 1.
    fn two_failures() -> (FailureKey, Failures) {
        let mut failures = Failures::default();
        let key = failures.find_or_mint("compile", "fill", "bad PTX");
        failures.find_or_mint("launch", "gelu", "too many blocks");
        (key, failures)
    }

    /// The check of the indexes, held to its word: each break is named.
    #[test]
    fn the_index_check_names_a_stale_identity_an_entry_too_many_or_too_few_and_a_lost_id() {
        let (key, mut failures) = two_failures();
        assert_eq!(failures.check_index(), Ok(()));
        failures.store[key].identity ^= 2;
        assert_eq!(
            failures.check_index(),
            Err(String::from(
                "failure 1: its identity is not its error's hash"
            ))
        );
        let (key, mut failures) = two_failures();
        let hash = failures.store[key].hash();
        let store = &failures.store;
        failures
            .by_identity
            .insert_unique(hash, key, |&k| store[k].hash());
        assert_eq!(
            failures.check_index(),
            Err(String::from(
                "failure 1: 2 identity index entries, 1 expected"
            ))
        );
        let (key, mut failures) = two_failures();
        failures.store[key].identity |= super::PARKED;
        assert_eq!(
            failures.check_index(),
            Err(String::from(
                "failure 1: 1 identity index entries, 0 expected"
            ))
        );
        let (key, mut failures) = two_failures();
        let id = failures.store[key].id;
        failures.by_id.remove(&id);
        assert_eq!(
            failures.check_index(),
            Err(String::from("failure 1: not found by its id"))
        );
    }

    /// Entries of no failure in either index are named too: an index
    /// longer than the store is memory a caller that never prunes loses.
    #[test]
    fn the_index_check_names_an_identity_entry_or_an_id_of_no_failure() {
        let (key, mut failures) = two_failures();
        let hash = failures.store[key].hash();
        let store = &failures.store;
        failures
            .by_identity
            .insert_unique(hash, FailureKey::default(), |&k| {
                store.get(k).map_or(0, |f| f.hash())
            });
        assert_eq!(
            failures.check_index(),
            Err(String::from(
                "the identity index holds 3 entries for 2 indexed failures"
            ))
        );
        let (key, mut failures) = two_failures();
        failures.by_id.insert(FailureId::new(9).unwrap(), key);
        assert_eq!(
            failures.check_index(),
            Err(String::from("the id index holds 3 ids for 2 failures"))
        );
    }

    /// A failure the seed's path parked (passed over while nothing held
    /// it) and that a carrier or a pin holds again is found by the world's
    /// look-up, not minted a second time: the look-up puts it back in the
    /// identity index first.
    #[test]
    fn a_parked_failure_held_again_is_found_by_find_or_mint() {
        let holds: [fn(&mut Failures, FailureKey); 2] = [Failures::gain_carrier, Failures::pin];
        for (i, hold) in holds.into_iter().enumerate() {
            let mut failures = Failures::default();
            let old = failures.find_held_or_mint("compile", "fill", "bad PTX");
            let new = failures.find_held_or_mint("compile", "fill", "bad PTX");
            assert_ne!(old, new, "case {i}: the unheld one is passed over");
            assert_eq!(failures.parked(), 1, "case {i}");
            failures.remove(new);
            hold(&mut failures, old);
            assert_eq!(
                failures.find_or_mint("compile", "fill", "bad PTX"),
                old,
                "case {i}"
            );
            assert_eq!(failures.store[old].occurrences, 2, "case {i}");
            assert_eq!((failures.minted(), failures.parked()), (2, 0), "case {i}");
            assert_eq!(failures.check_index(), Ok(()), "case {i}");
        }
    }

    /// Two held failures of one error (one held again through its old id
    /// after the error minted a new one) are named the same way whatever
    /// seed the store's hasher drew: `find` and `find_or_mint` take the
    /// one minted last, as `find_held_or_mint` does. Where the two lie in
    /// the identity index — which the seed and the other failures decide
    /// (here the index grows past them, and entries that had wrapped round
    /// its end come back in another order) — changes nothing. Many stores,
    /// each with its own seed: before, some of them named the older one.
    /// And `find_or_mint`, which compares the strings of the failure found
    /// or minted last before it hashes, counts the newer one even when it
    /// found the older one last.
    #[test]
    fn two_held_failures_of_one_error_are_named_as_the_newer_whatever_the_hash_seed() {
        for store in 0..200 {
            let mut failures = Failures::default();
            let old = failures.find_or_mint("compile", "fill", "bad PTX");
            let new = failures.find_held_or_mint("compile", "fill", "bad PTX");
            assert_ne!(old, new, "store {store}: nothing held the old one");
            failures.gain_carrier(new);
            failures.gain_carrier(old);
            assert_eq!(
                failures.find_or_mint("compile", "fill", "bad PTX"),
                new,
                "store {store}"
            );
            // The first look-up by hash puts the old one back in the
            // identity index, beside the new; the index then grows.
            for other in 0..40 {
                failures.find_or_mint("launch", "gelu", &format!("error {other}"));
            }
            assert_eq!(
                failures.find("compile", "fill", "bad PTX"),
                Some(new),
                "store {store}"
            );
            assert_eq!(
                failures.find_or_mint("compile", "fill", "bad PTX"),
                new,
                "store {store}"
            );
            let occurrences = |key: FailureKey| failures.store[key].occurrences;
            assert_eq!(
                (occurrences(old), occurrences(new)),
                (1, 3),
                "store {store}"
            );
            assert_eq!(failures.check_index(), Ok(()), "store {store}");
        }
    }

    /// The failure `find_or_mint` counts without hashing, the one found
    /// or minted last, is never an older failure of its error than `find`
    /// names: not one `find_held_or_mint` passed over and parked before it
    /// minted anew, nor one it found while a newer one was parked, once
    /// that newer one is held again. Before the store forgot the failure
    /// found last when a parked one was held again, `find_or_mint` counted
    /// the older of the two while `find` named the newer; and were
    /// `find_held_or_mint` not to become the failure found last, it would
    /// count the parked one it had passed over.
    #[test]
    fn find_or_mint_counts_the_failure_find_names_not_an_older_one_found_last() {
        let mut failures = Failures::default();
        failures.find_or_mint("compile", "fill", "bad PTX");
        let older = failures.find_held_or_mint("compile", "fill", "bad PTX");
        assert_eq!(failures.find("compile", "fill", "bad PTX"), Some(older));
        assert_eq!(failures.find_or_mint("compile", "fill", "bad PTX"), older);
        let newer = failures.find_held_or_mint("compile", "fill", "bad PTX");
        failures.gain_carrier(older);
        // The look-up puts the older one back and parks the newer, which
        // nothing holds: the older is found last.
        assert_eq!(
            failures.find_held_or_mint("compile", "fill", "bad PTX"),
            older
        );
        failures.gain_carrier(newer);
        assert_eq!(failures.find("compile", "fill", "bad PTX"), Some(newer));
        assert_eq!(failures.find_or_mint("compile", "fill", "bad PTX"), newer);
        let occurrences = |key: FailureKey| failures.store[key].occurrences;
        assert_eq!((occurrences(older), occurrences(newer)), (3, 2));
        assert_eq!(failures.check_index(), Ok(()));
    }

    #[test]
    fn an_error_displays_as_kind_in_kernel_then_message() {
        let error = ErrorInfo::new("compile", "fill", "bad PTX");
        assert_eq!(error.to_string(), "compile in fill: bad PTX");
    }
}
