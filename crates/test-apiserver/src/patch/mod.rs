//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
//! patch. Server-side apply is not served (berth does not use it; the real API server's is
//! what the tests against it exercise).
//!
//! - Merge patch: the `json-patch` crate's RFC 7386 `merge`.
//! - JSON patch: the `json-patch` crate's RFC 6902 `patch` (atomic: a failing operation
//!   leaves the object unchanged); errors are worded like the real server's
//!   (`evanphx/json-patch`), e.g. `testing value /spec/x failed: test failed`.
//! - Strategic merge patch: a port of upstream's `strategicpatch` (see [`strategic`]) with
//!   the merge keys of [`merge_keys`] — that module's documentation is the list of what is
//!   supported. Only built-in kinds ([`supports_strategic_merge`]).

pub mod merge_keys;

mod strategic;

use serde_json::Value;

pub use merge_keys::{ListStrategy, MergeRule, supports_strategic_merge};

use merge_keys::STRATEGIC_MERGE_RULES;
use strategic::{Schema, strategic_merge};

/// The message of the real server's 415 for a strategic merge patch of a custom resource.
pub const STRATEGIC_MERGE_UNSUPPORTED: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The patch types the server accepts, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`
    Merge,
    /// `application/json-patch+json`
    Json,
    /// `application/strategic-merge-patch+json`
    StrategicMerge,
}

impl PatchType {
    /// The patch type of a `Content-Type` header value, ignoring parameters.
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        match content_type.split(';').next().map(str::trim) {
            Some("application/merge-patch+json") => Some(PatchType::Merge),
            Some("application/json-patch+json") => Some(PatchType::Json),
            Some("application/strategic-merge-patch+json") => Some(PatchType::StrategicMerge),
            _ => None,
        }
    }
}

/// Applies `patch` of `patch_type` to `original`. `kind` selects the strategic-merge list
/// keys (e.g. `Pod`).
///
/// Errors carry the real server's wording: a strategic merge patch of a kind that is not
/// built in fails with [`STRATEGIC_MERGE_UNSUPPORTED`] (415 upstream).
pub fn apply_patch(
    original: &Value,
    patch: &[u8],
    patch_type: PatchType,
    kind: &str,
) -> Result<Value, String> {
    match patch_type {
        PatchType::Merge => {
            let patch: Value = parse_json(patch)?;
            let mut doc = original.clone();
            json_patch::merge(&mut doc, &patch);
            Ok(doc)
        }
        PatchType::Json => json_patch(original, patch),
        PatchType::StrategicMerge => {
            if !supports_strategic_merge(kind) {
                return Err(STRATEGIC_MERGE_UNSUPPORTED.to_string());
            }
            let patch: Value = parse_json(patch)?;
            strategic_merge(
                original.clone(),
                patch,
                Schema {
                    kind,
                    rules: STRATEGIC_MERGE_RULES,
                },
            )
        }
    }
}

fn parse_json(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("error decoding patch: {e}"))
}

fn json_patch(original: &Value, bytes: &[u8]) -> Result<Value, String> {
    let operations: json_patch::Patch =
        serde_json::from_slice(bytes).map_err(|e| format!("error decoding patch: {e}"))?;
    let mut doc = original.clone();
    match json_patch::patch(&mut doc, &operations) {
        Ok(()) => Ok(doc),
        Err(e) => {
            let op = operations.get(e.operation);
            let (name, from) = match op {
                Some(json_patch::PatchOperation::Add(_)) => ("add", None),
                Some(json_patch::PatchOperation::Remove(_)) => ("remove", None),
                Some(json_patch::PatchOperation::Replace(_)) => ("replace", None),
                Some(json_patch::PatchOperation::Move(m)) => ("move", Some(m.from.to_string())),
                Some(json_patch::PatchOperation::Copy(c)) => ("copy", Some(c.from.to_string())),
                Some(json_patch::PatchOperation::Test(_)) => ("test", None),
                None => ("unknown", None),
            };
            let path = e.path.to_string();
            Err(match e.kind {
                json_patch::PatchErrorKind::TestFailed => {
                    format!("testing value {path} failed: test failed")
                }
                json_patch::PatchErrorKind::InvalidFromPointer => format!(
                    "{name} operation does not apply: doc is missing from path: {}: missing value",
                    from.unwrap_or_default()
                ),
                json_patch::PatchErrorKind::CannotMoveInsideItself => {
                    format!("{name} operation does not apply: cannot move the value inside itself")
                }
                _ if name == "test" => format!("testing value {path} failed: missing value"),
                _ => format!(
                    "{name} operation does not apply: doc is missing path: \"{path}\": missing value"
                ),
            })
        }
    }
}
