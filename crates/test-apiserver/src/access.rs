//! Delegated authentication and authorization, as a component like kube-scheduler (and
//! berth's `/metrics`) uses them: a `TokenReview` asks who a bearer token belongs to, a
//! `SubjectAccessReview` asks whether a user may do something. Both are answered on
//! create from the server's [`Access`] — a token map and a rule list — and never stored.
//!
//! Rules match the way the RBAC authorizer matches a PolicyRule (verbs, API groups,
//! resources with `*/subresource`, resource names, non-resource URLs with a trailing `*`),
//! with the subjects and the namespaces a binding would give written on the rule itself.
//! The server itself authenticates and authorizes nothing: every request it serves is
//! allowed, whatever these reviews answer.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};

use crate::errors::{ApiError, Cause};
use crate::resources::ResourceDef;

/// The group the real authenticator adds to every authenticated user; TokenReview answers
/// add it too, so a rule for it applies to every user a configured token names.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// What TokenReview and SubjectAccessReview answer from: which bearer tokens are valid for
/// whom, and what users and groups may do. The default knows no token and allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Access {
    /// Bearer token -> the user it authenticates as.
    #[serde(default)]
    pub tokens: BTreeMap<String, UserInfo>,
    /// A SubjectAccessReview is allowed when one rule allows it, denied otherwise.
    #[serde(default)]
    pub rules: Vec<AccessRule>,
}

/// The user a token authenticates as (`authentication.k8s.io/v1` UserInfo, without extra).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserInfo {
    pub username: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Without `system:authenticated`: TokenReview answers add it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// One RBAC-like grant: an RBAC PolicyRule (`verbs` and either `nonResourceURLs` or
/// `apiGroups` + `resources`, optionally `resourceNames`) together with what its binding
/// would say: the subjects (`users`, `groups`) and, like RoleBindings, the `namespaces` it
/// applies in (empty: every namespace and cluster-scoped resources, like a
/// ClusterRoleBinding).
///
/// `*` is a wildcard in `verbs`, `apiGroups` and `resources` (and `*/status` matches any
/// resource's status), as in RBAC. A non-resource URL matches exactly, or as a prefix when
/// it ends in `*` (`/metrics*`, or `*` for every path). Subjects never have wildcards.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessRule {
    /// Optional; named in the review's reason (as the real one names its binding).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// User names (`alice`, `system:serviceaccount:ns:sa`) the rule applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// Group names (`system:authenticated` for every authenticated user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// `get`, `list`, ... for resources; lower-case HTTP methods (`get`, `post`) for
    /// non-resource URLs.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Paths such as `/metrics`, `/healthz*`; excludes the resource fields.
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
    /// `""` is the core group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Plurals, `pods/binding` for a subresource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Empty: any name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Empty: everywhere; otherwise only requests in these namespaces (never
    /// cluster-scoped ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
}

impl Access {
    /// Reads an `Access` from JSON or YAML text and checks it ([`Access::validate`]).
    pub fn parse(text: &str) -> Result<Access, String> {
        // JSON first when it looks like JSON: its errors are clearer than the YAML
        // parser's for the same text.
        let access: Access = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| e.to_string())?
        } else {
            serde_saphyr::from_str(text).map_err(|e| e.to_string())?
        };
        access.validate()?;
        Ok(access)
    }

    /// Rejects what would silently never match: an empty token or user name, and rules
    /// that RBAC's PolicyRule validation rejects or that name no subject.
    pub fn validate(&self) -> Result<(), String> {
        for (token, user) in &self.tokens {
            if token.is_empty() {
                return Err("tokens: a token may not be empty".into());
            }
            if user.username.is_empty() {
                return Err(format!("tokens[{token:?}].username: may not be empty"));
            }
        }
        for (i, rule) in self.rules.iter().enumerate() {
            rule.validate().map_err(|e| format!("rules[{i}]: {e}"))?;
        }
        Ok(())
    }
}

impl AccessRule {
    fn validate(&self) -> Result<(), String> {
        if self.users.is_empty() && self.groups.is_empty() {
            return Err("at least one of users or groups must be specified".into());
        }
        if self.verbs.is_empty() {
            return Err("verbs must contain at least one value".into());
        }
        if !self.non_resource_urls.is_empty() {
            if !self.namespaces.is_empty() {
                return Err("namespaced rules cannot apply to non-resource URLs".into());
            }
            if !(self.api_groups.is_empty()
                && self.resources.is_empty()
                && self.resource_names.is_empty())
            {
                return Err(
                    "rules cannot apply to both regular resources and non-resource URLs".into(),
                );
            }
            return Ok(());
        }
        if self.api_groups.is_empty() {
            return Err(
                "resource rules must supply at least one api group (\"\" is the core group)".into(),
            );
        }
        if self.resources.is_empty() {
            return Err("resource rules must supply at least one resource".into());
        }
        Ok(())
    }

    /// The subject the rule applies to for this review (`User "alice"` or
    /// `Group "g"`), if any: its users first, then its groups.
    fn subject(&self, user: &str, groups: &[String]) -> Option<String> {
        if !user.is_empty() && self.users.iter().any(|u| u == user) {
            return Some(format!("User {user:?}"));
        }
        self.groups
            .iter()
            .find(|g| groups.contains(g))
            .map(|g| format!("Group {g:?}"))
    }

    /// Whether the rule allows the request, ignoring subjects (RBAC's `RuleAllows` plus
    /// the binding's namespace).
    fn allows(&self, request: &Attributes) -> bool {
        let verb = |verb: &str| self.verbs.iter().any(|v| v == "*" || v == verb);
        match request {
            Attributes::NonResource { path, verb: v } => {
                verb(v)
                    && self
                        .non_resource_urls
                        .iter()
                        .any(|url| url_matches(url, path))
            }
            Attributes::Resource(r) => {
                let namespace = self.namespaces.is_empty()
                    || (!r.namespace.is_empty() && self.namespaces.contains(&r.namespace));
                let group = self.api_groups.iter().any(|g| g == "*" || *g == r.group);
                let name = self.resource_names.is_empty() || self.resource_names.contains(&r.name);
                namespace && verb(&r.verb) && group && self.resource_matches(r) && name
            }
        }
    }

    /// RBAC's `ResourceMatches`: `*`, the exact `resource[/subresource]`, or
    /// `*/subresource`.
    fn resource_matches(&self, r: &ResourceAttributes) -> bool {
        let combined = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        self.resources.iter().any(|rule| {
            rule == "*"
                || *rule == combined
                || (!r.subresource.is_empty()
                    && rule.strip_prefix("*/") == Some(r.subresource.as_str()))
        })
    }
}

/// RBAC's `NonResourceURLMatches`: exact, `*`, or a prefix when the rule ends in `*`.
fn url_matches(rule: &str, path: &str) -> bool {
    rule == "*"
        || rule == path
        || rule
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

/// The review resources: answered on create, never stored, not listable or watchable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `authentication.k8s.io/v1` `tokenreviews`.
    Token,
    /// `authorization.k8s.io/v1` `subjectaccessreviews`.
    SubjectAccess,
}

impl Review {
    pub const ALL: [Review; 2] = [Review::Token, Review::SubjectAccess];

    pub fn group(self) -> &'static str {
        match self {
            Review::Token => "authentication.k8s.io",
            Review::SubjectAccess => "authorization.k8s.io",
        }
    }

    pub fn resource(self) -> &'static str {
        match self {
            Review::Token => "tokenreviews",
            Review::SubjectAccess => "subjectaccessreviews",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Review::Token => "TokenReview",
            Review::SubjectAccess => "SubjectAccessReview",
        }
    }

    pub fn api_version(self) -> String {
        format!("{}/v1", self.group())
    }

    /// The review `def` serves, if it is one.
    pub fn of(def: &ResourceDef) -> Option<Review> {
        Review::ALL
            .into_iter()
            .find(|r| def.group == r.group() && def.resource == r.resource())
    }

    /// The answer to a create: the review as sent (apiVersion, kind, metadata, spec) with
    /// its `status` filled in from `access`.
    pub fn answer(self, access: &Access, body: Value) -> Result<Value, ApiError> {
        let object = self.check_envelope(body)?;
        let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let status = match self {
            Review::Token => token_review_status(access, &self.decode(&spec)?)?,
            Review::SubjectAccess => {
                subject_access_review_status(access, &metadata, &spec, &self.decode(&spec)?)?
            }
        };
        Ok(json!({
            "apiVersion": self.api_version(),
            "kind": self.kind(),
            "metadata": metadata,
            "spec": if spec.is_null() { json!({}) } else { spec },
            "status": status,
        }))
    }

    /// What the real server's decoder rejects before the review is looked at: not an
    /// object, another kind or apiVersion, metadata that is not an object.
    fn check_envelope(self, body: Value) -> Result<Map<String, Value>, ApiError> {
        let Value::Object(object) = body else {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        };
        let expected = self.api_version();
        match object.get("apiVersion") {
            None | Some(Value::Null) => {}
            Some(Value::String(given)) if *given == expected => {}
            Some(given) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({}) does not match the expected API version ({expected})",
                    text(given)
                )));
            }
        }
        match object.get("kind") {
            None | Some(Value::Null) => {}
            Some(Value::String(given)) if given == self.kind() => {}
            Some(given) => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({}) does not match the expected kind ({})",
                    text(given),
                    self.kind()
                )));
            }
        }
        if !matches!(object.get("metadata"), None | Some(Value::Object(_))) {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        Ok(object)
    }

    /// The spec as the typed decoder reads it (null and missing fields are empty).
    fn decode<T: DeserializeOwned + Default>(self, spec: &Value) -> Result<T, ApiError> {
        if spec.is_null() {
            return Ok(T::default());
        }
        serde_json::from_value(spec.clone()).map_err(|e| {
            ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: spec: {e}",
                kind = self.kind()
            ))
        })
    }
}

/// A JSON value in an error message: strings without quotes.
fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// JSON `null` reads as the field's empty value, as in Go.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
struct TokenReviewSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    token: String,
    #[serde(default, deserialize_with = "null_as_default")]
    audiences: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubjectAccessReviewSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    user: String,
    #[serde(default, deserialize_with = "null_as_default")]
    groups: Vec<String>,
    // uid and extra are accepted and echoed; no rule matches on them.
    #[serde(default)]
    resource_attributes: Option<ResourceAttributes>,
    #[serde(default)]
    non_resource_attributes: Option<NonResourceAttributes>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct ResourceAttributes {
    #[serde(default, deserialize_with = "null_as_default")]
    namespace: String,
    #[serde(default, deserialize_with = "null_as_default")]
    verb: String,
    #[serde(default, deserialize_with = "null_as_default")]
    group: String,
    #[serde(default, deserialize_with = "null_as_default")]
    resource: String,
    #[serde(default, deserialize_with = "null_as_default")]
    subresource: String,
    #[serde(default, deserialize_with = "null_as_default")]
    name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct NonResourceAttributes {
    #[serde(default, deserialize_with = "null_as_default")]
    path: String,
    #[serde(default, deserialize_with = "null_as_default")]
    verb: String,
}

/// What a SubjectAccessReview asks about.
enum Attributes {
    Resource(ResourceAttributes),
    NonResource { path: String, verb: String },
}

/// The real authenticator's error for a token no authenticator accepts.
const INVALID_TOKEN: &str = "invalid bearer token";

fn token_review_status(access: &Access, spec: &TokenReviewSpec) -> Result<Value, ApiError> {
    if spec.token.is_empty() {
        // The real REST handler refuses before authenticating.
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let Some(user) = access.tokens.get(&spec.token) else {
        return Ok(json!({"authenticated": false, "user": {}, "error": INVALID_TOKEN}));
    };
    let mut groups = user.groups.clone();
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_string());
    }
    let mut info = json!({"username": user.username, "groups": groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    let mut status = json!({"authenticated": true, "user": info});
    // Configured tokens are valid for any audience: the audiences asked for are the
    // audiences the token is good for.
    if !spec.audiences.is_empty() {
        status["audiences"] = json!(spec.audiences);
    }
    Ok(status)
}

/// A field error of the review, worded as apimachinery's `field.Invalid`.
fn invalid(field: &str, value: &str, message: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value}: {message}"),
        field: field.into(),
    }
}

/// Whether a metadata field holds anything (Go's semantic equality: null, "", {}, [], 0
/// and false are unset).
fn is_set(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn subject_access_review_status(
    access: &Access,
    metadata: &Value,
    raw_spec: &Value,
    spec: &SubjectAccessReviewSpec,
) -> Result<Value, ApiError> {
    // The real validation (ValidateSubjectAccessReview): 422 Invalid, not 400.
    let mut causes = Vec::new();
    let attributes = match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(_), Some(_)) => {
            let given = raw_spec["nonResourceAttributes"].to_string();
            causes.push(invalid(
                "spec",
                &given,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
            None
        }
        (None, None) => {
            causes.push(invalid(
                "spec",
                "null",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
            None
        }
        (Some(r), None) => Some(Attributes::Resource(r.clone())),
        (None, Some(n)) => Some(Attributes::NonResource {
            path: n.path.clone(),
            verb: n.verb.clone(),
        }),
    };
    if spec.user.is_empty() && spec.groups.is_empty() {
        causes.push(invalid(
            "spec.user",
            "\"\"",
            "at least one of user or group must be specified",
        ));
    }
    let metadata_set = metadata
        .as_object()
        .is_some_and(|m| m.iter().any(|(k, v)| k != "managedFields" && is_set(v)));
    if metadata_set {
        causes.push(invalid("metadata", &metadata.to_string(), "must be empty"));
    }
    let Some(attributes) = attributes.filter(|_| causes.is_empty()) else {
        return Err(ApiError::invalid(
            Review::SubjectAccess.kind(),
            Review::SubjectAccess.group(),
            "",
            causes,
        ));
    };
    let allowed = access.rules.iter().enumerate().find_map(|(i, rule)| {
        let subject = rule.subject(&spec.user, &spec.groups)?;
        rule.allows(&attributes).then(|| {
            let by = if rule.name.is_empty() {
                format!("rules[{i}]")
            } else {
                format!("AccessRule {:?} (rules[{i}])", rule.name)
            };
            format!("RBAC: allowed by {by} to {subject}")
        })
    });
    // Denied: no reason, as the RBAC authorizer gives none when no rule matches.
    Ok(match allowed {
        Some(reason) => json!({"allowed": true, "reason": reason}),
        None => json!({"allowed": false}),
    })
}

#[cfg(test)]
mod tests;
