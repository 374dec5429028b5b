//! `toolhost policy import [FILE...]`: Wassette permission policies into
//! `[plugins.NAME]` grants of toolhost.toml.
//!
//! toolhost never grants from a file beside a plugin (its author may have
//! written it): the operator imports a policy once, sees what it adds, and
//! the config stays the one place grants come from. The config file is
//! edited in place, keeping its comments and layout, checked as a whole
//! before it is written, and replaced through a temporary file.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost::Config;
use toolhost::grants::Grants;
use toolhost::grants::wassette::{self, Converted};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Add the grants of Wassette policies (policy.yaml, NAME.policy.yaml) to toolhost.toml
    Import(ImportArgs),
}

#[derive(clap::Args)]
struct ImportArgs {
    /// Policy files [default: every NAME.policy.yaml and policy.yaml in the plugins folder]
    files: Vec<PathBuf>,

    /// The plugin (file stem of its .wasm) the policy is for [default: NAME of NAME.policy.yaml,
    /// or the only .wasm beside a policy.yaml]
    #[arg(long, value_name = "NAME")]
    plugin: Option<String>,

    /// Print what would be added, and write nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(config: &Config, config_path: Option<&Path>, plugins_dir: &Path, args: Args) -> Result<ExitCode> {
    let Command::Import(args) = args.command;
    let path = config_path.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(toolhost::config::DEFAULT_FILE));
    let policies = policies(plugins_dir, &args)?;
    if policies.is_empty() {
        bail!(
            "there is no Wassette policy (NAME.policy.yaml or policy.yaml) in the plugins folder {}: name the policy \
             files to import",
            plugins_dir.display()
        );
    }
    // Every policy is read and converted before anything is written: one bad file writes nothing.
    let mut converted = Vec::new();
    for (file, plugin) in policies {
        let policy = wassette::load(&file).map_err(anyhow::Error::msg)?;
        converted.push((file, plugin, policy));
    }
    let text = match toolhost::grants::readfile::read_regular_text(&path, toolhost::grants::readfile::limits::TOML) {
        Ok(text) => text,
        Err(err) if err.is_not_found() => String::new(),
        Err(err) => bail!("could not read config file {}: {err}", path.display()),
    };
    let mut document: toml_edit::DocumentMut =
        text.parse().with_context(|| format!("config file {} is not valid", path.display()))?;
    let mut changed = false;
    for (file, plugin, policy) in &converted {
        let have = config.plugins.get(plugin).map(|own| own.grants.clone()).unwrap_or_default();
        let lacking = wassette::lacking(&policy.grants, &have);
        println!("{} → [plugins.{plugin}]", file.display());
        for note in &policy.notes {
            println!("  note: {note}");
        }
        if policy.grants.is_empty() {
            println!("  grants nothing (the plugin needs no grant)");
            continue;
        }
        if lacking.is_empty() {
            println!("  already granted in {}", path.display());
            continue;
        }
        add(&mut document, plugin, &lacking, file, policy)
            .with_context(|| format!("could not add the grants of {} to {}", file.display(), path.display()))?;
        for (kind, what) in lacking.describe() {
            println!("  + {kind} {what}");
        }
        changed = true;
    }
    let new_text = document.to_string();
    // The result must be a config toolhost reads, with the grants the policies asked for.
    Config::parse(&new_text).with_context(|| format!("the grants would leave {} invalid", path.display()))?;
    if args.dry_run {
        println!("(dry run: {} is unchanged)", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if changed {
        write_replacing(&path, &new_text)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The policy files to import, each with its plugin's name.
fn policies(plugins_dir: &Path, args: &ImportArgs) -> Result<Vec<(PathBuf, String)>> {
    if args.files.is_empty() {
        let plugins = stems(plugins_dir);
        let found = wassette::beside(plugins_dir, &plugins);
        if args.plugin.is_some() && found.len() > 1 {
            bail!("--plugin names the plugin of one policy file: name that file too");
        }
        return found
            .into_iter()
            .map(|found| match (args.plugin.clone().or(found.plugin), found.path) {
                (Some(plugin), path) => Ok((path, plugin)),
                (None, path) => bail!(
                    "{}: cannot tell which plugin this policy is for: run `toolhost policy import {} --plugin NAME`",
                    path.display(),
                    path.display()
                ),
            })
            .collect();
    }
    if args.plugin.is_some() && args.files.len() > 1 {
        bail!("--plugin names the plugin of one policy file: import the files one at a time");
    }
    let mut policies = Vec::new();
    for file in &args.files {
        let plugin = match &args.plugin {
            Some(plugin) => plugin.clone(),
            None => plugin_of(file)?,
        };
        policies.push((file.clone(), plugin));
    }
    Ok(policies)
}

/// `NAME` for `NAME.policy.yaml`; the only `.wasm` beside a `policy.yaml`.
fn plugin_of(file: &Path) -> Result<String> {
    let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".yaml").or_else(|| name.strip_suffix(".yml")).unwrap_or(&name);
    if let Some(plugin) = stem.strip_suffix(".policy") {
        return Ok(plugin.to_owned());
    }
    let folder = file.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match stems(folder).as_slice() {
        [only] => Ok(only.clone()),
        _ => bail!(
            "cannot tell which plugin {} is for (its folder does not hold exactly one .wasm): add --plugin NAME, the \
             file stem of the plugin's .wasm",
            file.display()
        ),
    }
}

/// The file stems of the `.wasm` files in `dir`.
fn stems(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut stems: Vec<String> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm"))
        .filter_map(|path| path.file_stem().map(|stem| stem.to_string_lossy().into_owned()))
        .collect();
    stems.sort();
    stems
}

/// Adds `lacking` to `[plugins.NAME]` of `document`, keeping what is there.
fn add(
    document: &mut toml_edit::DocumentMut,
    plugin: &str,
    lacking: &Grants,
    file: &Path,
    policy: &Converted,
) -> Result<()> {
    let plugins = document.entry("plugins").or_insert_with(|| {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        toml_edit::Item::Table(table)
    });
    let plugins = plugins.as_table_mut().context("`plugins` is not a table")?;
    let table = plugins.entry(plugin).or_insert_with(|| {
        let mut table = toml_edit::Table::new();
        let about = policy.description.as_deref().map(|text| format!(": {}", one_line(text))).unwrap_or_default();
        table
            .decor_mut()
            .set_prefix(format!("\n# From the Wassette policy {}{about}\n", one_line(&file.display().to_string())));
        toml_edit::Item::Table(table)
    });
    let table = table.as_table_like_mut().with_context(|| format!("`plugins.{plugin}` is not a table"))?;
    let lists: [(&str, Vec<String>); 4] = [
        ("http", lacking.network.hosts.iter().map(ToString::to_string).collect()),
        ("dirs", lacking.files.dirs.iter().map(ToString::to_string).collect()),
        ("env", lacking.env.names.iter().map(ToString::to_string).collect()),
        ("secrets", lacking.env.secrets.iter().map(ToString::to_string).collect()),
    ];
    for (key, entries) in lists {
        if entries.is_empty() {
            continue;
        }
        let item = table.entry(key).or_insert(toml_edit::value(toml_edit::Array::new()));
        let array = item.as_array_mut().with_context(|| format!("`plugins.{plugin}.{key}` is not an array"))?;
        for entry in entries {
            array.push(entry);
        }
    }
    Ok(())
}

/// Text on one line, for a comment.
fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// Writes `text` to `path` through a temporary file in its folder and a rename,
/// so the config is never seen half-written.
fn write_replacing(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let folder = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = folder.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        // Keep the config's permissions (it may be readable by its owner only).
        if let Ok(metadata) = std::fs::metadata(path) {
            std::fs::set_permissions(&temporary, metadata.permissions())?;
        }
        std::fs::rename(&temporary, path)
    })();
    if let Err(err) = result {
        let _ = std::fs::remove_file(&temporary);
        bail!("could not write {}: {err}", path.display());
    }
    Ok(())
}
