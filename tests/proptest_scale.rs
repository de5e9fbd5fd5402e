//! The knob that scales the model proptests' case counts
//! (`tests/scale`): the count CI draws when it is unset, the product when
//! it is a whole number, a share rounded up when it is a fraction, and a
//! clear refusal of a value that would quietly draw CI's count or none.

mod scale;

use scale::{SCALE_VAR, scaled};

/// Why `value` cannot scale a count, which must name the variable and
/// quote the value.
fn refusal(value: &str) -> String {
    let e = scaled(256, Some(value)).unwrap_err();
    assert!(
        e.contains(SCALE_VAR) && e.contains(&format!("{value:?}")),
        "{value:?}: {e}"
    );
    e
}

/// Each of `values` is refused, and the refusal gives `reason`.
fn refused_because(values: &[&str], reason: &str) {
    for value in values {
        let e = refusal(value);
        assert!(e.contains(reason), "{value:?}: {e}");
    }
}

#[test]
fn an_unset_scale_leaves_each_count_as_ci_draws_it() {
    assert_eq!(scaled(256, None), Ok(256));
    assert_eq!(scaled(4, None), Ok(4));
}

#[test]
fn a_scale_multiplies_each_count_and_keeps_their_proportions() {
    assert_eq!(scaled(256, Some("1000")), Ok(256_000));
    assert_eq!(scaled(4, Some("1000")), Ok(4_000));
    assert_eq!(scaled(1536, Some("1")), Ok(1536));
}

#[test]
fn a_scale_of_zero_is_refused_rather_than_drawing_no_cases() {
    refused_because(&["0", "00", "0/64"], "no cases");
}

#[test]
fn a_scale_that_is_neither_a_whole_number_nor_a_fraction_is_refused_naming_the_value() {
    for value in [
        "ten", "", "1.5", "-3", "1e3", " 10", "1/", "/64", "1/2/3", "1 / 64", "1/-2", "1/x",
    ] {
        refusal(value);
    }
}

#[test]
fn a_scale_whose_product_overflows_a_case_count_is_refused() {
    let e = scaled(1536, Some("3000000")).unwrap_err();
    assert!(
        e.contains("3000000") && e.contains("1536") && e.contains(&u32::MAX.to_string()),
        "{e}"
    );
    assert_eq!(scaled(1, Some("4294967295")), Ok(u32::MAX));
}

#[test]
fn a_fractional_scale_draws_that_share_of_each_count_rounded_up_to_at_least_one() {
    assert_eq!(scaled(256, Some("1/64")), Ok(4));
    assert_eq!(scaled(1536, Some("1/64")), Ok(24));
    assert_eq!(scaled(64, Some("1/64")), Ok(1));
    // 4 / 64 and 1536 / 1000 are not whole: each is rounded up.
    assert_eq!(scaled(4, Some("1/64")), Ok(1));
    assert_eq!(scaled(1536, Some("1/1000")), Ok(2));
    assert_eq!(scaled(256, Some("3/2")), Ok(384));
    assert_eq!(scaled(256, Some("1/1")), Ok(256));
}

#[test]
fn a_fraction_over_zero_is_refused_as_a_division_by_zero() {
    refused_because(&["1/0", "0/0", "64/00"], "divides by zero");
}

#[test]
fn a_fraction_whose_share_overflows_a_case_count_is_refused() {
    let e = scaled(1536, Some("3000000/1")).unwrap_err();
    assert!(
        e.contains("3000000/1") && e.contains(&u32::MAX.to_string()),
        "{e}"
    );
    // The product is taken before the division, so a large numerator over
    // a large denominator still counts exactly.
    assert_eq!(scaled(256, Some("4294967295/4294967295")), Ok(256));
}
