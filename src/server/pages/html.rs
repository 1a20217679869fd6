//! The few pieces every operator page is made of: escaping, the page frame with its style sheet,
//! times and durations as people read them. No templates, no JavaScript.

use std::fmt::Write;

use chrono::{DateTime, Utc};

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as one query-string value.
pub fn query_value(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}\
header{background:#24292f;color:#fff;padding:.7em 1.5em;display:flex;gap:1.5em;align-items:baseline}\
header a{color:#fff;text-decoration:none}header strong{font-size:1.15em}\
main{max-width:72em;margin:1.5em auto;padding:0 1.5em}\
table{border-collapse:collapse;width:100%;background:#fff}\
th,td{border:1px solid #d0d7de;padding:.35em .6em;text-align:left;vertical-align:top}\
th{background:#eaeef2}pre{background:#fff;border:1px solid #d0d7de;padding:.8em;overflow:auto;max-height:30em}\
.verified,.succeeded{color:#1a7f37;font-weight:600}.missing,.configured,.queued{color:#9a6700;font-weight:600}\
.broken,.failed{color:#cf222e;font-weight:600}.running{color:#0969da;font-weight:600}\
form.filters{display:flex;gap:.8em;align-items:end;margin:1em 0}label{display:block;font-size:.9em}\
input,select,button{font:inherit;padding:.25em .5em}button{cursor:pointer}\
section{background:#fff;border:1px solid #d0d7de;padding:.2em 1.2em 1em;margin:1em 0}\
dl{display:grid;grid-template-columns:max-content auto;gap:.3em 1.2em}dt{font-weight:600}dd{margin:0}";

/// A whole page: `title` in the tab and as the heading, the navigation, and `body`.
pub fn page(title: &str, body: &str) -> String {
    let mut html = String::with_capacity(body.len() + STYLE.len() + 512);
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title} · autofix</title><style>{STYLE}</style></head><body>\
         <header><strong>autofix</strong><a href=\"/\">Setup</a><a href=\"/jobs\">Jobs</a></header>\
         <main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title),
    );
    html
}

/// `2026-11-25 09:30:00 UTC`.
pub fn time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// `1h 2m`, `3m 20s`, `45s`, `0.3s`.
pub fn duration(from: DateTime<Utc>, to: DateTime<Utc>) -> String {
    let millis = (to - from).num_milliseconds().max(0);
    let seconds = millis / 1000;
    match seconds {
        0 => format!("{:.1}s", millis as f64 / 1000.0),
        1..=59 => format!("{seconds}s"),
        60..=3599 => format!("{}m {}s", seconds / 60, seconds % 60),
        _ => format!("{}h {}m", seconds / 3600, seconds % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn markup_in_text_is_shown_not_run() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(query_value("acme/widgets"), "acme%2Fwidgets");
    }

    #[test]
    fn durations_read_like_a_person_would_say_them() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0).unwrap();
        let at = |s: i64| t0 + chrono::TimeDelta::seconds(s);
        assert_eq!(
            duration(t0, t0 + chrono::TimeDelta::milliseconds(300)),
            "0.3s"
        );
        assert_eq!(duration(t0, at(45)), "45s");
        assert_eq!(duration(t0, at(200)), "3m 20s");
        assert_eq!(duration(t0, at(3720)), "1h 2m");
    }
}
