//! `peer-category-unsent` and `peer-category-mismatch`, for `validate --peer DIR`: each remote
//! model's category checked against the sending database's config, so that both sides agree
//! before any tombstone travels. A category that no peer writes is unsent; one that a peer
//! writes must be written there by one model whose key is the remote model's `key`, registered
//! in one scope, and delivered by a sink.

use crate::config::{Config, Located, Model, RemoteModel, Scope};
use crate::diagnostic::{Code, Diagnostic, Location, did_you_mean};

/// A peer's config, its files added to the receiver's sources: `relocate` turns a location in
/// the peer's own sources into the receiver's.
pub(crate) struct Peer<'a> {
    /// The directory as given.
    pub name: &'a str,
    pub config: &'a Config,
    pub relocate: &'a dyn Fn(&Location) -> Location,
}

pub(crate) fn check(config: &Config, peers: &[Peer<'_>], diagnostics: &mut Vec<Diagnostic>) {
    for model in config.remote_models.values() {
        let category = &model.remote.category.value;
        let mut written = false;
        for peer in peers {
            let writers: Vec<(&Model, &Located<String>)> = peer
                .config
                .models
                .values()
                .filter_map(|writer| writer.outbox.as_ref().map(|outbox| (writer, outbox)))
                .filter(|(_, outbox)| &outbox.value == category)
                .collect();
            let Some((_, written_at)) = writers.first() else { continue };
            written = true;
            check_delivery(model, peer, written_at, diagnostics);
            check_writers(model, peer, &writers, diagnostics);
        }
        if !written {
            diagnostics.push(unwritten(model, peers));
        }
    }
}

/// No peer's model writes the category.
fn unwritten(model: &RemoteModel, peers: &[Peer<'_>]) -> Diagnostic {
    let category = &model.remote.category;
    let names: Vec<&str> = peers.iter().map(|peer| peer.name).collect();
    let mut diagnostic = Diagnostic::new(
        Code::PeerCategoryUnsent,
        category.location.clone(),
        format!("no model of the peer `{}` writes category `{}`", names.join("`, `"), category.value),
    )
    .label("never sent");
    let written = peers.iter().flat_map(|peer| peer.config.models.values().filter_map(|m| m.outbox.as_ref()));
    let written: Vec<&str> = written.map(|outbox| outbox.value.as_str()).collect();
    diagnostic = match did_you_mean(&category.value, written.iter().copied()) {
        Some(suggestion) => diagnostic.help(suggestion),
        None => diagnostic.help("a model of the sending config writes it with `outbox = \"...\"`; give its directory"),
    };
    for peer in peers {
        let scopes = peer.config.outbox.scopes.values();
        for registered in scopes.flat_map(|scope| &scope.categories).filter(|c| c.value == category.value) {
            diagnostic =
                diagnostic.related((peer.relocate)(&registered.location), "registered here, but no model writes it");
        }
    }
    diagnostic
}

/// One model writes it, keyed by the remote model's key.
fn check_writers(
    model: &RemoteModel,
    peer: &Peer<'_>,
    writers: &[(&Model, &Located<String>)],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let category = &model.remote.category;
    let [(writer, _)] = writers else {
        let [(first, first_at), (second, second_at), ..] = writers else { return };
        diagnostics.push(
            Diagnostic::new(
                Code::PeerCategoryMismatch,
                category.location.clone(),
                format!(
                    "the peer `{}` writes category `{}` from models `{}` and `{}`: their keys would be applied as one model's",
                    peer.name, category.value, first.name.value, second.name.value
                ),
            )
            .label("read as one model's keys")
            .related((peer.relocate)(&first_at.location), "written here")
            .related((peer.relocate)(&second_at.location), "and here")
            .help("give each model of the peer its own category, and the receiver a remote model per category"),
        );
        return;
    };
    let expected = model.key.as_ref().map_or("id", |key| key.value.single().unwrap_or("id"));
    let (sent, at) = match &writer.key {
        Some(key) => (key.value.columns().join(", "), key.location.clone()),
        None => ("id".to_owned(), writer.name.location.clone()),
    };
    if sent != expected {
        let at_key = model.key.as_ref().map_or(&category.location, |key| &key.location);
        diagnostics.push(
            Diagnostic::new(
                Code::PeerCategoryMismatch,
                at_key.clone(),
                format!(
                    "remote model `{}` reads its keys as `{expected}`, but the peer's `{}` sends `{sent}` in category `{}`",
                    model.name.value, writer.name.value, category.value
                ),
            )
            .label("another column")
            .related((peer.relocate)(&at), "the key its tombstones carry")
            .help(format!("set `key = \"{sent}\"` on the remote model if its children name that column")),
        );
    }
}

/// Registered in one scope, which has a sink for it.
fn check_delivery(
    model: &RemoteModel,
    peer: &Peer<'_>,
    written_at: &Located<String>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let category = &model.remote.category;
    let scopes = scopes_of(peer.config, &category.value);
    let unsent = |message: String, help: &str| {
        Diagnostic::new(Code::PeerCategoryUnsent, category.location.clone(), message)
            .label("never delivered")
            .help(help.to_owned())
    };
    match scopes.as_slice() {
        [] => diagnostics.push(
            unsent(
                format!(
                    "the peer `{}` registers category `{}` in no scope: it never leaves its outbox",
                    peer.name, category.value
                ),
                "add the category to a scope's `categories` in the peer's config",
            )
            .related((peer.relocate)(&written_at.location), "written here"),
        ),
        [scope] if !delivers(scope, &category.value) => diagnostics.push(
            unsent(
                format!(
                    "the peer's scope `{}` has no sink for category `{}`: its tombstones wait in the peer's outbox",
                    scope.name.value, category.value
                ),
                "give the scope a `sink` (or a `category_sinks` entry) that reaches this database's inbox",
            )
            .related((peer.relocate)(&scope.name.location), "the scope"),
        ),
        [_] => {}
        [first, second, ..] => diagnostics.push(
            Diagnostic::new(
                Code::PeerCategoryMismatch,
                category.location.clone(),
                format!(
                    "the peer `{}` registers category `{}` in scopes `{}` and `{}`",
                    peer.name, category.value, first.name.value, second.name.value
                ),
            )
            .label("registered twice there")
            .related((peer.relocate)(&first.name.location), "one scope")
            .related((peer.relocate)(&second.name.location), "another")
            .help("register each category in one scope of the peer"),
        ),
    }
}

fn scopes_of<'c>(config: &'c Config, category: &str) -> Vec<&'c Scope> {
    config.outbox.scopes.values().filter(|scope| scope.categories.iter().any(|c| c.value == category)).collect()
}

/// Whether `scope` hands `category` to a sink.
fn delivers(scope: &Scope, category: &str) -> bool {
    scope.sink.is_some() || scope.category_sinks.contains_key(category) || !scope.cell_sinks.is_empty()
}

#[cfg(test)]
mod tests {
    use crate::config::load_sources;
    use crate::diagnostic::{Format, Report, Sources};

    fn loaded(name: &str, toml: &str) -> crate::config::Loaded {
        let mut sources = Sources::default();
        sources.add(name, toml);
        load_sources(sources)
    }

    const RECEIVER: &str = r#"[models.organization]
remote = { category = "organization_deleted" }
key = "uuid"
children = [{ model = "member", column = "organization_id" }]

[models.member]
table = "member"
"#;

    const SENDER: &str = r#"[models.organization]
table = "organization"
outbox = "organization_deleted"

[outbox.scopes.control]
shard_key = "id"
categories = ["organization_deleted"]
"#;

    /// Each side's place is shown: the remote model's line, and the peer's file and line.
    #[test]
    fn shows_the_peers_side_too() {
        let mut receiver = loaded("receiver/cascade.toml", RECEIVER);
        let peers = [("sender".to_owned(), loaded("sender/cascade.toml", SENDER))];
        crate::planner::check_peers(&mut receiver, &peers);
        let report = Report { sources: &receiver.sources, diagnostics: &receiver.diagnostics };
        insta::assert_snapshot!(report.render(Format::Human, false));
    }
}
