//! How the text of one line becomes an [`Event`] (SPEC §7, Appendix A).
//!
//! serde_json reads the JSON; this module only says what the format wants
//! from it. Two things keep that from being a `#[derive(Deserialize)]`:
//!
//! * Every object of a line must be checked for duplicate keys, even inside
//!   fields that are ignored (serde's derive rejects a repeated field it
//!   knows but skips unknown ones unchecked; `serde_json::Value` keeps the
//!   last of two).
//! * A value of the wrong kind must be *remembered*, not raised: whether a
//!   field matters, and whether it is required, depends on the `op`, which
//!   may come last. `{"op":"free","memory":1,"stream":"x"}` is a good line.
//!
//! So the line is walked once by hand-written [`Visitor`]s driven by
//! [`serde_json::Deserializer`], which capture every known field *loosely*
//! (an integer, a string borrowed from the line unless it had escapes, or the
//! [`Shape`] of anything else) and walk every other value with [`Walk`],
//! which builds no value and checks nested keys (keeping, for each object
//! it walks that has keys, the short list of them that finds a
//! duplicate: one allocation an object). The only errors raised
//! during that walk are serde_json's own (malformed JSON; nesting past its
//! limit, which lets arrays and objects go 127 deep counting the line's own
//! object, so no line can exhaust the stack) and duplicate keys; serde_json
//! words them all, and each error names the column (`at column N`).
//! [`validate`] then checks the captured fields against the op and builds
//! the event. A well-formed line costs only the allocations the owned
//! [`Event`] keeps (a kernel name, a bindings vector); a string with escapes
//! costs one more, and an object with unknown keys a small key list —
//! except a launch line with an unknown key anywhere, which the fast path
//! below builds part of and declines, with serde's error, before the full
//! parser takes it: 9 allocations for a launch of one binding and one
//! unknown key at the top, 11 with the key in its binding, where the same
//! line without it makes 2.
//!
//! Integers come from serde_json's own number parsing: a non-negative
//! integer literal that fits is a `u64`; a negative integer is an `i64`;
//! a fraction, an exponent (`1e3`) or an integer past `u64::MAX` is an
//! `f64` — all bad input for an integer field. The one case serde_json gets
//! "wrong" for us is `-0`: JSON's grammar makes it an integer literal, and
//! this crate reads it as `0`, but serde_json hands it over as the float
//! `-0.0`, exactly as it does `-0.0`, `-0e5` or an underflowing `-1e-400`.
//! [`Numbers`] tells them apart by looking at the spelling, on that rare
//! path only — the one place this module looks at the text itself.
//!
//! A number too large for an `f64` (`1e400`) is malformed JSON wherever it
//! stands, in a field the line's op ignores too: serde_json cannot hold
//! it, and RFC 8259 §6 lets a parser set the range of the numbers it
//! takes. SPEC §7 ignores unknown fields, but a line it cannot read whole
//! is not one it can ignore part of; the error names the column.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::event::{ErrorObject, Event, Header, LogBinding, Outcome};
use crate::Access;

/// Parses one line's text, which is neither blank nor a comment.
///
/// `first` says whether this is the first event line of the log, the only
/// place a header may stand. The error is the "what was wrong" text.
pub(crate) fn parse_event(text: &str, first: bool) -> Result<Event, String> {
    if text.starts_with(r#"{"op":"launch","#)
        && let Some(event) = fast::launch(text)
    {
        return Ok(event);
    }
    parse_full(text, first)
}

/// [`parse_event`] without the fast path: every line, every rule.
fn parse_full(text: &str, first: bool) -> Result<Event, String> {
    let numbers = Numbers::new(text);
    let mut raw = RawEvent::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = LineSeed {
        numbers: &numbers,
        raw: &mut raw,
    };
    let other = seed
        .deserialize(&mut de)
        .and_then(|other| de.end().map(|()| other))
        .map_err(|e| malformed(text, &e))?;
    match other {
        None => validate(&mut raw, first),
        Some(shape) => Err(format!("a log line must be a JSON object, not {shape}")),
    }
}

/// serde_json's error for a line, worded for a log: every line is its own
/// document (the reader splits at every newline, so serde_json always
/// says line 1), so its `at line 1 column N` becomes `at column N` — the
/// reader names the log's line; a line that starts with a byte-order
/// mark, which an editor may have added, says so.
fn malformed(text: &str, e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let what = match full.strip_suffix(&position) {
        Some(what) => format!("{what} at column {}", e.column()),
        None => full,
    };
    if text.starts_with('\u{feff}') {
        return format!(
            "malformed JSON: the line starts with a byte-order mark (U+FEFF), which a log line may not ({what})"
        );
    }
    if text.trim_start_matches([' ', '\t']).starts_with('#') {
        return format!(
            "malformed JSON: {what} (a comment's '#' must be the line's first character)"
        );
    }
    if text.contains('\r') {
        return format!(
            "malformed JSON: {what} (the line holds a carriage return: a log's lines end in \\n or \\r\\n, not \\r alone)"
        );
    }
    format!("malformed JSON: {what}")
}

/// The numbers of one line, counted in the order serde_json hands them
/// over (which is the order they are written), so that a `-0.0` can be
/// traced back to its spelling: `-0` is the integer `0`, `-0.0` is not.
struct Numbers<'de> {
    text: &'de str,
    /// How many numbers serde_json has handed over so far.
    seen: Cell<usize>,
    /// Where the spelling scan stopped (never inside a string)…
    scan_pos: Cell<usize>,
    /// … and how many numbers are written before that.
    scan_count: Cell<usize>,
}

impl<'de> Numbers<'de> {
    fn new(text: &'de str) -> Self {
        Numbers {
            text,
            seen: Cell::new(0),
            scan_pos: Cell::new(0),
            scan_count: Cell::new(0),
        }
    }

    /// Counts one number, returning its index in the line.
    #[inline]
    fn count(&self) -> usize {
        let index = self.seen.get();
        self.seen.set(index.saturating_add(1));
        index
    }

    #[inline]
    fn uint(&self, v: u64) -> Any<'de> {
        self.count();
        Any::Int(v)
    }

    /// serde_json hands over only negative integers as `i64`; anything else
    /// would still be read by its value.
    #[inline]
    fn int(&self, v: i64) -> Any<'de> {
        self.count();
        match u64::try_from(v) {
            Ok(v) => Any::Int(v),
            Err(_) => Any::Other(Shape::Neg(v)),
        }
    }

    #[inline]
    fn float(&self, v: f64) -> Any<'de> {
        let index = self.count();
        if v == 0.0 && v.is_sign_negative() && self.spelled_minus_zero(index) {
            return Any::Int(0);
        }
        Any::Other(Shape::Float(v))
    }

    /// Whether the number at `index` is written `-0`. Only ever asked for a
    /// number serde_json has just read, so the text up to it is valid JSON
    /// and the scan only has to skip strings; indices only grow, so the scan
    /// goes on from where it stopped and reads each byte once per line.
    #[cold]
    #[inline(never)]
    fn spelled_minus_zero(&self, index: usize) -> bool {
        let bytes = self.text.as_bytes();
        let mut pos = self.scan_pos.get();
        let mut count = self.scan_count.get();
        let mut found = false;
        while let Some(&byte) = bytes.get(pos) {
            match byte {
                b'"' => pos = after_string(bytes, pos.saturating_add(1)),
                b'-' | b'0'..=b'9' => {
                    let rest = bytes.get(pos..).unwrap_or_default();
                    let len = rest
                        .iter()
                        .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                        .unwrap_or(rest.len());
                    let token = rest.get(..len).unwrap_or_default();
                    pos = pos.saturating_add(len);
                    count = count.saturating_add(1);
                    if count > index {
                        found = token == b"-0";
                        break;
                    }
                }
                _ => pos = pos.saturating_add(1),
            }
        }
        self.scan_pos.set(pos);
        self.scan_count.set(count);
        found
    }
}

/// The index just past the string whose contents start at `pos`.
fn after_string(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(&byte) = bytes.get(pos) {
        pos = pos.saturating_add(1);
        match byte {
            b'"' => return pos,
            b'\\' => pos = pos.saturating_add(1),
            _ => {}
        }
    }
    pos
}

/// A key, borrowed from the line unless it had escapes, so that `"\u006fp"`
/// is the key `op`.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// The keys of one object seen so far that are not fields we know (those
/// have their own slots). A short list, searched in order, costs nothing
/// until such a key shows up; past [`KeySet::SMALL`] keys it becomes a hash
/// set, so that an object of a hundred thousand keys is not quadratic.
#[derive(Default)]
struct KeySet<'de> {
    list: Vec<Cow<'de, str>>,
    set: Option<HashSet<Cow<'de, str>>>,
}

impl<'de> KeySet<'de> {
    const SMALL: usize = 16;

    fn insert<E: de::Error>(&mut self, key: Cow<'de, str>) -> Result<(), E> {
        if let Some(set) = &mut self.set {
            if set.contains(key.as_ref()) {
                return Err(duplicate(&key));
            }
            set.insert(key);
            return Ok(());
        }
        if self.list.contains(&key) {
            return Err(duplicate(&key));
        }
        self.list.push(key);
        if self.list.len() > Self::SMALL {
            self.set = Some(self.list.drain(..).collect());
        }
        Ok(())
    }
}

/// A duplicate key: malformed JSON (Appendix A). serde_json adds the
/// column, just past the key.
#[cold]
#[inline(never)]
fn duplicate<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("duplicate key {}", quoted(key)))
}

/// Fails when a known field was already given in this object.
#[inline]
fn fresh<T, E: de::Error>(slot: &Option<T>, key: &str) -> Result<(), E> {
    match slot {
        Some(_) => Err(duplicate(key)),
        None => Ok(()),
    }
}

/// Walks any value, keeping only its [`Shape`]: what an ignored field, or
/// a field of the wrong kind, is read with. It still checks every nested
/// object for duplicate keys and counts numbers, and never builds a value.
#[derive(Clone, Copy)]
struct Walk<'a, 'de>(&'a Numbers<'de>);

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de> {
    type Value = Shape;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Shape, D::Error> {
        // `deserialize_any`, never `deserialize_ignored_any`: the latter
        // would skip nested keys unchecked.
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de> {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Shape, E> {
        Ok(Shape::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Shape, E> {
        Ok(self.0.uint(v).shape())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Shape, E> {
        Ok(self.0.int(v).shape())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Shape, E> {
        Ok(self.0.float(v).shape())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::Str)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Shape, E> {
        Ok(Shape::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(Shape::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut keys = KeySet::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            keys.insert(key)?;
            map.next_value_seed(self)?;
        }
        Ok(Shape::Object)
    }
}

/// A plain field's value: an integer or string kept, anything else walked
/// for its shape.
#[derive(Clone, Copy)]
struct AnySeed<'a, 'de>(&'a Numbers<'de>);

impl<'de> DeserializeSeed<'de> for AnySeed<'_, 'de> {
    type Value = Any<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Any<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnySeed<'_, 'de> {
    type Value = Any<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Any<'de>, E> {
        Ok(Any::Other(Shape::Bool(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Any<'de>, E> {
        Ok(self.0.uint(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Any<'de>, E> {
        Ok(self.0.int(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Any<'de>, E> {
        Ok(self.0.float(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Any<'de>, E> {
        Ok(Any::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Any<'de>, E> {
        Ok(Any::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Any<'de>, E> {
        Ok(Any::Str(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Any<'de>, E> {
        Ok(Any::Other(Shape::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Any<'de>, A::Error> {
        Walk(self.0).visit_seq(seq).map(Any::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Any<'de>, A::Error> {
        Walk(self.0).visit_map(map).map(Any::Other)
    }
}

/// The visitor methods for the JSON values a structured field does not
/// want: each walks the value with [`Walk`] (so nested keys are still
/// checked) and hands its shape to the visitor's own `other`, which turns
/// it into "not what this field takes" — remembered, not raised.
macro_rules! other_values {
    ($de:lifetime; $($kind:ident)*) => { $(other_values!(@ $de $kind);)* };
    (@ $de:lifetime bool) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            let shape = Walk(self.numbers).visit_bool::<E>(v)?;
            Ok(self.other(shape))
        }
    };
    (@ $de:lifetime u64) => {
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            let shape = Walk(self.numbers).visit_u64::<E>(v)?;
            Ok(self.other(shape))
        }
    };
    (@ $de:lifetime i64) => {
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            let shape = Walk(self.numbers).visit_i64::<E>(v)?;
            Ok(self.other(shape))
        }
    };
    (@ $de:lifetime f64) => {
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            let shape = Walk(self.numbers).visit_f64::<E>(v)?;
            Ok(self.other(shape))
        }
    };
    (@ $de:lifetime str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(self.other(Shape::Str))
        }
    };
    (@ $de:lifetime unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.other(Shape::Null))
        }
    };
    (@ $de:lifetime seq) => {
        fn visit_seq<A: SeqAccess<$de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            let shape = Walk(self.numbers).visit_seq(seq)?;
            Ok(self.other(shape))
        }
    };
    (@ $de:lifetime map) => {
        fn visit_map<A: MapAccess<$de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let shape = Walk(self.numbers).visit_map(map)?;
            Ok(self.other(shape))
        }
    };
}

/// Implements `DeserializeSeed` for a seed that is its own visitor.
macro_rules! seed_is_visitor {
    ($seed:ident, $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed<'_, 'de> {
            type Value = $value;

            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// The whole line: an object's fields go into `raw`, in place (it is the
/// biggest thing a line builds, so it is not moved around); the value is
/// the shape of anything else, which is no event.
struct LineSeed<'a, 'de> {
    numbers: &'a Numbers<'de>,
    raw: &'a mut RawEvent<'de>,
}

seed_is_visitor!(LineSeed, Option<Shape>);

impl LineSeed<'_, '_> {
    #[allow(clippy::unused_self)]
    fn other(self, shape: Shape) -> Option<Shape> {
        Some(shape)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_, 'de> {
    type Value = Option<Shape>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    other_values!('de; bool u64 i64 f64 str unit seq);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Shape>, A::Error> {
        let numbers = self.numbers;
        let raw = self.raw;
        let mut unknown = KeySet::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match Field::from_key(&key) {
                None => {
                    unknown.insert(key)?;
                    map.next_value_seed(Walk(numbers))?;
                }
                Some(Field::Scalar(s)) => {
                    let slot = &mut raw.scalars[s as usize];
                    fresh(slot, &key)?;
                    *slot = Some(map.next_value_seed(AnySeed(numbers))?);
                }
                Some(Field::Bindings) => {
                    fresh(&raw.bindings, &key)?;
                    raw.bindings = Some(map.next_value_seed(BindingsSeed { numbers })?);
                }
                Some(Field::Binding) => {
                    fresh(&raw.binding, &key)?;
                    let seed = BindingSeed {
                        numbers,
                        ctx: Ctx::Binding,
                        access_required: false,
                    };
                    raw.binding = Some(map.next_value_seed(seed)?);
                }
                Some(Field::Outcome) => {
                    fresh(&raw.outcome, &key)?;
                    raw.outcome = Some(map.next_value_seed(OutcomeSeed { numbers })?);
                }
                Some(Field::Error) => {
                    fresh(&raw.error, &key)?;
                    let seed = ErrorSeed {
                        numbers,
                        ctx: Ctx::Error,
                    };
                    raw.error = Some(map.next_value_seed(seed)?);
                }
            }
        }
        Ok(None)
    }
}

/// A `bindings` field as a launch reads it (`access` required): the
/// bindings up to the first bad one, and what was wrong with it. The rest
/// are still walked, for malformed JSON.
struct BindingsSeed<'a, 'de> {
    numbers: &'a Numbers<'de>,
}

seed_is_visitor!(BindingsSeed, RawBindings);

impl BindingsSeed<'_, '_> {
    #[allow(clippy::unused_self)]
    fn other(self, shape: Shape) -> RawBindings {
        RawBindings::Other(shape)
    }
}

impl<'de> Visitor<'de> for BindingsSeed<'_, 'de> {
    type Value = RawBindings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of bindings")
    }

    other_values!('de; bool u64 i64 f64 str unit map);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawBindings, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64));
        let mut problem = None;
        let mut index = 0usize;
        loop {
            let seed = BindingSeed {
                numbers: self.numbers,
                ctx: Ctx::Bindings(index),
                access_required: true,
            };
            let Some(binding) = seq.next_element_seed(seed)? else {
                break;
            };
            if problem.is_none() {
                match binding {
                    Ok(binding) => list.push(binding),
                    Err(message) => problem = Some(message),
                }
            }
            index = index.saturating_add(1);
        }
        Ok(RawBindings::List(list, problem))
    }
}

/// One binding: checked, or the message for its first problem.
struct BindingSeed<'a, 'de> {
    numbers: &'a Numbers<'de>,
    ctx: Ctx,
    access_required: bool,
}

seed_is_visitor!(BindingSeed, Result<LogBinding, String>);

impl BindingSeed<'_, '_> {
    fn other(self, shape: Shape) -> Result<LogBinding, String> {
        Err(not_object(self.ctx, shape))
    }
}

impl<'de> Visitor<'de> for BindingSeed<'_, 'de> {
    type Value = Result<LogBinding, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a binding object")
    }

    other_values!('de; bool u64 i64 f64 str unit seq);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let numbers = self.numbers;
        let mut stream = None;
        let mut memory = None;
        let mut range = None;
        let mut access = None;
        let mut unknown = KeySet::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match BindingField::from_key(&key) {
                None => {
                    unknown.insert(key)?;
                    map.next_value_seed(Walk(numbers))?;
                }
                Some(BindingField::Stream) => {
                    fresh(&stream, &key)?;
                    stream = Some(map.next_value_seed(AnySeed(numbers))?);
                }
                Some(BindingField::Memory) => {
                    fresh(&memory, &key)?;
                    memory = Some(map.next_value_seed(AnySeed(numbers))?);
                }
                Some(BindingField::Range) => {
                    fresh(&range, &key)?;
                    range = Some(map.next_value_seed(RangeSeed { numbers })?);
                }
                Some(BindingField::Access) => {
                    fresh(&access, &key)?;
                    access = Some(map.next_value_seed(AnySeed(numbers))?);
                }
            }
        }
        Ok(finish_binding(
            self.ctx,
            self.access_required,
            stream,
            memory,
            range,
            access,
        ))
    }
}

/// A `range` field, counted rather than failed on the third element, so
/// the message can say how many there were.
struct RangeSeed<'a, 'de> {
    numbers: &'a Numbers<'de>,
}

seed_is_visitor!(RangeSeed, RawRange);

impl RangeSeed<'_, '_> {
    #[allow(clippy::unused_self)]
    fn other(self, shape: Shape) -> RawRange {
        match shape {
            Shape::Null => RawRange::Null,
            other => RawRange::Other(other),
        }
    }
}

impl<'de> Visitor<'de> for RangeSeed<'_, 'de> {
    type Value = RawRange;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a range")
    }

    other_values!('de; bool u64 i64 f64 str unit map);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawRange, A::Error> {
        let mut start = None;
        let mut end = None;
        let mut count = 0usize;
        while let Some(value) = seq.next_element_seed(AnySeed(self.numbers))? {
            let value = match value {
                Any::Int(v) => Ok(v),
                other => Err(other.shape()),
            };
            match count {
                0 => start = Some(value),
                1 => end = Some(value),
                _ => {}
            }
            count = count.saturating_add(1);
        }
        Ok(match (start, end, count) {
            (Some(start), Some(end), 2) => RawRange::Pair(start, end),
            _ => RawRange::Len(count),
        })
    }
}

/// An `outcome` field: `"ok"`, `"dry_run"`, `{"failed":{…}}`, or what was
/// wrong with it.
struct OutcomeSeed<'a, 'de> {
    numbers: &'a Numbers<'de>,
}

seed_is_visitor!(OutcomeSeed, RawOutcome);

impl OutcomeSeed<'_, '_> {
    #[allow(clippy::unused_self)]
    fn other(self, shape: Shape) -> RawOutcome {
        match shape {
            Shape::Null => RawOutcome::Null,
            other => RawOutcome::Bad(format!(
                "field \"outcome\" must be \"ok\", \"dry_run\" or {{\"failed\":{{…}}}}, not {other}"
            )),
        }
    }
}

impl<'de> Visitor<'de> for OutcomeSeed<'_, 'de> {
    type Value = RawOutcome;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an outcome")
    }

    other_values!('de; bool u64 i64 f64 unit seq);

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawOutcome, E> {
        Ok(match v {
            "ok" => RawOutcome::Ok,
            "dry_run" => RawOutcome::DryRun,
            other => RawOutcome::Bad(format!(
                "field \"outcome\" must be \"ok\", \"dry_run\" or {{\"failed\":{{…}}}}, not {}",
                quoted(other)
            )),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawOutcome, A::Error> {
        let mut failed = None;
        let mut unknown = KeySet::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if key == "failed" {
                fresh(&failed, &key)?;
                let seed = ErrorSeed {
                    numbers: self.numbers,
                    ctx: Ctx::Failed,
                };
                failed = Some(map.next_value_seed(seed)?);
            } else {
                unknown.insert(key)?;
                map.next_value_seed(Walk(self.numbers))?;
            }
        }
        Ok(match failed {
            Some(error) => RawOutcome::Failed(error),
            None => RawOutcome::Bad(
                "field \"outcome\" is an object without the key \"failed\"".to_owned(),
            ),
        })
    }
}

/// An error object: checked, or the message for its first problem.
struct ErrorSeed<'a, 'de> {
    numbers: &'a Numbers<'de>,
    ctx: Ctx,
}

seed_is_visitor!(ErrorSeed, Result<ErrorObject, String>);

impl ErrorSeed<'_, '_> {
    fn other(self, shape: Shape) -> Result<ErrorObject, String> {
        Err(not_object(self.ctx, shape))
    }
}

impl<'de> Visitor<'de> for ErrorSeed<'_, 'de> {
    type Value = Result<ErrorObject, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error object")
    }

    other_values!('de; bool u64 i64 f64 str unit seq);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind = None;
        let mut message = None;
        let mut unknown = KeySet::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key.as_ref() {
                "kind" => {
                    fresh(&kind, &key)?;
                    kind = Some(map.next_value_seed(AnySeed(self.numbers))?);
                }
                "message" => {
                    fresh(&message, &key)?;
                    message = Some(map.next_value_seed(AnySeed(self.numbers))?);
                }
                _ => {
                    unknown.insert(key)?;
                    map.next_value_seed(Walk(self.numbers))?;
                }
            }
        }
        Ok(finish_error(kind, message, self.ctx))
    }
}

/// Quotes a value for a message, as Rust's `Debug` does, cut short so that a
/// megabyte-long string stays one screen long.
fn quoted(value: &str) -> String {
    const LIMIT: usize = 64;
    match value.char_indices().nth(LIMIT) {
        None => format!("{value:?}"),
        Some((cut, _)) => {
            let head = value.get(..cut).unwrap_or(value);
            format!("{head:?}…")
        }
    }
}

/// What a JSON value was, for a message about a value of the wrong kind.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Null,
    Bool(bool),
    Int(u64),
    Neg(i64),
    Float(f64),
    Str,
    Array,
    Object,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Shape::Null => f.write_str("null"),
            Shape::Bool(b) => write!(f, "{b}"),
            Shape::Int(v) => write!(f, "{v}"),
            Shape::Neg(v) => write!(f, "{v}"),
            // serde_json reads an integer literal past 64 bits (from 2^64
            // up, or below -2^63, which rounds to -2^63) as a float: say
            // so, or the float shown looks like something never written.
            Shape::Float(v) if v >= 18446744073709551616.0 || v <= -9223372036854775808.0 => {
                write!(f, "{v:?} (a number too large for 64 bits)")
            }
            // Debug keeps the `.0` that says "not an integer literal".
            Shape::Float(v) => write!(f, "{v:?}"),
            Shape::Str => f.write_str("a string"),
            Shape::Array => f.write_str("an array"),
            Shape::Object => f.write_str("an object"),
        }
    }
}

/// Where in the line a field sits, for messages: top level, or inside one of
/// the nested objects the format has.
#[derive(Clone, Copy, Debug)]
enum Ctx {
    Top,
    Bindings(usize),
    Binding,
    Failed,
    Error,
}

impl Ctx {
    /// The object itself, named as a message names it.
    fn object(self) -> String {
        match self {
            Ctx::Top => "the line".to_owned(),
            Ctx::Bindings(i) => format!("bindings[{i}]"),
            Ctx::Binding => "field \"binding\"".to_owned(),
            Ctx::Failed => "field \"outcome.failed\"".to_owned(),
            Ctx::Error => "field \"error\"".to_owned(),
        }
    }
}

/// `" in <path>"` after a field name, nothing at top level.
impl fmt::Display for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Ctx::Top => Ok(()),
            Ctx::Bindings(i) => write!(f, " in bindings[{i}]"),
            Ctx::Binding => f.write_str(" in binding"),
            Ctx::Failed => f.write_str(" in outcome.failed"),
            Ctx::Error => f.write_str(" in error"),
        }
    }
}

/// Any JSON value, kept only as far as a field could want it: an integer in
/// `u64` range, a string (borrowed from the line unless it had escapes), or
/// the shape of anything else.
enum Any<'de> {
    Int(u64),
    Str(Cow<'de, str>),
    Other(Shape),
}

impl Any<'_> {
    fn shape(&self) -> Shape {
        match self {
            Any::Int(v) => Shape::Int(*v),
            Any::Str(_) => Shape::Str,
            Any::Other(shape) => *shape,
        }
    }
}

/// The top-level fields that hold a plain value.
#[derive(Clone, Copy, Debug)]
enum Scalar {
    Op,
    Format,
    Version,
    MaxStreams,
    ChainLimit,
    Kernel,
    Stream,
    Memory,
    Size,
    Graph,
    Profile,
}

const SCALARS: usize = 11;

impl Scalar {
    fn name(self) -> &'static str {
        match self {
            Scalar::Op => "op",
            Scalar::Format => "format",
            Scalar::Version => "version",
            Scalar::MaxStreams => "max_streams",
            Scalar::ChainLimit => "chain_limit",
            Scalar::Kernel => "kernel",
            Scalar::Stream => "stream",
            Scalar::Memory => "memory",
            Scalar::Size => "size",
            Scalar::Graph => "graph",
            Scalar::Profile => "profile",
        }
    }
}

/// Every top-level field any op has.
#[derive(Clone, Copy, Debug)]
enum Field {
    Scalar(Scalar),
    Bindings,
    Binding,
    Outcome,
    Error,
}

impl Field {
    fn from_key(key: &str) -> Option<Field> {
        Some(match key {
            "op" => Field::Scalar(Scalar::Op),
            "format" => Field::Scalar(Scalar::Format),
            "version" => Field::Scalar(Scalar::Version),
            "max_streams" => Field::Scalar(Scalar::MaxStreams),
            "chain_limit" => Field::Scalar(Scalar::ChainLimit),
            "kernel" => Field::Scalar(Scalar::Kernel),
            "stream" => Field::Scalar(Scalar::Stream),
            "memory" => Field::Scalar(Scalar::Memory),
            "size" => Field::Scalar(Scalar::Size),
            "graph" => Field::Scalar(Scalar::Graph),
            "profile" => Field::Scalar(Scalar::Profile),
            "bindings" => Field::Bindings,
            "binding" => Field::Binding,
            "outcome" => Field::Outcome,
            "error" => Field::Error,
            _ => return None,
        })
    }
}

/// One line's fields, captured loosely, before the op says which matter.
#[derive(Default)]
struct RawEvent<'de> {
    scalars: [Option<Any<'de>>; SCALARS],
    bindings: Option<RawBindings>,
    binding: Option<Result<LogBinding, String>>,
    outcome: Option<RawOutcome>,
    error: Option<Result<ErrorObject, String>>,
}

/// A `bindings` field: the bindings up to the first bad one, and what was
/// wrong with it — as a launch reads them (`access` required).
enum RawBindings {
    List(Vec<LogBinding>, Option<String>),
    Other(Shape),
}

/// The fields of a binding object.
#[derive(Clone, Copy)]
enum BindingField {
    Stream,
    Memory,
    Range,
    Access,
}

impl BindingField {
    fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "stream" => BindingField::Stream,
            "memory" => BindingField::Memory,
            "range" => BindingField::Range,
            "access" => BindingField::Access,
            _ => return None,
        })
    }
}

/// Checks one binding's captured fields.
fn finish_binding(
    ctx: Ctx,
    access_required: bool,
    stream: Option<Any<'_>>,
    memory: Option<Any<'_>>,
    range: Option<RawRange>,
    access: Option<Any<'_>>,
) -> Result<LogBinding, String> {
    let stream = as_u64(required(stream, "stream", ctx)?, "stream", ctx)?;
    let memory = as_u64(required(memory, "memory", ctx)?, "memory", ctx)?;
    let range = match range {
        None | Some(RawRange::Null) => None,
        Some(RawRange::Pair(start, end)) => {
            let start = start.map_err(|shape| bad_range_element(ctx, shape))?;
            let end = end.map_err(|shape| bad_range_element(ctx, shape))?;
            if end < start {
                return Err(format!("range end {end} is before start {start}{ctx}"));
            }
            Some((start, end))
        }
        Some(RawRange::Len(n)) => {
            let elements = if n == 1 { "element" } else { "elements" };
            return Err(format!(
                "field \"range\"{ctx} must be an array of exactly two integers, not {n} {elements}"
            ));
        }
        Some(RawRange::Other(shape)) => {
            return Err(format!(
                "field \"range\"{ctx} must be an array of two integers, not {shape}"
            ));
        }
    };
    let access = if access_required {
        match required(access, "access", ctx)? {
                Any::Str(s) => parse_access(&s).ok_or_else(|| {
                    format!(
                        "field \"access\"{ctx} must be \"read\", \"write\", \"read_write\" or \"dead\", not {}",
                        quoted(&s)
                    )
                })?,
                other => {
                    return Err(format!(
                        "field \"access\"{ctx} must be a string, not {}",
                        other.shape()
                    ));
                }
            }
    } else {
        // Ignored where it is optional: keep a valid one so a written log
        // reads back as it was, read anything else as `read`.
        match access {
            Some(Any::Str(s)) => parse_access(&s).unwrap_or(Access::Read),
            _ => Access::Read,
        }
    };
    Ok(LogBinding {
        stream,
        memory,
        range,
        access,
    })
}

fn parse_access(s: &str) -> Option<Access> {
    match s {
        "read" => Some(Access::Read),
        "write" => Some(Access::Write),
        "read_write" => Some(Access::ReadWrite),
        "dead" => Some(Access::Dead),
        _ => None,
    }
}

fn bad_range_element(ctx: Ctx, shape: Shape) -> String {
    format!("field \"range\"{ctx} must hold integers in 0..=18446744073709551615, not {shape}")
}

/// A `range` field: two elements (each an integer or the shape it had), the
/// element count when it was not two, or what it was instead of an array.
enum RawRange {
    Null,
    Pair(Result<u64, Shape>, Result<u64, Shape>),
    Len(usize),
    Other(Shape),
}

/// An `outcome` field as given, before the op says which outcomes it allows.
enum RawOutcome {
    Null,
    Ok,
    DryRun,
    Failed(Result<ErrorObject, String>),
    Bad(String),
}

/// Checks one error object's captured fields.
fn finish_error(
    kind: Option<Any<'_>>,
    message: Option<Any<'_>>,
    ctx: Ctx,
) -> Result<ErrorObject, String> {
    let kind = as_string(required(kind, "kind", ctx)?, "kind", ctx)?;
    let message = as_string(required(message, "message", ctx)?, "message", ctx)?;
    Ok(ErrorObject {
        kind: kind.into_owned(),
        message: message.into_owned(),
    })
}

fn not_object(ctx: Ctx, shape: Shape) -> String {
    format!("{} must be an object, not {shape}", ctx.object())
}

/// A required field: present and not `null`.
fn required<'de>(value: Option<Any<'de>>, name: &str, ctx: Ctx) -> Result<Any<'de>, String> {
    match value {
        None => Err(format!("missing field \"{name}\"{ctx}")),
        Some(Any::Other(Shape::Null)) => Err(format!("field \"{name}\"{ctx} is null")),
        Some(value) => Ok(value),
    }
}

/// An optional field: `null` is the same as absent.
fn optional(value: Option<Any<'_>>) -> Option<Any<'_>> {
    match value {
        Some(Any::Other(Shape::Null)) | None => None,
        Some(value) => Some(value),
    }
}

fn as_u64(value: Any<'_>, name: &str, ctx: Ctx) -> Result<u64, String> {
    match value {
        Any::Int(v) => Ok(v),
        other => Err(format!(
            "field \"{name}\"{ctx} must be an integer in 0..=18446744073709551615, not {}",
            other.shape()
        )),
    }
}

fn as_string<'de>(value: Any<'de>, name: &str, ctx: Ctx) -> Result<Cow<'de, str>, String> {
    match value {
        Any::Str(s) => Ok(s),
        other => Err(format!(
            "field \"{name}\"{ctx} must be a string, not {}",
            other.shape()
        )),
    }
}

impl<'de> RawEvent<'de> {
    fn take(&mut self, s: Scalar) -> Option<Any<'de>> {
        self.scalars[s as usize].take()
    }

    fn u64(&mut self, s: Scalar) -> Result<u64, String> {
        as_u64(
            required(self.take(s), s.name(), Ctx::Top)?,
            s.name(),
            Ctx::Top,
        )
    }

    fn opt_u64(&mut self, s: Scalar) -> Result<Option<u64>, String> {
        optional(self.take(s))
            .map(|v| as_u64(v, s.name(), Ctx::Top))
            .transpose()
    }

    /// An optional setting of the header, where `0` would mean nothing can
    /// run.
    fn setting(&mut self, s: Scalar) -> Result<Option<u64>, String> {
        match self.opt_u64(s)? {
            Some(0) => Err(format!("field \"{}\" must be at least 1, not 0", s.name())),
            other => Ok(other),
        }
    }

    fn string(&mut self, s: Scalar) -> Result<Cow<'de, str>, String> {
        as_string(
            required(self.take(s), s.name(), Ctx::Top)?,
            s.name(),
            Ctx::Top,
        )
    }

    fn outcome(&mut self, op: &str) -> Result<Option<Outcome>, String> {
        Ok(match self.outcome.take() {
            None | Some(RawOutcome::Null) => None,
            Some(RawOutcome::Ok) => Some(Outcome::Ok),
            Some(RawOutcome::DryRun) => {
                if op != "launch" {
                    return Err(format!(
                        "outcome \"dry_run\" is for launches only, not {op}"
                    ));
                }
                Some(Outcome::DryRun)
            }
            Some(RawOutcome::Failed(error)) => Some(Outcome::Failed(error?)),
            Some(RawOutcome::Bad(message)) => return Err(message),
        })
    }

    fn required_outcome(&mut self, op: &str) -> Result<Outcome, String> {
        let given = self.outcome.is_some();
        self.outcome(op)?.ok_or_else(|| {
            if given {
                "field \"outcome\" is null".to_owned()
            } else {
                "missing field \"outcome\"".to_owned()
            }
        })
    }

    fn bindings(&mut self) -> Result<Vec<LogBinding>, String> {
        match self.bindings.take() {
            None => Err("missing field \"bindings\"".to_owned()),
            Some(RawBindings::Other(Shape::Null)) => Err("field \"bindings\" is null".to_owned()),
            Some(RawBindings::Other(shape)) => Err(format!(
                "field \"bindings\" must be an array of bindings, not {shape}"
            )),
            Some(RawBindings::List(_, Some(problem))) => Err(problem),
            Some(RawBindings::List(list, None)) => Ok(list),
        }
    }

    fn binding(&mut self) -> Result<LogBinding, String> {
        match self.binding.take() {
            None => Err("missing field \"binding\"".to_owned()),
            Some(result) => result,
        }
    }

    fn error(&mut self) -> Result<ErrorObject, String> {
        match self.error.take() {
            None => Err("missing field \"error\"".to_owned()),
            Some(result) => result,
        }
    }
}

/// Checks the captured fields against the op and builds the event.
fn validate(raw: &mut RawEvent<'_>, first: bool) -> Result<Event, String> {
    let op = match required(raw.take(Scalar::Op), "op", Ctx::Top)? {
        Any::Str(op) => op,
        other => {
            return Err(format!(
                "field \"op\" must be a string, not {}",
                other.shape()
            ));
        }
    };
    Ok(match op.as_ref() {
        "header" => {
            if !first {
                return Err("header must be the first event".to_owned());
            }
            let format = raw.string(Scalar::Format)?;
            if format != "taintworld-log" {
                return Err(format!(
                    "header format {} is not \"taintworld-log\"",
                    quoted(&format)
                ));
            }
            let version = raw.u64(Scalar::Version)?;
            if version != 1 {
                return Err(format!("header version {version} is not 1"));
            }
            Event::Header(Header {
                max_streams: raw.setting(Scalar::MaxStreams)?,
                chain_limit: raw.setting(Scalar::ChainLimit)?,
            })
        }
        "alloc" => Event::Alloc {
            stream: raw.u64(Scalar::Stream)?,
            memory: raw.u64(Scalar::Memory)?,
            size: raw.u64(Scalar::Size)?,
            outcome: raw.outcome("alloc")?,
        },
        "free" => Event::Free {
            memory: raw.u64(Scalar::Memory)?,
        },
        "launch" => Event::Launch {
            kernel: raw.string(Scalar::Kernel)?.into_owned(),
            stream: raw.u64(Scalar::Stream)?,
            bindings: raw.bindings()?,
            outcome: raw.required_outcome("launch")?,
        },
        "host_write" => Event::HostWrite {
            binding: raw.binding()?,
            outcome: raw.required_outcome("host_write")?,
        },
        "read" => Event::Read {
            binding: raw.binding()?,
        },
        "capture_begin" => Event::CaptureBegin {
            stream: raw.u64(Scalar::Stream)?,
        },
        "capture_end" => Event::CaptureEnd {
            stream: raw.u64(Scalar::Stream)?,
            graph: raw.u64(Scalar::Graph)?,
        },
        "replay" => Event::Replay {
            graph: raw.u64(Scalar::Graph)?,
            stream: raw.opt_u64(Scalar::Stream)?,
            outcome: raw.required_outcome("replay")?,
        },
        "graph_destroy" => Event::GraphDestroy {
            graph: raw.u64(Scalar::Graph)?,
        },
        "profile_begin" => Event::ProfileBegin {
            profile: raw.u64(Scalar::Profile)?,
        },
        "profile_end" => Event::ProfileEnd {
            profile: raw.u64(Scalar::Profile)?,
        },
        "device_fault" => Event::DeviceFault {
            error: raw.error()?,
        },
        "sync" => Event::Sync,
        other => return Err(format!("unknown op {}", quoted(other))),
    })
}

/// The common case — a well-formed launch line spelled the way the writer
/// spells it — parsed by serde's derive, which matches field names with
/// generated code instead of the visitors above.
///
/// It accepts a strict subset of what [`parse_event`] accepts: no unknown
/// field anywhere (they could hide duplicate keys), every field of the
/// right type, every range in order. Anything else — a good line with an
/// extra field as well as a bad line — is not its business: it returns
/// `None` and the line goes through the full parser, which accepts or
/// rejects it with the exact reason. Both give the same event for a line
/// both accept.
mod fast {
    use std::borrow::Cow;
    use std::fmt;
    use std::marker::PhantomData;

    use serde::Deserialize;
    use serde::de::{self, Deserializer, MapAccess, Visitor};

    use super::super::event::{ErrorObject, Event, LogBinding, Outcome};
    use crate::Access;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Launch<'a> {
        #[serde(borrow)]
        op: Cow<'a, str>,
        #[serde(borrow)]
        kernel: Cow<'a, str>,
        stream: u64,
        bindings: Vec<Object<Binding>>,
        #[serde(borrow)]
        outcome: FastOutcome<'a>,
    }

    /// A struct read from a JSON object only. serde's derive also takes a
    /// struct written as an array of its fields in order (`[0,1,null,
    /// "write"]` for a binding), which the format does not allow and the
    /// full parser rejects; asking for a map refuses it here too.
    struct Object<T>(T);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer
                .deserialize_map(ObjectVisitor(PhantomData))
                .map(Object)
        }
    }

    struct ObjectVisitor<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Binding {
        stream: u64,
        memory: u64,
        #[serde(default)]
        range: Option<(u64, u64)>,
        access: FastAccess,
    }

    /// An access, from its string alone and by the full parser's
    /// [`parse_access`](super::parse_access): serde's derive would also
    /// take an enum written as a one-key object (`{"read":null}`), which
    /// the format does not allow.
    struct FastAccess(Access);

    impl<'de> Deserialize<'de> for FastAccess {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_str(AccessVisitor)
        }
    }

    struct AccessVisitor;

    impl Visitor<'_> for AccessVisitor {
        type Value = FastAccess;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an access string")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<FastAccess, E> {
            super::parse_access(v)
                .map(FastAccess)
                .ok_or_else(|| E::custom("not an access"))
        }
    }

    /// An outcome as the format spells it: the string `"ok"` or
    /// `"dry_run"`, or an object whose one key is `failed`. (serde's derive
    /// would also take `{"ok":null}`.)
    enum FastOutcome<'a> {
        Ok,
        DryRun,
        Failed(Error<'a>),
    }

    impl<'de: 'a, 'a> Deserialize<'de> for FastOutcome<'a> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(OutcomeVisitor(PhantomData))
        }
    }

    struct OutcomeVisitor<'a>(PhantomData<&'a ()>);

    impl<'de: 'a, 'a> Visitor<'de> for OutcomeVisitor<'a> {
        type Value = FastOutcome<'a>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(r#""ok", "dry_run" or {"failed":{...}}"#)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<FastOutcome<'a>, E> {
            match v {
                "ok" => Ok(FastOutcome::Ok),
                "dry_run" => Ok(FastOutcome::DryRun),
                _ => Err(E::custom("not an outcome")),
            }
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<FastOutcome<'a>, M::Error> {
            if map.next_key::<&str>()? != Some("failed") {
                return Err(de::Error::custom("not a failed outcome"));
            }
            let Object(error) = map.next_value::<Object<Error<'a>>>()?;
            match map.next_key::<&str>()? {
                None => Ok(FastOutcome::Failed(error)),
                Some(_) => Err(de::Error::custom("a failed outcome has one key")),
            }
        }
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Error<'a> {
        #[serde(borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        message: Cow<'a, str>,
    }

    /// The launch event of `text`, if the strict parse takes it.
    pub(super) fn launch(text: &str) -> Option<Event> {
        let line: Launch<'_> = serde_json::from_str(text).ok()?;
        if line.op != "launch" {
            return None;
        }
        if line
            .bindings
            .iter()
            .any(|Object(b)| b.range.is_some_and(|(start, end)| end < start))
        {
            return None;
        }
        // Same size and alignment: the collect reuses the vector in place.
        let bindings = line
            .bindings
            .into_iter()
            .map(|Object(b)| LogBinding {
                stream: b.stream,
                memory: b.memory,
                range: b.range,
                access: b.access.0,
            })
            .collect();
        let outcome = match line.outcome {
            FastOutcome::Ok => Outcome::Ok,
            FastOutcome::DryRun => Outcome::DryRun,
            FastOutcome::Failed(e) => Outcome::Failed(ErrorObject {
                kind: e.kind.into_owned(),
                message: e.message.into_owned(),
            }),
        };
        Some(Event::Launch {
            kernel: line.kernel.into_owned(),
            stream: line.stream,
            bindings,
            outcome,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::{fast, parse_full};
    use crate::log::{Event, GenOptions, LogWriter, Shape, generate};

    /// Variants of a good launch line, most of which the fast path must
    /// leave to the full parser.
    fn variants(line: &str) -> Vec<String> {
        vec![
            line.to_string(),
            line.replacen(r#""stream":"#, r#""extra":1,"stream":"#, 1),
            line.replacen(r#""kernel":"#, r#""kernel":"x","kernel":"#, 1),
            line.replacen(r#""memory":"#, r#""memory":-0,"memory2":"#, 1),
            line.replacen(r#""range":["#, r#""range":[1.0,"#, 1),
            line.replacen(r#""range":["#, r#""range":null,"r":["#, 1),
            line.replacen(r#""access":"read""#, r#""access":"readonly""#, 1),
            line.replacen(
                r#""outcome":"ok""#,
                r#""outcome":{"failed":{"kind":"k","message":"m","x":{"a":1,"a":2}}}"#,
                1,
            ),
            line.replacen(
                r#""outcome":"ok""#,
                r#""outcome":{"failed":{"kind":"k\u00e9","message":"m\"q"}}"#,
                1,
            ),
            line.replacen(r#""outcome":"ok""#, r#""outcome":{"ok":null}"#, 1),
            line.replacen(r#""outcome":"ok""#, r#""outcome":{"dry_run":null}"#, 1),
            line.replacen(r#""outcome":"ok""#, r#""outcome":"failed""#, 1),
            line.replacen(
                r#""outcome":"ok""#,
                r#""outcome":{"failed":{"kind":"k","message":"m"},"ok":null}"#,
                1,
            ),
            line.replacen(r#""access":"read""#, r#""access":{"read":null}"#, 1),
            line.replacen(r#""access":"write""#, r#""access":["write"]"#, 1),
            line.replacen("}]", "},]", 1),
            line.replacen(
                r#""bindings":[{"stream":0,"#,
                r#""bindings":[[0,1,null,"write"],{"stream":0,"#,
                1,
            ),
            line.replacen(
                r#""outcome":"ok""#,
                r#""outcome":{"failed":["compile","bad PTX"]}"#,
                1,
            ),
            format!("{line} x"),
            line.replacen(r#""range":[0,"#, r#""range":[99999,"#, 1),
        ]
    }

    /// The fast path is only worth having if it takes the lines a log is
    /// made of: every access, every outcome, as `LogWriter` spells them.
    #[test]
    fn the_fast_path_takes_every_access_and_outcome_as_the_format_spells_them() {
        for access in ["read", "write", "read_write", "dead"] {
            for outcome in [
                r#""ok""#,
                r#""dry_run""#,
                r#"{"failed":{"kind":"compile","message":"m"}}"#,
            ] {
                let line = format!(
                    r#"{{"op":"launch","kernel":"k","stream":0,"bindings":[{{"stream":0,"memory":1,"range":[0,8],"access":"{access}"}}],"outcome":{outcome}}}"#
                );
                let fast = fast::launch(&line);
                assert!(fast.is_some(), "{line}");
                assert_eq!(fast.ok_or(String::new()), parse_full(&line, false));
            }
        }
    }

    /// A JSON value the format allows for one field of a launch line.
    fn good(field: &'static str) -> impl Strategy<Value = String> {
        let good: Vec<&'static str> = match field {
            "kernel" => vec![r#""k""#, r#""gelu""#, r#""k\u00e9""#, r#""a\"b""#],
            "stream" | "memory" => vec!["0", "1", "7", "18446744073709551615"],
            "range" => vec!["[0,8]", "[8,8]", "[0,16]"],
            "access" => vec![r#""read""#, r#""write""#, r#""read_write""#, r#""dead""#],
            _ => vec![
                r#""ok""#,
                r#""dry_run""#,
                r#"{"failed":{"kind":"compile","message":"m"}}"#,
                r#"{"failed":{"message":"m","kind":"c\n"}}"#,
            ],
        };
        proptest::sample::select(good).prop_map(str::to_owned)
    }

    /// A JSON value for one field of a launch line: mostly what the
    /// format allows, often something near it — another type, an enum
    /// written as an object, a duplicate or extra key, an escape.
    fn value(field: &'static str) -> impl Strategy<Value = String> {
        let near = vec![
            "null",
            "-0",
            "1.0",
            "1e3",
            "-1",
            "18446744073709551616",
            r#""1""#,
            "true",
            "[]",
            "[8,0]",
            "[0]",
            "[0,8,9]",
            r#"[0,"8"]"#,
            "{}",
            r#"{"ok":null}"#,
            r#"{"dry_run":null}"#,
            r#"{"read":null}"#,
            r#""failed""#,
            r#""readonly""#,
            r#"{"failed":null}"#,
            r#"{"failed":{"kind":"k"}}"#,
            r#"{"failed":{"kind":"k","message":"m","kind":"j"}}"#,
            r#"{"failed":{"kind":"k","message":"m"},"failed":{"kind":"k","message":"m"}}"#,
            r#"{"failed":{"kind":"k","message":"m"},"x":1}"#,
            r#"{"x":1,"failed":{"kind":"k","message":"m"}}"#,
            r#"{"failed":{"kind":"k","message":"m","x":[1,{"a":1,"a":2}]}}"#,
            r#"{"failed":["k","m"]}"#,
            r#""\ud800""#,
        ];
        prop_oneof![
            3 => good(field),
            1 => proptest::sample::select(near).prop_map(str::to_owned),
        ]
    }

    /// A JSON value for one field: a `well_formed` one, or one often
    /// near the format's.
    fn field(name: &'static str, well_formed: bool) -> BoxedStrategy<String> {
        if well_formed {
            good(name).boxed()
        } else {
            value(name).boxed()
        }
    }

    /// A binding object: its fields in either order, one sometimes left
    /// out, repeated or joined by an unknown one — or its values written
    /// as an array, which the format does not allow. A `well_formed` one
    /// has only values the format allows and each field once, in either
    /// order, `range` sometimes left out.
    fn binding(well_formed: bool) -> impl Strategy<Value = String> {
        let twists = if well_formed {
            proptest::sample::select(vec![0u8, 5]).boxed()
        } else {
            (0u8..7).boxed()
        };
        (
            field("stream", well_formed),
            field("memory", well_formed),
            proptest::option::of(field("range", well_formed)),
            field("access", well_formed),
            twists,
        )
            .prop_map(|(stream, memory, range, access, twist)| {
                let mut fields = vec![
                    format!(r#""stream":{stream}"#),
                    format!(r#""memory":{memory}"#),
                    format!(r#""access":{access}"#),
                ];
                if let Some(range) = range {
                    fields.insert(2, format!(r#""range":{range}"#));
                }
                match twist {
                    0 => fields.reverse(),
                    1 => drop(fields.remove(0)),
                    2 => fields.push(format!(r#""memory":{memory}"#)),
                    3 => fields.push(r#""extra":1"#.to_owned()),
                    4 => {
                        // The fields' values in order, as an array.
                        let values: Vec<&str> = fields
                            .iter()
                            .filter_map(|f| f.split_once(':'))
                            .map(|(_, v)| v)
                            .collect();
                        return format!("[{}]", values.join(","));
                    }
                    _ => {}
                }
                format!("{{{}}}", fields.join(","))
            })
    }

    /// A launch line, and whether it is well-formed: half of them are,
    /// with one to three bindings, spaced or not; the rest have values
    /// near the format's, which the fast path must mostly leave to the
    /// full parser.
    fn launch_line() -> impl Strategy<Value = (String, bool)> {
        let line = |well_formed: bool| {
            let bindings = if well_formed { 1..4 } else { 0..3 };
            (
                field("kernel", well_formed),
                field("stream", well_formed),
                proptest::collection::vec(binding(well_formed), bindings),
                field("outcome", well_formed),
                proptest::bool::ANY,
                proptest::bool::weighted(if well_formed { 0.0 } else { 0.1 }),
            )
                .prop_map(move |(kernel, stream, bindings, outcome, space, extra)| {
                    let sep = if space { ", " } else { "," };
                    let mut line = format!(
                        r#"{{"op":"launch","kernel":{kernel}{sep}"stream":{stream},"bindings":[{}],"outcome":{outcome}"#,
                        bindings.join(sep)
                    );
                    if extra {
                        line.push_str(r#","x":null"#);
                    }
                    line.push('}');
                    (line, well_formed)
                })
        };
        prop_oneof![line(true), line(false)]
    }

    /// Wherever the fast path takes a generated launch line, the full
    /// parser takes it too and reads the same event: the fast path is only
    /// ever a quicker way to the same answer. It takes every well-formed
    /// line, so the two are compared on many lines with bindings.
    #[test]
    fn the_fast_path_reads_every_generated_line_it_takes_as_the_full_parser_does() {
        const CASES: u32 = 256;
        // Lines taken: well-formed, with a binding; near the format, with
        // a binding; without one.
        let taken = Cell::new([0usize; 3]);
        let mut runner = TestRunner::new(Config {
            cases: CASES,
            source_file: Some(file!()),
            ..Config::default()
        });
        let result = runner.run(&launch_line(), |(line, well_formed)| {
            let Some(event) = fast::launch(&line) else {
                prop_assert!(
                    !well_formed,
                    "the fast path left {} to the full parser",
                    line
                );
                return Ok(());
            };
            let mut counts = taken.get();
            match &event {
                Event::Launch { bindings, .. } if !bindings.is_empty() => {
                    counts[usize::from(!well_formed)] += 1;
                }
                _ => counts[2] += 1,
            }
            taken.set(counts);
            prop_assert_eq!(parse_full(&line, false), Ok(event), "{}", line);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        let [well_formed, near, without] = taken.get();
        let with = well_formed + near;
        eprintln!(
            "the fast path took {with} lines with a binding ({near} of them not well-formed), {without} without"
        );
        assert!(
            with * 4 > CASES as usize,
            "the fast path took {with} of {CASES} lines with a binding"
        );
    }

    #[test]
    fn the_fast_path_never_accepts_a_line_the_full_parser_reads_differently() {
        let mut accepted = 0;
        for shape in [
            Shape::Chain,
            Shape::Fanout,
            Shape::Random,
            Shape::TrainingStep,
        ] {
            let mut out = LogWriter::new(Vec::new());
            let options = GenOptions {
                seed: 9,
                launches: 300,
                streams: 3,
                fail_rate: 0.05,
                shape,
            };
            generate(&options, |e| out.write_event(&e)).unwrap();
            let text = String::from_utf8(out.into_inner()).unwrap();
            for line in text.lines().filter(|l| l.starts_with(r#"{"op":"launch","#)) {
                for variant in variants(line) {
                    if let Some(event) = fast::launch(&variant) {
                        assert_eq!(parse_full(&variant, false), Ok(event), "{variant}");
                        accepted += 1;
                    }
                }
            }
        }
        assert!(
            accepted > 1000,
            "the fast path takes the plain lines ({accepted})"
        );
    }
}
