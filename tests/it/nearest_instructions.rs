//! The instruction files nearest the files a plan changes: an `AGENTS.md` in a sub-folder
//! applies to the files under it, after the root's, and only once the plan names them.

use crate::support::fix_cli::Fix;
use crate::support::repo::Repo;
use crate::support::scripted_llm::ScriptedLlm;
use serde_json::json;

#[test]
fn the_edit_prompt_shows_the_root_instructions_then_the_nearest_ones_to_the_planned_file() {
    let repo = Repo::with(&[
        ("AGENTS.md", "Root rule: keep functions short.\n"),
        ("web/AGENTS.md", "Web rule: no new dependencies.\n"),
        (
            "lib/AGENTS.md",
            "Lib rule: every function has a docstring.\n",
        ),
        ("lib/sub/AGENTS.md", "Sub rule: integers only.\n"),
        (
            "lib/sub/calc.py",
            "def clamp(value, low, high):\n    return value\n",
        ),
        (
            ".autofix.toml",
            "[[validate]]\nname = \"import\"\nrun = [\"python3\", \"-c\", \"import lib.sub.calc\"]\n",
        ),
    ]);
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": ["lib/sub/calc.py"], "reason": "clamp ignores its bounds"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["respect the bounds"],
               "file_changes": [{"path": "lib/sub/calc.py", "operation": "MODIFY"}],
               "commit_summary": "make clamp respect its bounds", "scope": "calc"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "edit",
        "lib/sub/calc.py\n```\n<<<<<<< SEARCH\n    return value\n=======\n    \"\"\"Limit value.\"\"\"\n    return max(low, min(value, high))\n>>>>>>> REPLACE\n```\n",
    );
    llm.reply_text_for_stage(
        "audit",
        json!({"decision": "accepted", "reasons": ["ok"], "must_fixes": [], "nice_to_haves": []})
            .to_string(),
    );
    let issue = json!({"number": 3, "title": "clamp ignores its bounds", "body": "clamp(5, 0, 3) is 5.", "labels": []});

    let fix = Fix::run(repo.path(), &llm, &issue);

    assert_eq!(fix.output.status.code(), Some(0), "{}", fix.run_log());
    let edit = &llm.prompts_for("edit")[0];
    let root = edit.find("Root rule").expect("the root's instructions");
    let lib = edit.find("## lib/AGENTS.md\nLib rule").expect("lib's");
    let sub = edit
        .find("## lib/sub/AGENTS.md\nSub rule")
        .expect("the nearest");
    assert!(
        root < lib && lib < sub,
        "root to leaf, nearest last:\n{edit}"
    );
    assert!(
        !edit.contains("Web rule"),
        "a folder off the path is not read"
    );
    let plan = &llm.prompts_for("plan")[0];
    assert!(
        plan.contains("Root rule") && !plan.contains("Lib rule"),
        "before the plan, only the root's apply"
    );
    let log = fix.run_log();
    assert!(
        log.contains("instructions: lib/sub/AGENTS.md (nearest to the planned files)"),
        "{log}"
    );
    llm.assert_done();
}
