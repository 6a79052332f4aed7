//! `plan --format html`: one self-contained page, its text escaped, checked as a file and as a
//! real browser (headless Chromium) builds and paints it; and the drawing with highlights, as
//! `render::html::plan_svg` gives it to other pages.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::browser::{chromium, dump_dom, painted_pixels, screenshot};
use common::diamond::{DIAMOND_CONFIG, DIAMOND_SCHEMA, EXPECTED, diamond_rows};
use common::{cascade, count, json_output, project, repository, sqlite_database};
use scraper::{ElementRef, Html, Selector};
use serde_json::Value;

/// `cascade plan ARGS --format html` in `dir`, which must succeed; the page.
fn html(dir: &Path, args: &[&str]) -> String {
    let output = cascade(dir).arg("plan").args(args).args(["--format", "html"]).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Every model of a plan's JSON tree (a shared node's children are under its first node).
fn models(plan: &Value) -> BTreeSet<String> {
    let mut models = BTreeSet::new();
    let mut stack = vec![&plan["tree"]];
    while let Some(node) = stack.pop() {
        models.insert(node["model"].as_str().unwrap().to_owned());
        stack.extend(node["children"].as_array().unwrap());
    }
    models
}

fn select<'a>(document: &'a Html, selector: &str) -> Vec<ElementRef<'a>> {
    document.select(&Selector::parse(selector).unwrap()).collect()
}

fn select_in<'a>(element: &ElementRef<'a>, selector: &str) -> Vec<ElementRef<'a>> {
    element.select(&Selector::parse(selector).unwrap()).collect()
}

/// The page loads nothing: no element that fetches (a script, a stylesheet, an image, a frame),
/// no attribute naming something to fetch, no `url(` or `@import` in a style, and its
/// Content-Security-Policy forbids fetching anything anyway.
fn assert_self_contained(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..100.min(page.len())]);
    let document = Html::parse_document(page);
    let policy = select(&document, "meta[http-equiv=\"Content-Security-Policy\"]");
    assert_eq!(policy[0].value().attr("content"), Some("default-src 'none'; style-src 'unsafe-inline'"));
    for element in select(&document, "*") {
        let name = element.value().name();
        assert!(
            !["script", "link", "img", "image", "iframe", "object", "embed", "use", "audio", "video"].contains(&name),
            "<{name}>"
        );
        for (attribute, value) in element.value().attrs() {
            assert!(
                !["src", "href", "xlink:href", "srcset", "data", "action"].contains(&attribute),
                "<{name} {attribute}>"
            );
            assert!(!value.contains("url("), "<{name} {attribute}={value:?}>");
        }
    }
    for style in select(&document, "style") {
        let css: String = style.text().collect();
        assert!(!css.contains("url(") && !css.contains("@import"), "{css}");
    }
}

#[test]
fn a_small_plan_renders_as_its_snapshot() {
    let page = html(repository(), &["release"]);
    assert_self_contained(&page);
    insta::assert_snapshot!("release", page);
}

/// Model names are free text: a hostile one is shown as text, never as markup, in the file and
/// in what a browser builds from it.
#[test]
fn hostile_model_names_are_shown_as_text() {
    let script = "<script>alert(1)</script>";
    let attribute = "\"><img src=x onerror=alert(2)>";
    let config = format!(
        "[models.{script:?}]\ntable = \"org\"\nchildren = [\n  {{ model = {attribute:?}, column = \"org_id\", on_delete = \"nullify\" }},\n  \
         {{ model = \"b&c\", column = \"org_id\" }},\n]\n\n[models.{attribute:?}]\ntable = \"t\"\n\n[models.\"b&c\"]\ntable = \"bc\"\nstrategy = \"bulk\"\n"
    );
    let dir = project(&[("cascades/hostile.toml", &config)]);
    let page = html(dir.path(), &[script]);
    assert_self_contained(&page);
    assert!(page.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"), "the name is escaped");

    // As the file reads (an HTML parser) and as Chromium builds it, the names are text.
    let mut documents = vec![("file", Html::parse_document(&page))];
    let Some(chromium) = chromium() else { return };
    let file = dir.path().join("plan.html");
    std::fs::write(&file, &page).unwrap();
    documents.push(("chromium", Html::parse_document(&dump_dom(&chromium, &file))));
    for (read_by, document) in &documents {
        assert!(select(document, "script").is_empty() && select(document, "img").is_empty(), "{read_by}");
        let shown: BTreeSet<&str> =
            select(document, "svg g.node").iter().map(|node| node.value().attr("data-model").unwrap()).collect();
        assert_eq!(shown, BTreeSet::from([script, attribute, "b&c"]), "{read_by}");
        let heading: String = select(document, "h1 code")[0].text().collect();
        assert_eq!(heading, script, "{read_by}");
        let first_lines: BTreeSet<String> =
            select(document, "svg g.node text:first-of-type").iter().map(|text| text.text().collect()).collect();
        assert!(first_lines.contains(&format!("{attribute} · step 1")), "{read_by}: {first_lines:?}");
    }
}

/// The diamond with rows counted on SQLite: Chromium builds a drawing with a box for every
/// model, dashed edges for nullify relations, and the totals (checked against hand counts);
/// its screenshot is not blank.
#[test]
fn chromium_shows_every_model_and_the_counted_rows() {
    let dir = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    let url = sqlite_database(dir.path(), &format!("{DIAMOND_SCHEMA}{}", diamond_rows(1)));
    let args = ["org", "--id", "1,2,4", "--database-url", url.as_str()];
    let plan = json_output(cascade(dir.path()).arg("plan").args(args).args(["--format", "json"]));
    let page = html(dir.path(), &args);
    assert_self_contained(&page);
    let Some(chromium) = chromium() else { return };
    let file = dir.path().join("plan.html");
    std::fs::write(&file, &page).unwrap();
    let document = Html::parse_document(&dump_dom(&chromium, &file));

    // A box for every model of the plan, with its rows; `task` twice (by project, by member).
    let nodes = select(&document, "svg.plan g.node");
    let shown: BTreeSet<String> =
        nodes.iter().map(|node| node.value().attr("data-model").unwrap().to_owned()).collect();
    assert_eq!(shown, models(&plan));
    assert_eq!(nodes.iter().filter(|node| node.value().attr("data-model") == Some("task")).count(), 2);
    for node in &nodes {
        assert_eq!(select_in(node, "rect").len(), 1, "a box per node");
        let text: String = node.text().collect();
        assert!(text.contains(" row"), "each node shows its rows: {text}");
    }
    // `task`'s children are drawn once, with an edge from each `task` box: 2 edges into `note`.
    let edges = select(&document, "svg.plan g.edge");
    let note = nodes.iter().find(|n| n.value().attr("data-model") == Some("note")).unwrap();
    let into_note = edges.iter().filter(|e| e.value().attr("data-child") == note.value().attr("data-step")).count();
    assert_eq!(into_note, 2);
    let nullify: Vec<_> = edges.iter().filter(|e| e.value().attr("data-action") == Some("nullify")).collect();
    assert_eq!(nullify.len(), 1, "the relation to audit");
    let dashed = select_in(nullify[0], "path[stroke-dasharray]");
    assert_eq!(dashed.len(), 1, "a nullify edge is dashed");

    // The totals, as the browser shows them, are the hand-counted rows.
    let mut table: BTreeMap<String, (String, String)> = BTreeMap::new();
    for row in select(&document, "table.totals tbody tr") {
        let cells: Vec<String> = select_in(&row, "td").iter().map(|td| td.text().collect()).collect();
        table.insert(cells[0].clone(), (cells[1].clone(), cells[2].clone()));
    }
    for (model, sql) in EXPECTED {
        let expected = count(&url, sql).to_string();
        let (deleted, nullified) = &table[model];
        let shown = if model == "audit" { nullified } else { deleted };
        assert_eq!(shown, &expected, "{model}: {sql}");
    }
    assert!(page.contains("1 root row skipped"), "org 4's status keeps it");

    // Painted: the screenshot holds the drawing, not a blank page.
    let (painted, total) = painted_pixels(&screenshot(&chromium, &file, 1400, 1000));
    assert!(painted * 100 > total, "{painted} of {total} pixels are not the white background");
}

/// `plan_svg` marks what a diff highlights: every node of a model, and a relation's edges and
/// the nodes it reaches, the strongest mark winning, with the notes as the tooltip.
#[test]
fn highlights_mark_models_and_relations() {
    use cascade::render::html::{Highlights, Mark, RelationKey, plan_svg};
    use cascade::render::{Folding, PlanView};

    let mut sources = cascade::Sources::default();
    sources.add("diamond.toml", DIAMOND_CONFIG);
    let mut loaded = cascade::load_sources(sources);
    let checked = cascade::check(&mut loaded, None).expect("the diamond is valid");
    let plan = cascade::compile(&checked, "org").unwrap();
    let view = PlanView::new(&plan, &[], None, &Default::default(), &Folding::default(), None);

    let mut highlights = Highlights::default();
    highlights.model("task", Mark::Safe, "chunk size 100 → 200");
    let by_member = RelationKey { parent: "member".into(), child: "task".into(), columns: vec!["assignee_id".into()] };
    highlights.relation(by_member, Mark::Destructive, "a new delete relation");
    let svg = plan_svg(&view, &highlights).unwrap();
    let document = Html::parse_fragment(&svg);
    let mark_of = |selector: &str| -> Vec<(String, Option<String>)> {
        select(&document, selector)
            .iter()
            .map(|g| {
                let what = g.value().attr("data-model").or(g.value().attr("data-child")).unwrap().to_owned();
                (what, g.value().attr("data-mark").map(str::to_owned))
            })
            .collect()
    };
    let marked: Vec<_> = mark_of("g.node[data-mark]");
    let task_by_member = plan.root.children[1].children[0].step.to_string();
    assert_eq!(
        marked,
        [("task".to_owned(), Some("safe".to_owned())), ("task".to_owned(), Some("destructive".to_owned()))],
        "both task nodes, the one by member marked destructive"
    );
    let edges = mark_of("g.edge[data-mark]");
    assert_eq!(edges, [(task_by_member.clone(), Some("destructive".to_owned()))], "the member → task edge");
    let node =
        select(&document, &format!("g.node[data-step=\"{task_by_member}\"] title"))[0].text().collect::<String>();
    assert!(node.ends_with("chunk size 100 → 200\na new delete relation"), "{node}");

    // Without highlights nothing is marked, and the drawing is the page's.
    let plain = plan_svg(&view, &Highlights::default()).unwrap();
    assert!(!plain.contains("data-mark"));
    assert!(view.render(cascade::render::PlanFormat::Html).unwrap().contains(&plain));
}
