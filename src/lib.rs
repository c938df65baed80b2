//! # berth
//!
//! berth turns `SchedulerProfile` custom resources into running scheduler instances, and
//! runs the same scheduler against a cluster described in YAML. The modules stack in
//! layers (docs/architecture.md, "Layers"; `tests/layering.rs` keeps them honest), and a
//! pod's way through them is the reading order.
//!
//! ## `berth run`: the operator
//!
//! 1. [`operator`] watches nodes, pods and the cluster objects plugins read, and feeds
//!    every change to the [`cluster::Cache`] of each profile's [`scheduler::Scheduler`].
//!    Its profile controller reads `SchedulerProfile`s ([`api`]), validates them as the
//!    API server would ([`schema`]), resolves their plugin sets against the plugin
//!    [`framework::Registry`] and starts one scheduler per profile.
//! 2. A pending pod enters that scheduler's [`queue`] (activeQ, backoffQ, unschedulable
//!    pods), ordered by the profile's QueueSort plugin.
//! 3. The scheduling cycle ([`scheduler`]) takes the next pod, updates the
//!    [`cluster::Snapshot`] from the cache, and runs the profile's [`plugins`] (what
//!    several of them share lives once in [`helpers`]) through the
//!    [`framework::Framework`]: PreFilter, Filter on every node (split over the worker
//!    pool), PostFilter, PreScore, Score, Reserve, Permit. A node chosen is assumed in the
//!    cache.
//! 4. The binding cycle runs PreBind, Bind and PostBind; the operator's binder writes the
//!    `Binding`, its event recorder the `Scheduled` or `FailedScheduling` event and pod
//!    condition, and [`observability`] the metrics.
//!
//! ## `berth simulate`: the same core, from YAML
//!
//! 1. [`simulate`] reads multi-document YAML, applies the API server's defaults and
//!    validation, and creates what the workload controllers would (the pods of
//!    Deployments, StatefulSets, Jobs, DaemonSets).
//! 2. The objects go into a [`cluster::Cache`] and the pods into the [`queue`] of the
//!    same [`scheduler::Scheduler`] the operator runs, with the same plugins.
//! 3. Cycles run until nothing can progress; an in-memory binder records each placement
//!    and the report says, per pod, where it went or why it could not.
//!
//! [`bench`] times upstream's scheduler_perf workloads through simulate's driver;
//! [`convert`] turns a `KubeSchedulerConfiguration` into SchedulerProfiles; [`cli`] holds
//! one file per subcommand. [`testing`] holds the pod and node builders the tests share
//! (upstream's `MakePod` and `MakeNode`); nothing outside tests and benchmarks calls it.
//!
//! The core ([`cluster`], [`framework`], [`queue`], [`plugins`], [`scheduler`]) takes
//! k8s-openapi types in and returns decisions; it performs no Kubernetes I/O. Every file
//! a user names is read through [`files`], which bounds its size; [`tls`] sets up the
//! crypto provider every TLS client uses and [`kubeconfig`] builds the Kubernetes client
//! from the user's kubeconfig, as kubectl does.

pub mod api;
pub mod bench;
pub mod cli;
pub mod cluster;
pub mod convert;
pub mod dra;
pub mod files;
pub mod framework;
pub mod helpers;
pub mod kubeconfig;
pub mod observability;
pub mod operator;
pub mod plugins;
pub mod queue;
pub mod scheduler;
pub mod schema;
pub mod simulate;
pub mod testing;
pub mod tls;
