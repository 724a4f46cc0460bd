//! What a session allowed: its grants (`allow_session` keys) with the card
//! each came from, listed and revoked by one id.

use super::*;

/// An outside read allowed for the session: a path and how far it reaches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OutsideKey {
    /// The absolute path.
    pub path: String,
    /// read, list or grep.
    pub reach: Reach,
}

/// A command allowed for the session: the exact argv, where, and whether with network.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunKey {
    /// The exact argv.
    pub argv: Vec<String>,
    /// The resolved absolute folder it runs in.
    pub cwd: String,
    /// Whether it has network, and how.
    #[serde(default)]
    pub network: wicket_protocol::Network,
    /// Whether it may write `.git`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub git: bool,
    /// The paths outside the workspace it may read, where they really are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
}

/// A host and port a command may reach through Wicket's proxy, allowed
/// for the session; `local` when the card said the name resolves to a
/// local address (a grant without it never lets such a connection through).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NetKey {
    /// The host, as rules name it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The card said it resolves to a local address.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
}

/// An MCP call allowed for the session: server, tool and the exact arguments.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct McpKey {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments as canonical JSON text (keys sorted).
    pub arguments: String,
}

/// The allow_session keys: exact, and this session's only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Allowed {
    /// Resolved absolute paths writes may go to without a card.
    #[serde(default)]
    pub write: BTreeSet<String>,
    /// Outside paths, each with its reach.
    #[serde(default)]
    pub outside: BTreeSet<OutsideKey>,
    /// Commands.
    #[serde(default)]
    pub run: BTreeSet<RunKey>,
    /// MCP calls.
    #[serde(default)]
    pub mcp: BTreeSet<McpKey>,
    /// Hosts reached through Wicket's proxy.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub net: BTreeSet<NetKey>,
    /// Where each grant came from, by its id ([`grant_id`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub origins: BTreeMap<GrantId, GrantOrigin>,
}

/// The card whose `allow_session` made a grant, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantOrigin {
    /// The card.
    pub card: CardId,
    /// When (RFC 3339).
    pub ts: String,
}

/// Which of [`Allowed`]'s sets a grant is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantKind {
    /// A write path.
    Write,
    /// An outside path and its reach.
    OutsideRead,
    /// A command.
    Run,
    /// An MCP call.
    Mcp,
    /// A host through Wicket's proxy.
    Net,
}

impl GrantKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            GrantKind::Write => "write",
            GrantKind::OutsideRead => "outside_read",
            GrantKind::Run => "run",
            GrantKind::Mcp => "mcp",
            GrantKind::Net => "net",
        }
    }
}

/// One grant of a session, as `wicket grants` and the API list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// Its id: the same for the same key, in every session.
    pub id: GrantId,
    /// Which set it is in.
    pub kind: GrantKind,
    /// The exact key it lets through.
    pub key: serde_json::Value,
    /// The card that made it.
    pub origin: Option<GrantOrigin>,
}

impl Grant {
    /// The grant in one line of a listing (`wicket grants`, the TUI's `/grants`).
    pub fn listed(&self) -> String {
        format!(
            "{}  session grant  allow {} {}",
            self.id,
            self.kind.as_str(),
            self.key
        )
    }
}

/// A grant's id: `g-` and 12 hex digits of the SHA-256 of its kind and
/// key (the key as compact JSON, which a `Value` always has).
pub fn grant_id(kind: GrantKind, key: &serde_json::Value) -> GrantId {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(kind.as_str().as_bytes());
    hasher.update([0]);
    hasher.update(key.to_string().as_bytes());
    let digest = hasher.finalize();
    let hex: String = digest
        .iter()
        .take(6)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    GrantId::from(format!("g-{hex}"))
}

impl Allowed {
    /// Every grant, with its id and origin.
    pub fn grants(&self) -> Vec<Grant> {
        let mut grants = Vec::new();
        let mut add = |kind: GrantKind, key: serde_json::Value| {
            let id = grant_id(kind, &key);
            let origin = self.origins.get(&id).cloned();
            grants.push(Grant {
                id,
                kind,
                key,
                origin,
            });
        };
        for path in &self.write {
            add(GrantKind::Write, serde_json::json!(path));
        }
        for key in &self.outside {
            add(GrantKind::OutsideRead, serde_json::json!(key));
        }
        for key in &self.run {
            add(GrantKind::Run, serde_json::json!(key));
        }
        for key in &self.mcp {
            add(GrantKind::Mcp, serde_json::json!(key));
        }
        for key in &self.net {
            add(GrantKind::Net, serde_json::json!(key));
        }
        grants
    }

    /// Takes back the grant `id`; what it was, or `None` when there is none.
    pub fn revoke(&mut self, id: &str) -> Option<Grant> {
        let grant = self.grants().into_iter().find(|grant| grant.id == id)?;
        let key = grant.key.clone();
        match grant.kind {
            GrantKind::Write => self.write.retain(|path| serde_json::json!(path) != key),
            GrantKind::OutsideRead => self.outside.retain(|held| serde_json::json!(held) != key),
            GrantKind::Run => self.run.retain(|held| serde_json::json!(held) != key),
            GrantKind::Mcp => self.mcp.retain(|held| serde_json::json!(held) != key),
            GrantKind::Net => self.net.retain(|held| serde_json::json!(held) != key),
        }
        self.origins.remove(id);
        Some(grant)
    }

    /// Records where the grant `id` came from.
    pub fn note_origin(&mut self, id: GrantId, card: &CardId) {
        self.origins.insert(
            id,
            GrantOrigin {
                card: card.clone(),
                ts: now_rfc3339(),
            },
        );
    }
}
