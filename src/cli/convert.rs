//! `berth convert`: turns `KubeSchedulerConfiguration` files into SchedulerProfiles
//! (one per `profiles[]` entry) on standard output. The mapping lives in
//! [`crate::convert`]; this module reads files, reports and prints.
//!
//! Exit codes (documented in `docs/convert.md`): 0 when every profile was written; 2 for
//! input that cannot be read (malformed YAML, wrong kind, unknown apiVersion, a field of
//! the wrong type), for a `--rename` that names no converted profile and, without
//! `--skip-unsupported`, for anything berth cannot carry (then nothing is written); 1 for
//! internal errors. Notes (settings that belong to `berth run`, version defaults kept or
//! left out, a `default-scheduler` profile) go to stderr and never change the exit code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::api::SchedulerProfile;
use crate::convert::{ConvertError, ConvertOptions, Unsupported, convert, is_dns1123_subdomain};
use crate::files;
use crate::framework::Registry;

use super::{EXIT_INTERNAL, EXIT_INVALID_INPUT, write_stdout};
use crate::simulate::input::{self, RawDocument, Source, split_documents};

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// KubeSchedulerConfiguration file (repeatable; `-` reads stdin). A file may hold
    /// several configurations as a multi-document stream.
    #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
    pub filenames: Vec<PathBuf>,
    /// Drop what berth cannot carry (printed as warnings) and write the rest, instead of
    /// failing.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// Name the profile converted from scheduler name OLD NEW instead (repeatable), e.g.
    /// `--rename default-scheduler=berth-default`: `berth run` serves default-scheduler
    /// only with --serve-default-scheduler.
    #[arg(long = "rename", value_name = "OLD=NEW", value_parser = parse_rename)]
    pub renames: Vec<(String, String)>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Yaml)]
    pub output: OutputFormat,
}

/// How the profiles are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A multi-document YAML stream, one SchedulerProfile per document.
    Yaml,
    /// One JSON `List` (apiVersion v1) holding the SchedulerProfiles.
    Json,
}

/// Runs `berth convert` and returns its exit code.
pub fn run(args: ConvertArgs, registry: &Registry) -> ExitCode {
    ExitCode::from(convert_command(&args, registry))
}

fn convert_command(args: &ConvertArgs, registry: &Registry) -> u8 {
    let documents = match read_documents(&args.filenames) {
        Ok(documents) => documents,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_INVALID_INPUT;
        }
    };
    let mut options = ConvertOptions::default();
    for (old, new) in &args.renames {
        if options.renames.insert(old.clone(), new.clone()).is_some() {
            eprintln!("error: --rename {old}={new}: {old} is renamed twice");
            return EXIT_INVALID_INPUT;
        }
    }
    let mut renamed = BTreeSet::new();
    let mut profiles: Vec<(Source, SchedulerProfile)> = Vec::new();
    let mut unsupported: Vec<(Source, Unsupported)> = Vec::new();
    let mut failed = false;
    for (source, value) in documents {
        match convert(&value, registry, &options) {
            Ok(conversion) => {
                renamed.extend(conversion.renamed);
                for note in &conversion.notes {
                    eprintln!("note: {source}: {note}");
                }
                unsupported.extend(
                    conversion
                        .unsupported
                        .into_iter()
                        .map(|u| (source.clone(), u)),
                );
                profiles.extend(conversion.profiles.into_iter().map(|p| (source.clone(), p)));
            }
            Err(ConvertError::Invalid(errors)) => {
                for error in errors {
                    eprintln!("error: {source}: {error}");
                }
                failed = true;
            }
            Err(error) => {
                eprintln!("error: {source}: {error}");
                failed = true;
            }
        }
    }
    for (old, new) in &options.renames {
        if !renamed.contains(old) {
            eprintln!("error: --rename {old}={new}: no converted profile is named {old:?}");
            failed = true;
        }
    }
    if failed {
        return EXIT_INVALID_INPUT;
    }
    let profiles = drop_duplicate_names(profiles, &mut unsupported);
    if !unsupported.is_empty() && !args.skip_unsupported {
        for (source, item) in &unsupported {
            eprintln!("error: {source}: {item}");
        }
        eprintln!(
            "error: {} item(s) cannot be carried into SchedulerProfiles; nothing was written. \
             Pass --skip-unsupported to drop them and write the rest.",
            unsupported.len()
        );
        return EXIT_INVALID_INPUT;
    }
    for (source, item) in &unsupported {
        eprintln!("warning: {source}: {item} (dropped)");
    }
    write_profiles(&profiles, args.output)
}

/// `OLD=NEW`, both scheduler names; NEW must be able to name a SchedulerProfile.
fn parse_rename(text: &str) -> Result<(String, String), String> {
    let Some((old, new)) = text
        .split_once('=')
        .filter(|(o, n)| !o.is_empty() && !n.is_empty())
    else {
        return Err("expected OLD=NEW, e.g. default-scheduler=berth-default".into());
    };
    if !is_dns1123_subdomain(new) {
        return Err(format!(
            "{new:?} cannot name a SchedulerProfile: it must be a DNS-1123 subdomain (lowercase letters, \
             digits, '-' and '.')"
        ));
    }
    Ok((old.to_string(), new.to_string()))
}

/// Profiles converted from several configurations may share a name; the first keeps it.
fn drop_duplicate_names(
    profiles: Vec<(Source, SchedulerProfile)>,
    unsupported: &mut Vec<(Source, Unsupported)>,
) -> Vec<SchedulerProfile> {
    let mut first: BTreeMap<String, Source> = BTreeMap::new();
    let mut kept = Vec::new();
    for (source, profile) in profiles {
        let name = profile.scheduler_name();
        if let Some(earlier) = first.get(&name) {
            let item = Unsupported {
                path: "profiles".into(),
                message: format!(
                    "duplicate schedulerName {name:?}: {earlier} already defines a profile with it"
                ),
            };
            unsupported.push((source, item));
            continue;
        }
        first.insert(name, source);
        kept.push(profile);
    }
    kept
}

fn write_profiles(profiles: &[SchedulerProfile], format: OutputFormat) -> u8 {
    let text = match render(profiles, format) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("error: cannot encode the SchedulerProfiles: {message}");
            return EXIT_INTERNAL;
        }
    };
    write_stdout(&text, "the SchedulerProfiles")
}

fn render(profiles: &[SchedulerProfile], format: OutputFormat) -> Result<String, String> {
    match format {
        OutputFormat::Yaml => profiles
            .iter()
            .map(|profile| serde_saphyr::to_string(profile).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(|documents| documents.join("---\n")),
        OutputFormat::Json => {
            let list = json!({"apiVersion": "v1", "kind": "List", "items": profiles});
            serde_json::to_string_pretty(&list)
                .map(|text| text + "\n")
                .map_err(|e| e.to_string())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reading the input

/// Every non-empty document of every file, parsed, in order. Documents are numbered from 0
/// per file, counting every `---` as `berth simulate` does (a leading `---` opens
/// document 0), so the numbers in messages agree between the two commands.
fn read_documents(paths: &[PathBuf]) -> Result<Vec<(Source, Value)>, String> {
    let mut documents = Vec::new();
    for path in paths {
        let text = read_file(path)?;
        let before = documents.len();
        for (index, document) in split_documents(&text).into_iter().enumerate() {
            let source = Source {
                file: path.clone(),
                document: index,
            };
            if let Some(value) = parse_document(&document, &source)? {
                documents.push((source, value));
            }
        }
        if documents.len() == before {
            let source = Source {
                file: path.clone(),
                document: 0,
            };
            return Err(format!(
                "{source}: no KubeSchedulerConfiguration in this file"
            ));
        }
    }
    Ok(documents)
}

fn read_file(path: &Path) -> Result<String, String> {
    let shown = if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    files::read_to_string(path, files::MANIFEST_LIMIT).map_err(|error| match error {
        files::ReadError::Io(error) => format!("{shown}: cannot read file: {error}"),
        too_large => format!("{shown}: {too_large}"),
    })
}

/// Parses one document with `berth simulate`'s reader; `None` for a document without
/// content (or an explicit null).
fn parse_document(document: &RawDocument<'_>, source: &Source) -> Result<Option<Value>, String> {
    if !document.has_content {
        return Ok(None);
    }
    let value = input::parse_document(document, source).map_err(|e| e.to_string())?;
    Ok((!value.is_null()).then_some(value))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ConvertArgs,
    }

    #[test]
    fn flags_parse_with_defaults() {
        let cli = Cli::try_parse_from(["berth", "-f", "a.yaml", "-f", "b.yaml"]);
        let args = cli.map(|c| c.args).ok();
        assert_eq!(
            args.as_ref()
                .map(|a| (a.filenames.len(), a.skip_unsupported, a.output)),
            Some((2, false, OutputFormat::Yaml))
        );
        for argv in [vec!["berth"], vec!["berth", "-f", "a", "-o", "table"]] {
            assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn rename_takes_old_equals_a_valid_new_name() {
        let cases = [
            (
                "default-scheduler=berth-default",
                Ok(("default-scheduler", "berth-default")),
            ),
            ("a=b.c", Ok(("a", "b.c"))),
            ("default-scheduler", Err("expected OLD=NEW")),
            ("=b", Err("expected OLD=NEW")),
            ("a=", Err("expected OLD=NEW")),
            ("a=Berth", Err("cannot name a SchedulerProfile")),
            ("a=b=c", Err("cannot name a SchedulerProfile")),
        ];
        for (text, want) in cases {
            match (parse_rename(text), want) {
                (Ok((old, new)), Ok((want_old, want_new))) => {
                    assert_eq!((old.as_str(), new.as_str()), (want_old, want_new), "{text}");
                }
                (Err(error), Err(fragment)) => assert!(error.contains(fragment), "{text}: {error}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn malformed_yaml_names_file_document_and_line() {
        let text = "a: 1\n---\nkind: [unclosed\n";
        let documents = split_documents(text);
        let source = Source {
            file: PathBuf::from("c.yaml"),
            document: 1,
        };
        let error = parse_document(&documents[1], &source).expect_err("malformed");
        assert!(
            error.starts_with("c.yaml: document 1: malformed YAML"),
            "{error}"
        );
        assert!(error.contains("line 3"), "{error}");
    }
}
