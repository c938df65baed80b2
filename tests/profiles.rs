//! The profile validation corpus (`tests/profiles/`, format in its README): every valid
//! profile validates cleanly, every invalid one fails with exactly the field paths and
//! message fragments its header lists.

use std::path::Path;

use berth::framework::{FieldError, FieldErrorKind};
use berth::plugins::default_registry;
use berth::schema::ProfileValidator;
use berth::testing::{profile_corpus, read_yaml};

/// What a corpus file's header comments promise.
#[derive(Debug, Default)]
struct Expectations {
    /// (field path, message fragment; empty = any message).
    errors: Vec<(String, String)>,
    /// Fragments that some warning must contain.
    warnings: Vec<String>,
    allow_other_errors: bool,
    /// The API server accepts the object; only berth's semantic checks reject it.
    api_server_accepts: bool,
}

fn expectations(text: &str, file: &Path) -> Expectations {
    let mut expected = Expectations::default();
    for line in text.lines() {
        let Some(comment) = line.strip_prefix('#') else {
            continue;
        };
        let comment = comment.trim();
        if let Some(path) = comment.strip_prefix("expect-path:") {
            expected
                .errors
                .push((path.trim().to_string(), String::new()));
        } else if let Some(message) = comment.strip_prefix("expect-message:") {
            match expected.errors.last_mut() {
                Some((_, fragment)) if fragment.is_empty() => *fragment = message.trim().into(),
                _ => panic!(
                    "{}: expect-message without a preceding expect-path",
                    file.display()
                ),
            }
        } else if let Some(warning) = comment.strip_prefix("expect-warning:") {
            expected.warnings.push(warning.trim().to_string());
        } else if comment == "allow-other-errors" {
            expected.allow_other_errors = true;
        } else if comment == "api-server: accepts" {
            expected.api_server_accepts = true;
        }
    }
    expected
}

fn listing(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| format!("\n    {e}"))
        .collect::<String>()
}

/// Problems of one file, empty when it behaves as its header says.
fn check_file(validator: &ProfileValidator<'_>, file: &Path, valid: bool) -> Vec<String> {
    let (text, raw) = read_yaml(file);
    let expected = expectations(&text, file);
    let validation = validator.validate(&raw);
    let errors = &validation.errors;
    let mut problems = Vec::new();
    let internal: Vec<&FieldError> = errors
        .iter()
        .filter(|e| e.kind == FieldErrorKind::Internal)
        .collect();
    if !internal.is_empty() {
        problems.push(format!("internal errors (berth's bug): {internal:?}"));
    }
    for fragment in &expected.warnings {
        if !validation.warnings.iter().any(|w| w.contains(fragment)) {
            problems.push(format!(
                "no warning contains {fragment:?}; warnings: {:?}",
                validation.warnings
            ));
        }
    }
    if valid {
        if !errors.is_empty() || validation.resolved.is_none() {
            problems.push(format!("expected no errors, got:{}", listing(errors)));
        }
        return problems;
    }
    if expected.errors.is_empty() {
        problems.push("an invalid profile must list at least one expect-path".into());
    }
    for (path, fragment) in &expected.errors {
        let found = errors
            .iter()
            .any(|e| &e.path == path && e.to_string().contains(fragment.as_str()));
        if !found {
            problems.push(format!("no error at {path} containing {fragment:?}"));
        }
    }
    if !expected.allow_other_errors {
        for error in errors {
            if !expected.errors.iter().any(|(path, _)| *path == error.path) {
                problems.push(format!("unexpected error: {error}"));
            }
        }
    }
    let admission = validator.admission_errors(&raw);
    if expected.api_server_accepts != admission.is_empty() {
        problems.push(format!(
            "the header says `api-server: accepts` is {}, but the API server's checks give:{}",
            expected.api_server_accepts,
            listing(&admission)
        ));
    }
    if !problems.is_empty() {
        problems.push(format!("actual errors:{}", listing(errors)));
    }
    problems
}

fn check_corpus(kind: &str, valid: bool, at_least: usize) {
    let registry = default_registry();
    let validator = ProfileValidator::new(&registry).expect("the profile schema builds");
    let files = profile_corpus(kind);
    assert!(
        files.len() >= at_least,
        "tests/profiles/{kind} holds {} files, want at least {at_least}",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let problems = check_file(&validator, file, valid);
            (!problems.is_empty())
                .then(|| format!("{}:\n  {}", file.display(), problems.join("\n  ")))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} files misbehave:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn valid_profiles_validate_cleanly() {
    check_corpus("valid", true, 6);
}

#[test]
fn invalid_profiles_fail_with_the_listed_errors() {
    check_corpus("invalid", false, 30);
}

#[test]
fn the_crd_rules_all_compile() {
    let registry = default_registry();
    let validator = ProfileValidator::new(&registry).expect("the profile schema builds");
    assert_eq!(validator.rule_compilation_errors(), Vec::<String>::new());
}

#[test]
fn headers_are_parsed_in_pairs() {
    let text = "# expect-path: spec.a\n# expect-message: bad\n# expect-path: spec.b\n# allow-other-errors\nspec: {}\n";
    let parsed = expectations(text, Path::new("inline"));
    assert_eq!(
        parsed.errors,
        [
            ("spec.a".to_string(), "bad".to_string()),
            ("spec.b".to_string(), String::new())
        ]
    );
    assert!(parsed.allow_other_errors);
    assert!(!parsed.api_server_accepts);
}
