//! How `autofix serve` writes its log: text or JSON lines, at the configured level, where the
//! `RUST_LOG` variable (when set) wins; spans (a job's id, forge, repository, issue) go on each line.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

use crate::config::{LogFormat, LogSection};

/// The filter `RUST_LOG` gives when set and not empty, else `log.level`; one line naming the
/// source when it does not parse.
pub fn filter(section: &LogSection, rust_log: Option<&str>) -> Result<EnvFilter, String> {
    match rust_log.map(str::trim).filter(|value| !value.is_empty()) {
        Some(value) => EnvFilter::try_new(value).map_err(|err| format!("RUST_LOG: {err}")),
        None => {
            let level = section.level.trim();
            // A bare word would be taken as a target and silence everything else: it must be a level.
            if let Some(word) = level
                .split(',')
                .map(str::trim)
                .find(|part| !part.contains('=') && part.parse::<LevelFilter>().is_err())
            {
                return Err(format!(
                    "log.level `{level}`: `{word}` is no level (error, warn, info, debug, trace, off) \
                     and a target needs one (`{word}=debug`)"
                ));
            }
            EnvFilter::try_new(level).map_err(|err| format!("log.level `{level}`: {err}"))
        }
    }
}

/// Installs the process's log writer on standard output; colours only on a terminal.
pub fn init(section: &LogSection, rust_log: Option<&str>) -> Result<(), String> {
    let filter = filter(section, rust_log)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let installed = match section.format {
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
            .try_init(),
    };
    installed.map_err(|err| format!("log: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(level: &str) -> LogSection {
        LogSection {
            format: LogFormat::Json,
            level: level.into(),
        }
    }

    #[test]
    fn rust_log_wins_over_the_configured_level_and_a_bad_one_is_named() {
        assert_eq!(filter(&section("warn"), None).unwrap().to_string(), "warn");
        assert_eq!(
            filter(&section("warn"), Some("autofix=debug"))
                .unwrap()
                .to_string(),
            "autofix=debug"
        );
        assert_eq!(
            filter(&section("warn"), Some(" ")).unwrap().to_string(),
            "warn"
        );
        let bad = filter(&section("loud"), None).unwrap_err();
        assert!(
            bad.starts_with("log.level `loud`: `loud` is no level"),
            "{bad}"
        );
        assert!(filter(&section("info,autofix=debug"), None).is_ok());
    }
}
