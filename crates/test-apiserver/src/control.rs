//! What tests control and observe: the request log, injected faults and the response delay.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::errors::ApiError;

/// One request as the server saw it. The verb is the real server's RequestInfo verb
/// (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; the
/// lower-cased method for non-resource paths such as `/version`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub verb: String,
    pub method: String,
    pub path: String,
    pub query: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub user_agent: Option<String>,
    /// The response's status code (200 for a watch that started streaming).
    pub status: u16,
}

/// Fails the next `count` requests matching `verb` and `resource` (either `None` matches
/// anything) with a Status of code `status`. `resource` is the plural (`pods`), or
/// `pods/binding` for a subresource; `pods` does not match its subresources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    #[serde(default)]
    pub verb: Option<String>,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default = "one")]
    pub count: usize,
    pub status: u16,
    #[serde(default)]
    pub message: String,
}

fn one() -> usize {
    1
}

impl Fault {
    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.count > 0
            && self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }

    fn to_error(&self) -> ApiError {
        let reason = match self.status {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        let message = if self.message.is_empty() {
            format!("injected fault ({})", self.status)
        } else {
            self.message.clone()
        };
        ApiError::new(self.status, reason, message)
    }
}

#[derive(Debug, Default)]
pub struct Control {
    log: Vec<(u64, RequestRecord)>,
    next_id: u64,
    faults: Vec<Fault>,
    pub delay: Option<Duration>,
}

impl Control {
    /// Appends a record; returns its id for [`Control::set_status`].
    pub fn log(&mut self, record: RequestRecord) -> u64 {
        self.next_id += 1;
        self.log.push((self.next_id, record));
        self.next_id
    }

    pub fn set_status(&mut self, id: u64, status: u16) {
        if let Some((_, record)) = self.log.iter_mut().rev().find(|(i, _)| *i == id) {
            record.status = status;
        }
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.log.iter().map(|(_, r)| r.clone()).collect()
    }

    pub fn clear_requests(&mut self) {
        self.log.clear();
    }

    pub fn inject(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    /// The error of the first fault matching this request, using one of its count.
    pub fn take_fault(&mut self, verb: &str, resource: &str) -> Option<ApiError> {
        let fault = self.faults.iter_mut().find(|f| f.matches(verb, resource))?;
        fault.count -= 1;
        let error = fault.to_error();
        self.faults.retain(|f| f.count > 0);
        Some(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_match_verb_and_resource_and_run_out() {
        let mut control = Control::default();
        control.inject(Fault {
            verb: Some("create".into()),
            resource: Some("pods/binding".into()),
            count: 2,
            status: 500,
            message: String::new(),
        });
        assert!(
            control.take_fault("create", "pods").is_none(),
            "the main resource is not its subresource"
        );
        assert!(control.take_fault("get", "pods/binding").is_none());
        let error = control.take_fault("create", "pods/binding").expect("first");
        assert_eq!((error.code, error.reason.as_str()), (500, "InternalError"));
        assert!(control.take_fault("create", "pods/binding").is_some());
        assert!(
            control.take_fault("create", "pods/binding").is_none(),
            "count used up"
        );
    }

    #[test]
    fn a_fault_without_verb_or_resource_matches_anything() {
        let mut control = Control::default();
        control.inject(Fault {
            verb: None,
            resource: None,
            count: 1,
            status: 429,
            message: "slow down".into(),
        });
        let error = control.take_fault("watch", "leases").expect("matches");
        assert_eq!(
            (error.code, error.reason.as_str(), error.message.as_str()),
            (429, "TooManyRequests", "slow down")
        );
    }
}
