//! `limit`/`continue` pagination of lists. A continue token is opaque to clients; here it
//! carries the list's resourceVersion and the last key returned, like the real server's
//! (base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"key"}`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::errors::ApiError;

/// Where a continued list resumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// The resourceVersion of the first page.
    pub rv: u64,
    /// The namespace of the last item returned (empty for cluster-scoped).
    pub namespace: String,
    /// The name of the last item returned.
    pub name: String,
}

impl ContinueToken {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    /// 400 BadRequest for anything this server did not hand out.
    pub fn decode(token: &str) -> Result<ContinueToken, ApiError> {
        let invalid =
            |why: String| ApiError::bad_request(format!("continue key is not valid: {why}"));
        let bytes = URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|e| invalid(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))
    }

    /// Whether an item at (`namespace`, `name`) comes after the last one returned.
    pub fn is_after(&self, namespace: &str, name: &str) -> bool {
        (namespace, name) > (self.namespace.as_str(), self.name.as_str())
    }
}

/// 410 Expired for a continue token older than the kept history, worded as the real server.
pub fn expired() -> ApiError {
    ApiError::new(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_order_keys() {
        let token = ContinueToken {
            rv: 42,
            namespace: "default".into(),
            name: "b".into(),
        };
        let decoded = ContinueToken::decode(&token.encode()).expect("own token decodes");
        assert_eq!(decoded, token);
        assert!(decoded.is_after("default", "c"));
        assert!(decoded.is_after("kube-system", "a"));
        assert!(!decoded.is_after("default", "b"));
        assert!(!decoded.is_after("a-namespace", "z"));
    }

    #[test]
    fn foreign_tokens_are_bad_requests() {
        for token in ["", "not base64!", "eyJmb28iOjF9"] {
            let error = ContinueToken::decode(token).expect_err("not ours");
            assert_eq!(error.code, 400, "{token:?}");
        }
    }
}
