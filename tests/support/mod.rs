//! What the integration tests share, one copy each: running the `berth` binary ([`cli`]),
//! a plain HTTP GET and a free port ([`http`]), a GET over TLS ([`https`]), a scratch directory ([`temp`]), kubectl ([`tools`]), the test
//! API server with berth's CRDs ([`api`]), a real Prometheus ([`prometheus`]), a scripted
//! fake one over HTTP and TLS ([`fake_prometheus`]), the simulator in-process ([`simulate`])
//! and bounded waits ([`wait`]).
//!
//! A test crate includes it with `mod support;`. Each crate uses a different part, so
//! what one crate leaves unused is not dead code.

#![allow(dead_code)]

pub mod api;
pub mod cli;
pub mod fake_prometheus;
pub mod http;
pub mod https;
pub mod kube;
pub mod prometheus;
pub mod simulate;
pub mod temp;
pub mod tools;
pub mod wait;
