//! The layering of `src/`, checked from the code's own imports.
//!
//! docs/architecture.md lists berth's top-level modules in layers, top to bottom (the
//! block after "## Layers"). A module may import only modules on lower lines: never one
//! on its own line, never one above it. Inside `plugins`, no plugin module imports
//! another one: what several plugins share lives in the helper layer below them; above
//! `plugins`, modules see only what src/plugins/mod.rs offers (the registry and the
//! plugin types), not the plugins' modules. Test
//! code (`#[cfg(test)]` modules, `tests.rs` and `test_util.rs` files, files under a
//! `tests/` folder) may reach anywhere,
//! as an integration test would.
//!
//! References are read from the source text with comments and string literals blanked
//! out: `crate::x`, `crate::{x, y::z}`, and `super::` paths resolved against the file's
//! own module path. Macros that build paths from tokens are not followed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layer list: one line per layer, top to bottom, each a space-separated list of
/// top-level modules.
fn layers() -> Vec<Vec<String>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md is readable");
    let section = doc
        .split("\n## Layers")
        .nth(1)
        .expect("docs/architecture.md has a \"## Layers\" section");
    let block = section
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the Layers section has a ```text block");
    block
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|modules| !modules.is_empty())
        .collect()
}

/// Replaces comments, string and char literals with spaces, keeping line breaks, so that
/// only code is searched.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, text: &str| {
        out.extend(text.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
    };
    while i < bytes.len() {
        let rest = &source[i..];
        let end = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |e| e + 2)
        } else if let Some((open, hashes)) = raw_string_start(rest) {
            let closing = format!("\"{}", "#".repeat(hashes));
            rest[open..]
                .find(&closing)
                .map_or(rest.len(), |e| open + e + closing.len())
        } else if rest.starts_with('"') || rest.starts_with("b\"") {
            let start = rest.find('"').unwrap_or(0) + 1;
            let mut j = start;
            let body = rest.as_bytes();
            while j < body.len() && body[j] != b'"' {
                j += if body[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(rest.len())
        } else if let Some(len) = char_literal(rest) {
            len
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

/// `r"`, `r#"`, `br##"`...: the length of a raw string's opening (prefix, hashes and
/// quote) and its number of hashes.
fn raw_string_start(rest: &str) -> Option<(usize, usize)> {
    let prefix = if rest.starts_with("br") {
        2
    } else if rest.starts_with('r') {
        1
    } else {
        return None;
    };
    let after = &rest[prefix..];
    let hashes = after.len() - after.trim_start_matches('#').len();
    after[hashes..]
        .starts_with('"')
        .then_some((prefix + hashes + 1, hashes))
}

/// The length of a char literal (`'a'`, `'\n'`, `'\''`) starting here; `None` for a
/// lifetime.
fn char_literal(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices();
    chars.next().filter(|(_, c)| *c == '\'')?;
    let (_, first) = chars.next()?;
    if first == '\\' {
        let close = rest[2..].find('\'')?;
        return Some(2 + close + 1);
    }
    let (at, second) = chars.next()?;
    (second == '\'').then_some(at + 1)
}

/// The code outside `#[cfg(test)]` items: a `#[cfg(test)]` attribute drops the item it is
/// on (up to the end of its braced body or its `;`).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let brace = item.find('{');
        let semi = item.find(';');
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => s + 1,
            (Some(b), _) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (i, c) in item[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, Some(s)) => s + 1,
            (None, None) => item.len(),
        };
        out.extend(
            item[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The leading identifiers of each item of a `{a::b, c, d::{e, f}}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item = String::new();
    for c in group.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth > 1 {
                    item.push(c);
                }
            }
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
                item.push(c);
            }
            ',' if depth == 1 => {
                heads.push(std::mem::take(&mut item));
            }
            _ if depth >= 1 => item.push(c),
            _ => {}
        }
    }
    heads.push(item);
    heads
        .iter()
        .filter_map(|item| {
            let head: String = item
                .trim()
                .chars()
                .take_while(|c| is_ident_char(*c))
                .collect();
            (!head.is_empty() && head != "self").then_some(head)
        })
        .collect()
}

/// Every absolute module path (`["plugins", "node_affinity", ...]`, first two components
/// at most) that `code`, the code of module `module`, refers to.
fn references(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !is_ident_char(chars[i - 1]) && chars[i - 1] != ':';
        let rest: String = chars[i..chars.len().min(i + 8)].iter().collect();
        if starts_word && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let mut base: Vec<String> = Vec::new();
            let mut j = i;
            if rest.starts_with("crate::") {
                j += "crate::".len();
            } else {
                base = module.to_vec();
                while chars[j..].iter().collect::<String>().starts_with("super::") {
                    base.pop();
                    j += "super::".len();
                }
            }
            let tail: String = chars[j..].iter().take(4000).collect();
            if tail.starts_with('{') {
                for head in group_heads(&tail) {
                    let mut path = base.clone();
                    path.push(head);
                    found.push(path);
                }
            } else {
                let mut path = base.clone();
                for segment in tail.split("::") {
                    let ident: String = segment.chars().take_while(|c| is_ident_char(*c)).collect();
                    if ident.is_empty() {
                        break;
                    }
                    path.push(ident.clone());
                    if ident.len() != segment.len() || path.len() >= 2 {
                        break;
                    }
                }
                if path.len() > base.len() {
                    found.push(path);
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    found
        .into_iter()
        .map(|mut path| {
            path.truncate(2);
            path
        })
        .filter(|path| !path.is_empty())
        .collect()
}

/// The module path of a file under `src/`: `plugins/node_affinity.rs` and
/// `plugins/node_affinity/mod.rs` are both `["plugins", "node_affinity"]`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        parts.pop();
    }
    parts
}

fn is_test_file(relative: &Path) -> bool {
    let name = relative
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A file under a `tests/` folder belongs to the `tests` module beside it (included
    // from it, as the Coscheduling tables are).
    let in_tests_folder = relative
        .parent()
        .is_some_and(|p| p.components().any(|c| c.as_os_str() == "tests"));
    name == "tests" || name.ends_with("_tests") || name == "test_util" || in_tests_folder
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every breach of the layering in the files `sources` (path under `src/`, text), given
/// the layer list and the submodules of `plugins`.
fn breaches(
    sources: &[(PathBuf, String)],
    layers: &[Vec<String>],
    plugins: &[String],
) -> Vec<String> {
    let line_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(line, modules)| modules.iter().map(move |m| (m.as_str(), line)))
        .collect();
    let mut problems = Vec::new();
    for (relative, source) in sources {
        if relative == Path::new("main.rs") || is_test_file(relative) {
            continue;
        }
        let module = module_of(relative);
        let Some(top) = module.first() else { continue };
        let Some(&from) = line_of.get(top.as_str()) else {
            problems.push(format!(
                "src/{}: module `{top}` has no place in docs/architecture.md's layer list",
                relative.display()
            ));
            continue;
        };
        let code = without_test_items(&code_only(source));
        for path in references(&module, &code) {
            let target = &path[0];
            if target == top {
                if top == "plugins" && module.len() >= 2 && path.len() == 2 {
                    let (own, other) = (&module[1], &path[1]);
                    if own != other && plugins.contains(other) {
                        problems.push(format!(
                            "src/{}: plugin module `{own}` imports plugin module `{other}`; move what they share to the helper layer",
                            relative.display()
                        ));
                    }
                }
                continue;
            }
            if target == "plugins" && path.len() == 2 && plugins.contains(&path[1]) {
                problems.push(format!(
                    "src/{}: `{top}` imports plugin module `{}`; above the plugins, only the registry in src/plugins/mod.rs is public",
                    relative.display(),
                    path[1]
                ));
            }
            match line_of.get(target.as_str()) {
                Some(&to) if to > from => {}
                Some(_) => problems.push(format!(
                    "src/{}: `{top}` imports `{}`, which is not below it in docs/architecture.md's layers",
                    relative.display(),
                    path.join("::")
                )),
                // Not a module of the crate (a macro or an item of lib.rs).
                None => {}
            }
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

#[test]
fn no_module_imports_a_module_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (
                path.strip_prefix(&src).expect("under src").to_path_buf(),
                text,
            )
        })
        .collect();
    let plugins: Vec<String> = sources
        .iter()
        .map(|(relative, _)| module_of(relative))
        .filter(|module| module.len() >= 2 && module[0] == "plugins")
        .map(|module| module[1].clone())
        .collect();
    let layers = layers();
    let problems = breaches(&sources, &layers, &plugins);
    assert!(
        problems.is_empty(),
        "layering breaches:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_module_of_lib_rs_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs");
    let declared: Vec<String> = code_only(&lib)
        .lines()
        .filter_map(|line| {
            line.trim()
                .strip_prefix("pub mod ")
                .or_else(|| line.trim().strip_prefix("mod "))
        })
        .map(|rest| rest.trim_end_matches(';').trim().to_string())
        .collect();
    let placed: Vec<String> = layers().into_iter().flatten().collect();
    for module in &declared {
        assert!(
            placed.contains(module),
            "`{module}` is declared in src/lib.rs but has no layer"
        );
    }
    for module in &placed {
        assert!(
            declared.contains(module),
            "the layer list names `{module}`, which src/lib.rs does not declare"
        );
    }
}

/// The checker finds what it is meant to find, and only that.
#[test]
fn the_check_sees_each_kind_of_import() {
    let layers: Vec<Vec<String>> = [
        vec!["cli"],
        vec!["plugins"],
        vec!["framework", "queue"],
        vec!["api"],
    ]
    .into_iter()
    .map(|line| line.into_iter().map(str::to_string).collect())
    .collect();
    let plugins = vec!["a".to_string(), "b".to_string()];
    let cases: [(&str, &str, usize); 14] = [
        ("plugins/a.rs", "use crate::framework::Status;", 0),
        ("plugins/a.rs", "use crate::cli::run;", 1),
        ("plugins/a.rs", "use crate::{framework::X, cli::Y};", 1),
        ("plugins/a.rs", "use super::b::Thing;", 1),
        ("plugins/a/inner.rs", "use super::super::b::Thing;", 1),
        ("plugins/a/inner.rs", "use super::other::Thing;", 0),
        ("plugins/a.rs", "fn f() { crate::plugins::b::g() }", 1),
        (
            "plugins/a.rs",
            "// see crate::cli::run\nconst S: &str = \"crate::cli\";",
            0,
        ),
        (
            "plugins/a.rs",
            "#[cfg(test)]\nmod tests { use crate::cli::run; }",
            0,
        ),
        ("framework/x.rs", "use crate::queue::Q;", 1),
        ("api/x.rs", "use crate::framework::{self, Registry};", 1),
        ("nowhere/x.rs", "", 1),
        ("cli/x.rs", "use crate::plugins::a::helper;", 1),
        ("cli/x.rs", "use crate::plugins::default_registry;", 0),
    ];
    for (file, source, want) in cases {
        let got = breaches(
            &[(PathBuf::from(file), source.to_string())],
            &layers,
            &plugins,
        );
        assert_eq!(got.len(), want, "{file}: {source:?} gave {got:?}");
    }
}

#[test]
fn test_files_are_told_apart_by_name_and_folder() {
    for test_file in [
        "queue/tests.rs",
        "plugins/coscheduling/tests/tables.rs",
        "framework/test_util.rs",
        "bench/run_tests.rs",
    ] {
        assert!(is_test_file(Path::new(test_file)), "{test_file}");
    }
    for code in [
        "plugins/coscheduling.rs",
        "queue/groups.rs",
        "testing/mod.rs",
    ] {
        assert!(!is_test_file(Path::new(code)), "{code}");
    }
}
