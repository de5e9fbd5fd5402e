//! Streams: the slots regular stream ids fold onto, and the special streams
//! after them.

use hashbrown::HashMap;
use slotmap::{SlotMap, new_key_type};

use crate::error::Error;

new_key_type! {
    /// An initialized stream slot's entity key.
    pub struct StreamKey;
}

/// How a binding or an operation names a stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum StreamRef {
    /// A regular stream id; it folds onto slot `id % max_streams`.
    Id(u64),
    /// Special stream `index`, at slot `max_streams + index`. Reachable
    /// through the library only (launch logs name regular ids).
    Special(u16),
}

/// `stream 12`, or `special stream 0`: how errors name a stream.
impl core::fmt::Display for StreamRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StreamRef::Id(id) => write!(f, "stream {id}"),
            StreamRef::Special(index) => write!(f, "special stream {index}"),
        }
    }
}

impl From<u64> for StreamRef {
    fn from(id: u64) -> Self {
        StreamRef::Id(id)
    }
}

/// One initialized stream slot.
#[derive(Clone, Debug)]
pub struct Stream {
    /// The slot: `0..max_streams` for regular streams, after that special.
    pub slot: u64,
    /// Whether this is one of the special streams.
    pub special: bool,
}

/// The stream store: which slots are initialized.
///
/// A slot is initialized the first time an allocation is made on it (or when
/// the embedding program asks for it); resolving a binding never initializes
/// one. Slots are held sparsely, so `max_streams` costs nothing until a slot
/// is used: about 54 to 61 bytes per initialized slot, growth slack included
/// (measured over 50,000 to 500,000 slots). An initialized slot stays
/// initialized (SPEC §1 gives no way back, and the stream pool this grows
/// out of keeps its streams), even once its last allocation is freed: the
/// store grows with the distinct slots ever used — at most `max_streams +
/// num_special`, but with a huge `max_streams` one per distinct stream id
/// that ever held an allocation.
#[derive(Clone, Debug)]
pub struct Streams {
    store: SlotMap<StreamKey, Stream>,
    by_slot: HashMap<u64, StreamKey>,
    max_streams: u64,
    num_special: u16,
    /// The slot initialized (or found) last, and its entity: a program
    /// allocates on one stream again and again, and every allocation
    /// initializes its slot. Never stale: a stream entity never goes.
    last: Option<(u64, StreamKey)>,
}

impl Streams {
    /// A store of `max_streams` regular slots and `num_special` special ones.
    pub fn new(max_streams: u64, num_special: u16) -> Result<Self, Error> {
        if max_streams == 0 {
            return Err(Error::ZeroStreams);
        }
        if max_streams.checked_add(u64::from(num_special)).is_none() {
            return Err(Error::SlotOverflow {
                max_streams,
                num_special,
            });
        }
        Ok(Streams {
            store: SlotMap::with_key(),
            by_slot: HashMap::default(),
            max_streams,
            num_special,
            last: None,
        })
    }

    /// How many regular slots there are.
    #[inline]
    pub fn max_streams(&self) -> u64 {
        self.max_streams
    }

    /// Whether slot numbers can exceed `u32`: an allocation's footprint
    /// keeps only the low 32 bits of its slot (so a thousand allocations fit
    /// in the first-level cache), and in such a world resolution compares the
    /// full slot in the allocation's row as well.
    #[inline]
    pub fn wide(&self) -> bool {
        self.max_streams + u64::from(self.num_special) > 1 << 32
    }

    /// How many special slots there are.
    #[inline]
    pub fn num_special(&self) -> u16 {
        self.num_special
    }

    /// The slot `stream` names: `id % max_streams` for a regular id,
    /// `max_streams + index` for a special stream. An out-of-range special
    /// index is an error.
    #[inline]
    pub fn slot_of(&self, stream: StreamRef) -> Result<u64, Error> {
        match stream {
            StreamRef::Id(id) => Ok(fold(id, self.max_streams)),
            StreamRef::Special(index) if index < self.num_special => {
                Ok(self.max_streams + u64::from(index))
            }
            StreamRef::Special(index) => Err(Error::SpecialOutOfRange {
                index,
                num_special: self.num_special,
            }),
        }
    }

    /// [`slot_of`](Self::slot_of) for a stream already checked by it, as a
    /// batch checks every launch's before settling any: a regular id
    /// folded in line, a special stream asked of `slot_of` (slot 0 if it
    /// was not checked after all). Asking `slot_of` for every launch of a
    /// batch cost W4 with bindings 4–5 % in time.
    #[inline(always)]
    pub(crate) fn checked_slot(&self, stream: StreamRef) -> u64 {
        match stream {
            StreamRef::Id(id) => fold(id, self.max_streams),
            special => self.slot_of(special).unwrap_or_default(),
        }
    }

    /// A stream reference that folds onto `slot`.
    pub fn stream_of_slot(&self, slot: u64) -> StreamRef {
        match slot.checked_sub(self.max_streams) {
            Some(index) => StreamRef::Special(u16::try_from(index).unwrap_or(u16::MAX)),
            None => StreamRef::Id(slot),
        }
    }

    /// The entity of `slot`, if it was initialized.
    pub fn get(&self, slot: u64) -> Option<StreamKey> {
        self.by_slot.get(&slot).copied()
    }

    /// The entity of `slot`, initializing it if needed.
    #[inline]
    pub fn initialize(&mut self, slot: u64) -> StreamKey {
        if let Some((last, key)) = self.last
            && last == slot
        {
            return key;
        }
        self.initialize_other(slot)
    }

    /// [`initialize`](Self::initialize) of a slot other than the last:
    /// out of line.
    #[inline(never)]
    fn initialize_other(&mut self, slot: u64) -> StreamKey {
        let key = match self.by_slot.get(&slot) {
            Some(&key) => key,
            None => {
                let key = self.store.insert(Stream {
                    slot,
                    special: slot >= self.max_streams,
                });
                self.by_slot.insert(slot, key);
                key
            }
        };
        self.last = Some((slot, key));
        key
    }

    /// The initialized streams, in no particular order: slot-map order,
    /// which the calls alone decide (not the slot index's hash seed), so
    /// the same for the same calls in every run.
    pub fn iter(&self) -> impl Iterator<Item = (StreamKey, &Stream)> {
        self.store.iter()
    }
}

/// `id % max_streams`, without the division when the id is already a slot.
/// A `max_streams` of 0, which no store holds (a world and the pool reject
/// it, SPEC §1), folds every id onto slot 0 rather than dividing by zero:
/// this is public, and nothing reachable from input panics.
#[inline]
pub fn fold(id: u64, max_streams: u64) -> u64 {
    if id < max_streams {
        id
    } else {
        id.checked_rem(max_streams).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_takes_the_id_modulo_the_slots_and_zero_slots_fold_onto_slot_zero() {
        assert_eq!(fold(3, 8), 3);
        assert_eq!(fold(13, 8), 5);
        assert_eq!(fold(u64::MAX, 8), 7);
        assert_eq!(fold(5, 0), 0);
        assert_eq!(fold(0, 0), 0);
    }

    /// A footprint keeps a slot's low 32 bits, so a world is wide exactly
    /// when some slot (regular or special) is 2^32 or more.
    #[test]
    fn a_store_is_wide_exactly_when_its_slots_pass_two_to_the_thirty_second() {
        let wide = |max, special| Streams::new(max, special).unwrap().wide();
        assert!(!wide(1, 0));
        assert!(!wide(1 << 32, 0), "the last slot is 2^32 - 1");
        assert!(!wide((1 << 32) - 3, 3));
        assert!(wide((1 << 32) + 1, 0));
        assert!(wide(1 << 32, 1), "the special slot is 2^32");
        assert!(wide(u64::MAX, 0));
    }
}
