//! Seeded mutations of the demo's config files and DDL script: what the mutation tests feed
//! `validate`, in process (`tests/it/mutations.rs`) and through the binary
//! (`tests/it/mutations_cli.rs`), and the hostile head configs they give `diff`.

use super::random::Random;

/// Fragments a mutation inserts: the TOML and SQL a careless edit or a hostile file holds.
const FRAGMENTS: &[&str] = &[
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "=",
    ",",
    "\n",
    "\r",
    "\t",
    "#",
    "\\",
    "\u{0}",
    "\u{feff}",
    "é",
    "💥",
    "\"\"\"",
    "[models.x]\n",
    "children = [{ model = \"x\", column = \"x\" }]\n",
    "key = []\n",
    "columns = []",
    "references = 1",
    "chunk_size = -1\n",
    "chunk_size = 99999999999999999999\n",
    "strategy = \"bulk\"\n",
    "on_delete = \"nullify\"",
    "retention = { keep = \"99999y\", column = \"x\" }\n",
    "rate_limit = \"nope\"\n",
    "require_all_references = true\n",
    "ignore_references = [{ table = \"\", columns = [\"a\", \"a\"], reason = \"\" }]\n",
    "CREATE TABLE ",
    "PRIMARY KEY",
    "REFERENCES ",
    "FOREIGN KEY (",
    ") ON DELETE SET NULL",
    "ON DELETE SET DEFAULT",
    "UNIQUE (",
    ");\n",
    "(",
    ")",
    "PARTITION BY RANGE (",
    "PARTITION OF ",
    "\"odd \"\"name\"",
    "`tick`",
    "[bracket]",
    " integer",
    " text",
    "\u{1b}[2J",
    "\u{7}",
    "\\u001b",
    "\\n",
    "::error::x",
    "##[warning]x",
    "[l](https://evil.example)",
    "@octocat",
    "<b>",
];

/// Names a hostile config gives its models, as a TOML string holds them: control characters,
/// markdown that would link, show an image, mention or break a table, HTML, and workflow commands.
const HOSTILE_NAMES: &[&str] = &[
    "red\\u001b[31m",
    "line\\nbreak",
    "bell\\u0007",
    "right\\u202eto-left",
    "nul\\u0000",
    "tab\\tbed",
    "[link](https://evil.example)",
    "![image](https://evil.example/i.png)",
    "@octocat",
    "<img src=x>",
    "a|pipe",
    "tick`s",
    "``fence``",
    "::error::pwned",
    "  ::warning::pwned",
    "x ##[error]pwned",
    "www.evil.example",
    "*bold* _it_ ~gone~",
    "#12",
];

/// `text` with one to four random edits: a byte range removed, a fragment inserted, a line
/// repeated or dropped, or two lines swapped (always on character boundaries).
fn mutate(text: &str, random: &mut Random) -> String {
    let mut text = text.to_owned();
    for _ in 0..1 + random.below(4) {
        let boundary = |text: &str, random: &mut Random| {
            let mut at = random.below(text.len() as u64 + 1) as usize;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        match random.below(5) {
            0 => {
                let start = boundary(&text, random);
                let mut end = (start + 1 + random.below(40) as usize).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(start..end, "");
            }
            1 => {
                let at = boundary(&text, random);
                text.insert_str(at, FRAGMENTS[random.below(FRAGMENTS.len() as u64) as usize]);
            }
            kind => {
                let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
                let a = random.below(lines.len() as u64) as usize;
                let b = random.below(lines.len() as u64) as usize;
                match kind {
                    2 => lines.insert(b, lines[a].clone()),
                    3 if lines.len() > 1 => {
                        lines.remove(a);
                    }
                    _ => lines.swap(a, b),
                }
                text = lines.join("\n");
            }
        }
    }
    text
}

/// The files a case starts from: the demo's config directory and its schema.
pub fn originals() -> (Vec<(String, String)>, String) {
    let root = super::repository();
    let mut configs: Vec<(String, String)> = std::fs::read_dir(root.join("cascades"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .map(|path| {
            (
                format!("cascades/{}", path.file_name().unwrap().to_string_lossy()),
                std::fs::read_to_string(&path).unwrap(),
            )
        })
        .collect();
    configs.sort();
    (configs, std::fs::read_to_string(root.join("schemas/demo.sql")).unwrap())
}

/// The demo's configs with one of them, picked by `seed`, mutated; and which one.
pub fn mutated_config(configs: &[(String, String)], seed: u64) -> (Vec<(String, String)>, usize) {
    let mut random = Random::seeded(seed);
    let mut mutated = configs.to_vec();
    let file = random.below(mutated.len() as u64) as usize;
    mutated[file].1 = mutate(&mutated[file].1, &mut random);
    (mutated, file)
}

/// The DDL script mutated as `seed` says.
pub fn mutated_ddl(ddl: &str, seed: u64) -> String {
    mutate(ddl, &mut Random::seeded(seed))
}

/// A head config for `diff` against the demo's, as `seed` says: the demo's configs, perhaps
/// mutated, with models of hostile names added (roots, or with a relation to another hostile
/// name), and perhaps a line of about 20 kB holding hundreds of relations to unknown models.
pub fn hostile_head(configs: &[(String, String)], seed: u64) -> Vec<(String, String)> {
    let mut random = Random::seeded(seed);
    let mut head = if random.chance(40) { mutated_config(configs, seed).0 } else { configs.to_vec() };
    let file = random.below(head.len() as u64) as usize;
    let pick = |random: &mut Random| HOSTILE_NAMES[random.below(HOSTILE_NAMES.len() as u64) as usize];
    let text = &mut head[file].1;
    for _ in 0..1 + random.below(4) {
        let name = pick(&mut random);
        text.push_str(&format!("\n[models.\"{name}\"]\ntable = \"t\"\n"));
        if random.chance(50) {
            text.push_str(&format!("children = [{{ model = \"{}\", column = \"c\" }}]\n", pick(&mut random)));
        } else {
            text.push_str("strategy = \"bulk\"\n");
        }
    }
    if random.chance(25) {
        let children: Vec<String> =
            (0..300).map(|n| format!("{{ model = \"{}-{n}\", column = \"c\" }}", pick(&mut random))).collect();
        text.push_str(&format!("\n[models.wide]\ntable = \"wide\"\nchildren = [{}]\n", children.join(", ")));
    }
    head
}
