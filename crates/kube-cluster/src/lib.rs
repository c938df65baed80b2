//! A real Kubernetes control plane on loopback, in one call, for berth's end-to-end tests
//! and for people who want to try berth on a real API server (`kube-cluster up`).
//!
//! [`KubeCluster::start`] starts, in a fresh directory of its own:
//!
//! - **etcd** (3.6, `--unsafe-no-fsync`: a test cluster trades durability for speed);
//! - **kube-apiserver** with RBAC, the default admission plugins, certificates and a
//!   service-account signing key generated for this cluster ([`pki`]), an audit log of
//!   every request at Metadata level ([`KubeCluster::audit_log`]; [`Options::audit`]
//!   turns it off for benchmarks), serving on 127.0.0.1 only;
//! - **kube-controller-manager** with its default controllers (ReplicaSets, Jobs,
//!   DaemonSets, StatefulSets, the PV binder, disruption, garbage collection, service
//!   accounts and their tokens, node lifecycle …);
//! - **kwok** as every node's kubelet (`kube/kwok/stages.yaml`): nodes turn Ready and
//!   heartbeat, bound pods run, Job pods finish, deleted pods go away.
//!
//! It waits until each is healthy and hands out kubeconfigs: an admin's
//! ([`KubeCluster::admin_kubeconfig`]) and a service account's with a real token
//! ([`KubeCluster::service_account_kubeconfig`]). Dropping the cluster stops every
//! process and deletes the directory, also while a test panics; a test binary killed
//! by a signal takes its components with it (`PR_SET_PDEATHSIG`).
//!
//! The binaries come from `scripts/kube-build.sh`, which builds them from the Go modules
//! under `kube/` once per machine ([`components`]).

pub mod components;
pub mod pki;
pub mod process;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use components::{Binaries, Release};
use pki::Pki;
use process::Process;

/// What can go wrong starting or using a cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "Go is not installed (`go version` failed); the real components are built from Go modules"
    )]
    NoGo,
    #[error("the real components: {0}")]
    Components(String),
    #[error("certificates: {0}")]
    Pki(String),
    #[error("starting {0}: {1}")]
    Start(String, String),
    #[error("{0} exited ({1}); the end of its log:\n{2}")]
    Exited(String, String, String),
    #[error("{0} was not healthy within {1:?}: {2}")]
    Unhealthy(String, Duration, String),
    #[error("{0}")]
    Io(String),
    #[error("the API server: {0}")]
    Api(String),
}

/// How to start a cluster. `Options::default()` is 1.37 with the controllers and kwok.
#[derive(Debug, Clone)]
pub struct Options {
    pub release: Release,
    /// Start kube-controller-manager.
    pub controller_manager: bool,
    /// Start kwok as the nodes' kubelets.
    pub kwok: bool,
    /// Keep the audit log of every request ([`KubeCluster::audit_log`]). A benchmark
    /// turns it off: the log is written in blocking mode, on every request's path.
    pub audit: bool,
    /// Extra kube-apiserver flags (`--flag=value`).
    pub apiserver_args: Vec<String>,
    /// Extra kube-controller-manager flags, e.g. `--controllers=*,-replicaset` to leave
    /// ReplicaSets to the test.
    pub controller_manager_args: Vec<String>,
    /// Extra kube-scheduler flags (`--feature-gates=...`), for [`KubeCluster::start_scheduler`].
    pub scheduler_args: Vec<String>,
    /// How long each component may take to become healthy.
    pub start_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            release: Release::V1_37,
            controller_manager: true,
            kwok: true,
            audit: true,
            apiserver_args: Vec::new(),
            controller_manager_args: Vec::new(),
            scheduler_args: Vec::new(),
            start_timeout: Duration::from_secs(120),
        }
    }
}

impl Options {
    pub fn release(release: Release) -> Options {
        Options {
            release,
            ..Options::default()
        }
    }
}

/// A running cluster; stopped and deleted on drop.
#[derive(Debug)]
pub struct KubeCluster {
    dir: PathBuf,
    keep_dir: bool,
    pub binaries: Binaries,
    pub pki: Pki,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    pub apiserver_address: SocketAddr,
    pub etcd_address: SocketAddr,
    admin_kubeconfig: PathBuf,
    audit_log: PathBuf,
    // Stopped in reverse order of start: kwok, controllers, the API server, etcd.
    etcd: Option<Process>,
    apiserver: Option<Process>,
    controller_manager: Option<Process>,
    kwok: Option<Process>,
    scheduler: Option<Process>,
    options: Options,
}

/// A fresh directory under the system temp dir.
fn fresh_dir(prefix: &str) -> Result<PathBuf, Error> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Io(format!("creating {}: {e}", dir.display())))?;
    Ok(dir)
}

/// A loopback port nothing listens on now.
pub fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::Io(format!("finding a free port: {e}")))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::Io(format!("finding a free port: {e}")))
}

/// A plain-HTTP GET on loopback: the status code and body, or why not.
fn http_get(address: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let mut stream =
        TcpStream::connect_timeout(&address, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {response:.80}"))?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok((status, body.to_string()))
}

fn args(list: &[String]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

/// A kubeconfig for `server` authenticating with `user` (YAML lines under `user:`).
fn kubeconfig(server: &str, ca: &Path, name: &str, user: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: berth-e2e
  cluster:
    server: {server}
    certificate-authority: {ca}
contexts:
- name: {name}
  context:
    cluster: berth-e2e
    user: {name}
    namespace: default
current-context: {name}
users:
- name: {name}
  user:
{user}
",
        ca = ca.display()
    )
}

/// The audit policy: every request at Metadata level (who did what to which resource),
/// without the RequestReceived stage, so each request is one line.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
";

/// How many times [`KubeCluster::start`] tries when a component finds its port taken.
const START_ATTEMPTS: u32 = 3;

impl Error {
    /// A component exited, or never turned healthy, because the port it was given was
    /// taken in between: [`free_port`] only finds a port free *now*, and a port of the
    /// ephemeral range can go to any process's outgoing connection before the component
    /// binds it.
    pub fn is_port_taken(&self) -> bool {
        match self {
            Error::Exited(_, _, log) | Error::Unhealthy(_, _, log) => {
                log.contains("address already in use")
            }
            _ => false,
        }
    }
}

impl KubeCluster {
    /// Starts a cluster (see the crate docs) and waits until it is healthy. A component
    /// that finds its port taken (see [`Error::is_port_taken`]) starts the whole cluster
    /// again on fresh ports, up to [`START_ATTEMPTS`] times in all.
    pub async fn start(options: Options) -> Result<KubeCluster, Error> {
        let mut attempt = 1;
        loop {
            match Self::start_once(options.clone()).await {
                Err(e) if e.is_port_taken() && attempt < START_ATTEMPTS => {
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default();
                    eprintln!("kube-cluster: a port was taken ({first}); starting again");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(options: Options) -> Result<KubeCluster, Error> {
        let release = options.release;
        let binaries = tokio::task::spawn_blocking(move || components::binaries(release))
            .await
            .map_err(|e| Error::Components(e.to_string()))??;
        let dir = fresh_dir("berth-kube")?;
        let pki = Pki::generate(&dir.join("pki"))?;
        let etcd_address: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let apiserver_address: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let server = format!("https://{apiserver_address}");
        let admin_kubeconfig = dir.join("admin.kubeconfig");
        let admin_user = format!(
            "    client-certificate: {}\n    client-key: {}",
            pki.admin.cert.display(),
            pki.admin.key.display()
        );
        std::fs::write(
            &admin_kubeconfig,
            kubeconfig(&server, &pki.ca_cert, "admin", &admin_user),
        )
        .map_err(|e| Error::Io(format!("writing the admin kubeconfig: {e}")))?;
        let mut cluster = KubeCluster {
            audit_log: dir.join("audit.log"),
            keep_dir: std::env::var_os("BERTH_KUBE_KEEP").is_some(),
            dir,
            binaries,
            pki,
            server,
            apiserver_address,
            etcd_address,
            admin_kubeconfig,
            etcd: None,
            apiserver: None,
            controller_manager: None,
            kwok: None,
            scheduler: None,
            options,
        };
        cluster.start_etcd().await?;
        cluster.start_apiserver().await?;
        if cluster.options.controller_manager {
            cluster.start_controller_manager().await?;
        }
        if cluster.options.kwok {
            cluster.start_kwok().await?;
        }
        Ok(cluster)
    }

    /// The cluster's directory (certificates, kubeconfigs, logs, etcd's data).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keeps the directory after the cluster stops (its logs, for a person).
    pub fn keep_dir(&mut self) {
        self.keep_dir = true;
    }

    /// An admin's kubeconfig (a client certificate in `system:masters`).
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.admin_kubeconfig
    }

    /// The API server's audit log (JSON lines, `audit.k8s.io/v1` Events); never written
    /// when [`Options::audit`] is off.
    pub fn audit_log(&self) -> &Path {
        &self.audit_log
    }

    /// The release running.
    pub fn release(&self) -> Release {
        self.options.release
    }

    /// A client with the admin's credentials.
    pub async fn admin_client(&self) -> Result<kube::Client, Error> {
        client_from(&self.admin_kubeconfig).await
    }

    async fn start_etcd(&mut self) -> Result<(), Error> {
        let peer = free_port()?;
        let client = format!("http://{}", self.etcd_address);
        let peer = format!("http://127.0.0.1:{peer}");
        let list = [
            "--name=berth-e2e".to_string(),
            format!("--data-dir={}", self.dir.join("etcd").display()),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=berth-e2e={peer}"),
            "--unsafe-no-fsync=true".to_string(),
            "--log-level=warn".to_string(),
        ];
        let process = Process::start(
            "etcd",
            &self.binaries.etcd,
            args(&list),
            self.dir.join("etcd.log"),
        )?;
        self.etcd = Some(process);
        self.wait_etcd().await
    }

    async fn wait_etcd(&mut self) -> Result<(), Error> {
        let address = self.etcd_address;
        let timeout = self.options.start_timeout;
        wait_healthy("etcd", timeout, self.etcd.as_mut(), || async move {
            match tokio::task::spawn_blocking(move || http_get(address, "/health")).await {
                Ok(Ok((200, body))) if body.contains("\"true\"") => Ok(()),
                Ok(Ok((code, body))) => Err(format!("/health answered {code}: {body}")),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
    }

    fn apiserver_args(&self) -> Vec<String> {
        let pki = &self.pki;
        let mut list = vec![
            format!("--etcd-servers=http://{}", self.etcd_address),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            // Loopback cannot be the kubernetes Service's endpoint; nothing in the tests
            // reaches the API server through the Service.
            "--endpoint-reconciler-type=none".to_string(),
            format!("--secure-port={}", self.apiserver_address.port()),
            format!("--cert-dir={}", self.dir.join("apiserver-certs").display()),
            format!("--tls-cert-file={}", pki.serving.cert.display()),
            format!("--tls-private-key-file={}", pki.serving.key.display()),
            format!("--client-ca-file={}", pki.ca_cert.display()),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
            format!(
                "--service-account-key-file={}",
                pki.service_account_public.display()
            ),
            format!(
                "--service-account-signing-key-file={}",
                pki.service_account_key.display()
            ),
            "--service-cluster-ip-range=10.96.0.0/16".to_string(),
            "--authorization-mode=RBAC".to_string(),
            "--profiling=false".to_string(),
            "--v=1".to_string(),
        ];
        if self.options.audit {
            list.extend([
                format!(
                    "--audit-policy-file={}",
                    self.dir.join("audit-policy.yaml").display()
                ),
                format!("--audit-log-path={}", self.audit_log.display()),
                "--audit-log-mode=blocking".to_string(),
            ]);
        }
        list.extend(self.options.apiserver_args.iter().cloned());
        list
    }

    async fn start_apiserver(&mut self) -> Result<(), Error> {
        let policy = self.dir.join("audit-policy.yaml");
        std::fs::write(&policy, AUDIT_POLICY)
            .map_err(|e| Error::Io(format!("writing {}: {e}", policy.display())))?;
        let process = Process::start(
            "kube-apiserver",
            &self.binaries.kube_apiserver,
            args(&self.apiserver_args()),
            self.dir.join("kube-apiserver.log"),
        )?;
        self.apiserver = Some(process);
        self.wait_apiserver().await
    }

    async fn wait_apiserver(&mut self) -> Result<(), Error> {
        let kubeconfig = self.admin_kubeconfig.clone();
        let timeout = self.options.start_timeout;
        wait_healthy("kube-apiserver", timeout, self.apiserver.as_mut(), || {
            let kubeconfig = kubeconfig.clone();
            async move {
                let client = client_from(&kubeconfig).await.map_err(|e| e.to_string())?;
                let request = http::Request::get("/readyz")
                    .body(Vec::new())
                    .map_err(|e| e.to_string())?;
                match client.request_text(request).await {
                    Ok(body) if body.trim() == "ok" => Ok(()),
                    Ok(body) => Err(body),
                    Err(e) => Err(e.to_string()),
                }
            }
        })
        .await
    }

    async fn start_controller_manager(&mut self) -> Result<(), Error> {
        let kubeconfig_path = self.dir.join("controller-manager.kubeconfig");
        let user = format!(
            "    client-certificate: {}\n    client-key: {}",
            self.pki.controller_manager.cert.display(),
            self.pki.controller_manager.key.display()
        );
        std::fs::write(
            &kubeconfig_path,
            kubeconfig(
                &self.server,
                &self.pki.ca_cert,
                "kube-controller-manager",
                &user,
            ),
        )
        .map_err(|e| Error::Io(format!("writing the controller manager's kubeconfig: {e}")))?;
        let kubeconfig = kubeconfig_path.display().to_string();
        let list = vec![
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--bind-address=127.0.0.1".to_string(),
            format!("--secure-port={}", free_port()?),
            format!(
                "--cert-dir={}",
                self.dir.join("controller-manager-certs").display()
            ),
            format!(
                "--service-account-private-key-file={}",
                self.pki.service_account_key.display()
            ),
            format!("--root-ca-file={}", self.pki.ca_cert.display()),
            "--use-service-account-credentials=true".to_string(),
            "--leader-elect=false".to_string(),
            "--controllers=*".to_string(),
            "--concurrent-gc-syncs=5".to_string(),
            "--profiling=false".to_string(),
            "--v=1".to_string(),
        ];
        let list: Vec<String> = list
            .into_iter()
            .chain(self.options.controller_manager_args.iter().cloned())
            .collect();
        let process = Process::start(
            "kube-controller-manager",
            &self.binaries.kube_controller_manager,
            args(&list),
            self.dir.join("kube-controller-manager.log"),
        )?;
        self.controller_manager = Some(process);
        // Healthy, for a test, is when the service-account controllers work: `default`
        // gets its ServiceAccount (pods cannot be created in a namespace before that).
        let client = self.admin_client().await?;
        let timeout = self.options.start_timeout;
        wait_healthy(
            "kube-controller-manager",
            timeout,
            self.controller_manager.as_mut(),
            || {
                let client = client.clone();
                async move { default_service_account(&client, "default").await }
            },
        )
        .await
    }

    async fn start_kwok(&mut self) -> Result<(), Error> {
        let stages = components::repo_root().join("kube/kwok/stages.yaml");
        let address: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let list = vec![
            format!("--kubeconfig={}", self.admin_kubeconfig.display()),
            format!("--config={}", stages.display()),
            "--manage-all-nodes=true".to_string(),
            format!("--server-address={address}"),
            "--node-lease-duration-seconds=40".to_string(),
            "--cidr=10.244.0.0/16".to_string(),
            "--node-ip=10.240.0.1".to_string(),
        ];
        let list = args(&list);
        let process = Process::start("kwok", &self.binaries.kwok, list, self.dir.join("kwok.log"))?;
        self.kwok = Some(process);
        let timeout = self.options.start_timeout;
        wait_healthy("kwok", timeout, self.kwok.as_mut(), || async move {
            match tokio::task::spawn_blocking(move || http_get(address, "/healthz")).await {
                Ok(Ok((200, _))) => Ok(()),
                Ok(Ok((code, body))) => Err(format!("/healthz answered {code}: {body}")),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
    }

    /// A kubeconfig for ServiceAccount `namespace/name` with a token from the TokenRequest
    /// API, valid for `ttl`: the identity a pod of that account has. The account (and its
    /// namespace) is created when missing.
    pub async fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
        ttl: Duration,
    ) -> Result<PathBuf, Error> {
        let client = self.admin_client().await?;
        let token = service_account_token(&client, namespace, name, ttl).await?;
        let path = self.dir.join(format!("sa-{namespace}-{name}.kubeconfig"));
        let user = format!("    token: {token}");
        std::fs::write(
            &path,
            kubeconfig(
                &self.server,
                &self.pki.ca_cert,
                &format!("{namespace}-{name}"),
                &user,
            ),
        )
        .map_err(|e| Error::Io(format!("writing {}: {e}", path.display())))?;
        Ok(path)
    }

    /// Starts the release's kube-scheduler with `config`, a KubeSchedulerConfiguration
    /// (any version kube-scheduler reads), as the cluster's admin. Its
    /// `clientConnection.kubeconfig` and `leaderElection.leaderElect` are set here (this
    /// cluster, no election); everything else is the caller's, e.g. client QPS and burst.
    /// It serves no port (`--secure-port=0`). Returns once the process runs: it is
    /// ready when it has listed the cluster, which a caller sees by a pod being scheduled.
    /// A running scheduler is stopped first.
    pub async fn start_scheduler(&mut self, config: &serde_json::Value) -> Result<(), Error> {
        self.stop_scheduler();
        let mut config = config.clone();
        let object = config.as_object_mut().ok_or_else(|| {
            Error::Start(
                "kube-scheduler".into(),
                "the configuration is not an object".into(),
            )
        })?;
        let connection = object
            .entry("clientConnection")
            .or_insert_with(|| serde_json::json!({}));
        connection["kubeconfig"] = self.admin_kubeconfig.display().to_string().into();
        object.insert(
            "leaderElection".into(),
            serde_json::json!({"leaderElect": false}),
        );
        let path = self.dir.join("kube-scheduler-config.json");
        std::fs::write(&path, config.to_string())
            .map_err(|e| Error::Io(format!("writing {}: {e}", path.display())))?;
        let mut list = vec![
            format!("--config={}", path.display()),
            "--secure-port=0".to_string(),
            // `BERTH_KUBE_SCHEDULER_V=10` logs every plugin's score of every node.
            format!(
                "--v={}",
                std::env::var("BERTH_KUBE_SCHEDULER_V").unwrap_or_else(|_| "1".into())
            ),
        ];
        list.extend(self.options.scheduler_args.iter().cloned());
        let mut process = Process::start(
            "kube-scheduler",
            &self.binaries.kube_scheduler,
            args(&list),
            self.dir.join("kube-scheduler.log"),
        )?;
        // A configuration kube-scheduler refuses makes it exit at once.
        tokio::time::sleep(Duration::from_millis(300)).await;
        process.check_running()?;
        self.scheduler = Some(process);
        Ok(())
    }

    /// kube-scheduler's process id, while it runs.
    pub fn scheduler_pid(&self) -> Option<u32> {
        self.scheduler.as_ref().and_then(Process::pid)
    }

    /// kube-apiserver's process id, while it runs.
    pub fn apiserver_pid(&self) -> Option<u32> {
        self.apiserver.as_ref().and_then(Process::pid)
    }

    /// etcd's process id, while it runs.
    pub fn etcd_pid(&self) -> Option<u32> {
        self.etcd.as_ref().and_then(Process::pid)
    }

    /// Fails when kube-scheduler has exited (with the end of its log).
    pub fn check_scheduler(&mut self) -> Result<(), Error> {
        match self.scheduler.as_mut() {
            Some(process) => process.check_running(),
            None => Err(Error::Start("kube-scheduler".into(), "not started".into())),
        }
    }

    /// Stops kube-scheduler, if it runs.
    pub fn stop_scheduler(&mut self) {
        if let Some(mut process) = self.scheduler.take() {
            process.stop();
        }
    }

    /// Stops and starts kube-apiserver with the same flags (and the same etcd), waiting
    /// until it is ready again.
    pub async fn restart_apiserver(&mut self) -> Result<(), Error> {
        if let Some(process) = self.apiserver.as_mut() {
            process.restart()?;
        }
        self.wait_apiserver().await
    }

    /// Stops and starts etcd with the same data, waiting until it is healthy.
    pub async fn restart_etcd(&mut self) -> Result<(), Error> {
        if let Some(process) = self.etcd.as_mut() {
            process.restart()?;
        }
        self.wait_etcd().await
    }

    /// The tail of each component's log, for a failing test's output.
    pub fn logs_tail(&self, lines: usize) -> String {
        [
            &self.etcd,
            &self.apiserver,
            &self.controller_manager,
            &self.kwok,
            &self.scheduler,
        ]
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "--- {} ({}):\n{}",
                p.name,
                p.log().display(),
                p.log_tail(lines)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    }

    /// Stops every component now (what drop does).
    pub fn stop(&mut self) {
        for process in [
            &mut self.scheduler,
            &mut self.kwok,
            &mut self.controller_manager,
            &mut self.apiserver,
            &mut self.etcd,
        ] {
            if let Some(mut p) = process.take() {
                p.stop();
            }
        }
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        self.stop();
        if self.keep_dir {
            eprintln!("kube-cluster: kept {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A kube client from a kubeconfig file.
pub async fn client_from(path: &Path) -> Result<kube::Client, Error> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| Error::Api(format!("{}: {e}", path.display())))?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| Error::Api(format!("{}: {e}", path.display())))?;
    kube::Client::try_from(config).map_err(|e| Error::Api(e.to_string()))
}

/// A token of ServiceAccount `namespace/name` from the TokenRequest API, valid for `ttl`
/// (at least the API's 10 minutes), creating the namespace and the account when missing.
pub async fn service_account_token(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    ttl: Duration,
) -> Result<String, Error> {
    ensure_service_account(client, namespace, name).await?;
    let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(client.clone(), namespace);
    let request = k8s_openapi::api::authentication::v1::TokenRequest {
        spec: Some(k8s_openapi::api::authentication::v1::TokenRequestSpec {
            expiration_seconds: Some(i64::try_from(ttl.as_secs().max(600)).unwrap_or(i64::MAX)),
            ..Default::default()
        }),
        ..Default::default()
    };
    let answer = accounts
        .create_token_request(name, &Default::default(), &request)
        .await
        .map_err(|e| Error::Api(format!("a token for {namespace}/{name}: {e}")))?;
    answer
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            Error::Api(format!(
                "the TokenRequest for {namespace}/{name} had no token"
            ))
        })
}

/// Creates every CRD file (YAML) in `dir` and waits until each is established; returns
/// their names.
pub async fn install_crds(
    client: &kube::Client,
    dir: &Path,
    timeout: Duration,
) -> Result<Vec<String>, Error> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
    let mut names = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?
            .path();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)
            .map_err(|e| Error::Api(format!("{}: {e}", path.display())))?;
        names.push(crd.metadata.name.clone().unwrap_or_default());
        api.create(&kube::api::PostParams::default(), &crd)
            .await
            .map_err(|e| Error::Api(format!("installing {}: {e}", path.display())))?;
    }
    wait_crds_established(client, &names, timeout).await?;
    Ok(names)
}

/// Waits until every CRD of `names` exists and is established.
pub async fn wait_crds_established(
    client: &kube::Client,
    names: &[String],
    timeout: Duration,
) -> Result<(), Error> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    for name in names {
        loop {
            let crd = api
                .get_opt(name)
                .await
                .map_err(|e| Error::Api(format!("reading CRD {name}: {e}")))?;
            let status = crd.and_then(|c| c.status);
            let established = status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
            if established {
                break;
            }
            if Instant::now() >= deadline {
                return Err(Error::Api(format!(
                    "CRD {name} not established within {timeout:?}: {status:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// Creates ServiceAccount `namespace/name`, and its namespace, unless they exist.
pub async fn ensure_service_account(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<(), Error> {
    use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
    create_unless_exists(kube::Api::<Namespace>::all(client.clone()), namespace).await?;
    create_unless_exists(
        kube::Api::<ServiceAccount>::namespaced(client.clone(), namespace),
        name,
    )
    .await
}

/// Creates an object of `api` with just `name` (kinds whose other fields all default);
/// one that exists already (409) is fine.
async fn create_unless_exists<K>(api: kube::Api<K>, name: &str) -> Result<(), Error>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
        .map_err(|e| Error::Api(e.to_string()))?;
    match api.create(&Default::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(Error::Api(format!("creating {name}: {e}"))),
    }
}

/// `Ok` once `namespace` has its `default` ServiceAccount.
pub async fn default_service_account(client: &kube::Client, namespace: &str) -> Result<(), String> {
    let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(client.clone(), namespace);
    match accounts.get_opt("default").await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("no ServiceAccount {namespace}/default yet")),
        Err(e) => Err(e.to_string()),
    }
}

/// Polls `check` every 200 ms until it is `Ok`, failing early when `process` exits.
async fn wait_healthy<F, Fut>(
    name: &str,
    timeout: Duration,
    mut process: Option<&mut Process>,
    mut check: F,
) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(p) = process.as_deref_mut() {
            p.check_running()?;
        }
        let last = match tokio::time::timeout(Duration::from_secs(10), check()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(state)) => state,
            Err(_) => "the check took over 10 s".to_string(),
        };
        if Instant::now() >= deadline {
            let tail = process.map(|p| p.log_tail(30)).unwrap_or_default();
            return Err(Error::Unhealthy(
                name.to_string(),
                timeout,
                format!("{last}\nthe end of its log:\n{tail}"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bind_refused_for_a_taken_port_is_a_port_taken() {
        // The line kube-apiserver 1.37 logs before it exits (from a failed CI run).
        let log = "E1129 11:56:51.065567 run.go:72] \"command failed\" err=\"failed to create \
                   listener: failed to listen on 127.0.0.1:36549: listen tcp 127.0.0.1:36549: \
                   bind: address already in use\"";
        let exited = Error::Exited("kube-apiserver".into(), "exit status: 1".into(), log.into());
        assert!(exited.is_port_taken());
        let unhealthy = Error::Unhealthy("etcd".into(), Duration::from_secs(60), log.into());
        assert!(unhealthy.is_port_taken());
        let other = Error::Exited(
            "kube-apiserver".into(),
            "exit status: 1".into(),
            "error: unknown flag: --nope".into(),
        );
        assert!(!other.is_port_taken());
        assert!(!Error::Start("etcd".into(), "address already in use".into()).is_port_taken());
    }
}
