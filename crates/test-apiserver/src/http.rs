//! The HTTP front: every request is parsed into a [`RequestInfo`], logged, delayed and
//! checked against injected faults, then routed to discovery, a review ([`Review`]) or a
//! resource operation on the [`Cluster`]. Tests control the server in-process
//! ([`crate::TestApiServer`]'s methods), not over HTTP.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::Config;
use crate::access::{Access, Review};
use crate::cluster::{Cluster, ListQuery, PatchRequest};
use crate::control::{Control, RequestRecord};
use crate::discovery;
use crate::errors::{ApiError, Cause};
use crate::pagination::ContinueToken;
use crate::patch::PatchType;
use crate::request_info::RequestInfo;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::watch::{self, Start, WatchRequest};

/// Largest request body accepted.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// State shared by every request.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    pub cluster: Mutex<Cluster>,
    pub control: Mutex<Control>,
    /// What TokenReview and SubjectAccessReview answer from (starts as `config.access`).
    pub access: Mutex<Access>,
    /// Bumped to end every open watch.
    pub drop_watches: tokio::sync::watch::Sender<u64>,
    /// `127.0.0.1:PORT`, for `/api`'s serverAddressByClientCIDRs.
    pub address: String,
}

impl Shared {
    pub fn new(config: Config, address: String) -> Shared {
        let cluster = Mutex::new(Cluster::new(config.history_window));
        let access = Mutex::new(config.access.clone());
        Shared {
            config,
            cluster,
            control: Mutex::new(Control::default()),
            access,
            drop_watches: tokio::sync::watch::channel(0).0,
            address,
        }
    }

    pub fn drop_watches(&self) {
        self.drop_watches.send_modify(|epoch| *epoch += 1);
    }
}

/// Locks a mutex, carrying on after a panic elsewhere poisoned it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn json_response(code: u16, body: &Value) -> Response {
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn not_found_path() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn method_not_allowed(info: &RequestInfo) -> ApiError {
    ApiError::new(
        405,
        "MethodNotAllowed",
        format!(
            "the server does not allow this method on the requested resource ({})",
            info.verb
        ),
    )
}

/// The one handler: log, delay, fault, route.
pub async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = match Query::<Vec<(String, String)>>::try_from_uri(&parts.uri) {
        Ok(Query(pairs)) => pairs,
        Err(error) => {
            return ApiError::bad_request(format!("invalid query: {error}")).into_response();
        }
    };
    let info = RequestInfo::parse(parts.method.as_str(), &path, &query);
    let record = RequestRecord {
        verb: info.verb.clone(),
        method: parts.method.to_string(),
        path: path.clone(),
        query: parts.uri.query().unwrap_or_default().to_string(),
        group: info.group.clone(),
        version: info.version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        namespace: info.namespace.clone(),
        name: info.name.clone(),
        user_agent: parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        status: 0,
    };
    let (id, fault, delay) = {
        let mut control = lock(&shared.control);
        let id = control.log(record);
        let fault = if info.is_resource_request {
            control.take_fault(&info.verb, &info.resource_path())
        } else {
            None
        };
        (id, fault, control.delay)
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let response = match fault {
        Some(error) => error.into_response(),
        None if info.is_resource_request => {
            let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
                Ok(body) => body,
                Err(error) => {
                    return ApiError::bad_request(format!("reading the body: {error}"))
                        .into_response();
                }
            };
            match resource_request(&shared, &info, &query, &parts.headers, body) {
                Ok(response) => response,
                Err(error) => error.into_response(),
            }
        }
        None => non_resource_request(&shared, &parts.method, &path),
    };
    lock(&shared.control).set_status(id, response.status().as_u16());
    response
}

fn non_resource_request(shared: &Shared, method: &Method, path: &str) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .into_response();
    }
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let cluster = lock(&shared.cluster);
    let body = match segments.as_slice() {
        ["version"] => Some(discovery::version(shared.config.minor_version)),
        ["api"] => Some(discovery::core_versions(&shared.address)),
        ["api", version] => discovery::resource_list(&cluster.registry, "", version),
        ["apis"] => Some(discovery::group_list(&cluster.registry)),
        ["apis", group] => discovery::api_group(&cluster.registry, group),
        ["apis", group, version] => discovery::resource_list(&cluster.registry, group, version),
        ["healthz" | "livez" | "readyz"] => return (StatusCode::OK, "ok").into_response(),
        _ => None,
    };
    match body {
        Some(body) => json_response(200, &body),
        None => not_found_path().into_response(),
    }
}

fn param<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn flag(query: &[(String, String)], key: &str) -> Option<bool> {
    param(query, key).map(|v| matches!(v, "true" | "1" | "True"))
}

/// Parses a JSON (or YAML) body.
fn parse_body(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    if content_type.contains("protobuf") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type})"
            ),
        ));
    }
    if content_type.contains("yaml") {
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("couldn't decode the request body: {e}")))
}

fn list_query(def: &ResourceDef, query: &[(String, String)]) -> Result<ListQuery, ApiError> {
    let label_text = param(query, "labelSelector").unwrap_or_default();
    let field_text = param(query, "fieldSelector").unwrap_or_default();
    let label = LabelSelector::parse(label_text).map_err(ApiError::bad_request)?;
    let field = FieldSelector::parse(field_text, &def.resource).map_err(ApiError::bad_request)?;
    let limit = match param(query, "limit").filter(|l| !l.is_empty()) {
        Some(text) => Some(
            text.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {text:?}")))?,
        ),
        None => None,
    };
    let continue_from = param(query, "continue")
        .filter(|c| !c.is_empty())
        .map(ContinueToken::decode)
        .transpose()?;
    let filtered = !label_text.is_empty() || !field_text.is_empty();
    Ok(ListQuery {
        label,
        field,
        filtered,
        limit,
        continue_from,
    })
}

fn parse_rv(text: &str) -> Result<u64, ApiError> {
    text.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {text:?}")))
}

fn watch_request(
    def: &ResourceDef,
    info: &RequestInfo,
    namespace: Option<String>,
    query: &[(String, String)],
) -> Result<WatchRequest, ApiError> {
    let rv = param(query, "resourceVersion")
        .filter(|rv| !rv.is_empty() && *rv != "0")
        .map(parse_rv)
        .transpose()?;
    let send_initial = flag(query, "sendInitialEvents");
    if send_initial == Some(true) && param(query, "resourceVersionMatch") != Some("NotOlderThan") {
        let cause = Cause {
            reason: "FieldValueForbidden".into(),
            message:
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                    .into(),
            field: "resourceVersionMatch".into(),
        };
        return Err(ApiError::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            vec![cause],
        ));
    }
    let start = match (send_initial, rv) {
        (Some(true), _) => Start::Initial { end_bookmark: true },
        (Some(false), None) => Start::Now,
        (None, None) => Start::Initial {
            end_bookmark: false,
        },
        (_, Some(rv)) => Start::After(rv),
    };
    let timeout = param(query, "timeoutSeconds")
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t:?}")))
        })
        .transpose()?
        .map(Duration::from_secs);
    Ok(WatchRequest {
        def: def.clone(),
        namespace,
        name: info.name.clone(),
        query: list_query(def, query)?,
        start,
        bookmarks: flag(query, "allowWatchBookmarks") == Some(true),
        timeout,
    })
}

fn resource_request(
    shared: &Arc<Shared>,
    info: &RequestInfo,
    query: &[(String, String)],
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let def = lock(&shared.cluster)
        .resolve(&info.group, &info.version, &info.resource)
        .ok_or_else(not_found_path)?;
    let is_namespace_itself = def.group.is_empty() && def.resource == "namespaces";
    let namespace = if def.namespaced {
        info.namespace.clone()
    } else if info.namespace.is_some() && !is_namespace_itself {
        return Err(not_found_path());
    } else {
        None
    };
    let subresource = info.subresource.as_deref();
    match subresource {
        None => {}
        Some("status")
            if def.has_status && matches!(info.verb.as_str(), "get" | "update" | "patch") => {}
        Some("binding") if def.has_binding && info.verb == "create" => {}
        Some(_) => return Err(not_found_path()),
    }
    if !def.verbs.contains(&info.verb) && subresource.is_none() {
        return Err(method_not_allowed(info));
    }
    if let Some(review) = Review::of(&def) {
        // Create is a review's only verb (checked above), and only on the collection.
        if info.name.is_some() {
            return Err(method_not_allowed(info));
        }
        let body = parse_body(headers, &body)?;
        let answer = review.answer(&lock(&shared.access), body)?;
        return Ok(json_response(201, &answer));
    }
    let name = info.name.clone().unwrap_or_default();
    let ns = namespace.clone().unwrap_or_default();
    let needs_namespace = def.namespaced && namespace.is_none();
    if needs_namespace && !matches!(info.verb.as_str(), "list" | "watch") {
        return Err(if info.verb == "deletecollection" {
            method_not_allowed(info)
        } else {
            not_found_path()
        });
    }
    let status = subresource == Some("status");
    match info.verb.as_str() {
        "get" => {
            let object = lock(&shared.cluster).get(&def, &ns, &name)?;
            Ok(json_response(200, &object))
        }
        "list" => {
            let query = list_query(&def, query)?;
            let list = lock(&shared.cluster).list(&def, namespace.as_deref(), &query)?;
            Ok(json_response(200, &list))
        }
        "watch" => {
            let request = watch_request(&def, info, namespace, query)?;
            Ok(watch::respond(shared.clone(), request))
        }
        "create" if subresource == Some("binding") => {
            let binding = parse_body(headers, &body)?;
            Ok(json_response(
                201,
                &lock(&shared.cluster).bind(&def, &ns, &name, &binding)?,
            ))
        }
        "create" if info.name.is_none() => {
            let object = parse_body(headers, &body)?;
            let created = lock(&shared.cluster).create(&def, &ns, object)?;
            Ok(json_response(201, &created))
        }
        "update" if info.name.is_some() => {
            let object = parse_body(headers, &body)?;
            let updated = lock(&shared.cluster).update(&def, &ns, &name, object, status)?;
            Ok(json_response(200, &updated))
        }
        "patch" if info.name.is_some() => {
            let content_type = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let patch_type = PatchType::from_content_type(content_type).ok_or_else(|| {
                ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {content_type:?})"))
            })?;
            let request = PatchRequest {
                body: &body,
                patch_type,
                status,
            };
            let object = lock(&shared.cluster).patch(&def, &ns, &name, request)?;
            Ok(json_response(200, &object))
        }
        "delete" if info.name.is_some() => {
            let options = delete_options(headers, &body, query)?;
            Ok(json_response(
                200,
                &lock(&shared.cluster).delete(&def, &ns, &name, &options)?,
            ))
        }
        "deletecollection" => {
            let options = delete_options(headers, &body, query)?;
            let list = list_query(&def, query)?;
            Ok(json_response(
                200,
                &lock(&shared.cluster).delete_collection(
                    &def,
                    namespace.as_deref(),
                    &list,
                    &options,
                )?,
            ))
        }
        _ => Err(method_not_allowed(info)),
    }
}

/// DeleteOptions from the body (may be empty) or the query.
fn delete_options(
    headers: &HeaderMap,
    body: &Bytes,
    query: &[(String, String)],
) -> Result<Value, ApiError> {
    let mut options = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_body(headers, body)?
    };
    if !options.is_object() {
        return Err(ApiError::bad_request("DeleteOptions must be an object"));
    }
    for key in ["propagationPolicy", "gracePeriodSeconds"] {
        if let Some(value) = param(query, key) {
            options[key] = json!(value);
        }
    }
    Ok(options)
}
