//! The Framework runner.
pub struct Framework;
pub struct NodeScoreDetail;
pub struct ScoredNode;
