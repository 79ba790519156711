//! A stalling disk for tests: the real file system, whose writes and data
//! syncs wait while a gate is closed.

use std::io;
use std::path::Path;
use std::sync::Arc;

use cairn_store::StdFs;
use cairn_store::fs::{FileId, FileIdentity, Fs, FsFile, FsLock, MappedNodes, OpenMode};
use parking_lot::{Condvar, Mutex};

/// The real file system, whose writes and data syncs wait while the gate
/// is closed: a disk that stalls (forever, if nobody opens it). Writes too:
/// a killed process loses what it never wrote, not what it wrote without
/// syncing (the kernel keeps that).
#[derive(Debug, Default)]
pub struct GatedFs {
    closed: Mutex<bool>,
    opened: Condvar,
}

impl GatedFs {
    /// Closes the gate: writes and data syncs wait from now on.
    pub fn close(&self) {
        *self.closed.lock() = true;
    }

    /// Opens the gate: waiting writes and syncs go on.
    pub fn open(&self) {
        *self.closed.lock() = false;
        self.opened.notify_all();
    }

    fn pass(&self) {
        let mut closed = self.closed.lock();
        while *closed {
            self.opened.wait(&mut closed);
        }
    }
}

#[derive(Debug)]
struct GatedFile {
    file: Box<dyn FsFile>,
    gate: Arc<GatedFs>,
}

impl FsFile for GatedFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.gate.pass();
        self.file.write_at(buf, offset)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
    fn sync_data(&self) -> io::Result<()> {
        self.gate.pass();
        self.file.sync_data()
    }
    fn map_nodes(&self, offset: u64, nodes: usize) -> io::Result<Arc<dyn MappedNodes>> {
        self.file.map_nodes(offset, nodes)
    }
    fn identity(&self) -> io::Result<FileIdentity> {
        self.file.identity()
    }
}

/// A [`GatedFs`] as a store's or database's file system.
#[derive(Debug)]
pub struct Gated(pub Arc<GatedFs>);

impl Fs for Gated {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(GatedFile {
            file: StdFs.open(path, mode)?,
            gate: Arc::clone(&self.0),
        }))
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        StdFs.create_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFs.remove_file(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        StdFs.sync_dir(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        StdFs.list_dir(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        StdFs.exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        StdFs.lock(path)
    }
    fn lock_existing(&self, path: &Path, shared: bool) -> io::Result<Box<dyn FsLock>> {
        StdFs.lock_existing(path, shared)
    }
    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn FsLock>> {
        StdFs.lock_dir(dir)
    }
    fn identity(&self, path: &Path) -> io::Result<FileId> {
        StdFs.identity(path)
    }
    fn identity_of(&self, path: &Path) -> io::Result<FileIdentity> {
        StdFs.identity_of(path)
    }
}
