//! Prompt budgets: how many tokens each stage's whole prompt may take (all derived from
//! `pipeline.context_tokens`), and fitting a prompt's parts into its budget with marked cuts.

use super::context::BYTES_PER_TOKEN;
use crate::failure::Stage;
use crate::quote::fenced;

/// The smallest budget any stage gets, however small `pipeline.context_tokens` is: the stage's
/// own instructions and answer format always fit in it.
pub const MIN_STAGE_TOKENS: usize = 2_000;

/// Tokens a JSON stage's prompt leaves free within its budget for its one corrective round,
/// which repeats the prompt and adds why the answer was refused, the start of that answer (300
/// characters) and the answer's JSON Schema.
pub const JSON_RETRY_TOKENS: usize = 1_000;

/// What a JSON stage's (triage, plan, audit) first prompt may take of `budget_tokens`, so that
/// its corrective round stays within the budget too.
pub fn first_ask(budget_tokens: usize) -> usize {
    budget_tokens.saturating_sub(JSON_RETRY_TOKENS)
}

/// Most names a bounded list shows before it only counts the rest.
pub const MAX_NAMED: usize = 30;

/// The project's token estimate: bytes / 4, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(BYTES_PER_TOKEN)
}

/// The most tokens each stage's whole prompt may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    pub triage: usize,
    pub plan: usize,
    pub reproduce: usize,
    pub edit: usize,
    pub repair: usize,
    pub audit: usize,
}

impl Budgets {
    /// Edit and repair get all of `context_tokens`; plan, reproduce and audit half of it;
    /// triage an eighth; none less than [`MIN_STAGE_TOKENS`].
    pub fn from_context_tokens(context_tokens: usize) -> Budgets {
        let share = |numerator: usize, denominator: usize| {
            (context_tokens.saturating_mul(numerator) / denominator).max(MIN_STAGE_TOKENS)
        };
        Budgets {
            triage: share(1, 8),
            plan: share(1, 2),
            reproduce: share(1, 2),
            edit: share(1, 1),
            repair: share(1, 1),
            audit: share(1, 2),
        }
    }

    /// The budget of a stage's prompt; a stage that asks the model nothing has the edit's.
    pub fn of(&self, stage: Stage) -> usize {
        match stage {
            Stage::Triage => self.triage,
            Stage::Plan => self.plan,
            Stage::Reproduce => self.reproduce,
            Stage::Repair => self.repair,
            Stage::Audit => self.audit,
            _ => self.edit,
        }
    }
}

/// Which end of a part's text survives a cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The beginning (an issue body, a diff, a map): what comes first matters most.
    Head,
    /// The end (a command's output): the failure is at the bottom.
    Tail,
}

/// One part of a prompt: text around a body; a body that may be cut says what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    before: String,
    body: String,
    after: String,
    /// The body is shown in a code fence with this info string.
    fence: Option<&'static str>,
    /// `None`: never cut; else which end is kept and what the body is, for the marker.
    cut: Option<(Keep, &'static str)>,
}

impl Part {
    /// Text that is always shown whole (the stage's instructions, the answer format).
    pub fn fixed(text: impl Into<String>) -> Part {
        Part {
            before: text.into(),
            body: String::new(),
            after: String::new(),
            fence: None,
            cut: None,
        }
    }

    /// `body` as it is, cut at `keep`'s other end when the prompt is over its budget; `what`
    /// names it in the marker ("the repository map").
    pub fn cuttable(body: impl Into<String>, keep: Keep, what: &'static str) -> Part {
        Part {
            before: String::new(),
            body: body.into(),
            after: String::new(),
            fence: None,
            cut: Some((keep, what)),
        }
    }

    /// `body` in a code fence (the fence fits whatever is kept), cut like [`Part::cuttable`].
    pub fn fenced(body: impl Into<String>, keep: Keep, what: &'static str) -> Part {
        Part {
            fence: Some(""),
            ..Part::cuttable(body, keep, what)
        }
    }

    /// The info string of the body's fence (`diff`).
    pub fn fence_info(mut self, info: &'static str) -> Part {
        self.fence = Some(info);
        self
    }

    /// Text shown before the body, never cut (a heading).
    pub fn before(mut self, text: impl Into<String>) -> Part {
        self.before = text.into();
        self
    }

    /// Text shown after the body, never cut.
    pub fn after(mut self, text: impl Into<String>) -> Part {
        self.after = text.into();
        self
    }

    /// The part as it reads uncut.
    pub fn whole(&self) -> String {
        self.render(usize::MAX)
    }

    /// The part with at most `limit` bytes of its body.
    fn render(&self, limit: usize) -> String {
        let (kept, left_out) = match self.cut {
            Some((keep, _)) if self.body.len() > limit => {
                let kept = keep_end(&self.body, keep, limit);
                let left_out = self.body.len() - kept.len();
                (kept, left_out)
            }
            _ => (self.body.as_str(), 0),
        };
        let shown = match self.fence {
            Some(info) if !kept.is_empty() => fenced(info, kept),
            _ => kept.to_owned(),
        };
        let marker = match self.cut {
            Some((_, what)) if left_out > 0 => marker(left_out, what),
            _ => String::new(),
        };
        match self.cut {
            Some((Keep::Tail, _)) => format!("{}{marker}{shown}{}", self.before, self.after),
            _ => format!("{}{shown}{marker}{}", self.before, self.after),
        }
    }

    /// Bytes of the part shown whole, besides its body (the fence may only shrink with a cut).
    fn overhead(&self) -> usize {
        self.render(usize::MAX).len() - self.body.len()
    }
}

/// The line that says a cut was made.
fn marker(left_out: usize, what: &str) -> String {
    format!(
        "[{} bytes of {what} left out here to keep this prompt within its budget]\n",
        thousands(left_out)
    )
}

/// At most `limit` bytes from `keep`'s end of `text`, on a line boundary when one is near.
fn keep_end(text: &str, keep: Keep, limit: usize) -> &str {
    match keep {
        Keep::Head => {
            let mut end = limit.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let head = &text[..end];
            match head.rfind('\n') {
                Some(newline) if newline + 1 >= end / 2 => &head[..newline + 1],
                _ => head,
            }
        }
        Keep::Tail => {
            let mut start = text.len().saturating_sub(limit);
            while !text.is_char_boundary(start) {
                start += 1;
            }
            let tail = &text[start..];
            if start == 0 || text[..start].ends_with('\n') {
                return tail;
            }
            match tail.find('\n') {
                Some(newline) if newline < tail.len() / 2 => &tail[newline + 1..],
                _ => tail,
            }
        }
    }
}

/// `1870` as `1,870`.
pub fn thousands(number: usize) -> String {
    let digits = number.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// The prompt made of `parts` within `budget_tokens`: whole when it fits; else the cuttable
/// bodies are cut, the largest first and none below what the others keep, each cut marked; and
/// should the parts that are never cut not fit on their own, the prompt's end is cut and says so.
pub fn fit(parts: &[Part], budget_tokens: usize) -> String {
    let limit = budget_tokens.saturating_mul(BYTES_PER_TOKEN);
    let whole: String = parts.iter().map(|part| part.render(usize::MAX)).collect();
    if whole.len() <= limit {
        return whole;
    }
    let cost = |cap: usize| -> usize {
        parts
            .iter()
            .map(|part| match part.cut {
                Some((_, what)) if part.body.len() > cap => {
                    part.overhead() + cap + marker(part.body.len(), what).len()
                }
                _ => part.overhead() + part.body.len(),
            })
            .sum()
    };
    // The largest cap on every cuttable body that fits: cost(low) always fits, cost(high) not.
    let (mut low, mut high) = (0, parts.iter().map(|p| p.body.len()).max().unwrap_or(0) + 1);
    if cost(low) <= limit {
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if cost(middle) <= limit {
                low = middle;
            } else {
                high = middle;
            }
        }
    }
    let prompt: String = parts.iter().map(|part| part.render(low)).collect();
    if prompt.len() <= limit {
        return prompt;
    }
    cut_end(&prompt, limit, budget_tokens)
}

/// A prompt that shows files: `parts` with the files' section in `slot`, built by `files`
/// within the tokens the other parts leave. Those parts take what they need, or at most half
/// the budget when they are larger (cut as [`fit`] cuts them); the files get the rest, and
/// are built again smaller should their section (headings, notes) come out over it.
pub fn fit_with_files<T>(
    mut parts: Vec<Part>,
    slot: usize,
    budget_tokens: usize,
    mut files: impl FnMut(usize) -> (String, T),
) -> (String, T) {
    parts[slot] = Part::fixed("");
    let others = estimate_tokens(&fit(&parts, budget_tokens / 2));
    let room = budget_tokens.saturating_sub(others);
    let mut asked = room;
    let (mut section, mut built) = files(asked);
    for _ in 0..4 {
        let used = estimate_tokens(&section);
        if used <= room || asked == 0 {
            break;
        }
        asked = asked.saturating_sub(used - room);
        (section, built) = files(asked);
    }
    parts[slot] = Part::fixed(section);
    (fit(&parts, budget_tokens), built)
}

/// The last resort: the prompt cut at `limit` bytes, saying so.
fn cut_end(prompt: &str, limit: usize, budget_tokens: usize) -> String {
    let notice = format!(
        "\n[The prompt is cut here: even its fixed parts exceed this stage's budget of {} tokens.]\n",
        thousands(budget_tokens)
    );
    let mut end = limit.saturating_sub(notice.len()).min(prompt.len());
    while !prompt.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = prompt[..end].to_owned();
    if notice.len() <= limit {
        cut.push_str(&notice);
    }
    cut
}

/// At most [`MAX_NAMED`] of `items`, one `- item` line each, then how many more `noun` there
/// are ("… and 1,870 more files").
pub fn bounded_list(items: &[String], noun: &str) -> String {
    let mut list = String::new();
    for item in items.iter().take(MAX_NAMED) {
        list.push_str(&format!("- {item}\n"));
    }
    if items.len() > MAX_NAMED {
        list.push_str(&format!(
            "… and {} more {noun}\n",
            thousands(items.len() - MAX_NAMED)
        ));
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stage_budget_follows_the_one_setting() {
        let budgets = Budgets::from_context_tokens(60_000);
        assert_eq!(
            budgets,
            Budgets {
                triage: 7_500,
                plan: 30_000,
                reproduce: 30_000,
                edit: 60_000,
                repair: 60_000,
                audit: 30_000,
            }
        );
        assert_eq!(budgets.of(Stage::Repair), 60_000);
        let tiny = Budgets::from_context_tokens(100);
        assert_eq!(tiny.triage, MIN_STAGE_TOKENS);
        assert_eq!(tiny.edit, MIN_STAGE_TOKENS);
    }

    #[test]
    fn a_prompt_that_fits_is_left_whole() {
        let parts = [
            Part::fixed("Intro\n"),
            Part::fenced("body\n", Keep::Head, "the issue").before("## Issue\n"),
        ];
        assert_eq!(fit(&parts, 100), "Intro\n## Issue\n```\nbody\n```\n");
    }

    #[test]
    fn the_largest_part_is_cut_first_and_the_cut_is_marked() {
        let small = "a short line\n".repeat(10);
        let huge = "line of output\n".repeat(100_000);
        let parts = [
            Part::fixed("Intro\n"),
            Part::cuttable(small.clone(), Keep::Head, "the issue"),
            Part::fenced(huge, Keep::Tail, "the command's output").before("## Output\n"),
        ];
        let prompt = fit(&parts, 1_000);
        assert!(estimate_tokens(&prompt) <= 1_000);
        assert!(prompt.contains(&small), "{prompt}");
        assert!(
            prompt.contains("bytes of the command's output left out here to keep this prompt"),
            "{prompt}"
        );
        assert!(prompt.contains("line of output\n```\n"), "the tail is kept");
    }

    #[test]
    fn parts_cut_together_keep_the_same_share() {
        let parts = [
            Part::cuttable("x".repeat(50_000), Keep::Head, "the first"),
            Part::cuttable("y".repeat(80_000), Keep::Head, "the second"),
        ];
        let prompt = fit(&parts, 2_000);
        assert!(estimate_tokens(&prompt) <= 2_000);
        let xs = prompt.matches('x').count();
        let ys = prompt.matches('y').count();
        assert!(xs.abs_diff(ys) <= 8, "{xs} against {ys}");
    }

    #[test]
    fn fixed_parts_over_the_budget_are_cut_at_the_end_and_say_so() {
        let parts = [Part::fixed("word ".repeat(10_000))];
        let prompt = fit(&parts, 500);
        assert!(estimate_tokens(&prompt) <= 500);
        assert!(prompt.ends_with("exceed this stage's budget of 500 tokens.]\n"));
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let parts = [Part::cuttable("é".repeat(10_000), Keep::Tail, "the text")];
        let prompt = fit(&parts, 100);
        assert!(estimate_tokens(&prompt) <= 100);
        assert!(prompt.ends_with('é'));
    }

    #[test]
    fn a_long_list_names_thirty_then_counts_the_rest() {
        let items: Vec<String> = (0..1_900).map(|i| format!("f{i}.py")).collect();
        let list = bounded_list(&items, "files");
        assert!(list.starts_with("- f0.py\n"));
        assert!(list.contains("- f29.py\n… and 1,870 more files\n"));
        assert!(!list.contains("f30.py"));
        assert_eq!(bounded_list(&items[..2], "files"), "- f0.py\n- f1.py\n");
    }
}
