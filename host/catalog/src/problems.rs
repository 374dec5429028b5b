//! [`LoadProblem`]: what the catalog reports about a folder it loaded (a
//! file that is not a plugin, a name offered twice, a grant that cannot be
//! honoured), each a sentence saying what to do.

use std::fmt;
use std::path::PathBuf;

/// A plugin file that could not be loaded (or a tool that was dropped), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// What kind of problem it is.
    pub kind: ProblemKind,
    /// The file (or files) concerned.
    pub paths: Vec<PathBuf>,
    /// What is wrong, and what to do about it.
    pub reason: String,
}

/// What a [`LoadProblem`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// The file is not a loadable plugin; none of its tools are loaded.
    Plugin,
    /// Two plugins offer the same tool name; that tool is loaded from neither.
    Collision,
    /// The config names a plugin that has no file.
    Config,
    /// The plugin loaded, but something it asks for is not granted, or a grant
    /// cannot be honoured (a missing folder, an unset variable), or its
    /// manifest is malformed. A notice, not a failure: what is not granted is denied.
    Grant,
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<String> = self.paths.iter().map(|path| path.display().to_string()).collect();
        write!(f, "{}: {}", paths.join(" and "), self.reason)
    }
}
