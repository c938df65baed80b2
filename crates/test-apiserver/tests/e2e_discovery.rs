//! Discovery as kube-rs and kubectl use it: `/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/<group>/<version>`, and a CRD's group appearing once it is installed.

mod common;

use common::*;
use kube::discovery::{Discovery, Scope, verbs};

#[tokio::test]
async fn core_and_group_discovery() {
    let server = start().await;
    let client = server.client().await;

    let version = client.apiserver_version().await.expect("/version");
    assert_eq!(version.major, "1");
    assert!(version.git_version.starts_with("v1."), "{version:?}");

    let core = client.list_core_api_resources("v1").await.expect("/api/v1");
    let find = |name: &str| core.resources.iter().find(|r| r.name == name);
    for (name, kind, namespaced) in [
        ("pods", "Pod", true),
        ("nodes", "Node", false),
        ("namespaces", "Namespace", false),
        ("events", "Event", true),
        ("persistentvolumeclaims", "PersistentVolumeClaim", true),
        ("persistentvolumes", "PersistentVolume", false),
    ] {
        let resource = find(name).unwrap_or_else(|| panic!("/api/v1 lacks {name}"));
        assert_eq!(resource.kind, kind);
        assert_eq!(resource.namespaced, namespaced, "{name}");
        for verb in [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ] {
            assert!(
                resource.verbs.iter().any(|v| v == verb),
                "{name} lacks verb {verb}: {:?}",
                resource.verbs
            );
        }
    }
    assert_eq!(
        find("pods").and_then(|r| r.short_names.clone()),
        Some(vec!["po".to_string()])
    );
    assert_eq!(
        find("nodes").and_then(|r| r.short_names.clone()),
        Some(vec!["no".to_string()])
    );
    for sub in ["pods/status", "pods/binding", "nodes/status"] {
        assert!(find(sub).is_some(), "/api/v1 lacks {sub}");
    }
    assert!(
        find("pods/binding").is_some_and(|r| r.verbs.iter().any(|v| v == "create")),
        "pods/binding supports create"
    );

    let groups = client.list_api_groups().await.expect("/apis");
    let group_names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    for group in [
        "events.k8s.io",
        "coordination.k8s.io",
        "storage.k8s.io",
        "policy",
        "scheduling.k8s.io",
        "apiextensions.k8s.io",
    ] {
        assert!(
            group_names.contains(&group),
            "/apis lacks {group}: {group_names:?}"
        );
    }
    assert!(
        !group_names.contains(&"berth.dev"),
        "berth.dev is served only after its CRDs are installed"
    );
    let leases = client
        .list_api_group_resources("coordination.k8s.io/v1")
        .await
        .expect("/apis/coordination.k8s.io/v1");
    assert!(
        leases
            .resources
            .iter()
            .any(|r| r.name == "leases" && r.namespaced)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn installed_crds_are_discoverable() {
    let server = start_with_crds().await;
    let client = server.client().await;

    let resources = client
        .list_api_group_resources("berth.dev/v1alpha1")
        .await
        .expect("/apis/berth.dev/v1alpha1");
    let find = |name: &str| resources.resources.iter().find(|r| r.name == name);
    let profiles = find("schedulerprofiles").expect("schedulerprofiles are served");
    assert_eq!(profiles.kind, "SchedulerProfile");
    assert!(!profiles.namespaced);
    assert_eq!(
        profiles.short_names.as_deref(),
        Some(&["sprof".to_string()][..])
    );
    assert!(
        profiles
            .categories
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c == "berth")),
        "{profiles:?}"
    );
    let groups = find("podgroups").expect("podgroups are served");
    assert!(groups.namespaced);
    assert_eq!(groups.short_names.as_deref(), Some(&["pg".to_string()][..]));
    assert!(find("schedulerprofiles/status").is_some());
    assert!(find("podgroups/status").is_some());

    // kube-rs' own discovery finds them too.
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery runs");
    let group = discovery
        .get("berth.dev")
        .expect("discovery lists berth.dev");
    let (resource, capabilities) = group
        .recommended_kind("SchedulerProfile")
        .expect("SchedulerProfile is discovered");
    assert_eq!(resource.plural, "schedulerprofiles");
    assert_eq!(capabilities.scope, Scope::Cluster);
    assert!(capabilities.supports_operation(verbs::WATCH));
    assert!(
        discovery.get("").is_some() || discovery.groups().any(|g| g.name().is_empty()),
        "the core group is discovered"
    );
    server.shutdown().await;
}
