//! A stand-in API server that lets `kubectl apply --dry-run=client --validate=strict`
//! validate the rendered chart against the Kubernetes 1.37 API schema.
//!
//! Why a server at all: kubectl's client-side dry run still needs discovery (to map each
//! kind to a resource) and its client-side validation downloads the OpenAPI v2 document
//! from the server — as protobuf, the only encoding kubectl decodes. kubectl validates
//! client-side only when the server's OpenAPI does not advertise server-side field
//! validation (`fieldValidation` on PATCH), so this server publishes schemas and no
//! paths; a real 1.37 server would leave validation to its own admission instead.
//! berth's test API server (crates/test-apiserver) serves neither OpenAPI nor the chart's
//! kinds (Deployment, RBAC, ...), hence this one.
//!
//! What it serves:
//!
//! - discovery (`/api`, `/api/v1`, `/apis`, `/apis/<group>/<version>`) for the chart's
//!   built-in kinds, berth's CRDs and prometheus-operator's ServiceMonitor;
//! - `/openapi/v2` as gnostic protobuf: the built-in kinds' schemas from k8s-openapi
//!   (generated from upstream's 1.37 OpenAPI), and the CRDs' `openAPIV3Schema` with the
//!   `apiVersion`/`kind`/`metadata` properties the real server adds. ServiceMonitor has
//!   no schema here (its CRD is not in this repository): kubectl maps it and skips its
//!   validation, as it does for any kind without a published schema;
//! - 404 for everything else — every object is "not found", so apply plans a create.
//!
//! Every request is recorded; a dry run must send nothing but GETs.

use std::any::TypeId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::{NamespaceResourceScope, Resource};
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Value, json};

const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";

/// One kind the server knows.
#[derive(Debug, Clone)]
struct Kind {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
}

impl Kind {
    fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// What the handler serves.
struct Served {
    kinds: Vec<Kind>,
    openapi_v2: Vec<u8>,
    requests: Mutex<Vec<String>>,
}

/// The running server; stops when dropped.
pub struct KubectlServer {
    pub address: SocketAddr,
    served: Arc<Served>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KubectlServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KubectlServer {
    /// Serves on 127.0.0.1 (random port) the built-in kinds, the CRDs in `crds` (parsed
    /// CustomResourceDefinition objects) and ServiceMonitor.
    pub async fn start(crds: &[&Value]) -> KubectlServer {
        let mut generator = SchemaSettings::draft07().into_generator();
        let mut kinds = Vec::new();
        let mut gvk_of_definition = BTreeMap::new();
        let mut add = |kind: Kind, definition: String| {
            gvk_of_definition.insert(definition, kind.clone());
            kinds.push(kind);
        };
        add_built_in::<ServiceAccount>(&mut generator, &mut add);
        add_built_in::<Service>(&mut generator, &mut add);
        add_built_in::<Deployment>(&mut generator, &mut add);
        add_built_in::<ClusterRole>(&mut generator, &mut add);
        add_built_in::<ClusterRoleBinding>(&mut generator, &mut add);
        add_built_in::<Role>(&mut generator, &mut add);
        add_built_in::<RoleBinding>(&mut generator, &mut add);
        add_built_in::<PodDisruptionBudget>(&mut generator, &mut add);
        add_built_in::<NetworkPolicy>(&mut generator, &mut add);
        add_built_in::<CustomResourceDefinition>(&mut generator, &mut add);
        let mut definitions: BTreeMap<String, Value> = generator
            .definitions()
            .iter()
            .map(|(name, schema)| (name.clone(), schema.clone()))
            .collect();
        // k8s-openapi types apiextensions' JSON (a CRD schema's `default`, `enum`,
        // `example` values) as an object; upstream's OpenAPI leaves it untyped, because it
        // holds any JSON value, and kubectl must see it so.
        if let Some(Value::Object(json_value)) =
            definitions.get_mut("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON")
        {
            json_value.remove("type");
        }
        for crd in crds {
            for (kind, definition, schema) in custom_kinds(crd) {
                definitions.insert(definition.clone(), schema);
                add(kind, definition);
            }
        }
        // No schema: discovery only (see the module docs).
        kinds.push(Kind {
            group: "monitoring.coreos.com".into(),
            version: "v1".into(),
            kind: "ServiceMonitor".into(),
            plural: "servicemonitors".into(),
            namespaced: true,
        });
        for (definition, kind) in &gvk_of_definition {
            let schema = definitions
                .get_mut(definition)
                .unwrap_or_else(|| panic!("no definition {definition}"));
            schema[GVK_EXTENSION] =
                json!([{"group": kind.group, "version": kind.version, "kind": kind.kind}]);
        }
        let served = Arc::new(Served {
            kinds,
            openapi_v2: openapi_v2_document(&definitions),
            requests: Mutex::new(Vec::new()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let address = listener.local_addr().expect("its address");
        let router = Router::new().fallback(handle).with_state(served.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        KubectlServer {
            address,
            served,
            task,
        }
    }

    /// A kubeconfig for kubectl.
    pub fn kubeconfig(&self) -> String {
        test_apiserver::kubeconfig::render(&format!("http://{}", self.address))
    }

    /// Every request so far, as `METHOD path`.
    pub fn requests(&self) -> Vec<String> {
        self.served
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Registers `T` (its discovery entry and its schema, with every type it references).
fn add_built_in<T>(generator: &mut SchemaGenerator, add: &mut impl FnMut(Kind, String))
where
    T: Resource + JsonSchema,
    T::Scope: 'static,
{
    generator.subschema_for::<T>();
    let kind = Kind {
        group: T::GROUP.into(),
        version: T::VERSION.into(),
        kind: T::KIND.into(),
        plural: T::URL_PATH_SEGMENT.into(),
        namespaced: TypeId::of::<T::Scope>() == TypeId::of::<NamespaceResourceScope>(),
    };
    add(kind, T::schema_name().into_owned());
}

/// The served versions of a CRD: (kind, definition name, schema). The schema gets the
/// `apiVersion`, `kind` and `metadata` properties the real server publishes for CRDs.
fn custom_kinds(crd: &Value) -> Vec<(Kind, String, Value)> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().expect("spec.group");
    let reversed_group: Vec<&str> = group.split('.').rev().collect();
    spec["versions"]
        .as_array()
        .expect("spec.versions")
        .iter()
        .filter(|v| v["served"] == true)
        .map(|version| {
            let name = version["name"].as_str().expect("versions[].name");
            let kind = Kind {
                group: group.into(),
                version: name.into(),
                kind: spec["names"]["kind"].as_str().expect("names.kind").into(),
                plural: spec["names"]["plural"]
                    .as_str()
                    .expect("names.plural")
                    .into(),
                namespaced: spec["scope"] == "Namespaced",
            };
            let mut schema = version["schema"]["openAPIV3Schema"].clone();
            schema["properties"]["apiVersion"] = json!({"type": "string"});
            schema["properties"]["kind"] = json!({"type": "string"});
            schema["properties"]["metadata"] =
                json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"});
            let definition = format!("{}.{name}.{}", reversed_group.join("."), kind.kind);
            (kind, definition, schema)
        })
        .collect()
}

async fn handle(State(served): State<Arc<Served>>, request: Request<Body>) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    served
        .requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!("{method} {path}"));
    if method != Method::GET {
        return status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", &path);
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["openapi", "v2"] => (
            [(
                header::CONTENT_TYPE,
                // What kube-apiserver answers (the `@` of the Accept form is no valid MIME type).
                "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            )],
            served.openapi_v2.clone(),
        )
            .into_response(),
        ["version"] => axum::Json(json!({
            "major": "1", "minor": "37", "gitVersion": "v1.37.0",
            "platform": "linux/amd64",
        }))
        .into_response(),
        ["api"] => axum::Json(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [],
        }))
        .into_response(),
        ["api", "v1"] => resource_list(&served.kinds, "v1"),
        ["apis"] => axum::Json(group_list(&served.kinds)).into_response(),
        ["apis", group, version] => resource_list(&served.kinds, &format!("{group}/{version}")),
        // /openapi/v3 included: without it kubectl falls back to the v2 document.
        _ => status(StatusCode::NOT_FOUND, "NotFound", &path),
    }
}

fn status(code: StatusCode, reason: &str, path: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{path}: {reason}"), "reason": reason, "code": code.as_u16(),
    });
    (code, axum::Json(body)).into_response()
}

fn resource_list(kinds: &[Kind], group_version: &str) -> Response {
    let resources: Vec<Value> = kinds
        .iter()
        .filter(|k| k.group_version() == group_version)
        .map(|k| {
            json!({
                "name": k.plural,
                "singularName": k.kind.to_lowercase(),
                "namespaced": k.namespaced,
                "kind": k.kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            })
        })
        .collect();
    if resources.is_empty() {
        return status(StatusCode::NOT_FOUND, "NotFound", group_version);
    }
    axum::Json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
    .into_response()
}

fn group_list(kinds: &[Kind]) -> Value {
    let mut versions: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for kind in kinds.iter().filter(|k| !k.group.is_empty()) {
        let entry = versions.entry(&kind.group).or_default();
        if !entry.contains(&kind.version.as_str()) {
            entry.push(&kind.version);
        }
    }
    let groups: Vec<Value> = versions
        .into_iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
                .collect();
            json!({"name": group, "preferredVersion": versions[0], "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

// ---------------------------------------------------------------------------------------
// OpenAPI v2 as gnostic protobuf (google/gnostic openapiv2/OpenAPIv2.proto). Only the
// fields kubectl's validation reads are written.

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    fn bytes(&mut self, field: u64, bytes: &[u8]) {
        self.varint(field << 3 | 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn string(&mut self, field: u64, text: &str) {
        self.bytes(field, text.as_bytes());
    }

    fn message(&mut self, field: u64, message: Message) {
        self.bytes(field, &message.0);
    }

    fn boolean(&mut self, field: u64, value: bool) {
        self.varint(field << 3);
        self.varint(u64::from(value));
    }
}

/// `Document { swagger = 1; info = 2; paths = 8; definitions = 9 }`.
fn openapi_v2_document(definitions: &BTreeMap<String, Value>) -> Vec<u8> {
    let mut document = Message::default();
    document.string(1, "2.0");
    let mut info = Message::default();
    info.string(1, "berth chart test stand-in");
    info.string(2, "v1.37.0");
    document.message(2, info);
    document.message(8, Message::default());
    let mut named = Message::default();
    for (name, schema) in definitions {
        named.message(1, named_schema(name, schema));
    }
    document.message(9, named);
    document.0
}

/// `NamedSchema { name = 1; value = 2 }`.
fn named_schema(name: &str, schema: &Value) -> Message {
    let mut named = Message::default();
    named.string(1, name);
    named.message(2, schema_message(schema));
    named
}

/// `Schema { _ref = 1; format = 2; required = 19; additional_properties = 21; type = 22;
/// items = 23; properties = 25; vendor_extension = 31 }`. Keywords kubectl does not check
/// (descriptions, bounds, patterns, CEL rules) are left out.
fn schema_message(schema: &Value) -> Message {
    let mut message = Message::default();
    let Some(object) = schema.as_object() else {
        return message;
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        message.string(1, &reference.replace("#/$defs/", "#/definitions/"));
    }
    if let Some(format) = object.get("format").and_then(Value::as_str) {
        message.string(2, format);
    }
    for required in object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.string(19, required.as_str().expect("required names are strings"));
    }
    match object.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            let mut item = Message::default();
            item.boolean(2, *allowed);
            message.message(21, item);
        }
        Some(additional @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema_message(additional));
            message.message(21, item);
        }
        _ => {}
    }
    if let Some(type_) = object.get("type").and_then(Value::as_str) {
        let mut item = Message::default();
        item.string(1, type_);
        message.message(22, item);
    }
    if let Some(items) = object.get("items") {
        let mut item = Message::default();
        item.message(1, schema_message(items));
        message.message(23, item);
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        let mut named = Message::default();
        for (name, property) in properties {
            named.message(1, named_schema(name, property));
        }
        message.message(25, named);
    }
    // The one extension kubectl's validation reads: which kind a definition describes.
    // `NamedAny { name = 1; value = 2: Any { yaml = 2 } }`; JSON is YAML.
    if let Some(gvk) = object.get(GVK_EXTENSION) {
        let mut any = Message::default();
        any.string(2, &gvk.to_string());
        let mut named = Message::default();
        named.string(1, GVK_EXTENSION);
        named.message(2, any);
        message.message(31, named);
    }
    message
}
