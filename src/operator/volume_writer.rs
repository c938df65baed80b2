//! The live [`VolumeWriter`]: the PersistentVolume and PersistentVolumeClaim updates of
//! VolumeBinding's PreBind, sent to the API server as upstream's binder sends them.
//!
//! Each write is a whole-object update (PUT, `Api::replace`) carrying the resourceVersion
//! the scheduler last saw, never a patch: if the PV controller or a provisioner changed the
//! object meanwhile, the API server answers 409 Conflict and the binding cycle fails
//! (Unreserve, the pod is retried with fresh objects) instead of overwriting their work.
//! No write is retried here and none is rolled back: as upstream, the retry is the pod's
//! next scheduling attempt, and what was written stays for the PV controller and the
//! external provisioner to finish.
//!
//! Errors are text naming the object: the API server's message when it names it (a
//! conflict does: `Operation cannot be fulfilled on persistentvolumes "pv-a": the object
//! has been modified; ...`), otherwise that message or the transport error after
//! `persistentvolumes "pv-a": `.

use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, PostParams};
use kube::{Resource, ResourceExt};

use crate::framework::VolumeWriter;

/// The longest one update may take before the binding cycle gives up on it (the update
/// may still land; the PV controller and the next attempt take it from there).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Writes volume bindings through the API server.
#[derive(Clone)]
pub struct KubeVolumeWriter {
    client: kube::Client,
}

impl KubeVolumeWriter {
    pub fn new(client: kube::Client) -> KubeVolumeWriter {
        KubeVolumeWriter { client }
    }
}

#[async_trait]
impl VolumeWriter for KubeVolumeWriter {
    async fn update_volume(&self, volume: &PersistentVolume) -> Result<PersistentVolume, String> {
        replace(Api::all(self.client.clone()), volume).await
    }

    async fn update_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String> {
        let namespace = claim.namespace().unwrap_or_else(|| "default".to_string());
        replace(Api::namespaced(self.client.clone(), &namespace), claim).await
    }
}

/// PUTs `object` (with its resourceVersion) and returns what the server stored.
async fn replace<K>(api: Api<K>, object: &K) -> Result<K, String>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug,
    K: serde::Serialize + serde::de::DeserializeOwned,
{
    let plural = K::plural(&());
    let name = object.name_any();
    if name.is_empty() {
        return Err(format!("{plural}: metadata.name: Required value"));
    }
    let params = PostParams::default();
    let write = api.replace(&name, &params, object);
    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
        Ok(Ok(stored)) => Ok(stored),
        Ok(Err(error)) => Err(error_text(&plural, &name, &error)),
        Err(_) => Err(format!(
            "{plural} \"{name}\": no answer to the update within {}s",
            WRITE_TIMEOUT.as_secs()
        )),
    }
}

/// The error of an update of `plural` `name`, naming the object.
fn error_text(plural: &str, name: &str, error: &kube::Error) -> String {
    let message = match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    };
    if message.contains(&format!("{plural} \"{name}\"")) {
        message
    } else {
        format!("{plural} \"{name}\": {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use test_apiserver::{Config, TestApiServer};

    fn volume(name: &str) -> PersistentVolume {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "wait",
                "hostPath": {"path": "/data"},
            },
        }))
        .expect("a PersistentVolume")
    }

    fn claim(namespace: &str, name: &str) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "wait",
            },
        }))
        .expect("a PersistentVolumeClaim")
    }

    /// A static binding: the PV's claimRef is written and the stored object (with its new
    /// resourceVersion) comes back; the same write from the now stale copy is a conflict
    /// naming the PV, and a PV that does not exist is named too.
    #[tokio::test]
    async fn update_volume_writes_the_claim_ref_and_refuses_a_stale_copy() {
        let server = TestApiServer::start(Config::default())
            .await
            .expect("the test API server starts");
        let client = server.client().await;
        let volumes: Api<PersistentVolume> = Api::all(client.clone());
        let created = volumes
            .create(&PostParams::default(), &volume("pv-a"))
            .await
            .expect("create the PV");
        let writer = KubeVolumeWriter::new(client);

        let mut bound = created.clone();
        bound.spec.get_or_insert_default().claim_ref = Some(
            serde_json::from_value(json!({"namespace": "default", "name": "claim-a"}))
                .expect("a claimRef"),
        );
        let stored = writer.update_volume(&bound).await.expect("the update");
        assert_ne!(stored.resource_version(), created.resource_version());
        let on_server = volumes.get("pv-a").await.expect("get the PV");
        let claim_ref = on_server.spec.and_then(|s| s.claim_ref);
        assert_eq!(
            claim_ref.and_then(|r| r.name).as_deref(),
            Some("claim-a"),
            "the PV on the server is bound to the claim"
        );

        let cases = [
            (
                "a copy older than the stored PV",
                bound.clone(),
                "Operation cannot be fulfilled on persistentvolumes \"pv-a\": the object has been modified",
            ),
            (
                "a PV that does not exist",
                volume("pv-missing"),
                "persistentvolumes \"pv-missing\" not found",
            ),
        ];
        for (name, object, expected) in cases {
            let error = writer
                .update_volume(&object)
                .await
                .expect_err("the update must fail");
            assert!(
                error.contains(expected),
                "{name}: the error {error:?} should contain {expected:?}"
            );
        }
        server.shutdown().await;
    }

    /// A dynamic provisioning: the selected-node annotation is written on the claim in its
    /// namespace; a stale copy is a conflict naming the claim.
    #[tokio::test]
    async fn update_claim_writes_the_selected_node_in_the_claims_namespace() {
        let server = TestApiServer::start(Config::default())
            .await
            .expect("the test API server starts");
        let client = server.client().await;
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "kube-system");
        let created = claims
            .create(&PostParams::default(), &claim("kube-system", "claim-a"))
            .await
            .expect("create the PVC");
        let writer = KubeVolumeWriter::new(client);

        let mut annotated = created.clone();
        annotated
            .annotations_mut()
            .insert("volume.kubernetes.io/selected-node".into(), "node-a".into());
        writer.update_claim(&annotated).await.expect("the update");
        let on_server = claims.get("claim-a").await.expect("get the PVC");
        assert_eq!(
            on_server
                .annotations()
                .get("volume.kubernetes.io/selected-node")
                .map(String::as_str),
            Some("node-a")
        );

        let error = writer
            .update_claim(&annotated)
            .await
            .expect_err("a stale copy must conflict");
        assert!(
            error.contains(
                "Operation cannot be fulfilled on persistentvolumeclaims \"claim-a\": the object has been modified"
            ),
            "{error:?}"
        );
        server.shutdown().await;
    }

    #[test]
    fn errors_name_the_object_once() {
        let api_error = |message: &str| {
            kube::Error::Api(Box::new(
                serde_json::from_value(json!({
                    "status": "Failure", "message": message, "reason": "InternalError", "code": 500,
                }))
                .expect("a Status"),
            ))
        };
        let cases = [
            (
                "the server's message names the object",
                api_error("persistentvolumes \"pv-a\" is forbidden: cannot update"),
                "persistentvolumes \"pv-a\" is forbidden: cannot update",
            ),
            (
                "the server's message does not name it",
                api_error("etcdserver: request timed out"),
                "persistentvolumes \"pv-a\": etcdserver: request timed out",
            ),
        ];
        for (name, error, expected) in cases {
            assert_eq!(
                error_text("persistentvolumes", "pv-a", &error),
                expected,
                "{name}"
            );
        }
    }
}
