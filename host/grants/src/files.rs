//! The filesystem grant: host folders a plugin may see, each mapped to a path
//! inside the guest, read-only or read-write.
//!
//! An entry is written `HOST:GUEST[:ro|rw]` (read-only unless `rw`), e.g.
//! `"./data:/data:ro"`, or as a Wassette storage URI, `fs:///data[:ro|rw]`,
//! which keeps the path (the guest sees `/data` at `/data`, what a component
//! that takes host paths as arguments needs), and parsed once, when the
//! config is read, into a [`DirGrant`]. At each call the folder is opened as a WASI preopen with the
//! matching permissions; nothing outside the granted folders is visible, and
//! `..`, absolute paths and symlinks cannot leave them (wasmtime resolves every
//! guest path inside the preopen with `cap-std`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Folders a plugin may see. `Default` is none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilesGrant {
    /// The granted folders.
    pub dirs: Vec<DirGrant>,
}

/// What a plugin may do in a granted folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// List and read (`ro`).
    ReadOnly,
    /// Also create, write, rename and delete (`rw`).
    ReadWrite,
}

impl Access {
    /// `ro` or `rw`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "ro",
            Access::ReadWrite => "rw",
        }
    }
}

/// One host folder, where the guest sees it, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The folder on the host. Relative paths in a config file are resolved
    /// against the config file's folder when it is loaded.
    pub host: PathBuf,
    /// Where the guest sees it: an absolute guest path such as `/data`.
    pub guest: String,
    /// Read-only or read-write.
    pub access: Access,
}

/// A folder a plugin asks for in its manifest: a guest path and an access,
/// written `GUEST[:ro|rw]`. The operator decides which host folder backs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestDir {
    /// The guest path, e.g. `/data`.
    pub guest: String,
    /// The access it asks for.
    pub access: Access,
}

impl FilesGrant {
    /// The grant for guest path `guest`, if one maps it.
    pub fn for_guest(&self, guest: &str) -> Option<&DirGrant> {
        self.dirs.iter().find(|dir| dir.guest == guest)
    }
}

impl FromStr for DirGrant {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entry = text.trim();
        if let Some((scheme, rest)) = entry.split_once("://")
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return from_uri(entry, scheme, rest);
        }
        let (rest, access) = split_access(entry)?;
        let Some((host, guest)) = rest.rsplit_once(':') else {
            let trimmed = rest.trim_end_matches('/');
            let guess = if trimmed.starts_with('/') && !trimmed.is_empty() {
                // An absolute folder: the same path inside keeps the paths a
                // tool is given as arguments (`/srv/data/a.txt`) valid in it.
                format!(
                    "{trimmed}:{trimmed}:ro` (the same path inside, for a tool that takes host paths as arguments) or `{trimmed}:/{}:ro",
                    trimmed.rsplit('/').next().unwrap_or("data")
                )
            } else {
                let name = trimmed.rsplit('/').next().filter(|name| !name.is_empty() && *name != ".");
                format!("{rest}:/{}:ro", name.unwrap_or("data"))
            };
            return Err(format!(
                "`{entry}` does not say where the folder appears inside the plugin: write \
                 `HOST:GUEST[:ro|rw]`, e.g. `{guess}`"
            ));
        };
        if host.is_empty() {
            return Err(format!("`{entry}` has no host folder: write `HOST:GUEST[:ro|rw]`, e.g. `./data:/data:ro`"));
        }
        let guest = check_guest(entry, guest, &format!("{host}:/"), access)?;
        Ok(DirGrant { host: PathBuf::from(host), guest, access: access.unwrap_or(Access::ReadOnly) })
    }
}

impl FromStr for GuestDir {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entry = text.trim();
        let (guest, access) = split_access(entry)?;
        if let Some((_, last)) = guest.rsplit_once(':')
            && !last.starts_with('/')
        {
            return Err(format!("`{entry}`: the access must be `ro` (read-only) or `rw` (read-write), not `{last}`"));
        }
        if guest.contains(':') {
            return Err(format!(
                "`{entry}`: a manifest asks for a guest path such as `/data:ro`; which host folder \
                 backs it is the operator's choice, made in toolhost.toml"
            ));
        }
        let guest = check_guest(entry, guest, "/", access)?;
        Ok(GuestDir { guest, access: access.unwrap_or(Access::ReadOnly) })
    }
}

/// A folder written as a URI: `fs:///PATH[:GUEST][:ro|rw]` (Wassette's
/// storage URIs; `file://` alike) is the folder `PATH`, seen by the guest at
/// `PATH` unless a guest path follows. Never a folder named `fs`.
fn from_uri(entry: &str, scheme: &str, rest: &str) -> Result<DirGrant, String> {
    if !scheme.eq_ignore_ascii_case("fs") && !scheme.eq_ignore_ascii_case("file") {
        return Err(format!(
            "`{entry}` is a `{scheme}://` URL; a folder grant is `HOST:GUEST[:ro|rw]` (e.g. `./data:/data:ro`) or \
             `fs:///ABSOLUTE/PATH[:ro|rw]`"
        ));
    }
    let (rest, access) = split_access(rest)?;
    let (path, guest) = match rest.rsplit_once(':') {
        Some((path, guest)) if guest.starts_with('/') => (path, Some(guest)),
        Some(_) => return Err(format!("`{entry}`: the access must be `ro` (read-only) or `rw` (read-write)")),
        None => (rest, None),
    };
    if !path.starts_with('/') {
        let name = path.trim_end_matches(['/', '*']);
        return Err(format!(
            "`{entry}` names the folder `{name}` relative to Wassette's components folder; toolhost needs the folder \
             itself: write `{scheme}:///ABSOLUTE/PATH/{name}`, or `./{name}:/{name}:ro` to resolve it against \
             toolhost.toml's folder"
        ));
    }
    // `/**` after a folder is the whole tree below it, which a folder grant is.
    let path = path.strip_suffix("/**").unwrap_or(path);
    if path.contains('*') {
        let folder = path.split('*').next().unwrap_or("/").rsplit_once('/').map_or("/", |(folder, _)| folder);
        let folder = if folder.is_empty() { "/" } else { folder };
        return Err(format!(
            "`{entry}`: toolhost grants whole folders, not patterns of files: grant the folder, e.g. \
             `{scheme}://{folder}{}`",
            access.map(|access| format!(":{}", access.as_str())).unwrap_or_default()
        ));
    }
    let kept = check_guest(entry, path, "/", access)?;
    let guest = match guest {
        Some(guest) => check_guest(entry, guest, &format!("{scheme}://{path}:/"), access)?,
        None => kept.clone(),
    };
    Ok(DirGrant { host: PathBuf::from(kept), guest, access: access.unwrap_or(Access::ReadOnly) })
}

/// Takes a trailing `:ro` / `:rw` off `entry`.
fn split_access(entry: &str) -> Result<(&str, Option<Access>), String> {
    if let Some((rest, last)) = entry.rsplit_once(':') {
        match last {
            "ro" => return Ok((rest, Some(Access::ReadOnly))),
            "rw" => return Ok((rest, Some(Access::ReadWrite))),
            _ if !last.starts_with('/') && !last.is_empty() && rest.contains(':') => {
                return Err(format!(
                    "`{entry}`: the access must be `ro` (read-only) or `rw` (read-write), not `{last}`"
                ));
            }
            _ => {}
        }
    }
    Ok((entry, None))
}

/// Checks a guest path and returns it normalized (no trailing `/`, no `//`).
/// `prefix` is what comes before the guest path in a corrected suggestion.
fn check_guest(entry: &str, guest: &str, prefix: &str, access: Option<Access>) -> Result<String, String> {
    let suffix = access.map(|access| format!(":{}", access.as_str())).unwrap_or_default();
    if guest.is_empty() {
        return Err(format!("`{entry}` has no guest path: write an absolute path such as `/data`"));
    }
    if !guest.starts_with('/') {
        return Err(format!(
            "`{entry}`: the guest path `{guest}` must be absolute: did you mean `{prefix}{}{suffix}`?",
            guest.trim_start_matches("./")
        ));
    }
    let parts: Vec<&str> = guest.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    if parts.contains(&"..") {
        return Err(format!("`{entry}`: the guest path `{guest}` must not contain `..`"));
    }
    Ok(format!("/{}", parts.join("/")))
}

impl fmt::Display for DirGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.host.display(), self.guest, self.access.as_str())
    }
}

impl fmt::Display for GuestDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.guest, self.access.as_str())
    }
}

macro_rules! string_serde {
    ($type:ty) => {
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    };
}

string_serde!(DirGrant);
string_serde!(GuestDir);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_folder_grants() {
        let cases = [
            ("./data:/data", "./data", "/data", Access::ReadOnly),
            ("./data:/data:ro", "./data", "/data", Access::ReadOnly),
            ("/srv/out:/out:rw", "/srv/out", "/out", Access::ReadWrite),
            ("/srv/out/:/out/:rw", "/srv/out/", "/out", Access::ReadWrite),
            ("data:/a//b/./c", "data", "/a/b/c", Access::ReadOnly),
            (" data:/ ", "data", "/", Access::ReadOnly),
            // Wassette's storage URIs keep the path inside.
            ("fs:///data", "/data", "/data", Access::ReadOnly),
            ("fs:///srv/data/:rw", "/srv/data", "/srv/data", Access::ReadWrite),
            ("FS:///tmp/x/**:ro", "/tmp/x", "/tmp/x", Access::ReadOnly),
            ("fs:///tmp/data:/data:rw", "/tmp/data", "/data", Access::ReadWrite),
            ("file:///var/lib/a", "/var/lib/a", "/var/lib/a", Access::ReadOnly),
            ("fs:///", "/", "/", Access::ReadOnly),
        ];
        for (text, host, guest, access) in cases {
            let grant: DirGrant = text.parse().unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(grant, DirGrant { host: host.into(), guest: guest.into(), access }, "{text}");
        }
    }

    #[test]
    fn rejects_malformed_folder_grants_with_a_fix() {
        let cases = [
            ("./data", "e.g. `./data:/data:ro`"),
            ("/srv/files/", "e.g. `/srv/files:/srv/files:ro` (the same path inside"),
            ("/srv/files/", "or `/srv/files:/files:ro`"),
            // Never a folder named `fs`.
            ("fs://data", "write `fs:///ABSOLUTE/PATH/data`, or `./data:/data:ro`"),
            ("fs://workspace/**", "`fs:///ABSOLUTE/PATH/workspace`"),
            ("fs:///var/log/*.log", "grant the folder, e.g. `fs:///var/log`"),
            ("fs:///data/../etc", "must not contain `..`"),
            ("fs:///data:rx", "must be `ro` (read-only) or `rw`"),
            ("s3://bucket/data", "is a `s3://` URL"),
            ("./data:data", "did you mean `./data:/data`?"),
            ("./data:./data:rw", "did you mean `./data:/data:rw`?"),
            ("./data:/data:rx", "must be `ro` (read-only) or `rw` (read-write)"),
            (":/data", "has no host folder"),
            ("./data:", "has no guest path"),
            ("./data:/data/../etc", "must not contain `..`"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<DirGrant>().unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn accepts_asked_guest_folders() {
        assert_eq!("/data".parse::<GuestDir>(), Ok(GuestDir { guest: "/data".into(), access: Access::ReadOnly }));
        assert_eq!("/out/:rw".parse::<GuestDir>(), Ok(GuestDir { guest: "/out".into(), access: Access::ReadWrite }));
    }

    #[test]
    fn rejects_asked_guest_folders_naming_host_paths() {
        let err = "./data:/data".parse::<GuestDir>().unwrap_err();
        assert!(err.contains("operator's choice"), "{err}");
        let err = "/data:rx".parse::<GuestDir>().unwrap_err();
        assert!(err.contains("must be `ro` (read-only) or `rw`"), "{err}");
        let err = "data:rw".parse::<GuestDir>().unwrap_err();
        assert!(err.contains("did you mean `/data:rw`?"), "{err}");
    }

    #[test]
    fn a_storage_uri_is_never_a_folder_named_fs() {
        for text in ["fs:///tmp/data", "fs:///tmp/data:ro", "fs:///tmp/data:/d:rw", "file:///tmp/data"] {
            let grant: DirGrant = text.parse().unwrap();
            assert_eq!(grant.host, std::path::Path::new("/tmp/data"), "{text}");
        }
    }

    #[test]
    fn shows_grants_as_written() {
        let grant: DirGrant = "./data:/data".parse().unwrap();
        assert_eq!(grant.to_string(), "./data:/data:ro");
    }
}
