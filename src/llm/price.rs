//! What the model's tokens cost: the public list prices of well-known models, the operator's
//! overrides (`[llm.price]`), and the arithmetic from a usage or a request's worst case to US dollars.

use serde::{Deserialize, Serialize};

use super::TokenUsage;

/// US dollars per million tokens, as the vendors publish them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    /// Prompt tokens read from the provider's cache.
    pub cached_input: f64,
    pub output: f64,
}

/// The keys of `[llm.price]` the operator set; each one that is set wins over the table's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PriceOverride {
    pub input: Option<f64>,
    pub cached_input: Option<f64>,
    pub output: Option<f64>,
}

impl PriceOverride {
    fn is_empty(&self) -> bool {
        self.input.is_none() && self.cached_input.is_none() && self.output.is_none()
    }
}

/// Where a model's price came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriceOrigin {
    /// The built-in table of public prices.
    Table,
    /// The operator's `[llm.price]` (alone, or over the table's).
    Configured,
    /// Neither: the model's tokens count as free, and the job says "price unknown".
    Unknown,
}

/// The price of the configured model and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Pricing {
    pub model: String,
    pub price: Price,
    pub origin: PriceOrigin,
}

/// A million, the unit of every price.
const PER: f64 = 1_000_000.0;

/// Public list prices (standard tier, prompts up to 200,000 tokens), US dollars per million
/// tokens: input, cached input, output. A model id matches the longest entry it equals or
/// starts with followed by `-` or `@` (a dated snapshot such as `gpt-4o-2024-08-06`).
const TABLE: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-4o", price(2.50, 1.25, 10.00)),
    ("gpt-4o-mini", price(0.15, 0.075, 0.60)),
    ("gpt-4.1", price(2.00, 0.50, 8.00)),
    ("gpt-4.1-mini", price(0.40, 0.10, 1.60)),
    ("gpt-4.1-nano", price(0.10, 0.025, 0.40)),
    ("o3", price(2.00, 0.50, 8.00)),
    ("o3-mini", price(1.10, 0.55, 4.40)),
    ("o4-mini", price(1.10, 0.275, 4.40)),
    // Anthropic (cached input: a cache read)
    ("claude-opus-4", price(15.00, 1.50, 75.00)),
    ("claude-opus-4-5", price(5.00, 0.50, 25.00)),
    ("claude-sonnet-4", price(3.00, 0.30, 15.00)),
    ("claude-haiku-4-5", price(1.00, 0.10, 5.00)),
    ("claude-3-7-sonnet", price(3.00, 0.30, 15.00)),
    ("claude-3-5-sonnet", price(3.00, 0.30, 15.00)),
    ("claude-3-5-haiku", price(0.80, 0.08, 4.00)),
    // Google Gemini
    ("gemini-2.5-pro", price(1.25, 0.125, 10.00)),
    ("gemini-2.5-flash", price(0.30, 0.03, 2.50)),
    ("gemini-2.5-flash-lite", price(0.10, 0.01, 0.40)),
    ("gemini-2.0-flash", price(0.10, 0.025, 0.40)),
    ("gemini-2.0-flash-lite", price(0.075, 0.075, 0.30)),
];

const fn price(input: f64, cached_input: f64, output: f64) -> Price {
    Price {
        input,
        cached_input,
        output,
    }
}

/// The built-in price of `model`, if the table knows it. Case and a `models/` or `vendor/`
/// prefix (`openai/gpt-4o` on a router) do not matter.
pub fn listed_price(model: &str) -> Option<Price> {
    let model = model.trim().to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model);
    TABLE
        .iter()
        .filter(|(name, _)| {
            model == *name
                || model
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('-') || rest.starts_with('@'))
        })
        .max_by_key(|(name, _)| name.len())
        .map(|(_, price)| *price)
}

/// The price of `model`: the table's, with each key the operator configured put over it. A key
/// left out of `[llm.price]` for a model the table does not know is 0, except `cached_input`,
/// which is then the input price (the dearer guess).
pub fn pricing(model: &str, configured: &PriceOverride) -> Pricing {
    let listed = listed_price(model);
    let origin = match (listed, configured.is_empty()) {
        (_, false) => PriceOrigin::Configured,
        (Some(_), true) => PriceOrigin::Table,
        (None, true) => PriceOrigin::Unknown,
    };
    let base = listed.unwrap_or(Price {
        input: 0.0,
        cached_input: configured.input.unwrap_or(0.0),
        output: 0.0,
    });
    Pricing {
        model: model.to_owned(),
        price: Price {
            input: configured.input.unwrap_or(base.input),
            cached_input: configured.cached_input.unwrap_or(base.cached_input),
            output: configured.output.unwrap_or(base.output),
        },
        origin,
    }
}

impl Pricing {
    pub fn known(&self) -> bool {
        self.origin != PriceOrigin::Unknown
    }

    /// What an answer's tokens cost: the cached part of the prompt at the cached price, the
    /// rest at the input price, the answer at the output price.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        (fresh as f64 * self.price.input
            + cached as f64 * self.price.cached_input
            + usage.output_tokens as f64 * self.price.output)
            / PER
    }

    /// The most a request can cost: all of its prompt at the input price (nothing assumed
    /// cached) and all of its output cap at the output price.
    pub fn worst_case(&self, prompt_tokens: u64, max_output_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.price.input + max_output_tokens as f64 * self.price.output)
            / PER
    }

    /// `gpt-4o at $2.50 / $1.25 cached / $10.00 per million tokens in / out (built-in price)`,
    /// or that the price is unknown: said once in each job's run log.
    pub fn describe(&self) -> String {
        let Price {
            input,
            cached_input,
            output,
        } = self.price;
        let from = match self.origin {
            PriceOrigin::Table => "built-in price",
            PriceOrigin::Configured => "llm.price",
            PriceOrigin::Unknown => {
                return format!(
                    "{}: price unknown (no built-in price, no llm.price); its tokens count as $0",
                    self.model
                );
            }
        };
        format!(
            "{} at ${input} in, ${cached_input} cached in, ${output} out per million tokens ({from})",
            self.model
        )
    }
}

/// `$0.0123`: four decimals below a dollar (a cheap exchange still shows), two above.
pub fn dollars(usd: f64) -> String {
    if usd.abs() < 1.0 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            cached_input_tokens: cached,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn a_dated_snapshot_is_priced_as_its_model_and_the_longest_name_wins() {
        assert_eq!(listed_price("gpt-4o-2024-08-06"), listed_price("gpt-4o"));
        assert_eq!(listed_price("gpt-4o-mini").unwrap().input, 0.15);
        assert_eq!(
            listed_price("gpt-4.1-mini-2025-04-14").unwrap().output,
            1.60
        );
        assert_eq!(
            listed_price("claude-opus-4-5-20251101").unwrap().input,
            5.00
        );
        assert_eq!(
            listed_price("claude-opus-4-1-20250805").unwrap().input,
            15.00
        );
        assert_eq!(
            listed_price("models/gemini-2.5-flash").unwrap().output,
            2.50
        );
        assert_eq!(listed_price("openai/GPT-4.1").unwrap().input, 2.00);
        assert_eq!(listed_price("o3-mini").unwrap().input, 1.10);
        assert_eq!(listed_price("o3").unwrap().input, 2.00);
    }

    #[test]
    fn a_model_the_table_does_not_know_has_no_listed_price() {
        assert_eq!(listed_price("qwen2.5-coder:7b"), None);
        assert_eq!(
            listed_price("gpt-4oo"),
            None,
            "a longer word is another model"
        );
        assert_eq!(listed_price(""), None);
    }

    #[test]
    fn cached_prompt_tokens_cost_the_cached_price_and_the_rest_the_input_price() {
        let pricing = pricing("gpt-4o", &PriceOverride::default());
        assert_eq!(pricing.origin, PriceOrigin::Table);
        // 800 fresh at $2.50, 200 cached at $1.25, 100 out at $10 per million.
        let cost = pricing.cost(&usage(1_000, 200, 100));
        assert!(
            close(cost, (800.0 * 2.5 + 200.0 * 1.25 + 100.0 * 10.0) / 1e6),
            "{cost}"
        );
    }

    #[test]
    fn a_configured_price_wins_key_by_key_over_the_table() {
        let configured = PriceOverride {
            input: Some(1.0),
            ..PriceOverride::default()
        };
        let pricing = pricing("gpt-4o", &configured);
        assert_eq!(pricing.origin, PriceOrigin::Configured);
        assert_eq!(pricing.price, price(1.0, 1.25, 10.0));
        assert!(close(pricing.cost(&usage(1_000_000, 0, 0)), 1.0));
    }

    #[test]
    fn an_unknown_model_without_a_configured_price_is_free_and_says_so() {
        let pricing = pricing("llama3:8b", &PriceOverride::default());
        assert!(!pricing.known());
        assert_eq!(pricing.cost(&usage(5_000, 0, 5_000)), 0.0);
        assert!(
            pricing.describe().contains("price unknown"),
            "{}",
            pricing.describe()
        );
    }

    #[test]
    fn a_local_model_given_an_input_price_pays_it_for_cached_tokens_too() {
        let configured = PriceOverride {
            input: Some(0.5),
            output: Some(1.5),
            cached_input: None,
        };
        let pricing = pricing("llama3:8b", &configured);
        assert_eq!(pricing.price, price(0.5, 0.5, 1.5));
        assert!(pricing.known());
    }

    #[test]
    fn the_worst_case_is_the_whole_prompt_at_the_input_price_and_the_whole_cap_at_the_output_price()
    {
        let pricing = pricing("gpt-4.1", &PriceOverride::default());
        assert!(close(
            pricing.worst_case(10_000, 2_048),
            (10_000.0 * 2.0 + 2_048.0 * 8.0) / 1e6
        ));
    }

    #[test]
    fn dollars_show_four_decimals_below_one_dollar_and_two_above() {
        assert_eq!(dollars(0.012345), "$0.0123");
        assert_eq!(dollars(12.3456), "$12.35");
        assert_eq!(dollars(0.0), "$0.0000");
    }
}
