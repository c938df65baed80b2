//! Splitting a stream into YAML documents and parsing each to JSON. Every `---` line
//! opens a new document, except one that opens the file.

use super::*;

/// One YAML document of a file: its text and the 1-based file line it starts on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RawDocument<'a> {
    pub(crate) text: &'a str,
    pub(crate) first_line: usize,
    pub(crate) has_content: bool,
}

/// Splits a YAML stream at document markers. A `---` or `...` at the start of a line is
/// always a marker in YAML (no scalar may contain one there), so this split agrees with
/// the parser while letting us count documents, including empty ones, ourselves.
pub(crate) fn split_documents(text: &str) -> Vec<RawDocument<'_>> {
    let mut documents = Vec::new();
    let mut start = 0;
    let mut first_line = 1;
    let mut has_content = false;
    let mut opened_by_marker = false;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_number = index + 1;
        let is_start = is_marker(line, "---");
        let is_end = is_marker(line, "...");
        if is_start && (has_content || opened_by_marker) {
            documents.push(RawDocument {
                text: &text[start..offset],
                first_line,
                has_content,
            });
            start = offset;
            first_line = line_number;
            has_content = false;
        }
        if is_start {
            opened_by_marker = true;
            // `--- {a: 1}` carries content on the marker line itself.
            has_content |= is_content(line[3..].trim_start());
        } else if is_end {
            offset += line.len();
            documents.push(RawDocument {
                text: &text[start..offset],
                first_line,
                has_content,
            });
            start = offset;
            first_line = line_number + 1;
            has_content = false;
            opened_by_marker = false;
            continue;
        } else if !line.starts_with('%') {
            has_content |= is_content(line.trim_start());
        }
        offset += line.len();
    }
    if has_content || opened_by_marker {
        documents.push(RawDocument {
            text: &text[start..],
            first_line,
            has_content,
        });
    }
    documents
}

pub(super) fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

pub(super) fn is_content(trimmed: &str) -> bool {
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

pub(crate) fn parse_document(document: &RawDocument<'_>, at: &Source) -> Result<Value, InputError> {
    let options = serde_saphyr::options! { with_snippet: false };
    serde_saphyr::from_str_with_options::<Value>(document.text, options).map_err(|error| {
        let formatter = serde_saphyr::UserMessageFormatter;
        let render = serde_saphyr::render_options! {
            formatter: &formatter,
            snippets: serde_saphyr::SnippetMode::Off,
            line_offset: (document.first_line - 1) as u64,
        };
        InputError::Syntax {
            at: at.clone(),
            message: error.render_with_options(render),
        }
    })
}
