//! Rendering a plan: a view of the compiled tree (with counts and estimates when a database was
//! asked) through minijinja templates embedded in the binary, or a user's own template. The
//! context every template sees is documented in the README.

use indexmap::IndexMap;
use minijinja::{Environment, Value};
use serde::Serialize;

use crate::config::OnDelete;
use crate::engine::Counts;
use crate::engine::StepStatements;
use crate::planner::{Plan, PlanNode};

/// The built-in forms of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    /// An indented tree for the terminal.
    Text,
    /// A Mermaid flowchart.
    Mermaid,
    /// A Graphviz digraph.
    Dot,
    /// The stable JSON shape: the whole tree, never folded.
    Json,
}

/// Which parts of a large tree to fold away in the text, mermaid and dot forms.
#[derive(Debug, Clone, Default)]
pub struct Folding {
    /// Nodes deeper than this (the root is depth 0) are hidden.
    pub depth: Option<usize>,
    /// Models whose subtrees are hidden (the model's own node stays).
    pub collapse: Vec<String>,
}

/// The context of every plan template.
#[derive(Debug, Clone, Serialize)]
pub struct PlanView<'a> {
    /// The root model.
    pub root: String,
    /// The root ids given.
    pub ids: Vec<String>,
    /// Whether rows were counted (a database and ids were given).
    pub counted: bool,
    /// The root node, with nested children.
    pub tree: NodeView<'a>,
    /// The tree after folding, in display order (each node before its children).
    pub nodes: Vec<FlatNode<'a>>,
    /// Rows each model would lose, each row once (empty without counts).
    pub totals: IndexMap<String, u64>,
    /// Rows of each model whose relation column would be set to NULL (empty without counts).
    pub nullify: IndexMap<String, u64>,
    /// Requested root rows whose status does not allow the deletion.
    pub skipped_by_status: u64,
    /// Requested root ids that match no row.
    pub not_found: Vec<String>,
    /// How long the deletion would take, about (empty without counts).
    pub estimate: Estimate,
    /// The statements of each step, with `--sql`.
    pub sql: Option<Vec<StepStatements>>,
}

/// A plan node with what counting found out about it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeView<'a> {
    /// The plan node.
    #[serde(flatten)]
    pub node: &'a PlanNode,
    /// Its rows and what they cost.
    #[serde(flatten)]
    pub measure: Measure,
    /// Views of the node's children, in execution order.
    pub children: Vec<NodeView<'a>>,
}

/// Rows and what they cost, for one node.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Measure {
    /// The rate limit's current value in rows per second (`None` or 0: unthrottled).
    pub rate: Option<f64>,
    /// Rows counted for this node (`None` without counts).
    pub rows: Option<u64>,
    /// Chunks needed at least (rows / chunk size).
    pub chunks: Option<u64>,
    /// Chunks needed at most: each chunk of the parent may end with a partial chunk of this step.
    pub max_chunks: Option<u64>,
    /// Seconds this step's rate limit makes it and the steps below it take at least (their rows
    /// count against it too).
    pub seconds: Option<f64>,
}

/// A node of the folded tree, flat, with what templates need to draw it.
#[derive(Debug, Clone, Serialize)]
pub struct FlatNode<'a> {
    /// The plan node.
    #[serde(flatten)]
    pub node: &'a PlanNode,
    /// Its rows and what they cost.
    #[serde(flatten)]
    pub measure: Measure,
    /// Depth in the tree; the root is 0.
    pub depth: usize,
    /// Step of the parent node, `None` at the root.
    pub parent: Option<usize>,
    /// Tree-drawing prefix for text output (`├── `, `│   └── `, ...).
    pub prefix: String,
    /// Descendant nodes folded away under this one.
    pub hidden: usize,
}

/// About how long a whole deletion takes, from the counts and the rate limits.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Estimate {
    /// Chunks (transactions) at least: rows / chunk size summed over the steps.
    pub chunks: Option<u64>,
    /// Chunks at most, as the executor chunks each step once per chunk of its parent.
    pub max_chunks: Option<u64>,
    /// Seconds the slowest rate limit imposes at most (its first bucketful makes it less):
    /// each limit paces the rows of its model and of every model below it.
    pub seconds: Option<f64>,
    /// Rows of the models with no rate limit on their path from the root, each row once.
    pub unthrottled_rows: Option<u64>,
}

impl<'a> PlanView<'a> {
    /// Builds the view of `plan`; `counts` when rows were counted, `rates` the current value of
    /// each option.
    pub fn new(
        plan: &'a Plan,
        ids: &[String],
        counts: Option<&Counts>,
        rates: &IndexMap<String, f64>,
        folding: &Folding,
        sql: Option<Vec<StepStatements>>,
    ) -> Self {
        let tree = node_view(&plan.root, None, counts, rates);
        let mut nodes = Vec::new();
        flatten(&tree, None, 0, "", "", folding, &mut nodes);
        let estimate = counts.map(|counts| estimate(&tree, counts)).unwrap_or_default();
        Self {
            root: plan.root.model.clone(),
            ids: ids.to_vec(),
            counted: counts.is_some(),
            tree,
            nodes,
            totals: counts.map(|c| c.totals.clone()).unwrap_or_default(),
            nullify: counts.map(|c| c.nullify.clone()).unwrap_or_default(),
            skipped_by_status: counts.map_or(0, |c| c.skipped_by_status),
            not_found: counts.map(|c| c.not_found.clone()).unwrap_or_default(),
            estimate,
            sql,
        }
    }

    /// Renders the view in one of the built-in forms.
    pub fn render(&self, format: PlanFormat) -> Result<String, minijinja::Error> {
        match format {
            PlanFormat::Json => Ok(self.json()),
            PlanFormat::Text => self.render_builtin(include_str!("templates/text.j2")),
            PlanFormat::Mermaid => self.render_builtin(include_str!("templates/mermaid.j2")),
            PlanFormat::Dot => self.render_builtin(include_str!("templates/dot.j2")),
        }
    }

    /// The stable JSON shape the README documents (the whole tree, never folded), plus estimates
    /// and the statements when asked.
    pub fn json(&self) -> String {
        #[derive(Serialize)]
        struct Json<'a> {
            root: &'a str,
            ids: &'a [String],
            tree: &'a NodeView<'a>,
            totals: &'a IndexMap<String, u64>,
            nullify: &'a IndexMap<String, u64>,
            skipped_by_status: u64,
            not_found: &'a [String],
            estimate: &'a Estimate,
            #[serde(skip_serializing_if = "Option::is_none")]
            sql: &'a Option<Vec<StepStatements>>,
        }
        let json = Json {
            root: &self.root,
            ids: &self.ids,
            tree: &self.tree,
            totals: &self.totals,
            nullify: &self.nullify,
            skipped_by_status: self.skipped_by_status,
            not_found: &self.not_found,
            estimate: &self.estimate,
            sql: &self.sql,
        };
        let mut text = serde_json::to_string_pretty(&json).expect("a plan serialises");
        text.push('\n');
        text
    }

    /// Built-in templates are written with block tags on lines of their own.
    fn render_builtin(&self, source: &str) -> Result<String, minijinja::Error> {
        self.render_with("plan", source, true)
    }

    /// Renders a user's `--template` with minijinja's defaults (and its final newline kept);
    /// errors name the template as `name:line`.
    pub fn render_template(&self, name: &str, source: &str) -> Result<String, minijinja::Error> {
        self.render_with(name, source, false)
    }

    fn render_with(&self, name: &str, source: &str, trim_block_lines: bool) -> Result<String, minijinja::Error> {
        let mut environment = Environment::new();
        environment.set_trim_blocks(trim_block_lines);
        environment.set_lstrip_blocks(trim_block_lines);
        environment.set_keep_trailing_newline(true);
        environment.add_filter("mermaid", mermaid_text);
        environment.add_filter("mermaid_id", mermaid_id);
        environment.add_filter("dot", dot_text);
        environment.add_filter("seconds", seconds);
        environment.add_filter("number", number);
        environment.add_template(name, source)?;
        environment.get_template(name)?.render(Value::from_serialize(self))
    }
}

/// The view of `node`, whose parent needs at most `parent_chunks` chunks (`None` at the root).
fn node_view<'a>(
    node: &'a PlanNode,
    parent_chunks: Option<u64>,
    counts: Option<&Counts>,
    rates: &IndexMap<String, f64>,
) -> NodeView<'a> {
    let rows = counts.map(|c| c.rows.get(&node.step).copied().unwrap_or(0));
    let chunks = rows.map(|rows| rows.div_ceil(node.chunk_size));
    // The rows of one parent chunk are chunked on their own: every parent chunk but one may leave
    // a partial chunk behind.
    let max_chunks =
        rows.zip(chunks).map(|(rows, chunks)| rows.min(chunks + parent_chunks.unwrap_or(0).saturating_sub(1)));
    let rate = node.rate_limit.as_ref().and_then(|name| rates.get(name)).copied().filter(|r| *r > 0.0);
    let children: Vec<_> =
        node.children.iter().map(|child| node_view(child, max_chunks.or(Some(0)), counts, rates)).collect();
    let paced_rows = rows.map(|rows| rows + children.iter().map(subtree_rows).sum::<u64>());
    NodeView {
        node,
        measure: Measure {
            rate,
            rows,
            chunks,
            max_chunks,
            seconds: paced_rows.zip(rate).map(|(rows, rate)| rows as f64 / rate),
        },
        children,
    }
}

fn subtree_rows(view: &NodeView<'_>) -> u64 {
    view.measure.rows.unwrap_or(0) + view.children.iter().map(subtree_rows).sum::<u64>()
}

/// The range of chunks, the seconds of the slowest rate limit, and the rows of models with no
/// rate limit on their path, each row once.
fn estimate(tree: &NodeView<'_>, counts: &Counts) -> Estimate {
    let mut largest_chunk_sizes: IndexMap<(&str, OnDelete), u64> = IndexMap::new();
    let (mut max_chunks, mut seconds, mut throttled) = (0, None, Vec::new());
    visit_for_estimate(tree, false, &mut largest_chunk_sizes, &mut max_chunks, &mut seconds, &mut throttled);
    let mut sometimes_with_parent = Vec::new();
    steps_with_parent(tree, &mut sometimes_with_parent);
    // A row reached by several paths goes in the first step that reaches it (and a deleted row is
    // not also nullified), so the steps of one model need at least its rows, counted once, over
    // their largest chunk size; none at all when a step of the model is a set-based child that
    // can go in its parent's transaction, which may take all its rows.
    let chunks = largest_chunk_sizes
        .iter()
        .filter(|(key, _)| !sometimes_with_parent.contains(*key))
        .map(|(&(model, action), largest_chunk_size)| {
            let rows = if action == OnDelete::Delete { &counts.totals } else { &counts.nullify };
            rows.get(model).copied().unwrap_or(0).div_ceil(*largest_chunk_size)
        })
        .sum();
    let unthrottled_rows = counts
        .totals
        .iter()
        .chain(&counts.nullify)
        .filter(|(model, _)| !throttled.contains(&model.as_str()))
        .map(|(_, rows)| rows)
        .sum();
    Estimate { chunks: Some(chunks), max_chunks: Some(max_chunks), seconds, unthrottled_rows: Some(unthrottled_rows) }
}

/// The `(model, action)` of every step that can go in its parent's transaction: the set-based
/// children of a per_row step whose children are all set-based.
fn steps_with_parent<'v>(view: &'v NodeView<'_>, out: &mut Vec<(&'v str, OnDelete)>) {
    if view.node.has_only_set_based_children() {
        out.extend(view.children.iter().map(|child| (child.node.model.as_str(), child.node.action)));
    }
    for child in &view.children {
        steps_with_parent(child, out);
    }
}

fn visit_for_estimate<'v>(
    view: &'v NodeView<'_>,
    limited: bool,
    largest_chunk_sizes: &mut IndexMap<(&'v str, OnDelete), u64>,
    max_chunks: &mut u64,
    seconds: &mut Option<f64>,
    throttled: &mut Vec<&'v str>,
) {
    let node = view.node;
    let largest = largest_chunk_sizes.entry((&node.model, node.action)).or_default();
    *largest = (*largest).max(node.chunk_size);
    *max_chunks += view.measure.max_chunks.unwrap_or(0);
    if let Some(step_seconds) = view.measure.seconds {
        *seconds = Some(seconds.unwrap_or(0.0).max(step_seconds));
    }
    let limited = limited || view.measure.seconds.is_some();
    if limited {
        throttled.push(&node.model);
    }
    for child in &view.children {
        visit_for_estimate(child, limited, largest_chunk_sizes, max_chunks, seconds, throttled);
    }
}

fn flatten<'a>(
    view: &NodeView<'a>,
    parent: Option<usize>,
    depth: usize,
    prefix: &str,
    child_indent: &str,
    folding: &Folding,
    out: &mut Vec<FlatNode<'a>>,
) {
    let node = view.node;
    let folded = folding.depth.is_some_and(|max| depth >= max) || folding.collapse.contains(&node.model);
    out.push(FlatNode {
        node,
        measure: view.measure,
        depth,
        parent,
        prefix: prefix.to_owned(),
        hidden: if folded { count_descendants(node) } else { 0 },
    });
    if folded {
        return;
    }
    let last = view.children.len().saturating_sub(1);
    for (index, child) in view.children.iter().enumerate() {
        let (branch, indent) = if index == last { ("└── ", "    ") } else { ("├── ", "│   ") };
        let prefix = format!("{child_indent}{branch}");
        let child_indent = format!("{child_indent}{indent}");
        flatten(child, Some(node.step), depth + 1, &prefix, &child_indent, folding, out);
    }
}

fn count_descendants(node: &PlanNode) -> usize {
    node.children.iter().map(|child| 1 + count_descendants(child)).sum()
}

/// Text inside a quoted Mermaid label: quotes and angle brackets as entity codes.
fn mermaid_text(text: String) -> String {
    text.replace('&', "#amp;").replace('"', "#quot;").replace('<', "#lt;").replace('>', "#gt;")
}

/// A Mermaid node id: letters, digits and `_` only, never a keyword (`end` breaks flowcharts).
fn mermaid_id(text: String) -> String {
    let id: String = text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("m_{id}")
}

/// Text inside a double-quoted Graphviz string.
fn dot_text(text: String) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A number without a pointless `.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 { format!("{}", value as i64) } else { format!("{value}") }
}

/// Seconds for people: `45 s`, `12 min`, `3.5 h`.
fn seconds(value: f64) -> String {
    match value {
        s if s < 120.0 => format!("{s:.1} s"),
        s if s < 7200.0 => format!("{:.1} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}
