//! `berth simulate` refuses input the API server would refuse, with the API server's
//! words: one case per class of invalid input, each with the error a user sees
//! (`file: document N: field.path: message`). The expected messages are apimachinery's
//! and `pkg/apis/core/validation`'s wording (and, for PodGroups, the CRD's bounds).
//! A few cases go through the `berth simulate` binary (exit code 2, stderr); the rest
//! through the library.

use std::path::Path;

use berth::simulate::input::load_str;

mod support;
use cli::{BERTH, assert_exit, run_berth, stderr};
use support::cli;
use support::temp::TempDir;

const FILE: &str = "cluster.yaml";

/// The error loading `yaml` gives, as `berth simulate` prints it after `error: `.
fn load_error(yaml: &str) -> String {
    match load_str(Path::new(FILE), yaml) {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(error) => error.to_string(),
    }
}

fn pod(spec: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n{spec}")
}

fn node(body: &str) -> String {
    format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: node-a\n{body}")
}

fn container(resources: &str) -> String {
    pod(&format!(
        "  containers:\n  - name: c\n    image: i\n    resources:\n{resources}"
    ))
}

fn pod_group(spec: &str) -> String {
    format!("apiVersion: berth.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n{spec}")
}

/// apimachinery's `RegexError` texts, which many messages end with.
const QUALIFIED_NAME_REGEX: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const DNS_LABEL_REGEX: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUANTITY_REGEX: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

struct Case {
    name: &'static str,
    yaml: String,
    /// The message after `cluster.yaml: document 0: `.
    error: String,
}

fn case(name: &'static str, yaml: impl Into<String>, error: impl Into<String>) -> Case {
    Case {
        name,
        yaml: yaml.into(),
        error: error.into(),
    }
}

fn names_and_metadata() -> Vec<Case> {
    let long_pod = "a".repeat(254);
    let long_node = "n".repeat(65_525);
    vec![
        case(
            "pod name longer than a DNS subdomain",
            format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {long_pod}\n"),
            format!(
                "metadata.name: Invalid value: \"{long_pod}\": must be no more than 253 characters"
            ),
        ),
        case(
            "node name of 65,525 characters",
            format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {long_node}\n"),
            format!(
                "metadata.name: Invalid value: \"{long_node}\": must be no more than 253 characters"
            ),
        ),
        case(
            "pod name with upper case",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Web\n",
            "metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        case(
            "namespace name is a DNS label",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team.a\n",
            format!("metadata.name: Invalid value: \"team.a\": {DNS_LABEL_REGEX}"),
        ),
        case(
            "pod namespace is a DNS label",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: Team_A\n",
            format!("metadata.namespace: Invalid value: \"Team_A\": {DNS_LABEL_REGEX}"),
        ),
        case(
            "StatefulSet name is a DNS label",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db.v1\nspec:\n  selector: {}\n  template: {}\n",
            format!("metadata.name: Invalid value: \"db.v1\": {DNS_LABEL_REGEX}"),
        ),
        case(
            "Service name is a DNS-1035 label",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: 1web\n",
            "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ),
        case(
            "label key with two slashes",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-a\n  labels:\n    a/b/c: x\n",
            format!(
                "metadata.labels: Invalid value: \"a/b/c\": a qualified name {QUALIFIED_NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
        case(
            "label value that does not end with an alphanumeric",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    app: web-\n",
            "metadata.labels: Invalid value: \"web-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        case(
            "annotations above 256 KiB",
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    note: {}\n",
                "x".repeat(262_144)
            ),
            "metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
    ]
}

fn quantities() -> Vec<Case> {
    vec![
        case(
            "negative cpu request",
            container("      requests:\n        cpu: \"-5\"\n"),
            "spec.containers[0].resources.requests[cpu]: Invalid value: \"-5\": must be greater than or equal to 0",
        ),
        case(
            "request that is not a quantity",
            container("      requests:\n        memory: 1Gx\n"),
            format!(
                "spec.containers[0].resources.requests[memory]: Invalid value: \"1Gx\": {QUANTITY_REGEX}"
            ),
        ),
        // Admission copies a limit into a missing request before validation, so the API
        // server reports the negative value twice.
        case(
            "negative limit",
            container("      limits:\n        memory: -1Gi\n"),
            format!(
                "spec.containers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0\n\
                 {FILE}: document 0: spec.containers[0].resources.requests[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"
            ),
        ),
        case(
            "request above its limit",
            container("      requests:\n        cpu: \"2\"\n      limits:\n        cpu: \"1\"\n"),
            "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
        ),
        case(
            "extended resource requested without a limit",
            container("      requests:\n        example.com/gpu: \"1\"\n"),
            "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
        ),
        case(
            "fractional extended resource",
            container("      limits:\n        example.com/gpu: 500m\n"),
            // The request defaulted from the limit is refused too.
            format!(
                "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer\n\
                 {FILE}: document 0: spec.containers[0].resources.requests[example.com/gpu]: Invalid value: \"500m\": must be an integer"
            ),
        ),
        case(
            "resource name that is not a container resource",
            container("      requests:\n        gpu: \"1\"\n"),
            "spec.containers[0].resources.requests[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
        ),
        case(
            "init container with a negative request",
            pod(
                "  initContainers:\n  - name: init\n    resources:\n      requests:\n        cpu: -100m\n",
            ),
            "spec.initContainers[0].resources.requests[cpu]: Invalid value: \"-100m\": must be greater than or equal to 0",
        ),
        case(
            "negative pod overhead",
            pod("  overhead:\n    cpu: -1\n"),
            "spec.overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
        ),
        case(
            "negative node capacity",
            node("status:\n  capacity:\n    cpu: \"-4\"\n"),
            "status.capacity.cpu: Invalid value: \"-4\": must be greater than or equal to 0",
        ),
        case(
            "node allocatable that is not a quantity",
            node("status:\n  capacity:\n    memory: 8Gi\n  allocatable:\n    memory: lots\n"),
            format!("status.allocatable.memory: Invalid value: \"lots\": {QUANTITY_REGEX}"),
        ),
        case(
            "fractional pod capacity",
            node("status:\n  capacity:\n    pods: 1500m\n"),
            "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
        ),
    ]
}

fn taints_and_tolerations() -> Vec<Case> {
    vec![
        case(
            "toleration operator outside the enum",
            pod("  tolerations:\n  - key: k\n    operator: Foo\n"),
            "spec.tolerations[0].operator: Unsupported value: \"Foo\": supported values: \"Equal\", \"Exists\"",
        ),
        case(
            "toleration effect outside the enum",
            pod("  tolerations:\n  - key: k\n    operator: Exists\n    effect: Never\n"),
            "spec.tolerations[0].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
        ),
        case(
            "tolerationSeconds without NoExecute",
            pod(
                "  tolerations:\n  - key: k\n    operator: Exists\n    effect: NoSchedule\n    tolerationSeconds: 10\n",
            ),
            "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        case(
            "empty toleration key with Equal",
            pod("  tolerations:\n  - operator: Equal\n    value: v\n"),
            "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ),
        case(
            "taint effect outside the enum",
            node("spec:\n  taints:\n  - key: k\n    effect: Sometimes\n"),
            "spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
        ),
        case(
            "taint key with two slashes",
            node("spec:\n  taints:\n  - key: a/b/c\n    effect: NoSchedule\n"),
            format!(
                "spec.taints[0].key: Invalid value: \"a/b/c\": a qualified name {QUALIFIED_NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
        case(
            "two taints with one key and effect",
            node(
                "spec:\n  taints:\n  - key: k\n    effect: NoSchedule\n  - key: k\n    value: other\n    effect: NoSchedule\n",
            ),
            "spec.taints[1]: Duplicate value: \"taints must be unique by key and effect pair\"",
        ),
    ]
}

const REQUIRED_NODE_AFFINITY: &str =
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";

fn node_affinity(terms: &str) -> String {
    pod(&format!(
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:{terms}"
    ))
}

fn affinity() -> Vec<Case> {
    let term = |requirement: &str| node_affinity(&format!("\n        - {requirement}\n"));
    vec![
        case(
            "no node selector term",
            node_affinity(" []\n"),
            format!(
                "{REQUIRED_NODE_AFFINITY}.nodeSelectorTerms: Required value: must have at least one node selector term"
            ),
        ),
        case(
            "node selector operator outside the enum",
            term("matchExpressions: [{key: zone, operator: Near, values: [a]}]"),
            format!(
                "{REQUIRED_NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"
            ),
        ),
        case(
            "In without values",
            term("matchExpressions: [{key: zone, operator: In}]"),
            format!(
                "{REQUIRED_NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
            ),
        ),
        case(
            "Exists with values",
            term("matchExpressions: [{key: zone, operator: Exists, values: [a]}]"),
            format!(
                "{REQUIRED_NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            ),
        ),
        case(
            "Gt with two values",
            term("matchExpressions: [{key: cores, operator: Gt, values: [\"1\", \"2\"]}]"),
            format!(
                "{REQUIRED_NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
            ),
        ),
        case(
            "matchFields on a field other than metadata.name",
            term("matchFields: [{key: spec.unschedulable, operator: In, values: [\"true\"]}]"),
            format!(
                "{REQUIRED_NODE_AFFINITY}.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"spec.unschedulable\": not a valid field selector key"
            ),
        ),
        case(
            "preferred node affinity weight 0",
            pod(
                "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 0\n        preference:\n          matchExpressions: [{key: zone, operator: Exists}]\n",
            ),
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
        ),
        case(
            "pod affinity term without topologyKey",
            pod(
                "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {matchLabels: {app: db}}\n        topologyKey: \"\"\n",
            ),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        ),
        case(
            "preferred anti-affinity weight above 100",
            pod(
                "  affinity:\n    podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 101\n        podAffinityTerm:\n          topologyKey: zone\n",
            ),
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
        ),
        case(
            "label selector operator outside the enum",
            pod(
                "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {matchExpressions: [{key: app, operator: Gt, values: [\"1\"]}]}\n        topologyKey: zone\n",
            ),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector operator",
        ),
        case(
            "nodeSelector key with two slashes",
            pod("  nodeSelector:\n    a/b/c: x\n"),
            format!(
                "spec.nodeSelector: Invalid value: \"a/b/c\": a qualified name {QUALIFIED_NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
    ]
}

fn spread(constraint: &str) -> String {
    pod(&format!("  topologySpreadConstraints:\n  - {constraint}\n"))
}

fn topology_spread() -> Vec<Case> {
    const AT: &str = "spec.topologySpreadConstraints[0]";
    vec![
        case(
            "maxSkew 0",
            spread("{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}"),
            format!("{AT}.maxSkew: Invalid value: 0: must be greater than zero"),
        ),
        case(
            "no topologyKey",
            spread("{maxSkew: 1, topologyKey: \"\", whenUnsatisfiable: DoNotSchedule}"),
            format!("{AT}.topologyKey: Required value: can not be empty"),
        ),
        case(
            "whenUnsatisfiable outside the enum",
            spread("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}"),
            format!(
                "{AT}.whenUnsatisfiable: Unsupported value: \"Never\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
            ),
        ),
        case(
            "minDomains with ScheduleAnyway",
            spread(
                "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}",
            ),
            format!(
                "{AT}.minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"
            ),
        ),
        case(
            "minDomains 0",
            spread(
                "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 0}",
            ),
            format!("{AT}.minDomains: Invalid value: 0: must be greater than zero"),
        ),
        case(
            "nodeTaintsPolicy outside the enum",
            spread(
                "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Always}",
            ),
            format!(
                "{AT}.nodeTaintsPolicy: Unsupported value: \"Always\": supported values: \"Honor\", \"Ignore\""
            ),
        ),
        case(
            "matchLabelKeys repeating a selector key",
            spread(
                "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app]}",
            ),
            format!(
                "{AT}.matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"
            ),
        ),
    ]
}

fn ports_gates_and_others() -> Vec<Case> {
    let port = |port: &str| {
        pod(&format!(
            "  containers:\n  - name: c\n    ports:\n    - {port}\n"
        ))
    };
    vec![
        case(
            "container port above 65535",
            port("{containerPort: 70000}"),
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        case(
            "negative hostPort",
            port("{containerPort: 80, hostPort: -1}"),
            "spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
        ),
        case(
            "port protocol outside the enum",
            port("{containerPort: 80, protocol: HTTP}"),
            "spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        ),
        case(
            "scheduling gate that is not a qualified name",
            pod("  schedulingGates:\n  - name: a/b/c\n"),
            format!(
                "spec.schedulingGates[0].name: Invalid value: \"a/b/c\": a qualified name {QUALIFIED_NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
        case(
            "scheduler name longer than a DNS subdomain",
            pod(&format!("  schedulerName: {}\n", "s".repeat(65_525))),
            format!(
                "spec.schedulerName: Invalid value: \"{}\": must be no more than 253 characters",
                "s".repeat(65_525)
            ),
        ),
        case(
            "PriorityClass above the user-definable maximum",
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: too-high\nvalue: 2000000000\n",
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
        ),
        case(
            "PVC without access modes",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n",
            "spec.accessModes: Required value: at least 1 access mode is required",
        ),
        case(
            "PVC access mode outside the enum",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteSometimes]\n  resources:\n    requests:\n      storage: 1Gi\n",
            "spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
        ),
        case(
            "PV with negative capacity",
            "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv\nspec:\n  accessModes: [ReadWriteOnce]\n  capacity:\n    storage: -1Gi\n",
            "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero",
        ),
        case(
            "ReplicaSet with negative replicas",
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web\nspec:\n  replicas: -1\n  selector: {matchLabels: {app: web}}\n",
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        case(
            "workload template with a negative request",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers:\n      - name: c\n        resources: {requests: {cpu: \"-1\"}}\n",
            "spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
        ),
        case(
            "PodDisruptionBudget above 100%",
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  minAvailable: 150%\n  selector: {matchLabels: {app: web}}\n",
            "spec.minAvailable: Invalid value: \"150%\": must not be greater than 100%",
        ),
    ]
}

fn storage_class(body: &str) -> String {
    format!("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\n{body}")
}

fn csi_node(drivers: &str) -> String {
    format!(
        "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata:\n  name: node-a\nspec:\n  drivers:\n{drivers}"
    )
}

fn stateful_set_with_claims(templates: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  selector: {{matchLabels: {{app: db}}}}\n  template:\n    metadata: {{labels: {{app: db}}}}\n    spec: {{containers: [{{name: c}}]}}\n  volumeClaimTemplates:\n{templates}"
    )
}

/// StorageClasses, CSINodes, claims and StatefulSet claim templates
/// (`pkg/apis/storage/validation`, `ValidatePersistentVolumeClaimSpec`).
fn storage() -> Vec<Case> {
    vec![
        case(
            "StorageClass without a provisioner",
            storage_class(""),
            "provisioner: Required value",
        ),
        case(
            "StorageClass provisioner that is not a qualified name",
            storage_class("provisioner: a/b/c\n"),
            format!(
                "provisioner: Invalid value: \"a/b/c\": a qualified name {QUALIFIED_NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
        case(
            "StorageClass reclaim policy outside the enum",
            storage_class("provisioner: csi.example.com\nreclaimPolicy: Recycle\n"),
            "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
        ),
        case(
            "allowedTopologies requirement without values",
            storage_class(
                "provisioner: csi.example.com\nallowedTopologies:\n- matchLabelExpressions:\n  - {key: topology.kubernetes.io/zone, values: []}\n",
            ),
            "allowedTopologies[0].matchLabelExpressions[0].values: Required value",
        ),
        case(
            "allowedTopologies requirement with a value twice",
            storage_class(
                "provisioner: csi.example.com\nallowedTopologies:\n- matchLabelExpressions:\n  - {key: topology.kubernetes.io/zone, values: [a, a]}\n",
            ),
            "allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\"",
        ),
        case(
            "allowedTopologies term with a key twice",
            storage_class(
                "provisioner: csi.example.com\nallowedTopologies:\n- matchLabelExpressions:\n  - {key: zone, values: [a]}\n  - {key: zone, values: [b]}\n",
            ),
            "allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: \"zone\"",
        ),
        case(
            "CSINode driver without a node ID",
            csi_node("  - {name: csi.example.com}\n"),
            "spec.drivers[0].nodeID: Required value",
        ),
        case(
            "CSINode listing a driver twice",
            csi_node(
                "  - {name: csi.example.com, nodeID: n1}\n  - {name: csi.example.com, nodeID: n1}\n",
            ),
            "spec.drivers[1].name: Duplicate value: \"csi.example.com\"",
        ),
        case(
            "CSINode topology key that is not a qualified name",
            csi_node("  - {name: csi.example.com, nodeID: n1, topologyKeys: [a/b/c]}\n"),
            format!(
                "spec.drivers[0]: Invalid value: \"a/b/c\": a qualified name {QUALIFIED_NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
        case(
            "PVC volume mode outside the enum",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  volumeMode: Raw\n  resources:\n    requests:\n      storage: 1Gi\n",
            "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
        ),
        case(
            "StatefulSet claim template without a name",
            stateful_set_with_claims(
                "  - spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
            ),
            "spec.volumeClaimTemplates[0].metadata.name: Required value",
        ),
        case(
            "StatefulSet claim template without a storage request",
            stateful_set_with_claims(
                "  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce]}\n",
            ),
            "spec.volumeClaimTemplates[0].spec.resources[storage]: Required value",
        ),
    ]
}

/// Item 5: PodGroups as the API server validates them with berth's generated CRD.
fn pod_groups() -> Vec<Case> {
    vec![
        case(
            "minMember 0",
            pod_group("  minMember: 0\n"),
            "spec.minMember: Invalid value: 0: must be greater than or equal to 1",
        ),
        case(
            "scheduleTimeoutSeconds 0",
            pod_group("  minMember: 2\n  scheduleTimeoutSeconds: 0\n"),
            "spec.scheduleTimeoutSeconds: Invalid value: 0: must be greater than or equal to 1",
        ),
        case(
            "minResources that is not a quantity",
            pod_group("  minMember: 2\n  minResources:\n    cpu: x\n"),
            "spec.minResources.cpu: Invalid value: \"x\": must match the regular expression '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
        ),
        case(
            "unknown field",
            pod_group("  minMember: 2\n  minMembers: 3\n"),
            "spec.minMembers: unknown field \"spec.minMembers\"",
        ),
        case(
            "no minMember",
            pod_group("  scheduleTimeoutSeconds: 5\n"),
            "spec.minMember: Required value",
        ),
        case(
            "name with upper case",
            "apiVersion: berth.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: Gang\nspec:\n  minMember: 2\n",
            "metadata.name: Invalid value: \"Gang\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ]
}

#[test]
fn invalid_objects_are_refused_in_the_api_servers_words() {
    let groups = [
        names_and_metadata(),
        quantities(),
        taints_and_tolerations(),
        affinity(),
        topology_spread(),
        ports_gates_and_others(),
        storage(),
        pod_groups(),
    ];
    let mismatches: Vec<String> = groups
        .into_iter()
        .flatten()
        .filter_map(|case| {
            let got = load_error(&case.yaml);
            let want = format!("{FILE}: document 0: {}", case.error);
            (got != want).then(|| format!("case {:?}:\n  got:  {got}\n  want: {want}", case.name))
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn valid_objects_of_every_class_are_accepted() {
    let yaml = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-1.example.com
  labels: {topology.kubernetes.io/zone: a, example.com/MyName: my.value_1}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}, {key: dedicated, effect: NoExecute}]
status:
  # Device plugin and CSI resource names may be longer than a label name.
  capacity: {cpu: "4", memory: 8Gi, pods: "110", example.com/gpu: "2", attachable-volumes-csi-very-long-driver-name.storage.example.com: "39", hugepages-2Mi: "0"}
---
# A snapshot of a cluster holds the built-in classes.
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: system-node-critical}
value: 2000001000
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: team-a, labels: {app: web}}
spec:
  containers:
  - name: c
    ports: [{containerPort: 8080, hostPort: 80, protocol: TCP}]
    resources:
      requests: {cpu: 500m, memory: 1Gi}
      limits: {cpu: "1", example.com/gpu: "1"}
  tolerations:
  - {operator: Exists}
  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
  - {key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: cores, operator: Gt, values: ["2"]}]
          matchFields: [{key: metadata.name, operator: In, values: [node-1.example.com]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 100, preference: {matchExpressions: [{key: zone, operator: DoesNotExist}]}}
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 2, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash], nodeTaintsPolicy: Honor}
  # As the API server stores it: matchLabelKeys merged into the selector.
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}, matchExpressions: [{key: pod-template-hash, operator: In, values: [5d8f]}]}, matchLabelKeys: [pod-template-hash]}
  schedulingGates: [{name: example.com/wait}]
---
apiVersion: berth.dev/v1alpha1
kind: PodGroup
metadata: {name: gang, namespace: team-a}
spec: {minMember: 3, scheduleTimeoutSeconds: 30, minResources: {cpu: "3", memory: 3Gi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: Disk.CSI.Example.com
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [a, b]}]
- matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [c]}]
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1.example.com}
spec:
  drivers:
  - {name: disk.csi.example.com, nodeID: i-0abc, topologyKeys: [topology.kubernetes.io/zone], allocatable: {count: 39}}
  - {name: files.csi.example.com, nodeID: i-0abc}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: team-a}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c}]}
  volumeClaimTemplates:
  - metadata: {name: data, labels: {tier: storage}}
    spec: {accessModes: [ReadWriteOnce], storageClassName: zonal, volumeMode: Block, resources: {requests: {storage: 10Gi}}}
"#;
    if let Err(error) = load_str(Path::new(FILE), yaml) {
        panic!("valid input refused: {error}");
    }
}

#[test]
fn list_items_name_their_index() {
    let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: ok}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    tolerations: [{key: k, operator: Foo}]\n";
    assert_eq!(
        load_error(yaml),
        format!(
            "{FILE}: document 0: items[1].spec.tolerations[0].operator: Unsupported value: \"Foo\": supported values: \"Equal\", \"Exists\""
        )
    );
}

#[test]
fn the_document_number_counts_separators() {
    let yaml = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: m}\nstatus:\n  capacity: {cpu: \"-1\"}\n";
    assert_eq!(
        load_error(yaml),
        format!(
            "{FILE}: document 1: status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0"
        )
    );
}

// ---------------------------------------------------------------------------------------
// Through the binary

fn simulate_file(yaml: &str) -> std::process::Output {
    let dir = TempDir::new("validation");
    let path = dir.write(&format!("{}.yaml", yaml.len()), yaml);
    run_berth(&["simulate", "-f", &path.to_string_lossy()], None)
}

#[test]
fn the_binary_exits_2_naming_file_document_and_field() {
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\nstatus:\n  capacity: {cpu: \"1\", memory: 1Gi, pods: \"10\"}\n---\n";
    let cases = [
        (
            "negative request",
            format!(
                "{node}{}",
                container("      requests:\n        cpu: \"-5\"\n")
            ),
            "document 1: spec.containers[0].resources.requests[cpu]: Invalid value: \"-5\": must be greater than or equal to 0",
        ),
        (
            "PodGroup minResources",
            format!(
                "{node}{}",
                pod_group("  minMember: 1\n  minResources: {cpu: x}\n")
            ),
            "document 1: spec.minResources.cpu: Invalid value: \"x\": must match the regular expression",
        ),
        (
            "nodeSelectorTerms: []",
            format!("{node}{}", node_affinity(" []\n")),
            "document 1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
        ),
        (
            "PodGroup minMember 0",
            format!("{node}{}", pod_group("  minMember: 0\n")),
            "document 1: spec.minMember: Invalid value: 0: must be greater than or equal to 1",
        ),
    ];
    for (name, yaml, want) in cases {
        let output = simulate_file(&yaml);
        assert_exit(&output, 2);
        let err = stderr(&output);
        assert!(
            err.starts_with("error: ") && err.contains(".yaml: ") && err.contains(want),
            "{name}: {err}"
        );
    }
}

/// The API server lists every invalid field of an object, not the first: so does
/// simulate, one `error:` line each.
#[test]
fn every_invalid_field_of_an_object_is_reported() {
    let yaml = node(
        "spec:\n  taints:\n  - key: k\n    effect: Sometimes\nstatus:\n  capacity:\n    cpu: \"-4\"\n",
    );
    let output = simulate_file(&yaml);
    assert_exit(&output, 2);
    let lines: Vec<String> = stderr(&output)
        .lines()
        .map(|line| {
            line.split_once(".yaml: ")
                .map_or(line, |(_, rest)| rest)
                .to_string()
        })
        .collect();
    assert_eq!(
        lines,
        [
            "document 0: spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
            "document 0: status.capacity.cpu: Invalid value: \"-4\": must be greater than or equal to 0",
        ]
    );
}

/// `-f -` fed from a stream that never ends stops at the 64 MiB bound, quickly.
#[cfg(unix)]
#[test]
fn endless_stdin_is_refused_at_64_mib() {
    use std::process::{Command, Stdio};
    for command in ["simulate", "convert"] {
        let zero = std::fs::File::open("/dev/zero").expect("/dev/zero opens");
        let output = Command::new(BERTH)
            .args([command, "-f", "-"])
            .stdin(Stdio::from(zero))
            .output()
            .expect("berth runs");
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains("<stdin>: larger than 64 MiB"),
            "{command}: {}",
            stderr(&output)
        );
    }
}
