//! Stories of SEARCH/REPLACE blocks meeting real files: what is applied, what is refused, and
//! what the refusal says.

use super::*;

fn block(search: &str, replace: &str) -> Block {
    Block {
        search: search.to_string(),
        replace: replace.to_string(),
    }
}

fn refusal(original: &str, blocks: &[Block]) -> String {
    apply(original, blocks)
        .expect_err("should be refused")
        .message
}

const GREETER: &str = "fn main() {\n    greet(\"world\");\n}\n\nfn greet(name: &str) {\n    println!(\"hello {name}\");\n}\n";

#[test]
fn a_reply_is_grouped_per_file_in_order_of_first_appearance() {
    let reply = "b.rs\n<<<<<<< SEARCH\n1\n=======\n2\n>>>>>>> REPLACE\n\
                 a.rs\n<<<<<<< SEARCH\n3\n=======\n4\n>>>>>>> REPLACE\n\
                 b.rs\n<<<<<<< SEARCH\n5\n=======\n6\n>>>>>>> REPLACE\n";
    let edits = parse(reply).unwrap();
    assert_eq!(
        edits,
        [
            FileEdit {
                path: "b.rs".into(),
                change: Change::Replace {
                    blocks: vec![block("1\n", "2\n"), block("5\n", "6\n")]
                },
            },
            FileEdit {
                path: "a.rs".into(),
                change: Change::Replace {
                    blocks: vec![block("3\n", "4\n")]
                },
            },
        ]
    );
}

#[test]
fn a_reply_without_blocks_cannot_be_parsed() {
    let error = parse("Sure, here is an explanation.").unwrap_err();
    assert!(error.message.contains("no SEARCH/REPLACE block"), "{error}");
}

#[test]
fn an_exact_search_is_replaced() {
    let fixed = apply(
        GREETER,
        &[block("    greet(\"world\");\n", "    greet(\"rust\");\n")],
    );
    assert_eq!(fixed.unwrap(), GREETER.replace("\"world\"", "\"rust\""));
}

#[test]
fn blocks_apply_one_after_another_to_the_edited_content() {
    let blocks = [
        block(
            "fn greet(name: &str) {\n",
            "fn greet(name: &str, loud: bool) {\n",
        ),
        // The second block searches for the line the first one wrote.
        block(
            "fn greet(name: &str, loud: bool) {\n",
            "pub fn greet(name: &str, loud: bool) {\n",
        ),
    ];
    let fixed = apply(GREETER, &blocks).unwrap();
    assert!(
        fixed.contains("pub fn greet(name: &str, loud: bool) {\n"),
        "{fixed}"
    );
}

#[test]
fn a_search_with_stray_trailing_spaces_still_fits() {
    let fixed = apply(
        GREETER,
        &[block(
            "fn main() {  \n    greet(\"world\");\t\n",
            "fn main() {\n    greet(\"you\");\n",
        )],
    );
    assert!(
        fixed
            .unwrap()
            .starts_with("fn main() {\n    greet(\"you\");\n}\n")
    );
}

#[test]
fn a_crlf_file_keeps_its_line_endings_when_the_block_uses_lf() {
    let original = "a = 1\r\nb = 2\r\nc = 3\r\n";
    let fixed = apply(original, &[block("b = 2\n", "b = 20\nb2 = 21\n")]).unwrap();
    assert_eq!(fixed, "a = 1\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n");
}

#[test]
fn an_lf_file_keeps_its_line_endings_when_the_block_uses_crlf() {
    let fixed = apply("a\nb\nc\n", &[block("b\r\n", "B\r\n")]).unwrap();
    assert_eq!(fixed, "a\nB\nc\n");
}

#[test]
fn a_search_missing_the_files_indentation_is_found_and_the_replace_reindented() {
    let fixed = apply(
        GREETER,
        &[block(
            "println!(\"hello {name}\");\n",
            "if !name.is_empty() {\n    println!(\"hello {name}\");\n}\n",
        )],
    );
    assert_eq!(
        fixed.unwrap(),
        GREETER.replace(
            "    println!(\"hello {name}\");\n",
            "    if !name.is_empty() {\n        println!(\"hello {name}\");\n    }\n"
        )
    );
}

#[test]
fn a_search_indented_too_deeply_is_found_and_the_replace_outdented() {
    let search = "        fn greet(name: &str) {\n            println!(\"hello {name}\");\n";
    let replace = "        fn greet(name: &str) {\n            println!(\"hi {name}\");\n";
    let fixed = apply(GREETER, &[block(search, replace)]).unwrap();
    assert!(
        fixed.contains("\nfn greet(name: &str) {\n    println!(\"hi {name}\");\n}\n"),
        "{fixed}"
    );
}

#[test]
fn an_uneven_indentation_slip_is_not_guessed() {
    // One line lacks four spaces and the other eight: no single offset explains it.
    let search = "fn greet(name: &str) {\nprintln!(\"hello {name}\");\n";
    let error = refusal(GREETER, &[block(search, "x\n")]);
    assert!(error.contains("matches no lines of the file"), "{error}");
}

#[test]
fn blank_lines_opening_and_closing_the_search_are_forgiven() {
    let original = "fn main() {\n    run();\n}\n";
    let fixed = apply(
        original,
        &[block("\n    run();\n\n", "\n    run_twice();\n\n")],
    )
    .unwrap();
    assert_eq!(fixed, "fn main() {\n    run_twice();\n}\n");
}

#[test]
fn a_replace_without_the_framing_blank_line_is_kept_whole() {
    let original = "fn main() {\n    run();\n}\n";
    let fixed = apply(
        original,
        &[block("    run();\n\n", "    run();\n    stop();\n")],
    )
    .unwrap();
    assert_eq!(fixed, "fn main() {\n    run();\n    stop();\n}\n");
}

#[test]
fn a_search_ambiguous_once_its_blank_edges_are_dropped_is_refused() {
    let error = refusal("x\nend\nx\n", &[block("\nx\n", "y\n")]);
    assert!(
        error.contains("matches 2 places without its opening and closing blank lines"),
        "{error}"
    );
}

#[test]
fn a_search_found_in_two_places_is_refused_with_both_places_named() {
    let original = "a\n}\nb\n}\n";
    let error = refusal(original, &[block("}\n", "};\n")]);
    assert_eq!(
        error,
        "SEARCH/REPLACE block 1 of 1 (SEARCH starting `}`) matches 2 places (starting at lines 2, \
         4); include more surrounding lines so that it matches exactly one"
    );
}

#[test]
fn a_search_that_only_becomes_ambiguous_when_loosened_is_refused_too() {
    let original = "if a {\n    x();\n}\nif b {\n        x();\n}\n";
    let error = refusal(original, &[block("x();\n", "y();\n")]);
    assert!(
        error.contains("matches 2 places once indentation is ignored"),
        "{error}"
    );
}

#[test]
fn a_search_found_nowhere_is_refused_showing_the_closest_lines_with_numbers() {
    let error = refusal(
        GREETER,
        &[
            block("    greet(\"world\");\n", "    greet(\"rust\");\n"),
            block(
                "fn greet(name: &String) {\n    println!(\"hello {name}\");\n",
                "",
            ),
        ],
    );
    assert_eq!(
        error,
        "SEARCH/REPLACE block 2 of 2 (SEARCH starting `fn greet(name: &String) {`) matches no \
         lines of the file, even ignoring trailing whitespace, indentation and opening or \
         closing blank lines; the closest lines of the file are:\n\
         5 | fn greet(name: &str) {\n\
         6 |     println!(\"hello {name}\");"
    );
}

#[test]
fn a_block_sent_twice_is_refused_saying_its_replace_text_is_already_there() {
    let blocks = [
        block("    greet(\"world\");\n", "    greet(\"rust\");\n"),
        block("    greet(\"world\");\n", "    greet(\"rust\");\n"),
    ];
    let error = refusal(GREETER, &blocks);
    assert!(error.starts_with("SEARCH/REPLACE block 2 of 2"), "{error}");
    assert!(
        error.ends_with(
            "Its REPLACE text is already in the file at line 2: was this block applied before?"
        ),
        "{error}"
    );
}

#[test]
fn a_search_against_an_empty_file_says_the_file_is_empty() {
    let error = refusal("", &[block("x\n", "y\n")]);
    assert!(error.ends_with("; the file is empty"), "{error}");
}

#[test]
fn an_empty_search_on_an_empty_or_missing_file_creates_it() {
    assert_eq!(apply("", &[block("", "hello\n")]).unwrap(), "hello\n");
}

#[test]
fn an_empty_search_on_a_file_with_content_appends_like_aider() {
    let fixed = apply("first\nsecond", &[block("\n", "third\n")]).unwrap();
    assert_eq!(fixed, "first\nsecond\nthird\n");
}

#[test]
fn two_empty_searches_create_a_file_then_add_to_it() {
    let fixed = apply("", &[block("", "one\n"), block("", "two\n")]).unwrap();
    assert_eq!(fixed, "one\ntwo\n");
}

#[test]
fn an_empty_replace_deletes_the_found_lines() {
    let fixed = apply("keep\ndrop\nkeep too\n", &[block("drop\n", "")]).unwrap();
    assert_eq!(fixed, "keep\nkeep too\n");
}

#[test]
fn a_file_without_a_final_newline_still_has_none_after_its_last_line_is_replaced() {
    let fixed = apply("a\nb", &[block("b\n", "c\n")]).unwrap();
    assert_eq!(fixed, "a\nc");
}

#[test]
fn a_search_without_a_final_newline_matches_whole_lines() {
    let fixed = apply("alpha\nbeta\n", &[block("alpha", "ALPHA")]).unwrap();
    assert_eq!(fixed, "ALPHA\nbeta\n");
}

#[test]
fn a_search_longer_than_the_file_is_refused() {
    let error = refusal("one line\n", &[block("one line\ntwo lines\n", "x\n")]);
    assert!(error.contains("matches no lines"), "{error}");
}
