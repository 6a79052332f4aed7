//! Many root ids: read from a file or standard input, deleted a root chunk at a time.

use crate::common;

use common::{cascade, count, json_output, on_each_database, project, sqlite_database};

const CONFIG: &str = "[settings]\nadaptive = false\n\n[models.author]\ntable = \"author\"\nchunk_size = 7\n\
                      children = [{ model = \"book\", column = \"author_id\" }]\n\n\
                      [models.book]\ntable = \"book\"\nstrategy = \"bulk\"\nchunk_size = 5\n";

const AUTHORS: i64 = 500;

fn schema() -> String {
    let authors: Vec<String> = (1..=AUTHORS).map(|id| format!("({id})")).collect();
    let books: Vec<String> =
        (1..=AUTHORS).flat_map(|id| [format!("({}, {id})", 2 * id - 1), format!("({}, {id})", 2 * id)]).collect();
    format!(
        "CREATE TABLE author (id BIGINT PRIMARY KEY);\n\
         CREATE TABLE book (id BIGINT PRIMARY KEY, author_id BIGINT NOT NULL REFERENCES author(id));\n\
         CREATE INDEX book_author ON book(author_id);\n\
         INSERT INTO author VALUES {};\nINSERT INTO book VALUES {};\n",
        authors.join(", "),
        books.join(", ")
    )
}

/// Ids 1..=300 in a file (newlines and commas, a blank line), two that do not exist on the
/// command line and on standard input: exactly those 300 authors and their 600 books go.
fn many_ids_from_a_file_and_stdin(url: &str) {
    let listed: Vec<String> = (1..=300).map(|id| id.to_string()).collect();
    let file = format!("{}\n\n{}\n", listed[..150].join("\n"), listed[150..].join(","));
    let dir = project(&[("cascades/books.toml", CONFIG), ("ids.txt", &file)]);

    let plan = json_output(
        cascade(dir.path())
            .args(["--database-url", url, "plan", "author", "--id", "9001", "--ids-from", "-", "--format", "json"])
            .write_stdin(file.clone()),
    );
    assert_eq!(plan["totals"], serde_json::json!({"author": 300, "book": 600}));
    assert_eq!(plan["not_found"], serde_json::json!(["9001"]));

    let summary = json_output(
        cascade(dir.path())
            .args(["--database-url", url, "delete", "author", "9001,9002", "--ids-from", "ids.txt"])
            .args(["--confirm", "--format", "json"]),
    );
    assert_eq!(summary["deleted"], serde_json::json!({"book": 600, "author": 300}));
    // 300 authors in 43 chunks of at most 7; each chunk's books (at most 14) do not fit one chunk
    // of 5 with it: the first 5 in a transaction of their own, the other 9 (or 7) in 2, then the
    // authors.
    assert_eq!(summary["chunks"], 43 * 4, "{summary}");
    assert_eq!(count(url, "SELECT COUNT(*) FROM author"), (AUTHORS - 300) as u64);
    assert_eq!(count(url, "SELECT COUNT(*) FROM author WHERE id <= 300"), 0);
    assert_eq!(count(url, "SELECT COUNT(*) FROM book"), 2 * (AUTHORS - 300) as u64);
    assert_eq!(count(url, "SELECT COUNT(*) FROM book WHERE author_id <= 300"), 0);
}

on_each_database!(
    many_ids_from_a_file_and_stdin_on_sqlite,
    many_ids_from_a_file_and_stdin_on_postgres,
    many_ids_from_a_file_and_stdin_on_mariadb,
    |databases| {
        many_ids_from_a_file_and_stdin(&databases.create(&schema()));
    }
);

/// An id that is not an integer, next to one that is, is a refusal before any write: exit 1,
/// nothing deleted (not even the valid id's rows), and the message says so.
fn an_unparsable_root_id_is_refused_before_any_write(url: &str) {
    let dir = project(&[("cascades/books.toml", CONFIG)]);
    let before = common::dump(url);
    let output =
        cascade(dir.path()).args(["--database-url", url, "delete", "author", "2,abc", "--confirm"]).output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("refused before it wrote anything"), "{stderr}");
    assert!(stderr.contains("id `abc` is not an integer, but the key of `author` is: nothing was deleted"), "{stderr}");
    assert!(!stderr.contains("stay deleted"), "{stderr}");
    assert_eq!(common::dump(url), before);
    // The dry run says what --confirm would do, with the same exit code.
    let dry = cascade(dir.path()).args(["--database-url", url, "delete", "author", "2,abc"]).output().unwrap();
    let stderr = String::from_utf8(dry.stderr).unwrap();
    assert_eq!(dry.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("with --confirm this deletion would be refused: id `abc` is not an integer"), "{stderr}");
}

on_each_database!(
    an_unparsable_root_id_is_refused_before_any_write_on_sqlite,
    an_unparsable_root_id_is_refused_before_any_write_on_postgres,
    an_unparsable_root_id_is_refused_before_any_write_on_mariadb,
    |databases| an_unparsable_root_id_is_refused_before_any_write(&databases.create(&schema()))
);

#[test]
fn an_ids_file_that_is_missing_or_empty_is_an_error() {
    let dir = project(&[("cascades/books.toml", CONFIG), ("empty.txt", " \n,\n")]);
    let url = sqlite_database(dir.path(), &schema());
    cascade(dir.path())
        .args(["--database-url", &url, "delete", "author", "--ids-from", "missing.txt", "--confirm"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot read ids from `missing.txt`"));
    cascade(dir.path())
        .args(["--database-url", &url, "delete", "author", "--ids-from", "empty.txt", "--confirm"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no ids in `empty.txt`"));
    cascade(dir.path()).args(["--database-url", &url, "delete", "author"]).assert().code(2);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM author"), AUTHORS as u64);
}
