//! Resource names and quantities: requests, limits, overcommit rules.

use super::*;

/// apimachinery's grammar for quantities, shown when one does not parse.
pub(super) const QUANTITY_REGEX_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
pub(super) const NEGATIVE: &str = "must be greater than or equal to 0";
pub(super) const NOT_POSITIVE: &str = "must be greater than zero";

/// The quantity in thousandths, or the error a decode of it gives.
pub(super) fn milli(resource: &str, quantity: &Quantity, path: &str) -> Result<i64, FieldError> {
    parse_milli_value(resource, quantity)
        .map_err(|_| FieldError::invalid(path, &string(&quantity.0), QUANTITY_REGEX_ERROR))
}

/// Resources counted in whole units: `pods` and extended resources (`IsIntegerResourceName`).
pub(super) fn is_integer_resource(name: &str) -> bool {
    name == "pods" || is_extended_resource_name(name)
}

/// `ValidateResourceQuantityValue`: parses, is not negative, whole for integer resources.
pub(super) fn quantity_value(resource: &str, quantity: &Quantity, path: &str) -> Vec<FieldError> {
    match milli(resource, quantity, path) {
        Err(error) => vec![error],
        Ok(value) if value < 0 => vec![FieldError::invalid(path, &string(&quantity.0), NEGATIVE)],
        Ok(value) if is_integer_resource(resource) && value % 1000 != 0 => {
            vec![FieldError::invalid(
                path,
                &string(&quantity.0),
                "must be an integer",
            )]
        }
        Ok(_) => Vec::new(),
    }
}

/// `ValidatePositiveQuantityValue`.
pub(super) fn positive_quantity(
    resource: &str,
    quantity: &Quantity,
    path: &str,
) -> Vec<FieldError> {
    match milli(resource, quantity, path) {
        Err(error) => vec![error],
        Ok(value) if value <= 0 => {
            vec![FieldError::invalid(
                path,
                &string(&quantity.0),
                NOT_POSITIVE,
            )]
        }
        Ok(_) => Vec::new(),
    }
}

pub(super) fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// `validateContainerResourceName`.
pub(super) fn container_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errors = invalid_each(path, name, qualified_name(name));
    if !errors.is_empty() {
        return errors;
    }
    if !name.contains('/') {
        if !is_standard_container_resource(name) {
            errors.push(FieldError::invalid(
                path,
                &string(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !name.contains("kubernetes.io/") && !is_extended_resource_name(name) {
        errors.push(FieldError::invalid(
            path,
            &string(name),
            "doesn't follow extended resource name standard",
        ));
    }
    errors
}

/// Native resources may be overcommitted (request below limit); hugepages and extended
/// resources may not (`IsOvercommitAllowed`).
pub(super) fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || name.contains("kubernetes.io/")) && !name.starts_with("hugepages-")
}

/// `ValidateResourceRequirements` of a container (or of the pod, `spec.resources`).
pub fn resource_requirements(
    resources: Option<&ResourceRequirements>,
    path: &str,
) -> Vec<FieldError> {
    let Some(resources) = resources else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    let empty = BTreeMap::new();
    let limits = resources.limits.as_ref().unwrap_or(&empty);
    for (name, quantity) in limits {
        let at = key(&limits_path, name);
        errors.extend(container_resource_name(name, &at));
        errors.extend(quantity_value(name, quantity, &at));
    }
    for (name, quantity) in resources.requests.iter().flatten() {
        let at = key(&requests_path, name);
        errors.extend(container_resource_name(name, &at));
        let quantity_errors = quantity_value(name, quantity, &at);
        let parsed = quantity_errors.is_empty();
        errors.extend(quantity_errors);
        match limits.get(name) {
            Some(limit) if parsed => {
                let (Ok(request), Ok(limit_value)) =
                    (milli(name, quantity, &at), milli(name, limit, &at))
                else {
                    continue;
                };
                if request != limit_value && !overcommit_allowed(name) {
                    errors.push(FieldError::invalid(
                        &requests_path,
                        &string(&quantity.0),
                        format!("must be equal to {name} limit of {}", limit.0),
                    ));
                } else if request > limit_value {
                    errors.push(FieldError::invalid(
                        &requests_path,
                        &string(&quantity.0),
                        format!("must be less than or equal to {name} limit of {}", limit.0),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errors.push(FieldError::required(
                &limits_path,
                "Limit must be set for non overcommitable resources",
            )),
            _ => {}
        }
    }
    errors
}

/// A node's capacity or allocatable: quantities valid and not negative, keyed as
/// `status.capacity.cpu` (upstream checks only the quantities here: resource names of
/// nodes come from device plugins and CSI drivers, and may be long).
pub(super) fn resource_list(
    list: Option<&BTreeMap<String, Quantity>>,
    path: &str,
) -> Vec<FieldError> {
    list.into_iter()
        .flatten()
        .flat_map(|(name, quantity)| quantity_value(name, quantity, &child(path, name)))
        .collect()
}
