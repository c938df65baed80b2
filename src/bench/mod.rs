//! `berth bench`: upstream's scheduler_perf workloads (kubernetes/kubernetes
//! `test/integration/scheduler_perf`) run in memory against the scheduling core.
//!
//! It mirrors scheduler_perf's `createNodes` / `createPods` / `createPods` with
//! `collectMetrics` ([`workload`]): the init pods are scheduled first and not timed, then
//! the measured pods are added and timed until the last is bound ([`run`]). The report
//! holds what scheduler_perf reports — SchedulingThroughput (average and percentiles of
//! per-second samples) and attempt-duration percentiles — plus the peak RSS and a check
//! of the placements ([`check`], [`report`]).
//!
//! The DRA workloads replace the init pods with claims allocated before the clock
//! starts ([`dra`]), and three of them run in a steady state: pods are deleted as soon as
//! they are bound and replaced, for a fixed window ([`run`]).
//!
//! Unlike scheduler_perf there is no API server: a pod is bound by the in-memory binder of
//! `berth simulate`, and the driver loop is simulate's own, so the numbers are those of
//! the core plus that driver.

pub mod cases;
pub mod check;
pub mod dra;
pub mod report;
pub mod run;
pub mod workload;
