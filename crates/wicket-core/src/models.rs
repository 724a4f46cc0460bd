//! What Wicket knows of a model: its context window, its output limit, and
//! its prices, from a built-in table for the models the README names, over
//! which the home config's `[models."P:N"]` and `[prices."P:N"]` lay their
//! own. A model with no known price shows tokens only, never a made-up cost.
//!
//! The table's figures are the providers' published ones (OpenAI's and
//! Anthropic's model and pricing pages, read for this release); a person
//! whose account differs sets their own in the config.

use wicket_protocol::Usage;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// Input tokens not read from the cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cached_input: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
}

impl Prices {
    /// What `usage` costs, in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.uncached_input_tokens() as f64 * self.input
            + usage.cache_read_input_tokens as f64 * self.cached_input
            + usage.cache_creation_input_tokens as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// A model's limits and prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Tokens a request (input and output) may hold.
    pub context_window: u64,
    /// Tokens a reply may have.
    pub max_output_tokens: u32,
    /// What it costs, when known.
    pub prices: Option<Prices>,
}

/// A model the table does not know: a modest window, so compaction starts
/// early rather than never, and no price.
pub const UNKNOWN: ModelInfo = ModelInfo {
    context_window: 32_000,
    max_output_tokens: 8192,
    prices: None,
};

const fn priced(
    context_window: u64,
    max_output_tokens: u32,
    input: f64,
    output: f64,
    cached_input: f64,
    cache_write: f64,
) -> ModelInfo {
    ModelInfo {
        context_window,
        max_output_tokens,
        prices: Some(Prices {
            input,
            output,
            cached_input,
            cache_write,
        }),
    }
}

/// The built-in table: (model string, what it is). OpenAI bills no cache
/// writes (its cache is automatic), so its cache_write is its input price.
pub const BUILT_IN: [(&str, ModelInfo); 12] = [
    (
        "anthropic:claude-sonnet-4-5",
        priced(200_000, 64_000, 3.0, 15.0, 0.30, 3.75),
    ),
    (
        "anthropic:claude-sonnet-4",
        priced(200_000, 64_000, 3.0, 15.0, 0.30, 3.75),
    ),
    (
        "anthropic:claude-opus-4-1",
        priced(200_000, 32_000, 15.0, 75.0, 1.50, 18.75),
    ),
    (
        "anthropic:claude-haiku-4-5",
        priced(200_000, 64_000, 1.0, 5.0, 0.10, 1.25),
    ),
    (
        "anthropic:claude-3-5-haiku-latest",
        priced(200_000, 8_192, 0.80, 4.0, 0.08, 1.0),
    ),
    (
        "openai:gpt-4o",
        priced(128_000, 16_384, 2.50, 10.0, 1.25, 2.50),
    ),
    (
        "openai:gpt-4o-mini",
        priced(128_000, 16_384, 0.15, 0.60, 0.075, 0.15),
    ),
    (
        "openai:gpt-4.1",
        priced(1_047_576, 32_768, 2.0, 8.0, 0.50, 2.0),
    ),
    (
        "openai:gpt-4.1-mini",
        priced(1_047_576, 32_768, 0.40, 1.60, 0.10, 0.40),
    ),
    (
        "openai:gpt-5",
        priced(400_000, 128_000, 1.25, 10.0, 0.125, 1.25),
    ),
    (
        "openai:gpt-5-mini",
        priced(400_000, 128_000, 0.25, 2.0, 0.025, 0.25),
    ),
    (
        "ollama:qwen2.5-coder",
        ModelInfo {
            context_window: 32_768,
            max_output_tokens: 8_192,
            prices: None,
        },
    ),
];

/// The built-in entry for a model string, if any.
pub fn built_in(model: &str) -> Option<ModelInfo> {
    BUILT_IN
        .iter()
        .find(|(name, _)| *name == model)
        .map(|(_, info)| *info)
}

/// A rough count of the tokens in `bytes` of text: four bytes a token,
/// rounded up. No tokenizer is fetched; the provider's own count corrects
/// it after every reply.
pub fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_prices_cached_and_plain_input_apart() {
        let prices = built_in("anthropic:claude-sonnet-4-5")
            .unwrap()
            .prices
            .unwrap();
        let usage = Usage {
            input_tokens: 1_000_000 + 2_000_000 + 500_000,
            output_tokens: 100_000,
            cache_read_input_tokens: 2_000_000,
            cache_creation_input_tokens: 500_000,
            ..Usage::default()
        };
        // 1M plain at $3, 2M cached at $0.30, 0.5M written at $3.75, 0.1M out at $15.
        let cost = prices.cost(&usage);
        assert!((cost - (3.0 + 0.6 + 1.875 + 1.5)).abs() < 1e-9, "{cost}");
        assert!(built_in("openai:gpt-unknown").is_none());
        assert_eq!(estimate_tokens(9), 3);
    }
}
