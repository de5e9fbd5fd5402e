//! The events of a launch log (SPEC §7), as owned data.
//!
//! These types are what a line means, not how it was spelled: the reader
//! checks the spelling (Appendix A) and hands out only events that are
//! well formed, and the writer spells them back. Whether an event makes
//! sense for the world — a live memory id, a range inside its allocation — is
//! the world's question, answered when the event is applied.

use crate::Access;

/// One event of a launch log: one line, in the order the log gives them.
///
/// Owned, so that a replay can hold an event past the line buffer it was read
/// from, and so that a scheduler can build one to write without borrowing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The optional first event, carrying settings the command line may
    /// override.
    Header(Header),
    /// An allocation of `size` bytes on `stream`, named `memory` while it is
    /// live.
    Alloc {
        /// The stream the allocation is made on; its slot is initialized.
        stream: u64,
        /// The memory id, unique among live allocations.
        memory: u64,
        /// The size in bytes; `0` is allowed.
        size: u64,
        /// How the reservation went; `None` and `Some(Outcome::Ok)` mean the
        /// same and are both kept so that a log reads back as it was written.
        /// Never [`Outcome::DryRun`].
        outcome: Option<Outcome>,
    },
    /// The end of an allocation: its claims go with it.
    Free {
        /// The memory id of a live allocation.
        memory: u64,
    },
    /// A kernel launch: numbered in log order, checked, then run, skipped or
    /// failed.
    Launch {
        /// The kernel's name, carried into errors and skip records.
        kernel: String,
        /// The stream the launch is enqueued on; it decides which capture
        /// window records it.
        stream: u64,
        /// What the launch touches, in the order its read check walks them.
        bindings: Vec<LogBinding>,
        /// What the device did with it.
        outcome: Outcome,
    },
    /// A host-to-device copy: a write set of one binding that reads nothing.
    HostWrite {
        /// The bytes written; its `access` is not looked at.
        binding: LogBinding,
        /// How the copy went; never [`Outcome::DryRun`].
        outcome: Outcome,
    },
    /// A device-to-host read: the question the world exists to answer.
    Read {
        /// The bytes read; its `access` is not looked at.
        binding: LogBinding,
    },
    /// Opens a capture window on the slot `stream` folds onto.
    CaptureBegin {
        /// The stream whose slot is captured.
        stream: u64,
    },
    /// Closes the window on `stream`'s slot, making graph `graph` unless the
    /// window is doomed.
    CaptureEnd {
        /// The stream whose slot's window ends.
        stream: u64,
        /// The id the recorded graph takes.
        graph: u64,
    },
    /// A replay of a captured graph: a write of everything it recorded.
    Replay {
        /// The graph replayed.
        graph: u64,
        /// The stream the replay was enqueued on; allowed and ignored.
        stream: Option<u64>,
        /// How the replay went; never [`Outcome::DryRun`].
        outcome: Outcome,
    },
    /// Forgets a graph, so its id may be reused.
    GraphDestroy {
        /// The graph forgotten.
        graph: u64,
    },
    /// Opens profile `profile`.
    ProfileBegin {
        /// The profile id, not open at the time.
        profile: u64,
    },
    /// Closes profile `profile`, reporting whether anything failed while it
    /// was open.
    ProfileEnd {
        /// The profile id, open at the time.
        profile: u64,
    },
    /// The device faulted; the first fault wins and is reported with kernel
    /// `device`.
    DeviceFault {
        /// What the driver said.
        error: ErrorObject,
    },
    /// A host synchronization, which reports a device fault if there is one.
    Sync,
}

/// The header's settings (SPEC §7).
///
/// `format` and `version` are not kept: the reader accepts only
/// `"taintworld-log"` version `1`, and the writer always writes those, so
/// there is nothing to choose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Regular stream slots, when the log names them; never `Some(0)`.
    pub max_streams: Option<u64>,
    /// Longest skip chain kept, when the log names it; never `Some(0)`.
    pub chain_limit: Option<u64>,
}

/// A binding as the log spells it: ids, not resolved allocations.
///
/// Resolution is the world's business (SPEC §2) because it depends on what is
/// live; the log only promises that `range`, when given, does not end before
/// it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogBinding {
    /// The stream the binding names, folded onto a slot by the world.
    pub stream: u64,
    /// The memory id the binding names.
    pub memory: u64,
    /// `[start, end)` in bytes, `end >= start`; `None` for the whole
    /// allocation.
    pub range: Option<(u64, u64)>,
    /// How the launch touches the bytes. Required in launches; in host
    /// writes and reads it is ignored and reads as [`Access::Read`] unless
    /// the log gave a valid one.
    pub access: Access,
}

/// What the device did with a launch, host write, replay or reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran (or the reservation succeeded).
    Ok,
    /// It was only planned: its bindings are still checked as input (a
    /// range past its allocation's end is an error, as for any launch),
    /// but no claim is read, tainted or released. Launches only.
    DryRun,
    /// It failed with this error; its write set now holds garbage.
    Failed(ErrorObject),
}

/// An error as a log records it. The kernel is not part of it: the world adds
/// the launch's kernel (or `host_write`, `alloc`, `graph:<id>`, `device`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ErrorObject {
    /// The error's class (`compile`, `launch`, …); part of a failure's
    /// identity.
    pub kind: String,
    /// The driver's words; part of a failure's identity.
    pub message: String,
}

/// A log's binding as the world takes it: its memory id on its regular
/// stream id, as the `replay` command hands each binding over.
impl From<&LogBinding> for crate::Binding {
    fn from(binding: &LogBinding) -> Self {
        crate::Binding {
            stream: crate::StreamRef::Id(binding.stream),
            memory: crate::MemoryRef::Id(binding.memory),
            range: binding.range,
            access: binding.access,
        }
    }
}

impl LogBinding {
    /// `binding` as a log names it, for a scheduler that records its own
    /// launches ([`LogWriter`](crate::log::LogWriter)): a key becomes the
    /// memory id of the allocation `world` holds under it. `None` where a
    /// log cannot name the binding: a special stream (logs name regular
    /// stream ids), or a key that names no live allocation of `world`.
    /// Ask before the allocation is freed.
    pub fn of(binding: &crate::Binding, world: &crate::World) -> Option<LogBinding> {
        let stream = match binding.stream {
            crate::StreamRef::Id(id) => id,
            crate::StreamRef::Special(_) => return None,
        };
        let memory = match binding.memory {
            crate::MemoryRef::Id(memory) => memory,
            crate::MemoryRef::Key(key) => world.allocations().get(key)?.memory,
        };
        Some(LogBinding {
            stream,
            memory,
            range: binding.range,
            access: binding.access,
        })
    }
}

/// A log's outcome as the world takes it, borrowing the error's words.
impl<'a> From<&'a Outcome> for crate::Outcome<'a> {
    fn from(outcome: &'a Outcome) -> Self {
        match outcome {
            Outcome::Ok => crate::Outcome::Ok,
            Outcome::DryRun => crate::Outcome::DryRun,
            Outcome::Failed(e) => crate::Outcome::Failed {
                kind: &e.kind,
                message: &e.message,
            },
        }
    }
}

/// The world's outcome as a log records it.
impl From<crate::Outcome<'_>> for Outcome {
    fn from(outcome: crate::Outcome<'_>) -> Self {
        match outcome {
            crate::Outcome::Ok => Outcome::Ok,
            crate::Outcome::DryRun => Outcome::DryRun,
            crate::Outcome::Failed { kind, message } => Outcome::Failed(ErrorObject {
                kind: kind.into(),
                message: message.into(),
            }),
        }
    }
}
