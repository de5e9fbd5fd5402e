//! What a launch names: bindings, and the compact rows they resolve to.

use crate::components::allocation::AllocKey;
use crate::components::stream::StreamRef;

/// How a launch touches the bytes a binding names.
///
/// Only *read-visible* bindings are checked against claims, and only
/// *write-visible* ones are tainted or released: the two questions the world
/// answers are "may this run?" (reads) and "what does it leave behind?"
/// (writes).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read only: checked, never tainted or released.
    Read,
    /// Write only: tainted or released, never checked.
    Write,
    /// Both: checked, then tainted or released.
    ReadWrite,
    /// Named but not touched (a template argument, say): neither checked,
    /// tainted nor released.
    Dead,
}

impl Access {
    /// Whether a launch's read-set check looks at this binding.
    #[inline]
    pub const fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether this binding is in the launch's write set.
    #[inline]
    pub const fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }

    /// The name the launch-log format uses (`read`, `write`, `read_write`,
    /// `dead`).
    pub const fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read_write",
            Access::Dead => "dead",
        }
    }
}

/// How a binding names its allocation: by the program's memory id, or by the
/// [`AllocKey`] that [`World::alloc`](crate::World::alloc) handed back, so a
/// scheduler that holds keys never hashes a memory id.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemoryRef {
    /// A memory id, unique among live allocations.
    Id(u64),
    /// A key handed out by `alloc`; a stale key (its allocation freed) is
    /// unresolved, exactly like an unknown memory id.
    Key(AllocKey),
}

impl From<u64> for MemoryRef {
    fn from(id: u64) -> Self {
        MemoryRef::Id(id)
    }
}

impl From<AllocKey> for MemoryRef {
    fn from(key: AllocKey) -> Self {
        MemoryRef::Key(key)
    }
}

/// One buffer a launch names: `(stream, memory, [start, end), access)`.
///
/// `range: None` is the whole allocation. Bytes are what the claim is made
/// of: a launch that failed writing one region of a buffer says nothing about
/// the rest of it. 64 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The stream the allocation was made on (not necessarily the launch's).
    pub stream: StreamRef,
    /// The allocation.
    pub memory: MemoryRef,
    /// The byte range, `None` for the whole allocation.
    pub range: Option<(u64, u64)>,
    /// How the launch touches it.
    pub access: Access,
}

impl Binding {
    /// A binding of the whole allocation.
    pub fn whole(
        stream: impl Into<StreamRef>,
        memory: impl Into<MemoryRef>,
        access: Access,
    ) -> Self {
        Binding {
            stream: stream.into(),
            memory: memory.into(),
            range: None,
            access,
        }
    }

    /// A binding of the bytes `[start, end)`.
    pub fn range(
        stream: impl Into<StreamRef>,
        memory: impl Into<MemoryRef>,
        start: u64,
        end: u64,
        access: Access,
    ) -> Self {
        Binding {
            stream: stream.into(),
            memory: memory.into(),
            range: Some((start, end)),
            access,
        }
    }
}

/// A binding [`resolve_owner`](crate::systems::resolve_owner) found: the
/// allocation's key and a concrete, checked range. Every later system reads
/// these rows and nothing else. 32 bytes.
///
/// A launch may bind rows directly — resolved once by
/// [`World::resolve_binding`](crate::World::resolve_binding) and kept, as a
/// scheduler keeps a buffer's handle — instead of [`Binding`]s resolved on
/// every launch. A row names its allocation by key alone: an allocation's
/// slot and size never change while it lives, so the row stays what its
/// binding resolved to for as long as the key is live. On every launch the
/// world still checks that the key is live (a stale one is unresolved,
/// counted, or rejected in strict mode as [`Error::UnknownKey`]); what it
/// skips is the stream fold, the slot compare and the memory-id look-up.
///
/// Only the world makes rows (the fields are private, read through the
/// methods), and it checks the range when it makes one: `start <= end <=
/// size` holds from then on, because the size stays while the key lives.
/// So a launch in a world where nothing is claimed — where a clean launch
/// changes nothing — checks only that each key is live. Wherever a launch
/// may change claims, the range is checked again against the allocation
/// the key names: a row kept from *another* world (which names whatever
/// allocation has its key here, as an [`AllocKey`] does) can never claim
/// bytes past an allocation's end, and is bad input there as a binding
/// would be.
///
/// [`Error::UnknownKey`]: crate::Error::UnknownKey
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub(crate) alloc: AllocKey,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) access: Access,
}

impl Resolved {
    /// The allocation.
    #[inline]
    pub fn alloc(&self) -> AllocKey {
        self.alloc
    }

    /// The first byte.
    #[inline]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last byte: `start <= end <= size` holds.
    #[inline]
    pub fn end(&self) -> u64 {
        self.end
    }

    /// How the launch touches the bytes.
    #[inline]
    pub fn access(&self) -> Access {
        self.access
    }

    /// The same bytes, touched with `access` instead: one resolved buffer
    /// bound as a write by one launch and as a read by the next.
    #[inline]
    pub fn with_access(self, access: Access) -> Self {
        Self { access, ..self }
    }

    /// The bytes `start..end` of this row, or `None` unless `self.start <=
    /// start <= end <= self.end`: a part of a kept buffer, for a launch that
    /// touches only that part, checked here once instead of on every launch.
    #[inline]
    pub fn narrow(self, start: u64, end: u64) -> Option<Self> {
        (self.start <= start && start <= end && end <= self.end).then_some(Self {
            start,
            end,
            ..self
        })
    }
}

/// What a [`Launch`](crate::Launch) can bind: [`Binding`]s, resolved on
/// every launch, or pre-resolved [`Resolved`] rows. Sealed: the world knows
/// how to resolve exactly these two.
pub trait Bind: Copy + sealed::Sealed {
    /// The bindings, when they are [`Binding`]s.
    #[doc(hidden)]
    fn as_bindings(bindings: &[Self]) -> Option<&[Binding]>;
    /// The rows, when they are pre-resolved.
    #[doc(hidden)]
    fn as_rows(bindings: &[Self]) -> Option<&[Resolved]>;
}

impl Bind for Binding {
    #[inline(always)]
    fn as_bindings(bindings: &[Self]) -> Option<&[Binding]> {
        Some(bindings)
    }
    #[inline(always)]
    fn as_rows(_: &[Self]) -> Option<&[Resolved]> {
        None
    }
}

impl Bind for Resolved {
    #[inline(always)]
    fn as_bindings(_: &[Self]) -> Option<&[Binding]> {
        None
    }
    #[inline(always)]
    fn as_rows(bindings: &[Self]) -> Option<&[Resolved]> {
        Some(bindings)
    }
}

mod sealed {
    /// Only this crate's binding types are [`Bind`](super::Bind).
    pub trait Sealed {}
    impl Sealed for super::Binding {}
    impl Sealed for super::Resolved {}
}
