//! Shared scoring math.
