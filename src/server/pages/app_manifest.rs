//! What the GitHub App the setup page creates asks for: its repository permissions and webhook
//! events, each with what autofix does with it, and the App manifest built from them.

use serde_json::{Map, Value, json};

/// One repository permission of the App: GitHub's name for it, the access, and what for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppPermission {
    pub name: &'static str,
    /// `read` or `write` (write includes read).
    pub access: &'static str,
    pub used_for: &'static str,
}

/// One webhook event the App is subscribed to, and what autofix does on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppEvent {
    pub name: &'static str,
    pub used_for: &'static str,
}

/// Every permission the App asks for; nothing else is asked.
pub const APP_PERMISSIONS: [AppPermission; 6] = [
    AppPermission {
        name: "issues",
        access: "write",
        used_for: "the status comment, the labels, the failure report",
    },
    AppPermission {
        name: "pull_requests",
        access: "write",
        used_for: "opening and updating the pull request, reading its reviews",
    },
    AppPermission {
        name: "contents",
        access: "write",
        used_for: "fetching the repository and pushing the bot's branch",
    },
    AppPermission {
        name: "metadata",
        access: "read",
        used_for: "GitHub requires it of every App",
    },
    AppPermission {
        name: "checks",
        access: "read",
        used_for: "the failed checks of the bot's pull requests",
    },
    AppPermission {
        name: "actions",
        access: "read",
        used_for: "the logs of those failed checks",
    },
];

/// Every event the App is subscribed to.
pub const APP_EVENTS: [AppEvent; 7] = [
    AppEvent {
        name: "issues",
        used_for: "the trigger label",
    },
    AppEvent {
        name: "issue_comment",
        used_for: "commands and requests in comments",
    },
    AppEvent {
        name: "pull_request_review",
        used_for: "reviews of the bot's pull requests",
    },
    AppEvent {
        name: "pull_request_review_comment",
        used_for: "their line comments",
    },
    AppEvent {
        name: "check_run",
        used_for: "a failed check",
    },
    AppEvent {
        name: "check_suite",
        used_for: "a failed check suite",
    },
    AppEvent {
        name: "push",
        used_for: "the default branch moving under an open pull request",
    },
];

/// The App's manifest: its webhook, where GitHub sends the browser back, its permissions and events.
pub fn manifest(public_url: &str) -> Value {
    let public_url = public_url.trim().trim_end_matches('/');
    let permissions: Map<String, Value> = APP_PERMISSIONS
        .iter()
        .map(|permission| (permission.name.to_owned(), json!(permission.access)))
        .collect();
    let events: Vec<&str> = APP_EVENTS.iter().map(|event| event.name).collect();
    json!({
        "name": "autofix",
        "url": public_url,
        "description": "Turns a labelled issue into a validated pull request.",
        "hook_attributes": { "url": format!("{public_url}/webhooks/github"), "active": true },
        "redirect_url": format!("{public_url}/setup/github/callback"),
        "public": false,
        "default_permissions": permissions,
        "default_events": events
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_asks_for_exactly_what_autofix_uses() {
        let manifest = manifest("https://bot.example.com/");
        assert_eq!(
            manifest["hook_attributes"]["url"],
            "https://bot.example.com/webhooks/github"
        );
        assert_eq!(
            manifest["redirect_url"],
            "https://bot.example.com/setup/github/callback"
        );
        assert_eq!(
            manifest["default_events"],
            json!([
                "issues",
                "issue_comment",
                "pull_request_review",
                "pull_request_review_comment",
                "check_run",
                "check_suite",
                "push"
            ])
        );
        assert_eq!(
            manifest["default_permissions"],
            json!({"issues": "write", "pull_requests": "write", "contents": "write",
                   "metadata": "read", "checks": "read", "actions": "read"})
        );
        assert_eq!(manifest["public"], false);
    }

    /// The README's list between `<!-- github-app-manifest -->` and its closing
    /// `<!-- /github-app-manifest -->`: the items in backquotes of its entry `- label: …`, which
    /// may wrap onto more lines.
    fn readme_items(label: &str) -> Vec<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
        let readme = std::fs::read_to_string(path).expect("the README is readable");
        let (_, rest) = readme
            .split_once("<!-- github-app-manifest -->")
            .expect("the README marks the App's list with <!-- github-app-manifest -->");
        let (list, _) = rest
            .split_once("<!-- /github-app-manifest -->")
            .expect("the README ends the App's list with <!-- /github-app-manifest -->");
        let start = format!("- {label}:");
        let mut lines = list.lines().map(str::trim);
        let first = lines
            .find(|line| line.starts_with(&start))
            .unwrap_or_else(|| panic!("the README's App list has no `{start}` entry"));
        let entry = std::iter::once(first)
            .chain(lines.take_while(|line| !line.starts_with("- ")))
            .collect::<Vec<_>>()
            .join(" ");
        entry
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_readme_lists_exactly_the_permissions_and_events_of_the_manifest() {
        let manifest = manifest("https://bot.example.com");
        let mut permissions: Vec<String> = manifest["default_permissions"]
            .as_object()
            .expect("permissions are an object")
            .iter()
            .map(|(name, access)| format!("{name}: {}", access.as_str().unwrap()))
            .collect();
        let mut events: Vec<String> = manifest["default_events"]
            .as_array()
            .expect("events are a list")
            .iter()
            .map(|event| event.as_str().unwrap().to_owned())
            .collect();
        let mut listed_permissions = readme_items("permissions");
        let mut listed_events = readme_items("events");
        for list in [
            &mut permissions,
            &mut events,
            &mut listed_permissions,
            &mut listed_events,
        ] {
            list.sort();
        }
        assert_eq!(listed_permissions, permissions);
        assert_eq!(listed_events, events);
    }
}
