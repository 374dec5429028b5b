//! `files`: reads a file, lists a folder and writes a file, within the
//! folders its operator granted (`[plugins.files] dirs = ["./notes:/data:ro"]`
//! in `toolhost.toml`). Paths are guest paths such as `/data/todo.txt`;
//! nothing outside the granted folders exists for it, `..` and symlinks
//! cannot leave them, and a read-only grant refuses writes.
//!
//! ```sh
//! printf '[plugins.files]\ndirs = [".:/data:ro"]\n' > toolhost.toml
//! toolhost call list_dir '{"path": "/data"}'
//! toolhost call read_file '{"path": "/data/README.md", "max_bytes": 200}'
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::Read;
use toolhost_sdk::{Json, Tool, ToolError, register_tools};

const DEFAULT_MAX_BYTES: u64 = 64 << 10;
const MAX_BYTES: u64 = 1 << 20;
const MAX_ENTRIES: usize = 1_000;

#[derive(Deserialize, JsonSchema)]
struct ReadFile {
    /// The file, as a path inside a granted folder, e.g. `/data/notes.txt`.
    path: String,
    /// Most bytes to return. Default 65536, at most 1048576.
    #[serde(default)]
    max_bytes: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
struct ListDir {
    /// The folder, as a path inside a granted folder, e.g. `/data`.
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct WriteFile {
    /// The file to create or replace, inside a folder granted read-write.
    path: String,
    /// Its new content.
    text: String,
}

#[derive(Serialize)]
struct Entry {
    name: String,
    kind: &'static str,
    size: u64,
}

register_tools![
    Tool::new("read_file", "Reads a text file from a granted folder (bounded).", read_file),
    Tool::new("list_dir", "Lists the entries of a granted folder: name, kind and size.", list_dir),
    Tool::new("write_file", "Writes a text file into a folder granted read-write.", write_file),
];

fn failed(what: &str, path: &str, err: std::io::Error) -> ToolError {
    ToolError::failed(format!(
        "could not {what} `{path}`: {err} (only the folders granted to this plugin are reachable)"
    ))
}

fn read_file(args: ReadFile) -> Result<String, ToolError> {
    let max_bytes = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if max_bytes > MAX_BYTES {
        return Err(ToolError::invalid_arguments(format!("`max_bytes` is at most {MAX_BYTES}")));
    }
    let file = std::fs::File::open(&args.path).map_err(|err| failed("open", &args.path, err))?;
    let mut bytes = Vec::new();
    file.take(max_bytes).read_to_end(&mut bytes).map_err(|err| failed("read", &args.path, err))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn list_dir(args: ListDir) -> Result<Json<Vec<Entry>>, ToolError> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&args.path).map_err(|err| failed("list", &args.path, err))? {
        let entry = entry.map_err(|err| failed("list", &args.path, err))?;
        let meta = entry.metadata().map_err(|err| failed("list", &args.path, err))?;
        let kind = if meta.is_dir() {
            "dir"
        } else if meta.is_file() {
            "file"
        } else {
            "other"
        };
        entries.push(Entry { name: entry.file_name().to_string_lossy().into_owned(), kind, size: meta.len() });
        if entries.len() >= MAX_ENTRIES {
            break;
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(entries))
}

fn write_file(args: WriteFile) -> Result<String, ToolError> {
    std::fs::write(&args.path, args.text.as_bytes()).map_err(|err| failed("write", &args.path, err))?;
    Ok(format!("wrote {} bytes to {}", args.text.len(), args.path))
}
