//! How `autofix serve` writes its log: text or JSON lines, one line per event, at the configured
//! level, where the `RUST_LOG` variable (when set) wins; spans (a job's id, forge, repository,
//! issue) go on each line.

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::{FormatFields, MakeWriter};
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{LogFormat, LogSection};
use crate::quote::one_line;

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
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    subscriber(section.format, filter, std::io::stdout, ansi)
        .try_init()
        .map_err(|err| format!("log: {err}"))
}

/// The log writer of `format` on `writer`. JSON escapes every control character itself;
/// the text format has its fields and messages written through [`OneLineFields`].
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
    ansi: bool,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(writer);
    match format {
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
        LogFormat::Text => Box::new(builder.fmt_fields(OneLineFields).with_ansi(ansi).finish()),
    }
}

/// The text format's fields (an event's message and fields, a span's fields) as the default
/// format writes them, with control characters escaped: a line break in a reason the model
/// wrote or a name it asked for cannot start a line that passes for another event.
struct OneLineFields;

impl<'writer> FormatFields<'writer> for OneLineFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> std::fmt::Result {
        let mut plain = String::new();
        DefaultFields::new().format_fields(Writer::new(&mut plain), fields)?;
        writer.write_str(&one_line(&plain))
    }
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

    /// What `format` writes for a failed job whose reason (model text) carries a line that
    /// looks like another event, inside a span whose field does too.
    fn logged(format: LogFormat) -> String {
        let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let writer = move || Sink(sink.clone());
        let subscriber = subscriber(format, EnvFilter::new("info"), writer, false);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("job", repo = %"acme/widgets\nINFO job succeeded");
            let _entered = span.enter();
            let reason = "the issue is not actionable\n2026-01-01T00:00:00.000000Z  INFO \
                          job{id=1}: job succeeded\r\u{1b}[2K";
            tracing::warn!(job = 7, reason = %reason, "job failed");
            tracing::info!("plan: asked to see {}", "calc.py\nWARN forged");
        });
        let bytes = buffer.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_break_in_a_logged_reason_cannot_forge_a_text_log_line() {
        let text = logged(LogFormat::Text);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "one line per event: {text}");
        assert!(
            lines[0].contains(r"reason=the issue is not actionable\n2026-01-01T00:00:00.000000Z"),
            "{text}"
        );
        assert!(lines[0].contains(r"job succeeded\r\u{1b}[2K"), "{text}");
        assert!(
            lines[0].contains(r"repo=acme/widgets\nINFO job succeeded"),
            "{text}"
        );
        assert!(
            lines[1].contains(r"plan: asked to see calc.py\nWARN forged"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    }

    #[test]
    fn json_log_lines_escape_line_breaks_themselves() {
        let text = logged(LogFormat::Json);
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("each line is one JSON event"))
            .collect();
        assert_eq!(events.len(), 2, "{text}");
        assert!(
            events[0]["fields"]["reason"]
                .as_str()
                .unwrap()
                .contains("actionable\n2026"),
            "{text}"
        );
        assert_eq!(
            events[0]["span"]["repo"],
            "acme/widgets\nINFO job succeeded"
        );
    }
}
