//! Just enough of the INI dialect of `tox.ini` and `setup.cfg` to read a key: sections,
//! `key = value` with indented continuation lines, `#` and `;` comments.

/// The value of `key` in `[section]`, continuation lines joined by newlines.
pub(super) fn value(text: &str, section: &str, key: &str) -> Option<String> {
    let mut in_section = false;
    let mut found: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        let continues = line.starts_with([' ', '\t']) && !trimmed.is_empty();
        if let Some(value) = found.as_mut() {
            if continues {
                if !trimmed.starts_with(['#', ';']) {
                    value.push('\n');
                    value.push_str(trimmed);
                }
                continue;
            }
            return found;
        }
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            in_section = &trimmed[1..trimmed.len() - 1] == section;
            continue;
        }
        if in_section
            && !continues
            && let Some((name, value)) = trimmed.split_once(['=', ':'])
            && name.trim() == key
        {
            found = Some(value.trim().to_string());
        }
    }
    found
}

/// Whether the file has `[section]`.
pub(super) fn has_section(text: &str, section: &str) -> bool {
    text.lines()
        .any(|line| line.trim() == format!("[{section}]"))
}

/// The non-empty lines of a multi-line value.
pub(super) fn lines(value: &str) -> Vec<String> {
    value
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(String::from)
        .collect()
}
