//! `berth simulate`: the scheduling core run against a cluster read from YAML, with an
//! in-memory binder. Everything it shows is what the live scheduler would do.

pub mod budgets;
pub mod claims;
pub mod clock;
pub mod controllers;
pub mod explain;
pub mod input;
mod listers;
pub mod live;
mod outcomes;
pub mod pod_groups;
pub mod preemption;
pub mod render;
pub mod report;
pub mod run;
pub mod storage;
pub mod validation;
