//! CustomResourceDefinitions: what a CRD object makes the server serve, and the status the
//! real apiextensions controllers would give it (NamesAccepted, Established).

use serde_json::{Value, json};

use crate::errors::Cause;
use crate::resources::ResourceDef;

const CRD_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// The names of a CRD with the real server's defaults filled in.
#[derive(Debug, Clone)]
struct Names {
    plural: String,
    singular: String,
    kind: String,
    list_kind: String,
    short_names: Vec<String>,
    categories: Vec<String>,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn required(field: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: "Required value".into(),
        field: field.into(),
    }
}

fn invalid(field: &str, value: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"{value}\": {why}"),
        field: field.into(),
    }
}

fn names(spec: &Value) -> (Names, Vec<Cause>) {
    let n = &spec["names"];
    let text = |key: &str| n[key].as_str().unwrap_or_default().to_string();
    let kind = text("kind");
    let mut causes = Vec::new();
    if text("plural").is_empty() {
        causes.push(required("spec.names.plural"));
    }
    if kind.is_empty() {
        causes.push(required("spec.names.kind"));
    }
    let singular = Some(text("singular"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let list_kind = Some(text("listKind"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{kind}List"));
    let names = Names {
        plural: text("plural"),
        singular,
        kind,
        list_kind,
        short_names: strings(&n["shortNames"]),
        categories: strings(&n["categories"]),
    };
    (names, causes)
}

/// The resources a CRD serves, one per served version; or the causes that make the real
/// server reject it (a subset of its validation: names, group, scope, versions).
pub fn served_resources(crd: &Value) -> Result<Vec<ResourceDef>, Vec<Cause>> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let (names, mut causes) = names(spec);
    if group.is_empty() {
        causes.push(required("spec.group"));
    }
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let expected = format!("{}.{group}", names.plural);
    if causes.is_empty() && name != expected {
        causes.push(invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let namespaced = match spec["scope"].as_str() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            let value = other.unwrap_or_default();
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: \"{value}\": supported values: \"Cluster\", \"Namespaced\""
                ),
                field: "spec.scope".into(),
            });
            false
        }
    };
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(required("spec.versions"));
    }
    let storage = versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .count();
    if !versions.is_empty() && storage != 1 {
        causes.push(invalid(
            "spec.versions",
            &storage.to_string(),
            "must have exactly one version marked as storage version",
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version["name"].as_str().is_none_or(str::is_empty) {
            causes.push(required(&format!("spec.versions[{i}].name")));
        }
    }
    if !causes.is_empty() {
        return Err(causes);
    }
    Ok(versions
        .iter()
        .filter(|v| v["served"].as_bool() == Some(true))
        .map(|v| ResourceDef {
            group: group.to_string(),
            version: v["name"].as_str().unwrap_or_default().to_string(),
            resource: names.plural.clone(),
            kind: names.kind.clone(),
            list_kind: names.list_kind.clone(),
            singular: names.singular.clone(),
            namespaced,
            verbs: CRD_VERBS.iter().map(|v| v.to_string()).collect(),
            short_names: names.short_names.clone(),
            categories: names.categories.clone(),
            has_status: v["subresources"].get("status").is_some(),
            has_binding: false,
        })
        .collect())
}

/// Fills what the real server defaults on a CRD and sets the status its controllers
/// converge to: names accepted, established, the storage version stored.
pub fn complete(crd: &mut Value) {
    if crd["spec"]["conversion"].is_null() {
        crate::strategy::set_in(crd, &["spec", "conversion"], json!({"strategy": "None"}));
    }
    let (names, _) = names(&crd["spec"]);
    let mut accepted = json!({"plural": names.plural, "singular": names.singular, "kind": names.kind, "listKind": names.list_kind});
    if !names.short_names.is_empty() {
        accepted["shortNames"] = json!(names.short_names);
    }
    if !names.categories.is_empty() {
        accepted["categories"] = json!(names.categories);
    }
    let stored: Vec<&str> = crd["spec"]["versions"]
        .as_array()
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v["storage"].as_bool() == Some(true))
                .filter_map(|v| v["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let now = crate::strategy::now();
    crd["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1alpha1", "served": false, "storage": false},
                ],
            },
        })
    }

    #[test]
    fn serves_each_served_version_with_its_subresources() {
        let defs = served_resources(&crd()).expect("valid CRD");
        let versions: Vec<_> = defs
            .iter()
            .map(|d| (d.version.as_str(), d.has_status))
            .collect();
        assert_eq!(versions, [("v1", true), ("v1beta1", false)]);
        assert_eq!(defs[0].singular, "widget");
        assert_eq!(defs[0].list_kind, "WidgetList");
        assert_eq!(defs[0].short_names, ["wd"]);
        assert!(defs[0].namespaced);
    }

    #[test]
    fn rejects_a_name_that_is_not_plural_dot_group() {
        let mut bad = crd();
        bad["metadata"]["name"] = json!("widgets");
        let causes = served_resources(&bad).expect_err("name mismatch");
        assert_eq!(causes[0].field, "metadata.name");
    }

    #[test]
    fn status_says_established_with_the_storage_version() {
        let mut object = crd();
        complete(&mut object);
        assert_eq!(object["status"]["conditions"][1]["type"], "Established");
        assert_eq!(object["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(object["status"]["acceptedNames"]["listKind"], "WidgetList");
    }
}
