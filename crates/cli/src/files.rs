//! Small file helpers shared by the commands.

use std::path::Path;

use anyhow::Context;

/// Writes `bytes` to `path` through a temporary file and a rename, so readers (and a resumed
/// sweep after a crash) see either the old file or the whole new one, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}
