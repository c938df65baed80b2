//! Leader election on a coordination.k8s.io Lease (kube-lease-manager).
//!
//! Every replica watches the cluster and keeps its caches and profile instances warm;
//! only the replica holding the Lease schedules and writes status. Without
//! `--leader-elect` the replica leads from the start. On shutdown the Lease is released
//! at once; a follower takes it at its next check, at most one lease duration later
//! (measured in the end-to-end test: about 3.8 s with a 4 s lease).

use std::time::Duration;

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

/// Lease settings (`--lease-namespace`, `--lease-name`, `--identity`,
/// `--lease-duration-seconds`).
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long a Lease stays valid without renewal; renewals happen well before.
    pub duration_seconds: u64,
}

/// The running election; [`Election::release`] gives the Lease up.
pub struct Election {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    /// Keeps the channel of an always-leading replica open.
    _always: Option<watch::Sender<bool>>,
}

impl Election {
    /// A replica that always leads (`--leader-elect` off).
    pub fn always_leader() -> (watch::Receiver<bool>, Election) {
        let (tx, rx) = watch::channel(true);
        let election = Election {
            stop: None,
            task: None,
            _always: Some(tx),
        };
        (rx, election)
    }

    /// Joins the election. The receiver flips as this replica gains or loses the Lease.
    pub async fn start(
        client: Client,
        config: LeaseConfig,
    ) -> Result<(watch::Receiver<bool>, Election), kube_lease_manager::LeaseManagerError> {
        let grace = (config.duration_seconds / 3).max(1);
        let manager = LeaseManagerBuilder::new(client, &config.name)
            .with_namespace(&config.namespace)
            .with_identity(&config.identity)
            .with_duration(config.duration_seconds)
            .with_grace(grace)
            .build()
            .await?;
        let (tx, rx) = watch::channel(false);
        let (stop_tx, mut stop_rx) = oneshot::channel();
        let identity = config.identity.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stop_rx => {
                        let _ = tx.send(false);
                        if let Err(error) = manager.release().await {
                            warn!(%error, "releasing the lease failed; it expires on its own");
                        }
                        info!(identity, "lease released");
                        return;
                    }
                    changed = manager.changed() => match changed {
                        Ok(leading) => {
                            info!(identity, leading, "leadership changed");
                            let _ = tx.send(leading);
                        }
                        Err(error) => {
                            warn!(%error, "lease update failed; not leading until it succeeds");
                            let _ = tx.send(false);
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
            }
        });
        let election = Election {
            stop: Some(stop_tx),
            task: Some(task),
            _always: None,
        };
        Ok((rx, election))
    }

    /// Stops campaigning and releases the Lease if held.
    pub async fn release(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
