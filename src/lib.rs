//! # taintworld
//!
//! Which bytes of GPU device memory can still be trusted.
//!
//! A GPU runtime enqueues work on several streams, and work fails: a kernel
//! does not compile, a launch is rejected, a host copy errors. The bytes the
//! failed work was going to write now hold garbage, and everything computed
//! from them is garbage too. This crate records the failure **on the
//! memory** — byte ranges of allocations — skips launches that would read
//! tainted bytes and taints what they would have written, releases taint
//! when something writes the bytes again, and tells a host read exactly why
//! it cannot be trusted: the root error and the chain of skipped launches
//! from it to this buffer.
//!
//! ```
//! use taintworld::{Access, Binding, Launch, Outcome, ReadResult, World};
//!
//! let mut world = World::default();
//! let x = world.alloc(0, 1, 4096)?; // keys let a scheduler skip hashing
//! let y = world.alloc(0, 2, 4096)?;
//! let loss = world.alloc(0, 3, 4)?;
//!
//! let launch = |kernel, bindings, outcome| Launch { kernel, stream: 0.into(), bindings, outcome };
//! // The first half of `x` is never written: its kernel failed to compile.
//! let fill = [Binding::range(0, x, 0, 2048, Access::Write)];
//! let bad_ptx = Outcome::Failed { kind: "compile", message: "ptxas: bad register" };
//! world.launch(&launch("fill", &fill, bad_ptx))?;
//! // `matmul` reads all of `x`: skipped, so `y` carries the failure too…
//! let matmul = [Binding::whole(0, x, Access::Read), Binding::whole(0, y, Access::Write)];
//! world.launch(&launch("matmul", &matmul, Outcome::Ok))?;
//! // …and so does the loss computed from `y`.
//! let reduce = [Binding::whole(0, y, Access::Read), Binding::whole(0, loss, Access::Write)];
//! world.launch(&launch("loss", &reduce, Outcome::Ok))?;
//!
//! let ReadResult::Tainted(why) = world.read(&Binding::whole(0, 3, Access::Read))? else {
//!     unreachable!("the loss was computed from bytes `fill` never wrote")
//! };
//! assert_eq!(why.error.kernel, "fill");
//! let path: Vec<_> = why.chain.iter().map(|hop| hop.kernel.as_str()).collect();
//! assert_eq!(path, ["loss", "matmul"]); // newest first
//!
//! // The second half of `x` was never tainted; writing the first half releases it.
//! assert_eq!(world.read(&Binding::range(0, x, 2048, 4096, Access::Read))?, ReadResult::Clean);
//! world.host_write(&Binding::range(0, x, 0, 2048, Access::Write), Outcome::Ok)?;
//! assert_eq!(world.read(&Binding::whole(0, x, Access::Read))?, ReadResult::Clean);
//! # Ok::<(), taintworld::Error>(())
//! ```
//!
//! ## Bindings resolved once
//!
//! A [`Binding`] names its buffer as the program does — stream, memory id or
//! key, range — and is resolved on every launch. A scheduler that launches
//! the same buffers again and again can resolve each binding once with
//! [`World::resolve_binding`] and launch with the [`Resolved`] rows it keeps
//! (`Launch<'_, Resolved>`, see [`Bind`]), as the seed's runtime keeps a
//! buffer's cached location. A row names its allocation by key; whatever
//! makes one checks its range then (an allocation's size stays while its
//! key lives), and a world stamps the rows it makes as its own. On
//! every launch the world still checks that the key is live — and,
//! wherever the launch may change claims or the row is not its own, the
//! range again (a fresh row of its own excepted, below), so that a row kept from another world is bad input past an
//! allocation's end, alone or in a batch — and skips the stream fold, the
//! slot compare, the range compares of a clean batch and the copy. A row
//! made since the world last freed anything is *fresh*: where a launch
//! only has to be checked as input (a clean batch, a quiet world's clean
//! launch, a batch's first pass), its key is known live from the row
//! alone, with no look-up, so a scheduler with a static memory plan
//! (allocate, launch, free at the end) pays two compares a row there.
//!
//! Kernel names go the same way. A skip records its kernel, interned so
//! that a skip allocates nothing for the name while a live record or a
//! registration holds it (each distinct name is stored once): by default the world compares the name with
//! the last one interned and, when it differs, hashes it.
//! [`World::register_kernel`] takes a `&'static str` the scheduler will
//! launch by; a skip of it then finds the interned name by the string's
//! address, without reading the name. That is sound because a `'static`
//! string is never freed nor changed. Any other copy of the name is still the
//! same kernel, found by hashing.
//!
//! ## Shape
//!
//! An ECS-style, data-oriented world. Entities live in slot maps, each kind
//! in its own store ([`components`]): stream slots, allocations (whose
//! claims they hold, sorted, inline), failures and skip records. Behaviour
//! lives in five batch [`systems`] — `resolve_owner`, `check_reads`,
//! `apply_taint`, `release_written`, `prune_failures` — plain functions that
//! take exactly the stores they touch. [`World`] owns the stores and orders
//! the systems as SPEC.md §3 says. The seed runtime's stream-pool surface
//! lives on in [`pool`], on the same claim implementation.
//!
//! Provenance lives on the claim, as SPEC §1 and §4 ask: each claim knows
//! its origin (the root, or the skip record of the launch that tainted
//! it), each record its cause. The runtime this grows out of kept a capped
//! list of recent skips per memory id; on a real transformer training step
//! a failure skips hundreds of launches before the loss is read back, and
//! such a list no longer holds the loss's path. A record lives exactly
//! while something refers to it (SPEC §10, 6), so provenance costs memory
//! only while the bytes it explains are live.
//!
//! ## Choices where SPEC.md is silent
//!
//! * **Claims are stored inline in their allocation**, sorted, rather than as
//!   entities of a store of their own: every question about claims is asked
//!   of one allocation, and a binary search over contiguous 32-byte rows
//!   answers it without chasing keys (a set of more than 4,096 claims moves
//!   to a B-tree by start, and back to the vector at 1,024:
//!   [`TREE_ABOVE`](components::claim::TREE_ABOVE),
//!   [`FLAT_AT`](components::claim::FLAT_AT)).
//! * **Unresolved reads count.** Every binding that does not resolve —
//!   launches, host writes, reads, replays — adds to `unresolved_bindings`,
//!   and strict mode rejects each of them, a read too (SPEC §2 asks it of
//!   every binding; §5's `unresolved` read result is the answer outside
//!   strict mode).
//! * **Huge stream counts** are allowed (`max_streams` up to `u64::MAX`):
//!   an allocation's footprint keeps the low 32 bits of its slot, and only a
//!   world of more than 2^32 slots compares the full slot as well.
//! * **A `chain_limit` over `u32::MAX`** (in a log header or on the
//!   command line) is accepted, as SPEC allows any positive integer, and
//!   acts as `u32::MAX`: a chain that long would need over 240 GB of skip
//!   records (2^32 of 56 bytes), so no replay can tell the two apart. [`Config::chain_limit`]
//!   is a `u32`.
//! * **A pre-resolved row names its allocation, not its memory id.** The
//!   binding it came from resolves by memory id on every launch, so once
//!   the allocation is freed and the id reused it would hit the new
//!   allocation; the row's key names the freed one and is unresolved
//!   (counted; strict mode rejects it as [`Error::UnknownKey`]). A row's
//!   stream is the one its allocation was made on: launching it checks no
//!   stream.
//!
//! ## Where the crate departs from the letter of SPEC.md
//!
//! * **A batch with a bad launch in it changes nothing.** SPEC §3 and §10
//!   (5) ask a batch to give exactly what its launches give one at a time;
//!   §9 asks a call that returns an error to leave the world as it was.
//!   For a batch holding a bad launch the two disagree: one at a time, the
//!   launches before the bad one would have settled. The crate keeps §9
//!   ([`World::launch_batch`] checks the whole batch before anything
//!   changes, and its error names the bad launch's index), so a scheduler
//!   can mend or split the batch and hand it over again without first
//!   finding out which launches took effect; for a batch of good launches
//!   the two rules agree, which the model proptests check. What it costs
//!   is a first pass over the batch before it settles: 10–22 % of a chain
//!   of skips with pre-resolved rows when the sixteenth session measured
//!   it, most of it reading the batch twice (`docs/performance-history.md`;
//!   the pass has been made cheaper since, `docs/performance.md`, *Where
//!   the time goes*).
//! * **The write scope's provisional taint.** SPEC §6b is not silent: it
//!   taints the write set with a provisional `torn_down` failure on entry
//!   and, on a failed exit, replaces that failure's error with the real
//!   one. The crate applies the `torn_down` taint only on the exit path of
//!   a panicking body, from a drop guard ([`World::scope`]). Nothing can
//!   read the world while the body runs (the scope holds it mutably), so
//!   every read, claim, window and profile sees the same either way; what
//!   differs is failure identities (the ids, and the occurrences and live
//!   failures where the real failure already lives, below). Taken literally, every scope — every launch
//!   of a scheduler that wraps each one — would mint a failure id, so
//!   after a million clean launches `failures_minted` would be a million
//!   and the first real failure's id a million and one; and "replacing"
//!   the error of a provisional failure that was *found* (another scope's
//!   live `torn_down`) would relabel buffers that scope never wrote, or
//!   make two live failures of one identity, against SPEC §4. So a scope
//!   that ends `Ok` mints nothing, and one that ends `Err` finds or mints
//!   its failure as a failed launch does: a scope is exactly the launch it
//!   wraps, with the body's outcome — which the model proptest checks.
//!   Logs never hold scopes (SPEC §6b), so no replay report is affected.
//!   Where §6b is silent, on the failure a panicking body leaves, the crate
//!   takes the same view: the scope's launch failed, with kind `torn_down`,
//!   the scope's kernel and the message "the write scope's body did not
//!   finish", so it dooms a capture window on its stream and invalidates
//!   open profiles as any failed launch does.
//!
//! ## Graphs that read their own state
//!
//! SPEC §6 settles a replay like a write that reads nothing: the caller
//! writes a graph's inputs fresh before each replay, so a good replay
//! releases its whole write set and a failed one taints it. That holds
//! where the caller does write everything a replay reads. It does not for
//! a graph that reads what an earlier replay wrote: a decoding pass
//! replayed once a token reads its key/value cache and the token the last
//! pass made, and a captured training step reads the weights and
//! optimizer state the last replay updated in place. After a failed
//! replay, the next good one releases that state, and every later token,
//! or loss, reads clean though it was computed from garbage. Two recorded
//! logs show it, `examples/logs/real/gpt2_decode_graph.jsonl.gz` and
//! `gpt2_graph_train.jsonl.gz` (`tests/real_logs.rs`).
//!
//! [`World::replay`] keeps SPEC's rule, and the log replay uses it by
//! default. [`World::replay_checked`] is the replay for such a graph: a
//! capture also records each launch whole (its number, its kernel and
//! every binding that read or wrote), and a good checked replay settles
//! those launches again, in order, each checked as a launch is — one that
//! reads a claimed byte is skipped and what it would have written carries
//! the failure through its skip record. A report's hop through a replay
//! names the captured launch it repeats, by its number and as kernel
//! `graph:<id>/<kernel>`, since a replay takes no launch number (SPEC
//! Appendix A, *Host writes and replays*).
//! A failed checked replay is a plain failed replay: its launches did not
//! run, and its whole write set carries a failure of kernel `graph:<id>`.
//! [`World::replay_checked_each`] also hands over each captured launch's
//! number and verdict, for a caller that wants to know which read garbage.
//! `taintworld replay --checked-replays` (the log replay's
//! `ReplayOptions::checked_replays`) replays every graph of a log this way,
//! and lists a good replay that skipped a launch as `{"replay":true,
//! "graph","line","verdict":"skipped","failure","needed","launches"}`
//! (the first skip's failure and memory id, and every captured launch it
//! skipped); the launch-log format is unchanged. Whether SPEC's replay should do this itself is a
//! question for its owner: SPEC §6 says the replay does not check its
//! inputs, and this crate does not change what SPEC says.
//!
//! ## Where the shape differs from the design notes
//!
//! * The notes ask for no global state. The crate keeps one process-wide
//!   atomic counter, from which each world (and each clone, and each world
//!   every 65,535 frees) draws the stamp it writes into the rows it makes.
//!   Nothing else of the crate's is shared (hashbrown's default hasher
//!   draws its seed once a process) and nothing waits on it; it only makes
//!   stamps unique, so that a world tells its own rows (range checked when
//!   made) from rows kept from another world (range checked on every
//!   launch), and its rows made since its last free (no look-up) from
//!   older ones. The counter's 2^32 − 2 stamps last 2^48 frees in one
//!   process, or 2^32 worlds and clones (a service that makes a world per
//!   request); once they are spent, every world checks every row's range
//!   at its next draw, as without stamps: slower, with the same answers.
//!   Without it, a launch's answer for such a row depended on whether the
//!   world had claims, and a batch disagreed with one launch at a time
//!   (SPEC §10, 5). Targets without atomic compare-and-swap get no stamps
//!   and check every row's range; CI runs the tests that way too (`--cfg
//!   taintworld_no_stamps`).
//! * The notes make components plain data with all behaviour in systems,
//!   and let nothing but the world hold two stores at once. The stores
//!   keep their own operations here, and two of them take other stores:
//!   a claim set's taint, release and clear (and the allocation store's,
//!   which call them) take the failure and record stores, because every
//!   claim made or dropped moves its failure's carrier count and its
//!   record's references in the same step, and a system that changed the
//!   claims and left the counts to a second pass would leave a moment in
//!   which SPEC §10's counts are wrong. The dead-chain walk, which
//!   touches records alone, is the record store's own operation, which
//!   `prune_failures` calls. `apply_taint` and
//!   `release_written` are therefore short loops over rows that hand each
//!   row to the store, and the claim set is shared by the world and the
//!   seed-shaped [`pool`].
//! * The notes put a stream's capture window on the stream entity. The
//!   world holds the open windows in one map keyed by slot instead, so
//!   that every launch asks "is any window open?" with one emptiness check
//!   (`World::quiet`) rather than a look at its stream; a
//!   [`Stream`](components::stream::Stream) holds only its slot and whether
//!   it is special, and the stream store answers which slots are
//!   initialized.
//! * Claims are rows inside their allocation, not entities of a slot map of
//!   their own (above). A fragmented allocation is still a sorted vector
//!   searched in O(log n) up to 4,096 claims, and a B-tree beyond; the
//!   `rangemap` index the notes held in reserve
//!   for that case was not taken, so the crate does not depend on it. W3 in
//!   `benches/` measures the vector: a check against 1,000 claims meets its
//!   40 ns, though a baseline binary-searching the same ranges is about as
//!   fast on W3's random reads at 10k checks and faster at 100k when the
//!   bench only counts the answers (baseline / crate 1.15×, 0.99× and
//!   0.70× at 1k, 10k and 100k checks in the latest set on the EPYC,
//!   0.84×, 0.72× and 0.73× in the latest on the Xeon, the sixty-eighth
//!   session's, `docs/performance.md`): the crate's
//!   check jumps on its answer, which random answers mispredict, and the
//!   baseline's counted answer compiles to conditional moves. With each
//!   answer acted on, as a caller that skips or runs a launch acts on it,
//!   both jump and the two are about even. A change that leaves fewer
//!   claims in a set of more than 32 shifts the claims on its shorter
//!   side (those before it go into dead slots at the vector's front), so
//!   a write carving through 100 claims near either end of W3's 1,000
//!   moves few; through the middle it moves 450 either way, and ran at
//!   0.84× the baseline's speed in the latest set on the EPYC and at 1.03×,
//!   0.90× and 0.92× in the three later sets on the Xeon (the baseline's
//!   ranges are 16 bytes to the crate's 32-byte claims). A
//!   change finds its window's end by galloping from the window's start,
//!   so a write touching a claim or two does not search the rest of the
//!   set (`docs/performance.md`).
//! * `hashbrown` (with its default `foldhash` hasher) joins the core
//!   dependencies: the memory-id index and the failure identity index need
//!   a hash table in `no_std`, and its `HashTable` finds a failure by
//!   `(kind, kernel, message)` without building a key.
//! * An allocation is split into a 16-byte [`Footprint`](components::allocation::Footprint)
//!   (size, slot, whether claimed) that every binding touches and a row that
//!   only claimed or reported allocations do, so the allocations a batch
//!   names stay in the first-level cache.
//!
//! ## Costs
//!
//! Pinned by `tests/sizes.rs` (sizes with `size_of` on a 64-bit target, the
//! rest measured with a counting allocator over 100,000 entities, growth
//! slack included):
//!
//! | what | bytes |
//! | --- | --- |
//! | an allocation's [`Footprint`](components::allocation::Footprint) (what every binding touches) | 16 |
//! | an allocation's row: its [`Allocation`], and where its memory id's index entry sits (the 8 pinned by a unit test of the store) | 80 + 8 |
//! | a clean allocation, all told (footprint, row, memory-id index) | about 170 (129 and the stores' growth slack: 147–258 from 1,000 to 1,000,000 allocations), no heap memory of its own |
//! | a [`Claim`] (the first of an allocation inline) | 32 and the vector's growth slack (32.8 measured at 4,000 an allocation); about 77 in the B-tree of a set of more than 4,096 |
//! | a [`Failure`] | 120; about 220 with its strings and index entries (203–271 from 1,000 to 200,000 failures; one minted into the room of a failure removed may keep up to 1 KiB a string) |
//! | a [`SkipRecord`] (kernel names interned) | 56 |
//! | a [`Binding`] / a pre-resolved [`Resolved`] row, as a launch reads it | 64 / 32 |
//! | a binding a captured graph recorded (each that read or wrote): the binding by memory id and the row it resolved to (pinned by a unit test of the world); and a row for each range of the graph's merged write set (an allocation's recorded ranges written, joined where they overlap or touch, with where one of them is recorded) | 96; 40 |
//! | a launch a captured graph recorded, for a checked replay: its number, its kernel's name and where its bindings end | 40 and the name |
//!
//! Per unit of work, counted by valgrind's callgrind
//! (`scripts/instruction-counts`; exact, unlike wall-clock time on a shared
//! machine), bindings / pre-resolved rows, against the seed-shaped baseline
//! of `benches/baseline/`:
//!
//! | workload | instructions | baseline |
//! | --- | ---: | ---: |
//! | a clean binding in a batch (3 reads + 1 write a launch) | 32.5 / 12.8 | 63.5 |
//! | a clean binding, one `launch` call a launch | 48.5 / 26.8 | 63.5 |
//! | the same, beside an allocation carrying a failure | 47.5 / 34.0 | 63.5 |
//! | a skipped launch of a chain (1 read, 1 write) | 513 / 417 | 662 |
//! | a kernel failing again on the same buffer | 265 / 206 | 537 |
//! | a launch of a training step with an early failure | 1,039 / 863 | 860 |
//! | the same, its kernel names registered | 965 / 781 | 860 |
//! | a launch of a real PyTorch step (ResNet, warm: about two allocations and two frees a launch) | 1,068 / 989 | 744 |
//! | a write a good graph replay releases (W1's writes, 2,500 over 1,000 allocations, nothing claimed) | 6.1 | 36.0 |
//! | the same, the real GPT-2 step captured whole (612 writes over 180 allocations) | 5.0 | 36.2 |
//!
//! The training step is where the crate does more than the seed's design:
//! every skip keeps a record of its cause for as long as its bytes live, so
//! a read names every hop back to the root, where the baseline keeps the
//! last 64 skips of each failure; there the crate is no faster
//! (`docs/performance.md`, which breaks a skip down function by function
//! with `scripts/instruction-profile`). A real step is where it is slower:
//! each allocation goes into the memory-id index SPEC §1–2 need, where the
//! seed's runtime pushes it onto its stream's vector and keeps no index.
//!
//! A declared allocation size never turns into memory, and a range's length
//! never turns into work: claims are ranges. A launch over clean
//! allocations makes no heap allocation, nor does one that taints or
//! releases one range per binding, nor a good replay of a captured graph,
//! plain or checked (its skips included), once the world's buffers have
//! grown (`tests/no_heap_on_hot_path.rs`). A failure new to the world keeps
//! its error's three strings, written into the room of the failure removed
//! last where they fit (room of up to 1 KiB a string is kept): a failure
//! that comes and goes allocates them once. With `log`, recording the
//! launch as well (`log::LogWriter::write_launch`, which borrows the
//! kernel's name, the bindings and the error from the [`Launch`]) makes no
//! heap allocation either once the writer's line buffer has grown. Nor
//! does asking why bytes are tainted, where [`World::read`] copies the
//! error and the chain into its report: [`World::read_taint`] answers
//! with a [`TaintRef`] borrowed from the world, whose chain is walked hop
//! by hop and which prints in the report's words through `core::fmt`.
//!
//! The stores double as they grow, so the allocation that finds one full
//! copies it, in whatever loop made it. A scheduler that knows how many
//! buffers it will hold asks for their room once, when it sets up
//! ([`World::reserve_allocations`]): the allocations made into it allocate
//! nothing. That call is also the one that asks instead of aborting: room
//! the allocator refuses, or a count no store can hold, is
//! [`Error::NoRoom`]. Everywhere else growth is infallible, as `Vec`'s is.
//!
//! ## What may grow
//!
//! What the world answers with and may come to say more about is
//! `#[non_exhaustive]`, so a new count or a new way to fail is not a
//! breaking change: [`Error`], [`Stats`], the look-ups [`FailureInfo`],
//! [`RecordInfo`] and [`ClaimInfo`], and with `log` `ReplayError`, the
//! report's `Report`, `Verdicts` and `FinalState`, and the summary's
//! `FailureTally`, `Carriers`, `CarriersRest`, `Untallied`, `FaultAnswers`
//! and `FirstLines`. Read their fields and match them with a wildcard arm;
//! outside the crate only the world makes them (a test that builds a
//! `Stats` or a report part to compare starts from its `Default`). What
//! SPEC.md closes stays exhaustive, for a scheduler to match whole: the
//! verdicts ([`Verdict`], [`LaunchResult`]), the read, capture, profile and
//! sync answers, a read's [`TaintReport`] and [`ChainHop`], [`ErrorInfo`],
//! [`ScopeOutcome`], a launch's [`Outcome`], [`Access`], the shapes a
//! caller writes ([`Binding`], [`Launch`], [`Config`]), and the log's
//! events and report entries, which SPEC §7 and §8 fix.
//!
//! The stores and the systems themselves ([`components`], [`systems`]) are
//! public for whoever drives or benchmarks a system alone, and for the
//! seed's [`pool`], which works on claims directly. Their layout follows
//! the crate's speed work (a row's bytes, a claim set's thresholds, the
//! store keys, which are slotmap's) and may change in any release, where
//! [`World`]'s methods and the answers above change only as semver
//! allows.
//!
//! ## Features
//!
//! * `std` (default): builds the library against `std` rather than `core`
//!   and `alloc` alone. It changes neither the API nor the behaviour: the
//!   error types are `core::error::Error`s, which `std` names
//!   `std::error::Error`, in every build. `log` needs it.
//! * `log` (default, through `cli`): the `log` module — the launch-log
//!   reader and writer, the replay and its report, the log generator —
//!   with `serde`, `serde_json`, `flate2`, `memchr` and `rand` behind it,
//!   for a scheduler that records its own launches without the command
//!   line's crates.
//! * `cli` (default): `log`, and the `taintworld` command with `clap`,
//!   `indicatif` and, on Unix, `signal-hook` (`gen -o` catches SIGINT,
//!   SIGTERM and SIGXFSZ to remove its partial file). Without default
//!   features the library is `no_std` + `alloc`.

#![cfg_attr(not(feature = "std"), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod components;
pub mod error;
pub mod graph;
pub mod pool;
pub mod systems;
pub mod world;

#[cfg(feature = "log")]
pub mod log;

pub use components::allocation::{AllocKey, Allocation, Allocations};
pub use components::binding::{Access, Bind, Binding, MemoryRef, Resolved};
pub use components::claim::{Claim, ClaimSet, Origin};
pub use components::failure::{ErrorInfo, Failure, FailureId, FailureKey, Failures};
pub use components::record::{RecordKey, Records, SkipRecord};
pub use components::stream::{StreamKey, StreamRef, Streams};
pub use error::Error;
pub use graph::FailureGraph;
pub use world::{
    CaptureResult, Chain, ChainHop, ChainHopRef, ClaimInfo, Config, FailureInfo, Launch,
    LaunchResult, Outcome, ProfileResult, ReadResult, RecordInfo, ScopeError, ScopeOutcome, Stats,
    SyncResult, TaintRef, TaintReport, Verdict, World,
};

/// The README's example, compiled and run by `cargo test` so the front page
/// cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
