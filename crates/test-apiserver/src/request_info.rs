//! What a request asks for, parsed from its method, path and query the way the real
//! server's `RequestInfoFactory` (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go)
//! does: API prefix, group, version, namespace, resource, name, subresource and the verb
//! (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`).

/// One request's parsed target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// False for `/version`, `/api`, `/apis/<g>/<v>` and everything outside `/api` and `/apis`.
    pub is_resource_request: bool,
    /// The verb; for a non-resource request the lower-cased HTTP method.
    pub verb: String,
    /// `api` or `apis` for resource requests.
    pub api_prefix: String,
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub subresource: Option<String>,
    pub name: Option<String>,
}

/// Subresources of a namespace that stay part of the `namespaces` resource path rather
/// than starting a namespaced resource (`/api/v1/namespaces/x/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// Parses `method` (`GET`, ...), `path` (without query) and the decoded query pairs.
    pub fn parse(method: &str, path: &str, query: &[(String, String)]) -> RequestInfo {
        let mut info = RequestInfo {
            verb: method.to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        // The real server treats anything shorter than `/api/v1/<resource>` as non-resource.
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return info;
        }
        info.api_prefix = parts[0].to_string();
        let mut rest = &parts[1..];
        if info.api_prefix == "apis" {
            if rest.len() < 3 {
                return info;
            }
            info.group = rest[0].to_string();
            rest = &rest[1..];
        }
        info.is_resource_request = true;
        info.version = rest[0].to_string();
        rest = &rest[1..];

        if rest.first() == Some(&"watch") {
            info.verb = "watch".to_string();
            rest = &rest[1..];
            if rest.is_empty() {
                info.is_resource_request = false;
                return info;
            }
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_string();
        }

        if rest.first() == Some(&"namespaces")
            && let Some(namespace) = rest.get(1)
        {
            info.namespace = Some((*namespace).to_string());
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        info.resource = rest.first().map(|r| r.to_string()).unwrap_or_default();
        info.name = rest.get(1).map(|n| n.to_string());
        info.subresource = rest.get(2).map(|s| s.to_string());

        if info.name.is_none() && info.verb == "get" {
            info.verb = if is_watch(query) { "watch" } else { "list" }.to_string();
        }
        if info.name.is_none() && matches!(info.verb.as_str(), "list" | "watch") {
            // A list or watch narrowed to one name by field selector is about that name.
            info.name = query
                .iter()
                .find(|(k, _)| k == "fieldSelector")
                .and_then(|(_, selector)| exact_name(selector));
        }
        if info.name.is_none() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        info
    }

    /// `pods` or `pods/binding`, as faults and RBAC name a resource.
    pub fn resource_path(&self) -> String {
        match &self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.clone(),
        }
    }
}

/// Whether the query asks for a watch (`watch=true`, `watch=1`, any value but false/0).
pub fn is_watch(query: &[(String, String)]) -> bool {
    query
        .iter()
        .find(|(k, _)| k == "watch")
        .is_some_and(|(_, v)| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"))
}

/// The name a field selector pins with `metadata.name=x` (or `==`), if any.
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let value = term.trim().strip_prefix("metadata.name")?;
        let value = value
            .strip_prefix("==")
            .or_else(|| value.strip_prefix('='))?;
        (!value.is_empty()).then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(method: &str, url: &str) -> RequestInfo {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let query: Vec<(String, String)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (k.to_string(), v.to_string())
            })
            .collect();
        RequestInfo::parse(method, path, &query)
    }

    struct Case {
        name: &'static str,
        method: &'static str,
        url: &'static str,
        verb: &'static str,
        group: &'static str,
        namespace: Option<&'static str>,
        resource: &'static str,
        name_: Option<&'static str>,
        subresource: Option<&'static str>,
    }

    #[test]
    fn parses_like_the_real_request_info_factory() {
        let cases = [
            Case {
                name: "namespaced list",
                method: "GET",
                url: "/api/v1/namespaces/default/pods",
                verb: "list",
                group: "",
                namespace: Some("default"),
                resource: "pods",
                name_: None,
                subresource: None,
            },
            Case {
                name: "all-namespace list",
                method: "GET",
                url: "/api/v1/pods",
                verb: "list",
                group: "",
                namespace: None,
                resource: "pods",
                name_: None,
                subresource: None,
            },
            Case {
                name: "watch by query",
                method: "GET",
                url: "/api/v1/pods?watch=true",
                verb: "watch",
                group: "",
                namespace: None,
                resource: "pods",
                name_: None,
                subresource: None,
            },
            Case {
                name: "watch=false is a list",
                method: "GET",
                url: "/api/v1/pods?watch=false",
                verb: "list",
                group: "",
                namespace: None,
                resource: "pods",
                name_: None,
                subresource: None,
            },
            Case {
                name: "legacy watch path",
                method: "GET",
                url: "/api/v1/watch/namespaces/ns/pods/p",
                verb: "watch",
                group: "",
                namespace: Some("ns"),
                resource: "pods",
                name_: Some("p"),
                subresource: None,
            },
            Case {
                name: "get",
                method: "GET",
                url: "/apis/berth.dev/v1alpha1/namespaces/ns/schedulerprofiles/x",
                verb: "get",
                group: "berth.dev",
                namespace: Some("ns"),
                resource: "schedulerprofiles",
                name_: Some("x"),
                subresource: None,
            },
            Case {
                name: "binding",
                method: "POST",
                url: "/api/v1/namespaces/ns/pods/p/binding",
                verb: "create",
                group: "",
                namespace: Some("ns"),
                resource: "pods",
                name_: Some("p"),
                subresource: Some("binding"),
            },
            Case {
                name: "status patch",
                method: "PATCH",
                url: "/api/v1/nodes/n1/status",
                verb: "patch",
                group: "",
                namespace: None,
                resource: "nodes",
                name_: Some("n1"),
                subresource: Some("status"),
            },
            Case {
                name: "namespace get",
                method: "GET",
                url: "/api/v1/namespaces/kube-system",
                verb: "get",
                group: "",
                namespace: Some("kube-system"),
                resource: "namespaces",
                name_: Some("kube-system"),
                subresource: None,
            },
            Case {
                name: "namespace status",
                method: "PUT",
                url: "/api/v1/namespaces/x/status",
                verb: "update",
                group: "",
                namespace: Some("x"),
                resource: "namespaces",
                name_: Some("x"),
                subresource: Some("status"),
            },
            Case {
                name: "delete collection",
                method: "DELETE",
                url: "/apis/coordination.k8s.io/v1/namespaces/ns/leases",
                verb: "deletecollection",
                group: "coordination.k8s.io",
                namespace: Some("ns"),
                resource: "leases",
                name_: None,
                subresource: None,
            },
            Case {
                name: "token review",
                method: "POST",
                url: "/apis/authentication.k8s.io/v1/tokenreviews",
                verb: "create",
                group: "authentication.k8s.io",
                namespace: None,
                resource: "tokenreviews",
                name_: None,
                subresource: None,
            },
            Case {
                name: "subject access review",
                method: "POST",
                url: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                verb: "create",
                group: "authorization.k8s.io",
                namespace: None,
                resource: "subjectaccessreviews",
                name_: None,
                subresource: None,
            },
            Case {
                name: "field selector names the object",
                method: "GET",
                url: "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp&watch=1",
                verb: "watch",
                group: "",
                namespace: Some("ns"),
                resource: "pods",
                name_: None,
                subresource: None,
            },
            Case {
                name: "decoded field selector names the object",
                method: "GET",
                url: "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name=p&watch=1",
                verb: "watch",
                group: "",
                namespace: Some("ns"),
                resource: "pods",
                name_: Some("p"),
                subresource: None,
            },
        ];
        for case in cases {
            let info = parse(case.method, case.url);
            assert!(info.is_resource_request, "{}", case.name);
            assert_eq!(info.verb, case.verb, "{}", case.name);
            assert_eq!(info.group, case.group, "{}", case.name);
            assert_eq!(info.namespace.as_deref(), case.namespace, "{}", case.name);
            assert_eq!(info.resource, case.resource, "{}", case.name);
            assert_eq!(info.name.as_deref(), case.name_, "{}", case.name);
            assert_eq!(
                info.subresource.as_deref(),
                case.subresource,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn discovery_paths_are_not_resource_requests() {
        for url in [
            "/version",
            "/api",
            "/api/v1",
            "/apis",
            "/apis/berth.dev",
            "/apis/berth.dev/v1alpha1",
            "/openapi/v2",
        ] {
            let info = parse("GET", url);
            assert!(!info.is_resource_request, "{url}");
            assert_eq!(info.verb, "get", "{url}");
        }
    }
}
