//! Rendering a plan: a view of the compiled tree (with counts and estimates when a database was
//! asked) through minijinja templates embedded in the binary, or a user's own template. The
//! context every template sees is documented in the README. A children list that several nodes
//! share (a model reached by several paths) is shown once, under the first of them; every
//! form is linear in the plan's nodes, never in its paths.

mod dag;
pub mod html;

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use indexmap::IndexMap;
use minijinja::{Environment, Value};
use serde::Serialize;

use crate::diagnostic::{PlacedDiagnostic, Report};
use crate::engine::Counts;
use crate::engine::StepStatements;
use crate::planner::{ChildrenId, Dag, children_id};
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
    /// The stable JSON shape: the whole tree, never folded (a shared subtree once).
    Json,
    /// One self-contained HTML page: the plan drawn as an inline SVG, the rows, the estimate
    /// and the diagnostics.
    Html,
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
    /// The root ids given, or those that match [`Self::condition`].
    pub ids: Vec<String>,
    /// The SQL condition the root rows were picked by (`--where`), as written.
    pub condition: Option<String>,
    /// Whether rows were counted (a database and ids were given).
    pub counted: bool,
    /// The root node, with nested children (a shared children list under its first node).
    pub tree: NodeView<'a>,
    /// The tree after folding, in display order (each node before its children), every plan
    /// node at most once.
    pub nodes: Vec<FlatNode<'a>>,
    /// Every parent-child link between the nodes shown, shared children's included.
    pub edges: Vec<Edge<'a>>,
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
    /// The config's diagnostics (its warnings and notes: a plan is only made of a config
    /// without errors), set by [`PlanView::with_diagnostics`].
    pub diagnostics: Vec<PlacedDiagnostic>,
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
    /// Views of the node's children, in execution order; empty when another node shows them.
    pub children: Vec<NodeView<'a>>,
    /// The step of the node that shows this node's children (they are the same nodes), when
    /// that is another node; left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children_as_step: Option<usize>,
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
    /// count against it too), after the limit's first bucketful.
    pub seconds: Option<f64>,
    /// A recursive step's depth: the levels of its tree of rows below the rows the plan's other
    /// steps reach (counted, never loaded); left out elsewhere and without counts. Not `depth`,
    /// which a template's node has already: its place in the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_depth: Option<u64>,
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
    /// Nodes below this one folded away, each once.
    pub hidden: usize,
    /// The step of the node the children of this one are shown under, when that is another
    /// node (the children are shared).
    pub children_as_step: Option<usize>,
}

/// A link from a parent node to one of its children, for the graph forms.
#[derive(Debug, Clone, Serialize)]
pub struct Edge<'a> {
    /// The parent's step.
    pub parent: usize,
    /// The parent's model.
    pub parent_model: &'a str,
    /// The child node.
    #[serde(flatten)]
    pub node: &'a PlanNode,
}

/// About how long a whole deletion takes, from the counts and the rate limits.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Estimate {
    /// Chunks (transactions) at least: rows / chunk size summed over the steps.
    pub chunks: Option<u64>,
    /// Chunks at most, as the executor chunks each step once per chunk of its parent.
    pub max_chunks: Option<u64>,
    /// Seconds the slowest rate limit imposes, as the throttle paces: each limit's bucket lets
    /// its first bucketful (one second of rows or its largest chunk) go at once and the rest at
    /// its rate; each limit paces the rows of its model and of every model below it.
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
        let dag = Dag::of(plan);
        let measures = dag::measures(&dag, counts, rates);
        let tree = node_view(&plan.root, &measures, &mut HashMap::new());
        let mut flattening = Flattening {
            folding,
            measures: &measures,
            shown: HashMap::new(),
            hidden: HashMap::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
        };
        flattening.visit(&plan.root, None, 0, String::new(), "");
        let estimate = counts.map(|counts| dag::estimate(&dag, &measures, counts, rates)).unwrap_or_default();
        Self {
            root: plan.root.model.clone(),
            ids: ids.to_vec(),
            condition: None,
            counted: counts.is_some(),
            tree,
            nodes: flattening.nodes,
            edges: flattening.edges,
            totals: counts.map(|c| c.totals.clone()).unwrap_or_default(),
            nullify: counts.map(|c| c.nullify.clone()).unwrap_or_default(),
            skipped_by_status: counts.map_or(0, |c| c.skipped_by_status),
            not_found: counts.map(|c| c.not_found.clone()).unwrap_or_default(),
            estimate,
            sql,
            diagnostics: Vec::new(),
        }
    }

    /// The view of roots picked by a SQL `condition` (`--where`), when they were.
    pub fn with_condition(mut self, condition: Option<String>) -> Self {
        self.condition = condition;
        self
    }

    /// The view with `report`'s diagnostics, which the HTML page lists.
    pub fn with_diagnostics(mut self, report: &Report<'_>) -> Self {
        self.diagnostics = report.placed();
        self
    }

    /// Renders the view in one of the built-in forms.
    pub fn render(&self, format: PlanFormat) -> Result<String, minijinja::Error> {
        match format {
            PlanFormat::Json => Ok(self.json()),
            PlanFormat::Text => self.render_builtin(include_str!("templates/text.j2")),
            PlanFormat::Mermaid => self.render_builtin(include_str!("templates/mermaid.j2")),
            PlanFormat::Dot => self.render_builtin(include_str!("templates/dot.j2")),
            PlanFormat::Html => html::page(self),
        }
    }

    /// The stable JSON shape the README documents (the whole tree, never folded, a shared
    /// subtree once), plus estimates
    /// and the statements when asked.
    pub fn json(&self) -> String {
        #[derive(Serialize)]
        struct Json<'a> {
            root: &'a str,
            ids: &'a [String],
            #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
            condition: &'a Option<String>,
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
            condition: &self.condition,
            tree: &self.tree,
            totals: &self.totals,
            nullify: &self.nullify,
            skipped_by_status: self.skipped_by_status,
            not_found: &self.not_found,
            estimate: &self.estimate,
            sql: &self.sql,
        };
        crate::diagnostic::text::inert_json(serde_json::to_string_pretty(&json).expect("a plan serialises"))
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
        let mut environment = environment(trim_block_lines);
        environment.add_template(name, source)?;
        environment.get_template(name)?.render(Value::from_serialize(self))
    }
}

/// Where plan templates render: with the filters the README lists.
fn environment(trim_block_lines: bool) -> Environment<'static> {
    let mut environment = Environment::new();
    environment.set_trim_blocks(trim_block_lines);
    environment.set_lstrip_blocks(trim_block_lines);
    environment.set_keep_trailing_newline(true);
    environment.add_filter("mermaid", mermaid_text);
    environment.add_filter("mermaid_id", mermaid_id);
    environment.add_filter("dot", dot_text);
    environment.add_filter("seconds", seconds);
    environment.add_filter("number", number);
    environment
}

/// The view of `node` and, the first time its children list is met, of its children; later
/// nodes sharing the list name the step that shows it.
fn node_view<'a>(
    node: &'a PlanNode,
    measures: &HashMap<usize, Measure>,
    shown: &mut HashMap<ChildrenId, usize>,
) -> NodeView<'a> {
    let children_as_step = match node.children.is_empty() {
        true => None,
        false => match shown.entry(children_id(node)) {
            Entry::Occupied(first) => Some(*first.get()),
            Entry::Vacant(entry) => {
                entry.insert(node.step);
                None
            }
        },
    };
    let children = match children_as_step {
        Some(_) => Vec::new(),
        None => node.children.iter().map(|child| node_view(child, measures, shown)).collect(),
    };
    NodeView { node, measure: measures[&node.step], children, children_as_step }
}

/// The folded tree in display order, each shared children list under the first node that is
/// not folded, and the links between the nodes shown.
struct Flattening<'a, 'f> {
    folding: &'f Folding,
    measures: &'f HashMap<usize, Measure>,
    /// The step under which each children list is shown.
    shown: HashMap<ChildrenId, usize>,
    /// The steps each folded children list hides.
    hidden: HashMap<ChildrenId, usize>,
    nodes: Vec<FlatNode<'a>>,
    edges: Vec<Edge<'a>>,
}

impl<'a> Flattening<'a, '_> {
    fn visit(&mut self, node: &'a PlanNode, parent: Option<&'a PlanNode>, depth: usize, prefix: String, indent: &str) {
        if let Some(parent) = parent {
            self.edges.push(Edge { parent: parent.step, parent_model: &parent.model, node });
        }
        let id = children_id(node);
        let folded = folding_hides(self.folding, node, depth);
        let hidden = match folded && !node.children.is_empty() {
            true => *self.hidden.entry(id).or_insert_with(|| Dag::below(node).len()),
            false => 0,
        };
        let children_as_step = (!folded && !node.children.is_empty()).then(|| self.shown.get(&id).copied()).flatten();
        self.nodes.push(FlatNode {
            node,
            measure: self.measures[&node.step],
            depth,
            parent: parent.map(|parent| parent.step),
            prefix,
            hidden,
            children_as_step,
        });
        if children_as_step.is_some() {
            let edges =
                node.children.iter().map(|child| Edge { parent: node.step, parent_model: &node.model, node: child });
            self.edges.extend(edges);
        }
        if folded || children_as_step.is_some() || node.children.is_empty() {
            return;
        }
        self.shown.insert(id, node.step);
        let last = node.children.len() - 1;
        for (index, child) in node.children.iter().enumerate() {
            let (branch, more) = if index == last { ("└── ", "    ") } else { ("├── ", "│   ") };
            self.visit(child, Some(node), depth + 1, format!("{indent}{branch}"), &format!("{indent}{more}"));
        }
    }
}

/// Whether `--depth` or `--collapse` hides what is below `node`, at `depth`.
fn folding_hides(folding: &Folding, node: &PlanNode, depth: usize) -> bool {
    folding.depth.is_some_and(|max| depth >= max) || folding.collapse.contains(&node.model)
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
