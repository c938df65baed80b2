//! Documents as the multi-document YAML `berth simulate -f` reads.
//!
//! Each document is rendered by serde-saphyr (the YAML crate the input reader parses
//! with) and the documents are separated by `---` lines. Kubernetes reads YAML as YAML
//! 1.1 (sigs.k8s.io/yaml), where an unquoted `y`, `no` or `on` is a boolean and
//! `0o17` or `1_000` a number; the serializer's default (YAML 1.1 resolution) quotes
//! every string such a reader would take for something else, so a label value `"no"`
//! stays a string on the way back.

use serde_json::Value;

/// The documents, each opened by a `---` line.
pub fn to_yaml(documents: &[Value]) -> String {
    let mut text = String::new();
    for document in documents {
        text.push_str("---\n");
        // JSON values always serialize; were one refused, its JSON text is YAML too.
        let yaml = serde_saphyr::to_string(document)
            .or_else(|_| serde_json::to_string(document))
            .unwrap_or_default();
        text.push_str(&yaml);
        if !yaml.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::simulate::input::{Source, parse_document, split_documents};

    /// The documents as the input reader parses them back.
    fn read_back(text: &str) -> Vec<Value> {
        split_documents(text)
            .iter()
            .enumerate()
            .map(|(index, document)| {
                let at = Source {
                    file: Path::new("snapshot.yaml").to_path_buf(),
                    document: index,
                };
                parse_document(document, &at).expect("the written YAML parses")
            })
            .collect()
    }

    #[test]
    fn strings_a_yaml_1_1_reader_would_retype_stay_strings() {
        // YAML 1.1 booleans, nulls, numbers in every base, timestamps, and strings that
        // are YAML syntax: each must read back as the same string.
        #[rustfmt::skip]
        let ambiguous = [
            "y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False", "~", "null", "",
            "0", "012", "0x1F", "0o17", "0b101", "1_000", "1e3", "-.5", ".inf", ".NaN",
            "2024-01-01", "2024-01-01T00:00:00Z", "1:20", "<<", "=", "- a", "? b", "#c",
            "a #b", "key: value", "---", "...", "'quoted'", "\"double\"", "[list]", "{map}",
            "*alias", "&anchor", "!tag", "|", ">", "%", "@", "`", " lead", "trail ",
            "line\nbreak", "tab\there", "ünïcode",
        ];
        let labels: serde_json::Map<String, Value> = ambiguous
            .iter()
            .enumerate()
            .map(|(index, value)| (format!("example.com/l{index}"), json!(value)))
            .collect();
        // Map keys come back as the same strings too.
        let keys: serde_json::Map<String, Value> = ["y", "no", "on", "1", "null"]
            .iter()
            .map(|key| (key.to_string(), json!("v")))
            .collect();
        let documents = vec![
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": labels, "annotations": keys}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 7, "enableServiceLinks": false, "containers": []}}),
        ];
        let text = to_yaml(&documents);
        assert_eq!(read_back(&text), documents, "{text}");
    }

    #[test]
    fn every_document_is_opened_by_a_separator() {
        let documents = vec![
            json!({"kind": "A"}),
            json!({"kind": "B"}),
            json!({"kind": "C"}),
        ];
        let text = to_yaml(&documents);
        assert_eq!(split_documents(&text).len(), 3, "{text}");
        assert!(text.starts_with("---\n"), "{text}");
        assert_eq!(to_yaml(&[]), "");
    }
}
