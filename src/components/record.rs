//! Skip records: the provenance of taint that came from a skipped launch.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use slotmap::{SlotMap, new_key_type};

use crate::components::CloneWithRoom;
use crate::components::claim::Origin;
use crate::components::failure::FailureKey;

new_key_type! {
    /// A skip record's slot in the [`Records`] store.
    pub struct RecordKey;
    /// An interned kernel name.
    pub struct KernelKey;
}

/// One skipped launch: which launch, which kernel, which memory it needed,
/// and how those bytes came to carry the failure (its *cause*).
///
/// A claim whose origin is a record says "these bytes carry the failure
/// because this launch was skipped"; following `cause` from record to record
/// walks back to the launch that read bytes the failure tainted directly.
/// That is the chain a tainted read reports, and it is exact for as long as
/// the bytes are live: provenance sits on the claim, not in a capped list of
/// recent skips.
///
/// A record lives exactly while a claim, another record or a pin refers to
/// it. 56 bytes.
#[derive(Clone, Debug)]
pub struct SkipRecord {
    /// The skipped launch's number.
    pub launch: u64,
    /// Its kernel, interned (see [`Records::kernel_name`]).
    pub kernel: KernelKey,
    /// The memory id of the binding whose claim decided the skip.
    pub needed: u64,
    /// The deciding claim's origin: `None` when it was the root, or when the
    /// chain was cut at `chain_limit`.
    pub cause: Option<RecordKey>,
    /// The failure the skip read, which its write set now carries.
    pub failure: FailureKey,
    /// 1 for a record caused by the root (or cut), else its cause's depth + 1;
    /// never more than `chain_limit`.
    pub depth: u32,
    /// Whether the cause was cut because the chain would have grown past
    /// `chain_limit`.
    pub cut: bool,
    refs: u64,
}

impl SkipRecord {
    /// How many claims, records and pins refer to this record.
    pub fn refs(&self) -> u64 {
        self.refs
    }
}

/// A string's address and length: the same bytes for as long as the string
/// is borrowed, and forever for a `'static` one. What a batch's cache of
/// strings compares, and what a registered kernel name is found by.
#[inline(always)]
pub(crate) fn address(s: &str) -> (usize, usize) {
    (s.as_ptr() as usize, s.len())
}

#[derive(Clone, Debug)]
struct KernelName {
    name: Box<str>,
    hash: u64,
    /// The live records that name it, plus one if it is registered.
    refs: u64,
}

/// Where a registered kernel name lives: its address and length, and its
/// interned key.
#[derive(Clone, Debug)]
struct Registered {
    at: (usize, usize),
    kernel: KernelKey,
}

/// The record store: a slot map of [`SkipRecord`]s and the kernel names they
/// share, interned so that a skip costs no heap allocation once its kernel
/// has been seen.
///
/// Costs: making a record O(1) expected (one hash of the kernel name, or
/// of its address once the name is registered); 56 bytes per record plus
/// slot-map overhead; each distinct kernel name of a live record, and each
/// registered one, is stored once.
#[derive(Debug, Default)]
pub struct Records {
    store: SlotMap<RecordKey, SkipRecord>,
    kernels: SlotMap<KernelKey, KernelName>,
    kernel_index: HashTable<KernelKey>,
    hasher: DefaultHashBuilder,
    /// Records whose reference count dropped to zero since the last prune.
    unreferenced: Vec<RecordKey>,
    /// The kernel interned last (the null key before the first): a chain of
    /// skips of one kernel compares one name instead of hashing it.
    last_kernel: KernelKey,
    /// References taken to `last_kernel` and not yet added to its count:
    /// its name's references are its count plus these. While there are
    /// some, the name is alive (a name goes only when its references do,
    /// and [`release_kernel`](Self::release_kernel) adds these first), so a
    /// skip of the same kernel as the last takes one more with no look-up.
    unadded: u64,
    /// The registered names, by address (see
    /// [`register_kernel`](Self::register_kernel)).
    registered: HashTable<Registered>,
}

/// A copy with the room its original has (`CloneWithRoom`), so that a
/// clone's first skip allocates nothing, as its original's does once warm.
impl Clone for Records {
    fn clone(&self) -> Self {
        Records {
            store: self.store.clone_with_room(),
            kernels: self.kernels.clone_with_room(),
            kernel_index: self.kernel_index.clone(),
            hasher: self.hasher.clone(),
            unreferenced: self.unreferenced.clone_with_room(),
            last_kernel: self.last_kernel,
            unadded: self.unadded,
            registered: self.registered.clone(),
        }
    }
}

impl Records {
    /// The live record behind `key`.
    #[inline]
    pub fn get(&self, key: RecordKey) -> Option<&SkipRecord> {
        self.store.get(key)
    }

    /// The live record behind `key`, to change by hand: only for the tests
    /// that break a world on purpose.
    #[cfg(test)]
    pub(crate) fn get_mut(&mut self, key: RecordKey) -> Option<&mut SkipRecord> {
        self.store.get_mut(key)
    }

    /// Counts one more reference to the kernel name `key` than there is:
    /// only for the tests that break a world on purpose.
    #[cfg(test)]
    pub(crate) fn miscount_kernel(&mut self, key: KernelKey) {
        if let Some(k) = self.kernels.get_mut(key) {
            k.refs += 1;
        }
    }

    /// Every live record, in no particular order: slot order, which the
    /// calls alone decide (not the kernel index's hash seed), so the same
    /// for the same calls in every run.
    pub fn iter(&self) -> impl Iterator<Item = (RecordKey, &SkipRecord)> {
        self.store.iter()
    }

    /// How many records are alive.
    #[inline]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether no record is alive.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// The name of an interned kernel (empty if the key is stale).
    pub fn kernel_name(&self, key: KernelKey) -> &str {
        self.kernels.get(key).map_or("", |k| &k.name)
    }

    /// Makes the record of a skip whose deciding claim had origin `cause`.
    /// `kernel` is the name and whether it is known to be the name of the
    /// previous record made (the same bytes), so that it need not be
    /// compared again.
    ///
    /// The chain is cut rather than grown past `chain_limit`: the record then
    /// has depth 1, no cause, and remembers the cut. The new record is
    /// referenced by nothing yet: the caller taints the skip's write set with
    /// it and then calls [`queue_if_unreferenced`](Self::queue_if_unreferenced).
    /// Always in line: once `World::skip` was, the compiler left this out
    /// of line, a call on every skip.
    #[inline(always)]
    pub(crate) fn make(
        &mut self,
        launch: u64,
        (kernel, repeat): (&str, bool),
        needed: u64,
        cause: Origin,
        failure: FailureKey,
        chain_limit: u32,
    ) -> RecordKey {
        let (cause, depth, cut) = match cause {
            Origin::Root => (None, 1, false),
            Origin::Skip(c) => match self.store.get_mut(c) {
                Some(r) if r.depth < chain_limit => {
                    r.refs = r.refs.saturating_add(1);
                    (Some(c), r.depth + 1, false)
                }
                Some(_) => (None, 1, true),
                // A claim never outlives its record; treat a stale origin as
                // the root rather than panic.
                None => (None, 1, false),
            },
        };
        let kernel = self.intern(kernel, repeat);
        self.store.insert(SkipRecord {
            launch,
            kernel,
            needed,
            cause,
            failure,
            depth,
            cut,
            refs: 0,
        })
    }

    /// Queues `key` for pruning if nothing refers to it: what the caller of
    /// [`make`](Self::make) does once the skip's write set is tainted (a skip
    /// with an empty write set leaves no record behind).
    #[inline]
    pub(crate) fn queue_if_unreferenced(&mut self, key: RecordKey) {
        if self.store.get(key).is_some_and(|r| r.refs == 0) {
            self.unreferenced.push(key);
        }
    }

    /// How many live records name `key`, plus one if it is registered: its
    /// count and the references waiting to be added to it.
    fn kernel_refs(&self, key: KernelKey) -> u64 {
        let waiting = if key == self.last_kernel {
            self.unadded
        } else {
            0
        };
        self.kernels
            .get(key)
            .map_or(0, |k| k.refs.saturating_add(waiting))
    }

    /// Registers `name` as a kernel the caller launches by that very
    /// string: a skip of it then finds its interned name by the string's
    /// address instead of reading and hashing the name. A scheduler whose
    /// kernel names are `&'static str` (statics, or names it leaked once
    /// per kernel) registers each once, as it keeps rows for its buffers.
    /// A `const` is copied where it is used: its copies need not share an
    /// address, and a copy that does not is found by hashing.
    ///
    /// Sound because a `&'static str` is never freed nor changed: whatever
    /// name later sits at that address with that length is this one. A
    /// registered name stays interned for the store's life (one entry per
    /// distinct name, one per address); registering it again does nothing.
    /// Another copy of the name, at another address, is still the same
    /// kernel: it is only found by hashing, as before.
    pub fn register_kernel(&mut self, name: &'static str) {
        if self.find_registered(name).is_some() {
            return;
        }
        let kernel = self.intern_hashed(name);
        // The reference interning took is the pin that keeps the name,
        // taken once whatever the addresses: let it go if another address
        // of the name holds the pin already.
        if self.registered.iter().any(|r| r.kernel == kernel)
            && let Some(k) = self.kernels.get_mut(kernel)
        {
            k.refs = k.refs.saturating_sub(1);
        }
        let at = address(name);
        let hasher = &self.hasher;
        self.registered
            .insert_unique(hasher.hash_one(at.0), Registered { at, kernel }, |r| {
                hasher.hash_one(r.at.0)
            });
    }

    /// The interned key of `name` if its string is a registered one.
    #[inline]
    fn find_registered(&self, name: &str) -> Option<KernelKey> {
        if self.registered.is_empty() {
            return None;
        }
        let at = address(name);
        self.registered
            .find(self.hasher.hash_one(at.0), |r| r.at == at)
            .map(|r| r.kernel)
    }

    /// Always in line, as [`make`](Self::make) is: out of line it is a
    /// call on every skip.
    ///
    /// The same kernel as the last, whose name is alive while references
    /// to it wait in `unadded`, takes one more there: no look-up of the
    /// name (W2 with rows: 20 instructions a skip with the look-up).
    #[inline(always)]
    fn intern(&mut self, name: &str, repeat: bool) -> KernelKey {
        if repeat && self.unadded != 0 {
            // One for each live record of the kernel, and a slot map holds
            // fewer than 2^32 records: this cannot overflow.
            self.unadded += 1;
            return self.last_kernel;
        }
        if !repeat
            && let Some(key) = self.find_registered(name)
            && let Some(k) = self.kernels.get_mut(key)
        {
            k.refs = k.refs.saturating_add(1);
            self.make_last(key);
            return key;
        }
        if let Some(k) = self.kernels.get_mut(self.last_kernel)
            && (repeat || &*k.name == name)
        {
            // A repeat (none is waiting, or the branch above took it) starts
            // the run of references the next repeats take without a
            // look-up; another takes its reference here, so that one-launch
            // calls, which never repeat, leave nothing unadded.
            if repeat {
                self.unadded = 1;
            } else {
                k.refs = k.refs.saturating_add(1);
            }
            return self.last_kernel;
        }
        let key = self.intern_hashed(name);
        self.make_last(key);
        key
    }

    /// `key`, whose count holds the reference just taken, becomes the last
    /// kernel interned: the references waiting for the one before are added
    /// to its count first.
    #[inline]
    fn make_last(&mut self, key: KernelKey) {
        if self.unadded != 0 && key != self.last_kernel {
            self.add_unadded();
        }
        self.last_kernel = key;
    }

    /// Adds the references waiting in `unadded` to the last kernel's
    /// count: what [`make_last`](Self::make_last) does before another
    /// kernel becomes the last, and [`release_kernel`](Self::release_kernel)
    /// before the last kernel's count drops.
    #[inline]
    fn add_unadded(&mut self) {
        if self.unadded != 0 {
            let unadded = core::mem::take(&mut self.unadded);
            if let Some(k) = self.kernels.get_mut(self.last_kernel) {
                k.refs = k.refs.saturating_add(unadded);
            }
        }
    }

    #[inline(never)]
    fn intern_hashed(&mut self, name: &str) -> KernelKey {
        let hash = self.hasher.hash_one(name);
        let kernels = &self.kernels;
        if let Some(&key) = self.kernel_index.find(hash, |&k| &*kernels[k].name == name) {
            let k = &mut self.kernels[key];
            k.refs = k.refs.saturating_add(1);
            return key;
        }
        let key = self.kernels.insert(KernelName {
            name: name.into(),
            hash,
            refs: 1,
        });
        let kernels = &self.kernels;
        self.kernel_index
            .insert_unique(hash, key, |&k| kernels[k].hash);
        key
    }

    /// `n` records that named `key` went: its count drops by `n`, and the
    /// name goes with its last reference. In line, with the name's
    /// removal out of line: a call for every record removed cost W5 with
    /// rows about 10 instructions a launch.
    #[inline(always)]
    fn release_kernel(&mut self, key: KernelKey, n: u64) {
        // Nearly always none waits: that is asked first.
        if self.unadded != 0 && key == self.last_kernel {
            self.add_unadded();
        }
        let Some(k) = self.kernels.get_mut(key) else {
            return;
        };
        k.refs = k.refs.saturating_sub(n);
        if k.refs == 0 {
            let hash = k.hash;
            self.forget_kernel(key, hash);
        }
    }

    /// Removes the name behind `key`, whose hash is `hash`, which nothing
    /// refers to any more.
    #[inline(never)]
    fn forget_kernel(&mut self, key: KernelKey, hash: u64) {
        if let Ok(entry) = self.kernel_index.find_entry(hash, |&x| x == key) {
            entry.remove();
        }
        self.kernels.remove(key);
    }

    /// One more claim, record or pin refers to `key`.
    #[inline]
    pub(crate) fn add_ref(&mut self, key: RecordKey) {
        if let Some(r) = self.store.get_mut(key) {
            r.refs = r.refs.saturating_add(1);
        }
    }

    /// A reference to `key` went away.
    #[inline]
    pub(crate) fn drop_ref(&mut self, key: RecordKey) {
        if let Some(r) = self.store.get_mut(key) {
            r.refs = r.refs.saturating_sub(1);
            if r.refs == 0 {
                self.unreferenced.push(key);
            }
        }
    }

    /// Whether some record may have nothing left referring to it.
    #[inline]
    pub(crate) fn has_unreferenced(&self) -> bool {
        !self.unreferenced.is_empty()
    }

    /// Removes every queued record nothing refers to, and with each its
    /// cause when nothing else refers to that: a whole dead chain goes in
    /// one walk, without recursion and without queueing each link.
    ///
    /// A link's count is looked at where it drops to zero, so the walk
    /// looks each record up twice (to let go of its cause's reference, and
    /// to remove it) rather than three times; and the records of a chain
    /// mostly name one kernel, so their names' references go in one
    /// [`release_kernel`](Self::release_kernel) for each run of records of
    /// one kernel, not one a record (W2 with rows: a record removed costs
    /// 57 instructions with a look-up of its cause and of its kernel each).
    pub(crate) fn prune(&mut self) {
        let mut released = Released::default();
        while let Some(key) = self.unreferenced.pop() {
            if self.store.get(key).is_none_or(|r| r.refs != 0) {
                continue;
            }
            let mut next = Some(key);
            while let Some(key) = next {
                next = self.remove_unreferenced(key, &mut released);
            }
        }
        if released.records != 0 {
            self.release_kernel(released.kernel, released.records);
        }
    }

    /// Removes `key`, which nothing refers to, counting its kernel name's
    /// reference in `released`, and lets go of its cause; returns the cause
    /// if nothing refers to it any more.
    #[inline]
    fn remove_unreferenced(
        &mut self,
        key: RecordKey,
        released: &mut Released,
    ) -> Option<RecordKey> {
        let record = self.store.remove(key)?;
        if released.kernel == record.kernel {
            // One for each record this prune removed, and a slot map holds
            // fewer than 2^32 records: this cannot overflow.
            released.records += 1;
        } else {
            let kernel = core::mem::replace(&mut released.kernel, record.kernel);
            let n = core::mem::replace(&mut released.records, 1);
            if n != 0 {
                self.release_kernel(kernel, n);
            }
        }
        let cause = record.cause?;
        let r = self.store.get_mut(cause)?;
        r.refs = r.refs.saturating_sub(1);
        (r.refs == 0).then_some(cause)
    }

    /// The kernel names' own agreements, for
    /// [`World::check_invariants`](crate::World::check_invariants): every
    /// live record and every registered address names a live kernel; each
    /// kernel's references — its count, plus those waiting in `unadded`
    /// when it is the last interned — are the live records that name it,
    /// plus one if it is registered, and never none; and the index finds
    /// each kernel by its name's hash, and nothing else. A count that
    /// drifts either way is a name that goes while a record still shows
    /// it, or one that never goes. O(records + kernels): for tests and
    /// fuzzing. Returns what is broken.
    pub(crate) fn check_kernels(&self) -> Result<(), String> {
        let mut named: HashMap<KernelKey, u64> = HashMap::default();
        for r in self.store.values() {
            if !self.kernels.contains_key(r.kernel) {
                return Err(format!(
                    "record of launch {}: its kernel name is dead",
                    r.launch
                ));
            }
            *named.entry(r.kernel).or_default() += 1;
        }
        for r in &self.registered {
            if !self.kernels.contains_key(r.kernel) {
                return Err(String::from("a registered kernel name is dead"));
            }
        }
        if self.unadded != 0 && !self.kernels.contains_key(self.last_kernel) {
            return Err(format!(
                "{} references wait for a dead kernel name",
                self.unadded
            ));
        }
        for (key, k) in &self.kernels {
            let counted = self.kernel_refs(key);
            let pinned = self.registered.iter().any(|r| r.kernel == key);
            let real = named.get(&key).copied().unwrap_or(0) + u64::from(pinned);
            if counted != real {
                return Err(format!(
                    "kernel {:?}: {counted} references counted, {real} real",
                    k.name
                ));
            }
            if real == 0 {
                return Err(format!("kernel {:?}: alive with nothing naming it", k.name));
            }
            if k.hash != self.hasher.hash_one(&*k.name)
                || self.kernel_index.find(k.hash, |&x| x == key).is_none()
            {
                return Err(format!("kernel {:?}: not found by its hash", k.name));
            }
        }
        if self.kernel_index.len() != self.kernels.len() {
            return Err(format!(
                "the kernel index holds {} entries for {} names",
                self.kernel_index.len(),
                self.kernels.len()
            ));
        }
        Ok(())
    }
}

/// The kernel name of the records [`Records::prune`] removed last, and how
/// many of them in a row named it: references it has yet to let go of.
/// Fresh, the kernel is the null key, which no record names.
#[derive(Default)]
struct Released {
    kernel: KernelKey,
    records: u64,
}

#[cfg(test)]
mod tests {
    use super::Records;
    use crate::components::claim::Origin;
    use crate::components::failure::FailureKey;
    use alloc::string::String;

    /// Each kernel name is stored once while a live record uses it, and
    /// goes with the last such record; names are compared, not addresses,
    /// so two copies of one name are one kernel.
    #[test]
    fn a_kernel_name_is_stored_once_and_goes_with_its_last_record() {
        let mut records = Records::default();
        let failure = FailureKey::default();
        let names = ["gelu", "matmul", "gelu", "matmul", "gelu"].map(String::from);
        let keys: alloc::vec::Vec<_> = (0u64..)
            .zip(&names)
            .map(|(launch, name)| records.make(launch, (name, false), 1, Origin::Root, failure, 8))
            .collect();
        assert_eq!(records.kernels.len(), 2);
        assert_eq!(records.kernel_index.len(), 2);
        assert_eq!(records.kernel_name(records.store[keys[2]].kernel), "gelu");
        assert_eq!(records.kernel_refs(records.store[keys[0]].kernel), 3);
        // Nothing refers to the records: queued, they go at the next prune,
        // and their names with them.
        for &key in &keys {
            records.queue_if_unreferenced(key);
        }
        records.prune();
        assert!(records.is_empty());
        assert_eq!((records.kernels.len(), records.kernel_index.len()), (0, 0));
    }

    /// A registered name is found by its address, is the same kernel as
    /// any copy of it, and outlives the records that use it.
    #[test]
    fn a_registered_kernel_is_one_kernel_with_its_copies_and_stays_after_its_last_record() {
        static GELU: &str = "gelu";
        let mut records = Records::default();
        let failure = FailureKey::default();
        records.register_kernel(GELU);
        let copy = String::from(GELU);
        let keys = [
            records.make(0, (GELU, false), 1, Origin::Root, failure, 8),
            records.make(1, ("matmul", false), 1, Origin::Root, failure, 8),
            records.make(2, (&copy, false), 1, Origin::Root, failure, 8),
            records.make(3, (GELU, false), 1, Origin::Root, failure, 8),
        ];
        let kernel = records.store[keys[0]].kernel;
        assert_eq!(
            records.store[keys[2]].kernel, kernel,
            "a copy is the same kernel"
        );
        assert_eq!(records.store[keys[3]].kernel, kernel);
        assert_eq!(
            records.find_registered(GELU),
            Some(kernel),
            "found by address"
        );
        assert_eq!(
            records.find_registered(&copy),
            None,
            "a copy is found by hashing"
        );
        assert_eq!(records.kernel_name(kernel), "gelu");
        assert_eq!(records.kernel_refs(kernel), 1 + 3);
        for &key in &keys {
            records.queue_if_unreferenced(key);
        }
        records.prune();
        assert!(records.is_empty());
        // matmul went with its record; gelu stays, pinned once.
        assert_eq!((records.kernels.len(), records.kernel_index.len()), (1, 1));
        assert_eq!(records.kernel_refs(kernel), 1);
        let again = records.make(4, (GELU, false), 1, Origin::Root, failure, 8);
        assert_eq!(
            records.store[again].kernel, kernel,
            "the same key after the prune"
        );
    }

    /// Registering the same string again does nothing; registering another
    /// copy of the name adds its address, not a second pin.
    #[test]
    fn registering_a_name_again_or_a_copy_of_it_pins_it_once() {
        static GELU: &str = "gelu";
        let mut records = Records::default();
        records.register_kernel(GELU);
        records.register_kernel(GELU);
        assert_eq!(records.registered.len(), 1);
        let copy: &'static str = alloc::boxed::Box::leak(String::from(GELU).into_boxed_str());
        records.register_kernel(copy);
        assert_eq!(records.registered.len(), 2);
        assert_eq!(records.kernels.len(), 1);
        let kernel = records
            .registered
            .iter()
            .map(|r| r.kernel)
            .next()
            .expect("registered");
        assert_eq!(records.kernel_refs(kernel), 1);
        assert!(records.registered.iter().all(|r| r.kernel == kernel));
    }

    /// A run of skips of one kernel string takes its references without a
    /// look-up, and they wait beside the last kernel: when another kernel
    /// follows, they must be added to the first one's count before the
    /// second becomes the last, or the first name would go with a record
    /// of its still alive (and the second never go).
    #[test]
    fn a_runs_waiting_references_go_to_its_own_kernel_when_another_follows() {
        let mut records = Records::default();
        let failure = FailureKey::default();
        let (gelu, matmul) = (String::from("gelu"), String::from("matmul"));
        let first = records.make(0, (&gelu, false), 1, Origin::Root, failure, 8);
        let second = records.make(1, (&gelu, true), 1, Origin::Root, failure, 8);
        let third = records.make(2, (&matmul, false), 1, Origin::Root, failure, 8);
        let (g, m) = (records.store[first].kernel, records.store[third].kernel);
        assert_eq!(records.store[second].kernel, g);
        assert_eq!((records.kernel_refs(g), records.kernel_refs(m)), (2, 1));
        assert_eq!(records.check_kernels(), Ok(()));
        records.queue_if_unreferenced(first);
        records.prune();
        assert_eq!(
            records.kernel_name(records.store[second].kernel),
            "gelu",
            "the run's other record still shows its name"
        );
        assert_eq!(records.check_kernels(), Ok(()));
        for key in [second, third] {
            records.queue_if_unreferenced(key);
        }
        records.prune();
        assert_eq!((records.kernels.len(), records.kernel_index.len()), (0, 0));
        assert_eq!(records.check_kernels(), Ok(()));
    }

    /// The check of the kernel names, held to its word: each break is
    /// named.
    #[test]
    fn the_kernel_names_check_names_a_miscount_a_dead_name_and_a_lost_index_entry() {
        let failure = FailureKey::default();
        let sound = || {
            let mut records = Records::default();
            let key = records.make(0, ("gelu", false), 1, Origin::Root, failure, 8);
            (records.store[key].kernel, records)
        };
        let (kernel, mut records) = sound();
        assert_eq!(records.check_kernels(), Ok(()));
        records.miscount_kernel(kernel);
        assert_eq!(
            records.check_kernels(),
            Err(String::from(
                "kernel \"gelu\": 2 references counted, 1 real"
            ))
        );
        let (kernel, mut records) = sound();
        let hash = records.kernels[kernel].hash;
        records.forget_kernel(kernel, hash);
        assert_eq!(
            records.check_kernels(),
            Err(String::from("record of launch 0: its kernel name is dead"))
        );
        let (kernel, mut records) = sound();
        let hash = records.kernels[kernel].hash;
        if let Ok(entry) = records.kernel_index.find_entry(hash, |&x| x == kernel) {
            entry.remove();
        }
        assert_eq!(
            records.check_kernels(),
            Err(String::from("kernel \"gelu\": not found by its hash"))
        );
    }

    /// The rest of the kernel names' check, each break named: a registered
    /// name gone, references waiting beside a name gone, a name kept with
    /// nothing naming it, and an index entry of no name.
    #[test]
    fn a_lost_registered_name_a_lost_run_an_unused_name_and_a_stale_index_entry_are_named() {
        let failure = FailureKey::default();
        let mut records = Records::default();
        records.register_kernel("softmax");
        assert_eq!(records.check_kernels(), Ok(()));
        let kernel = records.find_registered("softmax").expect("registered");
        let hash = records.kernels[kernel].hash;
        records.forget_kernel(kernel, hash);
        assert_eq!(
            records.check_kernels(),
            Err(String::from("a registered kernel name is dead"))
        );

        // A run of one kernel leaves a reference waiting beside it.
        let mut records = Records::default();
        let first = records.make(0, ("gelu", false), 1, Origin::Root, failure, 8);
        records.make(1, ("gelu", true), 1, Origin::Root, failure, 8);
        assert_eq!(records.check_kernels(), Ok(()));
        let kernel = records.store[first].kernel;
        let hash = records.kernels[kernel].hash;
        records.store.clear();
        records.forget_kernel(kernel, hash);
        assert_eq!(
            records.check_kernels(),
            Err(String::from("1 references wait for a dead kernel name"))
        );

        let mut records = Records::default();
        let key = records.make(0, ("gelu", false), 1, Origin::Root, failure, 8);
        let kernel = records.store[key].kernel;
        records.store.remove(key);
        records.kernels[kernel].refs = 0;
        assert_eq!(
            records.check_kernels(),
            Err(String::from(
                "kernel \"gelu\": alive with nothing naming it"
            ))
        );

        let mut records = Records::default();
        let key = records.make(0, ("gelu", false), 1, Origin::Root, failure, 8);
        let hash = records.kernels[records.store[key].kernel].hash;
        let kernels = &records.kernels;
        records
            .kernel_index
            .insert_unique(hash, super::KernelKey::default(), |&k| {
                kernels.get(k).map_or(0, |k| k.hash)
            });
        assert_eq!(
            records.check_kernels(),
            Err(String::from("the kernel index holds 2 entries for 1 names"))
        );
    }
}
