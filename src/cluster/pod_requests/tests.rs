//! Upstream's tables for `PodRequests` (component-helpers `resource/helpers_test.go`),
//! with upstream's inputs and expected requests; the limits columns are not carried over,
//! as berth computes no pod limits. The last test follows the options each caller in the
//! 1.37 scheduler (fit.go, resource_allocation.go, the framework's `PodInfo`) passes.

use serde_json::{Value, json};

use super::*;
use crate::testing::quantities;

fn pod(value: Value) -> Pod {
    serde_json::from_value(value).expect("test pod")
}

/// Exact amounts of `(name, quantity)` pairs: upstream compares lists semantically.
fn list(pairs: &[(&str, &str)]) -> ExactList {
    exact_list(&quantities(pairs)).expect("valid quantities")
}

/// A container named `name` with `requests` (an object, or `null` for none).
fn c(name: &str, requests: Value) -> Value {
    json!({"name": name, "resources": {"requests": requests}})
}

/// A container with requests and limits.
fn cl(name: &str, requests: Value, limits: Value) -> Value {
    json!({"name": name, "resources": {"requests": requests, "limits": limits}})
}

/// A sidecar: an init container with `restartPolicy: Always`.
fn sc(name: &str, requests: Value) -> Value {
    json!({"name": name, "restartPolicy": "Always", "resources": {"requests": requests}})
}

/// A container status with `allocatedResources` and `resources.requests` (`null` for
/// absent).
fn st(name: &str, allocated: Value, actuated: Value) -> Value {
    json!({"name": name, "allocatedResources": allocated, "resources": {"requests": actuated}})
}

fn infeasible() -> Value {
    json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}])
}

fn no_options() -> RequestOptions<'static> {
    RequestOptions::default()
}

fn use_status() -> RequestOptions<'static> {
    RequestOptions {
        use_status: true,
        ..RequestOptions::default()
    }
}

fn pod_level_status() -> RequestOptions<'static> {
    RequestOptions {
        use_status: true,
        pod_level_status: true,
        ..RequestOptions::default()
    }
}

fn exclude_overhead() -> RequestOptions<'static> {
    RequestOptions {
        exclude_overhead: true,
        ..RequestOptions::default()
    }
}

fn skip_pod_level() -> RequestOptions<'static> {
    RequestOptions {
        skip_pod_level: true,
        ..RequestOptions::default()
    }
}

type Case = (
    &'static str,
    RequestOptions<'static>,
    Value,
    &'static [(&'static str, &'static str)],
);

fn check_pod_requests(table: &str, cases: Vec<Case>) {
    for (name, options, spec, want) in cases {
        let got = pod_requests(&pod(spec), options).expect(name);
        assert_eq!(got, list(want), "{table}: {name}");
    }
}

#[test]
fn pod_requests_and_limits() {
    // TestPodRequestsAndLimits: the same resources on one app and one init container.
    let both = |resources: Value, overhead: Value| {
        json!({"spec": {
            "containers": [{"name": "c", "resources": resources}],
            "initContainers": [{"name": "i", "resources": resources}],
            "overhead": overhead,
        }})
    };
    let five = json!({"cpu": "5", "memory": "5"});
    check_pod_requests(
        "TestPodRequestsAndLimits",
        vec![
            (
                "just-limit-no-overhead",
                no_options(),
                both(json!({"limits": {"cpu": "9"}}), Value::Null),
                &[],
            ),
            (
                "just-overhead",
                no_options(),
                both(json!({}), five.clone()),
                &[("cpu", "5"), ("memory", "5")],
            ),
            (
                "req-and-overhead",
                no_options(),
                both(
                    json!({"requests": {"cpu": "1", "memory": "10"}}),
                    five.clone(),
                ),
                &[("cpu", "6"), ("memory", "15")],
            ),
            (
                "all-req-lim-and-overhead",
                no_options(),
                both(
                    json!({"requests": {"cpu": "1", "memory": "10"},
                           "limits": {"cpu": "2", "memory": "12"}}),
                    five.clone(),
                ),
                &[("cpu", "6"), ("memory", "15")],
            ),
            (
                "req-some-lim-and-overhead",
                no_options(),
                both(
                    json!({"requests": {"cpu": "1", "memory": "10"}, "limits": {"cpu": "2"}}),
                    five,
                ),
                &[("cpu", "6"), ("memory", "15")],
            ),
        ],
    );
}

#[test]
fn pod_requests_without_overhead() {
    // TestPodRequestsAndLimitsWithoutOverhead, all with ExcludeOverhead.
    let containers = json!([
        cl(
            "foobar",
            json!({"cpu": "1", "memory": "5"}),
            json!({"cpu": "2", "memory": "10"})
        ),
        cl(
            "foobar2",
            json!({"cpu": "4", "memory": "12"}),
            json!({"cpu": "8", "memory": "24"})
        ),
    ]);
    let overhead = json!({"cpu": "3", "memory": "8"});
    check_pod_requests(
        "TestPodRequestsAndLimitsWithoutOverhead",
        vec![
            (
                "two container no overhead - should just be sum of containers",
                exclude_overhead(),
                json!({"spec": {"containers": containers}}),
                &[("cpu", "5"), ("memory", "17")],
            ),
            (
                "two container with overhead - shouldn't consider overhead",
                exclude_overhead(),
                json!({"spec": {"containers": containers, "overhead": overhead}}),
                &[("cpu", "5"), ("memory", "17")],
            ),
            (
                "two container with overhead, massive init - should just be the largest init",
                exclude_overhead(),
                json!({"spec": {
                    "containers": containers,
                    "overhead": overhead,
                    "initContainers": [
                        cl("small-init", json!({"cpu": "1", "memory": "5"}),
                           json!({"cpu": "1", "memory": "5"})),
                        cl("big-init", json!({"cpu": "40", "memory": "120"}),
                           json!({"cpu": "80", "memory": "240"})),
                    ],
                }}),
                &[("cpu", "40"), ("memory", "120")],
            ),
        ],
    );
}

#[test]
fn pod_resource_requests() {
    // TestPodResourceRequests. No row sets the pod-level status option, so the pod-level
    // status sums the upstream fixture fills in are not read and left out here.
    let cpu = |amount: &str| json!({"cpu": amount});
    check_pod_requests(
        "TestPodResourceRequests",
        vec![
            (
                "nil options, larger init container",
                no_options(),
                json!({"spec": {"initContainers": [c("i", cpu("4"))],
                                "containers": [c("c", cpu("1"))]}}),
                &[("cpu", "4")],
            ),
            (
                "nil options, larger containers",
                no_options(),
                json!({"spec": {"initContainers": [c("i", cpu("2"))],
                                "containers": [c("c1", cpu("2")), c("c2", cpu("3"))]}}),
                &[("cpu", "5")],
            ),
            (
                "pod overhead excluded",
                exclude_overhead(),
                json!({"spec": {"overhead": cpu("1"),
                                "initContainers": [c("i", cpu("2"))],
                                "containers": [c("c1", cpu("2")), c("c2", cpu("3"))]}}),
                &[("cpu", "5")],
            ),
            (
                "pod overhead included",
                no_options(),
                json!({"spec": {"overhead": {"cpu": "1", "memory": "1Gi"},
                                "initContainers": [cl("i", cpu("2"), cpu("2"))],
                                "containers": [c("c1", cpu("2")), c("c2", cpu("3"))]}}),
                &[("cpu", "6"), ("memory", "1Gi")],
            ),
            (
                "resized, infeasible",
                use_status(),
                json!({"spec": {"containers": [c("container-1", cpu("4"))]},
                       "status": {"conditions": infeasible(),
                                  "containerStatuses": [st("container-1", Value::Null, cpu("2"))]}}),
                &[("cpu", "2")],
            ),
            (
                "resized, infeasible & in-progress",
                use_status(),
                json!({"spec": {"containers": [c("container-1", cpu("6"))]},
                       "status": {"conditions": infeasible(),
                                  "containerStatuses": [st("container-1", cpu("4"), cpu("2"))]}}),
                &[("cpu", "4")],
            ),
            (
                "resized, no resize status",
                use_status(),
                json!({"spec": {"containers": [c("container-1", cpu("4"))]},
                       "status": {"containerStatuses": [st("container-1", Value::Null, cpu("2"))]}}),
                &[("cpu", "4")],
            ),
            (
                "resized: per-resource 3-way maximum",
                use_status(),
                json!({"spec": {"containers": [c("container-1",
                           json!({"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"}))]},
                       "status": {"containerStatuses": [st("container-1",
                           json!({"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"}),
                           json!({"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"}))]}}),
                &[
                    ("cpu", "30m"),
                    ("memory", "30M"),
                    ("ephemeral-storage", "30G"),
                ],
            ),
            (
                "resized, infeasible, but don't use status",
                no_options(),
                json!({"spec": {"containers": [c("container-1", cpu("4"))]},
                       "status": {"conditions": infeasible(),
                                  "containerStatuses": [st("container-1", Value::Null, cpu("2"))]}}),
                &[("cpu", "4")],
            ),
            (
                "resized, restartable init container, infeasible",
                use_status(),
                json!({"spec": {"initContainers": [sc("restartable-init-1", cpu("4"))]},
                       "status": {"conditions": infeasible(),
                                  "initContainerStatuses":
                                      [st("restartable-init-1", Value::Null, cpu("2"))]}}),
                &[("cpu", "2")],
            ),
            (
                "resized, restartable init container, no resize status",
                use_status(),
                json!({"spec": {"initContainers": [sc("restartable-init-1", cpu("4"))]},
                       "status": {"initContainerStatuses":
                                      [st("restartable-init-1", Value::Null, cpu("2"))]}}),
                &[("cpu", "4")],
            ),
            (
                "resized, restartable init container, infeasible, but don't use status",
                no_options(),
                json!({"spec": {"initContainers": [sc("restartable-init-1", cpu("4"))]},
                       "status": {"conditions": infeasible(),
                                  "initContainerStatuses":
                                      [st("restartable-init-1", Value::Null, cpu("2"))]}}),
                &[("cpu", "4")],
            ),
            (
                "restartable init container",
                no_options(),
                json!({"spec": {"initContainers": [sc("restartable-init-1", cpu("1"))],
                                "containers": [c("container-1", cpu("1"))]}}),
                &[("cpu", "2")],
            ),
            (
                "multiple restartable init containers",
                no_options(),
                json!({"spec": {"initContainers": [
                           c("init-1", cpu("5")),
                           sc("restartable-init-1", cpu("1")),
                           sc("restartable-init-2", cpu("2")),
                           sc("restartable-init-3", cpu("3")),
                       ],
                       "containers": [c("container-1", cpu("1"))]}}),
                &[("cpu", "7")],
            ),
            (
                "multiple restartable and regular init containers",
                no_options(),
                json!({"spec": {"initContainers": [
                           c("init-1", cpu("5")),
                           sc("restartable-init-1", cpu("1")),
                           sc("restartable-init-2", cpu("2")),
                           c("init-2", cpu("5")),
                           sc("restartable-init-3", cpu("3")),
                       ],
                       "containers": [c("container-1", cpu("1"))]}}),
                &[("cpu", "8")],
            ),
            (
                "restartable-init, init and regular",
                no_options(),
                json!({"spec": {"initContainers": [
                           sc("restartable-init-1", cpu("10")),
                           c("init-1", cpu("200")),
                       ],
                       "containers": [c("container-1", cpu("100"))]}}),
                &[("cpu", "210")],
            ),
            (
                "aggregate request resolves max of sums instead of sum of maxes",
                use_status(),
                json!({"spec": {"containers": [c("c1", cpu("1")), c("c2", cpu("2"))]},
                "status": {"containerStatuses": [
                    st("c1", cpu("2"), Value::Null),
                    st("c2", cpu("1"), Value::Null),
                ]}}),
                &[("cpu", "3")],
            ),
        ],
    );
}

#[test]
fn pod_level_resource_requests() {
    // TestPodLevelResourceRequests.
    let mc = |memory: &str, cpu: &str| json!({"memory": memory, "cpu": cpu});
    let status_pod = |actuated: Value, allocated: Value| {
        json!({"spec": {"resources": {"requests": {"cpu": "1", "memory": "100Mi"}},
                        "overhead": {"cpu": "100m", "memory": "10Mi"}},
               "status": {"resources": {"requests": actuated}, "allocatedResources": allocated}})
    };
    let full = json!({"cpu": "1100m", "memory": "110Mi"});
    let declared = json!({"cpu": "1", "memory": "100Mi"});
    let with_overhead: &[(&str, &str)] = &[("cpu", "1100m"), ("memory", "110Mi")];
    check_pod_requests(
        "TestPodLevelResourceRequests",
        vec![
            ("nil", no_options(), json!({"spec": {"resources": {}}}), &[]),
            (
                "pod level memory resource with SkipPodLevelResources true",
                skip_pod_level(),
                json!({"spec": {"resources": {"requests": {"memory": "2Mi"}}}}),
                &[],
            ),
            (
                "pod level memory resource with SkipPodLevelResources false",
                no_options(),
                json!({"spec": {"resources": {"requests": {"memory": "2Mi"}}}}),
                &[("memory", "2Mi")],
            ),
            (
                "pod level memory and container level cpu resources",
                no_options(),
                json!({"spec": {"resources": {"requests": {"memory": "2Mi"}},
                                "containers": [c("c", json!({"cpu": "2m"}))]}}),
                &[("memory", "2Mi"), ("cpu", "2m")],
            ),
            (
                "pod level unsupported resources set at both pod-level and container-level",
                no_options(),
                json!({"spec": {"resources": {"requests": {"storage": "2Mi"}},
                                "containers": [c("c", json!({"storage": "3Mi"}))]}}),
                &[("storage", "3Mi")],
            ),
            (
                "pod level unsupported resources set at pod-level",
                no_options(),
                json!({"spec": {"resources": {"requests": {"storage": "2Mi"}},
                                "containers": [c("c", json!({"memory": "3Mi"}))]}}),
                &[("memory", "3Mi")],
            ),
            (
                "only container level resources set",
                no_options(),
                json!({"spec": {"containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "3Mi"), ("cpu", "2m")],
            ),
            (
                "both container-level and pod-level resources set",
                no_options(),
                json!({"spec": {"resources": {"requests": mc("6Mi", "8m")},
                                "containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "6Mi"), ("cpu", "8m")],
            ),
            (
                "container-level resources and init container set w/o pod-level resources",
                no_options(),
                json!({"spec": {"initContainers": [c("i", mc("5Mi", "4m"))],
                                "containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "5Mi"), ("cpu", "4m")],
            ),
            (
                "container-level resources and init container set w/o pod-level resources, skip pod-level",
                skip_pod_level(),
                json!({"spec": {"initContainers": [c("i", mc("5Mi", "4m"))],
                                "containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "5Mi"), ("cpu", "4m")],
            ),
            (
                "container-level resources and sidecar container set w/o pod-level resources",
                no_options(),
                json!({"spec": {"initContainers": [sc("s", mc("5Mi", "4m"))],
                                "containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "8Mi"), ("cpu", "6m")],
            ),
            (
                "container-level resources, init and sidecar container set w/o pod-level resources",
                no_options(),
                json!({"spec": {"initContainers": [sc("s", mc("5Mi", "4m")), c("i", mc("6Mi", "8m"))],
                                "containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "11Mi"), ("cpu", "12m")],
            ),
            (
                "pod-level resources, container-level resources, init and sidecar container set",
                no_options(),
                json!({"spec": {"resources": {"requests": mc("15Mi", "18m")},
                                "initContainers": [sc("s", mc("5Mi", "4m")), c("i", mc("6Mi", "8m"))],
                                "containers": [c("c", mc("3Mi", "2m"))]}}),
                &[("memory", "15Mi"), ("cpu", "18m")],
            ),
            (
                "pod-level hugepage resources with single hugepage size",
                no_options(),
                json!({"spec": {"resources": {
                    "limits": {"hugepages-2Mi": "2Mi"},
                    "requests": {"memory": "10Mi", "hugepages-2Mi": "2Mi"}}}}),
                &[("memory", "10Mi"), ("hugepages-2Mi", "2Mi")],
            ),
            (
                "pod-level hugepage resources with multiple hugepage sizes",
                no_options(),
                json!({"spec": {"resources": {
                    "limits": {"hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
                    "requests": {"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"}}}}),
                &[
                    ("cpu", "1"),
                    ("hugepages-2Mi", "2Mi"),
                    ("hugepages-1Gi", "1Gi"),
                ],
            ),
            (
                "pod-level and container-level hugepage resources with single hugepage size",
                no_options(),
                json!({"spec": {"resources": {
                        "limits": {"hugepages-2Mi": "10Mi"},
                        "requests": {"cpu": "1", "hugepages-2Mi": "10Mi"}},
                    "containers": [cl("c", json!({"hugepages-2Mi": "6Mi"}),
                                      json!({"hugepages-2Mi": "6Mi"}))]}}),
                &[("cpu", "1"), ("hugepages-2Mi", "10Mi")],
            ),
            (
                "pod-level and container-level hugepage resources with multiple hugepage sizes",
                no_options(),
                json!({"spec": {"resources": {
                        "limits": {"hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
                        "requests": {"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"}},
                    "containers": [cl("c", json!({"cpu": "1", "hugepages-1Gi": "2Gi"}),
                                      json!({"hugepages-1Gi": "2Gi"}))]}}),
                &[
                    ("cpu", "1"),
                    ("hugepages-2Mi", "10Mi"),
                    ("hugepages-1Gi", "2Gi"),
                ],
            ),
            (
                "pod-level and container-level hugepage resources with different hugepage sizes",
                no_options(),
                json!({"spec": {"resources": {
                        "limits": {"hugepages-2Mi": "10Mi"},
                        "requests": {"cpu": "1", "hugepages-2Mi": "10Mi"}},
                    "containers": [cl("c", json!({"memory": "4Mi", "hugepages-1Gi": "1Gi"}),
                                      json!({"hugepages-1Gi": "1Gi"}))]}}),
                &[
                    ("cpu", "1"),
                    ("memory", "4Mi"),
                    ("hugepages-2Mi", "10Mi"),
                    ("hugepages-1Gi", "1Gi"),
                ],
            ),
            (
                "status includes overhead for all pod-level resources",
                pod_level_status(),
                status_pod(full.clone(), full.clone()),
                with_overhead,
            ),
            (
                "status includes overhead for one resource",
                pod_level_status(),
                status_pod(json!({"cpu": "1100m"}), json!({"cpu": "1100m"})),
                with_overhead,
            ),
            (
                "status without overhead still receives overhead",
                pod_level_status(),
                status_pod(declared.clone(), declared.clone()),
                with_overhead,
            ),
            (
                "allocated includes overhead when status requests do not",
                pod_level_status(),
                status_pod(declared.clone(), full),
                with_overhead,
            ),
            (
                "allocated includes stale overhead during resize",
                pod_level_status(),
                status_pod(declared, json!({"cpu": "1050m", "memory": "105Mi"})),
                with_overhead,
            ),
        ],
    );
}

#[test]
fn aggregate_container_requests_alone() {
    // TestAggregateContainerRequestsAndLimits, requests column: the containers' sum
    // without pod-level requests or overhead.
    let cpu = |amount: &str| json!({"cpu": amount});
    let lim =
        |name: &str, amount: &str| json!({"name": name, "resources": {"limits": cpu(amount)}});
    let cases: Vec<Case> = vec![
        (
            "one container with limits",
            no_options(),
            json!({"spec": {"containers": [lim("c", "9")]}}),
            &[],
        ),
        (
            "two containers with limits",
            no_options(),
            json!({"spec": {"containers": [lim("c1", "9"), lim("c2", "9")]}}),
            &[],
        ),
        (
            "one container with requests",
            no_options(),
            json!({"spec": {"containers": [c("c", cpu("9"))]}}),
            &[("cpu", "9")],
        ),
        (
            "two containers with requests",
            no_options(),
            json!({"spec": {"containers": [c("c1", cpu("9")), c("c2", cpu("9"))]}}),
            &[("cpu", "18")],
        ),
        (
            "one regular and one init container with requests",
            no_options(),
            json!({"spec": {"containers": [c("c", cpu("9"))],
                            "initContainers": [c("i", cpu("9"))]}}),
            &[("cpu", "9")],
        ),
        (
            "one regular, one init and one sidecar container with requests",
            no_options(),
            json!({"spec": {"containers": [c("c", cpu("9"))],
                            "initContainers": [sc("s", cpu("8")), c("i", cpu("6"))]}}),
            &[("cpu", "17")],
        ),
        (
            "one regular and one init container with limits",
            no_options(),
            json!({"spec": {"containers": [lim("c", "9")], "initContainers": [lim("i", "9")]}}),
            &[],
        ),
        (
            "one regular, one init and one sidecar container with limits",
            no_options(),
            json!({"spec": {"containers": [lim("c", "9")],
            "initContainers": [
                {"name": "s", "restartPolicy": "Always",
                 "resources": {"limits": cpu("8")}},
                lim("i", "6"),
            ]}}),
            &[],
        ),
        (
            "container with empty requests and status with requests",
            use_status(),
            json!({"spec": {"containers": [c("container-1", json!({}))]},
                   "status": {"containerStatuses": [st("container-1", Value::Null, cpu("2"))]}}),
            &[("cpu", "2")],
        ),
        (
            "sidecar with empty requests and status with requests",
            use_status(),
            json!({"spec": {"initContainers": [sc("container-1", json!({}))]},
                   "status": {"initContainerStatuses":
                                  [st("container-1", Value::Null, cpu("2"))]}}),
            &[("cpu", "2")],
        ),
        (
            "max of sums (requests)",
            use_status(),
            json!({"spec": {"containers": [c("c1", cpu("1")), c("c2", cpu("2"))]},
            "status": {"containerStatuses": [
                st("c1", cpu("2"), Value::Null),
                st("c2", cpu("1"), Value::Null),
            ]}}),
            &[("cpu", "3")],
        ),
        (
            "max of sums (limits)",
            use_status(),
            json!({"spec": {"containers": [lim("c1", "1"), lim("c2", "2")]},
            "status": {"containerStatuses": [
                {"name": "c1", "resources": {"limits": cpu("2")}},
                {"name": "c2", "resources": {"limits": cpu("1")}},
            ]}}),
            &[],
        ),
        (
            "from the pod-level status",
            pod_level_status(),
            json!({"spec": {"containers": [cl("c1", cpu("1"), cpu("2"))]},
                   "status": {"allocatedResources": cpu("4"),
                              "resources": {"requests": cpu("3"), "limits": cpu("5")}}}),
            &[("cpu", "4")],
        ),
        (
            "fallback to container statuses when the pod's allocatedResources is nil",
            pod_level_status(),
            json!({"spec": {"containers": [cl("c1", cpu("1"), cpu("2"))]},
                   "status": {"containerStatuses": [{"name": "c1", "allocatedResources": cpu("6"),
                                  "resources": {"requests": cpu("5"), "limits": cpu("7")}}],
                              "resources": {"requests": cpu("3"), "limits": cpu("7")}}}),
            &[("cpu", "6")],
        ),
        (
            "fallback to container statuses when the pod's status.resources is nil",
            pod_level_status(),
            json!({"spec": {"containers": [cl("c1", cpu("1"), cpu("2"))]},
                   "status": {"containerStatuses": [{"name": "c1", "allocatedResources": cpu("6"),
                                  "resources": {"requests": cpu("5"), "limits": cpu("8")}}],
                              "allocatedResources": cpu("6")}}),
            &[("cpu", "6")],
        ),
    ];
    for (name, options, spec, want) in cases {
        let pod = pod(spec);
        let status = pod.status.clone().unwrap_or_default();
        let spec = pod.spec.clone().unwrap_or_default();
        let got = aggregate_container_requests(&spec, &status, options).expect(name);
        assert_eq!(
            got,
            list(want),
            "TestAggregateContainerRequestsAndLimits: {name}"
        );
    }
}

#[test]
fn vertical_scaling_wrappers() {
    // TestPodRequestsAndLimitsVerticalScalingWrappers, requests column (without the DRA
    // rows).
    let cpu = |amount: &str| json!({"cpu": amount});
    check_pod_requests(
        "TestPodRequestsAndLimitsVerticalScalingWrappers",
        vec![
            (
                "pod-level resources, in-place scaling, status populated",
                pod_level_status(),
                json!({"spec": {"resources": {"requests": cpu("2"), "limits": cpu("4")},
                                "containers": [cl("c1", cpu("1"), cpu("2"))]},
                       "status": {"allocatedResources": cpu("3"),
                                  "resources": {"requests": cpu("3.5"), "limits": cpu("5")}}}),
                &[("cpu", "3.5")],
            ),
            (
                "pod-level resources, status.resources nil, allocated set",
                pod_level_status(),
                json!({"spec": {"resources": {"requests": cpu("2"), "limits": cpu("4")},
                                "containers": [cl("c1", cpu("1"), cpu("2"))]},
                       "status": {"allocatedResources": cpu("3")}}),
                &[("cpu", "3")],
            ),
            (
                "pod-level resources, infeasible resize",
                pod_level_status(),
                json!({"spec": {"resources": {"requests": cpu("10"), "limits": cpu("20")},
                                "containers": [cl("c1", cpu("1"), cpu("2"))]},
                       "status": {"conditions": infeasible(),
                                  "allocatedResources": cpu("3"),
                                  "resources": {"requests": cpu("4"), "limits": cpu("8")}}}),
                &[("cpu", "4")],
            ),
            (
                "container limits, infeasible resize",
                use_status(),
                json!({"spec": {"containers": [{"name": "c1",
                                                "resources": {"limits": cpu("10")}}]},
                       "status": {"conditions": infeasible(),
                                  "containerStatuses": [{"name": "c1",
                                      "resources": {"limits": cpu("6")}}]}}),
                &[],
            ),
            (
                "pod-level resources with overhead, status populated",
                pod_level_status(),
                json!({"spec": {"overhead": {"cpu": "1", "memory": "500Mi"},
                                "resources": {"requests": {"cpu": "2", "memory": "2Gi"},
                                              "limits": {"cpu": "4", "memory": "4Gi"}}},
                       "status": {"allocatedResources": {"cpu": "3", "memory": "2.5Gi"},
                                  "resources": {"requests": {"cpu": "3", "memory": "2.5Gi"},
                                                "limits": {"cpu": "5", "memory": "4.5Gi"}}}}),
                &[("cpu", "3"), ("memory", "2.5Gi")],
            ),
        ],
    );

    let memory_default = list(&[("memory", "100Mi")]);
    let non_missing = RequestOptions {
        non_missing: Some(&memory_default),
        ..RequestOptions::default()
    };
    let cases = [
        (
            "NonMissingContainerRequests applied to init containers",
            json!({"spec": {"initContainers": [c("i1", cpu("1"))]}}),
        ),
        (
            "NonMissingContainerRequests applied to regular containers",
            json!({"spec": {"containers": [c("c1", cpu("1"))]}}),
        ),
    ];
    for (name, spec) in cases {
        let got = pod_requests(&pod(spec), non_missing).expect(name);
        assert_eq!(got, list(&[("cpu", "1"), ("memory", "100Mi")]), "{name}");
    }
}

#[test]
fn supported_pod_level_resources() {
    // TestIsSupportedPodLevelResource.
    let cases = [
        ("cpu", true),
        ("memory", true),
        ("ephemeral-storage", false),
        ("hugepages-2Mi", true),
        ("hugepages-1Gi", true),
    ];
    for (name, want) in cases {
        assert_eq!(is_supported_pod_level_resource(name), want, "{name}");
    }
}

#[test]
fn pod_level_requests_set() {
    // The requests-only rows of TestIsPodLevelResourcesSet, which hold for
    // IsPodLevelRequestsSet too, and TestIsPodLevelLimitsSet's row with requests only in
    // reverse (limits alone do not set requests).
    let cases = [
        ("nil resources", Value::Null, false),
        ("empty resources", json!({}), false),
        (
            "only unsupported requests",
            json!({"requests": {"ephemeral-storage": "1Mi"}}),
            false,
        ),
        (
            "unsupported and supported requests",
            json!({"requests": {"ephemeral-storage": "1Mi", "cpu": "1m"}}),
            true,
        ),
        (
            "supported limits only",
            json!({"limits": {"ephemeral-storage": "1Mi", "cpu": "1m"}}),
            false,
        ),
        (
            "memory request",
            json!({"requests": {"memory": "100Mi"}}),
            true,
        ),
    ];
    for (name, resources, want) in cases {
        let pod = pod(json!({"spec": {"resources": resources}}));
        let spec = pod.spec.unwrap_or_default();
        assert_eq!(is_pod_level_requests_set(&spec), want, "{name}");
    }
}

#[test]
fn each_caller_gets_its_options() {
    // What the 1.37 scheduler asks of PodRequests in each place: NodeResourcesFit's
    // Filter reads the spec only, a node's accounting reads the resize status, and
    // NodeResourcesFit's scorer reads the containers' spec with the non-zero defaults
    // and no pod-level requests (NewFit turns neither feature on for it).
    // (caller, "cpu/memory" it sees) for each of the four lists.
    type PerCaller = [(&'static str, &'static str); 4];
    let cases: Vec<(&str, Value, PerCaller)> = vec![
        (
            "pod-level memory; one container requests cpu, one nothing",
            json!({"spec": {"resources": {"requests": {"memory": "1Gi"}},
                            "containers": [c("c1", json!({"cpu": "500m"})), c("c2", json!({}))]}}),
            [
                ("filter", "500m/1Gi"),
                ("requests", "500m/1Gi"),
                ("non_zero", "500m/1Gi"),
                ("score_non_zero", "600m/400Mi"),
            ],
        ),
        (
            "no pod level; one container requesting nothing",
            json!({"spec": {"containers": [c("c1", json!({}))]}}),
            [
                ("filter", "0/0"),
                ("requests", "0/0"),
                ("non_zero", "100m/200Mi"),
                ("score_non_zero", "100m/200Mi"),
            ],
        ),
        (
            "pod-level cpu; one container requesting nothing",
            json!({"spec": {"resources": {"requests": {"cpu": "1"}},
                            "containers": [c("c1", json!({}))]}}),
            [
                ("filter", "1/0"),
                ("requests", "1/0"),
                ("non_zero", "1/200Mi"),
                ("score_non_zero", "100m/200Mi"),
            ],
        ),
        (
            "pod-level cpu with overhead",
            json!({"spec": {"resources": {"requests": {"cpu": "1"}},
                            "overhead": {"cpu": "250m"},
                            "containers": [c("c1", json!({}))]}}),
            [
                ("filter", "1250m/0"),
                ("requests", "1250m/0"),
                ("non_zero", "1250m/200Mi"),
                ("score_non_zero", "350m/200Mi"),
            ],
        ),
        (
            "running pod resized up: the node counts the allocated amount",
            json!({"spec": {"containers": [c("c1", json!({"cpu": "4"}))]},
                   "status": {"containerStatuses": [st("c1", json!({"cpu": "6"}), json!({"cpu": "6"}))]}}),
            [
                ("filter", "4/0"),
                ("requests", "6/0"),
                ("non_zero", "6/200Mi"),
                ("score_non_zero", "4/200Mi"),
            ],
        ),
    ];
    let amount = |resource: &Resource| (resource.milli_cpu, resource.memory);
    for (name, spec, want) in cases {
        let got = scheduler_requests(&pod(spec)).expect(name);
        for (field, expected) in want {
            let (cpu, memory) = expected.split_once('/').expect("cpu/memory");
            let expected = Resource::from_exact(&list(&[("cpu", cpu), ("memory", memory)]));
            let actual = match field {
                "filter" => &got.filter,
                "requests" => &got.requests,
                "non_zero" => &got.non_zero,
                _ => &got.score_non_zero,
            };
            assert_eq!(
                amount(actual),
                amount(&expected),
                "{name}: {field} (milli cpu, memory)"
            );
        }
    }
}

/// The API server's pod-level request defaulting (`SetDefaults_Pod`'s
/// `defaultHugePagePodLimits` and `defaultPodRequests`), case by case from its rules:
/// (case, pod `spec.resources`, containers, init containers, the pod-level requests and
/// limits after defaulting, `null` for absent).
#[test]
fn pod_level_requests_are_defaulted_as_the_api_server_does() {
    let cases = vec![
        (
            "no pod-level resources: nothing to default",
            Value::Null,
            vec![c("c1", json!({"cpu": "1"}))],
            vec![],
            Value::Null,
            Value::Null,
        ),
        (
            "pod-level requests without limits stay as they are",
            json!({"requests": {"cpu": "1"}}),
            vec![c("c1", json!({"cpu": "500m", "memory": "1Gi"}))],
            vec![],
            json!({"cpu": "1"}),
            Value::Null,
        ),
        (
            "requested by the containers: the containers' sum; otherwise the pod limit",
            json!({"limits": {"cpu": "2", "memory": "1Gi"}}),
            vec![
                c("c1", json!({"cpu": "500m"})),
                c("c2", json!({"cpu": "250m"})),
            ],
            vec![],
            json!({"cpu": "750m", "memory": "1Gi"}),
            json!({"cpu": "2", "memory": "1Gi"}),
        ),
        (
            "no container requests: the pod limits",
            json!({"limits": {"cpu": "3"}}),
            vec![c("c1", Value::Null)],
            vec![],
            json!({"cpu": "3"}),
            json!({"cpu": "3"}),
        ),
        (
            "a pod-level request is never replaced",
            json!({"limits": {"cpu": "4"}, "requests": {"cpu": "1"}}),
            vec![c("c1", json!({"cpu": "2"}))],
            vec![],
            json!({"cpu": "1"}),
            json!({"cpu": "4"}),
        ),
        (
            "an init container larger than the app containers sets the aggregate",
            json!({"limits": {"cpu": "4"}}),
            vec![c("app", json!({"cpu": "1"}))],
            vec![c("init", json!({"cpu": "3"}))],
            json!({"cpu": "3"}),
            json!({"cpu": "4"}),
        ),
        (
            "container hugepages give the pod a hugepages limit, and the request follows it",
            json!({"requests": {"cpu": "1"}}),
            vec![cl(
                "c1",
                json!({"cpu": "500m", "hugepages-2Mi": "4Mi"}),
                json!({"hugepages-2Mi": "4Mi"}),
            )],
            vec![],
            json!({"cpu": "1", "hugepages-2Mi": "4Mi"}),
            json!({"hugepages-2Mi": "4Mi"}),
        ),
    ];
    for (name, resources, containers, init, want_requests, want_limits) in cases {
        let mut spec = json!({"containers": containers, "initContainers": init});
        if !resources.is_null() {
            spec["resources"] = resources;
        }
        let mut pod = pod(json!({"spec": spec}));
        default_pod_level_requests(&mut pod);
        let resources = pod.spec.and_then(|s| s.resources).unwrap_or_default();
        let exact = |list: Option<BTreeMap<String, Quantity>>| {
            list.map(|l| exact_list(&l).expect("valid quantities"))
        };
        let expected = |value: Value| {
            let pairs: Option<BTreeMap<String, Quantity>> =
                serde_json::from_value(value).expect("test quantities");
            exact(pairs)
        };
        assert_eq!(
            exact(resources.requests),
            expected(want_requests),
            "{name}: requests"
        );
        assert_eq!(
            exact(resources.limits),
            expected(want_limits),
            "{name}: limits"
        );
    }
}
