//! The case counts of the proptests that hold the world to a model, and
//! the one knob that multiplies them. Each count is sized for CI, where
//! every `cargo test` draws that many new cases; a long run sets
//! `TAINTWORLD_PROPTEST_SCALE` to a whole number and every model proptest
//! draws that many times its count, with no file edited
//! (docs/reliability.md, *Property tests run long*).
//!
//! proptest's own `PROPTEST_CASES` is not enough: it only fills in a count
//! that a configuration leaves out, and these name theirs, which differ
//! (the slow ones draw fewer) and should keep their proportions when run
//! long.

#![allow(dead_code)]

/// The variable whose value multiplies every model proptest's case count.
pub const SCALE_VAR: &str = "TAINTWORLD_PROPTEST_SCALE";

/// The case count of a proptest that draws `ci` cases in CI: `ci` times
/// the value of [`SCALE_VAR`] when it is set, `ci` when it is not.
///
/// # Panics
///
/// When the value is not a whole number from 1 up or the product does not
/// fit a `u32`, naming the variable and the value: a run that asked for
/// more cases must not quietly draw CI's, nor none.
pub fn cases(ci: u32) -> u32 {
    // A value that is not Unicode goes to `scaled` with its bad bytes
    // replaced, which no whole number holds: one refusal for every bad value.
    let value = std::env::var_os(SCALE_VAR).map(|v| v.to_string_lossy().into_owned());
    scaled(ci, value.as_deref()).unwrap_or_else(|e| panic!("{e}"))
}

/// [`cases`] with the variable's value given: `ci` for none, `ci` times a
/// whole number from 1 up, or why the value cannot scale `ci`.
pub fn scaled(ci: u32, value: Option<&str>) -> Result<u32, String> {
    let Some(value) = value else {
        return Ok(ci);
    };
    let scale: u32 = value
        .parse()
        .map_err(|_| format!("{SCALE_VAR}={value:?} is not a whole number from 1 up"))?;
    if scale == 0 {
        return Err(format!(
            "{SCALE_VAR}={value:?} would draw no cases: give a whole number from 1 up"
        ));
    }
    ci.checked_mul(scale).ok_or_else(|| {
        format!(
            "{SCALE_VAR}={value:?} times {ci} cases is more than a proptest can count ({})",
            u32::MAX
        )
    })
}
