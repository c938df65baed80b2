//! Structural schema validation as the real server does it: kube-openapi's
//! `pkg/validation/validate` (`SchemaValidator` with its type, schema-props, string, format,
//! number, slice, common and object validators), its error texts
//! (`pkg/validation/errors/schema.go`, `validate/schema_messages.go`) and apiextensions'
//! `kubeOpenAPIResultToFieldErrors` (`pkg/apiserver/validation/validation.go`).

use serde_json::Value;

use super::field::{ErrorType, FieldError, GoValue, go_float, go_quote};
use super::structural::{flag, items, properties};

/// `openapierrors.Validation` codes that the field-error conversion distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum,
    MaxItems,
    TooManyProperties,
    Other,
}

#[derive(Debug, Clone)]
enum OpenApiError {
    /// `*errors.Validation`.
    Validation {
        code: Code,
        name: String,
        value: Option<GoValue>,
        /// `Validation.Valid`: the limit for MaxItems, TooLong, TooManyProperties.
        valid: Option<i64>,
        /// `Validation.Values`: the enum.
        values: Vec<Value>,
        message: String,
    },
    /// `errors.New(CompositeErrorCode, ...)`: not a `*Validation`.
    Composite(String),
}

const IN: &str = "body";

fn verr(code: Code, name: &str, value: Option<GoValue>, message: String) -> OpenApiError {
    OpenApiError::Validation {
        code,
        name: name.to_string(),
        value,
        valid: None,
        values: Vec::new(),
        message,
    }
}

/// `errors.InvalidType(name, "body", typeName, value)` with a string value.
fn invalid_type(name: &str, type_name: &str, value: &str) -> OpenApiError {
    verr(
        Code::InvalidType,
        name,
        Some(GoValue::Str(value.to_string())),
        format!(
            "{name} in {IN} must be of type {type_name}: {}",
            go_quote(value)
        ),
    )
}

/// Formats a CRD may use that the server validates (`supportedVersionedFormats` in
/// apiextensions' `validation/formats.go`, names normalized without `-`); others are stripped.
const SUPPORTED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

fn kept_format(s: &Value) -> Option<&str> {
    let f = s.get("format")?.as_str()?;
    let normalized = f.replace('-', "");
    SUPPORTED_FORMATS
        .contains(&normalized.as_str())
        .then_some(f)
}

fn schema_types(s: &Value) -> Vec<String> {
    if flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer".into(), "string".into()];
    }
    match s.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => vec![t.to_string()],
        _ => Vec::new(),
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64()
}

fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    f.is_finite() && f.fract() == 0.0 && (-MAX..=MAX).contains(&f)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Str,
    Int,
    Float,
    Slice,
    Map,
}

fn kind_of(v: &Value) -> Option<Kind> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(_) => Kind::Bool,
        Value::String(_) => Kind::Str,
        Value::Number(n) if n.as_i64().is_some() => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::Array(_) => Kind::Slice,
        Value::Object(_) => Kind::Map,
    })
}

/// `schemaInfoForType`: the JSON type and format inferred from the Go value.
fn schema_info(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Bool => ("boolean", ""),
        Kind::Str => ("string", ""),
        Kind::Int => ("integer", "int64"),
        Kind::Float => ("number", "float64"),
        Kind::Slice => ("array", ""),
        Kind::Map => ("object", ""),
    }
}

struct Validator {
    errors: Vec<OpenApiError>,
}

impl Validator {
    fn add(&mut self, e: OpenApiError) {
        self.errors.push(e);
    }

    /// `SchemaValidator.Validate`, returning whether no error was added.
    fn validate(&mut self, s: &Value, data: &Value, path: &str) -> bool {
        let before = self.errors.len();
        let types = schema_types(s);
        let format = kept_format(s);
        let Some(kind) = kind_of(data) else {
            if !types.is_empty() && !types.iter().any(|t| t == "null") && !flag(s, "nullable") {
                self.add(invalid_type(path, &types.join(","), "null"));
            }
            self.enum_check(s, data, path);
            return self.errors.len() == before;
        };
        if !types.is_empty() || format.is_some() {
            self.type_check(&types, format.unwrap_or(""), data, kind, path);
        }
        self.schema_props(s, data, path);
        if let Value::String(text) = data {
            self.string_check(s, text, path);
            if let Some(format) = format
                && !format_ok(format, text)
            {
                self.add(invalid_type(path, format, text));
            }
        }
        if matches!(kind, Kind::Int | Kind::Float) {
            self.number_check(s, data, path);
        }
        if let Value::Array(list) = data {
            self.slice_check(s, list, path);
        }
        self.enum_check(s, data, path);
        if let Value::Object(map) = data {
            self.object_check(s, map, path);
        }
        self.errors.len() == before
    }

    fn type_check(
        &mut self,
        types: &[String],
        t_format: &str,
        data: &Value,
        kind: Kind,
        path: &str,
    ) {
        let (sch_type, format) = schema_info(kind);
        let contains = |t: &str| types.iter().any(|x| x == t);
        let is_float_int = sch_type == "number"
            && data.as_f64().is_some_and(is_json_integer)
            && contains("integer");
        let is_int_float = sch_type == "integer" && contains("number");
        let is_lower_int = t_format == "int64" && format == "int32";
        let is_lower_float = t_format == "float64" && format == "float32";
        let stringish = matches!(kind, Kind::Str | Kind::Slice);
        if !stringish
            && !t_format.is_empty()
            && !(contains(sch_type)
                || format == t_format
                || is_float_int
                || is_int_float
                || is_lower_int
                || is_lower_float)
        {
            self.add(invalid_type(path, t_format, format));
            return;
        }
        let numeric = contains("number") || contains("integer");
        if !numeric && !t_format.is_empty() && stringish {
            return;
        }
        if !(contains(sch_type) || is_float_int || is_int_float) {
            self.add(invalid_type(path, &types.join(","), sch_type));
        }
    }

    /// A branch of allOf/anyOf/oneOf/not, validated on its own.
    fn branch(&self, s: &Value, data: &Value, path: &str) -> Vec<OpenApiError> {
        let mut sub = Validator { errors: Vec::new() };
        sub.validate(s, data, path);
        sub.errors
    }

    /// `schemaPropsValidator`. Where kube-openapi keeps the failures of the branch with the
    /// highest match count, this keeps the first failing branch's.
    fn schema_props(&mut self, s: &Value, data: &Value, path: &str) {
        let quoted = go_quote(path);
        if let Some(any_of) = s
            .get("anyOf")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            let results: Vec<Vec<OpenApiError>> =
                any_of.iter().map(|b| self.branch(b, data, path)).collect();
            if !results.iter().any(Vec::is_empty) {
                self.add(OpenApiError::Composite(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                )));
                if let Some(first) = results.into_iter().next() {
                    self.errors.extend(first);
                }
            }
        }
        if let Some(one_of) = s
            .get("oneOf")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            let results: Vec<Vec<OpenApiError>> =
                one_of.iter().map(|b| self.branch(b, data, path)).collect();
            let validated = results.iter().filter(|r| r.is_empty()).count();
            if validated != 1 {
                let additional = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                self.add(OpenApiError::Composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {additional}"
                )));
                if validated == 0
                    && let Some(first) = results.into_iter().next()
                {
                    self.errors.extend(first);
                }
            }
        }
        if let Some(all_of) = s
            .get("allOf")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            let mut validated = 0;
            for b in all_of {
                let result = self.branch(b, data, path);
                if result.is_empty() {
                    validated += 1;
                }
                self.errors.extend(result);
            }
            if validated != all_of.len() {
                let additional = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                self.add(OpenApiError::Composite(format!(
                    "{quoted} must validate all the schemas (allOf){additional}"
                )));
            }
        }
        if let Some(not) = s.get("not").filter(|n| n.is_object())
            && self.branch(not, data, path).is_empty()
        {
            self.add(OpenApiError::Composite(format!(
                "{quoted} must not validate the schema (not)"
            )));
        }
    }

    /// `stringValidator`: the first failing of maxLength, minLength, pattern.
    fn string_check(&mut self, s: &Value, text: &str, path: &str) {
        let len = text.chars().count() as i64;
        let bad = || Some(GoValue::Str(text.to_string()));
        if let Some(max) = s.get("maxLength").and_then(as_i64)
            && len > max
        {
            let mut e = verr(
                Code::TooLong,
                path,
                bad(),
                format!("{path} in {IN} should be at most {max} chars long"),
            );
            if let OpenApiError::Validation { valid, .. } = &mut e {
                *valid = Some(max);
            }
            self.add(e);
            return;
        }
        if let Some(min) = s.get("minLength").and_then(as_i64)
            && len < min
        {
            self.add(verr(
                Code::Other,
                path,
                bad(),
                format!("{path} in {IN} should be at least {min} chars long"),
            ));
            return;
        }
        if let Some(pattern) = s
            .get("pattern")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            match regex::Regex::new(pattern) {
                Ok(re) if re.is_match(text) => {}
                Ok(_) => {
                    self.add(verr(
                        Code::Other,
                        path,
                        bad(),
                        format!("{path} in {IN} should match '{pattern}'"),
                    ));
                }
                Err(err) => {
                    self.add(verr(
                        Code::Other,
                        path,
                        bad(),
                        format!(
                            "{path} in {IN} should match '{pattern}, but pattern is invalid: {err}'"
                        ),
                    ));
                }
            }
        }
    }

    /// `numberValidator`: multipleOf, minimum, maximum (native int64 or float64 comparison).
    fn number_check(&mut self, s: &Value, data: &Value, path: &str) {
        let int = data.as_i64();
        let float = data.as_f64().unwrap_or(0.0);
        let value = GoValue::from_json(data);
        if let Some(factor) = s.get("multipleOf").and_then(Value::as_f64) {
            match int {
                Some(i) if factor as i64 != 0 => {
                    let f = factor as i64;
                    if f < 0 {
                        self.add(verr(
                            Code::Other,
                            path,
                            Some(GoValue::Int(f)),
                            format!("factor MultipleOf declared for {path} must be positive: {f}"),
                        ));
                    } else if (i / f) * f != i {
                        self.add(verr(
                            Code::Other,
                            path,
                            Some(value.clone()),
                            format!("{path} in {IN} should be a multiple of {f}"),
                        ));
                    }
                }
                _ => {
                    if factor < 0.0 {
                        self.add(verr(
                            Code::Other,
                            path,
                            Some(GoValue::Float(factor)),
                            format!(
                                "factor MultipleOf declared for {path} must be positive: {}",
                                go_float(factor)
                            ),
                        ));
                    } else {
                        let mult = if factor < 1.0 {
                            1.0 / factor * float
                        } else {
                            float / factor
                        };
                        if !is_json_integer(mult) {
                            self.add(verr(
                                Code::Other,
                                path,
                                Some(value.clone()),
                                format!(
                                    "{path} in {IN} should be a multiple of {}",
                                    go_float(factor)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
            let exclusive = flag(s, "exclusiveMinimum");
            let word = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let (fails, shown) = match int {
                Some(i) => {
                    let m = min as i64;
                    (
                        (!exclusive && i < m) || (exclusive && i <= m),
                        m.to_string(),
                    )
                }
                None => (
                    (!exclusive && float < min) || (exclusive && float <= min),
                    go_float(min),
                ),
            };
            if fails {
                self.add(verr(
                    Code::Other,
                    path,
                    Some(value.clone()),
                    format!("{path} in {IN} should be {word} {shown}"),
                ));
            }
        }
        if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
            let exclusive = flag(s, "exclusiveMaximum");
            let word = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let (fails, shown) = match int {
                Some(i) => {
                    let m = max as i64;
                    (
                        (!exclusive && i > m) || (exclusive && i >= m),
                        m.to_string(),
                    )
                }
                None => (
                    (!exclusive && float > max) || (exclusive && float >= max),
                    go_float(max),
                ),
            };
            if fails {
                self.add(verr(
                    Code::Other,
                    path,
                    Some(value),
                    format!("{path} in {IN} should be {word} {shown}"),
                ));
            }
        }
    }

    /// `schemaSliceValidator`: items, minItems, maxItems, uniqueItems.
    fn slice_check(&mut self, s: &Value, list: &[Value], path: &str) {
        if let Some(item_schema) = items(s) {
            for (i, item) in list.iter().enumerate() {
                self.validate(item_schema, item, &format!("{path}[{i}]"));
            }
        }
        let size = list.len() as i64;
        if let Some(min) = s.get("minItems").and_then(as_i64)
            && size < min
        {
            self.add(verr(
                Code::Other,
                path,
                Some(GoValue::Int(size)),
                format!("{path} in {IN} should have at least {min} items"),
            ));
        }
        if let Some(max) = s.get("maxItems").and_then(as_i64)
            && size > max
        {
            let mut e = verr(
                Code::MaxItems,
                path,
                Some(GoValue::Int(size)),
                format!("{path} in {IN} should have at most {max} items"),
            );
            if let OpenApiError::Validation { valid, .. } = &mut e {
                *valid = Some(max);
            }
            self.add(e);
        }
        if flag(s, "uniqueItems") {
            let duplicate = list
                .iter()
                .enumerate()
                .any(|(i, a)| list[..i].iter().any(|b| a == b));
            if duplicate {
                self.add(verr(
                    Code::Other,
                    path,
                    None,
                    format!("{path} in {IN} shouldn't contain duplicates"),
                ));
            }
        }
    }

    /// `basicCommonValidator`: enum (null never matches).
    fn enum_check(&mut self, s: &Value, data: &Value, path: &str) {
        let Some(values) = s
            .get("enum")
            .and_then(Value::as_array)
            .filter(|e| !e.is_empty())
        else {
            return;
        };
        if values.iter().any(|e| enum_matches(data, e)) {
            return;
        }
        let shown: Vec<String> = values.iter().map(go_print_v).collect();
        self.add(OpenApiError::Validation {
            code: Code::Enum,
            name: path.to_string(),
            value: Some(GoValue::from_json(data)),
            valid: None,
            values: values.clone(),
            message: format!("{path} in {IN} should be one of [{}]", shown.join(" ")),
        });
    }

    /// `objectValidator`.
    fn object_check(&mut self, s: &Value, map: &serde_json::Map<String, Value>, path: &str) {
        let num_keys = map.len() as i64;
        if let Some(min) = s.get("minProperties").and_then(as_i64)
            && num_keys < min
        {
            self.add(verr(
                Code::Other,
                path,
                Some(GoValue::Int(num_keys)),
                format!("{path} in {IN} should have at least {min} properties"),
            ));
            return;
        }
        if let Some(max) = s.get("maxProperties").and_then(as_i64)
            && num_keys > max
        {
            self.add(OpenApiError::Validation {
                code: Code::TooManyProperties,
                name: path.to_string(),
                value: Some(GoValue::Int(num_keys)),
                valid: Some(max),
                values: Vec::new(),
                message: format!("{path} in {IN} should have at most {max} properties"),
            });
            return;
        }
        let props = properties(s);
        match s.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                for k in map.keys() {
                    if !props.is_some_and(|p| p.contains_key(k)) {
                        self.add(verr(
                            Code::Other,
                            path,
                            Some(GoValue::Str(k.clone())),
                            format!("{path}.{k} in {IN} is a forbidden property"),
                        ));
                    }
                }
            }
            Some(add @ Value::Object(_)) => {
                for (k, v) in map {
                    if !props.is_some_and(|p| p.contains_key(k)) {
                        self.validate(add, v, &format!("{path}.{k}"));
                    }
                }
            }
            _ => {}
        }
        if let Some(props) = props {
            for (name, prop) in props {
                if let Some(v) = map.get(name) {
                    let r_name = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}.{name}")
                    };
                    self.validate(prop, v, &r_name);
                }
            }
        }
        if let Some(required) = s.get("required").and_then(Value::as_array) {
            for k in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(k) {
                    self.add(verr(
                        Code::Required,
                        &format!("{path}.{k}"),
                        None,
                        format!("{path}.{k} in {IN} is required"),
                    ));
                }
            }
        }
    }
}

/// Go's `reflect.DeepEqual` after `Convert` to the enum value's type, for unstructured JSON.
fn enum_matches(data: &Value, e: &Value) -> bool {
    if data.is_null() {
        return false;
    }
    if data == e {
        return true;
    }
    match (data, e) {
        (Value::Number(d), Value::Number(n)) => match n.as_i64() {
            Some(ei) => match d.as_i64() {
                Some(di) => di == ei,
                None => d.as_f64().is_some_and(|f| f.is_finite() && f as i64 == ei),
            },
            None => d.as_f64() == n.as_f64(),
        },
        _ => false,
    }
}

/// Go's `%v` of an enum value inside `[%v]`.
fn go_print_v(v: &Value) -> String {
    match GoValue::from_json(v) {
        GoValue::Nil => "<nil>".into(),
        GoValue::Str(s) => s,
        GoValue::Int(i) => i.to_string(),
        GoValue::Float(f) => go_float(f),
        GoValue::Bool(b) => b.to_string(),
        GoValue::Json(v) => v.to_string(),
    }
}

/// The string formats kube-openapi's `strfmt.Default` registry checks. Formats without a
/// check here are accepted.
fn format_ok(format: &str, text: &str) -> bool {
    use std::sync::LazyLock;
    static DATE_TIME: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
        )
        .expect("regex")
    });
    static DATE: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"^\d{4}-\d{2}-\d{2}$").expect("regex"));
    static UUID: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
            .expect("regex")
    });
    static HOSTNAME: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^([a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*\.?$")
            .expect("regex")
    });
    static MAC: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$").expect("regex")
    });
    static BYTE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
            .expect("regex")
    });
    match format.replace('-', "").as_str() {
        "datetime" => DATE_TIME.is_match(text),
        "date" => DATE.is_match(text),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => UUID.is_match(text),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => text.split_once('/').is_some_and(|(ip, bits)| {
            let bits: Option<u8> = bits.parse().ok();
            match ip.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(_)) => bits.is_some_and(|b| b <= 32),
                Ok(std::net::IpAddr::V6(_)) => bits.is_some_and(|b| b <= 128),
                Err(_) => false,
            }
        }),
        "hostname" => text.len() <= 255 && HOSTNAME.is_match(text),
        "mac" => MAC.is_match(text),
        "byte" => BYTE.is_match(text),
        _ => true,
    }
}

/// `kubeOpenAPIResultToFieldErrors(nil, result)`.
fn to_field_error(e: OpenApiError) -> FieldError {
    match e {
        OpenApiError::Composite(message) => {
            FieldError::invalid("", GoValue::Str(String::new()), message)
        }
        OpenApiError::Validation {
            code,
            name,
            value,
            valid,
            values,
            message,
        } => {
            let path = if !name.is_empty() && name != "." {
                name.strip_prefix('.').unwrap_or(&name).to_string()
            } else {
                String::new()
            };
            let value_or_empty = value.clone().unwrap_or(GoValue::Str(String::new()));
            match code {
                Code::Required => FieldError::required(&path, ""),
                Code::Enum => {
                    let shown: Vec<String> = values
                        .iter()
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    FieldError::not_supported(&path, value.unwrap_or(GoValue::Nil), &shown)
                }
                Code::TooLong => FieldError::too_long(&path, valid.unwrap_or(-1)),
                Code::MaxItems | Code::TooManyProperties => {
                    let actual = match value {
                        Some(GoValue::Int(i)) => i,
                        _ => -1,
                    };
                    FieldError::too_many(&path, actual, valid.unwrap_or(-1))
                }
                Code::InvalidType => {
                    FieldError::new(ErrorType::TypeInvalid, &path, Some(value_or_empty), message)
                }
                Code::Other => FieldError::invalid(&path, value_or_empty, message),
            }
        }
    }
}

/// Validates `data` (the whole resource) against `schema` as `ValidateCustomResource`.
pub(crate) fn validate(schema: &Value, data: &Value) -> Vec<FieldError> {
    let mut v = Validator { errors: Vec::new() };
    v.validate(schema, data, "");
    v.errors.into_iter().map(to_field_error).collect()
}
