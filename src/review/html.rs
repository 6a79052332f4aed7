//! A review as one self-contained HTML page (`diff --format html`): the changes, and for each
//! root whose deletions change, its base and head plans side by side, each drawn by
//! `render::html::plan_svg` with the changes marked where they act (removed relations and models
//! on the base's drawing, the rest on the head's).

use indexmap::IndexMap;
use minijinja::{AutoEscape, Value, context};
use serde::Serialize;

use super::{Change, ChangeKind, CountedRoots, Review, Severity};
use crate::planner::{CheckedConfig, compile};
use crate::render::html::{Highlights, Mark, plan_svg};
use crate::render::{Folding, PlanView};

/// At most this many roots are drawn (each twice); a review reaching more lists the rest by name.
pub const MAX_DRAWN_ROOTS: usize = 12;

/// Both checked configs, whose plans the page draws.
#[derive(Clone, Copy)]
pub struct Configs<'a> {
    /// The base's.
    pub base: &'a CheckedConfig,
    /// The head's.
    pub head: &'a CheckedConfig,
}

#[derive(Serialize)]
struct RootView {
    root: String,
    /// A remote model: its deletions start in another database, and have no plan here.
    remote: bool,
    counts: [usize; 3],
    base: Option<String>,
    head: Option<String>,
}

#[derive(Serialize)]
struct ChangeView<'a> {
    severity: &'static str,
    title: String,
    values: Option<String>,
    reason: &'a str,
    place: Option<String>,
    roots: &'a [String],
}

impl Review {
    /// The page: with `counts`, the counted root's plans with their rows; otherwise the plans of
    /// every root the changes reach (the first [`MAX_DRAWN_ROOTS`]).
    pub fn html(&self, configs: Configs<'_>, counts: Option<&CountedRoots<'_>>) -> Result<String, minijinja::Error> {
        let by_root = self.by_root();
        let roots: Vec<String> = match counts {
            Some(counted) => vec![counted.model.to_owned()],
            None => by_root.keys().take(MAX_DRAWN_ROOTS).cloned().collect(),
        };
        let undrawn: Vec<&String> =
            if counts.is_some() { Vec::new() } else { by_root.keys().skip(MAX_DRAWN_ROOTS).collect() };
        let ids: Vec<String> = counts.map(|counted| counted.ids.to_vec()).unwrap_or_default();
        let (base_marks, head_marks) = self.highlights();
        let mut drawn = Vec::new();
        for root in roots {
            let side_counts = |side: &str| {
                counts.and_then(|counted| {
                    if side == "base" { &counted.counts.base } else { &counted.counts.head }.steps.clone()
                })
            };
            drawn.push(RootView {
                counts: by_root.get(&root).copied().unwrap_or_default(),
                base: drawing(configs.base, &root, &ids, side_counts("base").as_ref(), &base_marks)?,
                head: drawing(configs.head, &root, &ids, side_counts("head").as_ref(), &head_marks)?,
                remote: [configs.base, configs.head].iter().any(|config| config.remote_models.contains_key(&root)),
                root,
            });
        }
        let changes: Vec<ChangeView> = self
            .changes
            .iter()
            .map(|change| ChangeView {
                severity: change.severity.as_str(),
                title: super::format::title(change),
                values: super::format::before_after(change),
                reason: &change.reason,
                place: change.location.as_ref().map(|place| {
                    let side = if place.side == "base" { " (base)" } else { "" };
                    format!("{}:{}:{}{side}", place.file, place.line, place.column)
                }),
                roots: &change.roots,
            })
            .collect();
        let rows: Vec<Value> = counts
            .map(|counted| {
                super::format::count_rows(counted.counts)
                    .into_iter()
                    .map(|row| context! { model => row.model, deleted => row.deleted, nullified => row.nullified })
                    .collect()
            })
            .unwrap_or_default();
        let mut environment = minijinja::Environment::new();
        environment.set_auto_escape_callback(|_| AutoEscape::Html);
        environment.add_template("diff.html", include_str!("templates/diff.html.j2"))?;
        environment.get_template("diff.html")?.render(context! {
            summary => self.summary(),
            counts => [Severity::Destructive, Severity::Attention, Severity::Safe].map(|s| self.count(s)),
            changes => changes,
            roots => drawn,
            undrawn => undrawn,
            counted => counts.map(|counted| context! { model => counted.model, ids => counted.ids }),
            rows => rows,
        })
    }

    /// What each side's drawings mark: what the head removed on the base's, the rest on the
    /// head's; a relation or model that changed on both, a setting, option, scope or sink on the
    /// head's models it applies to.
    fn highlights(&self) -> (Highlights, Highlights) {
        let (mut base, mut head) = (Highlights::default(), Highlights::default());
        for change in &self.changes {
            let mark = match change.severity {
                Severity::Destructive => Mark::Destructive,
                Severity::Attention => Mark::Attention,
                Severity::Safe => Mark::Safe,
            };
            let note = format!("{}: {}", change.severity.as_str(), change.reason);
            let removed = matches!(change.kind, ChangeKind::RelationRemoved | ChangeKind::ModelRemoved);
            let added = matches!(change.kind, ChangeKind::RelationAdded | ChangeKind::ModelAdded);
            // A setting, option, scope or sink acts where the head applies it.
            let about_a_model = change.relation_key.is_some() || change.model.is_some();
            let mut sides: Vec<&mut Highlights> = Vec::new();
            if !added && about_a_model {
                sides.push(&mut base);
            }
            if !removed {
                sides.push(&mut head);
            }
            for side in sides {
                mark_change(side, change, mark, &note);
            }
        }
        (base, head)
    }
}

fn mark_change(side: &mut Highlights, change: &Change, mark: Mark, note: &str) {
    match (&change.relation_key, &change.model) {
        (Some(relation), _) => {
            side.relation(relation.clone(), mark, note);
        }
        (None, Some(model)) => {
            side.model(model.clone(), mark, note);
        }
        (None, None) => {
            for model in &change.touches {
                side.model(model.clone(), mark, note);
            }
        }
    }
}

/// The plan of `root` in `config` drawn with `marks`; none when the config does not declare it.
fn drawing(
    config: &CheckedConfig,
    root: &str,
    ids: &[String],
    counts: Option<&crate::engine::Counts>,
    marks: &Highlights,
) -> Result<Option<String>, minijinja::Error> {
    if config.model(root).is_none() {
        return Ok(None);
    }
    let Ok(plan) = compile(config, root) else { return Ok(None) };
    let rates: IndexMap<String, f64> = config.option_values();
    let view = PlanView::new(&plan, ids, counts, &rates, &Folding::default(), None);
    plan_svg(&view, marks).map(Some)
}
