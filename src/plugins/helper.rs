//! Scoring math shared by plugins, written once: default score normalization and
//! piecewise-linear shapes (upstream `plugins/helper`).

use crate::framework::{MAX_NODE_SCORE, Status};

/// Upstream `DefaultNormalizeScore`: scales scores so the highest becomes `max_priority`
/// (integer division, as upstream); with `reverse`, the result is `max_priority - score`.
/// When every score is 0, every node gets 0 (or `max_priority` when reversed).
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [i64]) -> Status {
    let max_count = scores.iter().copied().max().unwrap_or(0);
    if max_count == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max_priority);
        }
        return Status::success();
    }
    for score in scores.iter_mut() {
        let scaled = max_priority * *score / max_count;
        *score = if reverse {
            max_priority - scaled
        } else {
            scaled
        };
    }
    Status::success()
}

/// A point of a piecewise-linear function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionShapePoint {
    /// x, e.g. utilization 0..=100.
    pub utilization: i64,
    /// y, e.g. score 0..=100.
    pub score: i64,
}

/// Upstream `BuildBrokenLinearFunction`: evaluates the piecewise-linear function through
/// `shape` (sorted by utilization) at `p`; constant before the first and after the last
/// point. Integer arithmetic, as upstream.
pub fn broken_linear(shape: &[FunctionShapePoint], p: i64) -> i64 {
    for (i, point) in shape.iter().enumerate() {
        if p <= point.utilization {
            if i == 0 {
                return point.score;
            }
            let prev = shape[i - 1];
            return prev.score
                + (point.score - prev.score) * (p - prev.utilization)
                    / (point.utilization - prev.utilization);
        }
    }
    shape.last().map(|p| p.score).unwrap_or(0)
}

/// The highest score a plugin may give, for plugins that compute on another scale.
pub const MAX_SCORE: i64 = MAX_NODE_SCORE;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_normalize_score_matches_upstream_table() {
        // The cases of upstream `TestDefaultNormalizeScore`
        // (pkg/scheduler/framework/plugins/helper/normalize_score_test.go), in order.
        let cases: &[(&str, bool, &[i64], &[i64])] = &[
            ("forward", false, &[1, 2, 3, 4], &[25, 50, 75, 100]),
            ("reverse", true, &[1, 2, 3, 4], &[75, 50, 25, 0]),
            (
                "forward uneven",
                false,
                &[1000, 10, 20, 30],
                &[100, 1, 2, 3],
            ),
            (
                "reverse uneven",
                true,
                &[1000, 10, 20, 30],
                &[0, 99, 98, 97],
            ),
            ("forward equal", false, &[1, 1, 1, 1], &[100, 100, 100, 100]),
            (
                "forward one large",
                false,
                &[1000, 1, 1, 1],
                &[100, 0, 0, 0],
            ),
            ("reverse with zero", true, &[0, 1, 1, 1], &[100, 0, 0, 0]),
            (
                "all zero (no upstream case; the max == 0 branch)",
                false,
                &[0, 0],
                &[0, 0],
            ),
        ];
        for (name, reverse, input, want) in cases {
            let mut scores = input.to_vec();
            default_normalize_score(MAX_NODE_SCORE, *reverse, &mut scores);
            assert_eq!(&scores, want, "case {name}");
        }
    }

    #[test]
    fn broken_linear_interpolates_and_clamps() {
        let shape = [
            FunctionShapePoint {
                utilization: 10,
                score: 1,
            },
            FunctionShapePoint {
                utilization: 90,
                score: 9,
            },
        ];
        // Worked by hand from upstream's definition: y = y0 + (y1-y0)(p-x0)/(x1-x0), integer division.
        for (p, want) in [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (110, 9),
        ] {
            assert_eq!(broken_linear(&shape, p), want, "p = {p}");
        }
    }
}
