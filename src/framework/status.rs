//! The result of calling a plugin, with upstream kube-scheduler's seven codes.
//!
//! What each code means depends on the extension point; the trait docs in
//! [`super::interface`] state it per point. In short:
//!
//! | code | meaning |
//! |---|---|
//! | `Success` | the plugin accepts the pod (at this node) |
//! | `Error` | an internal error: the cycle is aborted and the pod is retried with backoff |
//! | `Unschedulable` | rejected, but preemption (PostFilter) might help |
//! | `UnschedulableAndUnresolvable` | rejected, and preemption cannot help |
//! | `Wait` | Permit only: hold the pod until it is allowed, rejected or times out |
//! | `Skip` | PreFilter/PreScore: skip this plugin's coupled Filter/Score; Bind: next binder |
//! | `Pending` | rejected until a cluster event; requeued without backoff |

use std::fmt;

/// The code of a [`Status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Code {
    #[default]
    Success,
    Error,
    Unschedulable,
    UnschedulableAndUnresolvable,
    Wait,
    Skip,
    Pending,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        };
        f.write_str(s)
    }
}

/// The outcome of a plugin call: a code, human-readable reasons and, once the framework has
/// seen it, the name of the plugin that produced it.
///
/// `Status::success()` allocates nothing, so plugins on the hot path may return it freely.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    code: Code,
    reasons: Vec<String>,
    plugin: Option<String>,
}

impl Status {
    pub fn new(code: Code, reason: impl Into<String>) -> Self {
        Status {
            code,
            reasons: vec![reason.into()],
            plugin: None,
        }
    }

    pub fn success() -> Self {
        Status::default()
    }

    pub fn error(reason: impl Into<String>) -> Self {
        Status::new(Code::Error, reason)
    }

    pub fn unschedulable(reason: impl Into<String>) -> Self {
        Status::new(Code::Unschedulable, reason)
    }

    pub fn unresolvable(reason: impl Into<String>) -> Self {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }

    pub fn skip() -> Self {
        Status::with_code(Code::Skip)
    }

    pub fn wait() -> Self {
        Status::with_code(Code::Wait)
    }

    pub fn pending(reason: impl Into<String>) -> Self {
        Status::new(Code::Pending, reason)
    }

    /// A status with a code and no reasons.
    pub fn with_code(code: Code) -> Self {
        Status {
            code,
            reasons: Vec::new(),
            plugin: None,
        }
    }

    /// A status carrying several reasons (e.g. one per insufficient resource).
    pub fn with_reasons(code: Code, reasons: Vec<String>) -> Self {
        Status {
            code,
            reasons,
            plugin: None,
        }
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// The reasons joined with ", ", as upstream's `Status.Message()`.
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }

    /// The plugin that produced this status, once the framework recorded it.
    pub fn plugin(&self) -> Option<&str> {
        self.plugin.as_deref()
    }

    /// Records the plugin that produced this status (done by the framework runner).
    pub fn with_plugin(mut self, plugin: &str) -> Self {
        self.plugin = Some(plugin.to_string());
        self
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    pub fn is_wait(&self) -> bool {
        self.code == Code::Wait
    }

    /// Unschedulable, UnschedulableAndUnresolvable or Pending: the pod was rejected, as
    /// opposed to failing with an internal error.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.plugin {
            Some(p) => write!(f, "{} ({}): {}", self.code, p, self.message()),
            None => write!(f, "{}: {}", self.code, self.message()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_joins_reasons_like_upstream() {
        let s = Status::with_reasons(
            Code::Unschedulable,
            vec!["Insufficient cpu".into(), "Insufficient memory".into()],
        );
        assert_eq!(s.message(), "Insufficient cpu, Insufficient memory");
        assert!(s.is_rejected());
        assert!(!Status::error("boom").is_rejected());
        assert!(Status::pending("gated").is_rejected());
    }
}
