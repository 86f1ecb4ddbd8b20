//! The sealed `requestState` of a held call put to a 2026-07-28 client as the protocol's own
//! retry (MRTR, [`super::mrtr`]).
//!
//! The state passes through the client, so it is read as attacker-controlled input: it is
//! `base64url(payload) "." base64url(HMAC-SHA256(key, payload))`, with a key only sc-mcp holds
//! (per run, or derived from `--audit-key` so that every sc-mcp holding the key reads the others'
//! states). The payload binds the principal (the agent), the call's digest (tool and exact
//! arguments), the policy's digest, the door, the place where it is spent (a crew's store and
//! crew, or this very sc-mcp process) and an expiry; [`Key::open`] refuses a state that fails any
//! of them, and its `nonce` is what the crew's store spends once ([`crate::store::spent`]).
//! Binding the place matters because a key derived from `--audit-key` is shared by every sc-mcp
//! holding it, while each place keeps its own spent tokens: a state taken wherever the key is
//! held could be spent once per crew, or once in the issuer's memory and again in a crew.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::revision::Modern;
use crate::verdict::{Grantable, Scope};

/// How long a `requestState` may be presented after it was given: 10 minutes.
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(600);

/// What a sealed state says: enough to settle the held call on the retry (the hold was decided
/// and recorded when the call first came; the retry is decided again, and its yes holds only for
/// the reasons it was given to, [`super::cover`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct HeldState {
    /// Random, 128 bits: what is spent once.
    pub nonce: String,
    /// The held call's id in the audit log (its `gate` event).
    pub call_id: String,
    /// The principal the call was made in the name of.
    pub principal: String,
    pub tool: String,
    /// [`call_digest`] of the tool and its exact arguments.
    pub call: String,
    /// [`policy_digest`] of the policy that held it.
    pub policy: String,
    /// The sc-mcp that held it: its server, `--sandbox` and the ways it asks.
    pub door: DoorBinding,
    /// Where it is spent ([`spent_in_crew`], [`spent_in_memory`] or [`spent_in_process`]): only
    /// an sc-mcp that spends its states in the same place takes it.
    pub spent_at: String,
    /// Unix milliseconds after which the state is refused.
    pub expires: u64,
    /// The hold's reasons as the person was shown them: a yes covers a retry held for these or
    /// fewer ([`super::cover::not_shown`]), never one held for another.
    pub reasons: Vec<String>,
    pub scopes: Vec<Scope>,
    /// What a wider yes may grant, when the hold offered one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grantable: Option<Grantable>,
}

/// What else a state is bound to besides the principal, the call and the policy: what the
/// decision and its carrying out depend on in the sc-mcp that gave it. A state another sc-mcp
/// gave is taken only if it is in front of the same server, with the same `--sandbox`, asking
/// the person the same ways.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DoorBinding {
    /// SHA-256 of the server: its command line, or its `--upstream` URL ([`DoorBinding::server`]).
    pub server: String,
    /// Whether the server runs under `--sandbox`.
    pub sandbox: bool,
    /// The ways a held call may be put to the person ([`DoorBinding::asking`]).
    pub asking: String,
}

impl DoorBinding {
    /// The digest of a server started as `command` (each argument length-prefixed, so that
    /// `a b` and `"a b"` differ).
    pub fn server_command(command: &[std::ffi::OsString]) -> String {
        let parts: Vec<&[u8]> = std::iter::once(&b"command"[..])
            .chain(command.iter().map(|arg| arg.as_encoded_bytes()))
            .collect();
        policy_digest(&parts)
    }

    /// The digest of a remote server at `url` (its credentials, when it has some, never leave
    /// the digest).
    pub fn server_url(url: &str) -> String {
        policy_digest(&[b"upstream", url.as_bytes()])
    }

    /// How `asking` (and `--inbox`) puts a held call to the person, as a state names it.
    pub fn asking(asking: super::Asking, inbox: bool) -> String {
        match (inbox, asking) {
            (true, _) => "inbox".to_owned(),
            (false, super::Asking::OnlyTheHuman) => "only-the-human".to_owned(),
            (false, super::Asking::Wherever { elicitation, web }) => {
                format!("wherever(elicitation={elicitation},web={})", web.is_some())
            }
        }
    }
}

/// What sc-mcp needs to put a hold to a modern client as a retry, and to take the retry.
#[derive(Debug, Clone)]
pub struct Retries {
    pub key: Key,
    /// [`policy_digest`] of the policy in force.
    pub policy_digest: String,
    /// This sc-mcp's server, `--sandbox` and ways of asking.
    pub door: DoorBinding,
    /// How long a state may be presented (default 10 minutes).
    pub ttl: Duration,
    /// 128 random bits of this sc-mcp process: without a crew's store, its states are spent in
    /// its memory, so they name this process as the place they are spent ([`spent_in_memory`],
    /// [`spent_in_process`]).
    pub instance: String,
}

impl Retries {
    /// Sealed with `key`, for a policy of this digest, at this door; with a fresh instance
    /// nonce for this process.
    pub fn new(
        key: Key,
        policy_digest: String,
        door: DoorBinding,
    ) -> Result<Retries, getrandom::Error> {
        Ok(Retries {
            key,
            policy_digest,
            door,
            ttl: DEFAULT_STATE_TTL,
            instance: nonce()?,
        })
    }
}

/// The place a state is spent with a crew's store: the store (as it describes itself:
/// `sqlite:/abs/path`, the file's path resolved when it can be so that doors reaching the same
/// file by other paths agree; or the Redis URL without its password) and the crew. A digest, so
/// that the state shows the client neither.
pub(crate) fn spent_in_crew(store: &str, crew: &str) -> String {
    let resolved = store
        .strip_prefix("sqlite:")
        .and_then(|path| std::fs::canonicalize(path).ok())
        .map(|path| format!("sqlite:{}", path.display()));
    let store = resolved.as_deref().unwrap_or(store);
    policy_digest(&[b"crew", store.as_bytes(), crew.as_bytes()])
}

/// The place a state is spent without a crew's store: the memory of the sc-mcp process whose
/// instance nonce is `instance`.
pub(crate) fn spent_in_memory(instance: &str) -> String {
    policy_digest(&[b"memory", instance.as_bytes()])
}

/// The place a state is spent in a store of one process's memory ([`crate::store::MemoryStore`]:
/// `sc-mcp --listen` without `--crew`, whose sessions share it): the sc-mcp process whose instance
/// nonce is `instance`, and the owner of the spent tokens there (`crew`, a token's label or `*`).
/// Not the store's description, which is the same for every process: a state spent in one
/// listener's memory would be taken again by another listener, or by this one started again.
pub(crate) fn spent_in_process(instance: &str, crew: &str) -> String {
    policy_digest(&[b"memory", instance.as_bytes(), crew.as_bytes()])
}

/// The retry's side of one sc-mcp: its settings, the states it sealed and has not seen spent
/// (without a crew's store), and the modern request being handled.
#[derive(Debug)]
pub(crate) struct RetrySide {
    pub(crate) retries: Retries,
    /// Without a crew's store, the nonces of the states this process sealed, until each is
    /// spent or expires: only these are taken. A key derived from `--audit-key` is shared by
    /// every sc-mcp holding it, but this memory is not, so a state another sc-mcp sealed (and
    /// may have spent) is refused here rather than run a second time.
    pub(crate) issued: BTreeMap<String, u64>,
    pub(crate) current: Option<Modern>,
}

impl RetrySide {
    pub(crate) fn new(retries: Retries) -> RetrySide {
        RetrySide {
            retries,
            issued: BTreeMap::new(),
            current: None,
        }
    }

    /// Notes a state this process sealed, so that it may be spent here without a store
    /// ([`RetrySide::spend_issued`]). False when [`crate::store::spent::MAX_SPENT`] states are
    /// still live: the hold is then declined rather than an old state forgotten.
    pub(crate) fn issue(&mut self, nonce: &str, expires: u64, now: SystemTime) -> bool {
        let now = millis(now);
        self.issued.retain(|_, until| *until > now);
        if self.issued.len() >= crate::store::spent::MAX_SPENT {
            return false;
        }
        self.issued.insert(nonce.to_owned(), expires);
        true
    }

    /// Spends a state without a store: only one this process sealed and has not spent.
    pub(crate) fn spend_issued(&mut self, nonce: &str) -> Result<(), StateRefused> {
        match self.issued.remove(nonce) {
            Some(_) => Ok(()),
            None => Err(StateRefused::NotIssuedHere),
        }
    }

    /// Whether the request being handled is a modern one that declared elicitation in form mode.
    pub(crate) fn asks_by_retry(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|modern| modern.elicits_form)
    }
}

/// Why a presented `requestState` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateRefused {
    #[error("the requestState is not one sc-mcp sealed (malformed or tampered with)")]
    Tampered,
    #[error("the requestState expired {0} s ago")]
    Expired(u64),
    #[error("the requestState was given to another principal ({0:?})")]
    OtherPrincipal(String),
    #[error("the requestState is for another call (the tool or its arguments differ)")]
    OtherCall,
    #[error("the requestState was given under another policy")]
    OtherPolicy,
    #[error("the requestState was given by an sc-mcp in front of another MCP server")]
    OtherServer,
    #[error("the requestState was given by an sc-mcp with another --sandbox setting")]
    OtherSandbox,
    #[error("the requestState was given by an sc-mcp that asks the person another way")]
    OtherAsking,
    #[error("the requestState is spent elsewhere: it was given by an sc-mcp of another crew or crew's store, or by another sc-mcp process that spends its states in its own memory, such as another listener without --crew or this one before it was started again (a state is taken only where it is spent)")]
    OtherPlace,
    #[error("the requestState was already used")]
    Replayed,
    #[error("the requestState was already used, or was not given by this sc-mcp (without a crew's store, each sc-mcp takes only the states it gave, once)")]
    NotIssuedHere,
    #[error("the requestState cannot be spent: {0}")]
    Store(String),
}

/// The key states are sealed with. Never printed.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("requestState::Key(<secret>)")
    }
}

type HmacSha256 = Hmac<Sha256>;

impl Key {
    /// A key of this run alone: 256 random bits.
    pub fn random() -> Result<Key, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(Key(key))
    }

    /// A key derived from the audit log's key (`--audit-key`), so that every sc-mcp holding it
    /// reads the others' states; distinct from the key itself by its label.
    pub fn derived(secret: &[u8]) -> Key {
        let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(b"skeleton-crew sc-mcp requestState v1");
        Key(mac.finalize().into_bytes().into())
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(payload);
        mac
    }

    pub(crate) fn seal(&self, state: &HeldState) -> String {
        let payload = serde_json::to_vec(state).expect("a state serializes");
        let tag = self.mac(&payload).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Opens a presented state, checking its seal first (in constant time), then that it is
    /// for this principal, this call, this policy, this door and spent where this sc-mcp spends
    /// (`spent_at`), and not past its expiry at `now`.
    pub(crate) fn open(
        &self,
        sealed: &str,
        principal: &str,
        call: &str,
        (policy, door, spent_at): (&str, &DoorBinding, &str),
        now: SystemTime,
    ) -> Result<HeldState, StateRefused> {
        let (payload, tag) = sealed.split_once('.').ok_or(StateRefused::Tampered)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| StateRefused::Tampered)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateRefused::Tampered)?;
        self.mac(&payload)
            .verify_slice(&tag)
            .map_err(|_| StateRefused::Tampered)?;
        let state: HeldState =
            serde_json::from_slice(&payload).map_err(|_| StateRefused::Tampered)?;
        if state.principal != principal {
            return Err(StateRefused::OtherPrincipal(state.principal));
        }
        if state.policy != policy {
            return Err(StateRefused::OtherPolicy);
        }
        if state.door.server != door.server {
            return Err(StateRefused::OtherServer);
        }
        if state.door.sandbox != door.sandbox {
            return Err(StateRefused::OtherSandbox);
        }
        if state.door.asking != door.asking {
            return Err(StateRefused::OtherAsking);
        }
        if state.spent_at != spent_at {
            return Err(StateRefused::OtherPlace);
        }
        if state.call != call {
            return Err(StateRefused::OtherCall);
        }
        let now = millis(now);
        if now >= state.expires {
            return Err(StateRefused::Expired((now - state.expires) / 1000));
        }
        Ok(state)
    }
}

pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

/// A fresh nonce: 128 random bits as hex.
pub(crate) fn nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(crate::hex::encode(bytes))
}

/// The digest a state binds a call by: SHA-256 of `[tool, arguments]` as serde_json writes it
/// (object members in the order read; the retry carries the same arguments, as the spec asks).
pub(crate) fn call_digest(tool: &str, arguments: &Value) -> String {
    let text = serde_json::to_vec(&(tool, arguments)).expect("JSON serializes");
    crate::hex::encode(Sha256::digest(text))
}

/// The digest a state binds the policy by: SHA-256 of what the policy was made of (the policy
/// file's bytes, or that there is none, and the places it was given), each part length-prefixed.
pub fn policy_digest(parts: &[&[u8]]) -> String {
    let mut digest = Sha256::new();
    for part in parts {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    crate::hex::encode(digest.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn door() -> DoorBinding {
        DoorBinding {
            server: DoorBinding::server_command(&["srv".into(), "a b".into()]),
            sandbox: false,
            asking: "wherever(elicitation=true,web=false)".into(),
        }
    }

    fn place() -> String {
        spent_in_crew("sqlite:/srv/state.sqlite", "x")
    }

    fn state(expires: u64) -> HeldState {
        HeldState {
            nonce: nonce().unwrap(),
            call_id: "mcp-1".into(),
            principal: "fs".into(),
            tool: "write_file".into(),
            call: call_digest("write_file", &json!({"path": "a"})),
            policy: "p1".into(),
            door: door(),
            spent_at: place(),
            expires,
            reasons: vec!["write_file is held".into()],
            scopes: vec![Scope::Once],
            grantable: None,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_its_principal_call_policy_and_time() {
        let key = Key::random().unwrap();
        let now = SystemTime::now();
        let held = state(millis(now) + 60_000);
        let sealed = key.seal(&held);
        let call = held.call.clone();
        assert_eq!(
            key.open(&sealed, "fs", &call, ("p1", &door(), &place()), now)
                .unwrap(),
            held
        );
        assert_eq!(
            key.open(&sealed, "other", &call, ("p1", &door(), &place()), now),
            Err(StateRefused::OtherPrincipal("fs".into()))
        );
        assert_eq!(
            key.open(&sealed, "fs", &call, ("p2", &door(), &place()), now),
            Err(StateRefused::OtherPolicy)
        );
        let other = call_digest("write_file", &json!({"path": "b"}));
        assert_eq!(
            key.open(&sealed, "fs", &other, ("p1", &door(), &place()), now),
            Err(StateRefused::OtherCall)
        );
        let later = now + Duration::from_secs(120);
        assert!(matches!(
            key.open(&sealed, "fs", &call, ("p1", &door(), &place()), later),
            Err(StateRefused::Expired(59 | 60))
        ));
        // Another server, sandbox setting or way of asking.
        let server = DoorBinding {
            server: DoorBinding::server_command(&["srv".into(), "a".into(), "b".into()]),
            ..door()
        };
        assert_eq!(
            key.open(&sealed, "fs", &call, ("p1", &server, &place()), now),
            Err(StateRefused::OtherServer)
        );
        let upstream = DoorBinding {
            server: DoorBinding::server_url("http://127.0.0.1:1/mcp"),
            ..door()
        };
        assert_eq!(
            key.open(&sealed, "fs", &call, ("p1", &upstream, &place()), now),
            Err(StateRefused::OtherServer)
        );
        let sandboxed = DoorBinding {
            sandbox: true,
            ..door()
        };
        assert_eq!(
            key.open(&sealed, "fs", &call, ("p1", &sandboxed, &place()), now),
            Err(StateRefused::OtherSandbox)
        );
        let asking = DoorBinding {
            asking: "only-the-human".into(),
            ..door()
        };
        assert_eq!(
            key.open(&sealed, "fs", &call, ("p1", &asking, &place()), now),
            Err(StateRefused::OtherAsking)
        );
        // Spent elsewhere: another crew, another store, an sc-mcp's memory, another sc-mcp's.
        for elsewhere in [
            spent_in_crew("sqlite:/srv/state.sqlite", "y"),
            spent_in_crew("sqlite:/other/state.sqlite", "x"),
            spent_in_memory("0123"),
            spent_in_process("0123", "x"),
            spent_in_crew("memory (this process)", "x"),
        ] {
            assert_eq!(
                key.open(&sealed, "fs", &call, ("p1", &door(), &elsewhere), now),
                Err(StateRefused::OtherPlace)
            );
        }
        assert_ne!(spent_in_memory("0123"), spent_in_memory("0124"));
        // A listener's memory store: its own process's, and each owner's spent tokens apart.
        assert_ne!(spent_in_process("0123", "x"), spent_in_process("0124", "x"));
        assert_ne!(spent_in_process("0123", "x"), spent_in_process("0123", "y"));
        assert_ne!(spent_in_process("0123", "x"), spent_in_memory("0123"));
        // Another key, a flipped byte, a forged payload with its own tag: all tampered.
        let other_key = Key::random().unwrap();
        assert_eq!(
            other_key.open(&sealed, "fs", &call, ("p1", &door(), &place()), now),
            Err(StateRefused::Tampered)
        );
        let (payload, tag) = sealed.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        let text = String::from_utf8(bytes.clone())
            .unwrap()
            .replace("\"fs\"", "\"fx\"");
        bytes = text.into_bytes();
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(
            key.open(&forged, "fx", &call, ("p1", &door(), &place()), now),
            Err(StateRefused::Tampered)
        );
        for garbage in ["", ".", "abc", "a.b.c", "!!.!!"] {
            assert_eq!(
                key.open(garbage, "fs", &call, ("p1", &door(), &place()), now),
                Err(StateRefused::Tampered)
            );
        }
    }

    #[test]
    fn a_derived_key_is_the_same_for_the_same_secret_and_never_the_secret() {
        let now = SystemTime::now();
        let held = state(millis(now) + 60_000);
        let sealed = Key::derived(b"secret").seal(&held);
        assert!(Key::derived(b"secret")
            .open(&sealed, "fs", &held.call, ("p1", &door(), &place()), now)
            .is_ok());
        assert_eq!(
            Key::derived(b"other").open(&sealed, "fs", &held.call, ("p1", &door(), &place()), now),
            Err(StateRefused::Tampered)
        );
        assert_eq!(
            format!("{:?}", Key::derived(b"secret")),
            "requestState::Key(<secret>)"
        );
    }
}
