//! The cluster behind the HTTP API: the registry of served resources and the object store,
//! with the object operations (create, get, update, patch, delete, binding, list) and
//! their semantics — preconditions, finalizers, status rules, the checks on a CRD itself, and CRDs
//! that start and stop serving their resources.
//!
//! Every operation is synchronous and runs under the server's one lock, so each write is
//! atomic with respect to lists and watches.

use serde_json::{Value, json};

use crate::crd;
use crate::errors::{ApiError, Cause};
use crate::pagination::{self, ContinueToken};
use crate::patch::{self, PatchType};
use crate::resources::{Registry, ResourceDef};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{StorageKey, Store, object_key};
use crate::strategy::{self, finalizers, is_deleting, metadata_mut, same_state};

/// A list request's filters and page.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub label: LabelSelector,
    pub field: FieldSelector,
    /// Whether either selector was given (the real server then omits remainingItemCount).
    pub filtered: bool,
    pub limit: Option<usize>,
    pub continue_from: Option<ContinueToken>,
}

impl ListQuery {
    pub fn matches(&self, object: &Value) -> bool {
        self.label.matches(object) && self.field.matches(object)
    }
}

/// A PATCH request's body and options.
#[derive(Debug, Clone, Copy)]
pub struct PatchRequest<'a> {
    pub body: &'a [u8],
    pub patch_type: PatchType,
    /// Sent to the status subresource.
    pub status: bool,
}

#[derive(Debug)]
pub struct Cluster {
    pub registry: Registry,
    pub store: Store,
}

/// Namespaces the real server refuses to delete.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

fn namespaces_key() -> StorageKey {
    (String::new(), "namespaces".to_string())
}

fn crds_key() -> StorageKey {
    (
        "apiextensions.k8s.io".to_string(),
        "customresourcedefinitions".to_string(),
    )
}

fn is_crd(def: &ResourceDef) -> bool {
    def.storage_key() == crds_key()
}

/// The object as a client of `def`'s version sees it.
pub fn present(def: &ResourceDef, object: &Value) -> Value {
    let mut object = object.clone();
    if object.is_object() {
        object["apiVersion"] = json!(def.api_version());
        object["kind"] = json!(def.kind);
    }
    object
}

/// A `metav1.Status` of success.
pub fn success_status(code: u16, details: Option<Value>) -> Value {
    let mut status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code});
    if let Some(details) = details {
        status["details"] = details;
    }
    status
}

/// Rejects bodies the real server could not decode into an object with ObjectMeta.
fn check_shape(body: &Value) -> Result<(), ApiError> {
    let Some(object) = body.as_object() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let metadata = object.get("metadata").unwrap_or(&Value::Null);
    if !(metadata.is_object() || metadata.is_null()) {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    for field in ["name", "generateName", "namespace", "resourceVersion"] {
        if !(metadata[field].is_string() || metadata[field].is_null()) {
            return Err(ApiError::bad_request(format!(
                "metadata.{field} must be a string"
            )));
        }
    }
    for field in ["labels", "annotations"] {
        let map = &metadata[field];
        if !(map.is_null()
            || map
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string)))
        {
            return Err(ApiError::bad_request(format!(
                "metadata.{field} must be a map of strings"
            )));
        }
    }
    let finalizers = &metadata["finalizers"];
    if !(finalizers.is_null()
        || finalizers
            .as_array()
            .is_some_and(|f| f.iter().all(Value::is_string)))
    {
        return Err(ApiError::bad_request(
            "metadata.finalizers must be a list of strings",
        ));
    }
    Ok(())
}

/// The generic name rule every resource has (`IsValidPathSegmentName`).
fn check_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    let why = if name.is_empty() {
        None
    } else if name == "." || name == ".." {
        Some(format!("may not be '{name}'"))
    } else if name.contains('/') || name.contains('%') {
        Some("may not contain '/' or '%'".to_string())
    } else {
        return Ok(());
    };
    let cause = match why {
        None => Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: name or generateName is required".into(),
            field: "metadata.name".into(),
        },
        Some(why) => Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: \"{name}\": {why}"),
            field: "metadata.name".into(),
        },
    };
    Err(ApiError::invalid(&def.kind, &def.group, name, vec![cause]))
}

impl Cluster {
    /// The built-in resources and the namespaces `default` and `kube-system`.
    pub fn new(history_window: usize) -> Cluster {
        let mut cluster = Cluster {
            registry: Registry::builtin(),
            store: Store::new(history_window),
        };
        if let Some(def) = cluster.registry.get("", "v1", "namespaces").cloned() {
            for name in ["default", "kube-system"] {
                // Cannot fail: a fresh store has no namespaces.
                let body = json!({"metadata": {"name": name}});
                let _ = cluster.create(&def, "", body);
            }
        }
        cluster
    }

    pub fn resolve(&self, group: &str, version: &str, resource: &str) -> Option<ResourceDef> {
        self.registry.get(group, version, resource).cloned()
    }

    pub fn get(&self, def: &ResourceDef, namespace: &str, name: &str) -> Result<Value, ApiError> {
        self.store
            .get(&def.storage_key(), namespace, name)
            .map(|object| present(def, object))
            .ok_or_else(|| ApiError::not_found(&def.resource, &def.group, name))
    }

    /// POST: 201 with the stored object; 409 AlreadyExists; 404 for a missing namespace.
    pub fn create(
        &mut self,
        def: &ResourceDef,
        namespace: &str,
        mut body: Value,
    ) -> Result<Value, ApiError> {
        check_shape(&body)?;
        if let Some(kind) = body["kind"].as_str().filter(|k| *k != def.kind) {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
        if def.namespaced {
            let given = body["metadata"]["namespace"].as_str().unwrap_or_default();
            if !given.is_empty() && given != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            if self.store.get(&namespaces_key(), "", namespace).is_none() {
                return Err(ApiError::not_found("namespaces", "", namespace));
            }
            metadata_mut(&mut body).insert("namespace".into(), json!(namespace));
        }
        if body["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let generate = body["metadata"]["generateName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if body["metadata"]["name"].as_str().is_none_or(str::is_empty) && !generate.is_empty() {
            metadata_mut(&mut body).insert(
                "name".into(),
                json!(format!("{generate}{}", strategy::name_suffix())),
            );
        }
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        check_name(def, &name)?;
        strategy::prepare_for_create(def, &mut body);
        let body = self.admit(def, &name, body)?;
        if self
            .store
            .get(&def.storage_key(), namespace, &name)
            .is_some()
        {
            return Err(ApiError::already_exists(&def.resource, &def.group, &name));
        }
        Ok(present(def, &self.commit(def, body)))
    }

    /// PUT: optimistic concurrency on `metadata.resourceVersion` (unconditional without
    /// one), status rules, finalizer completion.
    pub fn update(
        &mut self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        mut body: Value,
        status: bool,
    ) -> Result<Value, ApiError> {
        check_shape(&body)?;
        match body["metadata"]["name"].as_str() {
            Some(given) if !given.is_empty() && given != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({given}) does not match the name on the URL ({name})"
                )));
            }
            _ => {
                metadata_mut(&mut body).insert("name".into(), json!(name));
            }
        }
        if def.namespaced {
            let given = body["metadata"]["namespace"].as_str().unwrap_or_default();
            if !given.is_empty() && given != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            metadata_mut(&mut body).insert("namespace".into(), json!(namespace));
        }
        let existing = self
            .store
            .get(&def.storage_key(), namespace, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&def.resource, &def.group, name))?;
        let wanted_rv = body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        if !wanted_rv.is_empty()
            && Some(wanted_rv) != existing["metadata"]["resourceVersion"].as_str()
        {
            return Err(ApiError::conflict(&def.resource, &def.group, name));
        }
        if is_deleting(&existing) && !status {
            let old = finalizers(&existing);
            if let Some(added) = finalizers(&body).into_iter().find(|f| !old.contains(f)) {
                let cause = Cause {
                    reason: "FieldValueForbidden".into(),
                    message: format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{\"{added}\"}}"
                    ),
                    field: "metadata.finalizers".into(),
                };
                return Err(ApiError::invalid(&def.kind, &def.group, name, vec![cause]));
            }
        }
        let mut object = strategy::prepare_for_update(def, body, &existing, status);
        if let Some(rv) = existing["metadata"].get("resourceVersion") {
            object["metadata"]["resourceVersion"] = rv.clone();
        }
        let object = self.admit(def, name, object)?;
        if same_state(&object, &existing) {
            return Ok(present(def, &existing));
        }
        let stored = self.commit(def, object);
        if is_deleting(&stored) && finalizers(&stored).is_empty() {
            self.commit_delete(def, namespace, name);
        }
        Ok(present(def, &stored))
    }

    /// PATCH: the patched object is written as an update would be.
    pub fn patch(
        &mut self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        request: PatchRequest<'_>,
    ) -> Result<Value, ApiError> {
        let patch_error = |message: String| match request.patch_type {
            PatchType::Json => ApiError::new(422, "Invalid", message),
            _ => ApiError::bad_request(message),
        };
        let existing = self
            .store
            .get(&def.storage_key(), namespace, name)
            .map(|o| present(def, o));
        let Some(existing) = existing else {
            return Err(ApiError::not_found(&def.resource, &def.group, name));
        };
        let patched = patch::apply_patch(&existing, request.body, request.patch_type, &def.kind)
            .map_err(patch_error)?;
        self.update(def, namespace, name, patched, request.status)
    }

    /// DELETE: preconditions, then either marks the object for deletion (finalizers
    /// pending) or removes it. Returns the response body.
    pub fn delete(
        &mut self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        options: &Value,
    ) -> Result<Value, ApiError> {
        let existing = self
            .store
            .get(&def.storage_key(), namespace, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&def.resource, &def.group, name))?;
        if def.storage_key() == namespaces_key() && IMMORTAL_NAMESPACES.contains(&name) {
            let mut error = ApiError::new(
                403,
                "Forbidden",
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
            );
            error.kind = Some("namespaces".into());
            error.name = Some(name.to_string());
            return Err(error);
        }
        for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            let Some(wanted) = options["preconditions"][field].as_str() else {
                continue;
            };
            let actual = existing["metadata"][field].as_str().unwrap_or_default();
            if wanted != actual {
                let mut error = ApiError::conflict(&def.resource, &def.group, name);
                error.message = format!(
                    "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {label} in precondition: {wanted}, {label} in object meta: {actual}",
                    qualified(def)
                );
                return Err(error);
            }
        }
        if !finalizers(&existing).is_empty() {
            if is_deleting(&existing) {
                return Ok(present(def, &existing));
            }
            let mut marked = existing.clone();
            let metadata = metadata_mut(&mut marked);
            metadata.insert("deletionTimestamp".into(), json!(strategy::now()));
            metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
            // The real server bumps generation when it starts a graceful deletion.
            if let Some(generation) = metadata.get("generation").and_then(Value::as_i64) {
                metadata.insert("generation".into(), json!(generation + 1));
            }
            return Ok(present(def, &self.commit(def, marked)));
        }
        let deleted = self.commit_delete(def, namespace, name).unwrap_or(existing);
        // Pods answer with the deleted object (ReturnDeletedObject); the rest with a Status.
        if def.group.is_empty() && def.resource == "pods" {
            return Ok(present(def, &deleted));
        }
        let mut details =
            json!({"name": name, "kind": def.resource, "uid": deleted["metadata"]["uid"]});
        if !def.group.is_empty() {
            details["group"] = json!(def.group);
        }
        Ok(success_status(200, Some(details)))
    }

    /// DELETE on a collection: deletes every matching object; answers with the list of
    /// what was deleted or marked for deletion.
    pub fn delete_collection(
        &mut self,
        def: &ResourceDef,
        namespace: Option<&str>,
        query: &ListQuery,
        options: &Value,
    ) -> Result<Value, ApiError> {
        let keys: Vec<(String, String)> = self
            .store
            .list(&def.storage_key(), namespace)
            .filter(|o| query.matches(o))
            .map(object_key)
            .collect();
        let mut items = Vec::new();
        for (ns, name) in keys {
            let before = self.store.get(&def.storage_key(), &ns, &name).cloned();
            self.delete(def, &ns, &name, options)?;
            let after = self.store.get(&def.storage_key(), &ns, &name).cloned();
            if let Some(object) = after.or(before) {
                items.push(present(def, &object));
            }
        }
        Ok(json!({
            "kind": def.list_kind,
            "apiVersion": def.api_version(),
            "metadata": {"resourceVersion": self.store.current_rv().to_string()},
            "items": items,
        }))
    }

    /// POST pods/<name>/binding: assigns the pod to `target.name` once.
    pub fn bind(
        &mut self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        binding: &Value,
    ) -> Result<Value, ApiError> {
        check_shape(binding)?;
        let Some(node) = binding["target"]["name"].as_str().filter(|n| !n.is_empty()) else {
            let cause = Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "target.name".into(),
            };
            return Err(ApiError::invalid("Binding", "", name, vec![cause]));
        };
        let mut pod = self
            .store
            .get(&def.storage_key(), namespace, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&def.resource, &def.group, name))?;
        let refuse = |why: String| {
            let mut error = ApiError::new(
                409,
                "Conflict",
                format!("Operation cannot be fulfilled on pods/binding \"{name}\": {why}"),
            );
            error.kind = Some("pods/binding".into());
            error.name = Some(name.to_string());
            error
        };
        if is_deleting(&pod) {
            return Err(refuse(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        if let Some(bound) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            return Err(refuse(format!(
                "pod {name} is already assigned to node \"{bound}\""
            )));
        }
        let existing = pod.clone();
        strategy::set_in(&mut pod, &["spec", "nodeName"], json!(node));
        if let Some(annotations) = binding["metadata"]["annotations"].as_object() {
            for (key, value) in annotations {
                strategy::set_in(&mut pod, &["metadata", "annotations", key], value.clone());
            }
        }
        set_pod_scheduled(&mut pod);
        let generation = existing["metadata"]["generation"].as_i64().unwrap_or(0);
        pod["metadata"]["generation"] = json!(generation + 1);
        self.commit(def, pod);
        Ok(success_status(201, None))
    }

    /// GET on a collection: the filtered, sorted page and the list's resourceVersion.
    pub fn list(
        &self,
        def: &ResourceDef,
        namespace: Option<&str>,
        query: &ListQuery,
    ) -> Result<Value, ApiError> {
        let list_rv = match &query.continue_from {
            Some(token) => {
                self.store
                    .check_resumable(token.rv)
                    .map_err(|_| pagination::expired())?;
                token.rv
            }
            None => self.store.current_rv(),
        };
        let mut matching = self
            .store
            .list(&def.storage_key(), namespace)
            .filter(|object| {
                let (ns, name) = object_key(object);
                query
                    .continue_from
                    .as_ref()
                    .is_none_or(|t| t.is_after(&ns, &name))
                    && query.matches(object)
            });
        let limit = query.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let page: Vec<&Value> = matching.by_ref().take(limit).collect();
        let remaining = matching.count();
        let mut metadata = json!({"resourceVersion": list_rv.to_string()});
        if remaining > 0
            && let Some(last) = page.last()
        {
            let (namespace, name) = object_key(last);
            let token = ContinueToken {
                rv: list_rv,
                namespace,
                name,
            };
            metadata["continue"] = json!(token.encode());
            if !query.filtered {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        Ok(json!({
            "kind": def.list_kind,
            "apiVersion": def.api_version(),
            "metadata": metadata,
            "items": page.into_iter().map(|o| present(def, o)).collect::<Vec<_>>(),
        }))
    }

    /// The checks and status of a CRD itself; custom resources are stored as written
    /// (their schema's pruning, defaulting and validation are the real API server's,
    /// tested there).
    fn admit(&self, def: &ResourceDef, name: &str, object: Value) -> Result<Value, ApiError> {
        if is_crd(def) {
            let mut object = object;
            crd::served_resources(&object)
                .map_err(|causes| ApiError::invalid(&def.kind, &def.group, name, causes))?;
            crd::complete(&mut object);
            return Ok(object);
        }
        Ok(object)
    }

    /// Stores a write; a CRD write (re)starts serving its resources.
    fn commit(&mut self, def: &ResourceDef, object: Value) -> Value {
        let stored = self.store.put(&def.storage_key(), object);
        if is_crd(def)
            && !is_deleting(&stored)
            && let Ok(defs) = crd::served_resources(&stored)
        {
            if let Some(first) = defs.first() {
                self.registry.remove(&first.group, &first.resource);
            }
            for served in defs {
                self.registry.insert(served);
            }
        }
        stored
    }

    /// Removes an object; deleting a namespace deletes what is in it, deleting a CRD
    /// deletes its custom resources and stops serving them.
    fn commit_delete(&mut self, def: &ResourceDef, namespace: &str, name: &str) -> Option<Value> {
        if def.storage_key() == namespaces_key() {
            let namespaced: Vec<StorageKey> = self
                .registry
                .all()
                .filter(|d| d.namespaced)
                .map(ResourceDef::storage_key)
                .collect();
            for key in namespaced {
                self.remove_all(&key, Some(name));
            }
        }
        let deleted = self.store.remove(&def.storage_key(), namespace, name)?;
        if is_crd(def)
            && let Ok(defs) = crd::served_resources(&deleted)
            && let Some(first) = defs.first()
        {
            self.remove_all(&first.storage_key(), None);
            self.registry.remove(&first.group, &first.resource);
        }
        Some(deleted)
    }

    fn remove_all(&mut self, key: &StorageKey, namespace: Option<&str>) {
        let keys: Vec<(String, String)> = self.store.list(key, namespace).map(object_key).collect();
        for (ns, name) in keys {
            self.store.remove(key, &ns, &name);
        }
    }
}

fn qualified(def: &ResourceDef) -> String {
    if def.group.is_empty() {
        def.resource.clone()
    } else {
        format!("{}.{}", def.resource, def.group)
    }
}

/// The `PodScheduled=True` condition the binding subresource sets.
fn set_pod_scheduled(pod: &mut Value) {
    let condition = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": strategy::now()});
    let mut conditions: Vec<Value> = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(existing) => *existing = condition,
        None => conditions.push(condition),
    }
    strategy::set_in(pod, &["status", "conditions"], json!(conditions));
}
