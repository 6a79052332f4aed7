//! A plan as one self-contained HTML page (`plan --format html`): the plan drawn as an inline SVG
//! laid out here (`layout.rs`), the rows per model, the estimate and the config's diagnostics,
//! with no script, no stylesheet, font or image from elsewhere (its Content-Security-Policy
//! forbids fetching any). [`plan_svg`] is the drawing alone, with [`Highlights`], for pages that
//! show several plans (`diff --format html`).

mod layout;

use std::collections::HashMap;

use indexmap::IndexMap;
use minijinja::{AutoEscape, Value, context};
use serde::Serialize;

use super::{FlatNode, PlanView};
use layout::{Rect, layout};

/// How a highlighted node or edge is drawn, weakest first: a node or edge marked twice shows the
/// stronger mark. The names are those of `diff`'s severities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// Blue: changes how, not what (chunk sizes, rate limits).
    Safe,
    /// Amber: the same rows, other effects (an outbox scope, a sink).
    Attention,
    /// Red: more or other rows deleted.
    Destructive,
}

/// A relation as the plan reaches it: the parent model, the child model and the child's columns
/// that reference the parent (one for a single-column relation).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelationKey {
    /// The parent model.
    pub parent: String,
    /// The child model.
    pub child: String,
    /// The child's columns, as the relation declares them (`column`, or `columns` in order).
    pub columns: Vec<String>,
}

/// A mark with the reason shown when the pointer rests on what it marks (its SVG `<title>`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Highlight {
    mark: Mark,
    note: String,
}

/// What [`plan_svg`] highlights: models (every node of the model: its box) and relations (every
/// edge of the relation, and the box of each node the relation reaches). Marks given twice to
/// the same model or relation, and a node marked both as a model and by its relation, show the
/// strongest mark and every note, one per line.
#[derive(Debug, Clone, Default)]
pub struct Highlights {
    models: HashMap<String, Highlight>,
    relations: HashMap<RelationKey, Highlight>,
}

impl Highlights {
    /// Marks every node of `model`, with `note` as the reason.
    pub fn model(&mut self, model: impl Into<String>, mark: Mark, note: impl Into<String>) -> &mut Self {
        merge(self.models.entry(model.into()).or_insert_with(Highlight::none), mark, note.into());
        self
    }

    /// Marks every edge of `relation` and every node it reaches, with `note` as the reason.
    pub fn relation(&mut self, relation: RelationKey, mark: Mark, note: impl Into<String>) -> &mut Self {
        merge(self.relations.entry(relation).or_insert_with(Highlight::none), mark, note.into());
        self
    }

    /// Whether nothing is highlighted.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty() && self.relations.is_empty()
    }

    fn of_node(&self, node: &FlatNode<'_>, parent_model: Option<&str>) -> Option<Highlight> {
        let by_relation = parent_model.and_then(|parent| self.relations.get(&relation_key(parent, node.node)));
        strongest([self.models.get(&node.node.model), by_relation])
    }
}

impl Highlight {
    /// The start of a merge: no mark yet (the weakest) and no note.
    fn none() -> Self {
        Self { mark: Mark::Safe, note: String::new() }
    }
}

fn merge(highlight: &mut Highlight, mark: Mark, note: String) {
    highlight.mark = highlight.mark.max(mark);
    if !note.is_empty() {
        if !highlight.note.is_empty() {
            highlight.note.push('\n');
        }
        highlight.note.push_str(&note);
    }
}

fn strongest<'a>(highlights: impl IntoIterator<Item = Option<&'a Highlight>>) -> Option<Highlight> {
    highlights.into_iter().flatten().fold(None, |found: Option<Highlight>, highlight| {
        let mut merged = found.unwrap_or_else(Highlight::none);
        merge(&mut merged, highlight.mark, highlight.note.clone());
        Some(merged)
    })
}

fn relation_key(parent: &str, child: &crate::planner::PlanNode) -> RelationKey {
    RelationKey { parent: parent.to_owned(), child: child.model.clone(), columns: child.columns.clone() }
}

/// Characters of a line shown in a box; a longer line ends in `…` (the box's tooltip has it
/// whole), so one long name cannot stretch the drawing.
const MAX_LINE_CHARS: usize = 56;
/// The advance of a character of the 12 px monospace font, and the height of a line, in pixels.
const CHAR_WIDTH: f64 = 7.4;
const LINE_HEIGHT: f64 = 16.0;
/// Room between a box's outline and its text.
const PADDING_X: f64 = 10.0;
const PADDING_Y: f64 = 8.0;
/// The length and half-width of an arrowhead.
const ARROW: f64 = 8.0;

#[derive(Serialize)]
struct SvgNode<'a> {
    step: usize,
    model: &'a str,
    action: &'a str,
    x: i64,
    y: i64,
    width: i64,
    height: i64,
    lines: Vec<SvgLine>,
    /// Every line whole, and the highlight's note: the box's tooltip.
    title: String,
    mark: Option<Mark>,
}

#[derive(Serialize)]
struct SvgLine {
    text: String,
    x: i64,
    y: i64,
}

#[derive(Serialize)]
struct SvgEdge<'a> {
    parent: usize,
    child: usize,
    action: &'a str,
    path: String,
    arrow: String,
    mark: Option<Mark>,
    note: Option<String>,
}

/// The plan of `view` drawn as an `<svg>` element (inline in HTML: no XML declaration), laid out
/// as layers from the root down, with every node of the view once (`nodes`: after folding, each
/// plan node at most once) and every edge between them (`edges`: a shared node's children have
/// an edge from each of its nodes). Each node is a `<g class="node">` whose `data-step`,
/// `data-model`, `data-action` and, when highlighted, `data-mark` (`safe`, `attention`,
/// `destructive`) say what it is; each edge a `<g class="edge">` with `data-parent` and
/// `data-child` (steps), `data-action` (nullify edges are dashed) and `data-mark`. Every text
/// is escaped; styles are attributes, so the element needs no stylesheet.
pub fn plan_svg(view: &PlanView<'_>, highlights: &Highlights) -> Result<String, minijinja::Error> {
    let index: HashMap<usize, usize> = view.nodes.iter().enumerate().map(|(i, node)| (node.node.step, i)).collect();
    let model_of: HashMap<usize, &str> = view.nodes.iter().map(|n| (n.node.step, n.node.model.as_str())).collect();
    let edges: Vec<(usize, usize)> =
        view.edges.iter().map(|edge| (index[&edge.parent], index[&edge.node.step])).collect();
    let texts: Vec<Vec<String>> = view.nodes.iter().map(node_lines).collect();
    let sizes: Vec<(f64, f64)> = texts.iter().map(|lines| box_size(lines)).collect();
    let drawing = layout(&sizes, &edges);

    let nodes: Vec<SvgNode> = view
        .nodes
        .iter()
        .zip(&texts)
        .zip(&drawing.boxes)
        .map(|((node, lines), rect)| {
            let highlight = highlights.of_node(node, node.parent.map(|parent| model_of[&parent]));
            svg_node(node, lines, rect, highlight)
        })
        .collect();
    let edges: Vec<SvgEdge> = view
        .edges
        .iter()
        .zip(&edges)
        .map(|(edge, &(parent, child))| {
            let highlight = highlights.relations.get(&relation_key(edge.parent_model, edge.node));
            svg_edge(edge.parent, edge.node, &drawing.boxes[parent], &drawing.boxes[child], highlight)
        })
        .collect();
    let context = context! {
        root => &view.root,
        width => drawing.width.ceil() as i64,
        height => drawing.height.ceil() as i64,
        nodes => nodes,
        edges => edges,
    };
    environment().get_template("plan.svg")?.render(context)
}

/// The whole page of `view`: its drawing, rows, estimate and diagnostics.
pub(super) fn page(view: &PlanView<'_>) -> Result<String, minijinja::Error> {
    let svg = plan_svg(view, &Highlights::default())?;
    let mut rows: IndexMap<&str, (Option<u64>, Option<u64>)> = IndexMap::new();
    for (model, deleted) in &view.totals {
        rows.entry(model).or_default().0 = Some(*deleted);
    }
    for (model, nullified) in &view.nullify {
        rows.entry(model).or_default().1 = Some(*nullified);
    }
    let rows: Vec<Value> =
        rows.into_iter().map(|(model, (deleted, nullified))| context! { model, deleted, nullified }).collect();
    let context = context! {
        ..Value::from_serialize(view),
        ..context! { svg => Value::from_safe_string(svg), rows => rows, steps => view.nodes.len() },
    };
    environment().get_template("plan.html")?.render(context)
}

/// The templates with HTML escaping of every value (SVG text and attributes escape alike).
fn environment() -> minijinja::Environment<'static> {
    let mut environment = super::environment(true);
    environment.set_auto_escape_callback(|_| AutoEscape::Html);
    environment
        .add_template("plan.svg", include_str!("../templates/plan.svg.j2"))
        .expect("the built-in SVG template parses");
    environment
        .add_template("plan.html", include_str!("../templates/plan.html.j2"))
        .expect("the built-in HTML template parses");
    environment
}

/// What a node's box says, line by line: the model, what happens to its rows and how, the
/// relation, rate limit, outbox, rows and what is folded below it.
fn node_lines(node: &FlatNode<'_>) -> Vec<String> {
    let plan = node.node;
    let mut lines = vec![format!("{} · step {}", plan.model, plan.step)];
    if plan.table != plan.model {
        lines.push(format!("table {}", plan.table));
    }
    lines.push(format!("{} · {} · chunk {}", plan.action.as_str(), plan.strategy.as_str(), plan.chunk_size));
    if plan.recursive {
        let depth = node.measure.tree_depth.map(|depth| format!(", depth {depth}"));
        lines.push(format!("recursive: again under each row{}", depth.unwrap_or_default()));
    }
    if !plan.columns.is_empty() {
        let references = plan.references.as_ref().map(|columns| format!(" → {}", columns.join(", ")));
        lines.push(format!("by {}{}", plan.columns.join(", "), references.unwrap_or_default()));
    }
    if let Some(option) = &plan.rate_limit {
        // The value first: a long option name is what an ellipsis cuts.
        let rate = node.measure.rate.map_or("unthrottled".to_owned(), |rate| format!("{} rows/s", super::number(rate)));
        lines.push(format!("limit {rate} ({option})"));
    }
    if let Some(outbox) = &plan.outbox {
        lines.push(format!("outbox {} → scope {}", outbox.category, outbox.scope));
    }
    if let Some(rows) = node.measure.rows {
        lines.push(if rows == 1 { "1 row".to_owned() } else { format!("{rows} rows") });
    }
    if node.hidden > 0 {
        lines.push(format!("+{} steps folded", node.hidden));
    }
    lines
}

fn shown(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS - 1) {
        Some((end, _)) if line[end..].chars().count() > 1 => format!("{}…", &line[..end]),
        _ => line.to_owned(),
    }
}

fn box_size(lines: &[String]) -> (f64, f64) {
    let chars = lines.iter().map(|line| shown(line).chars().count()).max().unwrap_or(0);
    (chars as f64 * CHAR_WIDTH + 2.0 * PADDING_X, lines.len() as f64 * LINE_HEIGHT + 2.0 * PADDING_Y)
}

fn svg_node<'a>(node: &FlatNode<'a>, lines: &[String], rect: &Rect, highlight: Option<Highlight>) -> SvgNode<'a> {
    let mut title = lines.join("\n");
    if let Some(note) = highlight.as_ref().map(|h| &h.note).filter(|note| !note.is_empty()) {
        title.push_str("\n\n");
        title.push_str(note);
    }
    let text_x = (rect.x + PADDING_X).round() as i64;
    let lines = lines
        .iter()
        .enumerate()
        .map(|(index, line)| {
            // The baseline, a quarter of a line above the line's bottom.
            let y = rect.y + PADDING_Y + (index as f64 + 0.75) * LINE_HEIGHT;
            SvgLine { text: shown(line), x: text_x, y: y.round() as i64 }
        })
        .collect();
    SvgNode {
        step: node.node.step,
        model: &node.node.model,
        action: node.node.action.as_str(),
        x: rect.x.round() as i64,
        y: rect.y.round() as i64,
        width: rect.width.round() as i64,
        height: rect.height.round() as i64,
        lines,
        title,
        mark: highlight.map(|h| h.mark),
    }
}

/// A curve from the bottom of the parent's box to the top of the child's, and its arrowhead.
fn svg_edge<'a>(
    parent: usize,
    child: &'a crate::planner::PlanNode,
    from: &Rect,
    to: &Rect,
    highlight: Option<&Highlight>,
) -> SvgEdge<'a> {
    let (x1, y1) = (from.center_x(), from.bottom());
    let (x2, y2) = (to.center_x(), to.y - ARROW);
    let bend = (y2 - y1) / 2.0;
    let path = format!("M{x1:.1} {y1:.1} C{x1:.1} {:.1} {x2:.1} {:.1} {x2:.1} {y2:.1}", y1 + bend, y2 - bend);
    let arrow = format!("{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}", x2 - ARROW / 2.0, y2, x2 + ARROW / 2.0, y2, x2, to.y);
    SvgEdge {
        parent,
        child: child.step,
        action: child.action.as_str(),
        path,
        arrow,
        mark: highlight.map(|h| h.mark),
        note: highlight.map(|h| h.note.clone()).filter(|note| !note.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_with_an_ellipsis() {
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        assert_eq!(shown(&long).chars().count(), MAX_LINE_CHARS);
        assert!(shown(&long).ends_with('…'));
        let fits = "é".repeat(MAX_LINE_CHARS);
        assert_eq!(shown(&fits), fits);
    }

    #[test]
    fn the_strongest_mark_wins_and_every_note_is_kept() {
        let mut highlights = Highlights::default();
        highlights.model("a", Mark::Attention, "scope moved").model("a", Mark::Safe, "chunk doubled");
        let found = strongest([highlights.models.get("a"), None]).unwrap();
        assert_eq!(found, Highlight { mark: Mark::Attention, note: "scope moved\nchunk doubled".to_owned() });
        let destructive = Highlight { mark: Mark::Destructive, note: "nullify → delete".to_owned() };
        let found = strongest([highlights.models.get("a"), Some(&destructive)]).unwrap();
        assert_eq!(found.mark, Mark::Destructive);
        assert_eq!(found.note, "scope moved\nchunk doubled\nnullify → delete");
        assert_eq!(strongest([None, None]), None);
    }
}
