//! One config file as written, read into the two kinds of keys: those
//! every file may set ([`SharedKeys`]) and those only a trusted file may
//! ([`HomeKeys`]). Which file is trusted is [`super::Layer`]'s to say.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};

use super::config_error;
use super::hook::Hooks;
use super::mcp_servers::FileServer;
use crate::error::Result;
use wicket_gate::sandbox::SandboxMode;

/// One config file as written.
#[derive(Debug, Clone, Default)]
pub(super) struct FileConfig {
    /// What only a trusted file may set.
    pub(super) home: HomeKeys,
    /// What every file may set.
    pub(super) shared: SharedKeys,
}

// Neither kind refuses unknown keys itself: each must pass over the other's.
// `KnownKeys` refuses them for both.

/// The keys only the person's own config may set: they choose where code
/// is sent, what it costs, and how commands are confined. From a
/// repository's config each is ignored with a notice ([`HomeKeys::refusals`]).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct HomeKeys {
    pub(super) model: Option<String>,
    pub(super) providers: Option<Providers>,
    pub(super) sandbox: Option<FileSandbox>,
    pub(super) models: Option<BTreeMap<String, FileModel>>,
    pub(super) prices: Option<BTreeMap<String, FilePrices>>,
    pub(super) limits: Option<FileLimits>,
    pub(super) checkpoints: Option<FileCheckpoints>,
    pub(super) telemetry: Option<FileTelemetry>,
}

impl HomeKeys {
    /// What of these a file set, each with why a repository's config may
    /// not and how the person can have it. The one table of those reasons:
    /// the keys are named whole, not with `..`, so a new one does not
    /// compile until it has its reason here.
    pub(super) fn refusals(&self) -> Vec<Refusal> {
        let HomeKeys {
            model,
            providers,
            sandbox,
            models,
            prices,
            limits,
            checkpoints,
            telemetry,
        } = self;
        let set_it = "Set it in $WICKET_HOME/config.toml";
        let pay = "it decides what you pay, so only your own config may set it";
        [
            model.as_deref().map(|model| {
                Refusal::new(
                    "model",
                    "a repository's config cannot choose the model (who receives your code, and what it costs)",
                    format!(
                        "To use it, pass --model {} or set model in $WICKET_HOME/config.toml",
                        wicket_protocol::text::visible_line(model)
                    ),
                )
            }),
            providers.is_some().then(|| {
                Refusal::new(
                    "[providers]",
                    "a repository's config could send your API key to another host",
                    "Set providers in $WICKET_HOME/config.toml",
                )
            }),
            checkpoints.is_some().then(|| {
                Refusal::new(
                    "[checkpoints]",
                    "a repository's config could leave its own changes out of your checkpoints",
                    set_it,
                )
            }),
            sandbox.is_some().then(|| {
                Refusal::new(
                    "[sandbox]",
                    "a repository's config can never loosen (or change) the sandbox",
                    set_it,
                )
            }),
            models.is_some().then(|| Refusal::new("[models]", pay, set_it)),
            prices.is_some().then(|| Refusal::new("[prices]", pay, set_it)),
            limits.is_some().then(|| Refusal::new("[limits]", pay, set_it)),
            telemetry.is_some().then(|| {
                Refusal::new(
                    "[telemetry]",
                    "a repository's config could send what you do (and, with log_content, your code) to its own host",
                    set_it,
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The keys every config may set. Each layer applies them by its own rule
/// (a repository's commands ask first, its folders stay inside it), so a
/// key here is honoured from a repository: one that must not be belongs
/// in [`HomeKeys`].
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct SharedKeys {
    pub(super) step_limit: Option<usize>,
    pub(super) max_stop_blocks: Option<usize>,
    #[serde(default)]
    pub(super) skill_dirs: Vec<PathBuf>,
    #[serde(default)]
    pub(super) hooks: Hooks,
    pub(super) chat: Option<Chat>,
    pub(super) mcp_servers: Option<BTreeMap<String, FileServer>>,
    #[serde(default)]
    pub(super) rules: Vec<wicket_protocol::RuleSpec>,
}

/// A config file's text: its keys checked, then read as both kinds.
pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<FileConfig> {
    let text = std::str::from_utf8(bytes).map_err(|_| config_error(path, "it is not UTF-8"))?;
    let invalid = |error: toml::de::Error| config_error(path, error.to_string().trim_end());
    // Each kind is read from the text, not through one struct of both with
    // `#[serde(flatten)]`: that reads the file into a buffer first, and every
    // error in it would point at the file's first line.
    toml::from_str::<KnownKeys>(text).map_err(invalid)?;
    Ok(FileConfig {
        home: toml::from_str(text).map_err(invalid)?,
        shared: toml::from_str(text).map_err(invalid)?,
    })
}

/// A file's top-level keys, each checked as it is read, so that an unknown
/// one is an error on its own line, worded as serde's own.
struct KnownKeys;

impl<'de> Deserialize<'de> for KnownKeys {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<KnownKeys, D::Error> {
        deserializer.deserialize_map(KnownKeys)
    }
}

impl<'de> Visitor<'de> for KnownKeys {
    type Value = KnownKeys;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a table of settings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<KnownKeys, A::Error> {
        while map.next_key::<KnownKey>()?.is_some() {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(KnownKeys)
    }
}

/// One top-level key: known if either kind reads it.
struct KnownKey;

impl<'de> Deserialize<'de> for KnownKey {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<KnownKey, D::Error> {
        deserializer.deserialize_identifier(KnownKey)
    }
}

impl<'de> Visitor<'de> for KnownKey {
    type Value = KnownKey;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a setting's name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> std::result::Result<KnownKey, E> {
        let known = || keys_of::<HomeKeys>().iter().chain(keys_of::<SharedKeys>());
        if known().any(|known| *known == key) {
            return Ok(KnownKey);
        }
        let names: Vec<String> = known().map(|known| format!("`{known}`")).collect();
        Err(E::custom(format!(
            "unknown field `{key}`, expected one of {}",
            names.join(", ")
        )))
    }
}

/// The keys a struct's derived `Deserialize` reads, as it names them to
/// serde: the key lists are the structs themselves, never written twice.
pub(super) fn keys_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    let mut keys: &'static [&'static str] = &[];
    // It always fails, having noted the keys: there is no value to make.
    let _ = T::deserialize(KeyLister(&mut keys));
    keys
}

/// A deserializer that answers a struct's request by noting its keys.
struct KeyLister<'a>(&'a mut &'static [&'static str]);

impl<'de> serde::Deserializer<'de> for KeyLister<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("only a struct lists its keys"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> std::result::Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("the keys are noted"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        enum identifier ignored_any
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Provider {
    pub(super) base_url: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OpenAiProvider {
    pub(super) base_url: Option<String>,
    #[serde(default, deserialize_with = "tool_choice")]
    pub(super) tool_choice: Option<FileToolChoice>,
}

/// `[providers.openai] tool_choice` as written.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FileToolChoice {
    Auto,
    Required,
}

impl From<FileToolChoice> for wicket_chat::ToolChoice {
    fn from(choice: FileToolChoice) -> wicket_chat::ToolChoice {
        match choice {
            FileToolChoice::Auto => wicket_chat::ToolChoice::Auto,
            FileToolChoice::Required => wicket_chat::ToolChoice::Required,
        }
    }
}

fn tool_choice<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<FileToolChoice>, D::Error> {
    one_of(deserializer, |word| {
        format!(
            "[providers.openai] tool_choice = \"{word}\" is not a choice; use \"auto\" or \"required\", or leave it out"
        )
    })
}

/// `[sandbox] mode` as written: the modes a person may choose, not
/// `unavailable`, which only the kernel decides.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum FileMode {
    WorkspaceWrite,
    ReadOnly,
    Off,
}

impl From<FileMode> for SandboxMode {
    fn from(mode: FileMode) -> SandboxMode {
        match mode {
            FileMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            FileMode::ReadOnly => SandboxMode::ReadOnly,
            FileMode::Off => SandboxMode::Off,
        }
    }
}

fn sandbox_mode<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<FileMode>, D::Error> {
    one_of(deserializer, |word| {
        format!(
            "[sandbox] mode = \"{word}\" is not a mode; use \"workspace-write\", \"read-only\" or \"off\""
        )
    })
}

/// A word that must name one of `T`'s variants. Any other is refused with
/// `wrong(word)`, which names the key and the words to use, where serde's
/// own "unknown variant" would name neither in the config's terms.
fn one_of<'de, D, T>(
    deserializer: D,
    wrong: fn(&str) -> String,
) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::{Error as _, IntoDeserializer};
    let word = String::deserialize(deserializer)?;
    let value: std::result::Result<T, serde::de::value::Error> =
        T::deserialize(word.as_str().into_deserializer());
    value.map(Some).map_err(|_| D::Error::custom(wrong(&word)))
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Ollama {
    pub(super) host: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Providers {
    pub(super) openai: Option<OpenAiProvider>,
    pub(super) anthropic: Option<Provider>,
    pub(super) ollama: Option<Ollama>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Chat {
    pub(super) request_timeout_s: Option<u64>,
    pub(super) idle_timeout_s: Option<u64>,
    pub(super) max_attempts: Option<u32>,
    pub(super) max_tokens: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSandbox {
    #[serde(default, deserialize_with = "sandbox_mode")]
    pub(super) mode: Option<FileMode>,
    pub(super) deny_read: Option<Vec<PathBuf>>,
    #[serde(default)]
    pub(super) extra_write: Vec<PathBuf>,
    #[serde(default)]
    pub(super) extra_read: Vec<PathBuf>,
    pub(super) home_read: Option<Vec<String>>,
    pub(super) required: Option<bool>,
    pub(super) env_pass: Option<Vec<String>>,
    pub(super) max_processes: Option<u64>,
    pub(super) max_memory_mb: Option<u64>,
    pub(super) preview_max_mb: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileModel {
    pub(super) context_window: Option<u64>,
    pub(super) max_output_tokens: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FilePrices {
    pub(super) input: f64,
    pub(super) output: f64,
    pub(super) cached_input: Option<f64>,
    pub(super) cache_write: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCheckpoints {
    #[serde(default)]
    pub(super) ignore: Vec<String>,
    pub(super) keep_days: Option<u64>,
    pub(super) max_file_mb: Option<u64>,
    pub(super) max_files: Option<usize>,
    pub(super) max_store_mb: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    pub(super) max_cost_usd_per_turn: Option<f64>,
    pub(super) max_tokens_per_turn: Option<u64>,
    pub(super) max_tasks: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTelemetry {
    pub(super) otlp_endpoint: Option<String>,
    pub(super) log_content: Option<bool>,
}

/// A part of an untrusted file that is not obeyed: its key, why, and how
/// the person can have it; a [`ConfigNotice`](super::ConfigNotice) once it names its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(super) key: &'static str,
    pub(super) why: String,
    pub(super) instead: String,
}

impl Refusal {
    pub(super) fn new(
        key: &'static str,
        why: impl Into<String>,
        instead: impl Into<String>,
    ) -> Refusal {
        Refusal {
            key,
            why: why.into(),
            instead: instead.into(),
        }
    }
}
