//! API errors as the real server returns them: a `metav1.Status` object with `code`,
//! `reason`, `message` and, for validation failures, `details.causes` with field paths.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One cause of an Invalid (422) error, as `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`,
    /// `FieldValueTooLong`, `FieldValueTooMany`, `FieldValueDuplicate`, `FieldValueForbidden`.
    pub reason: String,
    /// The field error's text, e.g. `Invalid value: 0: spec.x in body should be greater than or equal to 1`.
    pub message: String,
    /// The field path, e.g. `spec.plugins.score.enabled[0].weight`.
    pub field: String,
}

/// An error response of the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest`, `Gone`,
    /// `MethodNotAllowed`, `UnsupportedMediaType`, `InternalError`, `Expired`, ...
    pub reason: String,
    pub message: String,
    /// `details.group` / `details.kind` / `details.name` when known.
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub causes: Vec<Cause>,
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            group: None,
            kind: None,
            name: None,
            causes: Vec::new(),
        }
    }

    /// 404 `<resource>.<group> "<name>" not found`, worded as the real server.
    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        let qualified = qualified(resource, group);
        ApiError::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
            .with_details(group, resource, name)
    }

    /// 409 `<resource>.<group> "<name>" already exists`.
    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        let qualified = qualified(resource, group);
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{qualified} \"{name}\" already exists"),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict for a stale resourceVersion, worded as the real server.
    pub fn conflict(resource: &str, group: &str, name: &str) -> Self {
        let qualified = qualified(resource, group);
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {qualified} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        )
        .with_details(group, resource, name)
    }

    /// 422 Invalid: `<Kind>.<group> "<name>" is invalid: [<field errors>]`.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let errors: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let list = if errors.len() == 1 {
            errors[0].clone()
        } else {
            format!("[{}]", errors.join(", "))
        };
        let mut error = ApiError::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {list}"),
        )
        .with_details(group, kind, name);
        error.causes = causes;
        error
    }

    /// 410 Gone for a watch or list from a resourceVersion older than the kept history.
    pub fn gone(resource_version: u64, oldest: u64) -> Self {
        ApiError::new(
            410,
            "Expired",
            format!("too old resource version: {resource_version} ({oldest})"),
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.group = Some(group.to_string()).filter(|g| !g.is_empty());
        self.kind = Some(kind.to_string());
        self.name = Some(name.to_string()).filter(|n| !n.is_empty());
        self
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        if let Some(name) = &self.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &self.group {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &self.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (code, axum::Json(self.to_status())).into_response()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}
