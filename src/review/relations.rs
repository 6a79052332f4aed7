//! Changes to the relations of models both configs declare (local models, and remote models,
//! whose children are local). A relation is the same in both when it joins the same parent and
//! child by the same columns; a child joined by other columns is a relation whose columns
//! changed. The relations of an added or removed model come and go with it (its own change says
//! so).

use super::models::describe_strategy;
use super::{ChangeKind as Kind, Draft, Found, Severity};
use crate::config::{Key, Located, Model, OnDelete, Relation, RemoteModel, Strategy, describe_columns};
use crate::diagnostic::Location;

pub(super) fn compare(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    for (name, after) in &head.models {
        if let Some(before) = base.models.get(name) {
            compare_parent(found, name, &Parent::local(before), &Parent::local(after));
        }
    }
    for (name, after) in &head.remote_models {
        if let Some(before) = base.remote_models.get(name) {
            compare_parent(found, name, &Parent::remote(before), &Parent::remote(after));
        }
    }
}

/// What the comparison of relations needs of their parent, a local or a remote model.
struct Parent<'a> {
    key: Option<&'a Located<Key>>,
    children: &'a [Relation],
    /// Where the model is declared.
    location: &'a Location,
}

impl<'a> Parent<'a> {
    fn local(model: &'a Model) -> Self {
        Self { key: model.key.as_ref(), children: &model.children, location: &model.name.location }
    }

    fn remote(model: &'a RemoteModel) -> Self {
        Self { key: model.key.as_ref(), children: &model.children, location: &model.name.location }
    }
}

fn compare_parent(found: &mut Found<'_>, parent: &str, before: &Parent<'_>, after: &Parent<'_>) {
    let pairs = pair(before.children, after.children);
    let mut kept_order = Vec::new();
    for pair in &pairs {
        match *pair {
            Pair::Same(old, new) => {
                kept_order.push((old, new));
                compare_relation(found, parent, before, after, &before.children[old], &after.children[new]);
            }
            Pair::Added(new) => added(found, parent, &after.children[new]),
            Pair::Removed(old) => removed(found, parent, &before.children[old]),
        }
    }
    // Relations run in declared order: the same relations in another order run in another.
    kept_order.sort_by_key(|(_, new)| *new);
    if kept_order.windows(2).any(|w| w[0].0 > w[1].0) {
        let order = |children: &[Relation], indexes: Vec<usize>| -> Vec<String> {
            indexes.into_iter().map(|index| children[index].model.value.clone()).collect()
        };
        let mut old_indexes: Vec<usize> = kept_order.iter().map(|(old, _)| *old).collect();
        old_indexes.sort_unstable();
        let new_indexes: Vec<usize> = kept_order.iter().map(|(_, new)| *new).collect();
        let draft = Draft::new(
            Severity::Safe,
            Kind::RelationOrderChanged,
            format!("the children of `{parent}` are deleted in another order: the same rows"),
        )
        .model(parent)
        .values(order(before.children, old_indexes), order(after.children, new_indexes));
        let location = after.children.first().map_or(after.location, |relation| &relation.location);
        found.add(draft, Some(location), None);
    }
}

/// How the relations of one parent in the base and in the head correspond.
enum Pair {
    /// The same relation: base index, head index.
    Same(usize, usize),
    /// Only in the head.
    Added(usize),
    /// Only in the base.
    Removed(usize),
}

/// Pairs relations to the same child by the same columns, then the rest of the same child in
/// order (their columns changed); what is left was added or removed. In the head's order, the
/// removed ones last.
fn pair(before: &[Relation], after: &[Relation]) -> Vec<Pair> {
    let mut matched_old: Vec<Option<usize>> = vec![None; after.len()];
    let mut taken = vec![false; before.len()];
    let exact = |a: &Relation, b: &Relation| a.model.value == b.model.value && a.column_names() == b.column_names();
    let same_child = |a: &Relation, b: &Relation| a.model.value == b.model.value;
    for matches in [exact as fn(&Relation, &Relation) -> bool, same_child] {
        for (new, relation) in after.iter().enumerate() {
            if matched_old[new].is_some() {
                continue;
            }
            if let Some(old) = (0..before.len()).find(|&old| !taken[old] && matches(&before[old], relation)) {
                taken[old] = true;
                matched_old[new] = Some(old);
            }
        }
    }
    let mut pairs: Vec<Pair> = matched_old
        .iter()
        .enumerate()
        .map(|(new, old)| match old {
            Some(old) => Pair::Same(*old, new),
            None => Pair::Added(new),
        })
        .collect();
    pairs.extend(taken.iter().enumerate().filter(|(_, taken)| !**taken).map(|(old, _)| Pair::Removed(old)));
    pairs
}

/// `parent → child (columns)`, as reports name a relation.
pub(super) fn describe(parent: &str, relation: &Relation) -> String {
    format!("{parent} → {} ({})", relation.model.value, relation.column_names().join(", "))
}

fn added(found: &mut Found<'_>, parent: &str, relation: &Relation) {
    let child = &relation.model.value;
    let reason = match relation.action() {
        OnDelete::Delete => format!(
            "deleting `{parent}` rows now deletes the `{child}` rows whose {} references them, and everything below",
            relation.describe_columns()
        ),
        OnDelete::Nullify => {
            format!("deleting `{parent}` rows now sets {} of their `{child}` rows to NULL", relation.describe_columns())
        }
        OnDelete::Database => format!(
            "deleting `{parent}` rows now counts the `{child}` rows the database deletes with them (its foreign key \
             is ON DELETE CASCADE)"
        ),
    };
    // Rows the database deletes went before the relation was declared: now they are counted.
    let severity = if relation.action() == OnDelete::Database { Severity::Attention } else { Severity::Destructive };
    let draft = Draft::new(severity, Kind::RelationAdded, reason)
        .model(parent)
        .relation(parent, relation)
        .values((), relation.action().as_str());
    found.add(draft, Some(&relation.location), None);
}

fn removed(found: &mut Found<'_>, parent: &str, relation: &Relation) {
    let child = &relation.model.value;
    let reason = match relation.action() {
        OnDelete::Delete => format!(
            "deleting `{parent}` rows no longer deletes their `{child}` rows: they stay (or their foreign key refuses \
             the deletion)"
        ),
        OnDelete::Nullify => format!(
            "deleting `{parent}` rows no longer sets {} of their `{child}` rows to NULL",
            relation.describe_columns()
        ),
        OnDelete::Database => format!(
            "deleting `{parent}` rows no longer counts their `{child}` rows: the database still deletes them if its \
             foreign key says so"
        ),
    };
    let draft = Draft::new(Severity::Attention, Kind::RelationRemoved, reason)
        .model(parent)
        .relation(parent, relation)
        .values(relation.action().as_str(), ());
    found.add(draft, None, Some(&relation.location));
}

fn compare_relation(
    found: &mut Found<'_>,
    parent: &str,
    parent_before: &Parent<'_>,
    parent_after: &Parent<'_>,
    before: &Relation,
    after: &Relation,
) {
    let child = &after.model.value;
    let change =
        |severity, kind, reason: String| Draft::new(severity, kind, reason).model(parent).relation(parent, after);
    // The same (column, referenced column) pairs in another order find the same rows.
    let pairs = |relation: &Relation, parent: &Parent<'_>| {
        let mut pairs: Vec<(String, String)> =
            relation.column_names().into_iter().zip(relation.referenced_by(parent.key)).collect();
        pairs.sort();
        pairs
    };
    let same_pairs = pairs(before, parent_before) == pairs(after, parent_after);
    if !same_pairs && before.column_names() != after.column_names() {
        let draft = change(
            Severity::Destructive,
            Kind::RelationColumnsChanged,
            format!(
                "`{child}` rows are found by {} instead of {}: other rows",
                after.describe_columns(),
                before.describe_columns()
            ),
        )
        .values(before.column_names(), after.column_names());
        found.add(draft, Some(&after.columns_location()), None);
    }
    let (referenced_before, referenced_after) =
        (before.referenced_by(parent_before.key), after.referenced_by(parent_after.key));
    if !same_pairs && referenced_before != referenced_after {
        let draft = change(
            Severity::Destructive,
            Kind::RelationColumnsChanged,
            format!(
                "`{child}` rows reference `{parent}`'s {} instead of {}: other rows",
                describe_columns(&referenced_after),
                describe_columns(&referenced_before)
            ),
        )
        .values(&referenced_before, &referenced_after);
        let location = after.references.as_ref().map_or(&after.location, |r| &r.location);
        found.add(draft, Some(location), None);
    }
    let (action_before, action_after) = (before.action(), after.action());
    if action_before != action_after {
        let (severity, reason) = match action_after {
            OnDelete::Database => (
                // Kept rows that now go are destructive; deleted rows that now go by the database
                // are the same rows, with what is below them left to its foreign keys.
                if action_before == OnDelete::Nullify { Severity::Destructive } else { Severity::Attention },
                format!(
                    "the database now deletes the `{child}` rows with their `{parent}` (ON DELETE CASCADE), and what \
                     is below them only by its own foreign keys; cascade counts them"
                ),
            ),
            OnDelete::Delete if action_before == OnDelete::Database => (
                Severity::Attention,
                format!(
                    "cascade now deletes the `{child}` rows itself, before their `{parent}`, and everything below them, \
                     instead of leaving them to the database"
                ),
            ),
            OnDelete::Delete => (
                Severity::Destructive,
                format!(
                    "`{child}` rows were kept with {} set to NULL; now they are deleted with their `{parent}`, and \
                     everything below them",
                    after.describe_columns()
                ),
            ),
            OnDelete::Nullify => (
                Severity::Attention,
                format!(
                    "`{child}` rows are kept with {} set to NULL instead of deleted with their `{parent}`",
                    after.describe_columns()
                ),
            ),
        };
        let draft =
            change(severity, Kind::OnDeleteChanged, reason).values(action_before.as_str(), action_after.as_str());
        let location = after.on_delete.as_ref().map_or(&after.location, |a| &a.location);
        found.add(draft, Some(location), None);
    }
    let strategy = |relation: &Relation| relation.strategy.as_ref().map(|s| s.value);
    if strategy(before) != strategy(after) {
        let reason = match strategy(after) {
            Some(new) => format!("`{child}` rows under `{parent}` go {}: the same rows", describe_strategy(new)),
            None => format!("`{child}` rows under `{parent}` go as the `{child}` model says: the same rows"),
        };
        let draft = change(Severity::Safe, Kind::RelationStrategyChanged, reason)
            .values(strategy(before).map(Strategy::as_str), strategy(after).map(Strategy::as_str));
        let location = after.strategy.as_ref().map_or(&after.location, |s| &s.location);
        found.add(draft, Some(location), None);
    }
    let chunk = |relation: &Relation| relation.chunk_size.as_ref().map(|c| c.value);
    if chunk(before) != chunk(after) {
        let reason = match chunk(after) {
            Some(rows) => format!("`{child}` rows under `{parent}` go {rows} per transaction: the same rows"),
            None => format!("`{child}` rows under `{parent}` go in the `{child}` model's chunks: the same rows"),
        };
        let draft = change(Severity::Safe, Kind::RelationChunkSizeChanged, reason).values(chunk(before), chunk(after));
        let location = after.chunk_size.as_ref().map_or(&after.location, |c| &c.location);
        found.add(draft, Some(location), None);
    }
}
