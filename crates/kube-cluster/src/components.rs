//! Where the real components' binaries are: built by `scripts/kube-build.sh` from the Go
//! modules under `kube/` and cached outside the clone, keyed by version.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::Error;

/// A Kubernetes release the harness can start, as pinned under `kube/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Release {
    /// kube-apiserver and friends 1.37 (`kube/k8s-1.37`): the default.
    V1_37,
    /// 1.35 (`kube/k8s-1.35`), the oldest release berth supports.
    V1_35,
}

impl Release {
    /// The `scripts/kube-build.sh` component name.
    pub fn component(self) -> &'static str {
        match self {
            Release::V1_37 => "kubernetes-1.37",
            Release::V1_35 => "kubernetes-1.35",
        }
    }

    /// The module directory under `kube/`.
    fn module_dir(self) -> &'static str {
        match self {
            Release::V1_37 => "k8s-1.37",
            Release::V1_35 => "k8s-1.35",
        }
    }

    /// The minor version (37, 35).
    pub fn minor(self) -> u32 {
        match self {
            Release::V1_37 => 37,
            Release::V1_35 => 35,
        }
    }
}

impl std::str::FromStr for Release {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim_start_matches('v') {
            "1.37" => Ok(Release::V1_37),
            "1.35" => Ok(Release::V1_35),
            other => Err(format!("unsupported release {other:?} (1.37 or 1.35)")),
        }
    }
}

/// The binaries of one cluster.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kube_controller_manager: PathBuf,
    pub kube_scheduler: PathBuf,
    pub kwok: PathBuf,
    /// The exact Kubernetes version pinned (`v1.37.2`).
    pub version: String,
}

/// The repository root (the directory holding `kube/` and `scripts/`).
pub fn repo_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("BERTH_REPO_ROOT") {
        return PathBuf::from(dir);
    }
    // crates/kube-cluster -> the repository.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cache directory `scripts/kube-build.sh` writes (`BERTH_KUBE_CACHE`, default
/// `$HOME/.cache/berth-kube`).
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("BERTH_KUBE_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache/berth-kube")
}

/// The version a `kube/<dir>/go.mod` requires of `module`, read from the file itself.
fn pinned(dir: &str, module: &str) -> Result<String, Error> {
    let path = repo_root().join("kube").join(dir).join("go.mod");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::Components(format!("reading {}: {e}", path.display())))?;
    text.lines()
        .map(str::trim)
        .map(|line| line.trim_start_matches("require").trim())
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(module)).then(|| words.next().map(str::to_string))?
        })
        .ok_or_else(|| Error::Components(format!("{} does not require {module}", path.display())))
}

/// Builds (once per process, and only what the cache lacks) and locates the binaries of
/// `release`. Building needs Go; without it this fails with [`Error::NoGo`].
pub fn binaries(release: Release) -> Result<Binaries, Error> {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|p| p.into_inner());

    let version = pinned(release.module_dir(), "k8s.io/kubernetes")?;
    let etcd_version = pinned("etcd", "go.etcd.io/etcd/server/v3")?;
    let kwok_version = pinned("kwok", "sigs.k8s.io/kwok")?;
    let cache = cache_dir();
    let kube = cache.join(format!("kubernetes-{version}"));
    let binaries = Binaries {
        etcd: cache.join(format!("etcd-{etcd_version}/etcd")),
        kube_apiserver: kube.join("kube-apiserver"),
        kube_controller_manager: kube.join("kube-controller-manager"),
        kube_scheduler: kube.join("kube-scheduler"),
        kwok: cache.join(format!("kwok-{kwok_version}/kwok")),
        version,
    };
    let complete = |binary: &Path| {
        binary
            .parent()
            .is_some_and(|dir| dir.join(".complete").is_file())
            && binary.is_file()
    };
    let mut missing = Vec::new();
    if !complete(&binaries.etcd) {
        missing.push("etcd");
    }
    if !complete(&binaries.kube_apiserver) {
        missing.push(release.component());
    }
    if !complete(&binaries.kwok) {
        missing.push("kwok");
    }
    if missing.is_empty() {
        return Ok(binaries);
    }
    if Command::new("go")
        .arg("version")
        .output()
        .map_or(true, |out| !out.status.success())
    {
        return Err(Error::NoGo);
    }
    let script = repo_root().join("scripts/kube-build.sh");
    let status = Command::new("bash")
        .arg(&script)
        .args(&missing)
        .env("BERTH_KUBE_CACHE", &cache)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| Error::Components(format!("running {}: {e}", script.display())))?;
    if !status.success() {
        return Err(Error::Components(format!(
            "{} {} failed ({status}); its output above says why",
            script.display(),
            missing.join(" ")
        )));
    }
    Ok(binaries)
}
