//! Reading input files (the scenario, rate traces) without trusting them: only regular files,
//! never more than a stated number of bytes.
//!
//! Paths are the user's own choice (a trace is often a symlink into a data directory), so
//! symbolic links are followed: these files are only read, never written, and what matters is
//! that a FIFO cannot block quiclab forever and `/dev/zero` or a huge file cannot exhaust
//! memory. The file is opened non-blocking (opening a FIFO for reading would otherwise wait
//! for a writer) and its type and size are checked on the opened handle, so nothing can be
//! swapped in between the check and the read.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// Why an input file was refused; the message is complete without the path.
#[derive(Debug)]
pub(crate) struct InputError(pub String);

/// Opens `path` for reading if it is a regular file of at most `max_bytes` bytes; the reader
/// stops after `max_bytes` even if the file grows meanwhile.
pub(crate) fn open_regular(
    path: &Path,
    max_bytes: u64,
) -> Result<std::io::Take<BufReader<File>>, InputError> {
    // fsutil opens without blocking and refuses anything but a regular file.
    let file = fsutil::open_input(path).map_err(|e| InputError(format!("cannot open: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| InputError(format!("cannot inspect: {e}")))?;
    if meta.len() > max_bytes {
        return Err(InputError(format!(
            "{} bytes is more than the limit of {max_bytes} bytes",
            meta.len()
        )));
    }
    Ok(BufReader::new(file).take(max_bytes))
}

/// Reads a whole regular file of at most `max_bytes` bytes as UTF-8.
pub(crate) fn read_regular(path: &Path, max_bytes: u64) -> Result<String, InputError> {
    let mut text = String::new();
    open_regular(path, max_bytes)?
        .read_to_string(&mut text)
        .map_err(|e| InputError(format!("cannot read: {e}")))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_directories_are_refused_large_files_too() {
        let e = open_regular(Path::new("/dev/zero"), 10).expect_err("device");
        assert!(e.0.contains("character device"), "{}", e.0);
        let e = open_regular(Path::new("/"), 10).expect_err("dir");
        assert!(e.0.contains("directory"), "{}", e.0);
        let tmp = fsutil::PrivateDir::new("scenario-input-").expect("dir");
        let dir = tmp.path();
        let f = dir.join("big");
        std::fs::write(&f, "x".repeat(11)).expect("write");
        let e = open_regular(&f, 10).expect_err("big");
        assert!(e.0.contains("limit of 10 bytes"), "{}", e.0);
        assert_eq!(read_regular(&f, 11).expect("fits"), "x".repeat(11));
        tmp.remove().expect("clean");
    }
}
