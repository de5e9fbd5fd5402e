//! What a launch is and what the world makes of it.

use crate::components::binding::{Bind, Binding};
use crate::components::failure::FailureId;
use crate::components::stream::StreamRef;

/// How work ended, as the runtime saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// It ran: its write set has a writer again.
    Ok,
    /// It was only checked (a launch's `dry_run`): no claim changes; it
    /// still takes a launch number and counts its unresolved bindings.
    DryRun,
    /// It failed with this error; the kernel is the work's own.
    Failed {
        /// The class of error.
        kind: &'a str,
        /// What the runtime said.
        message: &'a str,
    },
}

/// One kernel launch: its kernel, the stream it is enqueued on, what it
/// binds and how it ended.
///
/// It binds [`Binding`]s by default, or [`Resolved`](crate::Resolved) rows
/// a scheduler resolved once and kept (see [`Bind`]).
#[derive(Copy, Clone, Debug)]
pub struct Launch<'a, B: Bind = Binding> {
    /// The kernel's name.
    pub kernel: &'a str,
    /// The stream the launch is enqueued on (its bindings name their own).
    pub stream: StreamRef,
    /// The buffers it binds, in the order it lists them.
    pub bindings: &'a [B],
    /// How it ended.
    pub outcome: Outcome<'a>,
}

/// What the world made of one launch (or host write, or replay).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Its reads were clean and it ran: its write set was released.
    Ran,
    /// It failed: its write set carries this failure.
    Failed(FailureId),
    /// It read bytes carrying `failure` (the binding of memory `needed`
    /// decided): it was skipped and its write set carries the failure too.
    Skipped {
        /// The failure read.
        failure: FailureId,
        /// The memory id of the deciding binding.
        needed: u64,
    },
    /// A dry run: no claim changed (the launch took its number and its
    /// unresolved bindings were counted).
    DryRun,
}

/// `ran`, `failed with failure 1`, `skipped: it needed memory 12, which
/// carried failure 1` (the deciding binding's memory, in the words of the
/// replay summary's hops), or `dry run`.
impl core::fmt::Display for Verdict {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Verdict::Ran => f.write_str("ran"),
            Verdict::Failed(failure) => write!(f, "failed with failure {failure}"),
            Verdict::Skipped { failure, needed } => {
                write!(
                    f,
                    "skipped: it needed memory {needed}, which carried failure {failure}"
                )
            }
            Verdict::DryRun => f.write_str("dry run"),
        }
    }
}

/// A launch's number and verdict.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaunchResult {
    /// The launch's number: launches are numbered `0, 1, 2, …` in the order
    /// the world processes them; bad input takes no number.
    pub launch: u64,
    /// What happened.
    pub verdict: Verdict,
}
