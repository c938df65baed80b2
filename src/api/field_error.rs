//! apimachinery-style field errors: what every check of user input (schema, CEL rules,
//! plugin args, profile resolution, convert) reports.

use std::fmt;

/// The kind of a [`FieldError`], as apimachinery's `field.ErrorType`: it decides how the
/// error reads (`Invalid value: ...`, `Required value`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// `Invalid value: <value>: <message>`. Without a value only the message is shown
    /// (how decode errors read).
    Invalid,
    /// `Required value` (`: <message>` when there is one).
    Required,
    /// `Unsupported value: <value>: supported values: "A", "B"`.
    NotSupported,
    /// `Too many: <count>: must have at most <max> items`.
    TooMany,
    /// `Too long: may not be more than <max> bytes`.
    TooLong,
    /// `Forbidden: <message>`.
    Forbidden,
    /// `Duplicate value: <value>` (`: <message>` when there is one).
    Duplicate,
    /// `Not found: <value>`.
    NotFound,
    /// A field the schema does not declare, worded as the API server's strict field
    /// validation: `unknown field "<path>"`.
    UnknownField,
    /// `Internal error: <message>`: berth's own bug (say, a CEL rule that does not
    /// compile), not the user's.
    Internal,
}

impl FieldErrorKind {
    /// apimachinery's `ErrorType.String()`.
    fn label(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::UnknownField => "Unknown field",
            FieldErrorKind::Internal => "Internal error",
        }
    }
}

/// One problem found in user input: the field path, the bad value and what would be valid.
/// `Display` reads like the API server's field errors
/// (`spec.plugins.score.enabled[0].weight: Invalid value: 0: must be between 1 and 100`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// How the error reads.
    pub kind: FieldErrorKind,
    /// JSON path from the object root, e.g. `spec.pluginConfig.nodeResourcesFit.scoringStrategy.resources[0].weight`.
    pub path: String,
    /// The offending value rendered as JSON (empty when the field is missing).
    pub value: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl FieldError {
    /// An [`FieldErrorKind::Invalid`] error; `value` is rendered as given (JSON for
    /// strings: `"\"Foo\""`). An empty value leaves just `path: message`.
    pub fn new(
        path: impl Into<String>,
        value: impl fmt::Display,
        message: impl Into<String>,
    ) -> Self {
        Self::of(FieldErrorKind::Invalid, path, value.to_string(), message)
    }

    /// `path: Invalid value: <value as JSON>: message`.
    pub fn invalid(
        path: impl Into<String>,
        value: &serde_json::Value,
        message: impl Into<String>,
    ) -> Self {
        Self::of(FieldErrorKind::Invalid, path, value.to_string(), message)
    }

    /// `path: Required value` (`: message` unless empty).
    pub fn required(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::of(FieldErrorKind::Required, path, String::new(), message)
    }

    /// `path: Unsupported value: <value as JSON>: supported values: "A", "B"`.
    pub fn not_supported<S: AsRef<str>>(
        path: impl Into<String>,
        value: &serde_json::Value,
        supported: &[S],
    ) -> Self {
        let supported: Vec<String> = supported
            .iter()
            .map(|s| serde_json::Value::from(s.as_ref()).to_string())
            .collect();
        Self::of(
            FieldErrorKind::NotSupported,
            path,
            value.to_string(),
            format!("supported values: {}", supported.join(", ")),
        )
    }

    /// `path: Too many: <actual>: must have at most <max> items`.
    pub fn too_many(path: impl Into<String>, actual: usize, max: u64) -> Self {
        Self::of(
            FieldErrorKind::TooMany,
            path,
            actual.to_string(),
            format!("must have at most {max} items"),
        )
    }

    /// `path: Too long: may not be more than <max> bytes`.
    pub fn too_long(path: impl Into<String>, max: u64) -> Self {
        Self::of(
            FieldErrorKind::TooLong,
            path,
            String::new(),
            format!("may not be more than {max} bytes"),
        )
    }

    /// `path: Forbidden: message`.
    pub fn forbidden(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::of(FieldErrorKind::Forbidden, path, String::new(), message)
    }

    /// `path: Duplicate value: <value as JSON>` (`: message` unless empty).
    pub fn duplicate(
        path: impl Into<String>,
        value: &serde_json::Value,
        message: impl Into<String>,
    ) -> Self {
        Self::of(FieldErrorKind::Duplicate, path, value.to_string(), message)
    }

    /// `path: Not found: <value as JSON>`.
    pub fn not_found(path: impl Into<String>, value: &serde_json::Value) -> Self {
        Self::of(FieldErrorKind::NotFound, path, value.to_string(), "")
    }

    /// `path: unknown field "<path>"`, as strict field validation reports a field the
    /// schema does not declare.
    pub fn unknown_field(path: impl Into<String>) -> Self {
        let path = path.into();
        let message = format!("unknown field {}", serde_json::Value::from(path.as_str()));
        Self::of(FieldErrorKind::UnknownField, path, String::new(), message)
    }

    /// `path: Internal error: message`.
    pub fn internal(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::of(FieldErrorKind::Internal, path, String::new(), message)
    }

    fn of(
        kind: FieldErrorKind,
        path: impl Into<String>,
        value: String,
        message: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            path: path.into(),
            value,
            message: message.into(),
        }
    }
}

/// apimachinery's `field.Error.Error()`: `<path>: <type>[: <value>][: <detail>]`, where
/// Required, Forbidden, TooLong and Internal never show the value.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        let with_value = match self.kind {
            // Without a value, a legacy `FieldError::new` message stands alone.
            FieldErrorKind::Invalid if self.value.is_empty() => {
                return f.write_str(&self.message);
            }
            FieldErrorKind::UnknownField => return f.write_str(&self.message),
            FieldErrorKind::Required
            | FieldErrorKind::Forbidden
            | FieldErrorKind::TooLong
            | FieldErrorKind::Internal => false,
            _ => !self.value.is_empty(),
        };
        f.write_str(self.kind.label())?;
        if with_value {
            write!(f, ": {}", self.value)?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}
