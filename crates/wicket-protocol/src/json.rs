//! JSON for what is shown (a card, a listing, a model's tool result): a
//! value that cannot be encoded says so in words, never shows as nothing
//! or as `null`. What is written to disk never goes through here: there a
//! value that cannot be encoded is an error and nothing is written.

use serde::Serialize;

/// `value` as compact JSON text.
pub fn text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| unencodable(&error))
}

/// `value` as pretty JSON text.
pub fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|error| unencodable(&error))
}

/// `value` as a JSON value (a string saying why, when it cannot be one).
pub fn value(value: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(value)
        .unwrap_or_else(|error| serde_json::Value::String(unencodable(&error)))
}

fn unencodable(error: &serde_json::Error) -> String {
    format!("(this value could not be encoded as JSON: {error})")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    #[test]
    fn a_value_that_cannot_be_encoded_says_so() {
        // A map with non-string keys has no JSON form.
        let odd: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        assert!(super::text(&odd).contains("could not be encoded"));
        assert!(super::pretty(&odd).contains("could not be encoded"));
        assert!(
            super::value(&odd)
                .as_str()
                .unwrap()
                .contains("could not be encoded")
        );
        assert_eq!(super::text(&[1, 2]), "[1,2]");
    }
}
