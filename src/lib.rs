//! # berth
//!
//! berth turns `SchedulerProfile` custom resources into running scheduler instances.
//! The code follows the path a pod takes through the scheduler:
//!
//! 1. [`api`] — the Kubernetes API of berth: `SchedulerProfile`, `PodGroup`, and the CRDs
//!    generated from them, enriched from the plugin registry.
//! 2. [`cluster`] — resources and quantities, [`cluster::PodInfo`], [`cluster::NodeInfo`],
//!    the [`cluster::Cache`] that pod and node events feed, and the cheap
//!    [`cluster::Snapshot`] a scheduling cycle reads.
//! 3. [`queue`] — the per-profile scheduling queue (activeQ, backoffQ, unschedulable pods).
//! 4. [`framework`] — extension-point traits, `Status`, `CycleState`, the `Registry`,
//!    profile resolution and the `Framework` runner that calls plugins.
//! 5. [`plugins`] — one module per plugin, plus shared helpers.
//! 6. [`scheduler`] — the scheduling cycle and the binding cycle, failure reporting.
//! 7. [`simulate`] — an adapter that runs all of the above against a cluster read from YAML.
//! 8. [`operator`] — the other adapter: watches, the scheduling loop, the binder, the
//!    profile and PodGroup controllers, leader election (`berth run`).
//! 9. [`bench`] — upstream's scheduler_perf workloads generated in memory and timed through
//!    simulate's driver (`berth bench`).
//!
//! The core (`cluster`, `queue`, `framework`, `plugins`, `scheduler`) takes k8s-openapi
//! types in and returns decisions; it performs no Kubernetes I/O. The adapters (`simulate`
//! and `operator`) provide the binder and the event sources. `docs/architecture.md` is the
//! contract these modules follow.
//!
//! Every file a user names (simulate's and convert's input, a Prometheus CA or token file)
//! is read through [`files`], which bounds its size.

pub mod api;
pub mod bench;
pub mod cli;
pub mod cluster;
pub mod convert;
pub mod files;
pub mod framework;
pub mod observability;
pub mod operator;
pub mod plugins;
pub mod queue;
pub mod scheduler;
pub mod schema;
pub mod simulate;
pub mod testing;
