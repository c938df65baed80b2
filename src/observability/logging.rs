//! Log setup for `berth run`: `tracing` events on stderr, one human-readable line each or
//! one JSON object each (`--log-format json`, for log collectors), filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// The format of log lines on stderr.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event.
    Json,
}

/// berth's own events from `info`, its dependencies' (kube, hyper, ...) from `warn`.
const DEFAULT_FILTER: &str = "warn,berth=info";

/// Installs the global subscriber. Only the first call in a process takes effect; later
/// calls (tests, embedding binaries that set up their own) change nothing.
pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr)
        // Colours only for a terminal: log collectors and test output get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // The two formats are different subscriber types, hence two `try_init`s.
    let _already_set = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// `RUST_LOG` when it is set and valid; otherwise [`DEFAULT_FILTER`], with a warning when
/// `RUST_LOG` was set but could not be parsed (no subscriber exists yet to log it).
fn filter() -> EnvFilter {
    match std::env::var(EnvFilter::DEFAULT_ENV) {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .unwrap_or_else(|error| {
                eprintln!(
                    "warning: ignoring RUST_LOG={directives:?} ({error}); using {DEFAULT_FILTER:?}"
                );
                EnvFilter::new(DEFAULT_FILTER)
            }),
        _ => EnvFilter::new(DEFAULT_FILTER),
    }
}
