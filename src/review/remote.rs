//! Changes to the remote models: added, removed, or reading another category. A remote model's
//! relations are compared with every model's (`relations.rs`).

use super::{ChangeKind as Kind, Draft, Found, Severity};

pub(super) fn compare(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    for (name, model) in &head.remote_models {
        let category = &model.remote.category;
        let Some(before) = base.remote_models.get(name) else {
            let draft = Draft::new(
                Severity::Destructive,
                Kind::ModelAdded,
                format!(
                    "`{name}` is a remote model: each `{}` tombstone received, those waiting in the inbox too, now \
                     deletes the local rows its relations name",
                    category.value
                ),
            )
            .model(name)
            .values((), &category.value);
            found.add(draft, Some(&model.name.location), None);
            continue;
        };
        if before.remote.category.value != category.value {
            let draft = Draft::new(
                Severity::Destructive,
                Kind::RemoteCategoryChanged,
                format!(
                    "`{name}` reads `{}` tombstones instead of `{}`: other deletions reach its children, and `{}` \
                     tombstones wait in the inbox",
                    category.value, before.remote.category.value, before.remote.category.value
                ),
            )
            .model(name)
            .values(&before.remote.category.value, &category.value);
            found.add(draft, Some(&category.location), None);
        }
    }
    for (name, model) in base.remote_models.iter().filter(|(name, _)| !head.remote_models.contains_key(*name)) {
        let category = &model.remote.category.value;
        let draft = Draft::new(
            Severity::Attention,
            Kind::ModelRemoved,
            format!(
                "remote model `{name}` is no longer declared: `{category}` tombstones wait in the inbox, and the local \
                 rows naming a deleted `{name}` stay"
            ),
        )
        .model(name)
        .values(category, ());
        found.add(draft, None, Some(&model.name.location));
    }
}
