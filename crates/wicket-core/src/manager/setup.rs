//! How a turn is set up: the config's layers, the model and its client
//! ([`standard_setup`]), and a model's window learned from its server.

use super::*;

/// Asks an unknown model's server for its window (once per process and
/// model), and says in the turn's notice where the figure came from. A
/// window learned so also bounds a reply to a quarter of it, so that one
/// rambling reply cannot fill it.
pub(super) fn learn_window(settings: &mut Settings, runtime: &tokio::runtime::Handle) {
    let Some((model, client)) = settings.ask_window.take() else {
        return;
    };
    let told = runtime.block_on(wicket_chat::window::ask(&model, &client));
    settings.window_note = Some(match told {
        Some(window) => {
            settings.model.context_window = window.tokens;
            let quarter = u32::try_from(window.tokens / 4)
                .unwrap_or(u32::MAX)
                .max(256);
            settings.max_tokens = settings.max_tokens.min(quarter);
            format!(
                "{model}'s context window is {} tokens, as {} says (replies are held to {} tokens); \
                 set [models.\"{model}\"] context_window in $WICKET_HOME/config.toml to say otherwise",
                window.tokens, window.source, settings.max_tokens
            )
        }
        None => format!(
            "{model}'s context window is not known, and its server does not say; assuming {} tokens. \
             Set [models.\"{model}\"] context_window in $WICKET_HOME/config.toml",
            settings.model.context_window
        ),
    });
}

/// What a turn that panicked ends with.
pub(super) const INTERNAL_ERROR: &str = "the turn stopped on an internal error (a bug in Wicket); the session goes on, and the error is on stderr";

/// The standard [`TurnSetup`]: the config layers of `home` and the workspace,
/// the model (`model` from the session or flag, else `WICKET_MODEL`, else the
/// config's), provider URLs from the environment over the config's.
pub fn standard_setup(home: &Path) -> TurnSetup {
    let home = home.to_path_buf();
    Arc::new(move |workspace: &Path, model: Option<&str>| {
        let config = Config::load(&home, workspace)?;
        let model = config.model_from(model).ok_or(SetupError::NoModel)?;
        let client = config.client();
        let chat = wicket_chat::client_for(&model, &client)?;
        let opened =
            wicket_tools::Workspace::open(workspace).map_err(|error| crate::Error::Config {
                path: workspace.display().to_string(),
                message: error.message,
            })?;
        let info = config.model_info(&model);
        let (skills, skipped) = find_skills(&opened, &home, &config.skill_dirs);
        let mut notices = config.notices.clone();
        notices.extend(skipped.into_iter().map(|skipped| ConfigNotice {
            message: format!("the skill {} was skipped: {}", skipped.file, skipped.why),
            file: skipped.file,
            key: Some("skill".into()),
        }));
        let settings = Settings {
            step_limit: config.step_limit,
            max_stop_blocks: config.max_stop_blocks,
            hooks: config.hooks.clone(),
            session_start: None,
            max_tokens: config
                .max_tokens
                .unwrap_or(DEFAULT_MAX_TOKENS)
                .min(info.max_output_tokens),
            skills,
            instructions: personal_instructions(&home),
            instructions_below: working_folder(opened.root()),
            confinement: Confinement {
                sandbox: config.sandbox.clone(),
                home: home.clone(),
            },
            rules: config.gate_rules(&home),
            model: info,
            limits: config.limits,
            checkpoints: config.checkpoints.clone(),
            mcp_servers: config.mcp_servers.clone(),
            notices,
            managed: config.managed.clone(),
            ask_window: (!config.window_known(&model)).then(|| (model.clone(), client.clone())),
            window_note: None,
        };
        Ok((chat, settings))
    })
}

/// Where the person started Wicket, relative to the workspace's root, when
/// that is inside it (`cd src/api && wicket exec --workspace ../..`): the
/// folder whose AGENTS.md and CLAUDE.md, and those above it, apply.
fn working_folder(root: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| std::fs::canonicalize(cwd).ok())
        .and_then(|cwd| cwd.strip_prefix(root).ok().map(Path::to_path_buf))
        .unwrap_or_default()
}

/// Output tokens a reply may use when the config sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// What to say when no model is configured.
pub fn no_model_message() -> String {
    "no model is configured. Pass --model PROVIDER:NAME (openai:gpt-4o, anthropic:claude-sonnet-4-5, \
     ollama:qwen2.5-coder, script:PATH), or set WICKET_MODEL, or put model = \"…\" in \
     $WICKET_HOME/config.toml. OpenAI reads OPENAI_API_KEY (and OPENAI_BASE_URL for compatible servers), \
     Anthropic reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL), Ollama needs no key and reads OLLAMA_HOST \
     (default http://127.0.0.1:11434)"
        .to_string()
}

/// The person's own instruction files, in the order the prompt reads them:
/// Wicket's, then Codex's and Claude Code's, from their home folders.
pub(crate) fn personal_instructions(home: &Path) -> Vec<(String, PathBuf)> {
    let mut files = vec![("$WICKET_HOME/AGENTS.md".to_string(), home.join("AGENTS.md"))];
    if let Some(user) = std::env::var_os("HOME").map(PathBuf::from) {
        files.push(("~/.codex/AGENTS.md".into(), user.join(".codex/AGENTS.md")));
        files.push(("~/.claude/CLAUDE.md".into(), user.join(".claude/CLAUDE.md")));
    }
    files
}
