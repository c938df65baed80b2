//! Per-kind defaults, as the API server and its default admission plugins apply them:
//! node allocatable, pod scheduler name and tolerations, priority from PriorityClasses,
//! the default StorageClass, namespace labels and missing namespaces.

use super::*;

/// `status.allocatable` defaults to `status.capacity`, as in the API server's
/// `SetDefaults_NodeStatus`.
pub(super) fn default_node(node: &mut Node) {
    if let Some(status) = node.status.as_mut()
        && status.allocatable.is_none()
    {
        status.allocatable = status.capacity.clone();
    }
}

/// The API server's claim defaults: a uid (the PV controller and the volume binder match
/// a volume's `claimRef` to its claim by it) and `spec.volumeMode: Filesystem`.
pub(super) fn default_claim(claim: &mut PersistentVolumeClaim) {
    let namespace = claim.metadata.namespace.clone().unwrap_or_default();
    let name = claim.metadata.name.clone().unwrap_or_default();
    if claim.metadata.uid.as_deref().is_none_or(str::is_empty) {
        claim.metadata.uid = Some(deterministic_uid(&format!(
            "PersistentVolumeClaim/{namespace}/{name}"
        )));
    }
    if let Some(spec) = claim.spec.as_mut() {
        spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
    }
}

pub(super) const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
pub(super) const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// DefaultTolerationSeconds admission: 300 s for not-ready and unreachable.
pub(super) const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The pod defaults of the API server (`SetDefaults_Pod`, `PrepareForCreate`) and of the
/// DefaultTolerationSeconds admission plugin. Priority is resolved in [`resolve_priority`]
/// once all PriorityClasses are known.
pub(super) fn default_pod(pod: &mut Pod) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
        pod.metadata.uid = Some(deterministic_uid(&format!("{namespace}/{name}")));
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    if spec.scheduler_name.as_deref().is_none_or(str::is_empty) {
        spec.scheduler_name = Some(DEFAULT_SCHEDULER_NAME.to_string());
    }
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        default_requests_from_limits(container);
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for taint in [NOT_READY_TAINT, UNREACHABLE_TAINT] {
        if !tolerates_no_execute(tolerations, taint) {
            tolerations.push(Toleration {
                key: Some(taint.to_string()),
                operator: Some("Exists".to_string()),
                effect: Some("NoExecute".to_string()),
                toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                value: None,
            });
        }
    }
    // After the containers' defaults, as the API server orders them.
    default_pod_level_requests(pod);
    let status = pod.status.get_or_insert_with(PodStatus::default);
    status.phase.get_or_insert_with(|| "Pending".to_string());
}

/// A container that sets a limit but no request for a resource requests the limit.
pub(super) fn default_requests_from_limits(container: &mut Container) {
    let Some(resources) = container.resources.as_mut() else {
        return;
    };
    let Some(limits) = resources.limits.as_ref() else {
        return;
    };
    let requests = resources.requests.get_or_insert_with(BTreeMap::new);
    for (resource, quantity) in limits {
        requests
            .entry(resource.clone())
            .or_insert_with(|| quantity.clone());
    }
}

/// Upstream only adds a default toleration when none already tolerates the taint with
/// effect NoExecute (or any effect).
pub(super) fn tolerates_no_execute(tolerations: &[Toleration], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let key_matches = match t.key.as_deref() {
            None | Some("") => t.operator.as_deref() == Some("Exists"),
            Some(k) => k == key,
        };
        let effect_matches = matches!(t.effect.as_deref(), None | Some("") | Some("NoExecute"));
        key_matches && effect_matches
    })
}

pub(super) const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

/// The classes every cluster has, added when the input does not define them.
pub(super) fn add_system_priority_classes(classes: &mut Vec<PriorityClass>) {
    for (name, value) in [
        ("system-node-critical", 2_000_001_000),
        ("system-cluster-critical", 2_000_000_000),
    ] {
        if classes
            .iter()
            .all(|c| c.metadata.name.as_deref() != Some(name))
        {
            classes.push(PriorityClass {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    creation_timestamp: Some(creation_time(0)),
                    ..Default::default()
                },
                value: Some(value),
                preemption_policy: Some(PREEMPT_LOWER_PRIORITY.to_string()),
                description: Some("Built-in class of every cluster.".to_string()),
                global_default: Some(false),
            });
        }
    }
}

/// Priority admission's `establishPriority`: the class named `name`, else the
/// globalDefault class with the lowest value, else none (priority 0). `Err` when the
/// named class does not exist.
fn priority_class<'a>(
    name: Option<&str>,
    classes: &'a [PriorityClass],
) -> Result<Option<&'a PriorityClass>, ()> {
    match name.filter(|n| !n.is_empty()) {
        Some(name) => classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
            .map(Some)
            .ok_or(()),
        None => Ok(classes
            .iter()
            .filter(|c| c.global_default == Some(true))
            .min_by_key(|c| c.value.unwrap_or(0))),
    }
}

/// The Priority admission plugin: `spec.priority` and `spec.preemptionPolicy` come from
/// the named PriorityClass, or from the globalDefault class with the lowest value, or are
/// 0 and PreemptLowerPriority. An unknown class or a conflicting explicit priority is
/// rejected, as admission would.
pub(super) fn resolve_priority(pod: &mut Pod, classes: &[PriorityClass]) -> Result<(), FieldError> {
    let pod_name = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let spec = pod.spec.get_or_insert_with(Default::default);
    let named = spec.priority_class_name.clone();
    let class = priority_class(named.as_deref(), classes).map_err(|()| {
        let name = named.as_deref().unwrap_or_default();
        FieldError::new(
            "spec.priorityClassName",
            format!("\"{name}\""),
            format!("pod {pod_name} is forbidden: no PriorityClass with name {name} was found"),
        )
    })?;
    if let Some(class) = class {
        spec.priority_class_name = class.metadata.name.clone();
    }
    // A class without a value has Go's zero value.
    let value = class.map_or(0, |c| c.value.unwrap_or(0));
    let policy = class
        .and_then(|c| c.preemption_policy.clone())
        .unwrap_or_else(|| PREEMPT_LOWER_PRIORITY.to_string());
    if let Some(given) = spec.priority
        && given != value
    {
        return Err(FieldError::new(
            "spec.priority",
            given,
            format!(
                "pod {pod_name} is forbidden: the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
            ),
        ));
    }
    if let Some(given) = spec.preemption_policy.as_deref()
        && given != policy
    {
        return Err(FieldError::new(
            "spec.preemptionPolicy",
            format!("\"{given}\""),
            format!(
                "pod {pod_name} is forbidden: the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ),
        ));
    }
    spec.priority = Some(value);
    spec.preemption_policy = Some(policy);
    Ok(())
}

/// The Priority admission plugin for a Workload API PodGroup (upstream `admitPodGroup`):
/// `spec.priority` from the class `spec.priorityClassName` names, else from the
/// globalDefault class (whose name it takes), else 0. An unknown class or a different
/// explicit priority is rejected. `spec.preemptionPolicy` is left alone: admission sets
/// it only with the PodGroupPreemptionPolicy gate (alpha, off).
pub(super) fn resolve_pod_group_priority(
    group: &mut SchedulingPodGroup,
    classes: &[PriorityClass],
) -> Result<(), FieldError> {
    let group_name = format!(
        "{}/{}",
        group.metadata.namespace.as_deref().unwrap_or_default(),
        group.metadata.name.as_deref().unwrap_or_default()
    );
    let spec = &mut group.spec;
    let named = spec.priority_class_name.clone();
    let class = priority_class(named.as_deref(), classes).map_err(|()| {
        let name = named.as_deref().unwrap_or_default();
        FieldError::new(
            "spec.priorityClassName",
            format!("\"{name}\""),
            format!(
                "PodGroup {group_name} is forbidden: no PriorityClass with name {name} was found"
            ),
        )
    })?;
    if let Some(class) = class {
        spec.priority_class_name = class.metadata.name.clone();
    }
    let value = class.map_or(0, |c| c.value.unwrap_or(0));
    if let Some(given) = spec.priority
        && given != value
    {
        return Err(FieldError::new(
            "spec.priority",
            given,
            format!(
                "PodGroup {group_name} is forbidden: priority set in the pod group ({given}) must match the priority computed ({value}) based on the priority class set in the spec"
            ),
        ));
    }
    spec.priority = Some(value);
    Ok(())
}

/// The API server's PodGroup default (`SetObjectDefaults_PodGroup`):
/// `spec.disruptionMode: {single: {}}`.
pub(super) fn default_scheduling_pod_group(group: &mut SchedulingPodGroup) {
    group.spec.disruption_mode.get_or_insert_with(|| {
        k8s_openapi::api::scheduling::v1beta1::DisruptionMode {
            single: Some(k8s_openapi::api::scheduling::v1beta1::SingleDisruptionMode(
                serde_json::json!({}),
            )),
            all: None,
        }
    });
}

pub(super) const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The DefaultStorageClass admission plugin: a claim that names no class (the field is
/// absent, not `""`) gets the default class; with several defaults, the newest wins.
pub(super) fn default_storage_classes(input: &mut ClusterInput) {
    let default = input
        .storage_classes
        .iter()
        .filter(|class| {
            let annotations = class.metadata.annotations.as_ref();
            DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
                annotations.and_then(|a| a.get(*key)).map(String::as_str) == Some("true")
            })
        })
        .max_by(|a, b| {
            a.metadata
                .creation_timestamp
                .cmp(&b.metadata.creation_timestamp)
                .then_with(|| b.metadata.name.cmp(&a.metadata.name))
        })
        .and_then(|class| class.metadata.name.clone());
    let Some(default) = default else {
        return;
    };
    for claim in &mut input.pvcs {
        if let Some(spec) = claim.spec.as_mut()
            && spec.storage_class_name.is_none()
        {
            spec.storage_class_name = Some(default.clone());
        }
    }
}

pub(super) const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The API server labels every namespace with its own name.
pub(super) fn label_namespace(namespace: &mut Namespace) {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    namespace
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(NAMESPACE_NAME_LABEL.to_string(), name);
}

/// A namespace that objects live in exists in a real cluster; namespaces the input uses
/// but does not define are created (labelled as the API server would) so namespace
/// selectors see them.
pub(super) fn add_missing_namespaces(input: &mut ClusterInput) {
    let defined: HashSet<String> = input
        .namespaces
        .iter()
        .filter_map(|ns| ns.metadata.name.clone())
        .collect();
    let used = std::iter::once(DEFAULT_NAMESPACE.to_string())
        .chain(
            input
                .pods
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .pod_groups
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .scheduling_pod_groups
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .scheduler_plugins_pod_groups
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .pvcs
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .pdbs
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        );
    let mut added = HashSet::new();
    for name in used {
        if defined.contains(&name) || !added.insert(name.clone()) {
            continue;
        }
        let mut namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name),
                creation_timestamp: Some(creation_time(0)),
                ..Default::default()
            },
            ..Default::default()
        };
        label_namespace(&mut namespace);
        input.namespaces.push(namespace);
    }
}

/// The API server's ResourceClaim defaults (`SetDefaults_ExactDeviceRequest`,
/// `SetDefaults_DeviceSubRequest`): `allocationMode: ExactCount`, and `count: 1` for that
/// mode; the same for each `firstAvailable` subrequest.
pub(crate) fn default_claim_spec(spec: &mut k8s_openapi::api::resource::v1::ResourceClaimSpec) {
    let requests = spec
        .devices
        .as_mut()
        .and_then(|d| d.requests.as_mut())
        .into_iter()
        .flatten();
    for request in requests {
        if let Some(exact) = request.exactly.as_mut() {
            let mode = exact
                .allocation_mode
                .get_or_insert_with(|| "ExactCount".into());
            if mode == "ExactCount" {
                exact.count.get_or_insert(1);
            }
        }
        for sub in request.first_available.iter_mut().flatten() {
            let mode = sub
                .allocation_mode
                .get_or_insert_with(|| "ExactCount".into());
            if mode == "ExactCount" {
                sub.count.get_or_insert(1);
            }
        }
    }
}
