//! Atomic replacement of a file, and opening what was published: the steps
//! every checkpoint-like file uses (the store's `checkpoint`, the
//! database's set).

use std::path::Path;

use crate::error::{Result, StoreError};
use crate::fs::{Fs, FsFile, OpenMode};

/// Removes `path` if it exists (a temporary left by a crash: never valid).
pub fn remove_stale(fs: &dyn Fs, path: &Path) -> Result<()> {
    if fs
        .exists(path)
        .map_err(|e| StoreError::io("stat", path, e))?
    {
        fs.remove_file(path)
            .map_err(|e| StoreError::io("remove", path, e))?;
    }
    Ok(())
}

/// Opens the published file `path` read-only, or `None` if there is none.
pub fn open_published(fs: &dyn Fs, path: &Path) -> Result<Option<Box<dyn FsFile>>> {
    if !fs
        .exists(path)
        .map_err(|e| StoreError::io("stat", path, e))?
    {
        return Ok(None);
    }
    fs.open(path, OpenMode::ReadOnly)
        .map(Some)
        .map_err(|e| StoreError::io("open", path, e))
}

/// Atomically replaces `dir/name` with what `write` puts into a fresh
/// `dir/tmp`: remove a stale temporary, create it, write, `fdatasync`,
/// rename over `name`, fsync `dir`. The new file is published when the
/// directory fsync returns; a crash before leaves the old one (and a
/// temporary that the next open removes).
pub fn replace_file(
    fs: &dyn Fs,
    dir: &Path,
    tmp: &str,
    name: &str,
    write: impl FnOnce(&dyn FsFile, &Path) -> Result<()>,
) -> Result<()> {
    let tmp = dir.join(tmp);
    remove_stale(fs, &tmp)?;
    let file = fs
        .open(&tmp, OpenMode::CreateNew)
        .map_err(|e| StoreError::io("create", &tmp, e))?;
    write(&*file, &tmp)?;
    file.sync_data()
        .map_err(|e| StoreError::io("fdatasync", &tmp, e))?;
    drop(file);
    fs.rename(&tmp, &dir.join(name))
        .map_err(|e| StoreError::io("rename", &tmp, e))?;
    fs.sync_dir(dir)
        .map_err(|e| StoreError::io("fsync", dir, e))?;
    Ok(())
}
