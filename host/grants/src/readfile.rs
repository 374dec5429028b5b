//! Reading a file a user (or a plugin folder) can point at, as if it were hostile.
//!
//! A path may name a FIFO (opening or reading it blocks forever), a symlink to
//! `/dev/zero` (endless), a folder, or a file far larger than anything toolhost
//! expects. [`read_regular`] opens without blocking, checks on the opened
//! descriptor that it is a regular file (no separate `stat` that could race
//! with a swap), and reads at most `limit` bytes, so none of these can hang or
//! exhaust the host. Every file toolhost reads from such a path goes through here.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Size bounds for the files toolhost reads.
pub mod limits {
    /// A plugin component (`.wasm`).
    pub const WASM: u64 = 512 << 20;
    /// A config file or a plugin manifest (`.toml`).
    pub const TOML: u64 = 1 << 20;
    /// A PEM file of certificates.
    pub const PEM: u64 = 4 << 20;
}

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// No such file (or a dangling symlink).
    NotFound,
    /// It exists but is not a regular file: a folder, a FIFO, a device, a socket.
    NotRegular(&'static str),
    /// It is larger than the limit.
    TooLarge {
        /// Its size, as far as it was read.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A private key (or password) file others can read: see [`read_private`].
    Exposed {
        /// Its permission bits.
        mode: u32,
        /// Whether it belongs to the user toolhost runs as.
        ours: bool,
    },
    /// Any other I/O error (permissions, a symlink loop, …).
    Io(std::io::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotFound => write!(f, "no such file"),
            ReadError::NotRegular(kind) => write!(f, "not a regular file (it is {kind})"),
            ReadError::TooLarge { size, limit } => {
                write!(f, "too large ({} bytes or more; the limit is {limit} bytes)", size)
            }
            ReadError::Exposed { mode, ours: true } => write!(
                f,
                "it is open to its group or to others (mode {mode:04o}), and it holds a private key: make it readable \
                 by its owner alone (`chmod 600`), or it is not used"
            ),
            ReadError::Exposed { mode, ours: false } => write!(
                f,
                "it is open to users other than its owner and its group (mode {mode:04o}), and it holds a private \
                 key: take away others' access (`chmod o-rwx`, or `chmod 600`; in Kubernetes, a secret volume's \
                 `defaultMode: 0400`), or it is not used"
            ),
            ReadError::Io(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    /// True when the file does not exist (so a caller may treat it as absent).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound)
    }
}

/// Reads the regular file at `path`, at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_open(open_regular(path)?, limit)
}

/// What is left of `file`, at most `limit` bytes.
fn read_open(file: File, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { size: bytes.len() as u64, limit });
    }
    Ok(bytes)
}

/// Reads a file that holds a private key or a password ([`read_regular`]),
/// refusing it when the permissions on the opened file let others read it,
/// as OpenSSH refuses an unprotected private key: no access at all for
/// others, and none for the group either when the file belongs to the user
/// toolhost runs as (`chmod 600`). A file owned by another user (root) may
/// be shared with toolhost's user through its group (`0640 root:toolhost`):
/// that is a choice someone made, not an accident of a umask. Every private
/// key and password toolhost reads goes through here.
pub fn read_private(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let metadata = file.metadata().map_err(ReadError::Io)?;
        let mode = metadata.mode() & 0o7777;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let ours = metadata.uid() == unsafe { libc::geteuid() };
        let open_to = if ours { 0o077 } else { 0o007 };
        if mode & open_to != 0 {
            return Err(ReadError::Exposed { mode, ours });
        }
    }
    read_open(file, limit)
}

/// [`read_private`] as UTF-8 text.
pub fn read_private_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_private(path, limit)?)
        .map_err(|_| ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "the file is not UTF-8 text")))
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_regular(path, limit)?;
    String::from_utf8(bytes)
        .map_err(|_| ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "the file is not UTF-8 text")))
}

/// Opens `path` for reading without blocking on a FIFO, and checks on the
/// open descriptor that it is a regular file.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        // It has no effect on regular files, which are all we go on to read.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound if path.symlink_metadata().is_ok_and(|meta| meta.file_type().is_symlink()) => {
            ReadError::NotRegular("a symlink to a file that does not exist")
        }
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        #[cfg(unix)]
        _ if err.raw_os_error() == Some(libc::ELOOP) => ReadError::NotRegular("a symlink loop"),
        _ => ReadError::Io(err),
    })?;
    let metadata = file.metadata().map_err(ReadError::Io)?;
    let kind = kind_of(&metadata.file_type());
    if kind != "a regular file" {
        return Err(ReadError::NotRegular(kind));
    }
    Ok(file)
}

/// What kind of file `file_type` is, in words.
pub fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_regular_files_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.toml");
        std::fs::write(&path, "x = 1").unwrap();
        assert_eq!(read_regular(&path, 5).unwrap(), b"x = 1");
        assert_eq!(read_regular_text(&path, 100).unwrap(), "x = 1");
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_open_to_others_is_refused_and_one_of_ours_to_its_group_too() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "k").unwrap();
        for (mode, ok) in [(0o600, true), (0o400, true), (0o640, false), (0o604, false), (0o644, false), (0o620, false)]
        {
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
            let read = read_private(&key, 5);
            assert_eq!(read.is_ok(), ok, "{mode:o}: {read:?}");
            if !ok {
                let said = read.unwrap_err().to_string();
                assert!(said.contains(&format!("mode {mode:04o}")) && said.contains("chmod 600"), "{said}");
            }
        }
        // Through a symlink, the file's own mode counts.
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        assert!(matches!(read_private(&link, 5), Err(ReadError::Exposed { mode: 0o644, ours: true })));
    }

    #[test]
    fn rejects_special_and_oversized_files() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, "123456").unwrap();
        assert!(matches!(read_regular(&big, 5), Err(ReadError::TooLarge { limit: 5, .. })));
        assert!(matches!(read_regular(dir.path(), 5), Err(ReadError::NotRegular("a folder"))));
        assert!(read_regular(&dir.path().join("missing"), 5).unwrap_err().is_not_found());
        #[cfg(unix)]
        {
            let zero = dir.path().join("zero");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            assert!(matches!(read_regular(&zero, 5), Err(ReadError::NotRegular("a character device"))));
            let fifo = dir.path().join("fifo");
            let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
            assert!(matches!(read_regular(&fifo, 5), Err(ReadError::NotRegular("a FIFO"))));
            let dangling = dir.path().join("dangling");
            std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
            assert!(matches!(
                read_regular(&dangling, 5),
                Err(ReadError::NotRegular("a symlink to a file that does not exist"))
            ));
            let looped = dir.path().join("loop");
            std::os::unix::fs::symlink(&looped, &looped).unwrap();
            assert!(matches!(read_regular(&looped, 5), Err(ReadError::NotRegular("a symlink loop"))));
        }
    }
}
