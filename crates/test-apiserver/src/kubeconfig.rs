//! The kubeconfig that points clients (kube-rs, berth) at the server: one
//! cluster, one user without credentials, one context with namespace `default`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The kubeconfig YAML for a server at `url`.
pub fn render(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test-apiserver
  cluster:
    server: {url}
contexts:
- name: test-apiserver
  context:
    cluster: test-apiserver
    user: test-user
    namespace: default
current-context: test-apiserver
users:
- name: test-user
  user: {{}}
"
    )
}

/// A fresh, empty directory under the system temp dir.
pub fn fresh_temp_dir() -> std::io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "test-apiserver-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub fn write(path: &Path, url: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, render(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_reads_the_kubeconfig() {
        let config = kube::config::Kubeconfig::from_yaml(&render("http://127.0.0.1:1234"))
            .expect("valid kubeconfig");
        assert_eq!(config.current_context.as_deref(), Some("test-apiserver"));
        let server = config.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.clone());
        assert_eq!(server.as_deref(), Some("http://127.0.0.1:1234"));
    }
}
