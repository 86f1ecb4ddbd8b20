//! Who an HTTP client of `sc-mcp --listen` is: the token it presents, never what it says.
//!
//! Each token carries a label (`--token-file`'s is `--agent`'s name, each `--client NAME=FILE`'s
//! is NAME). A request's principal is its token's label, or, with `--agent-header`, the name the
//! client gives there: a label the client chooses, not a credential. So that one token cannot act
//! as a principal another token established, every name belongs to the token that first used it
//! (each label to its own token from the start), and a request naming an agent another token owns
//! is refused. With `one_name` (`--crew`, where taint is kept per name in the crew's store), a
//! token may use one name only: switching names would shed the taint the first one carries.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use subtle::ConstantTimeEq;

/// One token and its label.
#[derive(Debug, Clone)]
pub struct Client {
    pub label: String,
    pub token: String,
}

/// The agent a request is made for, and the label of the token it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub agent: String,
    pub label: String,
}

/// Why the clients given cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    #[error("two clients are named {0:?}")]
    SameLabel(String),
    #[error("clients {0:?} and {1:?} have the same token")]
    SameToken(String, String),
}

/// Why a request's agent name is refused.
#[derive(Debug, thiserror::Error)]
pub enum NameRefused {
    #[error("the {0} header is not an agent name (letters, digits, . _ - @; at most 64)")]
    NotAName(HeaderName),
    #[error("more than one {0} header")]
    Twice(HeaderName),
    #[error("agent {0:?} belongs to another client's token")]
    Taken(String),
    #[error("this token acts as agent {0:?} (with --crew a token names one agent: give each agent a token of its own with --client)")]
    OneName(String),
}

/// Letters, digits, `.`, `_`, `-`, `@`; at most 64.
pub fn is_agent_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
}

pub struct Principals {
    clients: Vec<Client>,
    header: Option<HeaderName>,
    one_name: bool,
    /// Each name used, and the client whose token owns it.
    owners: Mutex<HashMap<String, usize>>,
    /// With `one_name`: the name each client's token acts as.
    named: Mutex<HashMap<usize, String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Principals {
    pub fn new(
        clients: Vec<Client>,
        header: Option<HeaderName>,
        one_name: bool,
    ) -> Result<Principals, ClientsError> {
        let mut owners = HashMap::new();
        for (index, client) in clients.iter().enumerate() {
            if owners.insert(client.label.clone(), index).is_some() {
                return Err(ClientsError::SameLabel(client.label.clone()));
            }
            if let Some(other) = clients[..index]
                .iter()
                .find(|other| other.token == client.token)
            {
                return Err(ClientsError::SameToken(
                    other.label.clone(),
                    client.label.clone(),
                ));
            }
        }
        Ok(Principals {
            clients,
            header,
            one_name,
            owners: Mutex::new(owners),
            named: Mutex::new(HashMap::new()),
        })
    }

    /// The client whose token the one `Authorization: Bearer TOKEN` header carries. Every token
    /// is compared, each in constant time.
    pub fn client(&self, headers: &HeaderMap) -> Option<usize> {
        let given = bearer(headers)?;
        let mut found = None;
        for (index, client) in self.clients.iter().enumerate() {
            if bool::from(given.as_bytes().ct_eq(client.token.as_bytes())) {
                found = Some(index);
            }
        }
        found
    }

    /// The label of a client's token.
    pub fn label(&self, client: usize) -> &str {
        &self.clients[client].label
    }

    /// The principal a request with `client`'s token is made for.
    pub fn principal(&self, client: usize, headers: &HeaderMap) -> Result<Principal, NameRefused> {
        let label = &self.clients[client].label;
        let agent = match &self.header {
            None => label.clone(),
            Some(name) => {
                let values: Vec<&HeaderValue> = headers.get_all(name).iter().collect();
                match values.as_slice() {
                    [] => label.clone(),
                    [value] => match value.to_str() {
                        Ok(text) if is_agent_name(text) => text.to_owned(),
                        _ => return Err(NameRefused::NotAName(name.clone())),
                    },
                    _ => return Err(NameRefused::Twice(name.clone())),
                }
            }
        };
        let mut owners = lock(&self.owners);
        if let Some(&owner) = owners.get(&agent) {
            if owner != client {
                return Err(NameRefused::Taken(agent));
            }
        }
        if self.one_name {
            let mut named = lock(&self.named);
            match named.get(&client) {
                Some(bound) if *bound != agent => return Err(NameRefused::OneName(bound.clone())),
                Some(_) => {}
                None => {
                    named.insert(client, agent.clone());
                }
            }
        }
        owners.insert(agent.clone(), client);
        Ok(Principal {
            agent,
            label: label.clone(),
        })
    }
}

/// The token of the one `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(token: &str, agent: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        if let Some(agent) = agent {
            headers.insert("x-agent", HeaderValue::from_str(agent).unwrap());
        }
        headers
    }

    fn two(one_name: bool) -> Principals {
        Principals::new(
            vec![
                Client {
                    label: "alice".into(),
                    token: "token-a".into(),
                },
                Client {
                    label: "bob".into(),
                    token: "token-b".into(),
                },
            ],
            Some(HeaderName::from_static("x-agent")),
            one_name,
        )
        .unwrap()
    }

    /// Why a request has no agent.
    #[derive(Debug, thiserror::Error)]
    enum NoAgent {
        #[error("no client")]
        NoClient,
        #[error(transparent)]
        Refused(#[from] NameRefused),
    }

    fn agent_of(
        principals: &Principals,
        token: &str,
        agent: Option<&str>,
    ) -> Result<String, NoAgent> {
        let headers = request(token, agent);
        let client = principals.client(&headers).ok_or(NoAgent::NoClient)?;
        Ok(principals.principal(client, &headers)?.agent)
    }

    #[test]
    fn a_name_belongs_to_the_token_that_used_it_first() {
        let principals = two(false);
        assert_eq!(agent_of(&principals, "token-a", None).unwrap(), "alice");
        assert_eq!(agent_of(&principals, "token-a", Some("el")).unwrap(), "el");
        // Another token cannot take a name the first one established, nor another's label.
        assert!(agent_of(&principals, "token-b", Some("el"))
            .unwrap_err()
            .to_string()
            .contains("another client's token"));
        assert!(agent_of(&principals, "token-b", Some("alice")).is_err());
        assert_eq!(
            agent_of(&principals, "token-b", Some("ann")).unwrap(),
            "ann"
        );
        assert_eq!(agent_of(&principals, "token-a", Some("el")).unwrap(), "el");
        assert!(agent_of(&principals, "token-c", None).is_err());
        assert!(agent_of(&principals, "token-a", Some("not a name")).is_err());
    }

    #[test]
    fn with_one_name_a_token_cannot_switch_names() {
        let principals = two(true);
        assert_eq!(agent_of(&principals, "token-a", Some("el")).unwrap(), "el");
        assert!(agent_of(&principals, "token-a", Some("other"))
            .unwrap_err()
            .to_string()
            .contains("acts as agent \"el\""));
        assert!(agent_of(&principals, "token-a", None).is_err());
    }

    #[test]
    fn labels_and_tokens_are_each_given_once() {
        let client = |label: &str, token: &str| Client {
            label: label.into(),
            token: token.into(),
        };
        assert!(Principals::new(vec![client("a", "x"), client("a", "y")], None, false).is_err());
        assert!(Principals::new(vec![client("a", "x"), client("b", "x")], None, false).is_err());
    }
}
