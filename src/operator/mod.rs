//! `berth run`: the Kubernetes adapter around the scheduling core.
//!
//! Data flows as in the simulator, with watches instead of YAML and the API server
//! instead of an in-memory binder:
//!
//! 1. [`watches`] turn Node and Pod watches (kube-runtime watchers, no polling) into
//!    [`types::ClusterChange`]s for the scheduling loop and keep the listers plugins read
//!    (workloads, PodGroups, PodDisruptionBudgets; scheduler-plugins' PodGroups through
//!    [`scheduler_plugins_groups`] where their CRD exists); [`storage`] keeps the storage
//!    objects the volume plugins read current and tells the loop of each change, and
//!    [`devices`] does the same for the resource.k8s.io objects DynamicResources reads.
//! 2. [`profiles`] is the SchedulerProfile controller: validation, instantiation,
//!    status conditions; it sends [`types::ProfileCommand`]s to the loop.
//! 3. [`scheduling_loop`] owns the [`crate::scheduler::Scheduler`]: it applies changes
//!    and commands, runs scheduling cycles while this replica leads, and spawns binding
//!    cycles that bind through [`binder`] (and write volume bindings through
//!    [`volume_writer`], device allocations through [`claim_writer`]).
//! 4. [`reporting`] turns attempt outcomes into pod conditions, nominations and events;
//!    [`preemption`] makes the API calls that carry out a preemption (the victims'
//!    condition, deletion and events; clearing lower-priority nominations).
//! 5. [`leader`] elects one active replica with a coordination.k8s.io Lease.

pub mod backoff;
pub mod binder;
pub mod claim_writer;
pub mod conditions;
pub mod devices;
pub mod discovery;
pub mod leader;
pub mod legacy_pods;
pub mod legacy_workloads;
pub mod pod_group_status;
pub mod podgroups;
pub mod preemption;
pub mod profiles;
pub mod reporting;
pub mod scheduler_plugins_groups;
pub mod scheduling_groups;
pub mod scheduling_loop;
pub mod storage;
pub mod types;
pub mod volume_writer;
pub mod watches;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use crate::framework::{Binder, Nominator, Observer, Parallelizer, Registry, RuntimeClock};
use crate::observability::Metrics;
use crate::observability::server::auth::{DelegatedAccess, KubeReviewer};
use crate::observability::server::tls::ServingCertificate;
use crate::observability::server::{Endpoints, Limits, Security};
use crate::scheduler::SchedulerOptions;

use self::leader::{Election, LeaseConfig};
use self::scheduling_loop::{LoopChannels, SchedulingLoop};
use self::types::OperatorState;

/// How `berth run` is configured (its flags).
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// A kubeconfig file; otherwise `KUBECONFIG`, `~/.kube/config` or the in-cluster
    /// service account, as kube-rs infers.
    pub kubeconfig: Option<PathBuf>,
    /// Campaign for a Lease before scheduling (`--leader-elect`).
    pub leader_elect: bool,
    pub lease: LeaseConfig,
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    pub metrics_bind_address: SocketAddr,
    /// HTTPS with which certificate, or plain HTTP.
    pub metrics_security: MetricsSecurity,
    /// Connections the metrics port holds open at once.
    pub metrics_max_connections: usize,
    /// Threads for Filter and Score.
    pub parallelism: usize,
    /// Seed of the tie-break among equally scored nodes.
    pub seed: u64,
    /// Accept profiles serving `default-scheduler` (`--serve-default-scheduler`), for
    /// clusters whose own kube-scheduler is disabled.
    pub serve_default_scheduler: bool,
}

/// How the metrics port is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsSecurity {
    /// HTTPS with a certificate generated at start; `/metrics` authenticated and
    /// authorized through the API server.
    SelfSigned,
    /// HTTPS with the certificate in these PEM files, followed for rotations; `/metrics`
    /// as above.
    CertificateFiles { cert: PathBuf, key: PathBuf },
    /// Plain HTTP, `/metrics` open (`--metrics-insecure`).
    Insecure,
}

/// Why the operator could not start.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("cannot build a Kubernetes client: {0}")]
    Client(String),
    #[error("cannot serve metrics on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot serve HTTPS on the metrics port: {0}")]
    Certificate(#[from] crate::observability::server::tls::CertificateError),
    #[error("leader election failed to start: {0}")]
    Election(String),
    #[error("{0}")]
    Discovery(String),
    #[error("{0}")]
    Workers(String),
}

pub use crate::kubeconfig::USER_AGENT;

/// Builds the client: from `--kubeconfig` when given, else inferred (see
/// [`crate::kubeconfig::client`]).
pub async fn client(kubeconfig: Option<&PathBuf>) -> Result<Client, OperatorError> {
    crate::kubeconfig::client(kubeconfig.map(PathBuf::as_path), None)
        .await
        .map_err(|e| OperatorError::Client(e.0))
}

/// Runs the operator until SIGTERM or Ctrl-C, then drains in-flight bindings, releases
/// the Lease and returns.
pub async fn run(config: OperatorConfig, registry: Registry) -> Result<(), OperatorError> {
    let client = client(config.kubeconfig.as_ref()).await?;
    let metrics = Metrics::new();
    let (leader, election) = if config.leader_elect {
        Election::start(client.clone(), config.lease.clone())
            .await
            .map_err(|e| OperatorError::Election(e.to_string()))?
    } else {
        Election::always_leader()
    };
    metrics.set_leader(*leader.borrow());
    let (unlisted_tx, unlisted_rx) =
        watch::channel(scheduling_loop::cached_kinds().collect::<Vec<_>>());
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (loop_tx, loop_rx) = mpsc::unbounded_channel();
    let (report_tx, report_rx) = mpsc::channel(1024);
    let state = OperatorState {
        leader: leader.clone(),
        unlisted: unlisted_rx.clone(),
        serving: Default::default(),
        workloads: Default::default(),
        pod_groups: Default::default(),
        volumes: Default::default(),
        disruption_budgets: Default::default(),
        device_resources: Default::default(),
    };

    let listener = tokio::net::TcpListener::bind(config.metrics_bind_address)
        .await
        .map_err(|source| OperatorError::Bind {
            address: config.metrics_bind_address,
            source,
        })?;
    let address = listener.local_addr().unwrap_or(config.metrics_bind_address);
    let security = metrics_security(&config, &client)?;
    let scheme = match security {
        Security::Insecure => "http",
        Security::Secure { .. } => "https",
    };
    info!(%address, scheme, "serving /metrics, /healthz and /readyz");
    if scheme == "http" {
        warn!(
            "--metrics-insecure: /metrics is served over plain HTTP to anyone who reaches the port"
        );
    }
    let ready_state = state.clone();
    let readiness: Arc<dyn Fn() -> Result<(), String> + Send + Sync> =
        Arc::new(move || match ready_state.unlisted_kinds() {
            kinds if kinds.is_empty() => Ok(()),
            kinds => Err(format!(
                "caches not synced: waiting for the first list of {}",
                kinds.join(", ")
            )),
        });
    let server = tokio::spawn(crate::observability::server::serve(
        listener,
        Endpoints {
            metrics: metrics.clone(),
            readiness,
        },
        security,
        Limits {
            max_connections: config.metrics_max_connections,
            ..Limits::default()
        },
        shutdown_rx.clone(),
    ));

    let mut watch_tasks = watches::spawn(client.clone(), loop_tx.clone());
    watch_tasks.extend(watches::spawn_workloads(
        client.clone(),
        state.workloads.clone(),
    ));
    watch_tasks.push(watches::spawn_pod_groups(
        client.clone(),
        state.pod_groups.clone(),
        loop_tx.clone(),
    ));
    watch_tasks.push(watches::spawn_disruption_budgets(
        client.clone(),
        state.disruption_budgets.clone(),
        loop_tx.clone(),
    ));
    watch_tasks.extend(storage::spawn(
        client.clone(),
        state.volumes.clone(),
        loop_tx.clone(),
    ));
    let pod_group_states = Arc::new(crate::cluster::PodGroupStates::new());
    let legacy_workloads = Arc::new(crate::cluster::LegacyWorkloads::new());
    // Asked once the metrics port serves (a bad certificate fails the start first, and
    // /healthz answers while discovery retries); the loop then waits for these kinds too.
    let device_kinds = devices::served_kinds(&client)
        .await
        .map_err(OperatorError::Discovery)?;
    unlisted_tx.send_modify(|kinds| kinds.extend(device_kinds.iter().copied()));
    watch_tasks.extend(devices::spawn(
        client.clone(),
        &device_kinds,
        state.device_resources.clone(),
        loop_tx.clone(),
    ));
    if scheduling_groups::served(&client)
        .await
        .map_err(OperatorError::Discovery)?
    {
        // Before the loop adds any profile: its queues group pod group members.
        pod_group_states.set_served();
        unlisted_tx.send_modify(|kinds| kinds.push(scheduling_groups::KIND));
        watch_tasks.push(scheduling_groups::spawn(client.clone(), loop_tx.clone()));
    }
    if legacy_workloads::served(&client)
        .await
        .map_err(OperatorError::Discovery)?
    {
        legacy_workloads.set_served();
        unlisted_tx.send_modify(|kinds| kinds.push(legacy_workloads::KIND));
        watch_tasks.push(legacy_workloads::spawn(
            client.clone(),
            legacy_workloads.clone(),
            loop_tx.clone(),
        ));
    }
    let scheduler_plugins_groups = scheduler_plugins_groups::served(&client)
        .await
        .map_err(OperatorError::Discovery)?;
    if scheduler_plugins_groups {
        watch_tasks.push(scheduler_plugins_groups::spawn(
            client.clone(),
            state.pod_groups.clone(),
            loop_tx.clone(),
        ));
    }
    let binder: Arc<dyn Binder> = Arc::new(binder::KubeBinder::new(client.clone()));
    let observer: Arc<dyn Observer> = metrics.clone();
    let reconcile_metrics = metrics.clone();
    let condition_metrics = metrics.clone();
    // One set of worker threads and one clock for the scheduler and every profile.
    let parallelizer =
        Arc::new(Parallelizer::new(config.parallelism).map_err(OperatorError::Workers)?);
    let clock = RuntimeClock::shared();
    let nominator = Arc::new(Nominator::new());
    let context = profiles::ProfileContext {
        client: client.clone(),
        registry: Arc::new(registry),
        loop_tx: loop_tx.clone(),
        state: state.clone(),
        binder,
        observer: Some(observer),
        parallelizer: parallelizer.clone(),
        clock: clock.clone(),
        nominator: nominator.clone(),
        pod_group_states: pod_group_states.clone(),
        legacy_workloads: legacy_workloads.clone(),
        serve_default_scheduler: config.serve_default_scheduler,
        reporter: kube::runtime::events::Reporter {
            controller: "berth".into(),
            instance: Some(config.lease.identity.clone()),
        },
        on_reconcile: Some(Arc::new(move |ok, elapsed| {
            reconcile_metrics.reconcile(ok, elapsed)
        })),
        on_condition: Some(Arc::new(move |profile, kind, status| {
            condition_metrics.set_profile_condition(profile, kind, status)
        })),
    };
    let profiles_task = tokio::spawn(profiles::run(
        Arc::new(context),
        until_shutdown(shutdown_rx.clone()),
    ));
    let podgroups_task = tokio::spawn(podgroups::run(
        client.clone(),
        state.clone(),
        kube::runtime::events::Reporter {
            controller: "berth".into(),
            instance: Some(config.lease.identity.clone()),
        },
        until_shutdown(shutdown_rx.clone()),
    ));
    let reporter = kube::runtime::events::Reporter {
        controller: "berth".into(),
        instance: Some(config.lease.identity.clone()),
    };
    let scheduler_plugins_task = if scheduler_plugins_groups {
        tokio::spawn(scheduler_plugins_groups::run(
            client.clone(),
            state.clone(),
            reporter,
            until_shutdown(shutdown_rx.clone()),
        ))
    } else {
        // The CRD may be installed later: the watch and the controller start then.
        tokio::spawn(scheduler_plugins_groups::serve_once_installed(
            client.clone(),
            state.clone(),
            loop_tx.clone(),
            reporter,
            until_shutdown(shutdown_rx.clone()),
            scheduler_plugins_groups::REDISCOVERY_INTERVAL,
        ))
    };
    let reporting_task = tokio::spawn(reporting::run(
        report_rx,
        client.clone(),
        config.lease.identity.clone(),
    ));
    let scheduling = SchedulingLoop::new(
        SchedulerOptions {
            seed: config.seed,
            record_diagnosis: false,
            parallelizer,
            clock,
            nominator,
            pod_group_states,
            legacy_workloads,
        },
        LoopChannels {
            messages: loop_rx,
            reports: report_tx,
            leader,
            unlisted: unlisted_tx,
            shutdown: shutdown_rx,
        },
        metrics,
        preemption::PreemptionExecutor::new(client.clone(), config.lease.identity.clone()),
    )
    .with_pod_group_writer(pod_group_status::PodGroupStatusWriter::new(client.clone()));
    let loop_task = tokio::spawn(scheduling.run());
    info!(identity = %config.lease.identity, leader_elect = config.leader_elect, "berth is running");

    wait_for_signal().await;
    info!("shutting down: draining in-flight bindings");
    let _ = shutdown_tx.send(true);
    if loop_task.await.is_err() {
        warn!("the scheduling loop ended abnormally");
    }
    for task in watch_tasks {
        task.abort();
    }
    profiles_task.abort();
    podgroups_task.abort();
    scheduler_plugins_task.abort();
    // The loop held the only report sender: the reporter drains and ends.
    if tokio::time::timeout(Duration::from_secs(5), reporting_task)
        .await
        .is_err()
    {
        warn!("reporter did not finish in time");
    }
    election.release().await;
    let _ = server.await;
    info!("stopped");
    Ok(())
}

/// The metrics port's protection: its certificate, and the API server as the judge of
/// who may read `/metrics`.
fn metrics_security(config: &OperatorConfig, client: &Client) -> Result<Security, OperatorError> {
    let certificate = match &config.metrics_security {
        MetricsSecurity::Insecure => return Ok(Security::Insecure),
        MetricsSecurity::CertificateFiles { cert, key } => {
            ServingCertificate::from_files(cert, key)?
        }
        MetricsSecurity::SelfSigned => {
            let mut hosts = vec![config.lease.identity.clone()];
            if !config.metrics_bind_address.ip().is_unspecified() {
                hosts.push(config.metrics_bind_address.ip().to_string());
            }
            ServingCertificate::self_signed(&hosts)?
        }
    };
    Ok(Security::Secure {
        certificate,
        access: Arc::new(DelegatedAccess::new(Arc::new(KubeReviewer::new(
            client.clone(),
        )))),
    })
}

/// Resolves once `shutdown` turns true.
async fn until_shutdown(mut shutdown: watch::Receiver<bool>) {
    while !*shutdown.borrow() {
        if shutdown.changed().await.is_err() {
            return;
        }
    }
}

/// SIGTERM (Kubernetes stopping the pod) or Ctrl-C.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(error) => {
                warn!(%error, "cannot listen for SIGTERM; only Ctrl-C stops berth");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
