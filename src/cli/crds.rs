//! `berth crds`: the CustomResourceDefinitions generated from the registry, as YAML.
//!
//! Without flags the CRDs go to stdout as one multi-document stream
//! (`berth crds | kubectl apply -f -`). With `--output-dir DIR` each CRD is written to
//! `DIR/<plural>.<group>.yaml`; the checked-in `crds/` directory is produced this way, and a
//! test fails when it is stale.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::framework::Registry;

#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one `<plural>.<group>.yaml` file per CRD into DIR (created if missing) instead
    /// of printing a multi-document stream.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// One CRD as `berth crds --output-dir` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdFile {
    /// `<plural>.<group>.yaml`, e.g. `schedulerprofiles.berth.dev.yaml`.
    pub file_name: String,
    /// The CRD as a single YAML document, as it appears in the `berth crds` stream.
    pub yaml: String,
}

/// The files `--output-dir` writes for `crds` (from [`crate::schema::crds`]).
pub fn crd_files(
    crds: &[CustomResourceDefinition],
) -> Result<Vec<CrdFile>, serde_saphyr::SerializeError> {
    crds.iter()
        .map(|crd| {
            Ok(CrdFile {
                file_name: format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default()),
                yaml: serde_saphyr::to_string(crd)?,
            })
        })
        .collect()
}

pub fn run(args: CrdsArgs, registry: &Registry) -> ExitCode {
    let result = match &args.output_dir {
        None => print_stream(registry),
        Some(dir) => write_files(registry, dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

fn print_stream(registry: &Registry) -> Result<(), String> {
    let yaml = crate::schema::crds_yaml(registry).map_err(|e| e.to_string())?;
    std::io::stdout()
        .lock()
        .write_all(yaml.as_bytes())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

fn write_files(registry: &Registry, dir: &Path) -> Result<(), String> {
    let crds = crate::schema::crds(registry).map_err(|e| e.to_string())?;
    let files = crd_files(&crds).map_err(|e| format!("cannot render the CRDs as YAML: {e}"))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create directory {}: {e}", dir.display()))?;
    for file in files {
        let path = dir.join(&file.file_name);
        std::fs::write(&path, file.yaml)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
