//! The pool every cache folder lives in, bounded as a whole: a last-use stamp and a size per
//! folder, a lock a job holds on each folder it uses, and eviction of the least recently used.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::copy;

/// A folder of the pool that is kept or evicted whole, named by its path inside the pool.
pub(super) type Unit = String;

#[derive(Debug, Clone)]
pub(super) struct Pool {
    dir: PathBuf,
    max_bytes: u64,
}

/// What the pool remembers of a unit: its size when last measured and when it was last used.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stamp {
    unit: Unit,
    bytes: u64,
    last_used_ns: u128,
}

/// A shared lock on a unit: eviction leaves it alone while this is alive.
#[derive(Debug)]
pub(super) struct InUse {
    _lock: File,
}

/// A job's own folder in the pool (copies validation may write), removed when dropped; one a
/// crashed job left is removed by the next eviction.
#[derive(Debug)]
pub(super) struct Scratch {
    path: PathBuf,
    _lock: File,
}

impl Scratch {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(err) = copy::remove_tree(&self.path) {
            tracing::warn!(path = %self.path.display(), %err, "could not remove a job's private build folder");
        }
    }
}

impl Pool {
    pub(super) fn new(dir: PathBuf, max_bytes: u64) -> Pool {
        Pool { dir, max_bytes }
    }

    pub(super) fn path(&self, unit: &str) -> PathBuf {
        self.dir.join(unit)
    }

    /// Takes a shared lock on `unit`, waiting for an eviction that is removing it.
    pub(super) fn use_unit(&self, unit: &str) -> io::Result<InUse> {
        let lock = self.lock_file(unit)?;
        lock.lock_shared()?;
        Ok(InUse { _lock: lock })
    }

    /// Notes that `unit` was used now; with `bytes`, its size as well (else the size last noted).
    pub(super) fn stamp(&self, unit: &str, bytes: Option<u64>) -> io::Result<()> {
        let path = self.stamp_path(unit);
        let bytes = match bytes {
            Some(bytes) => bytes,
            None => read_stamp(&path).map_or(0, |stamp| stamp.bytes),
        };
        let stamp = Stamp {
            unit: unit.to_string(),
            bytes,
            last_used_ns: now_ns(),
        };
        fs::create_dir_all(self.dir.join("stamps"))?;
        let mut temp = tempfile::NamedTempFile::new_in(self.dir.join("stamps"))?;
        serde_json::to_writer(&mut temp, &stamp).map_err(io::Error::other)?;
        temp.persist(&path).map_err(|err| err.error)?;
        Ok(())
    }

    /// Measures `unit` on disk and notes its size and use.
    pub(super) fn measure(&self, unit: &str) -> io::Result<u64> {
        let bytes = copy::size_of(&self.path(unit))?;
        self.stamp(unit, Some(bytes))?;
        Ok(bytes)
    }

    /// A fresh private folder for one job.
    pub(super) fn scratch(&self) -> io::Result<Scratch> {
        let name = format!("{}-{}", std::process::id(), now_ns());
        let lock = self.lock_file(&format!("scratch/{name}"))?;
        lock.lock()?;
        let path = self.dir.join("scratch").join(&name);
        fs::create_dir_all(&path)?;
        Ok(Scratch { path, _lock: lock })
    }

    /// Removes the least recently used units no job holds until the pool's total is within
    /// its limit, and the private folders of jobs that ended without removing them. Returns
    /// what was removed with its size.
    pub(super) fn evict(&self) -> io::Result<Vec<(Unit, u64)>> {
        fs::create_dir_all(&self.dir)?;
        let guard = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(".evict.lock"))?;
        guard.lock()?;
        self.remove_abandoned_scratch()?;
        // What an eviction interrupted halfway left aside; only evictions write there.
        copy::remove_tree(&self.dir.join("trash"))?;
        let mut stamps: Vec<Stamp> = match fs::read_dir(self.dir.join("stamps")) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter_map(|entry| read_stamp(&entry.path()))
                .collect(),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(err),
        };
        stamps.sort_by(|a, b| (a.last_used_ns, &a.unit).cmp(&(b.last_used_ns, &b.unit)));
        let mut total: u64 = stamps.iter().map(|stamp| stamp.bytes).sum();
        let mut evicted = Vec::new();
        for stamp in stamps {
            if total <= self.max_bytes {
                break;
            }
            let lock = self.lock_file(&stamp.unit)?;
            if lock.try_lock().is_err() {
                continue; // a running job uses it
            }
            self.remove_unit(&stamp.unit)?;
            total = total.saturating_sub(stamp.bytes);
            evicted.push((stamp.unit, stamp.bytes));
        }
        Ok(evicted)
    }

    /// Removes `unit` and its stamp: first moved aside, so nobody ever sees half of it.
    fn remove_unit(&self, unit: &str) -> io::Result<()> {
        let path = self.path(unit);
        if path.exists() {
            let trash = self.dir.join("trash");
            fs::create_dir_all(&trash)?;
            let aside = trash.join(format!("{}-{}", hash(unit), now_ns()));
            fs::rename(&path, &aside)?;
            copy::remove_tree(&aside)?;
        }
        match fs::remove_file(self.stamp_path(unit)) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        }
    }

    fn remove_abandoned_scratch(&self) -> io::Result<()> {
        let Ok(entries) = fs::read_dir(self.dir.join("scratch")) else {
            return Ok(());
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let lock = self.lock_file(&format!("scratch/{name}"))?;
            if lock.try_lock().is_ok() {
                copy::remove_tree(&entry.path())?;
            }
        }
        Ok(())
    }

    fn lock_file(&self, unit: &str) -> io::Result<File> {
        let dir = self.dir.join("locks");
        fs::create_dir_all(&dir)?;
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{}.lock", hash(unit))))
    }

    fn stamp_path(&self, unit: &str) -> PathBuf {
        self.dir.join("stamps").join(format!("{}.json", hash(unit)))
    }
}

fn read_stamp(path: &Path) -> Option<Stamp> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

fn hash(unit: &str) -> String {
    hex::encode(&Sha256::digest(unit.as_bytes())[..12])
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_of(pool: &Pool, unit: &str, bytes: usize) {
        fs::create_dir_all(pool.path(unit)).unwrap();
        fs::write(pool.path(unit).join("blob"), vec![7u8; bytes]).unwrap();
        pool.measure(unit).unwrap();
    }

    #[test]
    fn over_the_limit_the_least_recently_used_folders_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Pool::new(dir.path().to_path_buf(), 2500);
        unit_of(&pool, "r/tools/python-old", 1000);
        unit_of(&pool, "r/tools/node-middle", 1000);
        unit_of(&pool, "r/tools/cargo-new", 1000);
        pool.stamp("r/tools/python-old", None).unwrap(); // used again: now the newest

        let evicted = pool.evict().unwrap();

        assert_eq!(evicted.len(), 1, "{evicted:?}");
        assert_eq!(evicted[0].0, "r/tools/node-middle");
        assert!(!pool.path("r/tools/node-middle").exists());
        assert!(pool.path("r/tools/python-old").exists());
        assert!(pool.path("r/tools/cargo-new").exists());
    }

    #[test]
    fn a_folder_a_running_job_holds_is_never_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Pool::new(dir.path().to_path_buf(), 0);
        unit_of(&pool, "r/tools/go-held", 10);
        unit_of(&pool, "r/tools/go-free", 10);
        let held = pool.use_unit("r/tools/go-held").unwrap();

        let evicted = pool.evict().unwrap();

        assert_eq!(evicted, [("r/tools/go-free".to_string(), 10)]);
        assert!(pool.path("r/tools/go-held").exists());
        drop(held);
        assert_eq!(pool.evict().unwrap().len(), 1);
    }

    #[test]
    fn a_private_folder_goes_with_its_job_or_with_the_next_eviction_after_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Pool::new(dir.path().to_path_buf(), 1 << 30);
        let scratch = pool.scratch().unwrap();
        let path = scratch.path().to_path_buf();
        pool.evict().unwrap();
        assert!(path.exists(), "a live job's folder stays");
        drop(scratch);
        assert!(!path.exists());

        // A job that died left its folder, and no process holds its lock any more.
        let abandoned = dir.path().join("scratch").join("4242-1");
        fs::create_dir_all(abandoned.join("target")).unwrap();
        pool.evict().unwrap();
        assert!(!abandoned.exists());
    }
}
