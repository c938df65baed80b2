//! CRD generation: derive output enriched from the plugin registry.

use kube::CustomResourceExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::framework::Registry;

/// The schema of a `conditions` list: standard `metav1.Condition`s, a list-map keyed by
/// `type`.
pub(crate) fn conditions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert("x-kubernetes-list-map-keys".into(), serde_json::json!(["type"]));
    schema
}

/// Both CRDs (SchedulerProfile, PodGroup) for the plugins in `registry`.
pub fn crds(registry: &Registry) -> Vec<CustomResourceDefinition> {
    let _ = registry;
    vec![super::SchedulerProfile::crd(), super::PodGroup::crd()]
}

/// The CRDs as one multi-document YAML stream, as `berth crds` prints it.
pub fn crds_yaml(registry: &Registry) -> Result<String, String> {
    let _ = registry;
    todo!("api helper")
}
