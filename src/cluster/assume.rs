//! Upstream's *assume cache*, as the listers that keep one share it: each object as the
//! API server last sent it, and a copy a plugin decided on top of it until the API
//! server's version catches up. Claims and volumes ([`super::Volumes`]) and resource
//! claims ([`super::DeviceResources`]) keep their entries this way.
//!
//! resourceVersions compare as integers, as the assume cache does; a missing or
//! non-numeric one counts as 0.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;

/// An object as the API server last sent it, and the copy assumed on top of it.
#[derive(Debug)]
pub(super) struct Entry<T> {
    pub(super) api: Arc<T>,
    pub(super) assumed: Option<Arc<T>>,
}

impl<T> Entry<T> {
    /// The assumed copy if there is one, else the API server's.
    pub(super) fn latest(&self) -> &Arc<T> {
        self.assumed.as_ref().unwrap_or(&self.api)
    }
}

/// `namespace/name`; an object without a namespace is in `default`, as the API server
/// would have put it.
pub(super) fn namespaced_key<K: ResourceExt>(object: &K) -> String {
    format!(
        "{}/{}",
        object.namespace().as_deref().unwrap_or("default"),
        object.name_any()
    )
}

/// The object's resourceVersion as the assume cache compares it.
pub fn resource_version<K: ResourceExt>(object: &K) -> u64 {
    object
        .resource_version()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Stores `object` as the API's version of `key`. An assumed copy stays unless `object`
/// is newer than it; an object older than the stored one is ignored.
pub(super) fn apply_entry<T: ResourceExt>(
    map: &mut BTreeMap<String, Entry<T>>,
    key: String,
    object: T,
) {
    let version = resource_version(&object);
    match map.get_mut(&key) {
        Some(entry) if version < resource_version(entry.api.as_ref()) => {}
        Some(entry) => {
            let assumed_is_newer = entry
                .assumed
                .as_ref()
                .is_some_and(|a| resource_version(a.as_ref()) >= version);
            entry.api = Arc::new(object);
            if !assumed_is_newer {
                entry.assumed = None;
            }
        }
        None => {
            map.insert(
                key,
                Entry {
                    api: Arc::new(object),
                    assumed: None,
                },
            );
        }
    }
}

/// Makes `object` the assumed version of `key`: the key must be known and `object` not
/// older than what is stored.
pub(super) fn assume_entry<T: ResourceExt>(
    map: &mut BTreeMap<String, Entry<T>>,
    kind: &str,
    key: String,
    object: T,
) -> Result<(), String> {
    let Some(entry) = map.get_mut(&key) else {
        return Err(format!("{kind} \"{key}\" not found"));
    };
    let stored = resource_version(entry.latest().as_ref());
    let assumed = resource_version(&object);
    if assumed < stored {
        return Err(format!(
            "{kind} \"{key}\" is out of sync (stored: {stored}, assume: {assumed})"
        ));
    }
    entry.assumed = Some(Arc::new(object));
    Ok(())
}
