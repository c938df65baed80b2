//! The plugins and their client against a fake Prometheus on 127.0.0.1
//! (`support/fake_prometheus.rs`): queries per scheduling cycle, the cache, failures and
//! the Degraded report, the bearer token; partly through `berth simulate`'s driver, on
//! the virtual clock it runs on.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use berth::cluster::{NodeInfo, PodInfo};
use berth::framework::{Clock, CycleState, Handle, Plugin, PluginError, PluginHealth};
use berth::plugins::prometheus::network_traffic::DEFAULT_QUERY;
use berth::plugins::prometheus::{ClientConfig, PrometheusClient, QueryError};
use berth::simulate::clock::VirtualClock;
use berth::simulate::input::load_str;
use berth::simulate::report::{PodResult, Report};
use berth::simulate::run::{SimulateOptions, simulate};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;
use support::fake_prometheus::{Answer, FakePrometheus, TestCa};

/// The default NetworkTraffic query with the default interface and range.
fn default_network_query() -> String {
    DEFAULT_QUERY
        .replace("${networkInterface}", "eth0")
        .replace("${timeRangeSeconds}", "60")
}

/// An address where nothing listens.
async fn closed_address() -> String {
    format!("http://{}", support::http::free_address())
}

/// Three equal nodes a, b, c; `pods` pending pods for `profile`; and the profile, whose
/// `spec` is given as YAML.
fn cluster(profile: &str, spec: &str, pods: usize) -> String {
    let mut yaml = format!(
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: {profile}\nspec:\n{spec}\n"
    );
    for node in ["a", "b", "c"] {
        yaml += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {node}\nstatus:\n  capacity: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n"
        );
    }
    for i in 0..pods {
        yaml += &format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{i}\nspec:\n  schedulerName: {profile}\n  containers:\n  - name: main\n    image: busybox\n    resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}\n"
        );
    }
    yaml
}

async fn simulate_yaml(yaml: &str) -> Report {
    let (input, _warnings) = load_str(Path::new("test.yaml"), yaml).expect("valid test input");
    simulate(
        input,
        &berth::plugins::default_registry(),
        SimulateOptions {
            explain: true,
            seed: 0,
            parallelism: 2,
        },
    )
    .await
    .unwrap_or_else(|e| panic!("simulation runs: {e}"))
}

/// `plugin`'s normalized score on each node of the pod's last attempt, in node order.
fn plugin_scores(report: &Report, pod: usize, plugin: &str) -> Vec<(String, i64)> {
    report.pods[pod]
        .nodes
        .iter()
        .flatten()
        .filter_map(|node| {
            let score = node.scores.iter().find(|s| s.plugin == plugin)?;
            Some((node.name.clone(), score.score))
        })
        .collect()
}

fn named(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

#[tokio::test]
async fn network_traffic_queries_once_per_cycle_and_picks_the_quietest_node() {
    let fake = FakePrometheus::start(Answer::nodes(
        "nodename",
        &[("a", "200000"), ("b", "140000"), ("c", "0"), ("gone", "5")],
    ));
    let spec = format!(
        "  plugins:\n    multiPoint:\n      enabled:\n      - name: NetworkTraffic\n        weight: 5\n  pluginConfig:\n    networkTraffic:\n      prometheusAddress: {}\n      cacheTTLSeconds: 0\n",
        fake.address()
    );
    let report = simulate_yaml(&cluster("network-aware", &spec, 3)).await;

    for pod in &report.pods {
        assert_eq!(pod.result, PodResult::Scheduled, "{report:#?}");
        assert_eq!(pod.node.as_deref(), Some("c"), "{report:#?}");
    }
    // Maximum 200000: a node at 140000 scores 100 - 140000 * 100 / 200000 = 30.
    assert_eq!(
        plugin_scores(&report, 0, "NetworkTraffic"),
        named(&[("a", 0), ("b", 30), ("c", 100)])
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "one query per scheduling cycle");
    for request in &requests {
        assert_eq!(request.query, default_network_query());
        assert_eq!(request.timeout.as_deref(), Some("2000ms"));
        assert_eq!(request.authorization, None);
    }
    assert!(report.degraded.is_empty(), "{:?}", report.degraded);
}

#[tokio::test]
async fn metrics_score_shares_one_query_per_metric_between_pre_filter_and_pre_score() {
    let fake = FakePrometheus::start(Answer::nodes("nodename", &[]));
    fake.answer_query(
        "cpu_utilization",
        Answer::nodes("nodename", &[("a", "0.95"), ("b", "0.5"), ("c", "0.2")]),
    );
    fake.answer_query(
        "free_memory_bytes",
        Answer::nodes("nodename", &[("a", "8e9"), ("b", "4e9"), ("c", "2e9")]),
    );
    let metrics = "      metrics:\n      - name: cpu\n        query: cpu_utilization\n        direction: LowerIsBetter\n        weight: 2\n        THRESHOLD\n      - name: free-memory\n        query: free_memory_bytes\n        direction: HigherIsBetter\n";
    let spec = |threshold: &str| {
        format!(
            "  plugins:\n    multiPoint:\n      enabled:\n      - name: MetricsScore\n        weight: 5\n  pluginConfig:\n    metricsScore:\n      prometheusAddress: {}\n      cacheTTLSeconds: 0\n{}",
            fake.address(),
            metrics.replace("THRESHOLD", threshold)
        )
    };

    // With a threshold PreFilter queries both metrics and PreScore reuses the answers.
    let report = simulate_yaml(&cluster("load-aware", &spec("filterAbove: 0.9"), 2)).await;
    assert_eq!(fake.requests().len(), 2 * 2, "2 metrics x 2 cycles");
    let hot = report.pods[0]
        .nodes
        .iter()
        .flatten()
        .find(|n| n.name == "a")
        .map(|n| (n.feasible, n.filter_reasons.clone()));
    assert_eq!(
        hot,
        Some((
            false,
            vec!["metric \"cpu\" is 0.95, above filterAbove 0.9".to_string()]
        ))
    );
    // b: cpu 0 (busiest of b, c), free memory 100 -> (2*0 + 100) / 3 = 33.
    // c: cpu 100, free memory 0 -> (2*100 + 0) / 3 = 67.
    assert_eq!(
        plugin_scores(&report, 0, "MetricsScore"),
        named(&[("b", 33), ("c", 67)])
    );
    assert_eq!(report.pods[0].node.as_deref(), Some("c"));

    // Without one PreFilter skips and PreScore queries, still once per metric.
    let report = simulate_yaml(&cluster("load-aware", &spec("# no threshold"), 2)).await;
    assert_eq!(
        fake.requests().len(),
        4 + 2 * 2,
        "2 metrics x 2 more cycles"
    );
    // a: cpu 0, free memory 100 -> (0 + 100) / 3 = 33.
    // b: cpu (0.95 - 0.5) / 0.75 = 60, free memory (4 - 2) / 6 = 33.3 -> (120 + 33.3) / 3 = 51.
    // c: cpu 100, free memory 0 -> (200 + 0) / 3 = 67.
    assert_eq!(
        plugin_scores(&report, 0, "MetricsScore"),
        named(&[("a", 33), ("b", 51), ("c", 67)])
    );
    assert!(report.degraded.is_empty(), "{:?}", report.degraded);
}

#[tokio::test]
async fn simulate_schedules_and_reports_the_profile_degraded_when_prometheus_is_down() {
    let address = closed_address().await;
    let spec = format!(
        "  plugins:\n    multiPoint:\n      enabled:\n      - name: NetworkTraffic\n  pluginConfig:\n    networkTraffic:\n      prometheusAddress: {address}\n"
    );
    let report = simulate_yaml(&cluster("network-aware", &spec, 2)).await;
    for pod in &report.pods {
        assert_eq!(pod.result, PodResult::Scheduled, "{report:#?}");
    }
    assert_eq!(
        plugin_scores(&report, 0, "NetworkTraffic"),
        named(&[("a", 50), ("b", 50), ("c", 50)])
    );
    assert_eq!(report.degraded.len(), 1, "{:?}", report.degraded);
    let degraded = &report.degraded[0];
    assert_eq!(
        (
            degraded.scheduler_name.as_str(),
            degraded.plugin.as_str(),
            degraded.reason.as_str()
        ),
        ("network-aware", "NetworkTraffic", "MetricsUnavailable")
    );
    let want = format!("NetworkTraffic: cannot reach Prometheus at {address}: ");
    assert!(degraded.message.starts_with(&want), "{}", degraded.message);
}

/// NetworkTraffic built from `args` through the registry, with its profile's health.
fn network_traffic(args: serde_json::Value) -> (Arc<dyn Plugin>, Arc<PluginHealth>) {
    let (plugin, health) = try_network_traffic(args);
    let plugin = plugin.unwrap_or_else(|e| panic!("NetworkTraffic builds: {e}"));
    (plugin, health)
}

/// NetworkTraffic built from `args` through the registry, or why it could not be.
fn try_network_traffic(
    args: serde_json::Value,
) -> (Result<Arc<dyn Plugin>, PluginError>, Arc<PluginHealth>) {
    let health = Arc::new(PluginHealth::new());
    let handle = Handle::builder().health(health.clone()).build();
    let registry = berth::plugins::default_registry();
    let plugin = registry
        .get("NetworkTraffic")
        .expect("NetworkTraffic is registered")
        .build(Some(&args), "spec.pluginConfig.networkTraffic", &handle);
    (plugin, health)
}

/// Nodes with just these names.
fn test_nodes(names: &[&str]) -> Vec<Arc<NodeInfo>> {
    names
        .iter()
        .map(|name| {
            let node = Node {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            Arc::new(NodeInfo::new(node).expect("a node without quantities"))
        })
        .collect()
}

/// One cycle of PreScore, Score and NormalizeScore over nodes a, b, c.
async fn score_cycle(plugin: &dyn Plugin) -> Vec<i64> {
    let nodes = test_nodes(&["a", "b", "c"]);
    let pod = PodInfo::new(Pod::default()).expect("a pod");
    let mut state = CycleState::new();
    let pre_score = plugin.as_pre_score().expect("NetworkTraffic has PreScore");
    let status = pre_score.pre_score(&mut state, &pod, &nodes).await;
    assert!(status.is_success(), "PreScore never fails: {status}");
    let scorer = plugin.as_score().expect("NetworkTraffic has Score");
    let mut scores: Vec<i64> = nodes
        .iter()
        .map(|n| scorer.score(&state, &pod, n).unwrap_or(-1))
        .collect();
    if let Some(normalize) = scorer.score_extensions() {
        normalize.normalize_score(&state, &pod, &nodes, &mut scores);
    }
    scores
}

#[tokio::test]
async fn failed_queries_score_neutrally_and_degrade_until_one_succeeds() {
    let healthy = Answer::nodes("nodename", &[("a", "300"), ("b", "100"), ("c", "0")]);
    let fake = FakePrometheus::start(healthy.clone());
    let dead = closed_address().await;
    struct Case {
        name: &'static str,
        address: Option<String>,
        answer: Answer,
        problem: String,
    }
    let cases = [
        Case {
            name: "nothing listens",
            address: Some(dead.clone()),
            answer: healthy.clone(),
            problem: format!("cannot reach Prometheus at {dead}: "),
        },
        Case {
            name: "a proxy answers HTTP 500",
            address: None,
            answer: Answer::Text {
                status: 500,
                body: "upstream connect error",
            },
            problem: format!(
                "Prometheus at {} answered HTTP 500; check that prometheusAddress is the base URL of the Prometheus HTTP API",
                fake.address()
            ),
        },
        Case {
            name: "a PromQL error",
            address: None,
            answer: Answer::Error {
                status: 400,
                error_type: "bad_data",
                message: "1:14: parse error: unexpected \"}\"",
            },
            problem: format!(
                "Prometheus at {} rejected the query: bad_data: 1:14: parse error: unexpected \"}}\"",
                fake.address()
            ),
        },
        Case {
            name: "an evaluation failure",
            address: None,
            answer: Answer::Error {
                status: 503,
                error_type: "unavailable",
                message: "too many queries",
            },
            problem: format!(
                "Prometheus at {} rejected the query: unavailable: too many queries",
                fake.address()
            ),
        },
        Case {
            name: "a range vector",
            address: None,
            answer: Answer::Matrix,
            problem: format!(
                "Prometheus at {} gave an answer berth cannot use: the query returned a range vector",
                fake.address()
            ),
        },
        Case {
            name: "an HTML page with status 200",
            address: None,
            answer: Answer::Text {
                status: 200,
                body: "<html>login</html>",
            },
            problem: format!(
                "Prometheus at {} gave an answer berth cannot use: ",
                fake.address()
            ),
        },
        Case {
            name: "too slow",
            address: None,
            answer: Answer::Slow(Duration::from_secs(5), Box::new(healthy.clone())),
            problem: format!(
                "Prometheus at {} did not answer within 1s; raise queryTimeoutSeconds if it is just slow",
                fake.address()
            ),
        },
        Case {
            name: "no sample for any node",
            address: None,
            answer: Answer::nodes("instance", &[("a", "1"), ("b", "2")]),
            problem: "the query returned 2 series, none with a \"nodename\" label naming one of the 3 nodes considered; check the query and nodeLabel".to_string(),
        },
    ];
    for case in cases {
        fake.answer(case.answer);
        let address = case.address.unwrap_or_else(|| fake.address().to_string());
        let (plugin, health) = network_traffic(json!({
            "prometheusAddress": address,
            "queryTimeoutSeconds": 1,
            "cacheTTLSeconds": 0,
        }));
        assert_eq!(
            score_cycle(plugin.as_ref()).await,
            [50, 50, 50],
            "{}",
            case.name
        );
        let degraded = health.degraded();
        assert_eq!(degraded.len(), 1, "{}", case.name);
        assert_eq!(degraded[0].reason, "MetricsUnavailable", "{}", case.name);
        let want = format!("NetworkTraffic: {}", case.problem);
        assert!(
            degraded[0].message.starts_with(&want),
            "{}: {:?} does not start with {want:?}",
            case.name,
            degraded[0].message
        );

        // Prometheus answers again: the same plugin recovers.
        if address == fake.address() {
            fake.answer(healthy.clone());
            assert_eq!(
                score_cycle(plugin.as_ref()).await,
                [0, 67, 100],
                "{}",
                case.name
            );
            assert_eq!(health.degraded(), [], "{}", case.name);
        }
    }
}

#[tokio::test]
async fn an_outcome_is_reused_until_the_cache_ttl_passes() {
    let fake = FakePrometheus::start(Answer::nodes("nodename", &[("a", "1")]));
    let clock = VirtualClock::new();
    let advance = |by: u64| clock.advance_to(clock.now() + Duration::from_secs(by));
    let client = PrometheusClient::with_clock(
        ClientConfig::new(fake.address()).with_cache_ttl(Duration::from_secs(10)),
        Arc::new(clock.clone()),
    )
    .expect("a client");
    let query = "node_load1";
    let first = client.node_values(query, "nodename").await;
    assert_eq!(first.as_ref().ok().and_then(|v| v.get("a")), Some(1.0));
    advance(9);
    let cached = client.node_values(query, "nodename").await;
    assert_eq!(cached, first);
    assert_eq!((fake.requests().len(), client.queries_issued()), (1, 1));

    // Another label is another question.
    let _ = client.node_values(query, "instance").await;
    assert_eq!(client.queries_issued(), 2);

    // Past the TTL: asked again, and a failure is cached like an answer.
    fake.answer(Answer::Text {
        status: 502,
        body: "bad gateway",
    });
    advance(2);
    let failed = client.node_values(query, "nodename").await;
    assert!(
        matches!(failed, Err(QueryError::HttpStatus { status: 502, .. })),
        "{failed:?}"
    );
    fake.answer(Answer::nodes("nodename", &[("a", "2")]));
    assert_eq!(client.node_values(query, "nodename").await, failed);
    assert_eq!(fake.requests().len(), 3);
    advance(10);
    let recovered = client.node_values(query, "nodename").await;
    assert_eq!(recovered.ok().and_then(|v| v.get("a")), Some(2.0));
    assert_eq!((fake.requests().len(), client.queries_issued()), (4, 4));
}

#[tokio::test]
async fn a_zero_ttl_queries_every_time() {
    let fake = FakePrometheus::start(Answer::nodes("nodename", &[("a", "1")]));
    let client =
        PrometheusClient::new(ClientConfig::new(fake.address()).with_cache_ttl(Duration::ZERO))
            .expect("a client");
    for _ in 0..3 {
        let _ = client.node_values("up", "nodename").await;
    }
    assert_eq!((fake.requests().len(), client.queries_issued()), (3, 3));
}

#[tokio::test]
async fn the_bearer_token_file_is_read_for_every_query() {
    let fake = FakePrometheus::start(Answer::nodes("nodename", &[("a", "1")]));
    let dir = std::env::temp_dir().join(format!("berth-token-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "first-token\n").expect("token written");
    let client = PrometheusClient::new(
        ClientConfig::new(fake.address())
            .with_cache_ttl(Duration::ZERO)
            .with_bearer_token_file(&token_file),
    )
    .expect("a client");

    let _ = client.node_values("up", "nodename").await;
    std::fs::write(&token_file, "rotated-token").expect("token rotated");
    let _ = client.node_values("up", "nodename").await;
    let sent: Vec<Option<String>> = fake
        .requests()
        .into_iter()
        .map(|r| r.authorization)
        .collect();
    assert_eq!(
        sent,
        [
            Some("Bearer first-token".to_string()),
            Some("Bearer rotated-token".to_string())
        ]
    );

    // An unreadable token sends nothing and says which file.
    std::fs::remove_file(&token_file).expect("token removed");
    let missing = client.node_values("up", "nodename").await;
    match missing {
        Err(QueryError::BearerToken { path, .. }) => {
            assert_eq!(path, token_file.display().to_string());
        }
        other => panic!("expected a bearer token error, got {other:?}"),
    }
    assert_eq!((fake.requests().len(), client.queries_issued()), (2, 2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_https_address_gets_a_tls_client_and_fails_cleanly_without_a_server() {
    let dead = closed_address().await.replace("http://", "https://");
    let client = PrometheusClient::new(ClientConfig::new(&dead)).expect("a TLS client");
    let outcome = client.node_values("up", "nodename").await;
    assert!(
        matches!(&outcome, Err(QueryError::Unreachable { address, .. }) if *address == dead),
        "{outcome:?}"
    );
}

/// A fresh directory under the system temp dir for one test's files.
fn test_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("berth-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

#[tokio::test]
async fn https_is_verified_against_the_system_roots_plus_ca_file() {
    let dir = test_dir("https-ca-file");
    let ca_in = |name: &str, cn: &str| {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).expect("a temp dir");
        TestCa::new(&sub, cn)
    };
    let ca = ca_in("ca", "berth test CA");
    let other_ca = ca_in("other", "another CA");
    // The same name as the server's CA, another key: a CA re-issued, an old caFile.
    let reissued_ca = ca_in("reissued", "berth test CA");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "s3cret\n").expect("token written");
    let fake = FakePrometheus::start_https(
        Answer::nodes("nodename", &[("a", "300"), ("b", "100"), ("c", "0")]),
        &ca,
    );
    assert!(
        fake.address().starts_with("https://127.0.0.1:"),
        "{}",
        fake.address()
    );
    let untrusted = |problem: &str| {
        format!(
            "NetworkTraffic: Prometheus at {} presented a certificate berth does not trust: invalid peer certificate: {problem}; give the PEM file of the CA that signed it as caFile",
            fake.address()
        )
    };
    struct Case<'a> {
        name: &'static str,
        ca_file: Option<&'a Path>,
        scores: [i64; 3],
        degraded: Option<String>,
        requests: usize,
    }
    let cases = [
        Case {
            name: "the server's CA as caFile: verified, queried with the token",
            ca_file: Some(ca.pem_file()),
            scores: [0, 67, 100],
            degraded: None,
            requests: 1,
        },
        Case {
            name: "no caFile: the system roots do not know the CA",
            ca_file: None,
            scores: [50, 50, 50],
            degraded: Some(untrusted("UnknownIssuer")),
            requests: 0,
        },
        Case {
            name: "another CA as caFile",
            ca_file: Some(other_ca.pem_file()),
            scores: [50, 50, 50],
            degraded: Some(untrusted("UnknownIssuer")),
            requests: 0,
        },
        Case {
            name: "a CA of the same name with another key as caFile",
            ca_file: Some(reissued_ca.pem_file()),
            scores: [50, 50, 50],
            degraded: Some(untrusted("BadSignature")),
            requests: 0,
        },
    ];
    let mut sent = 0;
    for case in cases {
        let mut args = json!({
            "prometheusAddress": fake.address(),
            "cacheTTLSeconds": 0,
            "bearerTokenFile": token_file,
        });
        if let Some(ca_file) = case.ca_file {
            args["caFile"] = json!(ca_file);
        }
        let (plugin, health) = network_traffic(args);
        assert_eq!(
            score_cycle(plugin.as_ref()).await,
            case.scores,
            "{}",
            case.name
        );
        let degraded: Vec<(String, String)> = health
            .degraded()
            .into_iter()
            .map(|d| (d.reason, d.message))
            .collect();
        let want: Vec<(String, String)> = case
            .degraded
            .into_iter()
            .map(|message| ("MetricsUnavailable".to_string(), message))
            .collect();
        assert_eq!(degraded, want, "{}", case.name);
        // The token travels inside TLS; a failed handshake sends no request at all.
        let requests = fake.requests();
        assert_eq!(requests.len(), sent + case.requests, "{}", case.name);
        for request in &requests[sent..] {
            assert_eq!(
                request.authorization.as_deref(),
                Some("Bearer s3cret"),
                "{}",
                case.name
            );
        }
        sent = requests.len();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_ca_file_that_cannot_be_used_fails_the_plugin_build_naming_the_file() {
    let dir = test_dir("bad-ca-file");
    let key_pem = rcgen::KeyPair::generate().expect("a key").serialize_pem();
    let not_pem = "-----BEGIN CERTIFICATE-----\n!!not base64!!\n-----END CERTIFICATE-----\n";
    // Well-formed PEM whose content ("hello") is no certificate.
    let not_der = "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n";
    let cases: [(&str, Option<&str>, &str); 5] = [
        (
            "missing",
            None,
            "cannot read it: No such file or directory (os error 2)",
        ),
        (
            "empty",
            Some(""),
            "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ),
        (
            "a private key",
            Some(&key_pem),
            "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ),
        (
            "broken base64",
            Some(not_pem),
            "not valid PEM: base64 decode error",
        ),
        (
            "not a certificate",
            Some(not_der),
            "certificate 1 of 1 is not usable as a CA: ",
        ),
    ];
    for (name, content, problem) in cases {
        let file = dir.join(name.replace(' ', "-"));
        if let Some(content) = content {
            std::fs::write(&file, content).expect("file written");
        }
        let (plugin, _) = try_network_traffic(json!({
            "prometheusAddress": "https://prometheus.example.com",
            "caFile": file,
        }));
        match plugin {
            Err(PluginError::Init { plugin, message }) => {
                assert_eq!(plugin, "NetworkTraffic", "{name}");
                let want = format!("caFile {}: {problem}", file.display());
                assert!(
                    message.starts_with(&want),
                    "{name}: {message:?} does not start with {want:?}"
                );
                assert!(
                    message.ends_with(
                        "; caFile must be a PEM file of CA certificates that berth can read (in a cluster, mounted into its pod)"
                    ),
                    "{name}: {message}"
                );
            }
            Err(other) => panic!("{name}: expected an init error, got {other}"),
            Ok(_) => panic!("{name}: NetworkTraffic built with an unusable caFile"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `prometheusAddress` of the examples, where no Prometheus usually listens.
const EXAMPLE_ADDRESS: &str = "http://127.0.0.1:9090";

/// The example `file`, its Prometheus at `address` instead.
fn example_at(file: &str, address: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        text.contains(EXAMPLE_ADDRESS),
        "{file} uses {EXAMPLE_ADDRESS}"
    );
    text.replace(EXAMPLE_ADDRESS, address)
}

#[tokio::test]
async fn the_network_aware_example_sends_pods_to_the_quietest_node() {
    let fake = FakePrometheus::start(Answer::nodes(
        "nodename",
        &[
            ("edge-1", "200000"),
            ("edge-2", "140000"),
            ("edge-3", "20000"),
        ],
    ));
    let report = simulate_yaml(&example_at("network-aware.yaml", fake.address())).await;
    let placed: Vec<(&str, Option<&str>)> = report
        .pods
        .iter()
        .map(|p| (p.name.as_str(), p.node.as_deref()))
        .collect();
    assert_eq!(
        placed,
        [
            ("ingest-1", Some("edge-3")),
            ("ingest-2", Some("edge-3")),
            ("mirror", Some("edge-3"))
        ]
    );
    // 100 - 140000 * 100 / 200000 = 30; 100 - 20000 * 100 / 200000 = 90.
    assert_eq!(
        plugin_scores(&report, 0, "NetworkTraffic"),
        named(&[("edge-1", 0), ("edge-2", 30), ("edge-3", 90)])
    );
    // cacheTTLSeconds 5 on the simulator's clock, which stands still while pods are
    // placed without backoff: the whole run takes one query.
    assert_eq!(fake.requests().len(), 1);
    assert!(report.degraded.is_empty(), "{:?}", report.degraded);
}

#[tokio::test]
async fn the_load_aware_example_avoids_the_hot_node_and_says_why() {
    let fake = FakePrometheus::start(Answer::nodes("nodename", &[]));
    let yaml = example_at("load-aware.yaml", fake.address());
    let documents: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple(&yaml).unwrap_or_default();
    let profile = documents.into_iter().next().unwrap_or_default();
    let query = |i: usize| {
        profile["spec"]["pluginConfig"]["metricsScore"]["metrics"][i]["query"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    fake.answer_query(
        &query(0),
        Answer::nodes(
            "nodename",
            &[
                ("worker-1", "0.95"),
                ("worker-2", "0.5"),
                ("worker-3", "0.2"),
            ],
        ),
    );
    fake.answer_query(
        &query(1),
        Answer::nodes(
            "nodename",
            &[
                ("worker-1", "0.5"),
                ("worker-2", "0.6"),
                ("worker-3", "0.3"),
            ],
        ),
    );
    let report = simulate_yaml(&yaml).await;
    for pod in &report.pods {
        assert_eq!(pod.node.as_deref(), Some("worker-3"), "{report:#?}");
    }
    let worker_1 = report.pods[0]
        .nodes
        .iter()
        .flatten()
        .find(|n| n.name == "worker-1")
        .map(|n| n.filter_reasons.clone());
    assert_eq!(
        worker_1,
        Some(vec![
            "metric \"cpu-utilization\" is 0.95, above filterAbove 0.9".to_string()
        ])
    );
    // worker-2: cpu 0 (the busier of the two left), memory 100 -> (0 + 100) / 3 = 33.
    // worker-3: cpu 100, memory 0 -> (200 + 0) / 3 = 67.
    assert_eq!(
        plugin_scores(&report, 0, "MetricsScore"),
        named(&[("worker-2", 33), ("worker-3", 67)])
    );
    assert_eq!(fake.requests().len(), 2, "one query per metric");
    assert!(report.degraded.is_empty(), "{:?}", report.degraded);
}

#[tokio::test]
async fn metrics_score_names_the_metrics_that_failed() {
    let fake = FakePrometheus::start(Answer::nodes("nodename", &[("a", "1"), ("b", "2")]));
    fake.answer_query(
        "broken(",
        Answer::Error {
            status: 400,
            error_type: "bad_data",
            message: "1:8: parse error: unclosed left parenthesis",
        },
    );
    let spec = format!(
        "  plugins:\n    multiPoint:\n      enabled:\n      - name: MetricsScore\n  pluginConfig:\n    metricsScore:\n      prometheusAddress: {}\n      metrics:\n      - name: load\n        query: node_load1\n        direction: LowerIsBetter\n      - name: typo\n        query: \"broken(\"\n        direction: LowerIsBetter\n",
        fake.address()
    );
    let report = simulate_yaml(&cluster("load-aware", &spec, 1)).await;
    assert_eq!(report.pods[0].result, PodResult::Scheduled);
    let messages: Vec<&str> = report.degraded.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        [format!(
            "MetricsScore: metric \"typo\": Prometheus at {} rejected the query: bad_data: 1:8: parse error: unclosed left parenthesis",
            fake.address()
        )]
    );
    // load: a 100, b 0, c (no sample) as the mean 1.5 -> 50; typo: 50 everywhere.
    assert_eq!(
        plugin_scores(&report, 0, "MetricsScore"),
        named(&[("a", 75), ("b", 25), ("c", 50)])
    );

    // Prometheus down: one error for all metrics, said once.
    let dead = closed_address().await;
    let report = simulate_yaml(&cluster(
        "load-aware",
        &spec.replace(fake.address(), &dead),
        1,
    ))
    .await;
    let message = report
        .degraded
        .first()
        .map(|d| d.message.clone())
        .unwrap_or_default();
    let want = format!("MetricsScore: all 2 metrics: cannot reach Prometheus at {dead}: ");
    assert!(message.starts_with(&want), "{message}");
}

#[tokio::test]
async fn enabled_at_score_only_it_runs_its_pre_score_and_ranks_nodes() {
    let fake = FakePrometheus::start(Answer::nodes(
        "nodename",
        &[("a", "2"), ("b", "1"), ("c", "0")],
    ));
    // What `berth convert` makes of the tutorial's configuration: Score only.
    let spec = format!(
        "  plugins:\n    score:\n      enabled:\n      - name: NetworkTraffic\n        weight: 10\n      disabled:\n      - name: \"*\"\n  pluginConfig:\n    networkTraffic:\n      prometheusAddress: {}\n",
        fake.address()
    );
    let report = simulate_yaml(&cluster("network-aware", &spec, 1)).await;
    assert_eq!(fake.requests().len(), 1, "PreScore queried once");
    // Busiest node 0, idle node 100, as the tutorial's plugin ranks them.
    assert_eq!(
        plugin_scores(&report, 0, "NetworkTraffic"),
        named(&[("a", 0), ("b", 50), ("c", 100)])
    );
    assert!(report.degraded.is_empty(), "{:?}", report.degraded);
}
