//! Stories about reading deliveries: only the wanted keys kept, the rest still checked to be
//! JSON, nesting counted everywhere, and missing or mistyped fields named by their path.

use super::*;

const LABEL: Wanted = Wanted {
    keys: &[(
        "label",
        Wanted {
            keys: &[("name", Wanted::VALUE)],
            items: None,
        },
    )],
    items: None,
};

fn label_name(body: &str) -> Result<Option<String>, WebhookParseError> {
    let node = parse_object(body.as_bytes(), &LABEL)?;
    Ok(Fields::new(&node)
        .optional_str("label.name")?
        .map(str::to_owned))
}

#[test]
fn only_the_wanted_keys_are_kept_and_the_rest_is_still_checked() {
    assert_eq!(
        label_name(r#"{"other": {"a": [1, "x\n"]}, "label": {"name": "bug", "color": "f00"}}"#),
        Ok(Some("bug".to_owned()))
    );
    let error = label_name(r#"{"other": [1, 2,], "label": {"name": "bug"}}"#).unwrap_err();
    assert!(
        matches!(&error, WebhookParseError::NotJson { message } if message.contains("line 1 column 17")),
        "{error:?}"
    );
}

#[test]
fn a_repeated_key_keeps_its_last_value_as_serde_json_does() {
    assert_eq!(
        label_name(r#"{"label": {"name": "first"}, "label": {"name": "last"}}"#),
        Ok(Some("last".to_owned()))
    );
}

#[test]
fn an_escaped_wanted_string_is_decoded() {
    assert_eq!(
        label_name(r#"{"label": {"name": "b\u00fcg \"x\""}}"#),
        Ok(Some("büg \"x\"".to_owned()))
    );
}

#[test]
fn a_body_that_is_not_utf8_is_refused_even_inside_a_skipped_string() {
    let mut body = br#"{"other": "ok ", "label": {"name": "bug"}}"#.to_vec();
    body[13] = 0xff;
    assert_eq!(
        parse_object(&body, &LABEL),
        Err(WebhookParseError::NotJson {
            message: "invalid UTF-8 at byte 13".to_owned()
        })
    );
}

#[test]
fn nesting_is_counted_in_skipped_and_in_wanted_parts_alike() {
    let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let too_deep = Err(WebhookParseError::TooDeep {
        limit: MAX_NESTING_DEPTH,
    });
    // The root object is the first level.
    let skipped_at_limit = format!(r#"{{"other": {}}}"#, deep(MAX_NESTING_DEPTH - 1));
    assert_eq!(label_name(&skipped_at_limit), Ok(None));
    let skipped_too_deep = format!(r#"{{"other": {}}}"#, deep(MAX_NESTING_DEPTH));
    assert_eq!(label_name(&skipped_too_deep), too_deep);
    let wanted_too_deep = format!(
        r#"{{"label": {{"name": "bug", "x": {}}}}}"#,
        deep(MAX_NESTING_DEPTH - 1)
    );
    assert_eq!(label_name(&wanted_too_deep), too_deep);
}

#[test]
fn optional_numbers_and_first_items_report_their_paths() {
    const LIST: Wanted = Wanted {
        keys: &[
            ("line", Wanted::VALUE),
            (
                "prs",
                Wanted {
                    keys: &[],
                    items: Some(&Wanted {
                        keys: &[("number", Wanted::VALUE)],
                        items: None,
                    }),
                },
            ),
        ],
        items: None,
    };
    let read = |body: &str| {
        let node = parse_object(body.as_bytes(), &LIST).unwrap();
        let fields = Fields::new(&node);
        (
            fields.optional_u64("line"),
            fields.first_u64("prs", "number"),
        )
    };
    assert_eq!(
        read(r#"{"line": null, "prs": [{"number": 2}, {"number": 3}]}"#),
        (Ok(None), Ok(Some(2)))
    );
    assert_eq!(read(r#"{"line": 7, "prs": []}"#), (Ok(Some(7)), Ok(None)));
    let (line, first) = read(r#"{"line": "7", "prs": [{}]}"#);
    assert_eq!(
        line.unwrap_err().to_string(),
        "field `line` should be a non-negative integer, found string"
    );
    assert_eq!(
        first,
        Err(WebhookParseError::MissingField {
            field: "prs[0].number".to_owned()
        })
    );
    let (_, first) = read(r#"{"prs": {"number": 2}}"#);
    assert_eq!(
        first.unwrap_err().to_string(),
        "field `prs` should be an array, found object"
    );
}

#[test]
fn a_number_is_unsigned_only_when_it_is_a_non_negative_integer() {
    const NUMBER: Wanted = Wanted {
        keys: &[("n", Wanted::VALUE)],
        items: None,
    };
    let read = |text: &str| {
        let body = format!(r#"{{"n": {text}}}"#);
        let node = parse_object(body.as_bytes(), &NUMBER).unwrap();
        Fields::new(&node).u64("n")
    };
    assert_eq!(read("42"), Ok(42));
    for refused in ["-1", "4.0", "1e3"] {
        assert_eq!(
            read(refused),
            Err(WebhookParseError::WrongType {
                field: "n".to_owned(),
                expected: "a non-negative integer",
                found: "number"
            }),
            "{refused}"
        );
    }
}
