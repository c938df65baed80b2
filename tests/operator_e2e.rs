//! End-to-end tests of `berth run` (issue 5, "Done when"): the real `berth` binary
//! against the in-process test API server (`crates/test-apiserver`) with berth's CRDs.
//!
//! One module per topic under `tests/operator_e2e/`; [`harness`] starts the server and
//! the binary. Tests run one at a time (the harness serialises them), each wait is
//! bounded, and a failing test prints berth's log and the server's request log.
//!
//! `BERTH_E2E_LOG` sets berth's `RUST_LOG` (default `warn,berth=debug`);
//! `BERTH_E2E_ECHO=1` echoes berth's log as it runs.

#[path = "operator_e2e/harness.rs"]
mod harness;
mod support;
use support::prometheus;

#[path = "operator_e2e/backoff.rs"]
mod backoff;
#[path = "operator_e2e/devices.rs"]
mod devices;
#[path = "operator_e2e/endpoints.rs"]
mod endpoints;
#[path = "operator_e2e/faults.rs"]
mod faults;
#[path = "operator_e2e/gang.rs"]
mod gang;
#[path = "operator_e2e/leader.rs"]
mod leader;
#[path = "operator_e2e/legacy_gangs.rs"]
mod legacy_gangs;
#[path = "operator_e2e/lifecycle.rs"]
mod lifecycle;
#[path = "operator_e2e/metrics.rs"]
mod metrics;
#[path = "operator_e2e/preemption.rs"]
mod preemption;
#[path = "operator_e2e/preemption_calls.rs"]
mod preemption_calls;
#[path = "operator_e2e/real_faults.rs"]
mod real_faults;
#[path = "operator_e2e/scheduler_plugins_gangs.rs"]
mod scheduler_plugins_gangs;
#[path = "operator_e2e/scheduling.rs"]
mod scheduling;
#[path = "operator_e2e/secure_metrics.rs"]
mod secure_metrics;
#[path = "operator_e2e/unschedulable.rs"]
mod unschedulable;
#[path = "operator_e2e/unsupported.rs"]
mod unsupported;
#[path = "operator_e2e/validation.rs"]
mod validation;
#[path = "operator_e2e/volumes.rs"]
mod volumes;
#[path = "operator_e2e/workload_gangs.rs"]
mod workload_gangs;
#[path = "operator_e2e/workloads.rs"]
mod workloads;
