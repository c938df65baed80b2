//! Dispatching documents to kinds: each document is decoded into its type with errors
//! that name the field path, remembered by its key, and what the cluster's controllers
//! would create from it (the pods of a Deployment, a Job's pods...) is added.

use super::*;

/// The kinds `berth simulate` models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Node,
    Pod,
    /// berth's own `berth.dev/v1alpha1` PodGroup (Coscheduling).
    PodGroup,
    /// The Workload API's `scheduling.k8s.io/v1beta1` PodGroup (GangScheduling and the
    /// pod-group cycle).
    SchedulingPodGroup,
    /// scheduler-plugins' `scheduling.x-k8s.io/v1alpha1` PodGroup (Coscheduling, as
    /// berth's own).
    SchedulerPluginsPodGroup,
    /// The Workload API's `scheduling.k8s.io/v1beta1` Workload.
    Workload,
    /// Kubernetes 1.35's `scheduling.k8s.io/v1alpha1` Workload (GangScheduling of 1.35,
    /// for pods with `spec.workloadRef`).
    LegacyWorkload,
    SchedulerProfile,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    Namespace,
    PriorityClass,
    PodDisruptionBudget,
    Service,
    ReplicationController,
    ReplicaSet,
    StatefulSet,
    Deployment,
    Job,
    DaemonSet,
    ResourceSlice,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    DeviceTaintRule,
}

impl Kind {
    pub(super) const ALL: [Kind; 27] = [
        Kind::Node,
        Kind::Pod,
        Kind::PodGroup,
        Kind::SchedulingPodGroup,
        Kind::SchedulerPluginsPodGroup,
        Kind::Workload,
        Kind::LegacyWorkload,
        Kind::SchedulerProfile,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::StorageClass,
        Kind::CSINode,
        Kind::Namespace,
        Kind::PriorityClass,
        Kind::PodDisruptionBudget,
        Kind::Service,
        Kind::ReplicationController,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::Deployment,
        Kind::Job,
        Kind::DaemonSet,
        Kind::ResourceSlice,
        Kind::DeviceClass,
        Kind::ResourceClaim,
        Kind::ResourceClaimTemplate,
        Kind::DeviceTaintRule,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::PodGroup | Kind::SchedulingPodGroup | Kind::SchedulerPluginsPodGroup => {
                "PodGroup"
            }
            Kind::Workload | Kind::LegacyWorkload => "Workload",
            Kind::SchedulerProfile => "SchedulerProfile",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::StorageClass => "StorageClass",
            Kind::CSINode => "CSINode",
            Kind::Namespace => "Namespace",
            Kind::PriorityClass => "PriorityClass",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Service => "Service",
            Kind::ReplicationController => "ReplicationController",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::Deployment => "Deployment",
            Kind::Job => "Job",
            Kind::DaemonSet => "DaemonSet",
            Kind::ResourceSlice => "ResourceSlice",
            Kind::DeviceClass => "DeviceClass",
            Kind::ResourceClaim => "ResourceClaim",
            Kind::ResourceClaimTemplate => "ResourceClaimTemplate",
            Kind::DeviceTaintRule => "DeviceTaintRule",
        }
    }

    pub(super) fn api_version(self) -> &'static str {
        match self {
            Kind::Node
            | Kind::Pod
            | Kind::PersistentVolumeClaim
            | Kind::PersistentVolume
            | Kind::Namespace
            | Kind::Service
            | Kind::ReplicationController => "v1",
            Kind::ReplicaSet | Kind::StatefulSet | Kind::Deployment | Kind::DaemonSet => "apps/v1",
            Kind::Job => "batch/v1",
            Kind::PodGroup | Kind::SchedulerProfile => "berth.dev/v1alpha1",
            Kind::StorageClass | Kind::CSINode => "storage.k8s.io/v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::SchedulingPodGroup | Kind::Workload => "scheduling.k8s.io/v1beta1",
            Kind::SchedulerPluginsPodGroup => "scheduling.x-k8s.io/v1alpha1",
            Kind::LegacyWorkload => "scheduling.k8s.io/v1alpha1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::ResourceSlice
            | Kind::DeviceClass
            | Kind::ResourceClaim
            | Kind::ResourceClaimTemplate
            | Kind::DeviceTaintRule => "resource.k8s.io/v1",
        }
    }

    pub(super) fn namespaced(self) -> bool {
        matches!(
            self,
            Kind::Pod
                | Kind::PodGroup
                | Kind::SchedulingPodGroup
                | Kind::SchedulerPluginsPodGroup
                | Kind::Workload
                | Kind::LegacyWorkload
                | Kind::PersistentVolumeClaim
                | Kind::PodDisruptionBudget
                | Kind::Service
                | Kind::ReplicationController
                | Kind::ReplicaSet
                | Kind::StatefulSet
                | Kind::Deployment
                | Kind::Job
                | Kind::DaemonSet
                | Kind::ResourceClaim
                | Kind::ResourceClaimTemplate
        )
    }

    /// The first kind named `kind`; for the workload kinds, whose names are unique.
    pub(super) fn from_kind(kind: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == kind)
    }

    /// The kind a document's `apiVersion` and `kind` name: `Err` with the apiVersions
    /// berth reads that kind at when only the version is unknown (a name such as
    /// `PodGroup` is read at more than one), `Err` with none for an unknown kind.
    pub(super) fn lookup(api_version: &str, kind: &str) -> Result<Kind, Vec<&'static str>> {
        let named = Kind::ALL.into_iter().filter(|k| k.name() == kind);
        let mut versions = Vec::new();
        for known in named {
            if known.api_version() == api_version {
                return Ok(known);
            }
            versions.push(known.api_version());
        }
        Err(versions)
    }
}

/// Builds a [`ClusterInput`] document by document.
pub(super) struct Loader {
    input: ClusterInput,
    warnings: Vec<InputWarning>,
    /// (kind, namespace, name) -> where it was first defined.
    seen: HashMap<(Kind, String, String), Source>,
    /// Where each pod and PVC came from, for errors raised after all files are read.
    pod_sources: Vec<Source>,
    /// Where each Workload API PodGroup came from, likewise.
    scheduling_pod_group_sources: Vec<Source>,
    /// Objects read so far; drives the deterministic `creationTimestamp`.
    objects: i64,
    /// The path of each workload read as a `List` item (`items[3].`), for errors found
    /// when its pods are created.
    workload_paths: HashMap<(Kind, String, String), String>,
    /// The `creationTimestamp` (Unix seconds) given to the first object without one; later
    /// objects get one second more each.
    epoch_seconds: i64,
    /// Pods that have `spec.priority` keep it (they were admitted by a live API server);
    /// otherwise it is derived from the PriorityClass, as Priority admission does.
    keep_admitted_priorities: bool,
    /// The simulated controllers' feature gates.
    pub(super) controllers: ControllerOptions,
}

impl Default for Loader {
    fn default() -> Self {
        Loader {
            input: ClusterInput::default(),
            warnings: Vec::new(),
            seen: HashMap::new(),
            pod_sources: Vec::new(),
            scheduling_pod_group_sources: Vec::new(),
            objects: 0,
            workload_paths: HashMap::new(),
            epoch_seconds: CREATION_EPOCH_SECONDS,
            keep_admitted_priorities: false,
            controllers: ControllerOptions::default(),
        }
    }
}

impl Loader {
    pub(super) fn load_text(&mut self, file: &Path, text: &str) -> Result<(), InputError> {
        for (index, document) in split_documents(text).iter().enumerate() {
            if !document.has_content {
                continue;
            }
            let at = Source {
                file: file.to_path_buf(),
                document: index,
            };
            let value = parse_document(document, &at)?;
            self.load_value(value, &at, "")?;
        }
        Ok(())
    }

    /// Loads one object (or the items of a `List`); `prefix` is the path of `value` in its
    /// document, for errors in list items.
    pub(super) fn load_value(
        &mut self,
        value: Value,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        let object = match value {
            Value::Null => return Ok(()),
            Value::Object(object) => object,
            other => {
                return Err(InputError::field(
                    at,
                    FieldError::new(
                        display_path(prefix),
                        other,
                        "expected a Kubernetes object: a mapping with apiVersion, kind and metadata",
                    ),
                ));
            }
        };
        let api_version = required_string(&object, "apiVersion", at, prefix)?;
        let kind = required_string(&object, "kind", at, prefix)?;
        if kind == "List" || (kind.ends_with("List") && object.contains_key("items")) {
            return self.load_list(object, at, prefix);
        }
        match Kind::lookup(&api_version, &kind) {
            Ok(known) => self.load_object(known, Value::Object(object), at, prefix),
            Err(versions) if versions.is_empty() => {
                self.warn(
                    at,
                    format!(
                        "skipping {kind} ({api_version}): berth simulate does not model this kind"
                    ),
                );
                Ok(())
            }
            Err(versions) => {
                self.warn(
                    at,
                    format!(
                        "skipping {kind} ({api_version}): unsupported apiVersion, berth simulate reads {kind} as {}",
                        one_of(&versions)
                    ),
                );
                Ok(())
            }
        }
    }

    pub(super) fn load_list(
        &mut self,
        mut object: serde_json::Map<String, Value>,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        match object.remove("items") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(items)) => {
                for (index, item) in items.into_iter().enumerate() {
                    self.load_value(item, at, &format!("{prefix}items[{index}]."))?;
                }
                Ok(())
            }
            Some(other) => Err(InputError::field(
                at,
                FieldError::new(
                    format!("{prefix}items"),
                    other,
                    "expected a list of objects",
                ),
            )),
        }
    }

    pub(super) fn load_object(
        &mut self,
        kind: Kind,
        value: Value,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        self.objects += 1;
        let created = self.creation_time(self.objects - 1);
        match kind {
            Kind::Node => {
                let mut node: Node = decode(value, at, prefix)?;
                self.admit(kind, &mut node.metadata, created, at, prefix)?;
                // Before the kubelet-style default: the API server never sees a copied
                // allocatable, so an invalid capacity is one error, not two.
                validation::check(validation::node(&node), at, prefix)?;
                default_node(&mut node);
                self.input.nodes.push(node);
            }
            Kind::Pod => {
                // A 1.35 pod's `spec.workloadRef`, which the 1.37 types drop.
                let workload_ref = match value.pointer("/spec/workloadRef") {
                    Some(reference) => Some(
                        serde_json::from_value::<WorkloadReference>(reference.clone()).map_err(
                            |error| {
                                let path = display_path(&format!("{prefix}spec.workloadRef"));
                                InputError::field(
                                    at,
                                    FieldError::new(
                                        path,
                                        "",
                                        format!("cannot decode Pod: {error}"),
                                    ),
                                )
                            },
                        )?,
                    ),
                    None => None,
                };
                let mut pod: Pod = decode(value, at, prefix)?;
                if let Some(reference) = workload_ref {
                    reference.carry_into(&mut pod);
                }
                self.admit(kind, &mut pod.metadata, created, at, prefix)?;
                default_pod(&mut pod);
                validation::check(validation::pod(&pod), at, prefix)?;
                self.input.pods.push(pod);
                self.pod_sources.push(at.clone());
            }
            Kind::PodGroup => {
                validation::check(validation::pod_group_document(&value), at, prefix)?;
                let mut group: PodGroup = decode(value, at, prefix)?;
                self.admit(kind, &mut group.metadata, created, at, prefix)?;
                validation::check(validation::pod_group(&group), at, prefix)?;
                self.input.pod_groups.push(group);
            }
            Kind::SchedulingPodGroup => {
                let mut group: SchedulingPodGroup = decode(value, at, prefix)?;
                self.admit(kind, &mut group.metadata, created, at, prefix)?;
                default_scheduling_pod_group(&mut group);
                validation::check(validation::scheduling_pod_group(&group), at, prefix)?;
                self.input.scheduling_pod_groups.push(group);
                self.scheduling_pod_group_sources.push(at.clone());
            }
            Kind::SchedulerPluginsPodGroup => {
                let schema = validation::scheduler_plugins_pod_group_document(&value);
                validation::check(schema, at, prefix)?;
                // A missing or null `spec` decodes as the zero spec, as in scheduler-plugins.
                let mut group: scheduler_plugins::PodGroup = decode(value, at, prefix)?;
                self.admit(kind, &mut group.metadata, created, at, prefix)?;
                let errors = validation::scheduler_plugins_pod_group(&group);
                validation::check(errors, at, prefix)?;
                self.input.scheduler_plugins_pod_groups.push(group);
            }
            Kind::Workload => {
                let mut workload: Workload = decode(value, at, prefix)?;
                self.admit(kind, &mut workload.metadata, created, at, prefix)?;
                validation::check(validation::workload(&workload), at, prefix)?;
                self.input.scheduling_workloads.push(workload);
            }
            Kind::LegacyWorkload => {
                let mut workload: LegacyWorkload = decode(value, at, prefix)?;
                self.admit(kind, &mut workload.metadata, created, at, prefix)?;
                validation::check(validation::legacy_workload(&workload), at, prefix)?;
                self.input.legacy_workloads.push(workload);
            }
            Kind::SchedulerProfile => {
                let raw = self.admit_raw(kind, value, created, at, prefix)?;
                validation::check(validation::profile_document(&raw), at, prefix)?;
                self.input.profiles.push(ProfileDocument {
                    raw,
                    source: at.clone(),
                });
            }
            Kind::PersistentVolumeClaim => {
                let mut claim: PersistentVolumeClaim = decode(value, at, prefix)?;
                self.admit(kind, &mut claim.metadata, created, at, prefix)?;
                default_claim(&mut claim);
                validation::check(validation::persistent_volume_claim(&claim), at, prefix)?;
                self.input.pvcs.push(claim);
            }
            Kind::PersistentVolume => {
                let mut volume: PersistentVolume = decode(value, at, prefix)?;
                self.admit(kind, &mut volume.metadata, created, at, prefix)?;
                if let Some(spec) = volume.spec.as_mut() {
                    spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
                    spec.persistent_volume_reclaim_policy
                        .get_or_insert_with(|| "Retain".into());
                }
                validation::check(validation::persistent_volume(&volume), at, prefix)?;
                self.input.pvs.push(volume);
            }
            Kind::StorageClass => {
                let mut class: StorageClass = decode(value, at, prefix)?;
                self.admit(kind, &mut class.metadata, created, at, prefix)?;
                class.reclaim_policy.get_or_insert_with(|| "Delete".into());
                class
                    .volume_binding_mode
                    .get_or_insert_with(|| "Immediate".into());
                validation::check(validation::storage_class(&class), at, prefix)?;
                self.input.storage_classes.push(class);
            }
            Kind::CSINode => {
                let mut csi_node: CSINode = decode(value, at, prefix)?;
                self.admit(kind, &mut csi_node.metadata, created, at, prefix)?;
                validation::check(validation::csi_node(&csi_node), at, prefix)?;
                self.input.csi_nodes.push(csi_node);
            }
            Kind::ResourceSlice => {
                let mut slice: ResourceSlice = decode(value, at, prefix)?;
                self.admit(kind, &mut slice.metadata, created, at, prefix)?;
                self.input.resource_slices.push(slice);
            }
            Kind::DeviceClass => {
                let mut class: DeviceClass = decode(value, at, prefix)?;
                self.admit(kind, &mut class.metadata, created, at, prefix)?;
                self.input.device_classes.push(class);
            }
            Kind::ResourceClaim => {
                let mut claim: ResourceClaim = decode(value, at, prefix)?;
                self.admit(kind, &mut claim.metadata, created, at, prefix)?;
                if let Some(spec) = claim.spec.as_mut() {
                    default_claim_spec(spec);
                }
                if claim.metadata.uid.as_deref().is_none_or(str::is_empty) {
                    let key = format!(
                        "ResourceClaim/{}/{}",
                        claim.metadata.namespace.as_deref().unwrap_or_default(),
                        claim.metadata.name.as_deref().unwrap_or_default()
                    );
                    claim.metadata.uid = Some(deterministic_uid(&key));
                }
                self.input.resource_claims.push(claim);
            }
            Kind::ResourceClaimTemplate => {
                let mut template: ResourceClaimTemplate = decode(value, at, prefix)?;
                self.admit(kind, &mut template.metadata, created, at, prefix)?;
                if let Some(spec) = template.spec.as_mut().and_then(|t| t.spec.as_mut()) {
                    default_claim_spec(spec);
                }
                self.input.resource_claim_templates.push(template);
            }
            Kind::DeviceTaintRule => {
                let mut rule: DeviceTaintRule = decode(value, at, prefix)?;
                self.admit(kind, &mut rule.metadata, created, at, prefix)?;
                self.input.device_taint_rules.push(rule);
            }
            Kind::Namespace => {
                let mut namespace: Namespace = decode(value, at, prefix)?;
                self.admit(kind, &mut namespace.metadata, created, at, prefix)?;
                label_namespace(&mut namespace);
                validation::check(validation::namespace(&namespace), at, prefix)?;
                self.input.namespaces.push(namespace);
            }
            Kind::PriorityClass => {
                let mut class: PriorityClass = decode(value, at, prefix)?;
                self.admit(kind, &mut class.metadata, created, at, prefix)?;
                class
                    .preemption_policy
                    .get_or_insert_with(|| PREEMPT_LOWER_PRIORITY.into());
                validation::check(validation::priority_class(&class), at, prefix)?;
                self.input.priority_classes.push(class);
            }
            Kind::PodDisruptionBudget => {
                let mut budget: PodDisruptionBudget = decode(value, at, prefix)?;
                self.admit(kind, &mut budget.metadata, created, at, prefix)?;
                validation::check(validation::pod_disruption_budget(&budget), at, prefix)?;
                self.input.pdbs.push(budget);
            }
            Kind::Service => {
                let mut service: Service = decode(value, at, prefix)?;
                self.admit(kind, &mut service.metadata, created, at, prefix)?;
                validation::check(validation::service(&service), at, prefix)?;
                self.input.services.push(service);
            }
            Kind::ReplicationController => {
                let mut rc: ReplicationController = decode(value, at, prefix)?;
                self.admit(kind, &mut rc.metadata, created, at, prefix)?;
                validation::check(validation::replication_controller(&rc), at, prefix)?;
                self.input.replication_controllers.push(rc);
            }
            Kind::ReplicaSet => {
                let mut rs: ReplicaSet = decode(value, at, prefix)?;
                self.admit(kind, &mut rs.metadata, created, at, prefix)?;
                self.remember_path(kind, &rs.metadata, prefix);
                validation::check(validation::replica_set(&rs), at, prefix)?;
                self.input.replica_sets.push(rs);
            }
            Kind::StatefulSet => {
                let mut ss: StatefulSet = decode(value, at, prefix)?;
                self.admit(kind, &mut ss.metadata, created, at, prefix)?;
                self.remember_path(kind, &ss.metadata, prefix);
                validation::check(validation::stateful_set(&ss), at, prefix)?;
                self.input.stateful_sets.push(ss);
            }
            Kind::Deployment => {
                let mut deployment: Deployment = decode(value, at, prefix)?;
                self.admit(kind, &mut deployment.metadata, created, at, prefix)?;
                self.remember_path(kind, &deployment.metadata, prefix);
                validation::check(validation::deployment(&deployment), at, prefix)?;
                self.input.deployments.push(deployment);
            }
            Kind::Job => {
                let mut job: Job = decode(value, at, prefix)?;
                self.admit(kind, &mut job.metadata, created, at, prefix)?;
                self.remember_path(kind, &job.metadata, prefix);
                validation::check(validation::job(&job), at, prefix)?;
                self.input.jobs.push(job);
            }
            Kind::DaemonSet => {
                let mut daemon_set: DaemonSet = decode(value, at, prefix)?;
                self.admit(kind, &mut daemon_set.metadata, created, at, prefix)?;
                self.remember_path(kind, &daemon_set.metadata, prefix);
                validation::check(validation::daemon_set(&daemon_set), at, prefix)?;
                self.input.daemon_sets.push(daemon_set);
            }
        }
        Ok(())
    }

    /// Metadata as the API server sets it on create: a name (from `generateName` if
    /// need be), the namespace, the creation time; rejects a second object of the same
    /// kind and name.
    pub(super) fn admit(
        &mut self,
        kind: Kind,
        meta: &mut ObjectMeta,
        created: Time,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        if kind.namespaced() {
            if meta.namespace.as_deref().is_none_or(str::is_empty) {
                meta.namespace = Some(DEFAULT_NAMESPACE.to_string());
            }
        } else {
            meta.namespace = None;
        }
        let namespace = meta.namespace.clone().unwrap_or_default();
        if meta.name.as_deref().is_none_or(str::is_empty) {
            match meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
                Some(base) => {
                    let suffix = name_suffix(&format!("{at}/{prefix}/{}", self.objects));
                    meta.name = Some(format!("{base}{suffix}"));
                }
                None => {
                    return Err(InputError::field(
                        at,
                        FieldError::new(
                            format!("{prefix}metadata.name"),
                            "",
                            format!(
                                "Required value: {} needs a name or generateName",
                                kind.name()
                            ),
                        ),
                    ));
                }
            }
        }
        let name = meta.name.clone().unwrap_or_default();
        meta.creation_timestamp.get_or_insert(created);
        let key = (kind, namespace.clone(), name.clone());
        if let Some(first) = self.seen.get(&key) {
            let qualified = if namespace.is_empty() {
                name
            } else {
                format!("{namespace}/{name}")
            };
            return Err(InputError::Duplicate {
                at: at.clone(),
                kind: kind.name(),
                name: qualified,
                first: first.clone(),
            });
        }
        self.seen.insert(key, at.clone());
        Ok(())
    }

    /// [`Loader::admit`] for an object kept as JSON: only its `metadata` is decoded, and
    /// written back as admitted.
    pub(super) fn admit_raw(
        &mut self,
        kind: Kind,
        mut value: Value,
        created: Time,
        at: &Source,
        prefix: &str,
    ) -> Result<Value, InputError> {
        /// Only the metadata of an object; the rest is ignored.
        #[derive(serde::Deserialize)]
        struct Metadata {
            #[serde(default)]
            metadata: Option<ObjectMeta>,
        }
        let Metadata { metadata } = decode(value.clone(), at, prefix)?;
        let mut meta = metadata.unwrap_or_default();
        self.admit(kind, &mut meta, created, at, prefix)?;
        let admitted = serde_json::to_value(&meta).map_err(|error| {
            InputError::field(
                at,
                FieldError::new(format!("{prefix}metadata"), "", error.to_string()),
            )
        })?;
        if let Value::Object(object) = &mut value {
            object.insert("metadata".to_string(), admitted);
        }
        Ok(value)
    }

    pub(super) fn warn(&mut self, at: &Source, message: String) {
        self.warnings.push(InputWarning {
            source: at.clone(),
            message,
        });
    }

    /// Defaults that depend on objects anywhere in the input (priority classes, default
    /// storage class, namespaces), applied once everything is read.
    pub(super) fn finish(mut self) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
        self.create_controlled_objects()?;
        self.create_implicit_pod_groups()?;
        add_system_priority_classes(&mut self.input.priority_classes);
        let classes = &self.input.priority_classes;
        for (pod, at) in self.input.pods.iter_mut().zip(&self.pod_sources) {
            // A pod with a resourceVersion was stored by an API server, so Priority
            // admission already ran on it (its class may be gone or unreadable since).
            let has_priority = pod.spec.as_ref().and_then(|s| s.priority).is_some();
            let stored = pod.metadata.resource_version.is_some();
            if has_priority && (stored || self.keep_admitted_priorities) {
                continue;
            }
            resolve_priority(pod, classes).map_err(|error| InputError::field(at, error))?;
        }
        let groups = self.input.scheduling_pod_groups.iter_mut();
        for (group, at) in groups.zip(&self.scheduling_pod_group_sources) {
            // As for pods: a stored PodGroup went through Priority admission already.
            let has_priority = group.spec.priority.is_some();
            let stored = group.metadata.resource_version.is_some();
            if has_priority && (stored || self.keep_admitted_priorities) {
                continue;
            }
            resolve_pod_group_priority(group, classes)
                .map_err(|error| InputError::field(at, error))?;
        }
        default_storage_classes(&mut self.input);
        add_missing_namespaces(&mut self.input);
        Ok((self.input, self.warnings))
    }
}

impl Loader {
    pub(super) fn remember_path(&mut self, kind: Kind, meta: &ObjectMeta, prefix: &str) {
        if !prefix.is_empty() {
            let namespace = meta.namespace.clone().unwrap_or_default();
            let name = meta.name.clone().unwrap_or_default();
            self.workload_paths
                .insert((kind, namespace, name), prefix.to_string());
        }
    }

    /// Where a workload was read, for errors about it and the objects made from it.
    pub(super) fn workload_source(&self, workload: &WorkloadRef) -> Source {
        Kind::from_kind(workload.kind)
            .and_then(|kind| {
                self.seen
                    .get(&(kind, workload.namespace.clone(), workload.name.clone()))
            })
            .cloned()
            .unwrap_or_else(Source::builtin)
    }

    /// A field error about a workload, with the workload's place in its document.
    pub(super) fn workload_error(
        &self,
        workload: &WorkloadRef,
        mut error: FieldError,
    ) -> InputError {
        let path = Kind::from_kind(workload.kind).and_then(|kind| {
            self.workload_paths
                .get(&(kind, workload.namespace.clone(), workload.name.clone()))
        });
        if let Some(prefix) = path {
            error.path = format!("{prefix}{}", error.path);
        }
        InputError::field(&self.workload_source(workload), error)
    }

    /// The ReplicaSets, Pods, PVCs (and, with WorkloadWithJob, the Workloads and
    /// PodGroups) the workload controllers would create
    /// ([`controllers::expand`]), admitted and defaulted as if read from the workload's
    /// document; after every object is read, so existing pods and nodes are known.
    pub(super) fn create_controlled_objects(&mut self) -> Result<(), InputError> {
        let expansion = controllers::expand(&mut self.input, &self.controllers)
            .map_err(|failure| self.workload_error(&failure.workload, *failure.error))?;
        for (owner, mut workload) in expansion.workloads {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::Workload, &mut workload.metadata, &at)?;
            validation::check(validation::workload(&workload), &at, "")?;
            self.input.scheduling_workloads.push(workload);
        }
        for (owner, mut group) in expansion.scheduling_pod_groups {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::SchedulingPodGroup, &mut group.metadata, &at)?;
            default_scheduling_pod_group(&mut group);
            validation::check(validation::scheduling_pod_group(&group), &at, "")?;
            self.input.scheduling_pod_groups.push(group);
            self.scheduling_pod_group_sources.push(at);
        }
        for (owner, mut replica_set) in expansion.replica_sets {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::ReplicaSet, &mut replica_set.metadata, &at)?;
            self.input.replica_sets.push(replica_set);
        }
        for (owner, mut claim) in expansion.claims {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::PersistentVolumeClaim, &mut claim.metadata, &at)?;
            default_claim(&mut claim);
            self.input.pvcs.push(claim);
        }
        for (owner, mut pod) in expansion.pods {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::Pod, &mut pod.metadata, &at)?;
            default_pod(&mut pod);
            self.input.pods.push(pod);
            self.pod_sources.push(at);
        }
        Ok(())
    }

    /// The PodGroups berth creates for pods annotated `berth.dev/min-member` whose group
    /// does not exist, as the operator does live; an invalid annotation is a warning (the
    /// operator's `InvalidMinMember` event) and creates nothing.
    pub(super) fn create_implicit_pod_groups(&mut self) -> Result<(), InputError> {
        let mut groups = Vec::new();
        let mut warnings = Vec::new();
        let candidates = self.input.pods.iter().zip(&self.pod_sources);
        for (pod, at) in candidates.filter(|(pod, _)| !is_finished(pod)) {
            let Some((namespace, name)) = pod_group_of(pod) else {
                continue;
            };
            let key = (Kind::PodGroup, namespace.clone(), name.clone());
            if self.seen.contains_key(&key) || groups.iter().any(|(k, _, _)| *k == key) {
                continue;
            }
            match implicit_group(pod, &namespace, &name) {
                Ok(Some(group)) => groups.push((key, group, at.clone())),
                Ok(None) => {}
                Err(message) => warnings.push(InputWarning {
                    source: at.clone(),
                    message: format!("pod {namespace}/{}: {message}", pod_name(pod)),
                }),
            }
        }
        self.warnings.extend(warnings);
        for (_, mut group, at) in groups {
            self.admit_created(Kind::PodGroup, &mut group.metadata, &at)?;
            self.input.pod_groups.push(group);
        }
        Ok(())
    }

    /// [`Loader::admit`] for an object berth creates on the input's behalf.
    pub(super) fn admit_created(
        &mut self,
        kind: Kind,
        meta: &mut ObjectMeta,
        at: &Source,
    ) -> Result<(), InputError> {
        self.objects += 1;
        let created = self.creation_time(self.objects - 1);
        self.admit(kind, meta, created, at, "")
    }
}

/// `a`, `a or b`, `a, b or c`.
fn one_of(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [only] => (*only).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

pub(super) fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

pub(super) fn required_string(
    object: &serde_json::Map<String, Value>,
    field: &str,
    at: &Source,
    prefix: &str,
) -> Result<String, InputError> {
    match object.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(InputError::field(
            at,
            FieldError::new(
                format!("{prefix}{field}"),
                other,
                "expected a non-empty string",
            ),
        )),
        None => Err(InputError::field(
            at,
            FieldError::new(
                format!("{prefix}{field}"),
                "",
                "Required value: every document must be a Kubernetes object with apiVersion and kind",
            ),
        )),
    }
}

/// The path of an object inside its document: `<document>` or `items[3]`.
pub(super) fn display_path(prefix: &str) -> String {
    match prefix.trim_end_matches('.') {
        "" => "<document>".to_string(),
        path => path.to_string(),
    }
}

/// Decodes a typed object; on failure the error names the field path serde reached.
pub(super) fn decode<T: DeserializeOwned>(
    value: Value,
    at: &Source,
    prefix: &str,
) -> Result<T, InputError> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let path = error.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let full = display_path(&format!("{prefix}{path}"));
        let inner = error.inner().to_string();
        // Kubernetes reads YAML 1.1 too, where a bare y/n/yes/no/on/off is a boolean.
        let hint = if inner.starts_with("invalid type: boolean") {
            " (YAML reads bare y, n, yes, no, on and off as booleans: quote the value)"
        } else {
            ""
        };
        InputError::field(
            at,
            FieldError::new(full, "", format!("cannot decode {kind}: {inner}{hint}")),
        )
    })
}

pub(super) fn creation_time(index: i64) -> Time {
    time_at(CREATION_EPOCH_SECONDS.saturating_add(index))
}

fn time_at(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH))
}

impl Loader {
    /// A loader for objects read from a live API server: pods keep their admitted
    /// priorities, and objects without a `creationTimestamp` are created after
    /// `latest` (Unix seconds), the newest of the cluster's.
    pub(super) fn after_cluster(latest: i64) -> Loader {
        Loader {
            epoch_seconds: latest.saturating_add(1),
            keep_admitted_priorities: true,
            ..Loader::default()
        }
    }

    fn creation_time(&self, index: i64) -> Time {
        time_at(self.epoch_seconds.saturating_add(index))
    }
}
