//! The case counts of the proptests that hold the world to a model, and
//! the one knob that scales them. Each count is sized for CI, where
//! every `cargo test` draws that many new cases; a long run sets
//! `TAINTWORLD_PROPTEST_SCALE` to a whole number and every model proptest
//! draws that many times its count, with no file edited
//! (docs/reliability.md, *Property tests run long*). A run under Miri,
//! where a case takes thousands of times as long, sets it to a fraction
//! such as `1/256` (`scripts/miri`) and draws that share of each count,
//! rounded up, so that every proptest still draws at least one case
//! (*Undefined behaviour: Miri*).
//!
//! proptest's own `PROPTEST_CASES` is not enough: it only fills in a count
//! that a configuration leaves out, and these name theirs, which differ
//! (the slow ones draw fewer) and should keep their proportions when run
//! long.

#![allow(dead_code)]

/// The configuration of a model proptest that draws `ci` cases in CI
/// ([`cases`]), its failing cases saved as `tests/<file>.proptest-regressions`
/// beside the test's file, where they are committed. (proptest's default
/// looks above the file for the crate's `lib.rs` or `main.rs`, finds none
/// for a test under `tests/`, says so on every run that prints, and falls
/// back to the same place.)
pub fn config(ci: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: cases(ci),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..proptest::test_runner::Config::default()
    }
}

/// The variable whose value scales every model proptest's case count.
pub const SCALE_VAR: &str = "TAINTWORLD_PROPTEST_SCALE";

/// The case count of a proptest that draws `ci` cases in CI: `ci` scaled
/// by the value of [`SCALE_VAR`] when it is set (see [`scaled`]), `ci`
/// when it is not.
///
/// # Panics
///
/// When the value is neither a whole number nor a fraction of whole
/// numbers, is zero, or scales `ci` past a `u32`, naming the variable and
/// the value: a run that asked for other counts must not quietly draw
/// CI's, nor none.
pub fn cases(ci: u32) -> u32 {
    // A value that is not Unicode goes to `scaled` with its bad bytes
    // replaced, which no whole number or fraction holds: one refusal for
    // every bad value.
    let value = std::env::var_os(SCALE_VAR).map(|v| v.to_string_lossy().into_owned());
    scaled(ci, value.as_deref()).unwrap_or_else(|e| panic!("{e}"))
}

/// [`cases`] with the variable's value given: `ci` for none; `ci` times
/// a whole number `n` from 1 up; for a fraction `n/d` of whole numbers
/// from 1 up, `ci × n / d` rounded up (never below one case); or why the
/// value cannot scale `ci`.
pub fn scaled(ci: u32, value: Option<&str>) -> Result<u32, String> {
    let Some(value) = value else {
        return Ok(ci);
    };
    let whole = |part: &str| part.parse::<u32>().ok();
    let (n, d) = match value.split_once('/') {
        None => (whole(value), Some(1)),
        Some((n, d)) => (whole(n), whole(d)),
    };
    let (Some(n), Some(d)) = (n, d) else {
        return Err(format!(
            "{SCALE_VAR}={value:?} is neither a whole number from 1 up nor a fraction such as 1/256"
        ));
    };
    if d == 0 {
        return Err(format!(
            "{SCALE_VAR}={value:?} divides by zero: give a fraction such as 1/256"
        ));
    }
    if n == 0 {
        return Err(format!(
            "{SCALE_VAR}={value:?} would draw no cases: give a whole number from 1 up or a fraction such as 1/256"
        ));
    }
    // In u64 a u32 times a u32 cannot overflow, and d is at least 1.
    let scaled = (u64::from(ci) * u64::from(n)).div_ceil(u64::from(d));
    u32::try_from(scaled).map_err(|_| {
        format!(
            "{SCALE_VAR}={value:?} times {ci} cases is more than a proptest can count ({})",
            u32::MAX
        )
    })
}
