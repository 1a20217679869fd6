//! Where the bot keeps its state when nobody said (a data directory its user can write), and the
//! GitHub App the setup page created, stored there readable only by the service's user.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The data directory when `workdir` is empty: `$XDG_DATA_HOME/autofix`, else
/// `$HOME/.local/share/autofix`, else `./autofix-data`; with a line saying which rule chose it.
pub fn default_data_dir(xdg_data_home: Option<&str>, home: Option<&str>) -> (PathBuf, String) {
    let usable = |value: Option<&str>| {
        value
            .map(str::trim)
            .filter(|value| !value.is_empty() && Path::new(value).is_absolute())
            .map(PathBuf::from)
    };
    if let Some(xdg) = usable(xdg_data_home) {
        return (xdg.join("autofix"), "$XDG_DATA_HOME/autofix".into());
    }
    if let Some(home) = usable(home).filter(|home| home != Path::new("/")) {
        return (
            home.join(".local/share/autofix"),
            "$HOME/.local/share/autofix".into(),
        );
    }
    (
        PathBuf::from("autofix-data"),
        "./autofix-data (no HOME)".into(),
    )
}

/// The folder of the App the setup page created, inside the data directory.
pub const GITHUB_APP_DIR: &str = "github-app";

/// A GitHub App created through the manifest flow: what GitHub's conversion answered, minus the
/// private key, which lives beside it in `private-key.pem`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredGitHubApp {
    pub id: u64,
    pub slug: String,
    pub html_url: String,
    pub webhook_secret: String,
    pub client_id: String,
    pub client_secret: String,
}

impl StoredGitHubApp {
    /// `<data dir>/github-app/app.json`.
    pub fn file(data_dir: &Path) -> PathBuf {
        data_dir.join(GITHUB_APP_DIR).join("app.json")
    }

    /// `<data dir>/github-app/private-key.pem`.
    pub fn key_file(data_dir: &Path) -> PathBuf {
        data_dir.join(GITHUB_APP_DIR).join("private-key.pem")
    }

    /// The stored App, `None` when the setup page has not created one; an unreadable file is an error.
    pub fn load(data_dir: &Path) -> anyhow::Result<Option<StoredGitHubApp>> {
        let file = Self::file(data_dir);
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None);
            }
            Err(err) => {
                return Err(err).with_context(|| format!("cannot read {}", file.display()));
            }
        };
        serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{} is not a stored GitHub App", file.display()))
    }

    /// Writes the App and its key, each readable and writable by this user only (the folder too);
    /// each file is written whole or not at all.
    pub fn save(&self, data_dir: &Path, private_key_pem: &str) -> anyhow::Result<()> {
        let dir = data_dir.join(GITHUB_APP_DIR);
        create_private_dir(&dir)?;
        let json = serde_json::to_string_pretty(self).expect("a stored App serialises");
        write_private(&Self::key_file(data_dir), private_key_pem.as_bytes())?;
        write_private(&Self::file(data_dir), json.as_bytes())
    }
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot restrict {}", dir.display()))
}

fn write_private(path: &Path, content: &[u8]) -> anyhow::Result<()> {
    write_whole(path, content).with_context(|| format!("cannot write {}", path.display()))
}

/// `content` in a temporary file beside `path`, readable by this user only, renamed over it.
fn write_whole(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().expect("a stored file has a folder");
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(content)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_data_directory_follows_xdg_then_home_then_the_current_folder() {
        let (dir, why) = default_data_dir(Some("/data"), Some("/home/ann"));
        assert_eq!(
            (dir, why.as_str()),
            (PathBuf::from("/data/autofix"), "$XDG_DATA_HOME/autofix")
        );
        let (dir, _) = default_data_dir(Some(""), Some("/home/ann"));
        assert_eq!(dir, PathBuf::from("/home/ann/.local/share/autofix"));
        let (dir, _) = default_data_dir(Some("relative"), Some("/"));
        assert_eq!(dir, PathBuf::from("autofix-data"));
        let (dir, _) = default_data_dir(None, None);
        assert_eq!(dir, PathBuf::from("autofix-data"));
    }

    #[test]
    fn a_stored_app_is_readable_by_its_owner_only_and_reads_back() {
        let data = tempfile::tempdir().unwrap();
        assert_eq!(StoredGitHubApp::load(data.path()).unwrap(), None);
        let app = StoredGitHubApp {
            id: 42,
            slug: "autofix-acme".into(),
            html_url: "https://github.com/apps/autofix-acme".into(),
            webhook_secret: "whsec".into(),
            client_id: "Iv1.x".into(),
            client_secret: "cs".into(),
        };
        app.save(data.path(), "-----BEGIN RSA PRIVATE KEY-----\n")
            .unwrap();
        assert_eq!(StoredGitHubApp::load(data.path()).unwrap(), Some(app));
        let mode = |path: PathBuf| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(data.path().join(GITHUB_APP_DIR)), 0o700);
        assert_eq!(mode(StoredGitHubApp::file(data.path())), 0o600);
        assert_eq!(mode(StoredGitHubApp::key_file(data.path())), 0o600);
    }
}
