//! From a `provider/model` spec to an [`Endpoint`]: built-in providers,
//! providers from the config, base URLs and keys.

use crate::config::{ModelConfig, Providers};
use crate::model::{ApiKey, Endpoint, Protocol};
use anyhow::{Result, bail};

/// A provider toolhost knows without configuration.
struct Builtin {
    name: &'static str,
    protocol: Protocol,
    base_url: &'static str,
    key_env: Option<&'static str>,
    base_url_env: Option<&'static str>,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "openai",
        protocol: Protocol::Openai,
        base_url: "https://api.openai.com/v1",
        key_env: Some("OPENAI_API_KEY"),
        base_url_env: Some("OPENAI_BASE_URL"),
    },
    Builtin {
        name: "anthropic",
        protocol: Protocol::Anthropic,
        base_url: "https://api.anthropic.com",
        key_env: Some("ANTHROPIC_API_KEY"),
        base_url_env: Some("ANTHROPIC_BASE_URL"),
    },
    Builtin {
        name: "ollama",
        protocol: Protocol::Openai,
        base_url: "http://127.0.0.1:11434/v1",
        key_env: None,
        base_url_env: None,
    },
];

/// The model to use when none is named: `TOOLHOST_MODEL`, the config's
/// `[model] default`, else a provider whose key is set.
pub fn default_spec(config: &ModelConfig) -> Result<String> {
    if let Some(spec) = std::env::var("TOOLHOST_MODEL").ok().filter(|spec| !spec.is_empty()) {
        return Ok(spec);
    }
    if let Some(spec) = &config.default {
        return Ok(spec.clone());
    }
    if env_set("ANTHROPIC_API_KEY") {
        return Ok("anthropic/claude-sonnet-4-5".to_owned());
    }
    if env_set("OPENAI_API_KEY") {
        return Ok("openai/gpt-4.1".to_owned());
    }
    bail!(
        "no model is configured: pass --model PROVIDER/MODEL (e.g. openai/gpt-4.1, \
         anthropic/claude-sonnet-4-5, or ollama/qwen3 for a local Ollama), set TOOLHOST_MODEL, \
         or set OPENAI_API_KEY or ANTHROPIC_API_KEY"
    )
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|value| !value.is_empty())
}

/// Resolves `spec` (`provider/model`) against the built-in providers and
/// `[providers.NAME]` in the config; `base_url` overrides both.
pub fn resolve(spec: &str, providers: &Providers, base_url: Option<&str>) -> Result<Endpoint> {
    let Some((provider, model)) = spec.split_once('/').filter(|(p, m)| !p.is_empty() && !m.is_empty()) else {
        bail!(
            "`{spec}` is not a model spec: write PROVIDER/MODEL, e.g. openai/gpt-4.1, \
             anthropic/claude-sonnet-4-5 or ollama/qwen3"
        );
    };
    let builtin = BUILTINS.iter().find(|builtin| builtin.name == provider);
    let configured = providers.get(provider);
    if builtin.is_none() && configured.is_none() {
        let known: Vec<&str> = BUILTINS.iter().map(|b| b.name).chain(providers.keys().map(String::as_str)).collect();
        bail!(
            "unknown model provider `{provider}`: use one of {}, or add it to toolhost.toml as \
             [providers.{provider}] with protocol = \"openai\", \"openai-responses\" or \"anthropic\" and base_url = \"…\"",
            known.join(", ")
        );
    }
    let protocol = configured.and_then(|c| c.protocol).or(builtin.map(|b| b.protocol)).ok_or_else(|| {
        anyhow::anyhow!("[providers.{provider}] needs protocol = \"openai\", \"openai-responses\" or \"anthropic\"")
    })?;
    let base_url = base_url
        .map(str::to_owned)
        .or_else(|| configured.and_then(|c| c.base_url.clone()))
        .or_else(|| {
            builtin.and_then(|b| b.base_url_env).and_then(|name| std::env::var(name).ok()).filter(|url| !url.is_empty())
        })
        .or_else(|| builtin.map(|b| b.base_url.to_owned()))
        .ok_or_else(|| anyhow::anyhow!("[providers.{provider}] needs base_url = \"…\""))?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        bail!("the base URL `{base_url}` must start with http:// or https://");
    }
    let key_env = configured.and_then(|c| c.api_key_env.clone()).or(builtin.and_then(|b| b.key_env).map(str::to_owned));
    let api_key = configured
        .and_then(|c| c.api_key.clone())
        .or_else(|| key_env.as_deref().and_then(|name| std::env::var(name).ok()))
        .filter(|key| !key.is_empty())
        .map(ApiKey::new);
    let needs_key = configured.is_none_or(|c| c.api_key_env.is_some()) && key_env.is_some();
    if api_key.is_none() && needs_key {
        let name = key_env.unwrap_or_default();
        bail!(
            "{name} is not set: export it with your {provider} API key, or set api_key_env in [providers.{provider}]"
        );
    }
    Ok(Endpoint { protocol, base_url, model: model.to_owned(), api_key })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[providers]` tables as the config file has them.
    fn config(text: &str) -> Providers {
        #[derive(serde::Deserialize)]
        struct File {
            providers: Providers,
        }
        toml::from_str::<File>(text).unwrap().providers
    }

    #[test]
    fn accepts_builtin_and_configured_providers() {
        let local = resolve("ollama/qwen3", &Providers::default(), None).unwrap();
        assert_eq!(
            (local.protocol, local.base_url.as_str(), local.model.as_str()),
            (Protocol::Openai, "http://127.0.0.1:11434/v1", "qwen3")
        );
        assert!(local.api_key.is_none());

        let vllm = resolve(
            "vllm/meta/llama-3",
            &config("[providers.vllm]\nprotocol = \"openai\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n"),
            None,
        )
        .unwrap();
        assert_eq!(vllm.model, "meta/llama-3", "only the first slash separates the provider");

        let keyed = resolve(
            "anthropic/claude",
            &config("[providers.anthropic]\napi_key = \"k\"\n"),
            Some("http://127.0.0.1:9"),
        )
        .unwrap();
        assert_eq!(keyed.base_url, "http://127.0.0.1:9");
        assert!(keyed.api_key.is_some());
    }

    #[test]
    fn rejects_bad_specs_with_the_fix() {
        let cases = [
            ("gpt-4", "write PROVIDER/MODEL"),
            ("nope/model", "unknown model provider `nope`"),
            ("/model", "write PROVIDER/MODEL"),
        ];
        for (spec, expected) in cases {
            let err = resolve(spec, &Providers::default(), None).unwrap_err().to_string();
            assert!(err.contains(expected), "{spec}: {err}");
        }
        let err = resolve("ollama/x", &Providers::default(), Some("ftp://x")).unwrap_err().to_string();
        assert!(err.contains("http://"), "{err}");
    }
}
