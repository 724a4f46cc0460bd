//! Typed ids: a session's and a card's are different types, so that no
//! call can take one for the other (`answer(session, card, …)` with the two
//! swapped does not compile). On the wire and in the log each is its string.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> $name {
                $name(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> $name {
                $name(id.to_string())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

id!(
    /// A session's id: the name of its folder under `$WICKET_HOME/sessions`.
    SessionId
);

id!(
    /// A card's id, unique for the life of its session.
    CardId
);

id!(
    /// A tool call's id, as the model gave it (or as Wicket made it for a
    /// call it starts itself).
    CallId
);

id!(
    /// A question's id (the model's `ask`), unique for the life of its session.
    QuestionId
);

id!(
    /// A rule's id: `r-…` for a saved one, `workspace:…` for a repository's.
    RuleId
);

id!(
    /// A session grant's id: `g-` and a hash of what it covers.
    GrantId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_string_on_the_wire() {
        let card = CardId::from("card-1");
        assert_eq!(serde_json::to_string(&card).unwrap(), r#""card-1""#);
        let back: SessionId = serde_json::from_str(r#""s-1""#).unwrap();
        assert_eq!(back, "s-1");
        assert_eq!(back.to_string(), "s-1");
    }
}
