//! CRD admission: what the real API server does to a custom resource on create and update,
//! from the version's `openAPIV3Schema`: pruning of unknown fields, defaulting, structural
//! schema validation and CEL `x-kubernetes-validations`.
//!
//! The steps and their wording follow the real server (apiextensions-apiserver and
//! kube-openapi, as of Kubernetes 1.33):
//!
//! 1. decoding: `PruneWithOptions` (unknown fields dropped silently; [`unknown_fields`] lists
//!    them for `fieldValidation=Strict|Warn`), then `PruneNonNullableNullsWithoutDefaults`;
//! 2. `defaulting.Default` (absent fields and non-nullable nulls, in properties,
//!    additionalProperties values and items);
//! 3. the strategy's validation: kube-openapi's schema validator (converted by
//!    `kubeOpenAPIResultToFieldErrors`), then `x-kubernetes-list-type` set/map uniqueness,
//!    then CEL rules, which are skipped (with the server's "some validation rules were not
//!    checked" error) when a type, required, enum, too-long or too-many error was found.
//!
//! Simplifications (see the crate README): no validation ratcheting on update
//! (`CRDValidationRatcheting`); `metadata` (also of embedded resources) is left to the
//! server core; CEL cost budgets are not enforced; where kube-openapi reports the failures of
//! the anyOf/oneOf branch with the most successful checks, this reports the first branch's;
//! string formats are checked for date-time, date, uuid, ipv4, ipv6, cidr, hostname, mac and
//! byte (the other supported formats are accepted as is); `int32`/`int64` formats are not
//! checked, as the real server strips them from CRD schemas.

mod cel;
mod field;
mod listtype;
mod openapi;
mod structural;

use serde_json::Value;

use crate::errors::Cause;
use field::{FieldError, GoValue};

/// apimachinery's `field.Path` rendering: children joined with `.`, `[i]` for list indices,
/// `[key]` for map keys.
pub(crate) mod path {
    pub fn child(parent: &str, name: &str) -> String {
        if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}.{name}")
        }
    }

    pub fn index(parent: &str, i: usize) -> String {
        format!("{parent}[{i}]")
    }

    pub fn key(parent: &str, key: &str) -> String {
        format!("{parent}[{key}]")
    }
}

/// The message the real server adds when CEL rules were skipped (customresource strategy's
/// `hasBlockingErr`).
const CEL_SKIPPED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// Prunes, defaults and validates `object` (a whole custom resource, `apiVersion`, `kind`,
/// `metadata` included) against `schema` (the version's `openAPIV3Schema`). Returns the
/// object as it would be stored, or every validation failure as a [`Cause`] worded as the
/// real server words it. `old` is the stored object on update (for transition rules).
pub fn admit(schema: &Value, object: Value, old: Option<&Value>) -> Result<Value, Vec<Cause>> {
    let mut obj = object;
    structural::prune(&mut obj, schema);
    structural::prune_nulls(&mut obj, Some(schema));
    structural::default(&mut obj, Some(schema));

    let mut errs: Vec<FieldError> = openapi::validate(schema, &obj);
    // On update, list-type uniqueness is checked only if the old object satisfied it.
    if old.is_none_or(|o| listtype::validate(schema, o).is_empty()) {
        errs.extend(listtype::validate(schema, &obj));
    }
    if cel::has_rules(schema) {
        if errs.iter().any(FieldError::is_blocking_for_cel) {
            errs.push(FieldError::invalid("", GoValue::Nil, CEL_SKIPPED));
        } else {
            errs.extend(cel::validate(schema, &obj, old));
        }
    }
    if errs.is_empty() {
        Ok(obj)
    } else {
        Err(errs.into_iter().map(FieldError::into_cause).collect())
    }
}

/// The fields pruning drops from `object`, sorted, as the real server reports them for
/// `fieldValidation=Strict` (`strict decoding error: unknown field "spec.foo"`) and `Warn`
/// (`unknown field "spec.foo"` warnings): `.` between fields, `[i]` for list items, `.key` for
/// map keys. `apiVersion`, `kind` and `metadata` at the root are never reported.
pub fn unknown_fields(schema: &Value, object: &Value) -> Vec<String> {
    let mut copy = object.clone();
    structural::prune(&mut copy, schema)
}
