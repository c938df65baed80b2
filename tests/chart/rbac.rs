//! The chart's RBAC as the API server's authorizer applies it, for the replay test.
//!
//! A request is allowed when one rule of the ClusterRole, or of the Role in the request's
//! namespace, matches it: its API group, its resource (`pods`, or `pods/binding` for a
//! subresource), its verb, and — when the rule lists `resourceNames` — its object name.
//! As in Kubernetes RBAC, a rule with `resourceNames` never matches `list`, `watch` or
//! `create` of a collection, which carry no name.
//!
//! The chart's metrics reader ClusterRole (`<fullname>-metrics-reader`) is not berth's:
//! it is the permission berth's `/metrics` asks scrapers for. It is kept out of berth's
//! grants, and checked to grant nothing but `get` on the non-resource URL `/metrics`.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde_json::Value;
use test_apiserver::RequestRecord;

use crate::helm::{Manifests, NAMESPACE};

/// One request, reduced to what RBAC decides on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Attributes {
    pub group: String,
    /// `pods`, or `pods/binding` for a subresource.
    pub resource: String,
    pub verb: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl fmt::Display for Attributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {group}/{}", self.verb, self.resource)?;
        if let Some(namespace) = &self.namespace {
            write!(f, " in namespace {namespace}")?;
        }
        if let Some(name) = &self.name {
            write!(f, " named {name}")?;
        }
        Ok(())
    }
}

/// The name suffix of the chart's metrics reader ClusterRole (`<fullname>-metrics-reader`).
pub const METRICS_READER_SUFFIX: &str = "-metrics-reader";

/// One PolicyRule: on resources, or on non-resource URLs (RBAC forbids both in one rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl Rule {
    pub fn parse(rule: &Value) -> Rule {
        let strings = |field: &str| -> Vec<String> {
            rule[field]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|i| i.as_str().expect("rule entries are strings").to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        let parsed = Rule {
            api_groups: strings("apiGroups"),
            resources: strings("resources"),
            verbs: strings("verbs"),
            resource_names: strings("resourceNames"),
            non_resource_urls: strings("nonResourceURLs"),
        };
        assert!(
            parsed.non_resource_urls.is_empty()
                || (parsed.api_groups.is_empty()
                    && parsed.resources.is_empty()
                    && parsed.resource_names.is_empty()),
            "a rule is either on resources or on non-resource URLs (the API server rejects \
             both): {rule}"
        );
        parsed
    }

    /// Whether the rule allows the resource request (a non-resource rule never does).
    pub fn allows(&self, request: &Attributes) -> bool {
        let names_match = self.resource_names.is_empty()
            || request
                .name
                .as_ref()
                .is_some_and(|name| self.resource_names.contains(name));
        self.api_groups.contains(&request.group)
            && self.resources.contains(&request.resource)
            && self.verbs.contains(&request.verb)
            && names_match
    }

    /// Whether any field is a wildcard.
    pub fn has_wildcard(&self) -> bool {
        [
            &self.api_groups,
            &self.resources,
            &self.verbs,
            &self.resource_names,
            &self.non_resource_urls,
        ]
        .iter()
        .any(|field| field.iter().any(|entry| entry.contains('*')))
    }
}

/// Where a rule applies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// A ClusterRole bound by a ClusterRoleBinding: every namespace and cluster-scoped
    /// objects.
    Cluster,
    /// A Role bound by a RoleBinding: its namespace only.
    Namespace(String),
}

/// One granted permission: (scope, API group, resource, verb).
pub type Grant = (Scope, String, String, String);

/// berth's ClusterRole and Roles in a rendered chart, each checked to be bound to
/// `service_account` (in `namespace`), and nothing else.
#[derive(Debug)]
pub struct Grants {
    pub rules: Vec<(Scope, Rule)>,
    /// The metrics reader ClusterRole, when rendered: left out of `rules` after
    /// [`assert_metrics_reader`].
    pub metrics_reader: Option<String>,
}

impl Grants {
    pub fn from_manifests(manifests: &Manifests, service_account: &str, namespace: &str) -> Grants {
        let mut rules = Vec::new();
        let mut metrics_reader = None;
        for (role_kind, binding_kind) in [
            ("ClusterRole", "ClusterRoleBinding"),
            ("Role", "RoleBinding"),
        ] {
            for role in manifests.all(role_kind) {
                let name = role["metadata"]["name"].as_str().expect("a role name");
                if role_kind == "ClusterRole" && name.ends_with(METRICS_READER_SUFFIX) {
                    assert_metrics_reader(manifests, role, service_account, namespace);
                    assert!(
                        metrics_reader.replace(name.to_string()).is_none(),
                        "more than one ClusterRole named *{METRICS_READER_SUFFIX}"
                    );
                    continue;
                }
                let scope = match role_kind {
                    "ClusterRole" => Scope::Cluster,
                    _ => Scope::Namespace(
                        role["metadata"]["namespace"]
                            .as_str()
                            .unwrap_or_else(|| panic!("Role {name} has no namespace"))
                            .to_string(),
                    ),
                };
                let role_ref = RoleRef {
                    kind: role_kind,
                    name,
                    scope: &scope,
                };
                assert_bound(
                    manifests,
                    binding_kind,
                    &role_ref,
                    service_account,
                    namespace,
                );
                for rule in role["rules"].as_array().expect("rules").iter() {
                    let rule = Rule::parse(rule);
                    assert!(
                        rule.non_resource_urls.is_empty(),
                        "berth requests no non-resource URL beyond public discovery; {role_kind} \
                         {name} grants {rule:?}"
                    );
                    rules.push((scope.clone(), rule));
                }
            }
        }
        Grants {
            rules,
            metrics_reader,
        }
    }

    /// The rules that allow `request`.
    pub fn allowing<'a>(
        &'a self,
        request: &'a Attributes,
    ) -> impl Iterator<Item = &'a (Scope, Rule)> {
        self.rules.iter().filter(move |(scope, rule)| {
            let in_scope = match scope {
                Scope::Cluster => true,
                Scope::Namespace(namespace) => request.namespace.as_deref() == Some(namespace),
            };
            in_scope && rule.allows(request)
        })
    }

    /// Every (scope, group, resource, verb) granted.
    pub fn granted(&self) -> BTreeSet<Grant> {
        let mut granted = BTreeSet::new();
        for (scope, rule) in &self.rules {
            for group in &rule.api_groups {
                for resource in &rule.resources {
                    for verb in &rule.verbs {
                        granted.insert((
                            scope.clone(),
                            group.clone(),
                            resource.clone(),
                            verb.clone(),
                        ));
                    }
                }
            }
        }
        granted
    }
}

/// The metrics reader ClusterRole `role` grants exactly `get` on the non-resource URL
/// `/metrics`, and is not bound to berth's `service_account` (berth scrapes nobody).
pub fn assert_metrics_reader(
    manifests: &Manifests,
    role: &Value,
    service_account: &str,
    namespace: &str,
) {
    let name = role["metadata"]["name"].as_str().expect("a role name");
    let rules: Vec<Rule> = role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(Rule::parse)
        .collect();
    let only_get_metrics = Rule {
        api_groups: vec![],
        resources: vec![],
        verbs: vec!["get".into()],
        resource_names: vec![],
        non_resource_urls: vec!["/metrics".into()],
    };
    assert_eq!(
        rules,
        [only_get_metrics],
        "ClusterRole {name} must grant exactly `get` on /metrics"
    );
    for binding in manifests.all("ClusterRoleBinding") {
        if binding["roleRef"]["name"] != name {
            continue;
        }
        let berth = binding["subjects"].as_array().is_some_and(|subjects| {
            subjects.iter().any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == service_account
                    && s["namespace"] == namespace
            })
        });
        assert!(
            !berth,
            "ClusterRole {name} is for scrapers, not berth's ServiceAccount: {binding}"
        );
    }
}

/// A ClusterRole or Role, as a binding refers to it.
struct RoleRef<'a> {
    kind: &'a str,
    name: &'a str,
    scope: &'a Scope,
}

/// Fails unless a `binding_kind` binds `role` to the ServiceAccount (a RoleBinding from
/// the Role's namespace: a Role can be bound only there).
fn assert_bound(
    manifests: &Manifests,
    binding_kind: &str,
    role: &RoleRef<'_>,
    service_account: &str,
    namespace: &str,
) {
    let bound = manifests.all(binding_kind).into_iter().any(|binding| {
        let binding_scope_matches = match role.scope {
            Scope::Cluster => true,
            Scope::Namespace(ns) => binding["metadata"]["namespace"] == ns.as_str(),
        };
        binding_scope_matches
            && binding["roleRef"]["kind"] == role.kind
            && binding["roleRef"]["name"] == role.name
            && binding["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
            && binding["subjects"].as_array().is_some_and(|subjects| {
                subjects.iter().any(|s| {
                    s["kind"] == "ServiceAccount"
                        && s["name"] == service_account
                        && s["namespace"] == namespace
                })
            })
    });
    assert!(
        bound,
        "no {binding_kind} binds {} {} to ServiceAccount {namespace}/{service_account}",
        role.kind, role.name
    );
}

// ---------------------------------------------------------------------------------------
// The end-to-end suite's request logs

/// The Lease namespace and name the end-to-end harness gives berth
/// (tests/operator_e2e/harness.rs: `--lease-namespace default`, `LEASE_NAME`). Lease
/// requests there stand for requests in the release namespace.
pub const E2E_LEASE_NAMESPACE: &str = "default";
pub const E2E_LEASE_NAME: &str = "berth";

/// Every `*.json` request log in `dir`: how many, and their requests.
pub fn read_request_logs(dir: &Path) -> (usize, Vec<RequestRecord>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; the end-to-end suite writes its request logs there",
            dir.display()
        )
    });
    let mut logs = 0;
    let mut requests = Vec::new();
    for path in entries.map(|e| e.expect("a directory entry").path()) {
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let log: Vec<RequestRecord> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        logs += 1;
        requests.extend(log);
    }
    (logs, requests)
}

/// The RBAC attributes of a resource request (None for a non-resource path). Lease
/// requests in the harness's Lease namespace are moved to the release namespace.
pub fn attributes_of(request: &RequestRecord) -> Option<Attributes> {
    if request.resource.is_empty() {
        return None;
    }
    let resource = match &request.subresource {
        Some(sub) => format!("{}/{sub}", request.resource),
        None => request.resource.clone(),
    };
    let mut namespace = request.namespace.clone();
    if request.group == "coordination.k8s.io" && namespace.as_deref() == Some(E2E_LEASE_NAMESPACE) {
        namespace = Some(NAMESPACE.to_string());
    }
    Some(Attributes {
        group: request.group.clone(),
        resource,
        verb: request.verb.clone(),
        namespace,
        name: request.name.clone(),
    })
}

/// The authorization checks the API server makes of a request beyond its own attributes:
/// a write of a ResourceClaim's status (which berth makes only to change its allocation
/// or `reservedFor`) is also checked for the same verb on the synthetic
/// `resourceclaims/binding` subresource, cluster-wide (kube-apiserver 1.37,
/// `pkg/registry/resource`'s `AuthorizedForBinding`).
pub fn synthetic_checks(attributes: &Attributes) -> Vec<Attributes> {
    let claim_status = attributes.group == "resource.k8s.io"
        && attributes.resource == "resourceclaims/status"
        && ["update", "patch"].contains(&attributes.verb.as_str());
    if !claim_status {
        return Vec::new();
    }
    vec![Attributes {
        group: attributes.group.clone(),
        resource: "resourceclaims/binding".to_string(),
        verb: attributes.verb.clone(),
        namespace: None,
        name: None,
    }]
}

/// Paths the default `system:discovery` and `system:public-info-viewer` ClusterRoles let
/// every authenticated client read.
pub fn is_public_discovery(path: &str) -> bool {
    [
        "/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi",
    ]
    .iter()
    .any(|prefix| path == *prefix || path.starts_with(&format!("{prefix}/")))
}
