//! The renderers of the plugin reference: terminal text for `berth plugins [NAME]` and
//! the Markdown checked in as `docs/plugins.md`. They print what [`Reference::of`] read
//! from the registry and compute nothing of their own, so both outputs say the same.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{ArgsDoc, PluginDoc, Reference, RuleDoc, one_line};

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

fn weight_text(weight: Option<i32>) -> String {
    weight.map_or_else(|| "-".into(), |w| w.to_string())
}

/// The width text output wraps doc text at.
const TEXT_WIDTH: usize = 88;

/// `berth plugins`: a table of every plugin, then the default plugin set.
pub fn render_list_text(reference: &Reference) -> String {
    let header = [
        "NAME",
        "EXTENSION POINTS",
        "DEFAULT",
        "WEIGHT",
        "ARGS",
        "DESCRIPTION",
    ];
    let rows: Vec<[String; 6]> = reference
        .plugins
        .iter()
        .map(|plugin| {
            [
                plugin.name.clone(),
                plugin.points_text(),
                yes_no(plugin.in_default_set).into(),
                weight_text(plugin.default_weight),
                plugin
                    .args
                    .as_ref()
                    .map_or_else(|| "-".into(), |args| args.config_field.clone()),
                plugin.description.clone(),
            ]
        })
        .collect();
    let mut out = table(&header, &rows);
    out.push('\n');
    out.push_str(&default_set_text(reference));
    out.push_str(
        "\nArgs go under spec.pluginConfig.<ARGS>; `berth plugins NAME` describes them.\n",
    );
    out
}

fn default_set_text(reference: &Reference) -> String {
    let mut out = String::from("Default plugin set (multiPoint, in order):\n");
    if reference.default_set.is_empty() {
        out.push_str("  (none)\n");
    }
    let width = reference
        .default_set
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(0);
    for (i, plugin) in reference.default_set.iter().enumerate() {
        let line = match plugin.weight {
            Some(weight) => format!(
                "{:>3}. {:width$}  Score weight {weight}",
                i + 1,
                plugin.name
            ),
            None => format!("{:>3}. {}", i + 1, plugin.name),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Columns separated by two spaces, each as wide as its widest cell; no trailing spaces.
fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            let pad = widths[i].saturating_sub(cell.chars().count());
            text.extend(std::iter::repeat_n(' ', pad));
        }
        let mut text = text.trim_end().to_string();
        text.push('\n');
        text
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `berth plugins NAME`: one plugin with its args, field by field.
pub fn render_plugin_text(plugin: &PluginDoc) -> String {
    let mut out = format!("{}\n", plugin.name);
    for line in wrap(&plugin.description, TEXT_WIDTH - 2) {
        let _ = writeln!(out, "  {line}");
    }
    out.push('\n');
    let _ = writeln!(out, "Extension points:  {}", plugin.points_text());
    let _ = writeln!(out, "Default set:       {}", default_text(plugin));
    let Some(args) = &plugin.args else {
        out.push_str("Args:              none\n");
        return out;
    };
    let _ = writeln!(
        out,
        "Args:              spec.pluginConfig.{} ({})",
        args.config_field, args.type_name
    );
    for line in wrap(&args.description, TEXT_WIDTH - 19) {
        let _ = writeln!(out, "                   {line}");
    }
    out.push_str("\nFields:\n");
    for field in &args.fields {
        let _ = writeln!(out, "  {}  {}", field.path, field.type_name);
        for line in wrap(&field.doc, TEXT_WIDTH - 6) {
            let _ = writeln!(out, "      {line}");
        }
        match field.default_text() {
            "-" => {}
            "required" => out.push_str("      Required\n"),
            default => {
                let _ = writeln!(out, "      Default: {default}");
            }
        }
        if !field.allowed.is_empty() {
            let _ = writeln!(out, "      Allowed: {}", field.allowed.join(", "));
        }
        if !field.constraints.is_empty() {
            let _ = writeln!(out, "      Constraints: {}", field.constraints.join("; "));
        }
    }
    if !args.rules.is_empty() {
        out.push_str("\nCEL rules:\n");
        for rule in &args.rules {
            let on = rule_field(args, rule);
            let _ = writeln!(out, "  {on}");
            let _ = writeln!(out, "      Rule: {}", rule.rule);
            if !rule.message.is_empty() {
                let _ = writeln!(out, "      Message: {}", rule.message);
            }
            if !rule.field_path.is_empty() {
                let _ = writeln!(out, "      Reported at: {on}{}", rule.field_path);
            }
        }
    }
    out.push_str("\nDefaults:\n");
    for line in defaults_yaml(plugin.name.as_str(), args).lines() {
        let _ = writeln!(out, "  {line}");
    }
    out
}

fn default_text(plugin: &PluginDoc) -> String {
    match (plugin.in_default_set, plugin.default_weight) {
        (true, Some(weight)) => format!("yes, Score weight {weight}"),
        (true, None) => "yes".into(),
        (false, _) => "no".into(),
    }
}

/// The defaulted args as the `spec.pluginConfig` YAML a profile would carry.
fn defaults_yaml(name: &str, args: &ArgsDoc) -> String {
    let mut config = Map::new();
    config.insert(args.config_field.clone(), args.defaults.clone());
    let mut plugin_config = Map::new();
    plugin_config.insert("pluginConfig".into(), Value::Object(config));
    let mut spec = Map::new();
    spec.insert("spec".into(), Value::Object(plugin_config));
    serde_saphyr::to_string(&Value::Object(spec))
        .unwrap_or_else(|e| format!("# cannot render the defaults of {name}: {e}\n"))
}

/// Greedy word wrap at `width` columns; a word longer than `width` gets a line of its own.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The whole reference as Markdown (`docs/plugins.md`): a table of all plugins, the
/// default plugin set, then one section per plugin with its args table.
pub fn render_markdown(reference: &Reference) -> String {
    let mut out = String::from(
        "# Plugin reference\n\n\
         <!-- Generated from the plugin registry by `berth plugins --format markdown`; do not edit.\n     \
         Regenerate with: cargo run -q -- plugins --format markdown > docs/plugins.md -->\n\n\
         Every plugin berth knows: the extension points it implements, whether it is in the\n\
         default plugin set (and with which Score weight), and its args, which a\n\
         SchedulerProfile sets under `spec.pluginConfig.<field>`. `berth plugins [NAME]`\n\
         prints the same in a terminal.\n\n## Plugins\n\n",
    );
    out.push_str("| Plugin | Extension points | Default | Weight | Args | Description |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for plugin in &reference.plugins {
        let args = plugin
            .args
            .as_ref()
            .map_or_else(|| "-".into(), |args| format!("`{}`", args.config_field));
        let _ = writeln!(
            out,
            "| [{name}](#{anchor}) | {points} | {default} | {weight} | {args} | {description} |",
            name = plugin.name,
            anchor = plugin.name.to_lowercase(),
            points = plugin.points_text(),
            default = yes_no(plugin.in_default_set),
            weight = weight_text(plugin.default_weight),
            description = cell(&plugin.description),
        );
    }
    out.push_str("\n## Default plugin set\n\n");
    out.push_str(
        "A profile runs these unless it disables them, as a `multiPoint` list: each plugin at\n\
         every extension point it implements, in this order.\n\n",
    );
    if reference.default_set.is_empty() {
        out.push_str("None.\n");
    }
    for (i, plugin) in reference.default_set.iter().enumerate() {
        let _ = match plugin.weight {
            Some(weight) => writeln!(out, "{}. {} (Score weight {weight})", i + 1, plugin.name),
            None => writeln!(out, "{}. {}", i + 1, plugin.name),
        };
    }
    for plugin in &reference.plugins {
        out.push('\n');
        out.push_str(&render_plugin_markdown(plugin));
    }
    out
}

/// One plugin's section of the Markdown reference.
pub fn render_plugin_markdown(plugin: &PluginDoc) -> String {
    let mut out = format!("## {}\n\n", plugin.name);
    if !plugin.description.is_empty() {
        let _ = writeln!(out, "{}\n", plugin.description);
    }
    let _ = writeln!(out, "- Extension points: {}", plugin.points_text());
    let _ = writeln!(out, "- Default set: {}", default_text(plugin));
    let Some(args) = &plugin.args else {
        out.push_str("- Args: none\n");
        return out;
    };
    let _ = writeln!(
        out,
        "- Args: `spec.pluginConfig.{}` (`{}`)",
        args.config_field, args.type_name
    );
    if !args.description.is_empty() {
        let _ = writeln!(out, "\n{}", args.description);
    }
    out.push_str("\n| Field | Type | Default | Allowed values | Constraints | Description |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for field in &args.fields {
        let default = match field.default_text() {
            "-" => "-".to_string(),
            "required" => "required".to_string(),
            json => format!("`{}`", cell(json)),
        };
        let allowed = field
            .allowed
            .iter()
            .map(|value| format!("`{}`", cell(value)))
            .collect::<Vec<_>>()
            .join(", ");
        let constraints = field
            .constraints
            .iter()
            .map(|b| cell(b))
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            out,
            "| `{path}` | {ty} | {default} | {allowed} | {constraints} | {doc} |",
            path = field.path,
            ty = cell(&field.type_name),
            allowed = or_dash(allowed),
            constraints = or_dash(constraints),
            doc = cell(&field.doc),
        );
    }
    if !args.rules.is_empty() {
        out.push_str(
            "\nCEL rules, which the API server checks at `kubectl apply` and `berth simulate` \
             before scheduling:\n\n| On | Rule | Message | Reported at |\n|---|---|---|---|\n",
        );
        for rule in &args.rules {
            let on = rule_field(args, rule);
            let _ = writeln!(
                out,
                "| `{on}` | `{expression}` | {message} | `{on}{field_path}` |",
                on = cell(&on),
                expression = cell(&rule.rule),
                message = or_dash(cell(&rule.message)),
                field_path = cell(&rule.field_path),
            );
        }
    }
    out.push_str("\nDefaults:\n\n```yaml\n");
    out.push_str(&defaults_yaml(&plugin.name, args));
    out.push_str("```\n");
    out
}

/// The full path of the field a rule is on (its `self`): `spec.pluginConfig.<field>`,
/// then the field's path in the args.
fn rule_field(args: &ArgsDoc, rule: &RuleDoc) -> String {
    match rule.path.as_str() {
        "" => format!("spec.pluginConfig.{}", args.config_field),
        path => format!("spec.pluginConfig.{}.{path}", args.config_field),
    }
}

fn or_dash(text: String) -> String {
    if text.is_empty() { "-".into() } else { text }
}

/// Text made safe for a Markdown table cell: one line, `|` escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_whole() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("averylongword x", 4), vec!["averylongword", "x"]);
        assert!(wrap("", 10).is_empty());
    }
}
