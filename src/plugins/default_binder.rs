//! DefaultBinder: binds the pod to the chosen node through the profile's [`Binder`] (upstream
//! `plugins/defaultbinder`, which posts a `Binding` to the API server). The binder is the
//! adapter's: the API server in `berth run`, the in-memory cluster in `berth simulate`.

use std::sync::Arc;

use async_trait::async_trait;

use crate::cluster::PodInfo;
use crate::framework::{
    BindError, BindPlugin, Binder, CycleState, Handle, NoArgs, PluginError, Status,
};

/// The DefaultBinder plugin.
#[derive(Clone)]
pub struct DefaultBinder {
    binder: Arc<dyn Binder>,
}

impl DefaultBinder {
    pub fn new(binder: Arc<dyn Binder>) -> Self {
        DefaultBinder { binder }
    }
}

crate::plugin! {
    DefaultBinder {
        name: "DefaultBinder",
        points: [Bind],
    }

    impl Plugin {
        // No `events_to_register`: a failed bind is an error retried with backoff, not a
        // rejection waiting for an event; upstream's DefaultBinder registers none either.
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Binds the pod to the chosen node: a Binding through the API server in `berth run`, the in-memory cluster in `berth simulate`.";
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(DefaultBinder::new(Arc::clone(&handle.binder)))
        }
    }
}

#[async_trait]
impl BindPlugin for DefaultBinder {
    async fn bind(&self, _: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        tracing::debug!(pod = pod.key(), node = node_name, "binding pod");
        match self.binder.bind(&pod.pod, node_name).await {
            Ok(()) => Status::success(),
            // A retried bind that already landed on this node is done, not failed.
            Err(BindError::AlreadyBound { node, .. }) if node == node_name => Status::success(),
            Err(err) => Status::error(err.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::framework::Code;

    /// Records each binding as (namespace, name, node) and fails with `fail_with` if set.
    #[derive(Default)]
    struct FakeBinder {
        fail_with: Option<BindError>,
        bindings: Mutex<Vec<(String, String, String)>>,
    }

    #[async_trait]
    impl Binder for FakeBinder {
        async fn bind(&self, pod: &Pod, node_name: &str) -> Result<(), BindError> {
            if let Some(err) = &self.fail_with {
                return Err(err.clone());
            }
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            self.bindings
                .lock()
                .map_err(|e| BindError::Other(e.to_string()))?
                .push((namespace, name, node_name.to_string()));
            Ok(())
        }
    }

    #[tokio::test]
    async fn bind_matches_upstream_table() {
        // Upstream `TestDefaultBinder` ("successful", "binding error"), plus berth's
        // handling of an already-bound pod (no upstream case: upstream surfaces the API
        // server's conflict as an error, and the scheduler's retry sees the pod bound).
        let test_node = "foohost.kubernetes.mydomain.com";
        let already_bound = |node: &str| BindError::AlreadyBound {
            pod: "ns/foo".into(),
            node: node.into(),
        };
        let cases = [
            ("successful", None, Code::Success, true),
            (
                "binding error",
                Some(BindError::Other("binding error".into())),
                Code::Error,
                false,
            ),
            (
                "already bound to the same node (no upstream case)",
                Some(already_bound(test_node)),
                Code::Success,
                false,
            ),
            (
                "already bound to another node (no upstream case)",
                Some(already_bound("other-node")),
                Code::Error,
                false,
            ),
        ];
        for (name, fail_with, want_code, want_binding) in cases {
            let pod = Pod {
                metadata: ObjectMeta {
                    name: Some("foo".into()),
                    namespace: Some("ns".into()),
                    ..ObjectMeta::default()
                },
                ..Pod::default()
            };
            let pod = PodInfo::new(pod).expect("test pod is valid");
            let fake = Arc::new(FakeBinder {
                fail_with: fail_with.clone(),
                ..FakeBinder::default()
            });
            let handle = Handle::builder().binder(fake.clone()).build();
            let plugin = DefaultBinder::build(NoArgs {}, &handle).expect("no args to reject");
            assert!(plugin.as_bind().is_some());
            assert_eq!(DefaultBinder::POINTS, &[ExtensionPoint::Bind]);

            let status = plugin.bind(&mut CycleState::new(), &pod, test_node).await;

            assert_eq!(status.code(), want_code, "case {name}: {status}");
            if let Some(err) = fail_with.filter(|_| want_code == Code::Error) {
                assert_eq!(status.message(), err.to_string(), "case {name}");
            }
            let bindings = fake.bindings.lock().expect("lock not poisoned").clone();
            let want: Vec<(String, String, String)> = if want_binding {
                vec![("ns".into(), "foo".into(), test_node.into())]
            } else {
                Vec::new()
            };
            assert_eq!(bindings, want, "case {name}");
        }
    }
}
