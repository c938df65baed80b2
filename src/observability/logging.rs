//! Log setup: `tracing` events on stderr, one human-readable line each or one JSON object
//! each (`--log-format json`, for log collectors).
//!
//! The filter is `--log-level` when given, else `RUST_LOG` when set, else the
//! subcommand's default: `berth run` logs berth's own events from `info`, while the
//! one-shot commands (`simulate`, `convert`, ...) log nothing by default, since everything
//! they have to say is their output and their `warning:`/`error:` lines on stderr.

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

/// `berth run`'s default: berth's own events from `info`, its dependencies' (kube,
/// hyper, ...) from `warn`.
pub const OPERATOR_FILTER: &str = "warn,berth=info";

/// The default of the one-shot commands: no log lines.
pub const QUIET_FILTER: &str = "off";

/// Installs the global subscriber with `berth run`'s default filter (`RUST_LOG` when set).
pub fn init(format: LogFormat) {
    init_with(format, None, OPERATOR_FILTER);
}

/// Installs the global subscriber. `level` is the `--log-level` flag (a `RUST_LOG`-style
/// filter such as `debug` or `warn,berth=debug`), `default` the filter used when neither
/// it nor `RUST_LOG` is set. Only the first call in a process takes effect; later calls
/// (tests, embedding binaries that set up their own) change nothing.
pub fn init_with(format: LogFormat, level: Option<&str>, default: &str) {
    let env = std::env::var(EnvFilter::DEFAULT_ENV).ok();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(level, env.as_deref(), default))
        .with_writer(std::io::stderr)
        // Colours only for a terminal: log collectors and test output get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // The two formats are different subscriber types, hence two `try_init`s.
    let _already_set = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// The first of `--log-level` and `RUST_LOG` that is set and valid, else `default`; an
/// invalid one is reported with a warning (no subscriber exists yet to log it).
fn filter(level: Option<&str>, env: Option<&str>, default: &str) -> EnvFilter {
    let given = [("--log-level", level), (EnvFilter::DEFAULT_ENV, env)];
    for (origin, directives) in given {
        let Some(directives) = directives.filter(|d| !d.trim().is_empty()) else {
            continue;
        };
        match EnvFilter::try_new(directives) {
            Ok(filter) => return filter,
            Err(error) => {
                eprintln!("warning: ignoring {origin} {directives:?} ({error}); using {default:?}")
            }
        }
        break;
    }
    EnvFilter::try_new(default).unwrap_or_else(|_| EnvFilter::new(QUIET_FILTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_wins_over_rust_log_which_wins_over_the_default() {
        // (case, --log-level, RUST_LOG, default, expected filter)
        let cases = [
            ("default only", None, None, QUIET_FILTER, "off"),
            (
                "operator default",
                None,
                None,
                OPERATOR_FILTER,
                OPERATOR_FILTER,
            ),
            ("RUST_LOG", None, Some("debug"), QUIET_FILTER, "debug"),
            (
                "flag over RUST_LOG",
                Some("trace"),
                Some("debug"),
                QUIET_FILTER,
                "trace",
            ),
            (
                "blank flag is unset",
                Some(" "),
                Some("info"),
                QUIET_FILTER,
                "info",
            ),
            (
                "invalid flag",
                Some("berth=loud"),
                Some("info"),
                QUIET_FILTER,
                "off",
            ),
        ];
        for (name, level, env, default, want) in cases {
            let got = filter(level, env, default).to_string();
            assert_eq!(got, EnvFilter::new(want).to_string(), "{name}");
        }
    }
}
