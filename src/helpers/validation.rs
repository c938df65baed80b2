//! Syntax checks of Kubernetes names and values that plugin args share: qualified names
//! (label keys, resource names, topology keys) and label values, with upstream's
//! `apimachinery/pkg/util/validation` wording so that args errors read like the API
//! server's. The schema forms (`pattern`, `maxLength`) sit beside the local checks.

/// The schema `pattern` of a qualified name (upstream `IsQualifiedName`, behind
/// `ValidateLabelName`, as [`qualified_name_errors`] checks locally): an optional
/// DNS-1123 subdomain prefix and `/`, then a name of at most 63 alphanumerics, `-`, `_`
/// and `.`, starting and ending with an alphanumeric.
pub const QUALIFIED_NAME_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$";

/// The longest qualified name: a 253-character prefix, `/` and a 63-character name.
pub const QUALIFIED_NAME_MAX_LENGTH: u32 = 253 + 1 + 63;

/// What is wrong with `value` as a Kubernetes qualified name (label key, resource name):
/// an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63 alphanumerics,
/// `-`, `_` or `.` that starts and ends alphanumeric (upstream `IsQualifiedName`). Empty
/// when valid. Plugins validating args turn each message into a `FieldError`.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    const NAME_MAX: usize = 63;
    const SUBDOMAIN_MAX: usize = 253;
    let mut errors = Vec::new();
    let name = match value.split('/').collect::<Vec<_>>()[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > SUBDOMAIN_MAX {
                    errors.push(format!(
                        "prefix part must be no more than {SUBDOMAIN_MAX} characters"
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    errors.push(
                        "prefix part must be a lowercase RFC 1123 subdomain: lower case alphanumerics, \
                         '-' or '.', starting and ending with an alphanumeric (e.g. 'example.com')"
                            .to_string(),
                    );
                }
            }
            name
        }
        _ => {
            errors.push(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', \
                 with an optional DNS subdomain prefix and a single '/' (e.g. 'example.com/MyName')"
                    .to_string(),
            );
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > NAME_MAX {
        errors.push(format!(
            "name part must be no more than {NAME_MAX} characters"
        ));
    }
    let inner_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends_ok = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !(inner_ok && ends_ok) {
        errors.push(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start \
             and end with an alphanumeric character (e.g. 'MyName', 'my.name', '123-abc')"
                .to_string(),
        );
    }
    errors
}

/// RFC 1123 subdomain syntax: dot-separated labels of lowercase alphanumerics and `-`,
/// each starting and ending alphanumeric.
fn is_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(|label| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    })
}

/// The longest label value (upstream `LabelValueMaxLength`).
const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// What is wrong with `value` as a label value: at most 63 alphanumerics, `-`, `_` or `.`,
/// starting and ending alphanumeric, or empty (upstream `IsValidLabelValue`). Empty when
/// valid.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(format!(
            "must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
        ));
    }
    let chars_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends_ok = value.is_empty()
        || (value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if !(chars_ok && ends_ok) {
        errors.push(
            "a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', \
             and must start and end with an alphanumeric character (e.g. 'MyValue', 'my_value', '12345')"
                .to_string(),
        );
    }
    errors
}
