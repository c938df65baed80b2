use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

#[test]
fn bearer_tokens_are_read_as_upstream_reads_them() {
    let cases: [(&str, &[u8], Option<&str>); 9] = [
        ("a bearer token", b"Bearer abc.def", Some("abc.def")),
        ("the scheme in any case", b"bEaReR abc", Some("abc")),
        ("surrounding spaces", b"  Bearer abc  ", Some("abc")),
        ("words after the token", b"Bearer abc extra", Some("abc")),
        ("no token", b"Bearer", None),
        ("two spaces: an empty token", b"Bearer  abc", None),
        ("another scheme", b"Basic dXNlcjpwYXNz", None),
        ("no scheme", b"abc", None),
        ("not UTF-8", b"Bearer \xff\xfe", None),
    ];
    for (name, header, expected) in cases {
        assert_eq!(bearer_token(header), expected, "{name}");
    }
}

/// Answers from fixed tables and counts its calls; `fail` makes every call an error.
#[derive(Default)]
struct FakeReviewer {
    /// token -> user name
    tokens: BTreeMap<&'static str, &'static str>,
    /// user names allowed to `get /metrics`
    allowed: Vec<&'static str>,
    fail_tokens: bool,
    fail_access: bool,
    token_calls: AtomicUsize,
    access_calls: AtomicUsize,
}

#[async_trait]
impl AccessReviewer for FakeReviewer {
    async fn review_token(&self, token: &str) -> Result<Option<User>, ReviewError> {
        self.token_calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_tokens {
            return Err(ReviewError("TokenReview: connection refused".to_string()));
        }
        Ok(self.tokens.get(token).map(|name| User {
            name: name.to_string(),
            groups: vec!["system:authenticated".to_string()],
            ..User::default()
        }))
    }

    async fn review_access(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<bool, ReviewError> {
        self.access_calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_access {
            return Err(ReviewError("SubjectAccessReview: 500".to_string()));
        }
        Ok(verb == "get" && path == "/metrics" && self.allowed.contains(&user.name.as_str()))
    }
}

fn two_tokens() -> FakeReviewer {
    FakeReviewer {
        tokens: BTreeMap::from([("reader-token", "prometheus"), ("other-token", "mallory")]),
        allowed: vec!["prometheus"],
        ..FakeReviewer::default()
    }
}

fn user(name: &str) -> User {
    User {
        name: name.to_string(),
        groups: vec!["system:authenticated".to_string()],
        ..User::default()
    }
}

#[tokio::test]
async fn verdicts_follow_the_token_review_then_the_access_review() {
    struct Case {
        name: &'static str,
        header: Option<&'static [u8]>,
        reviewer: FakeReviewer,
        expected: Verdict,
        /// (TokenReviews, SubjectAccessReviews) made.
        calls: (usize, usize),
    }
    let cases = [
        Case {
            name: "no Authorization header",
            header: None,
            reviewer: two_tokens(),
            expected: Verdict::Unauthenticated,
            calls: (0, 0),
        },
        Case {
            name: "not a bearer token",
            header: Some(b"Basic cHJvbTpwcm9t"),
            reviewer: two_tokens(),
            expected: Verdict::Unauthenticated,
            calls: (0, 0),
        },
        Case {
            name: "a token the API server does not know",
            header: Some(b"Bearer made-up"),
            reviewer: two_tokens(),
            expected: Verdict::Unauthenticated,
            calls: (1, 0),
        },
        Case {
            name: "a user without the permission",
            header: Some(b"Bearer other-token"),
            reviewer: two_tokens(),
            expected: Verdict::Forbidden(user("mallory")),
            calls: (1, 1),
        },
        Case {
            name: "a user bound to the metrics reader",
            header: Some(b"Bearer reader-token"),
            reviewer: two_tokens(),
            expected: Verdict::Allowed(user("prometheus")),
            calls: (1, 1),
        },
        Case {
            name: "the TokenReview fails",
            header: Some(b"Bearer reader-token"),
            reviewer: FakeReviewer {
                fail_tokens: true,
                ..two_tokens()
            },
            expected: Verdict::Unauthenticated,
            calls: (1, 0),
        },
        Case {
            name: "the SubjectAccessReview fails",
            header: Some(b"Bearer reader-token"),
            reviewer: FakeReviewer {
                fail_access: true,
                ..two_tokens()
            },
            expected: Verdict::Failed("SubjectAccessReview: 500".to_string()),
            calls: (1, 1),
        },
    ];
    for case in cases {
        let reviewer = Arc::new(case.reviewer);
        let access = DelegatedAccess::new(reviewer.clone());
        let verdict = access.check(case.header, "get", "/metrics").await;
        assert_eq!(verdict, case.expected, "{}", case.name);
        let calls = (
            reviewer.token_calls.load(Ordering::SeqCst),
            reviewer.access_calls.load(Ordering::SeqCst),
        );
        assert_eq!(calls, case.calls, "{}: reviews made", case.name);
    }
}

#[tokio::test(start_paused = true)]
async fn answers_are_reused_for_ten_seconds_and_errors_never() {
    let reviewer = Arc::new(two_tokens());
    let access = DelegatedAccess::new(reviewer.clone());
    let calls = || {
        (
            reviewer.token_calls.load(Ordering::SeqCst),
            reviewer.access_calls.load(Ordering::SeqCst),
        )
    };
    for token in [
        &b"Bearer reader-token"[..],
        b"Bearer other-token",
        b"Bearer made-up",
    ] {
        access.check(Some(token), "get", "/metrics").await;
    }
    assert_eq!(calls(), (3, 2));
    tokio::time::advance(Duration::from_millis(9_900)).await;
    assert_eq!(
        access
            .check(Some(b"Bearer reader-token"), "get", "/metrics")
            .await,
        Verdict::Allowed(user("prometheus"))
    );
    assert_eq!(
        access
            .check(Some(b"Bearer other-token"), "get", "/metrics")
            .await,
        Verdict::Forbidden(user("mallory"))
    );
    assert_eq!(
        access
            .check(Some(b"Bearer made-up"), "get", "/metrics")
            .await,
        Verdict::Unauthenticated
    );
    assert_eq!(calls(), (3, 2), "within 10 s every answer is cached");
    // Another path is another decision for the same user.
    access
        .check(Some(b"Bearer reader-token"), "get", "/other")
        .await;
    assert_eq!(calls(), (3, 3));

    tokio::time::advance(Duration::from_millis(200)).await;
    access
        .check(Some(b"Bearer reader-token"), "get", "/metrics")
        .await;
    assert_eq!(calls(), (4, 4), "after 10 s both reviews are made again");

    let failing = Arc::new(FakeReviewer {
        fail_access: true,
        ..two_tokens()
    });
    let access = DelegatedAccess::new(failing.clone());
    for _ in 0..2 {
        access
            .check(Some(b"Bearer reader-token"), "get", "/metrics")
            .await;
    }
    assert_eq!(
        failing.access_calls.load(Ordering::SeqCst),
        2,
        "a failed review is asked again"
    );
    assert_eq!(failing.token_calls.load(Ordering::SeqCst), 1);
}

/// A reviewer that never answers.
struct Silent;

#[async_trait]
impl AccessReviewer for Silent {
    async fn review_token(&self, _: &str) -> Result<Option<User>, ReviewError> {
        std::future::pending().await
    }
    async fn review_access(&self, _: &User, _: &str, _: &str) -> Result<bool, ReviewError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_review_that_never_answers_times_out_as_unauthenticated() {
    let access = DelegatedAccess::new(Arc::new(Silent));
    let started = Instant::now();
    let verdict = access
        .check(Some(b"Bearer reader-token"), "get", "/metrics")
        .await;
    assert_eq!(verdict, Verdict::Unauthenticated);
    assert_eq!(started.elapsed(), REVIEW_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn caches_hold_at_most_their_capacity() {
    let cache = TtlCache::new(Duration::from_secs(10), 3);
    for i in 0u8..3 {
        cache.insert([i; 32], i);
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    cache.insert([9; 32], 9);
    assert_eq!(cache.len(), 3);
    assert_eq!(
        cache.get(&[0; 32]),
        None,
        "the entry expiring first made room"
    );
    assert_eq!(cache.get(&[9; 32]), Some(9));
    // Once entries expire, a full cache sheds them all before it drops a live one.
    tokio::time::advance(Duration::from_secs(9)).await;
    cache.insert([7; 32], 7);
    assert_eq!(cache.len(), 2, "[1], [2] expired; [9] and [7] live");
    assert_eq!(cache.get(&[9; 32]), Some(9));
}

#[test]
fn decision_keys_differ_for_every_part_of_the_request() {
    let base = user("alice");
    let key = decision_key(&base, "get", "/metrics");
    let variants = [
        decision_key(&base, "list", "/metrics"),
        decision_key(&base, "get", "/metricsx"),
        decision_key(&user("bob"), "get", "/metrics"),
        decision_key(
            &User {
                groups: vec!["system:authenticated".into(), "admins".into()],
                ..base.clone()
            },
            "get",
            "/metrics",
        ),
        decision_key(
            &User {
                uid: "1".into(),
                ..base.clone()
            },
            "get",
            "/metrics",
        ),
        decision_key(
            &User {
                extra: BTreeMap::from([("scopes".to_string(), vec!["x".to_string()])]),
                ..base.clone()
            },
            "get",
            "/metrics",
        ),
    ];
    for variant in variants {
        assert_ne!(variant, key);
    }
    assert_eq!(decision_key(&base, "get", "/metrics"), key);
}
