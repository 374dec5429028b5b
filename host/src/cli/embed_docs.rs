//! `toolhost embed-docs FILE.wasm --wit WIT`: copies the doc comments of the
//! WIT a component was built from into the component, so that its typed
//! functions' tools are described by them.
//!
//! The component binary format has no place for doc comments; wit-component
//! keeps them in a `package-docs` custom section, but the usual toolchains
//! (wit-bindgen's Rust build through wasm-component-ld, componentize-py,
//! componentize-js, `wit-bindgen c` + wasm-component-ld) leave it out. This
//! step is the build's last: it parses the WIT (a file, or a folder with its
//! `deps/`), encodes each package's docs as wit-component does, and writes the
//! component back with those sections in place of any it had (so running it
//! twice changes nothing), through a temporary file and a rename. The
//! sections are then part of the file: its digest, its signature and what a
//! registry holds all cover the descriptions the model will read.

use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost::readfile::{self, limits};
use toolhost::runtime::docs;
use wit_parser::{PackageMetadata, Resolve, WorldItem, WorldKey};

#[derive(clap::Args)]
pub struct Args {
    /// The component to describe (rewritten in place unless --output is given)
    file: PathBuf,

    /// The WIT it was built from: a .wit file, or a folder of them (with deps/)
    #[arg(long, value_name = "PATH")]
    wit: PathBuf,

    /// Write the described component here instead
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let shown = args.file.display();
    let wasm = readfile::read_regular(&args.file, limits::WASM).with_context(|| format!("cannot read {shown}"))?;
    if !wasmparser::Parser::is_component(&wasm) {
        bail!(
            "{shown} is not a WebAssembly component: pass the .wasm your build wrote (a component, not a core module)"
        );
    }
    let mut resolve = Resolve::new();
    let wit_shown = args.wit.display();
    // A file is read here, bounded; a folder's files are checked first, as
    // wit-parser reads whatever it finds.
    let parsed = if args.wit.is_dir() {
        check_wit_folder(&args.wit, 0)?;
        resolve.push_dir(&args.wit).map(|(main, _)| main)
    } else {
        let text = readfile::read_regular_text(&args.wit, MAX_WIT)
            .with_context(|| format!("cannot read the WIT at {wit_shown}"))?;
        resolve.push_str(&args.wit, &text)
    };
    // wit-parser's errors name the file, line and column, with the line shown.
    let main = parsed
        .map_err(|err| anyhow::anyhow!("{}", toolhost::runtime::text::printable(&format!("{err:#}"))))
        .with_context(|| format!("cannot read the WIT at {wit_shown}"))?;

    let exports = top_level_exports(&wasm).with_context(|| format!("{shown} cannot be read"))?;
    let documented = exported_items(&resolve);
    if !documented.iter().any(|name| exports.contains(name)) {
        // The names are the file's, shown as text that cannot act on a terminal.
        let listed: Vec<String> = exports.iter().take(20).map(|name| toolhost::runtime::text::quoted(name)).collect();
        bail!(
            "the WIT at {} describes none of what {shown} exports ({}): pass the WIT the component was built from",
            args.wit.display(),
            if listed.is_empty() { "nothing".to_owned() } else { listed.join(", ") }
        );
    }

    // The main package first; WASI's own packages describe no tools.
    let mut packages = vec![main];
    packages.extend(resolve.packages.iter().map(|(id, _)| id).filter(|id| *id != main));
    let mut sections = Vec::new();
    for id in packages {
        if resolve.packages[id].name.namespace == "wasi" {
            continue;
        }
        let encoded = PackageMetadata::extract(&resolve, id)
            .encode()
            .with_context(|| format!("cannot encode the docs of {}", resolve.packages[id].name))?;
        // `1{}`: a package with no doc comment at all.
        if encoded.len() > 3 {
            sections.push(encoded);
        }
    }
    let described = docs::with_sections(&wasm, &sections).map_err(|why| anyhow::anyhow!("{shown}: {why}"))?;
    let target = args.output.as_deref().unwrap_or(&args.file);
    write(target, &described, &args.file).with_context(|| format!("cannot write {}", target.display()))?;
    let found = docs::Docs::of(&described);
    if found.is_empty() {
        eprintln!(
            "note: the WIT at {} has no doc comments (`///` above a function, type or field), so {} is unchanged \
             but for any docs it carried: its tools are described by their signatures",
            args.wit.display(),
            target.display()
        );
    } else {
        eprintln!("described {} with the doc comments of {}", target.display(), args.wit.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The largest WIT file read (a package's WIT is kilobytes).
const MAX_WIT: u64 = 4 << 20;

/// Checks that what wit-parser will read in the WIT folder `dir` (its
/// `.wit` files, and `deps/` with packages as folders, `.wit` or `.wasm`
/// files) is regular files of bounded size: no FIFO to hang on, no device.
fn check_wit_folder(dir: &Path, depth: usize) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot read the WIT folder {}", dir.display()))?;
    for entry in entries {
        let path = entry.with_context(|| format!("cannot read the WIT folder {}", dir.display()))?.path();
        let meta = std::fs::metadata(&path);
        let is_dir = meta.as_ref().is_ok_and(|meta| meta.is_dir());
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        if is_dir {
            // `deps/` at the top, then a package per folder inside it.
            if (depth == 0 && name == "deps") || depth == 1 {
                check_wit_folder(&path, depth + 1)?;
            }
            continue;
        }
        let read = name.ends_with(".wit") || (depth > 0 && name.ends_with(".wasm"));
        if !read {
            continue;
        }
        let limit = if name.ends_with(".wasm") { limits::WASM } else { MAX_WIT };
        match meta {
            Ok(meta) if meta.is_file() && meta.len() <= limit => {}
            Ok(meta) if meta.is_file() => bail!("{} is too large for WIT ({} bytes)", path.display(), meta.len()),
            _ => bail!("{} is not a regular file: a WIT folder holds only files of WIT", path.display()),
        }
    }
    Ok(())
}

/// The names `wasm` exports at its top level: functions, interfaces
/// (`acme:shop/inventory@1.0.0`, or a plain name for one defined in the
/// world) and types.
fn top_level_exports(wasm: &[u8]) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut parser = wasmparser::Parser::new(0);
    let mut at = 0;
    loop {
        let rest = wasm.get(at..).unwrap_or_default();
        let (consumed, payload) = match parser.parse(rest, true)? {
            wasmparser::Chunk::Parsed { consumed, payload } => (consumed, payload),
            wasmparser::Chunk::NeedMoreData(_) => bail!("it ends in the middle of a section"),
        };
        at += consumed;
        match payload {
            wasmparser::Payload::ComponentExportSection(exports) => {
                for export in exports {
                    names.insert(export?.name.name.to_owned());
                }
            }
            wasmparser::Payload::ModuleSection { unchecked_range, .. }
            | wasmparser::Payload::ComponentSection { unchecked_range, .. } => {
                at = toolhost::runtime::docs::offset(unchecked_range.end)
            }
            wasmparser::Payload::End(_) => return Ok(names),
            _ => {}
        }
    }
}

/// What the worlds of `resolve` export, as a component names its exports.
fn exported_items(resolve: &Resolve) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (_, world) in resolve.worlds.iter() {
        for (key, item) in &world.exports {
            match (key, item) {
                (WorldKey::Name(name), _) => {
                    names.insert(name.clone());
                }
                (WorldKey::Interface(id), WorldItem::Interface { .. }) => {
                    if let Some(name) = resolve.id_of(*id) {
                        names.insert(name);
                    }
                }
                _ => {}
            }
        }
    }
    names
}

/// Writes `bytes` to `path` through a temporary file beside it, with the
/// permissions `original` has; in place of a symlink, into what it points at.
fn write(path: &Path, bytes: &[u8], original: &Path) -> std::io::Result<()> {
    let path = match std::fs::canonicalize(path) {
        Ok(real) => real,
        // Not there yet (a new --output).
        Err(_) => path.to_owned(),
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        if let Ok(meta) = std::fs::metadata(original) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
