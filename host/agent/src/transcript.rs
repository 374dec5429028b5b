//! Saving a conversation: JSON, written to a temporary file beside the
//! target and renamed over it, so a reader never sees half a transcript and
//! a crash never destroys the previous one.

use crate::model::Conversation;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// What a transcript file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transcript {
    /// The format version.
    pub version: u32,
    /// `provider/model`.
    pub model: String,
    /// The conversation.
    #[serde(flatten)]
    pub conversation: Conversation,
}

/// Writes `transcript` to `path` atomically.
pub fn save(path: &Path, transcript: &Transcript) -> Result<()> {
    let json = serde_json::to_vec_pretty(transcript).context("could not encode the transcript")?;
    write_atomically(path, &json).with_context(|| format!("could not write the transcript to {}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file in the same folder.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(written?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    #[test]
    fn saves_and_replaces_without_leaving_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let mut transcript = Transcript {
            version: 1,
            model: "openai/x".into(),
            conversation: Conversation { system: None, messages: vec![Message::User { content: "hi".into() }] },
        };
        save(&path, &transcript).unwrap();
        transcript.conversation.messages.push(Message::User { content: "again".into() });
        save(&path, &transcript).unwrap();
        let back: Transcript = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back.conversation.messages.len(), 2);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-folder").join("t.json");
        assert!(write_atomically(&path, b"{}").is_err());
    }
}
