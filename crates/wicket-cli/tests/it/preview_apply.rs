//! A preview applies exactly what its card showed (round 5), through the
//! binary.

use crate::preview::{fixture, previewed, result};
use crate::*;

/// The change the card lists at `path`.
fn change<'c>(card: &'c Value, path: &str) -> &'c Value {
    card["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|change| change["path"] == path)
        .unwrap_or_else(|| panic!("no change at {path}: {card}"))
}

#[test]
fn a_relative_wicket_home_previews_as_an_absolute_one() {
    let f = fixture();
    let arguments = json!({"argv": ["sh", "-c", "echo made > made.txt"], "preview": true});
    let events = crate::preview::previewed_by(
        &f,
        arguments,
        "apply",
        |card| assert_eq!(change(card, "made.txt")["change"], "created", "{card:#}"),
        |command| {
            command.env("WICKET_HOME", "home").current_dir(&f.root);
        },
    );
    let result = result(&events);
    assert_eq!(result["ok"], true, "{result:#}");
    assert_eq!(result["output"]["preview"], "applied", "{result:#}");
    assert_eq!(f.read("made.txt"), "made\n");
    assert!(
        f.home.join("sessions").is_dir(),
        "the home is the one named"
    );
}
