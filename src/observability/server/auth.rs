//! Delegated authentication and authorization of `/metrics`, as kube-scheduler's secure
//! port and controller-runtime's secure metrics server do it.
//!
//! 1. The caller's bearer token (`Authorization: Bearer <token>`) is checked with a
//!    TokenReview. No token, a malformed header, a token the API server does not
//!    authenticate, or a TokenReview that fails: 401.
//! 2. The user the review names is checked with a SubjectAccessReview for the
//!    non-resource URL and verb of the request (`get` on `/metrics`). Denied: 403, with
//!    the API server's wording (`forbidden: User "x" cannot get path "/metrics"`); a
//!    SubjectAccessReview that fails: 500.
//!
//! Both answers are cached for [`CACHE_TTL`] (upstream's delegating authenticator and
//! authorizer default to 10 s for each), keyed by a SHA-256 of the token or of the user
//! and request, so no token is kept in memory; each cache holds at most
//! [`CACHE_CAPACITY`] entries, and at most [`CONCURRENT_REVIEWS`] reviews are in flight
//! at once, so a flood of made-up tokens costs the API server a bounded rate of calls.
//! Errors are not cached.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// How long a review's answer is reused.
pub const CACHE_TTL: Duration = Duration::from_secs(10);
/// How many answers each cache keeps at most.
pub const CACHE_CAPACITY: usize = 4096;
/// How many reviews may be in flight at once.
pub const CONCURRENT_REVIEWS: usize = 8;
/// How long one review (waiting for a slot included) may take.
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(5);

/// An authenticated user, as a TokenReview names it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// A review that could not be made (the API server unreachable, an error answer, a
/// timeout).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReviewError(pub String);

/// Who answers the reviews: the API server ([`KubeReviewer`]), or a test double.
#[async_trait]
pub trait AccessReviewer: Send + Sync + 'static {
    /// The user `token` authenticates, or `None` when it authenticates nobody.
    async fn review_token(&self, token: &str) -> Result<Option<User>, ReviewError>;
    /// Whether `user` may `verb` the non-resource URL `path`.
    async fn review_access(&self, user: &User, verb: &str, path: &str)
    -> Result<bool, ReviewError>;
}

/// Reviews through the API server: `create` on `tokenreviews.authentication.k8s.io` and
/// `subjectaccessreviews.authorization.k8s.io`.
pub struct KubeReviewer {
    client: kube::Client,
}

impl KubeReviewer {
    pub fn new(client: kube::Client) -> KubeReviewer {
        KubeReviewer { client }
    }
}

#[async_trait]
impl AccessReviewer for KubeReviewer {
    async fn review_token(&self, token: &str) -> Result<Option<User>, ReviewError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| ReviewError(format!("TokenReview: {e}")))?;
        let Some(status) = answer.status else {
            return Ok(None);
        };
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        let user = status.user.unwrap_or_default();
        Ok(Some(User {
            name: user.username.unwrap_or_default(),
            uid: user.uid.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default(),
        }))
    }

    async fn review_access(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<bool, ReviewError> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: Some(user.uid.clone()).filter(|uid| !uid.is_empty()),
                groups: Some(user.groups.clone()),
                extra: Some(user.extra.clone()).filter(|extra| !extra.is_empty()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                resource_attributes: None,
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| ReviewError(format!("SubjectAccessReview: {e}")))?;
        Ok(answer.status.is_some_and(|status| status.allowed))
    }
}

/// What the checks decided for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed(User),
    /// 401: no usable token, or one the API server does not authenticate.
    Unauthenticated,
    /// 403: authenticated, not authorized.
    Forbidden(User),
    /// 500: the authorization could not be checked.
    Failed(String),
}

/// The cached checks of one server.
pub struct DelegatedAccess {
    reviewer: Arc<dyn AccessReviewer>,
    users: TtlCache<Option<User>>,
    decisions: TtlCache<bool>,
    in_flight: Semaphore,
}

impl DelegatedAccess {
    pub fn new(reviewer: Arc<dyn AccessReviewer>) -> DelegatedAccess {
        DelegatedAccess {
            reviewer,
            users: TtlCache::new(CACHE_TTL, CACHE_CAPACITY),
            decisions: TtlCache::new(CACHE_TTL, CACHE_CAPACITY),
            in_flight: Semaphore::new(CONCURRENT_REVIEWS),
        }
    }

    /// Checks a request with the `Authorization` header `authorization` to `verb` the
    /// non-resource URL `path`.
    pub async fn check(&self, authorization: Option<&[u8]>, verb: &str, path: &str) -> Verdict {
        let Some(token) = authorization.and_then(bearer_token) else {
            return Verdict::Unauthenticated;
        };
        let user = match self.authenticate(token).await {
            Ok(Some(user)) => user,
            Ok(None) => return Verdict::Unauthenticated,
            Err(error) => {
                tracing::warn!(%error, "cannot authenticate a /metrics request");
                return Verdict::Unauthenticated;
            }
        };
        match self.authorize(&user, verb, path).await {
            Ok(true) => Verdict::Allowed(user),
            Ok(false) => Verdict::Forbidden(user),
            Err(error) => Verdict::Failed(error.0),
        }
    }

    async fn authenticate(&self, token: &str) -> Result<Option<User>, ReviewError> {
        let key = digest(&[token.as_bytes()]);
        if let Some(user) = self.users.get(&key) {
            return Ok(user);
        }
        let user = self.bounded(self.reviewer.review_token(token)).await?;
        self.users.insert(key, user.clone());
        Ok(user)
    }

    async fn authorize(&self, user: &User, verb: &str, path: &str) -> Result<bool, ReviewError> {
        let key = decision_key(user, verb, path);
        if let Some(allowed) = self.decisions.get(&key) {
            return Ok(allowed);
        }
        let allowed = self
            .bounded(self.reviewer.review_access(user, verb, path))
            .await?;
        self.decisions.insert(key, allowed);
        Ok(allowed)
    }

    /// Runs a review once a slot is free, within [`REVIEW_TIMEOUT`].
    async fn bounded<T>(
        &self,
        review: impl std::future::Future<Output = Result<T, ReviewError>>,
    ) -> Result<T, ReviewError> {
        let run = async {
            let _slot = self
                .in_flight
                .acquire()
                .await
                .map_err(|_| ReviewError("the server is shutting down".to_string()))?;
            review.await
        };
        tokio::time::timeout(REVIEW_TIMEOUT, run)
            .await
            .map_err(|_| ReviewError(format!("no answer within {REVIEW_TIMEOUT:?}")))?
    }
}

/// The token of an `Authorization: Bearer <token>` header, as upstream's bearer-token
/// authenticator reads it: the scheme case-insensitive, the token the next
/// space-separated word.
pub fn bearer_token(header: &[u8]) -> Option<&str> {
    let header = std::str::from_utf8(header).ok()?.trim();
    let mut parts = header.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

type Key = [u8; 32];

/// SHA-256 over `parts`, each followed by a NUL so that parts cannot run together.
fn digest(parts: &[&[u8]]) -> Key {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        context.update(part);
        context.update(&[0]);
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(context.finish().as_ref());
    key
}

fn decision_key(user: &User, verb: &str, path: &str) -> Key {
    let mut parts: Vec<&[u8]> = vec![
        verb.as_bytes(),
        path.as_bytes(),
        user.name.as_bytes(),
        user.uid.as_bytes(),
    ];
    parts.extend(user.groups.iter().map(|g| g.as_bytes()));
    for (key, values) in &user.extra {
        parts.push(key.as_bytes());
        parts.extend(values.iter().map(|v| v.as_bytes()));
    }
    let groups = user.groups.len().to_string();
    parts.push(groups.as_bytes());
    digest(&parts)
}

/// Answers kept for a time, at most `capacity` of them.
struct TtlCache<V> {
    entries: Mutex<HashMap<Key, (Instant, V)>>,
    ttl: Duration,
    capacity: usize,
}

impl<V: Clone> TtlCache<V> {
    fn new(ttl: Duration, capacity: usize) -> TtlCache<V> {
        TtlCache {
            entries: Mutex::new(HashMap::new()),
            ttl,
            capacity,
        }
    }

    fn get(&self, key: &Key) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(key)
            .filter(|(expires, _)| Instant::now() < *expires)
            .map(|(_, value)| value.clone())
    }

    fn insert(&self, key: Key, value: V) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (expires, _)| now < *expires);
            if entries.len() >= self.capacity {
                // Still full of live answers: drop the one that expires first.
                if let Some(oldest) = entries.iter().min_by_key(|(_, (e, _))| *e).map(|(k, _)| *k) {
                    entries.remove(&oldest);
                }
            }
        }
        entries.insert(key, (now + self.ttl, value));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests;
