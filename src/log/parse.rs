//! How the text of one line becomes an [`Event`] (SPEC §7, Appendix A).
//!
//! A small JSON parser of our own: the format needs every object of a line
//! checked for duplicate keys (even inside ignored fields), integers kept
//! only when they are integer literals in `u64` range, and values of the
//! wrong kind remembered rather than raised, because whether a field matters
//! depends on the `op`, which may come last. serde_json does all of that only
//! through hand-written visitors around its own errors; measured on launch
//! lines, those ran no faster than this parser, which also gives every
//! message its exact column. The parser walks the line once, capturing every
//! field *loosely* (an integer, a string borrowed from the line, or the
//! [`Shape`] of anything else); its only errors are malformed JSON, duplicate
//! keys among them. Then [`validate`] checks the captured fields against the
//! op and builds the event. A well-formed line costs only the allocations
//! the owned [`Event`] keeps (a kernel name, a bindings vector); strings with
//! escapes cost one more each.
//!
//! The grammar is RFC 8259's, with two limits of our own: a `\u` escape must
//! not leave a lone surrogate (a Rust string cannot hold one), and values nest
//! at most [`MAX_DEPTH`] deep, so that no line can exhaust the stack.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use super::event::{ErrorObject, Event, Header, LogBinding, Outcome};
use crate::Access;

/// How deep arrays and objects may nest in one line, as serde_json allows.
const MAX_DEPTH: usize = 128;

/// Parses one line's text, which is neither blank nor a comment.
///
/// `first` says whether this is the first event line of the log, the only
/// place a header may stand. The error is the "what was wrong" text.
pub(crate) fn parse_event(text: &str, first: bool) -> Result<Event, String> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let mut raw = parser.line()?;
    validate(&mut raw, first)
}

/// A cursor over one line. `text` and `bytes` are the same line; the parser
/// only ever cuts `text` next to an ASCII byte, so every cut is a char
/// boundary.
struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        if hit {
            self.bump();
        }
        hit
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.bump();
        }
    }

    #[cold]
    #[inline(never)]
    fn malformed_at(&self, pos: usize, what: &str) -> String {
        if pos >= self.bytes.len() {
            format!("malformed JSON: {what} at the end of the line")
        } else {
            format!("malformed JSON: {what} at column {}", pos.saturating_add(1))
        }
    }

    #[cold]
    #[inline(never)]
    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(self.malformed_at(self.pos, what))
    }

    #[inline]
    fn expect(&mut self, byte: u8, what: &str) -> Result<(), String> {
        self.ws();
        if self.eat(byte) {
            Ok(())
        } else {
            self.fail(what)
        }
    }

    #[inline]
    fn enter(&mut self) -> Result<(), String> {
        self.depth = self.depth.saturating_add(1);
        if self.depth > MAX_DEPTH {
            return self.fail("arrays and objects nested more than 128 deep");
        }
        Ok(())
    }

    #[inline]
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The whole line: one object, nothing after it but whitespace.
    fn line(&mut self) -> Result<RawEvent<'a>, String> {
        self.ws();
        if self.peek() != Some(b'{') {
            let value = self.value()?;
            self.end()?;
            return Err(format!(
                "a log line must be a JSON object, not {}",
                value.shape()
            ));
        }
        let mut raw = RawEvent::default();
        let mut seen = Seen::default();
        self.object(|p, key, at| match Field::from_key(&key) {
            None => {
                seen.insert(p, key, at)?;
                p.value().map(drop)
            }
            Some(Field::Scalar(s)) => {
                let slot = &mut raw.scalars[s as usize];
                fresh(p, slot, &key, at)?;
                *slot = Some(p.value()?);
                Ok(())
            }
            Some(Field::Bindings) => {
                fresh(p, &raw.bindings, &key, at)?;
                raw.bindings = Some(p.bindings()?);
                Ok(())
            }
            Some(Field::Binding) => {
                fresh(p, &raw.binding, &key, at)?;
                raw.binding = Some(p.binding(Ctx::Binding, false)?);
                Ok(())
            }
            Some(Field::Outcome) => {
                fresh(p, &raw.outcome, &key, at)?;
                raw.outcome = Some(p.outcome()?);
                Ok(())
            }
            Some(Field::Error) => {
                fresh(p, &raw.error, &key, at)?;
                raw.error = Some(p.error_object(Ctx::Error)?);
                Ok(())
            }
        })?;
        self.end()?;
        Ok(raw)
    }

    fn end(&mut self) -> Result<(), String> {
        self.ws();
        if self.pos < self.bytes.len() {
            return self.fail("trailing characters");
        }
        Ok(())
    }

    /// Walks an object whose `{` is next, handing each key (and where it
    /// starts) to `field`, which must consume the value.
    #[inline]
    fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, Cow<'a, str>, usize) -> Result<(), String>,
    ) -> Result<(), String> {
        self.enter()?;
        self.bump();
        self.ws();
        if !self.eat(b'}') {
            loop {
                self.ws();
                if self.peek() != Some(b'"') {
                    return self.fail("expected a string key");
                }
                let at = self.pos;
                let key = self.string()?;
                self.expect(b':', "expected ':'")?;
                self.ws();
                field(self, key, at)?;
                self.ws();
                match self.peek() {
                    Some(b',') => self.bump(),
                    Some(b'}') => {
                        self.bump();
                        break;
                    }
                    _ => return self.fail("expected ',' or '}'"),
                }
            }
        }
        self.leave();
        Ok(())
    }

    /// Walks an array whose `[` is next, handing each element's index to
    /// `element`, which must consume the element.
    #[inline]
    fn array(
        &mut self,
        mut element: impl FnMut(&mut Self, usize) -> Result<(), String>,
    ) -> Result<(), String> {
        self.enter()?;
        self.bump();
        self.ws();
        if !self.eat(b']') {
            let mut index = 0usize;
            loop {
                self.ws();
                element(self, index)?;
                index = index.saturating_add(1);
                self.ws();
                match self.peek() {
                    Some(b',') => self.bump(),
                    Some(b']') => {
                        self.bump();
                        break;
                    }
                    _ => return self.fail("expected ',' or ']'"),
                }
            }
        }
        self.leave();
        Ok(())
    }

    /// Any value, kept as far as a field could want it.
    #[inline]
    fn value(&mut self) -> Result<Any<'a>, String> {
        match self.peek() {
            Some(b'"') => Ok(Any::Str(self.string()?)),
            Some(b'{') => {
                let mut seen = Seen::default();
                self.object(|p, key, at| {
                    seen.insert(p, key, at)?;
                    p.value().map(drop)
                })?;
                Ok(Any::Other(Shape::Object))
            }
            Some(b'[') => {
                self.array(|p, _| p.value().map(drop))?;
                Ok(Any::Other(Shape::Array))
            }
            Some(b't') => self.literal("true", Shape::Bool(true)),
            Some(b'f') => self.literal("false", Shape::Bool(false)),
            Some(b'n') => self.literal("null", Shape::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.fail("expected a value"),
        }
    }

    #[inline]
    fn literal(&mut self, word: &str, shape: Shape) -> Result<Any<'a>, String> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if !rest.starts_with(word.as_bytes()) {
            return self.fail("expected a value");
        }
        self.pos = self.pos.saturating_add(word.len());
        Ok(Any::Other(shape))
    }

    #[inline]
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.bump();
        }
        self.pos.saturating_sub(start)
    }

    /// A number: an integer literal in `u64` range is kept, anything else is
    /// a [`Shape`] for the message.
    #[inline]
    fn number(&mut self) -> Result<Any<'a>, String> {
        let start = self.pos;
        let negative = self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.bump(),
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.fail("invalid number"),
        }
        let mut integer = true;
        if self.eat(b'.') {
            integer = false;
            if self.digits() == 0 {
                return self.fail("invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.bump();
            if let Some(b'+' | b'-') = self.peek() {
                self.bump();
            }
            if self.digits() == 0 {
                return self.fail("invalid number");
            }
        }
        let text = self.text.get(start..self.pos).unwrap_or_default();
        let float = || Any::Other(Shape::Float(text.parse().unwrap_or(f64::NAN)));
        if !integer {
            return Ok(float());
        }
        if negative {
            // `-0` is the integer 0; other negative integers are out of range.
            return Ok(match text.parse::<i64>() {
                Ok(0) => Any::Int(0),
                Ok(v) => Any::Other(Shape::Neg(v)),
                Err(_) => float(),
            });
        }
        let mut value: u64 = 0;
        for &digit in self.bytes.get(start..self.pos).unwrap_or_default() {
            let next = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(digit.wrapping_sub(b'0'))));
            match next {
                Some(next) => value = next,
                None => return Ok(float()),
            }
        }
        Ok(Any::Int(value))
    }

    /// A string whose `"` is next: borrowed from the line unless it has
    /// escapes.
    #[inline]
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.bump();
        let start = self.pos;
        let rest = self.bytes.get(start..).unwrap_or_default();
        let stop = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        let Some(stop) = stop else {
            self.pos = self.bytes.len();
            return self.fail("unterminated string");
        };
        self.pos = start.saturating_add(stop);
        match self.peek() {
            Some(b'"') => {
                let s = self.text.get(start..self.pos).unwrap_or_default();
                self.bump();
                Ok(Cow::Borrowed(s))
            }
            Some(b'\\') => self.escaped(start).map(Cow::Owned),
            _ => self.fail("control character in string"),
        }
    }

    /// The rest of a string with escapes, from its first `\`.
    #[cold]
    #[inline(never)]
    fn escaped(&mut self, start: usize) -> Result<String, String> {
        let mut out = String::from(self.text.get(start..self.pos).unwrap_or_default());
        loop {
            let run = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.bump();
            }
            out.push_str(self.text.get(run..self.pos).unwrap_or_default());
            match self.peek() {
                Some(b'"') => {
                    self.bump();
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.bump();
                    let escape = self.peek();
                    self.bump();
                    out.push(match escape {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => self.unicode_escape()?,
                        _ => {
                            self.pos = self.pos.saturating_sub(1);
                            return self.fail("invalid escape");
                        }
                    });
                }
                None => return self.fail("unterminated string"),
                Some(_) => return self.fail("control character in string"),
            }
        }
    }

    /// The character of a `\u` escape whose `u` was just read, joining a
    /// surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let high = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&high) {
            if !(self.eat(b'\\') && self.eat(b'u')) {
                return self.fail("lone surrogate in \\u escape");
            }
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return self.fail("lone surrogate in \\u escape");
            }
            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00..0xE000).contains(&high) {
            return self.fail("lone surrogate in \\u escape");
        } else {
            high
        };
        match char::from_u32(code) {
            Some(c) => Ok(c),
            None => self.fail("invalid \\u escape"),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut code = 0u32;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b) => char::from(b).to_digit(16),
                None => None,
            };
            let Some(digit) = digit else {
                return self.fail("invalid \\u escape");
            };
            code = (code << 4) | digit;
            self.bump();
        }
        Ok(code)
    }

    /// A `bindings` field as a launch reads it (`access` required): the
    /// bindings up to the first bad one, and what was wrong with it.
    fn bindings(&mut self) -> Result<RawBindings, String> {
        if self.peek() != Some(b'[') {
            return Ok(RawBindings::Other(self.value()?.shape()));
        }
        let mut list = Vec::with_capacity(4);
        let mut problem = None;
        self.array(|p, index| {
            let binding = p.binding(Ctx::Bindings(index), true)?;
            if problem.is_none() {
                match binding {
                    Ok(binding) => list.push(binding),
                    Err(message) => problem = Some(message),
                }
            }
            Ok(())
        })?;
        Ok(RawBindings::List(list, problem))
    }

    /// One binding: checked, or the message for its first problem.
    fn binding(
        &mut self,
        ctx: Ctx,
        access_required: bool,
    ) -> Result<Result<LogBinding, String>, String> {
        if self.peek() != Some(b'{') {
            return Ok(Err(not_object(ctx, self.value()?.shape())));
        }
        let mut stream = None;
        let mut memory = None;
        let mut range = None;
        let mut access = None;
        let mut seen = Seen::default();
        self.object(|p, key, at| {
            match BindingField::from_key(&key) {
                None => {
                    seen.insert(p, key, at)?;
                    p.value()?;
                }
                Some(BindingField::Stream) => {
                    fresh(p, &stream, &key, at)?;
                    stream = Some(p.value()?);
                }
                Some(BindingField::Memory) => {
                    fresh(p, &memory, &key, at)?;
                    memory = Some(p.value()?);
                }
                Some(BindingField::Range) => {
                    fresh(p, &range, &key, at)?;
                    range = Some(p.range()?);
                }
                Some(BindingField::Access) => {
                    fresh(p, &access, &key, at)?;
                    access = Some(p.value()?);
                }
            }
            Ok(())
        })?;
        Ok(finish_binding(
            ctx,
            access_required,
            stream,
            memory,
            range,
            access,
        ))
    }

    #[inline]
    fn range(&mut self) -> Result<RawRange, String> {
        if self.peek() != Some(b'[') {
            return Ok(match self.value()?.shape() {
                Shape::Null => RawRange::Null,
                other => RawRange::Other(other),
            });
        }
        let mut start = None;
        let mut end = None;
        let mut count = 0usize;
        self.array(|p, index| {
            let value = match p.value()? {
                Any::Int(v) => Ok(v),
                other => Err(other.shape()),
            };
            match index {
                0 => start = Some(value),
                1 => end = Some(value),
                _ => {}
            }
            count = index.saturating_add(1);
            Ok(())
        })?;
        Ok(match (start, end, count) {
            (Some(start), Some(end), 2) => RawRange::Pair(start, end),
            _ => RawRange::Len(count),
        })
    }

    fn outcome(&mut self) -> Result<RawOutcome, String> {
        match self.peek() {
            Some(b'"') => {
                let given = self.string()?;
                Ok(match given.as_ref() {
                    "ok" => RawOutcome::Ok,
                    "dry_run" => RawOutcome::DryRun,
                    other => RawOutcome::Bad(format!(
                        "field \"outcome\" must be \"ok\", \"dry_run\" or {{\"failed\":{{…}}}}, not {}",
                        quoted(other)
                    )),
                })
            }
            Some(b'{') => {
                let mut failed = None;
                let mut seen = Seen::default();
                self.object(|p, key, at| {
                    if key == "failed" {
                        fresh(p, &failed, &key, at)?;
                        failed = Some(p.error_object(Ctx::Failed)?);
                    } else {
                        seen.insert(p, key, at)?;
                        p.value()?;
                    }
                    Ok(())
                })?;
                Ok(match failed {
                    Some(error) => RawOutcome::Failed(error),
                    None => RawOutcome::Bad(
                        "field \"outcome\" is an object without the key \"failed\"".to_owned(),
                    ),
                })
            }
            _ => Ok(match self.value()?.shape() {
                Shape::Null => RawOutcome::Null,
                other => RawOutcome::Bad(format!(
                    "field \"outcome\" must be \"ok\", \"dry_run\" or {{\"failed\":{{…}}}}, not {other}"
                )),
            }),
        }
    }

    /// An error object: checked, or the message for its first problem.
    fn error_object(&mut self, ctx: Ctx) -> Result<Result<ErrorObject, String>, String> {
        if self.peek() != Some(b'{') {
            return Ok(Err(not_object(ctx, self.value()?.shape())));
        }
        let mut kind = None;
        let mut message = None;
        let mut seen = Seen::default();
        self.object(|p, key, at| {
            match key.as_ref() {
                "kind" => {
                    fresh(p, &kind, &key, at)?;
                    kind = Some(p.value()?);
                }
                "message" => {
                    fresh(p, &message, &key, at)?;
                    message = Some(p.value()?);
                }
                _ => {
                    seen.insert(p, key, at)?;
                    p.value()?;
                }
            }
            Ok(())
        })?;
        Ok(finish_error(kind, message, ctx))
    }
}

/// The keys of one object seen so far that are not fields we know (those
/// have their own slots). Allocated only when such a key shows up.
#[derive(Default)]
struct Seen<'a> {
    keys: Option<HashSet<Cow<'a, str>>>,
}

impl<'a> Seen<'a> {
    fn insert(&mut self, p: &Parser<'a>, key: Cow<'a, str>, at: usize) -> Result<(), String> {
        let keys = self.keys.get_or_insert_with(HashSet::new);
        if keys.contains(key.as_ref()) {
            return Err(duplicate(p, &key, at));
        }
        keys.insert(key);
        Ok(())
    }
}

fn duplicate(p: &Parser<'_>, key: &str, at: usize) -> String {
    p.malformed_at(at, &format!("duplicate key {}", quoted(key)))
}

/// Fails when a known field was already given in this object.
fn fresh<T>(p: &Parser<'_>, slot: &Option<T>, key: &str, at: usize) -> Result<(), String> {
    match slot {
        Some(_) => Err(duplicate(p, key, at)),
        None => Ok(()),
    }
}

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

/// " in <path>" after a field name, nothing at top level.
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

/// The visitor methods for the JSON values a visitor does not want. Each
/// becomes `self.other(shape)`; arrays and objects are walked first, so
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
            return Err(format!(
                "field \"range\"{ctx} must be an array of exactly two integers, not {n} elements"
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
