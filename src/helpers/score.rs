//! Scoring math shared by plugins, written once: default score normalization and
//! piecewise-linear shapes (upstream `framework/plugins/helper`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::framework::{FieldError, MAX_NODE_SCORE, Status};

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

/// The highest score a shape point may give (upstream `MaxCustomPriorityScore`); shape
/// scores are scaled from 0..=10 to 0..=100.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// The highest utilization (percent) a shape point may name.
pub const MAX_UTILIZATION: i64 = 100;

/// One point of a user-given scoring shape (RequestedToCapacityRatio, VolumeBinding's
/// storage capacity score).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UtilizationShapePoint {
    /// Utilization in percent, 0..=100.
    #[schemars(range(min = 0, max = 100))]
    pub utilization: i64,
    /// Score at that utilization, 0..=10 (scaled to 0..=100 when scoring).
    #[schemars(range(min = 0, max = 10))]
    pub score: i64,
}

/// Upstream `validateFunctionShape`: at least one point, utilization strictly increasing
/// within 0..=100, score within 0..=10.
pub fn validate_shape(shape: &[UtilizationShapePoint], path: &str) -> Vec<FieldError> {
    if shape.is_empty() {
        return vec![FieldError::new(
            path,
            "",
            "at least one point must be specified",
        )];
    }
    let mut errors = Vec::new();
    // Like upstream, only the first out-of-order point is reported.
    if let Some(i) = (1..shape.len()).find(|&i| shape[i - 1].utilization >= shape[i].utilization) {
        errors.push(FieldError::new(
            format!("{path}[{i}].utilization"),
            shape[i].utilization,
            format!(
                "utilization values must be strictly increasing, but point {i} does not exceed point {}",
                i - 1
            ),
        ));
    }
    for (i, point) in shape.iter().enumerate() {
        if !(0..=MAX_UTILIZATION).contains(&point.utilization) {
            errors.push(FieldError::new(
                format!("{path}[{i}].utilization"),
                point.utilization,
                format!("must be between 0 and {MAX_UTILIZATION}"),
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&point.score) {
            errors.push(FieldError::new(
                format!("{path}[{i}].score"),
                point.score,
                format!("must be between 0 and {MAX_CUSTOM_PRIORITY_SCORE}"),
            ));
        }
    }
    errors
}

/// A user-given shape with its scores scaled from 0..=10 to the scheduler's 0..=100.
pub fn scaled_shape(shape: &[UtilizationShapePoint]) -> Vec<FunctionShapePoint> {
    shape
        .iter()
        .map(|point| FunctionShapePoint {
            utilization: point.utilization,
            score: point.score * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
        })
        .collect()
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
