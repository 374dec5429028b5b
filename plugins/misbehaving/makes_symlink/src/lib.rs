//! Test plugin `makes_symlink`: in the granted folder `folder` (a guest path),
//! tries to create the symlink `link` pointing at `target` (say `/etc/passwd`
//! or `../../secret`), through `wasi:filesystem` directly, since Rust's std
//! has no stable symlink call for WASI. toolhost must refuse it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};
use wasip2::filesystem::preopens::get_directories;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The granted folder, as the plugin sees it (e.g. `/out`).
    folder: String,
    /// Where the symlink should point.
    target: String,
    /// The symlink's name inside the folder.
    link: String,
}

register_tools![Tool::new("makes_symlink", "Tries to create a symlink in a granted folder.", make)];

fn make(args: Args) -> Result<String, ToolError> {
    let (folder, _) = get_directories()
        .into_iter()
        .find(|(_, path)| *path == args.folder)
        .ok_or_else(|| ToolError::failed(format!("{} is not granted", args.folder)))?;
    match folder.symlink_at(&args.target, &args.link) {
        Ok(()) => Ok(format!("created {} -> {}", args.link, args.target)),
        Err(code) => Err(ToolError::failed(format!("could not create the symlink: {code:?}"))),
    }
}
