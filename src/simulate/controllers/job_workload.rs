//! The Job controller's Workload and PodGroup (upstream `job_scheduling_manager.go`,
//! behind the WorkloadWithJob gate: alpha since 1.36, off by default, so berth simulate
//! reproduces it only when asked to, see [`ControllerOptions`]).
//!
//! With the gate on, the controller gives a Job whose template names no scheduling group
//! a Workload API group before it creates pods:
//!
//! - A **root** Job (no controller owner) gets a Workload `<job>-<hash of its uid>` with
//!   one PodGroupTemplate `<job>-pgt-0` compiled from `spec.scheduling` (basic by
//!   default; a gang without `minCount` gets `max(1, parallelism)`) and the template's
//!   `priorityClassName`, and a PodGroup `<workload>-<template>-<hash>` made from it,
//!   owned by the Job and (not as controller) by the Workload.
//! - A Job whose controller delegated its group (annotation
//!   `scheduling.k8s.io/group-template-name`) gets only the PodGroup, from that template
//!   of the Workload its parent controls; none while that Workload does not exist.
//! - Objects are created only for a Job that never started (no pods, no start time, no
//!   succeeded or failed pods, never suspended); a started Job reuses the ones it
//!   controls. A Workload or PodGroup the Job does not control is never used.
//! - The pods it creates name the PodGroup in `spec.schedulingGroup` and carry a
//!   (non-controller) ownerReference to it; a changed gang `minCount` is written back to
//!   the Job's own Workload and PodGroup.
//!
//! Names are upstream's: the hashes are 32-bit FNV-1a of what upstream hashes (the Job's
//! uid as `dump.ForHash` prints it, the workload and template names), in the
//! `rand.SafeEncodeString` alphabet. `spec.scheduling.schedulingConstraints` and
//! `resourceClaims` belong to gates berth does not model and are refused.

use k8s_openapi::api::batch::v1::JobSchedulingConfiguration;
use k8s_openapi::api::scheduling::v1beta1::{
    AllDisruptionMode, BasicSchedulingPolicy, DisruptionMode, GangSchedulingPolicy, PodGroup,
    PodGroupSchedulingPolicy, PodGroupSpec, PodGroupTemplate, SingleDisruptionMode,
    TypedLocalObjectReference, Workload, WorkloadReference, WorkloadSpec,
};

use super::*;

/// The annotation by which a Job's controller hands it the PodGroup of one of the
/// templates of the Workload the controller owns (upstream `GroupTemplateNameAnnotation`).
pub const GROUP_TEMPLATE_NAME_ANNOTATION: &str = "scheduling.k8s.io/group-template-name";
/// The apiVersion of Workloads and PodGroups.
const SCHEDULING_V1BETA1: &str = "scheduling.k8s.io/v1beta1";
/// `validation.DNS1123SubdomainMaxLength`.
const MAX_NAME_LENGTH: usize = 253;

/// The PodGroup a Job's pods name.
#[derive(Debug, Clone)]
pub(super) struct JobGroup {
    pub name: String,
    pub uid: String,
}

/// A gang `minCount` to write on an existing Workload (its single template) or PodGroup.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum MinCountPatch {
    Workload {
        namespace: String,
        name: String,
        min_count: i32,
    },
    PodGroup {
        namespace: String,
        name: String,
        min_count: i32,
    },
}

/// The scheduling objects of the input, as the controller's listers see them.
pub(super) struct SchedulingObjects<'a> {
    pub workloads: &'a [Workload],
    pub pod_groups: &'a [PodGroup],
}

/// What the controller creates and patches for the Jobs.
#[derive(Debug, Default)]
pub(super) struct JobWorkloads {
    pub workloads: Vec<(WorkloadRef, Workload)>,
    pub pod_groups: Vec<(WorkloadRef, PodGroup)>,
    pub patches: Vec<MinCountPatch>,
}

impl JobWorkloads {
    /// Upstream `ensureWorkloadAndPodGroup`: the PodGroup `job`'s pods name, if any,
    /// creating or patching what the controller would. `owned` are the Job's pods.
    pub(super) fn ensure(
        &mut self,
        job: &Job,
        owned: &[&Pod],
        existing: &SchedulingObjects,
    ) -> Result<Option<JobGroup>, WorkloadError> {
        let owner = workload_ref("Job", &job.metadata);
        let Some(spec) = job.spec.as_ref() else {
            return Ok(None);
        };
        let template_groups = spec
            .template
            .spec
            .as_ref()
            .is_some_and(|s| s.scheduling_group.is_some());
        if template_groups {
            return Ok(None);
        }
        let new_job = is_new_job(job, owned);
        let parent = job
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true));
        match parent {
            None => self.root(job, &owner, new_job, existing),
            Some(parent) => {
                let annotations = job.metadata.annotations.as_ref();
                match annotations.and_then(|a| a.get(GROUP_TEMPLATE_NAME_ANNOTATION)) {
                    Some(template) => self.delegated(job, parent, template, new_job, existing),
                    None => Ok(None),
                }
            }
        }
    }

    /// A root Job: its Workload, then its PodGroup.
    fn root(
        &mut self,
        job: &Job,
        owner: &WorkloadRef,
        new_job: bool,
        existing: &SchedulingObjects,
    ) -> Result<Option<JobGroup>, WorkloadError> {
        let desired = compile_workload(job, owner)?;
        let controlled: Vec<&Workload> = existing
            .workloads
            .iter()
            .filter(|w| refers_to_job(w, &owner.name) && is_controlled_by_job(&w.metadata, job))
            .collect();
        let workload = match controlled.as_slice() {
            [] if new_job => {
                self.workloads.push((owner.clone(), desired.clone()));
                desired.clone()
            }
            [] => return Ok(None),
            [one] => {
                let templates = one.spec.pod_group_templates.as_deref().unwrap_or_default();
                if templates.len() != 1 {
                    return Err(invalid(
                        owner,
                        "metadata.name",
                        owner.name.clone(),
                        &format!(
                            "workload {}/{} for job {}/{} has {} PodGroupTemplates, want exactly 1",
                            owner.namespace,
                            one.metadata.name.as_deref().unwrap_or_default(),
                            owner.namespace,
                            owner.name,
                            templates.len()
                        ),
                    ));
                }
                (*one).clone()
            }
            // Ambiguous: upstream falls back to pod-by-pod scheduling.
            _ => return Ok(None),
        };
        let group = self.pod_group_for(job, owner, &workload, None, true, new_job, existing);
        self.sync_min_count(&desired, &workload, group.as_ref(), existing);
        Ok(group.map(|(group, _)| group))
    }

    /// A Job whose controller delegated its PodGroup to it.
    fn delegated(
        &mut self,
        job: &Job,
        parent: &OwnerReference,
        template_name: &str,
        new_job: bool,
        existing: &SchedulingObjects,
    ) -> Result<Option<JobGroup>, WorkloadError> {
        let owner = workload_ref("Job", &job.metadata);
        let group = parent
            .api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group);
        let workload = existing.workloads.iter().find(|w| {
            namespace_of(&w.metadata) == owner.namespace
                && w.spec.controller_ref.as_ref().is_some_and(|r| {
                    r.api_group.as_deref().unwrap_or_default() == group
                        && r.kind == parent.kind
                        && r.name == parent.name
                })
        });
        let Some(workload) = workload else {
            return Ok(None);
        };
        let Some(template) = template_of(workload, Some(template_name)) else {
            return Ok(None);
        };
        let found = self.pod_group_for(
            job,
            &owner,
            workload,
            Some(template_name),
            false,
            new_job,
            existing,
        );
        if let (Some((group, true)), Some(gang)) = (&found, &template.scheduling_policy.gang) {
            self.patch_pod_group(&owner.namespace, &group.name, gang.min_count, existing);
        }
        Ok(found.map(|(group, _)| group))
    }

    /// The PodGroup of `workload`'s template the Job controls, or a new one for a new
    /// Job; whether it existed before.
    #[allow(clippy::too_many_arguments)]
    fn pod_group_for(
        &mut self,
        job: &Job,
        owner: &WorkloadRef,
        workload: &Workload,
        template_name: Option<&str>,
        link_workload: bool,
        new_job: bool,
        existing: &SchedulingObjects,
    ) -> Option<(JobGroup, bool)> {
        let workload_name = workload.metadata.name.clone().unwrap_or_default();
        let controlled: Vec<&PodGroup> = existing
            .pod_groups
            .iter()
            .filter(|g| {
                namespace_of(&g.metadata) == owner.namespace
                    && g.spec
                        .workload_ref
                        .as_ref()
                        .is_some_and(|r| r.workload_name == workload_name)
                    && is_controlled_by_job(&g.metadata, job)
            })
            .collect();
        match controlled.as_slice() {
            [one] => Some((group_of(one), true)),
            [] if new_job => {
                let template = template_of(workload, template_name)?;
                let group = new_pod_group(job, workload, template, link_workload);
                let found = group_of(&group);
                self.pod_groups.push((owner.clone(), group));
                Some((found, false))
            }
            // None and not new, or ambiguous: pods are not grouped.
            _ => None,
        }
    }

    /// Upstream `syncGangMinCount`: the gang `minCount` the Job's spec now gives, written
    /// to its existing Workload and PodGroup where they differ.
    fn sync_min_count(
        &mut self,
        desired: &Workload,
        workload: &Workload,
        group: Option<&(JobGroup, bool)>,
        existing: &SchedulingObjects,
    ) {
        let Some(gang) = template_of(desired, None).and_then(|t| t.scheduling_policy.gang.clone())
        else {
            return;
        };
        let namespace = namespace_of(&workload.metadata);
        let current = template_of(workload, None).and_then(|t| t.scheduling_policy.gang.clone());
        let is_input = existing.workloads.iter().any(|w| {
            w.metadata.name == workload.metadata.name && namespace_of(&w.metadata) == namespace
        });
        if is_input && current.is_some_and(|c| c.min_count != gang.min_count) {
            self.patches.push(MinCountPatch::Workload {
                namespace: namespace.clone(),
                name: workload.metadata.name.clone().unwrap_or_default(),
                min_count: gang.min_count,
            });
        }
        if let Some((group, true)) = group {
            self.patch_pod_group(&namespace, &group.name, gang.min_count, existing);
        }
    }

    fn patch_pod_group(
        &mut self,
        namespace: &str,
        name: &str,
        min_count: i32,
        existing: &SchedulingObjects,
    ) {
        let differs = existing.pod_groups.iter().any(|g| {
            namespace_of(&g.metadata) == namespace
                && g.metadata.name.as_deref() == Some(name)
                && g.spec
                    .scheduling_policy
                    .gang
                    .as_ref()
                    .is_some_and(|gang| gang.min_count != min_count)
        });
        if differs {
            self.patches.push(MinCountPatch::PodGroup {
                namespace: namespace.to_string(),
                name: name.to_string(),
                min_count,
            });
        }
    }
}

/// Applies the `minCount` patches to the input's Workloads and PodGroups.
pub(super) fn apply_patches(patches: &[MinCountPatch], input: &mut ClusterInput) {
    for patch in patches {
        match patch {
            MinCountPatch::Workload {
                namespace,
                name,
                min_count,
            } => {
                let template = input
                    .scheduling_workloads
                    .iter_mut()
                    .filter(|w| namespace_of(&w.metadata) == *namespace)
                    .find(|w| w.metadata.name.as_deref() == Some(name.as_str()))
                    .and_then(|w| w.spec.pod_group_templates.as_mut()?.first_mut());
                if let Some(gang) = template.and_then(|t| t.scheduling_policy.gang.as_mut()) {
                    gang.min_count = *min_count;
                }
            }
            MinCountPatch::PodGroup {
                namespace,
                name,
                min_count,
            } => {
                let group = input
                    .scheduling_pod_groups
                    .iter_mut()
                    .filter(|g| namespace_of(&g.metadata) == *namespace)
                    .find(|g| g.metadata.name.as_deref() == Some(name.as_str()));
                if let Some(gang) = group.and_then(|g| g.spec.scheduling_policy.gang.as_mut()) {
                    gang.min_count = *min_count;
                }
            }
        }
    }
}

/// Upstream `isNewJob`: no pods, never started, nothing succeeded or failed, never
/// suspended.
fn is_new_job(job: &Job, owned: &[&Pod]) -> bool {
    let status = job.status.as_ref();
    owned.is_empty()
        && status.and_then(|s| s.start_time.as_ref()).is_none()
        && status.and_then(|s| s.succeeded).unwrap_or(0) == 0
        && status.and_then(|s| s.failed).unwrap_or(0) == 0
        && !status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Suspended")
}

/// A Workload's `spec.controllerRef` names the batch Job `name`.
fn refers_to_job(workload: &Workload, name: &str) -> bool {
    workload.spec.controller_ref.as_ref().is_some_and(|r| {
        r.api_group.as_deref() == Some("batch") && r.kind == "Job" && r.name == name
    })
}

/// `metav1.IsControlledBy`: the controller ownerReference has the Job's uid.
fn is_controlled_by_job(meta: &ObjectMeta, job: &Job) -> bool {
    namespace_of(meta) == namespace_of(&job.metadata)
        && meta.owner_references.iter().flatten().any(|r| {
            r.controller == Some(true)
                && r.kind == "Job"
                && Some(&r.uid) == job.metadata.uid.as_ref()
        })
}

/// The template named `name`, or the only one when `name` is `None`.
fn template_of<'a>(workload: &'a Workload, name: Option<&str>) -> Option<&'a PodGroupTemplate> {
    let templates = workload
        .spec
        .pod_group_templates
        .as_deref()
        .unwrap_or_default();
    match name {
        None => templates.first(),
        Some(name) => templates.iter().find(|t| t.name == name),
    }
}

fn group_of(group: &PodGroup) -> JobGroup {
    JobGroup {
        name: group.metadata.name.clone().unwrap_or_default(),
        uid: group.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Upstream `generateWorkload`: the Job's `spec.scheduling` compiled into a Workload of
/// one template (`WorkloadItemForJob`).
fn compile_workload(job: &Job, owner: &WorkloadRef) -> Result<Workload, WorkloadError> {
    let spec = job.spec.as_ref();
    let scheduling = spec.and_then(|s| s.scheduling.clone()).unwrap_or_default();
    refuse_unmodelled(&scheduling, owner)?;
    let parallelism = spec.and_then(|s| s.parallelism).unwrap_or(1);
    let policy = scheduling.scheduling_policy.as_ref();
    let scheduling_policy = match policy.and_then(|p| p.gang.as_ref()) {
        Some(gang) => PodGroupSchedulingPolicy {
            basic: None,
            gang: Some(GangSchedulingPolicy {
                min_count: gang.min_count.unwrap_or(parallelism.max(1)),
            }),
        },
        None => PodGroupSchedulingPolicy {
            basic: Some(BasicSchedulingPolicy(serde_json::json!({}))),
            gang: None,
        },
    };
    let disruption_mode = scheduling.disruption_mode.map(|mode| DisruptionMode {
        all: mode.all.map(|_| AllDisruptionMode(serde_json::json!({}))),
        single: mode
            .single
            .map(|_| SingleDisruptionMode(serde_json::json!({}))),
    });
    let priority_class_name = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.priority_class_name.clone())
        .filter(|n| !n.is_empty());
    let name = workload_name(owner, job.metadata.uid.as_deref().unwrap_or_default());
    Ok(Workload {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(owner.namespace.clone()),
            uid: Some(super::super::input::deterministic_uid(&format!(
                "Workload/{}/{name}",
                owner.namespace
            ))),
            owner_references: Some(vec![controller_ref("batch/v1", "Job", &job.metadata)]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            controller_ref: Some(TypedLocalObjectReference {
                api_group: Some("batch".to_string()),
                kind: "Job".to_string(),
                name: owner.name.clone(),
            }),
            pod_group_templates: Some(vec![PodGroupTemplate {
                name: format!("{}-pgt-0", owner.name),
                scheduling_policy,
                disruption_mode,
                priority_class_name,
                ..PodGroupTemplate::default()
            }]),
            composite_pod_group_templates: None,
        },
    })
}

/// The parts of `spec.scheduling` whose gates berth does not model.
fn refuse_unmodelled(
    scheduling: &JobSchedulingConfiguration,
    owner: &WorkloadRef,
) -> Result<(), WorkloadError> {
    let unmodelled = [
        (
            "spec.scheduling.schedulingConstraints",
            scheduling.scheduling_constraints.is_some(),
        ),
        (
            "spec.scheduling.resourceClaims",
            scheduling
                .resource_claims
                .as_ref()
                .is_some_and(|c| !c.is_empty()),
        ),
    ];
    match unmodelled.into_iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(invalid(
            owner,
            field,
            serde_json::Value::Null,
            "berth simulate does not reproduce this field of the Job's Workload",
        )),
        None => Ok(()),
    }
}

/// Upstream `newPodGroup` with the Job controller's owners: the template's policy,
/// disruption mode and priority class, a `workloadRef` back to it.
fn new_pod_group(
    job: &Job,
    workload: &Workload,
    template: &PodGroupTemplate,
    link_workload: bool,
) -> PodGroup {
    let namespace = namespace_of(&workload.metadata);
    let workload_name = workload.metadata.name.clone().unwrap_or_default();
    let name = pod_group_name(&workload_name, &template.name);
    let mut owners = vec![controller_ref("batch/v1", "Job", &job.metadata)];
    if link_workload {
        owners.push(OwnerReference {
            api_version: SCHEDULING_V1BETA1.to_string(),
            kind: "Workload".to_string(),
            name: workload_name.clone(),
            uid: workload.metadata.uid.clone().unwrap_or_default(),
            controller: None,
            block_owner_deletion: None,
        });
    }
    PodGroup {
        metadata: ObjectMeta {
            uid: Some(super::super::input::deterministic_uid(&format!(
                "PodGroup/{namespace}/{name}"
            ))),
            name: Some(name),
            namespace: Some(namespace),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            workload_ref: Some(WorkloadReference {
                workload_name,
                template_name: template.name.clone(),
            }),
            scheduling_policy: template.scheduling_policy.clone(),
            scheduling_constraints: template.scheduling_constraints.clone(),
            disruption_mode: template.disruption_mode.clone(),
            priority_class_name: template.priority_class_name.clone(),
            priority: template.priority,
            ..PodGroupSpec::default()
        },
        status: None,
    }
}

/// Names the pods' group and adds the PodGroup to their owners, as `manageJob` does.
pub(super) fn join_group(pod: &mut Pod, group: &JobGroup) {
    pod.spec
        .get_or_insert_with(PodSpec::default)
        .scheduling_group = Some(k8s_openapi::api::core::v1::PodSchedulingGroup {
        pod_group_name: Some(group.name.clone()),
    });
    pod.metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(OwnerReference {
            api_version: SCHEDULING_V1BETA1.to_string(),
            kind: "PodGroup".to_string(),
            name: group.name.clone(),
            uid: group.uid.clone(),
            controller: None,
            block_owner_deletion: None,
        });
}

/// Upstream `computeWorkloadName`: `<job name, truncated>-<hash of the Job's uid>`.
fn workload_name(owner: &WorkloadRef, uid: &str) -> String {
    // `dump.ForHash` prints a `types.UID` with its type and without quotes.
    let hash = safe_encode(&fnv32a(format!("(types.UID){uid}").as_bytes()).to_string());
    let prefix = truncate(&owner.name, MAX_NAME_LENGTH - hash.len() - 1);
    format!("{prefix}-{hash}")
}

/// Upstream `computePodGroupName`: `<workload>-<template>-<hash of both>`, each name
/// truncated to its fair share of the length left.
fn pod_group_name(workload: &str, template: &str) -> String {
    let hash = safe_encode(&fnv32a(format!("{workload}{template}").as_bytes()).to_string());
    let available = MAX_NAME_LENGTH - hash.len() - 2;
    let (mut workload, mut template) = (workload, template);
    if workload.len() + template.len() > available {
        let half = available / 2;
        if workload.len() <= half {
            template = truncate(template, available - workload.len());
        } else if template.len() <= half {
            workload = truncate(workload, available - template.len());
        } else {
            workload = truncate(workload, available - half);
            template = truncate(template, half);
        }
    }
    format!("{workload}-{template}-{hash}")
}

/// The first `max` bytes of a name (names are ASCII).
fn truncate(name: &str, max: usize) -> &str {
    name.get(..max.min(name.len())).unwrap_or(name)
}
