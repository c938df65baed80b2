//! The Helm chart (`charts/berth`, issue 9): what `helm lint` and `helm template` say,
//! what the rendered manifests contain, that the real kube-apiserver 1.37 accepts them
//! (a server-side dry run with strict field validation), that `berth run` works with
//! exactly the arguments and environment the chart gives it, on a real cluster with the
//! chart's ServiceAccount and RBAC (its HTTPS probes answer, `/metrics` only for the
//! service account the chart's metrics reader role binds), and that its RBAC is exactly
//! what berth uses (`rbac_replay`).
//!
//! helm and kubectl come from `scripts/install-kubectl.sh`; tests that need them skip
//! loudly without them, and fail on CI (`CI=true`). `rbac_replay` reads the request logs
//! the end-to-end suite writes when `BERTH_E2E_REQUEST_LOG_DIR` is set, so it runs after
//! that suite (`scripts/test.sh` runs it as its own step).

#[path = "chart/helm.rs"]
mod helm;
#[path = "chart/process.rs"]
mod process;
#[path = "chart/rbac.rs"]
mod rbac;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use helm::{Manifests, NAMESPACE, chart_dir, helm_or_skip, kubectl_or_skip, repo_root, utf8};
use process::{ChartProcess, POD_NAME, eventually, free_port, get_metrics, probe_status, within};
use rbac::{
    E2E_LEASE_NAME, Grant, Grants, Scope, attributes_of, is_public_discovery, read_request_logs,
    synthetic_checks,
};
use support::temp::TempDir;

/// The values file with every optional feature on.
fn all_features() -> PathBuf {
    repo_root().join("tests/chart/all-features.yaml")
}

/// The example values files the README points to.
fn example_values() -> Vec<PathBuf> {
    ["examples/values-ha.yaml", "examples/values-metrics.yaml"]
        .iter()
        .map(|p| repo_root().join(p))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The chart's files

#[test]
fn chart_app_version_is_the_crate_version() {
    let text = std::fs::read_to_string(chart_dir().join("Chart.yaml")).expect("read Chart.yaml");
    let chart: Value = serde_saphyr::from_str(&text).expect("Chart.yaml is YAML");
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["name"], "berth");
    assert_eq!(
        chart["appVersion"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "Chart.yaml appVersion must be the crate version in Cargo.toml (the image tag defaults to it)"
    );
}

#[test]
fn chart_crds_are_byte_identical_to_crds_dir() {
    let files = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .map(|path| {
                let name = path
                    .file_name()
                    .expect("a file name")
                    .to_string_lossy()
                    .into_owned();
                (name, std::fs::read(&path).expect("read a CRD file"))
            })
            .collect()
    };
    let generated = files(&repo_root().join("crds"));
    let chart = files(&chart_dir().join("crds"));
    assert!(!generated.is_empty(), "crds/ is empty");
    assert_eq!(
        chart.keys().collect::<Vec<_>>(),
        generated.keys().collect::<Vec<_>>(),
        "charts/berth/crds must hold exactly the files of crds/"
    );
    for (name, bytes) in &generated {
        assert!(
            chart[name] == *bytes,
            "charts/berth/crds/{name} differs from crds/{name}; copy it: cp crds/*.yaml charts/berth/crds/"
        );
    }
}

// ---------------------------------------------------------------------------------------
// helm lint and template

#[test]
fn helm_lint_strict_passes_with_default_all_features_and_example_values() {
    let Some(helm) =
        helm_or_skip("helm_lint_strict_passes_with_default_all_features_and_example_values")
    else {
        return;
    };
    let chart = chart_dir();
    let mut value_files = vec![None, Some(all_features())];
    value_files.extend(example_values().into_iter().map(Some));
    for values in value_files {
        let mut args = vec!["lint", "--strict", utf8(&chart)];
        if let Some(values) = &values {
            args.extend(["--values", utf8(values)]);
        }
        let lint = helm.run(&args).success();
        assert!(
            lint.stdout.contains("1 chart(s) linted, 0 chart(s) failed"),
            "helm {args:?}:\n{}",
            lint.stdout
        );
    }
}

/// `helm template` with the default values, or `None` after a skip.
fn default_render(test: &str) -> Option<Manifests> {
    helm_or_skip(test).map(|helm| helm.render(&[]))
}

#[test]
fn default_render_has_the_expected_objects_with_standard_labels() {
    let Some(manifests) =
        default_render("default_render_has_the_expected_objects_with_standard_labels")
    else {
        return;
    };
    assert_eq!(
        manifests.kinds(),
        [
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "Role",
            "RoleBinding",
            "SchedulerProfile",
            "Service",
            "ServiceAccount"
        ],
        "the default render: berth's ClusterRole and the metrics reader, berth's binding only \
         (no reader subjects); optional ServiceMonitor, PodDisruptionBudget and NetworkPolicy off"
    );
    for object in &manifests.objects {
        let labels = &object["metadata"]["labels"];
        for label in [
            "app.kubernetes.io/name",
            "app.kubernetes.io/instance",
            "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by",
            "helm.sh/chart",
        ] {
            assert!(
                labels[label].is_string(),
                "{} lacks label {label}: {labels}",
                object["kind"]
            );
        }
    }
    // The default profile: the upstream defaults under a scheduler name of its own.
    let profile = manifests.one("SchedulerProfile");
    assert_eq!(profile["metadata"]["name"], "berth-default");
    assert_eq!(profile["spec"], json!({}));
}

#[test]
fn default_deployment_runs_two_electing_replicas_named_by_the_downward_api() {
    let test = "default_deployment_runs_two_electing_replicas_named_by_the_downward_api";
    let Some(manifests) = default_render(test) else {
        return;
    };
    let deployment = manifests.one("Deployment");
    assert_eq!(deployment["metadata"]["namespace"], NAMESPACE);
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["serviceAccountName"],
        manifests.one("ServiceAccount")["metadata"]["name"]
    );
    assert_eq!(pod["priorityClassName"], "system-cluster-critical");

    // Leader election on a Lease named after the release; JSON logs.
    let args = manifests.args();
    assert!(args.contains(&"--leader-elect".to_string()), "{args:?}");
    assert_eq!(manifests.flag("lease-name").as_deref(), Some("berth"));
    assert_eq!(manifests.flag("log-format").as_deref(), Some("json"));
    // kube-scheduler keeps `default-scheduler` unless the values say it is disabled.
    assert!(
        !args.contains(&"--serve-default-scheduler".to_string()),
        "{args:?}"
    );

    // The image's entrypoint (`/berth run`) runs, from the image of the chart's
    // appVersion; the Lease's namespace and the replica's identity come from the
    // downward API.
    let container = manifests.container();
    assert!(container["command"].is_null(), "{container}");
    assert_eq!(
        container["image"],
        format!("berth:{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        field_ref(container, "POD_NAMESPACE").as_deref(),
        Some("metadata.namespace")
    );
    assert_eq!(
        field_ref(container, "POD_NAME").as_deref(),
        Some("metadata.name")
    );
}

#[test]
fn default_deployment_probes_the_metrics_port_and_spreads_replicas_over_nodes() {
    let test = "default_deployment_probes_the_metrics_port_and_spreads_replicas_over_nodes";
    let Some(manifests) = default_render(test) else {
        return;
    };
    assert_probes(&manifests, 10259);
    assert_eq!(
        manifests.flag("metrics-bind-address").as_deref(),
        Some("0.0.0.0:10259")
    );
    let container = manifests.container();
    assert_eq!(container["resources"]["requests"]["cpu"], "100m");
    assert!(container["resources"]["limits"]["memory"].is_string());

    let deployment = manifests.one("Deployment");
    let selector = &deployment["spec"]["selector"]["matchLabels"];
    let anti = &deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        [0];
    assert_eq!(
        anti["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    assert_eq!(
        anti["podAffinityTerm"]["labelSelector"]["matchLabels"],
        *selector
    );

    // The metrics Service selects every replica.
    let service = manifests.one("Service");
    assert_eq!(service["spec"]["selector"], *selector);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
}

#[test]
fn default_deployment_is_non_root_read_only_without_capabilities() {
    let Some(manifests) =
        default_render("default_deployment_is_non_root_read_only_without_capabilities")
    else {
        return;
    };
    let pod_security = &manifests.one("Deployment")["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(pod_security["runAsNonRoot"], true);
    assert_eq!(pod_security["runAsUser"], 65532);
    assert_eq!(pod_security["seccompProfile"]["type"], "RuntimeDefault");
    let security = &manifests.container()["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
}

#[test]
fn image_digest_pins_the_image_instead_of_the_tag() {
    let Some(helm) = helm_or_skip("image_digest_pins_the_image_instead_of_the_tag") else {
        return;
    };
    let digest = format!("sha256:{}", "ab".repeat(32));
    let pinned = helm.render(&["--set", &format!("image.digest={digest}")]);
    assert_eq!(pinned.container()["image"], format!("berth@{digest}"));
}

// ---------------------------------------------------------------------------------------
// The metrics port: HTTPS, /metrics for authorized scrapers only (issue 20)

#[test]
fn default_render_is_the_secure_metrics_setup() {
    let Some(helm) = helm_or_skip("default_render_is_the_secure_metrics_setup") else {
        return;
    };
    let text = helm.template(&[]).expect("helm template");
    assert!(
        !text.contains("metrics-insecure"),
        "the chart never serves the metrics port over plain HTTP:\n{text}"
    );
    let manifests = Manifests::parse(&text);
    assert_probes(&manifests, 10259);
    assert_eq!(
        manifests.flag("metrics-max-connections").as_deref(),
        Some("256")
    );
    // The self-signed certificate berth generates: no certificate files, no volume.
    for flag in ["tls-cert-file", "tls-private-key-file"] {
        assert_eq!(manifests.flag(flag), None, "--{flag} without metrics.tls");
    }
    assert!(
        manifests.one("Deployment")["spec"]["template"]["spec"]["volumes"].is_null(),
        "no volume without metrics.tls.secretName"
    );

    // berth's ClusterRole lets it create the two reviews, and nothing else of their groups.
    let grants = Grants::from_manifests(&manifests, "berth", NAMESPACE);
    for group in ["authentication.k8s.io", "authorization.k8s.io"] {
        let granted: Vec<(String, String)> = grants
            .granted()
            .into_iter()
            .filter(|(_, g, _, _)| g == group)
            .map(|(scope, _, resource, verb)| {
                assert_eq!(scope, Scope::Cluster, "{group} {resource} {verb}");
                (resource, verb)
            })
            .collect();
        let review = match group {
            "authentication.k8s.io" => "tokenreviews",
            _ => "subjectaccessreviews",
        };
        assert_eq!(
            granted,
            [(review.to_string(), "create".to_string())],
            "berth's ClusterRole grants exactly create on {group} {review} \
             (src/observability/server/auth.rs)"
        );
    }

    // The ClusterRole scrapers are bound to: get on /metrics and nothing else; bound to
    // nobody until metrics.reader.subjects names someone.
    assert_eq!(
        grants.metrics_reader.as_deref(),
        Some("berth-metrics-reader")
    );
    let reader = named(&manifests, "ClusterRole", "berth-metrics-reader");
    assert_eq!(
        reader["rules"],
        json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    );
    let bindings: Vec<&Value> = manifests
        .all("ClusterRoleBinding")
        .iter()
        .map(|b| &b["metadata"]["name"])
        .collect();
    assert_eq!(
        bindings,
        [&json!("berth")],
        "berth's binding only: the reader's needs metrics.reader.subjects"
    );
}

#[test]
fn metrics_tls_secret_is_mounted_as_a_directory_for_the_certificate_flags() {
    let Some(helm) =
        helm_or_skip("metrics_tls_secret_is_mounted_as_a_directory_for_the_certificate_flags")
    else {
        return;
    };
    let manifests = helm.render(&["--set", "metrics.tls.secretName=berth-metrics-tls"]);
    let dir = assert_secret_mounted_for_the_certificate_flags(&manifests, "berth-metrics-tls");
    assert!(
        dir.starts_with('/') && !dir.ends_with('/'),
        "a directory path: {dir}"
    );
    assert_probes(&manifests, 10259);
    assert!(
        manifests.args().iter().all(|a| a != "--metrics-insecure"),
        "{:?}",
        manifests.args()
    );
}

/// The Secret `secret_name` is a pod volume, mounted read-only as a directory whose
/// `tls.crt` and `tls.key` are `--tls-cert-file` and `--tls-private-key-file`; returns
/// the directory.
fn assert_secret_mounted_for_the_certificate_flags(
    manifests: &Manifests,
    secret_name: &str,
) -> String {
    let pod = &manifests.one("Deployment")["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .and_then(|volumes| {
            volumes
                .iter()
                .find(|v| v["secret"]["secretName"] == secret_name)
        })
        .unwrap_or_else(|| panic!("no volume of Secret {secret_name}: {}", pod["volumes"]));
    let container = manifests.container();
    let mount = container["volumeMounts"]
        .as_array()
        .and_then(|mounts| mounts.iter().find(|m| m["name"] == volume["name"]))
        .unwrap_or_else(|| panic!("volume {} is not mounted: {container}", volume["name"]));
    assert_eq!(mount["readOnly"], true, "{mount}");
    assert!(
        mount["subPath"].is_null(),
        "the directory, not a subPath: the kubelet never updates a subPath mount when the \
         Secret rotates: {mount}"
    );
    let dir = mount["mountPath"]
        .as_str()
        .expect("a mountPath")
        .to_string();
    assert_eq!(
        manifests.flag("tls-cert-file"),
        Some(format!("{dir}/tls.crt"))
    );
    assert_eq!(
        manifests.flag("tls-private-key-file"),
        Some(format!("{dir}/tls.key"))
    );
    dir
}

/// The object of `kind` named `name`.
fn named<'a>(manifests: &'a Manifests, kind: &str, name: &str) -> &'a Value {
    manifests
        .all(kind)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}; kinds: {:?}", manifests.kinds()))
}

#[test]
fn the_chart_refuses_an_insecure_metrics_port_and_subjects_without_the_reader_role() {
    let Some(helm) = helm_or_skip(
        "the_chart_refuses_an_insecure_metrics_port_and_subjects_without_the_reader_role",
    ) else {
        return;
    };
    let subjects = "metrics.reader.subjects[0].kind=Group,metrics.reader.subjects[0].name=scrapers";
    for (sets, complaint) in [
        (
            vec!["extraArgs[0]=--metrics-insecure"],
            "does not serve metrics over plain HTTP",
        ),
        (
            vec!["rbac.create=false", subjects],
            "metrics.reader.subjects needs rbac.create and metrics.reader.create",
        ),
        (
            vec!["metrics.reader.create=false", subjects],
            "metrics.reader.subjects needs rbac.create and metrics.reader.create",
        ),
    ] {
        let args: Vec<&str> = sets.iter().flat_map(|set| ["--set", set]).collect();
        let stderr = helm
            .template(&args)
            .map(|out| panic!("helm template {args:?} must fail; it rendered:\n{out}"))
            .unwrap_err()
            .failure();
        assert!(stderr.contains(complaint), "{args:?}: {stderr}");
    }
}

/// The `fieldPath` of env var `name`'s downward-API source.
fn field_ref(container: &Value, name: &str) -> Option<String> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["valueFrom"]["fieldRef"]["fieldPath"].as_str())
        .map(str::to_string)
}

/// Liveness on /healthz and readiness on /readyz, over HTTPS, on the named container
/// port that is the port of `--metrics-bind-address` (`port`).
fn assert_probes(manifests: &Manifests, port: u16) {
    let container = manifests.container();
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(
            container_port(container, &container[probe]["httpGet"]["port"]),
            port,
            "{probe}"
        );
        assert_eq!(
            container[probe]["httpGet"]["scheme"], "HTTPS",
            "{probe}: the metrics port serves HTTPS only"
        );
    }
    let bind = manifests
        .flag("metrics-bind-address")
        .expect("--metrics-bind-address");
    assert!(
        bind.ends_with(&format!(":{port}")),
        "{bind} must listen on {port}"
    );
}

/// The container port a probe or Service names (by name or number).
fn container_port(container: &Value, port: &Value) -> u16 {
    let number = match port {
        Value::String(name) => container["ports"]
            .as_array()
            .and_then(|ports| ports.iter().find(|p| p["name"] == name.as_str()))
            .unwrap_or_else(|| panic!("no container port named {name}"))["containerPort"]
            .as_u64(),
        other => other.as_u64(),
    };
    number
        .and_then(|n| u16::try_from(n).ok())
        .unwrap_or_else(|| panic!("bad port {port}"))
}

#[test]
fn all_features_render_every_optional_object_wired_to_the_deployment() {
    let Some(helm) =
        helm_or_skip("all_features_render_every_optional_object_wired_to_the_deployment")
    else {
        return;
    };
    let manifests = helm.render(&["--values", utf8(&all_features())]);
    let kinds: BTreeSet<String> = manifests.kinds().into_iter().collect();
    for kind in ["ServiceMonitor", "PodDisruptionBudget", "NetworkPolicy"] {
        assert!(kinds.contains(kind), "{kind} missing: {kinds:?}");
    }
    assert_eq!(manifests.all("SchedulerProfile").len(), 3);
    let deployment = manifests.one("Deployment");
    assert_eq!(
        deployment["metadata"]["name"], "berth-scheduler",
        "fullnameOverride"
    );
    let selector = &deployment["spec"]["selector"]["matchLabels"];
    assert_eq!(selector["app.kubernetes.io/name"], "sched", "nameOverride");
    assert_eq!(
        manifests.container()["image"],
        "registry.example.com/platform/berth:0.1.0-test"
    );
    assert_eq!(
        manifests.flag("lease-name").as_deref(),
        Some("berth-leader")
    );
    assert_eq!(
        manifests.flag("metrics-bind-address").as_deref(),
        Some("[::]:18080")
    );
    assert_eq!(manifests.flag("parallelism").as_deref(), Some("4"));
    assert!(
        manifests
            .args()
            .contains(&"--serve-default-scheduler".to_string()),
        "serveDefaultScheduler: true passes the flag: {:?}",
        manifests.args()
    );
    assert_probes(&manifests, 18080);
    assert_eq!(
        manifests.flag("metrics-max-connections").as_deref(),
        Some("64")
    );
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["imagePullSecrets"][0]["name"], "registry-credentials");
    // The metrics port's certificate Secret and, next to it, a Secret for a metric
    // plugin's bearerTokenFile, mounted read-only.
    assert_secret_mounted_for_the_certificate_flags(&manifests, "berth-metrics-tls");
    let volume = pod["volumes"]
        .as_array()
        .and_then(|volumes| volumes.iter().find(|v| v["name"] == "prometheus-token"))
        .unwrap_or_else(|| panic!("extraVolumes missing: {}", pod["volumes"]));
    assert_eq!(volume["secret"]["secretName"], "prometheus-token");
    let mount = manifests.container()["volumeMounts"]
        .as_array()
        .and_then(|mounts| mounts.iter().find(|m| m["name"] == "prometheus-token"))
        .unwrap_or_else(|| panic!("extraVolumeMounts missing: {}", manifests.container()));
    assert_eq!(
        (&mount["mountPath"], &mount["readOnly"]),
        (&json!("/var/run/secrets/prometheus"), &json!(true))
    );
    let anti =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(anti["labelSelector"]["matchLabels"], *selector);

    // Each optional object selects berth's pods.
    let service = manifests.one("Service");
    assert_eq!(service["spec"]["selector"], *selector);
    assert_eq!(
        manifests.one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        *selector
    );
    assert_eq!(
        manifests.one("PodDisruptionBudget")["spec"]["maxUnavailable"],
        1
    );
    let policy = manifests.one("NetworkPolicy");
    assert_eq!(policy["spec"]["podSelector"]["matchLabels"], *selector);
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["port"], "metrics");
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    let monitor = manifests.one("ServiceMonitor");
    assert_eq!(monitor["metadata"]["labels"]["release"], "prometheus");
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
    assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");
    assert_eq!(monitor["spec"]["endpoints"][0]["scheme"], "https");
    assert_eq!(
        monitor["spec"]["endpoints"][0]["tlsConfig"],
        json!({
            "ca": {"secret": {"name": "berth-metrics-tls", "key": "ca.crt"}},
            "serverName": "berth-scheduler-metrics.berth-system.svc",
        }),
        "metrics.serviceMonitor.tlsConfig replaces insecureSkipVerify"
    );
    // The scrapers bound to the metrics reader: a ServiceAccount and a Group (whose
    // apiGroup the chart fills in).
    let binding = named(
        &manifests,
        "ClusterRoleBinding",
        "berth-scheduler-metrics-reader",
    );
    assert_eq!(binding["roleRef"]["name"], "berth-scheduler-metrics-reader");
    assert_eq!(
        binding["subjects"],
        json!([
            {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"},
            {"kind": "Group", "name": "metrics-readers", "apiGroup": "rbac.authorization.k8s.io"},
        ])
    );
    let grants = Grants::from_manifests(&manifests, "berth-sa", NAMESPACE);
    assert_eq!(
        grants.metrics_reader.as_deref(),
        Some("berth-scheduler-metrics-reader")
    );
    for (label, value) in monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels")
    {
        assert_eq!(
            &service["metadata"]["labels"][label], value,
            "the ServiceMonitor selects the Service"
        );
    }
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"],
        json!([NAMESPACE])
    );
}

#[test]
fn example_values_files_render() {
    let Some(helm) = helm_or_skip("example_values_files_render") else {
        return;
    };
    let ha = helm.render(&["--values", utf8(&example_values()[0])]);
    let pod = &ha.one("Deployment")["spec"]["template"]["spec"];
    assert!(ha.one("Deployment")["spec"]["replicas"].as_u64() >= Some(2));
    assert!(
        pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            .is_array()
    );
    ha.one("PodDisruptionBudget");
    let metrics = helm.render(&["--values", utf8(&example_values()[1])]);
    metrics.one("NetworkPolicy");
    // Scraped as kube-prometheus scrapes kube-scheduler: HTTPS with Prometheus's own
    // service account token; the self-signed certificate is not verified.
    let endpoint = &metrics.one("ServiceMonitor")["spec"]["endpoints"][0];
    assert_eq!(endpoint["scheme"], "https", "{endpoint}");
    assert_eq!(
        endpoint["bearerTokenFile"], "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "{endpoint}"
    );
    assert_eq!(
        endpoint["tlsConfig"],
        json!({"insecureSkipVerify": true}),
        "{endpoint}"
    );
    assert!(
        metrics.flag("tls-cert-file").is_none(),
        "the example uses the self-signed certificate"
    );
    // kube-prometheus-stack's Prometheus service account may get /metrics.
    let binding = named(&metrics, "ClusterRoleBinding", "berth-metrics-reader");
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
               "name": "berth-metrics-reader"})
    );
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "kube-prometheus-stack-prometheus",
                "namespace": "monitoring"}])
    );
    let grants = Grants::from_manifests(&metrics, "berth", NAMESPACE);
    assert_eq!(
        grants.metrics_reader.as_deref(),
        Some("berth-metrics-reader")
    );
}

/// The NOTES `helm install --dry-run=client` prints with `extra` arguments.
fn install_notes(helm: &helm::Helm, extra: &[&str]) -> String {
    let chart = chart_dir();
    let mut args = vec![
        "install",
        "berth",
        utf8(&chart),
        "--namespace",
        NAMESPACE,
        "--dry-run=client",
    ];
    args.extend_from_slice(extra);
    let install = helm.run(&args).success();
    install
        .stdout
        .split_once("NOTES:")
        .map(|(_, notes)| notes.to_string())
        .unwrap_or_else(|| panic!("no NOTES in:\n{}", install.stdout))
}

#[test]
fn notes_show_a_workload_using_the_charts_profile() {
    let Some(helm) = helm_or_skip("notes_show_a_workload_using_the_charts_profile") else {
        return;
    };
    // --set replaces the whole list: the name is given again.
    let notes = install_notes(
        &helm,
        &[
            "--set",
            "profiles[0].name=berth-default,profiles[0].spec.schedulerName=batch",
        ],
    );
    assert!(
        notes.contains("- berth-default (schedulerName: batch)"),
        "{notes}"
    );
    assert!(notes.contains("schedulerName: batch\n"), "{notes}");
    assert!(notes.contains("kubectl get schedulerprofiles"), "{notes}");
}

#[test]
fn notes_tell_how_to_scrape_the_secure_metrics_port() {
    let Some(helm) = helm_or_skip("notes_tell_how_to_scrape_the_secure_metrics_port") else {
        return;
    };
    let curl = r#"curl -sk -H "Authorization: Bearer $TOKEN" https://127.0.0.1:10259/metrics"#;
    // Default values: nobody is bound yet; the notes say how to bind.
    let notes = install_notes(&helm, &[]);
    for expected in [
        "serves /metrics over HTTPS on port 10259 (self-signed certificate)",
        "kubectl create clusterrolebinding berth-metrics-reader \\\n      --clusterrole=berth-metrics-reader",
        "kubectl -n berth-system port-forward deploy/berth 10259 &",
        "create token <service-account>",
        curl,
    ] {
        assert!(
            notes.contains(expected),
            "NOTES lack {expected:?}:\n{notes}"
        );
    }
    assert!(!notes.contains("http://"), "no plain HTTP: {notes}");
    // The metrics example: Prometheus's service account is bound; its token is the one
    // to try.
    let example = example_values()[1].clone();
    let notes = install_notes(&helm, &["--values", utf8(&example)]);
    for expected in [
        "ClusterRole berth-metrics-reader grants that permission, bound to:\n  - ServiceAccount \
         monitoring/kube-prometheus-stack-prometheus",
        "as the ServiceMonitor berth does",
        "TOKEN=$(kubectl -n monitoring create token kube-prometheus-stack-prometheus)",
        curl,
    ] {
        assert!(
            notes.contains(expected),
            "NOTES lack {expected:?}:\n{notes}"
        );
    }
}

#[test]
fn values_schema_rejects_unknown_keys_and_invalid_values() {
    let Some(helm) = helm_or_skip("values_schema_rejects_unknown_keys_and_invalid_values") else {
        return;
    };
    for (set, complaint) in [
        ("imagee.tag=x", "imagee"),
        ("image.tagg=x", "tagg"),
        ("replicaCount=0", "replicaCount"),
        ("logFormat=yaml", "logFormat"),
        ("podAntiAffinity=sometimes", "podAntiAffinity"),
        ("metrics.port=70000", "port"),
        ("serveDefaultScheduler=maybe", "serveDefaultScheduler"),
        ("parallelism=100000", "parallelism"),
        ("profiles[0].name=Not_A_Name", "name"),
        ("metrics.maxConnections=0", "maxConnections"),
        ("metrics.maxConnections=65537", "maxConnections"),
        ("metrics.tls.secretNam=x", "secretNam"),
        ("metrics.tls.secretName=Not_A_Name", "secretName"),
        ("metrics.insecure=true", "insecure"),
        ("metrics.reader.create=maybe", "create"),
        (
            "metrics.reader.subjects[0].kind=Robot,metrics.reader.subjects[0].name=r",
            "kind",
        ),
        (
            "metrics.reader.subjects[0].kind=ServiceAccount,metrics.reader.subjects[0].name=p",
            "namespace",
        ),
        ("metrics.serviceMonitor.tlsConfig=skip", "tlsConfig"),
    ] {
        let stderr = helm
            .template(&["--set", set])
            .map(|out| panic!("helm template --set {set} must fail; it rendered:\n{out}"))
            .unwrap_err()
            .failure();
        assert!(
            stderr.contains("values don't meet the specifications of the schema")
                && stderr.contains(complaint),
            "--set {set}: {stderr}"
        );
    }
}

#[test]
fn leader_election_off_needs_a_single_replica() {
    let Some(helm) = helm_or_skip("leader_election_off_needs_a_single_replica") else {
        return;
    };
    let stderr = helm
        .template(&["--set", "leaderElection.enabled=false"])
        .map(|_| panic!("two replicas without leader election must not render"))
        .unwrap_err()
        .failure();
    assert!(stderr.contains("double-book"), "{stderr}");
    let single = helm.render(&[
        "--set",
        "leaderElection.enabled=false",
        "--set",
        "replicaCount=1",
    ]);
    assert!(!single.args().contains(&"--leader-elect".to_string()));
    assert!(single.all("Role").is_empty(), "no Lease, no Role");
}

#[test]
fn rbac_has_no_wildcards_and_grants_leases_only_on_berths_lease_in_the_release_namespace() {
    let Some(helm) = helm_or_skip(
        "rbac_has_no_wildcards_and_grants_leases_only_on_berths_lease_in_the_release_namespace",
    ) else {
        return;
    };
    let manifests = helm.render(&[]);
    let grants = Grants::from_manifests(&manifests, "berth", NAMESPACE);
    for (scope, rule) in &grants.rules {
        assert!(
            !rule.has_wildcard(),
            "{scope:?} rule with a wildcard: {rule:?}"
        );
        let leases = rule.api_groups.contains(&"coordination.k8s.io".to_string());
        assert_eq!(
            leases,
            *scope == Scope::Namespace(NAMESPACE.to_string()),
            "Leases are granted by the Role in the release namespace, nothing else is: {scope:?} {rule:?}"
        );
        if leases && rule.verbs.iter().any(|v| v != "create") {
            assert_eq!(
                rule.resource_names,
                ["berth"],
                "get/patch only on berth's Lease"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// kubectl

/// prometheus-operator's ServiceMonitor kind, as a cluster with that operator serves it,
/// without its schema (the CRD is not in this repository): the server keeps any fields.
fn service_monitor_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "names": {"kind": "ServiceMonitor", "listKind": "ServiceMonitorList", "plural": "servicemonitors", "singular": "servicemonitor"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_dry_run_server_validates_and_accepts_the_rendered_chart() {
    const TEST: &str = "kubectl_dry_run_server_validates_and_accepts_the_rendered_chart";
    let Some(helm) = helm_or_skip(TEST) else {
        return;
    };
    let Some(kubectl) = kubectl_or_skip(TEST) else {
        return;
    };
    // The real kube-apiserver 1.37, with what `helm install` puts there before the
    // templates: the chart's CRDs (crds/, byte-identical to the repository's, which the
    // server checks as it establishes them) and the release namespace; and the
    // ServiceMonitor kind of a cluster running prometheus-operator.
    let Some(cluster) = support::kube::start_apiserver_or_skip(TEST).await else {
        return;
    };
    let client = cluster.admin_client().await.expect("an admin client");
    support::kube::install_crds(&client).await;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    create(&crds, service_monitor_crd()).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    create(&namespaces, json!({"metadata": {"name": NAMESPACE}})).await;

    let scratch = TempDir::new("chart-kubectl");
    let kubectl_apply = |file: &Path| {
        let mut command = Command::new(&kubectl);
        command
            .args([
                "apply",
                "--dry-run=server",
                "--validate=strict",
                "-f",
                utf8(file),
            ])
            .args(["--kubeconfig", utf8(cluster.admin_kubeconfig())])
            .args(["--cache-dir", utf8(&scratch.join("cache"))]);
        tokio::task::block_in_place(|| helm::run(command, Duration::from_secs(60)))
    };
    // kubectl creates every object in a server-side dry run: admitted and validated,
    // strictly (an unknown or duplicate field fails), and not stored.
    let mut applied_kinds = BTreeSet::new();
    for (what, values) in [
        ("default values", None),
        ("every optional feature", Some(all_features())),
    ] {
        let mut args = vec![];
        if let Some(values) = &values {
            args.extend(["--values", utf8(values)]);
        }
        let text = helm
            .template(&args)
            .unwrap_or_else(|run| panic!("helm template: {}", run.stderr));
        let file = scratch.write("rendered.yaml", &text);
        let applied = kubectl_apply(&file).success();
        let created: Vec<&str> = applied
            .stdout
            .lines()
            .filter(|l| l.ends_with(" created (server dry run)"))
            .collect();
        let manifests = Manifests::parse(&text);
        assert_eq!(
            created.len(),
            manifests.objects.len(),
            "{what}: the server must accept a create of every object:\n{}\n{}",
            applied.stdout,
            applied.stderr
        );
        assert_eq!(applied.stderr, "", "{what}: no warning from the server");
        applied_kinds.extend(manifests.kinds());
    }
    for kind in [
        "Deployment",
        "ServiceMonitor",
        "SchedulerProfile",
        "ClusterRole",
    ] {
        assert!(
            applied_kinds.contains(kind),
            "{kind} was checked: {applied_kinds:?}"
        );
    }
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), NAMESPACE);
    let stored = within("listing deployments", deployments.list(&Default::default()))
        .await
        .expect("a list of deployments");
    assert!(stored.items.is_empty(), "a dry run stores nothing");

    // The validation is the server's: strict decoding refuses a field the Deployment
    // schema lacks, and berth's CRD schema a wrong type.
    let rendered = helm.template(&[]).expect("helm template");
    let broken = rendered.replacen("  replicas: 2\n", "  replicas: 2\n  replica: 2\n", 1);
    assert_ne!(broken, rendered);
    let file = scratch.write("broken.yaml", &broken);
    let stderr = kubectl_apply(&file).failure();
    assert!(
        stderr.contains("strict decoding error: unknown field \"spec.replica\""),
        "{stderr}"
    );
    let profile = "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: x\n\
                   spec:\n  percentageOfNodesToScore: many\n";
    let file = scratch.write("broken-profile.yaml", profile);
    let stderr = kubectl_apply(&file).failure();
    assert!(
        stderr.contains("spec.percentageOfNodesToScore: Invalid value: \"string\""),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------
// berth run as the chart starts it

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_run_with_the_rendered_args_and_env_schedules_a_pod() {
    const TEST: &str = "berth_run_with_the_rendered_args_and_env_schedules_a_pod";
    let Some(helm) = helm_or_skip(TEST) else {
        return;
    };
    // The metrics port is changed because the test needs a free one; a Prometheus
    // service account is bound to the metrics reader.
    let port = free_port();
    let manifests = helm.render(&[
        "--set",
        &format!("metrics.port={port}"),
        "--set",
        "metrics.reader.subjects[0].kind=ServiceAccount,metrics.reader.subjects[0].name=prometheus,\
         metrics.reader.subjects[0].namespace=monitoring",
    ]);
    assert_probes(&manifests, port);
    let Some(kubectl) = kubectl_or_skip(TEST) else {
        return;
    };
    let Some((cluster, client)) = installed_release(TEST, &kubectl, &manifests).await else {
        return;
    };
    // berth has the chart's ServiceAccount and nothing else; the metrics reader's
    // subject and a service account the chart binds to nothing get real tokens, which
    // kube-apiserver reviews for berth (TokenReview, SubjectAccessReview).
    let account = manifests.one("ServiceAccount")["metadata"]["name"]
        .as_str()
        .expect("the chart's ServiceAccount")
        .to_string();
    let kubeconfig = cluster
        .service_account_kubeconfig(NAMESPACE, &account, Duration::from_secs(3600))
        .await
        .expect("a token of the chart's ServiceAccount");
    let token = |namespace: &'static str, name: &'static str| {
        let client = client.clone();
        async move {
            kube_cluster::service_account_token(&client, namespace, name, Duration::from_secs(3600))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let prometheus_token = token("monitoring", "prometheus").await;
    let nosy_token = token("default", "nosy").await;

    let mut berth = ChartProcess::spawn(&manifests, &kubeconfig);
    let container = manifests.container().clone();
    eventually(
        "berth answers its readiness probe as the kubelet sends it",
        &mut berth,
        || {
            let container = container.clone();
            async move {
                let probe = move || probe_status(&container, "readinessProbe", port);
                match tokio::task::spawn_blocking(probe).await {
                    Ok(Ok(200)) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            }
        },
    )
    .await;

    // /metrics over HTTPS: only for the bound service account's token.
    for (token, expected) in [
        (None, 401),
        (Some("made-up-token".to_string()), 401),
        (Some(nosy_token), 403),
        (Some(prometheus_token), 200),
    ] {
        let sent = token.clone();
        let response = tokio::task::spawn_blocking(move || get_metrics(port, sent.as_deref()))
            .await
            .expect("the request task")
            .unwrap_or_else(|e| panic!("GET /metrics with token {token:?}: {e}"));
        assert_eq!(
            response.status, expected,
            "GET /metrics over HTTPS with token {token:?}: {}",
            response.body
        );
        if expected == 200 {
            assert!(response.body.contains("berth_leader"), "{}", response.body);
        }
    }

    // A pod for the chart's profile is bound.
    let scheduler = manifests.one("SchedulerProfile")["metadata"]["name"].clone();
    let nodes: Api<Node> = Api::all(client.clone());
    create(
        &nodes,
        json!({
            "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            },
        }),
    )
    .await;
    support::kube::wait_nodes_ready(&client).await;
    support::kube::eventually("namespace default has its ServiceAccount", || {
        kube_cluster::default_service_account(&client, "default")
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    create(
        &pods,
        json!({
            "metadata": {"name": "web-1", "namespace": "default"},
            "spec": {
                "schedulerName": scheduler,
                "containers": [{"name": "web", "image": "nginx",
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            },
        }),
    )
    .await;
    eventually("the pod is bound to node-1", &mut berth, || {
        let pods = pods.clone();
        async move {
            let pod = pods.get("web-1").await.map_err(|e| e.to_string())?;
            match pod.spec.and_then(|s| s.node_name) {
                Some(node) if node == "node-1" => Ok(()),
                other => Err(format!("nodeName {other:?}")),
            }
        }
    })
    .await;

    // The downward-API variables did their job: the Lease is in the pod's namespace
    // (where the chart's Role grants it) and names the pod.
    let lease_name = manifests.flag("lease-name").expect("--lease-name");
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let holder = within("reading the lease", leases.get(&lease_name))
        .await
        .expect("the Lease exists in the release namespace")
        .spec
        .and_then(|s| s.holder_identity);
    assert_eq!(holder.as_deref(), Some(POD_NAME));

    // --log-format=json: every log line is a JSON object.
    berth.terminate_cleanly().await;
    let logs = berth.logs();
    assert!(!logs.is_empty(), "berth logged nothing");
    for line in &logs {
        let parsed: Result<Value, _> = serde_json::from_str(line);
        assert!(
            parsed.is_ok_and(|v| v.is_object()),
            "not a JSON log line: {line}"
        );
    }
}

/// A real cluster (etcd, kube-apiserver, kube-controller-manager, kwok) after what
/// `helm install` does before berth starts: the chart's CRDs (identical to `crds/`), the
/// release namespace, and every rendered object but the Deployment, whose container the
/// test runs itself. `None` after a loud skip where Go is missing (never on CI).
async fn installed_release(
    test: &str,
    kubectl: &Path,
    manifests: &Manifests,
) -> Option<(kube_cluster::KubeCluster, kube::Client)> {
    let cluster = support::kube::start_or_skip(test, kube_cluster::Options::default()).await?;
    let client = cluster.admin_client().await.expect("an admin client");
    support::kube::install_crds(&client).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    create(&namespaces, json!({"metadata": {"name": NAMESPACE}})).await;
    let release: String = manifests
        .objects
        .iter()
        .filter(|o| o["kind"] != "Deployment")
        .map(|o| format!("---\n{o}\n"))
        .collect();
    let scratch = TempDir::new("chart-release");
    let file = scratch.write("release.yaml", &release);
    let mut command = Command::new(kubectl);
    command
        .args(["apply", "-f", utf8(&file)])
        .args(["--kubeconfig", utf8(cluster.admin_kubeconfig())])
        .args(["--cache-dir", utf8(&scratch.join("cache"))]);
    tokio::task::block_in_place(|| helm::run(command, Duration::from_secs(60))).success();
    Some((cluster, client))
}

/// Creates `object` through `api`; fails the test when the server refuses it.
async fn create<K>(api: &Api<K>, object: Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let typed: K = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("not a valid object ({e}): {object}"));
    within(
        "creating an object",
        api.create(&PostParams::default(), &typed),
    )
    .await
    .unwrap_or_else(|e| panic!("creating {object}: {e}"));
}

// ---------------------------------------------------------------------------------------
// RBAC replay

/// Permissions berth's code needs that no end-to-end scenario exercises yet, with the
/// code that needs them. The replay asserts they are still unexercised, so this list
/// shrinks as soon as a scenario covers one.
/// Entries: (API group, resource, verb, the code that needs it).
const NOT_EXERCISED_BY_E2E: &[(&str, &str, &str, &str)] = &[
    (
        "resource.k8s.io",
        "resourceclaims",
        "get",
        "DynamicResources' PreBind reads a claim again after a conflict (src/operator/claim_writer.rs)",
    ),
    (
        "resource.k8s.io",
        "resourceclaims",
        "delete",
        "DynamicResources' PostFilter deletes a stale extended-resource claim (src/operator/claim_writer.rs)",
    ),
    (
        "resource.k8s.io",
        "resourceclaims/status",
        "patch",
        "DynamicResources' Unreserve removes a pod from reservedFor (src/operator/claim_writer.rs)",
    ),
    (
        "resource.k8s.io",
        "resourceclaims/binding",
        "patch",
        "the API server's check of Unreserve's status patch (src/operator/claim_writer.rs)",
    ),
];

#[test]
fn rbac_replay() {
    let Some(dir) = std::env::var_os("BERTH_E2E_REQUEST_LOG_DIR").map(PathBuf::from) else {
        helm::skip(
            "rbac_replay",
            "BERTH_E2E_REQUEST_LOG_DIR is not set; run the end-to-end suite with it set first, \
             as scripts/test.sh does",
        );
        return;
    };
    let Some(helm) = helm_or_skip("rbac_replay") else {
        return;
    };
    let manifests = helm.render(&[
        "--set",
        &format!("leaderElection.leaseName={E2E_LEASE_NAME}"),
    ]);
    let service_account = manifests.one("ServiceAccount")["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    let grants = Grants::from_manifests(&manifests, &service_account, NAMESPACE);

    let (logs, requests) = read_request_logs(&dir);
    assert!(
        logs >= 5 && !requests.is_empty(),
        "{}: {logs} request logs with {} requests by berth; the end-to-end suite writes one per test \
         (is berth's User-Agent {} still set?)",
        dir.display(),
        requests.len(),
        berth::operator::USER_AGENT
    );

    // Denied requests by (verb, resource), with a count and the first one as example.
    let mut denied: BTreeMap<(String, String, String), (usize, String)> = BTreeMap::new();
    let mut used: BTreeSet<Grant> = BTreeSet::new();
    for request in &requests {
        let Some(attributes) = attributes_of(request) else {
            assert!(
                is_public_discovery(&request.path),
                "non-resource request {} {} is not among the paths every client may read",
                request.method,
                request.path
            );
            continue;
        };
        let synthetic = synthetic_checks(&attributes);
        for attributes in std::iter::once(attributes).chain(synthetic) {
            let allowing: Vec<_> = grants.allowing(&attributes).collect();
            if allowing.is_empty() {
                let key = (
                    attributes.group.clone(),
                    attributes.resource.clone(),
                    attributes.verb.clone(),
                );
                denied.entry(key).or_insert((0, attributes.to_string())).0 += 1;
            }
            for (scope, _) in allowing {
                used.insert((
                    scope.clone(),
                    attributes.group.clone(),
                    attributes.resource.clone(),
                    attributes.verb.clone(),
                ));
            }
        }
    }
    assert!(
        denied.is_empty(),
        "berth made requests the chart's RBAC denies (add them to charts/berth/templates/rbac.yaml):\n  {}",
        denied
            .values()
            .map(|(count, example)| format!("{count} request(s) such as: {example}"))
            .collect::<Vec<_>>()
            .join("\n  ")
    );

    let not_exercised: BTreeSet<Grant> = NOT_EXERCISED_BY_E2E
        .iter()
        .map(|(g, r, v, _)| (Scope::Cluster, g.to_string(), r.to_string(), v.to_string()))
        .collect();
    let unused: Vec<String> = grants
        .granted()
        .difference(&used)
        .filter(|grant| !not_exercised.contains(grant))
        .map(|g| format!("{g:?}"))
        .collect();
    assert!(
        unused.is_empty(),
        "the chart grants what berth never used in the end-to-end suite (remove it from rbac.yaml, \
         or list it in NOT_EXERCISED_BY_E2E with the code that needs it):\n  {}",
        unused.join("\n  ")
    );
    let now_exercised: Vec<_> = not_exercised.intersection(&used).collect();
    assert!(
        now_exercised.is_empty(),
        "these are exercised now; remove them from NOT_EXERCISED_BY_E2E: {now_exercised:?}"
    );
}
