//! Asking the API server once at start which resources a group version serves, for the
//! watches that exist only where an API is served (the resource.k8s.io kinds, the
//! Workload API's PodGroups).

use std::time::Duration;

use kube::Client;
use tracing::warn;

/// How often discovery is tried before berth gives up starting.
const DISCOVERY_ATTEMPTS: u32 = 5;

/// The resource names `group_version` serves, `None` when the API server does not serve
/// it (404). Other failures are retried a few times with a growing pause, then returned.
pub async fn served_resources(
    client: &Client,
    group_version: &str,
) -> Result<Option<Vec<String>>, String> {
    let mut pause = Duration::from_millis(500);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match client.list_api_group_resources(group_version).await {
            Ok(list) => return Ok(Some(list.resources.into_iter().map(|r| r.name).collect())),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
            Err(error) if attempt < DISCOVERY_ATTEMPTS => {
                warn!(%error, attempt, "discovery of {group_version} failed; retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            Err(error) => {
                return Err(format!(
                    "discovery of {group_version} failed {DISCOVERY_ATTEMPTS} times: {error}"
                ));
            }
        }
    }
}
