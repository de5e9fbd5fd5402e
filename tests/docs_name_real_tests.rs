//! The documents point at tests by file and name (`tests/spec_launches.rs::a_…`):
//! `docs/spec-coverage.md` maps every rule of SPEC.md to the tests that would
//! fail if it broke, and `docs/reliability.md` names the test that caught each
//! mutant. A test renamed or removed would leave such a pointer naming
//! nothing, and the table would still read as evidence. This test holds every
//! pointer to an item its file declares.

use std::fs;
use std::path::Path;

/// The documents that name tests by file.
const DOCUMENTS: [&str; 6] = [
    "README.md",
    "docs/spec-coverage.md",
    "docs/reliability.md",
    "docs/reliability-history.md",
    "docs/performance.md",
    "docs/recording.md",
];

/// One `path.rs::item` pointer, and the line of the document it stands on.
struct Pointer {
    line: usize,
    file: String,
    item: String,
}

/// Characters a path in the repository is spelled with.
fn in_path(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '-')
}

/// Characters an item path after `.rs::` is spelled with.
fn in_item(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | ':')
}

/// Every `tests/….rs::item`, `src/….rs::item`, `benches/….rs::item` or
/// `fuzz/….rs::item` in `text`. The item is the last segment of the path
/// after the file: a test inside a module of a file is named by the module
/// and the test, and the test is what must be there.
fn pointers(text: &str) -> Vec<Pointer> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(".rs::") {
            let dot = from + at;
            from = dot + ".rs::".len();
            let start = line[..dot]
                .rfind(|c: char| !in_path(c))
                .map_or(0, |before| before + 1);
            let file = &line[start..dot + ".rs".len()];
            if !["tests/", "src/", "benches/", "fuzz/"]
                .iter()
                .any(|root| file.starts_with(root))
            {
                continue;
            }
            let rest = &line[from..];
            let end = rest.find(|c: char| !in_item(c)).unwrap_or(rest.len());
            let Some(item) = rest[..end].trim_end_matches(':').rsplit("::").next() else {
                continue;
            };
            if !item.is_empty() {
                found.push(Pointer {
                    line: index + 1,
                    file: file.to_owned(),
                    item: item.to_owned(),
                });
            }
        }
    }
    found
}

/// Whether `source` declares `name` as a function, module, type or constant.
fn declares(source: &str, name: &str) -> bool {
    [
        "fn ", "mod ", "struct ", "enum ", "const ", "static ", "type ",
    ]
    .iter()
    .any(|keyword| {
        let declaration = format!("{keyword}{name}");
        source.match_indices(&declaration).any(|(at, _)| {
            source[at + declaration.len()..]
                .chars()
                .next()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
        })
    })
}

#[test]
fn every_test_a_document_names_by_its_file_is_declared_in_that_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut checked = 0;
    for document in DOCUMENTS {
        let text = fs::read_to_string(root.join(document))
            .unwrap_or_else(|error| panic!("{document}: {error}"));
        for pointer in pointers(&text) {
            checked += 1;
            match fs::read_to_string(root.join(&pointer.file)) {
                Ok(source) if declares(&source, &pointer.item) => {}
                Ok(_) => missing.push(format!(
                    "{document}:{}: {} declares no `{}`",
                    pointer.line, pointer.file, pointer.item
                )),
                Err(error) => missing.push(format!(
                    "{document}:{}: {} cannot be read: {error}",
                    pointer.line, pointer.file
                )),
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {checked} pointers name nothing:\n{}",
        missing.len(),
        missing.join("\n")
    );
    // The coverage table alone names more than 250 tests: finding far
    // fewer would mean the scan, not the documents, went wrong.
    assert!(checked > 250, "only {checked} pointers found");
}

#[test]
fn the_scan_finds_a_pointer_inside_a_table_cell_and_takes_the_last_segment() {
    let found = pointers(
        "| 1 | rule | tests/a_b.rs::one<br>src/world/x.rs::tests::two_three |\n\
         see `lib.rs::nothing` and benches/w.rs::w1.",
    );
    let seen: Vec<_> = found
        .iter()
        .map(|p| (p.line, p.file.as_str(), p.item.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (1, "tests/a_b.rs", "one"),
            (1, "src/world/x.rs", "two_three"),
            (2, "benches/w.rs", "w1"),
        ]
    );
}

#[test]
fn a_name_counts_as_declared_only_whole() {
    let source = "fn a_test_longer() {}\nmod inner { fn a_test() {} }";
    assert!(declares(source, "a_test"));
    assert!(declares(source, "inner"));
    assert!(!declares(source, "a_tes"));
    assert!(!declares(source, "a_test_long"));
}
