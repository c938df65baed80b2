//! `berth plugins [NAME]`: the plugin reference, generated from the registry.
//!
//! Without NAME: every registered plugin (extension points, default set, default Score
//! weight, `pluginConfig` field), the default plugin set, and how that set differs from
//! upstream kube-scheduler's ([`UPSTREAM_DIFFERENCES`]). With NAME: that plugin with
//! its args, field by field. `--format markdown` writes the reference checked in as
//! `docs/plugins.md` (all plugins, or NAME's section). Exit codes: 0, 2 for an unknown
//! NAME, 1 when stdout cannot be written.
//!
//! The rendering lives in [`crate::schema::reference`].

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::convert::{UPSTREAM_DIFFERENCES, UPSTREAM_RELEASE, UpstreamDifference};
use crate::framework::Registry;
use crate::schema::reference::{self, Reference, wrap};

#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// Describe this plugin (exact, case-sensitive name) with its args.
    pub name: Option<String>,
    /// `text` for a terminal; `markdown` for the reference in docs/plugins.md.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Markdown,
}

/// Why `berth plugins` printed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginsError {
    #[error("unknown plugin {name}; {hint}registered plugins: {registered}")]
    UnknownPlugin {
        name: String,
        /// `did you mean X? ` or empty.
        hint: String,
        registered: String,
    },
}

/// What `berth plugins` prints for `args`.
pub fn render(
    name: Option<&str>,
    format: Format,
    registry: &Registry,
) -> Result<String, PluginsError> {
    let reference = Reference::of(registry);
    let Some(name) = name else {
        return Ok(match format {
            Format::Text => reference::render_list_text(&reference) + &differences_text(),
            Format::Markdown => reference::render_markdown(&reference) + &differences_markdown(),
        });
    };
    match reference.plugin(name) {
        Some(plugin) => Ok(match format {
            Format::Text => reference::render_plugin_text(plugin),
            Format::Markdown => reference::render_plugin_markdown(plugin),
        }),
        None => {
            let names = registry.names();
            Err(PluginsError::UnknownPlugin {
                name: name.to_string(),
                hint: closest_name(name, &names)
                    .map(|close| format!("did you mean {close}? "))
                    .unwrap_or_default(),
                registered: names.join(", "),
            })
        }
    }
}

/// The width the differences are wrapped at in a terminal, as the rest of the list.
const TEXT_WIDTH: usize = 88;

/// The list's last section in a terminal: each difference from upstream's default set.
fn differences_text() -> String {
    let mut out = format!("\nDifferences from kube-scheduler {UPSTREAM_RELEASE}'s default set:\n");
    for difference in UPSTREAM_DIFFERENCES {
        out.push_str(&format!("  {}\n", difference.plugin));
        for text in [
            format!("Upstream: {}.", difference.upstream),
            format!("berth: {}.", berth_side(difference)),
        ] {
            for line in wrap(&text, TEXT_WIDTH - 6) {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
}

/// The same as the last section of docs/plugins.md.
fn differences_markdown() -> String {
    let mut out = format!(
        "\n## Differences from kube-scheduler {UPSTREAM_RELEASE}\n\n\
         The default plugin set above is upstream kube-scheduler {UPSTREAM_RELEASE}'s, with the same\n\
         args defaults, except:\n\n\
         | Plugin | Upstream {UPSTREAM_RELEASE} | berth |\n|---|---|---|\n"
    );
    for difference in UPSTREAM_DIFFERENCES {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            difference.plugin,
            sentence(difference.upstream),
            sentence(&berth_side(difference))
        ));
    }
    out
}

/// What berth does, led by "absent" for a plugin berth does not have.
fn berth_side(difference: &UpstreamDifference) -> String {
    match difference.missing {
        true => format!("absent; {}", difference.berth),
        false => difference.berth.to_string(),
    }
}

/// `text` capitalised and ended with a full stop, as a table cell.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

pub fn run(args: PluginsArgs, registry: &Registry) -> ExitCode {
    let text = match render(args.name.as_deref(), args.format, registry) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(super::EXIT_INVALID_INPUT);
        }
    };
    ExitCode::from(super::write_stdout(&text, "to stdout"))
}

/// The registered name `name` was most likely meant to be: equal ignoring case, or within
/// a third of its length in edits (at least 2).
pub fn closest_name<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    let wanted = name.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    names
        .iter()
        .map(|candidate| {
            (
                edit_distance(&wanted, &candidate.to_lowercase()),
                *candidate,
            )
        })
        .filter(|(distance, _)| *distance <= limit)
        .min()
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_close_name() {
        let names = [
            "DefaultBinder",
            "NodeName",
            "NodeResourcesFit",
            "TaintToleration",
        ];
        let cases = [
            ("wrong case", "noderesourcesfit", Some("NodeResourcesFit")),
            (
                "one letter missing",
                "NodeResourceFit",
                Some("NodeResourcesFit"),
            ),
            (
                "transposed letters",
                "TaintTolreation",
                Some("TaintToleration"),
            ),
            ("short name, two edits", "NodeNme", Some("NodeName")),
            ("unrelated", "Coscheduling", None),
            ("empty", "", None),
        ];
        for (case, name, want) in cases {
            assert_eq!(closest_name(name, &names), want, "case {case}");
        }
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
    }
}
