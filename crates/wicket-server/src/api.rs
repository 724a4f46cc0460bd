//! The API's handlers and its one error type. Every manager call that can
//! touch the disk or wait on a lock runs on the blocking pool
//! ([`blocking`]); every refusal is `{"error":{"kind","message"}}`, the
//! extractors' own rejections included ([`Body`]).

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Path as UrlPath, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use wicket_core::manager::{Manager, ManagerError, Open, Refusal, RewindTo, Sent};
use wicket_protocol::{Answer, CardId, SessionId};

use crate::Shared;

/// An API error: `{"error": {"kind", "message"}}` with a status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    /// An error with its status, kind and message.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_args", message)
    }

    /// A failure of the server itself (a task that panicked, a reply that
    /// could not be encoded).
    pub(crate) fn internal(error: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            error.to_string(),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"kind": self.kind, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

/// The one place a manager's refusal becomes a wire error.
impl From<ManagerError> for ApiError {
    fn from(error: ManagerError) -> ApiError {
        let message = error.to_string();
        let refusal = error.refusal();
        let status = match refusal {
            Refusal::Blocked | Refusal::NotOpen | Refusal::InUse | Refusal::Busy => {
                StatusCode::CONFLICT
            }
            Refusal::NotFound => StatusCode::NOT_FOUND,
            Refusal::Invalid(_) => StatusCode::BAD_REQUEST,
            Refusal::Closing => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Io | Refusal::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let kind = refusal.as_str();
        ApiError::new(status, kind, message)
    }
}

/// Runs a manager call on the blocking pool.
pub async fn blocking<T: Send + 'static>(
    manager: &Arc<Manager>,
    call: impl FnOnce(&Manager) -> Result<T, ManagerError> + Send + 'static,
) -> Result<T, ApiError> {
    let manager = manager.clone();
    tokio::task::spawn_blocking(move || call(&manager))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::from)
}

/// A JSON body whose rejection (bad JSON, wrong fields, too large) is an [`ApiError`].
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(rejected(rejection)),
        }
    }
}

fn rejected(rejection: JsonRejection) -> ApiError {
    let status = rejection.status();
    let kind = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "too_large"
    } else {
        "invalid_args"
    };
    ApiError::new(status, kind, rejection.body_text())
}

/// An unknown `/api` path.
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "there is no such API path; README.md lists the API (under `wicket serve`)",
    )
}

/// A known path with the wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this API path does not take that method",
    )
}

/// `GET /api/sessions`.
pub async fn list_sessions(
    State(server): State<Shared>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let summaries = blocking(&server.manager, |manager| Ok(manager.list())).await?;
    let sessions: Vec<serde_json::Value> = summaries
        .into_iter()
        .map(|summary| {
            serde_json::json!({
                "id": summary.id,
                "title": summary.title,
                "workspace": summary.workspace,
                "status": summary.status.as_str(),
                "queued": summary.queued,
                "updated": summary.updated,
            })
        })
        .collect();
    Ok(Json(serde_json::Value::Array(sessions)))
}

/// `POST /api/sessions`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    workspace: Option<String>,
    model: Option<String>,
}

/// `POST /api/sessions`.
pub async fn create_session(
    State(server): State<Shared>,
    Body(body): Body<NewSession>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let workspace = match (
        body.workspace.filter(|w| !w.is_empty()),
        &server.default_workspace,
    ) {
        (Some(workspace), _) => PathBuf::from(workspace),
        (None, Some(default)) => default.clone(),
        (None, None) => {
            return Err(ApiError::invalid(
                "give a workspace (an absolute path to a folder)",
            ));
        }
    };
    if !workspace.is_absolute() {
        return Err(ApiError::invalid(format!(
            "the workspace '{}' must be an absolute path",
            workspace.display()
        )));
    }
    let model = body.model.filter(|m| !m.is_empty());
    let id = blocking(&server.manager, move |manager| {
        manager.open(None, &workspace, model.as_deref())
    })
    .await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id }))))
}

fn open_json(open: &Option<Open>) -> serde_json::Value {
    match open {
        None => serde_json::Value::Null,
        Some(Open::Card(card)) => serde_json::json!({"card": card}),
        Some(Open::Question { id, question }) => {
            serde_json::json!({"question": {"id": id, "question": question}})
        }
    }
}

/// `GET /api/sessions/{id}`.
pub async fn session_detail(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (meta, open, running) = blocking(&server.manager, move |manager| {
        Ok((
            manager.meta(&id)?,
            manager.open_item(&id)?,
            manager.is_running(&id)?,
        ))
    })
    .await?;
    Ok(Json(serde_json::json!({
        "id": meta.id,
        "title": meta.title,
        "workspace": meta.workspace,
        "model": meta.model,
        "status": meta.status.as_str(),
        "usage": meta.usage,
        "running": running,
        "open": open_json(&open),
    })))
}

/// `POST /api/sessions/{id}/messages`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    text: String,
    /// `"plan"`: the turn starts in plan mode; `"default"` (or none): it does not.
    #[serde(default)]
    mode: MessageMode,
}

/// How a message's turn starts.
#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MessageMode {
    /// Every tool.
    #[default]
    Default,
    /// Only reads, ask, finish and propose_plan until a plan is approved.
    Plan,
}

/// `POST /api/sessions/{id}/messages`.
pub async fn send_message(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
    Body(body): Body<NewMessage>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    if body.text.trim().is_empty() {
        return Err(ApiError::invalid("the message is empty"));
    }
    let sent = blocking(&server.manager, move |manager| {
        manager.send_with(&id, &body.text, body.mode == MessageMode::Plan)
    })
    .await?;
    let state = match sent {
        Sent::Started => "started",
        Sent::Queued => "queued",
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "state": state })),
    ))
}

/// `POST /api/sessions/{id}/cards/{card}`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardAnswer {
    answer: Answer,
    /// With `allow_always` on a run card: the saved rule covers every argv
    /// that starts with these words (the card's own first words).
    #[serde(default)]
    argv_prefix: Option<Vec<String>>,
    /// With `deny`: why (the model reads it).
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /api/sessions/{id}/cards/{card}`.
pub async fn answer_card(
    State(server): State<Shared>,
    UrlPath((id, card)): UrlPath<(SessionId, CardId)>,
    Body(body): Body<CardAnswer>,
) -> Result<Json<serde_json::Value>, ApiError> {
    // Straight on this task: giving an answer never waits on the disk
    // (the turn's thread logs it), and a hop to the blocking pool and back
    // was most of an answer's time under load.
    server.manager.answer_with(
        &id,
        &card,
        wicket_core::manager::Answered {
            answer: body.answer,
            widened: body.argv_prefix,
            reason: body
                .reason
                .and_then(|given| wicket_protocol::card::deny_reason(&given)),
        },
    )?;
    Ok(Json(serde_json::json!({"ok": true})))
}

/// One rule as the API lists it: the rule as written, with where it came from.
fn rule_json(
    source: wicket_gate::rules::Source,
    rule: &wicket_protocol::Rule,
) -> serde_json::Value {
    let mut value = wicket_protocol::json::value(&rule.spec());
    if let Some(fields) = value.as_object_mut() {
        fields.insert("source".into(), source.as_str().into());
        fields.insert("describe".into(), rule.spec().describe().into());
    }
    value
}

/// `GET /api/sessions/{id}/grants`: the session's grants, with ids and origins.
pub async fn list_grants(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let grants = blocking(&server.manager, move |manager| manager.grants(&id)).await?;
    Ok(Json(serde_json::json!(grants)))
}

/// `DELETE /api/sessions/{id}/grants/{grant}`: the next matching call asks again.
pub async fn revoke_grant(
    State(server): State<Shared>,
    UrlPath((id, grant)): UrlPath<(SessionId, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let revoked = blocking(&server.manager, move |manager| {
        manager.revoke_grant(&id, &grant)
    })
    .await?;
    Ok(Json(serde_json::json!({"revoked": revoked})))
}

/// `GET /api/rules`: the person's rules in force in every workspace.
pub async fn list_rules(State(server): State<Shared>) -> Result<Json<serde_json::Value>, ApiError> {
    let rules = blocking(&server.manager, |manager| manager.rules()).await?;
    Ok(Json(serde_json::Value::Array(
        rules
            .iter()
            .map(|(source, rule)| rule_json(*source, rule))
            .collect(),
    )))
}

/// `POST /api/rules` (a rule as written, `[[rules]]`'s keys): saved to rules.toml.
pub async fn add_rule(
    State(server): State<Shared>,
    Body(spec): Body<wicket_protocol::RuleSpec>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let id = blocking(&server.manager, move |manager| manager.save_rule(spec)).await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id }))))
}

/// `DELETE /api/rules/{id}`: a rule saved in rules.toml, taken back.
pub async fn revoke_rule(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let rule = blocking(&server.manager, move |manager| manager.revoke_rule(&id)).await?;
    Ok(Json(serde_json::json!({"revoked": rule.spec()})))
}

/// `POST /api/sessions/{id}/questions/{qid}`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionReply {
    reply: String,
}

/// `POST /api/sessions/{id}/questions/{qid}`.
pub async fn reply_question(
    State(server): State<Shared>,
    UrlPath((id, qid)): UrlPath<(SessionId, wicket_protocol::QuestionId)>,
    Body(body): Body<QuestionReply>,
) -> Result<Json<serde_json::Value>, ApiError> {
    // As an answer: straight on this task.
    server.manager.reply(&id, &qid, &body.reply)?;
    Ok(Json(serde_json::json!({"ok": true})))
}

/// `POST /api/sessions/{id}/compact`: the model summarises the older part
/// of the conversation now; 202, then a `compacted` event.
pub async fn compact_session(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    blocking(&server.manager, move |manager| manager.compact(&id)).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "state": "compacting" })),
    ))
}

/// The body of `POST /api/sessions/{id}/rewind`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewindRequest {
    /// Before this log event; absent: before the last turn that changed anything.
    #[serde(default)]
    to: Option<u64>,
    /// Back to before the last rewind.
    #[serde(default)]
    undo: bool,
    /// Say what would change, change nothing.
    #[serde(default)]
    dry_run: bool,
}

/// `POST /api/sessions/{id}/rewind`: `{"to": SEQ}`, `{"undo": true}` or
/// `{}`; with `"dry_run": true` the plan, else the `rewound` event.
pub async fn rewind_session(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
    Body(request): Body<RewindRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let to = match (request.to, request.undo) {
        (Some(_), true) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_args",
                "give \"to\" or \"undo\", not both".to_string(),
            ));
        }
        (Some(seq), false) => RewindTo::Seq(seq),
        (None, true) => RewindTo::Undo,
        (None, false) => RewindTo::LastTurn,
    };
    if request.dry_run {
        let (target, plan) =
            blocking(&server.manager, move |manager| manager.rewind_plan(&id, to)).await?;
        return Ok(Json(serde_json::json!({ "to": target.seq, "plan": plan })));
    }
    let event = blocking(&server.manager, move |manager| manager.rewind(&id, to)).await?;
    Ok(Json(serde_json::json!({ "rewound": event })))
}

/// `GET /api/sessions/{id}/checkpoints`: every checkpoint, oldest first.
pub async fn list_checkpoints(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let list = blocking(&server.manager, move |manager| manager.checkpoints(&id)).await?;
    Ok(Json(serde_json::json!({ "checkpoints": list })))
}

/// `POST /api/sessions/{id}/cancel`.
pub async fn cancel_turn(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let cancelled = blocking(&server.manager, move |manager| manager.cancel(&id)).await?;
    Ok(Json(serde_json::json!({ "cancelled": cancelled })))
}
