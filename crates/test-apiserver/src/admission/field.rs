//! apimachinery's `field.Error` (k8s.io/apimachinery/pkg/util/validation/field/errors.go) and
//! the Go formatting its `ErrorBody` relies on (`%v`, `%q`, `%#v`).

use serde_json::Value;

use crate::errors::Cause;

/// `field.ErrorType`: the cause reason and the text `ErrorBody` starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorType {
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    TypeInvalid,
}

impl ErrorType {
    fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    fn text(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
        }
    }
}

/// A Go value as `field.Error.BadValue` holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GoValue {
    /// `nil`, printed as `"null"`.
    Nil,
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A map or slice from unstructured JSON, printed with `%#v`.
    Json(Value),
}

impl GoValue {
    /// The Go value unstructured JSON decoding produces (`int64` for integers, else `float64`).
    pub(crate) fn from_json(value: &Value) -> GoValue {
        match value {
            Value::Null => GoValue::Nil,
            Value::Bool(b) => GoValue::Bool(*b),
            Value::String(s) => GoValue::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => GoValue::Int(i),
                None => GoValue::Float(n.as_f64().unwrap_or(0.0)),
            },
            other => GoValue::Json(other.clone()),
        }
    }
}

/// `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub typ: ErrorType,
    pub field: String,
    /// `None` is apimachinery's `omitValue`.
    pub bad: Option<GoValue>,
    pub detail: String,
}

/// The field path of a nil `*field.Path`.
pub(crate) const NIL_PATH: &str = "<nil>";

impl FieldError {
    pub fn new(
        typ: ErrorType,
        field: &str,
        bad: Option<GoValue>,
        detail: impl Into<String>,
    ) -> Self {
        let field = if field.is_empty() {
            NIL_PATH.to_string()
        } else {
            field.to_string()
        };
        FieldError {
            typ,
            field,
            bad,
            detail: detail.into(),
        }
    }

    pub fn invalid(field: &str, bad: GoValue, detail: impl Into<String>) -> Self {
        FieldError::new(ErrorType::Invalid, field, Some(bad), detail)
    }

    pub fn required(field: &str, detail: impl Into<String>) -> Self {
        FieldError::new(
            ErrorType::Required,
            field,
            Some(GoValue::Str(String::new())),
            detail,
        )
    }

    pub fn duplicate(field: &str, bad: GoValue) -> Self {
        FieldError::new(ErrorType::Duplicate, field, Some(bad), "")
    }

    pub fn forbidden(field: &str, detail: impl Into<String>) -> Self {
        FieldError::new(
            ErrorType::Forbidden,
            field,
            Some(GoValue::Str(String::new())),
            detail,
        )
    }

    /// `field.NotSupported`: the supported values are quoted with `strconv.Quote`.
    pub fn not_supported(field: &str, bad: GoValue, values: &[String]) -> Self {
        let detail = if values.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError::new(ErrorType::NotSupported, field, Some(bad), detail)
    }

    /// `field.TooLong` (apimachinery >= 1.31; `TooLongMaxLength` delegates to it).
    pub fn too_long(field: &str, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("may not be more than {max} bytes")
        } else {
            "value is too long".to_string()
        };
        FieldError::new(
            ErrorType::TooLong,
            field,
            Some(GoValue::Str("<value omitted>".into())),
            detail,
        )
    }

    /// `field.TooMany`.
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        let bad = if actual >= 0 {
            Some(GoValue::Int(actual))
        } else {
            None
        };
        FieldError::new(ErrorType::TooMany, field, bad, detail)
    }

    pub fn is_blocking_for_cel(&self) -> bool {
        matches!(
            self.typ,
            ErrorType::NotSupported
                | ErrorType::Required
                | ErrorType::TooLong
                | ErrorType::TooMany
                | ErrorType::TypeInvalid
        )
    }

    /// `(*field.Error).ErrorBody()`.
    pub fn error_body(&self) -> String {
        let mut s = match (self.typ, &self.bad) {
            (ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong, _) | (_, None) => {
                self.typ.text().to_string()
            }
            (_, Some(value)) => {
                let printed = match value {
                    GoValue::Nil => go_quote("null"),
                    GoValue::Str(s) => go_quote(s),
                    GoValue::Int(i) => i.to_string(),
                    GoValue::Float(f) => go_float(*f),
                    GoValue::Bool(b) => b.to_string(),
                    GoValue::Json(v) => go_sharp_v(v),
                };
                format!("{}: {}", self.typ.text(), printed)
            }
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    pub fn into_cause(self) -> Cause {
        Cause {
            reason: self.typ.reason().to_string(),
            message: self.error_body(),
            field: self.field,
        }
    }
}

/// Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// exponent form when the exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Go's `%#v` of an unstructured JSON value (`map[string]interface {}{...}`).
pub(crate) fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_sharp_v_elem(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
        Value::Array(items) => {
            let entries: Vec<String> = items.iter().map(go_sharp_v_elem).collect();
            format!("[]interface {{}}{{{}}}", entries.join(", "))
        }
        other => go_sharp_v_elem(other),
    }
}

fn go_sharp_v_elem(v: &Value) -> String {
    match GoValue::from_json(v) {
        GoValue::Nil => "interface {}(nil)".into(),
        GoValue::Str(s) => go_quote(&s),
        GoValue::Int(i) => i.to_string(),
        GoValue::Float(f) => go_float(f),
        GoValue::Bool(b) => b.to_string(),
        GoValue::Json(v) => go_sharp_v(&v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_matches_strconv() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(100.0), "100");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1_000_000.0), "1e+06");
        assert_eq!(go_float(1_234_567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5), "-2.5");
    }

    #[test]
    fn sharp_v_of_a_map() {
        let v = serde_json::json!({"type": "Ready", "n": 1});
        assert_eq!(
            go_sharp_v(&v),
            r#"map[string]interface {}{"n":1, "type":"Ready"}"#
        );
    }
}
