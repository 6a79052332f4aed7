//! Reading a [`Schema`] from SQL DDL scripts (a `pg_dump --schema-only`, a SQLite `.schema`, a
//! hand-written migration) without any database.
//!
//! The script is read twice, once per dialect, and the reading that found more tables wins
//! (PostgreSQL on a tie, or whenever the script uses syntax only PostgreSQL has). Each statement
//! is parsed on its own so that one statement sqlparser cannot read (a PL/pgSQL function, a
//! vendor extension, plain garbage) costs only that statement.

mod flavor;
mod statements;
mod tables;

use sqlparser::ast::{AlterTable, AlterTableOperation, CreateIndex, CreateTable, Statement};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::db::Kind;

use super::{Index, Schema, Table};
use flavor::{Flavor, TableRef};
pub(crate) use statements::byte_offset;
use statements::{
    leading_keywords, pieces_ending_lines_with_semicolon, split_statements, strip_keywords,
    without_only_in_create_index,
};
use tables::{
    DeclaredTables, Partition, add_column, add_constraint, add_index, has_expression, is_own_table, partition_key,
};

/// The result of parsing a DDL script.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedDdl {
    /// The tables the script declares.
    pub schema: Schema,
    /// The dialect that read the most tables: "postgresql", "sqlite" or "mysql". PostgreSQL on a
    /// tie, and whenever the script has dollar quotes, `COPY ... FROM stdin` data or psql
    /// meta-commands; MySQL only for a script with syntax of its own (`ENGINE=`, `AUTO_INCREMENT`)
    /// that it reads no fewer tables of.
    pub dialect: &'static str,
    /// Statements that added nothing to the schema: unparseable, or not schema DDL (INSERT, SET,
    /// CREATE FUNCTION, ALTER TABLE ... OWNER TO, psql meta-commands, ...). Skipped, never fatal.
    pub skipped: usize,
}

/// Parses SQL DDL (PostgreSQL, SQLite or MySQL dialect, chosen automatically) into a [`Schema`].
///
/// Reads `CREATE TABLE`, `CREATE INDEX` and `ALTER TABLE ... ADD CONSTRAINT` / `ATTACH
/// PARTITION`; partitions are folded into their partitioned table. Never panics: what it cannot
/// use it skips and counts in [`ParsedDdl::skipped`].
pub fn parse_ddl(sql: &str) -> ParsedDdl {
    // The readings are independent: side by side, a large script takes the time of one.
    let (postgres, sqlite, mysql) = std::thread::scope(|scope| {
        let beside = |kind| {
            let reading = std::thread::Builder::new().spawn_scoped(scope, move || Reader::read(kind, sql));
            move || match reading {
                Ok(reading) => reading.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: one reading after the other.
                Err(_) => Reader::read(kind, sql),
            }
        };
        let (sqlite, mysql) = (beside(Kind::Sqlite), beside(Kind::Mysql));
        let postgres = Reader::read(Kind::Postgres, sql);
        (postgres, sqlite(), mysql())
    });
    // Read as SQLite, a dollar-quoted function body falls apart into statements, and a
    // `CREATE TABLE` inside one would count as a table: syntax only PostgreSQL has settles it.
    let mysql_wins = !postgres.saw_postgres_only_syntax
        && mysql.saw_mysql_only_syntax
        && mysql.tables_read >= postgres.tables_read.max(sqlite.tables_read);
    let sqlite_wins = !postgres.saw_postgres_only_syntax && sqlite.tables_read > postgres.tables_read;
    let best = if mysql_wins {
        mysql
    } else if sqlite_wins {
        sqlite
    } else {
        postgres
    };
    let kind = best.flavor.kind();
    let skipped = best.skipped;
    let mut tables = best.finish();
    if kind == Kind::Mysql {
        with_foreign_key_indexes(&mut tables);
    }
    ParsedDdl { schema: Schema::new(tables, Some(kind)), dialect: kind.name(), skipped }
}

/// InnoDB gives a foreign key no index leads with an index of its own, named after it: the
/// script does not say so, the database has it.
fn with_foreign_key_indexes(tables: &mut [Table]) {
    for table in tables {
        let implied: Vec<Index> = table
            .foreign_keys
            .iter()
            .filter(|fk| !table.has_index_leading_with(&fk.columns))
            .map(|fk| Index::new(fk.name.clone(), fk.columns.clone(), false))
            .collect();
        for index in implied {
            if !table.has_index_leading_with(&index.columns) {
                table.indexes.push(index);
            }
        }
    }
}

/// The schema as one dialect reads a script.
struct Reader {
    flavor: Flavor,
    tables: DeclaredTables,
    partitions: Vec<Partition>,
    /// `CREATE TABLE` statements used: what decides between the dialects.
    tables_read: usize,
    /// Dollar-quoted strings, `COPY ... FROM stdin` data or psql meta-commands were seen.
    saw_postgres_only_syntax: bool,
    /// A table option `ENGINE=` or `AUTO_INCREMENT` was seen.
    saw_mysql_only_syntax: bool,
    skipped: usize,
}

impl Reader {
    fn read(kind: Kind, sql: &str) -> Reader {
        let mut reader = Reader {
            flavor: Flavor::new(kind),
            tables: DeclaredTables::new(kind),
            partitions: Vec::new(),
            tables_read: 0,
            saw_postgres_only_syntax: false,
            saw_mysql_only_syntax: false,
            skipped: 0,
        };
        match Tokenizer::new(kind.parser_dialect(), sql).tokenize_with_location() {
            Ok(tokens) => reader.read_tokens(tokens),
            Err(error) => {
                let dialect = kind.name();
                tracing::debug!(dialect, %error, "cannot tokenize; reading the script piecewise");
                reader.read_piecewise(sql);
            }
        }
        reader
    }

    /// The fallback when the script as a whole cannot be tokenized (an unterminated string or
    /// dollar quote): each piece ending with a `;` at the end of a line is read on its own, so
    /// the damage stays within the piece that holds the error.
    fn read_piecewise(&mut self, sql: &str) {
        for piece in pieces_ending_lines_with_semicolon(sql) {
            self.read_piece(piece);
        }
    }

    fn read_piece(&mut self, piece: &str) {
        let dialect = self.flavor.kind().parser_dialect();
        match Tokenizer::new(dialect, piece).tokenize_with_location() {
            Ok(tokens) => self.read_tokens(tokens),
            Err(error) => {
                // The statements that end before the unreadable token are still good.
                let unreadable = byte_offset(piece, error.location);
                if let Ok(mut tokens) = Tokenizer::new(dialect, &piece[..unreadable]).tokenize_with_location()
                    && let Some(last) = tokens.iter().rposition(|token| token.token == Token::SemiColon)
                {
                    tokens.truncate(last + 1);
                    self.read_tokens(tokens);
                }
                self.skipped += 1;
            }
        }
    }

    fn read_tokens(&mut self, tokens: Vec<TokenWithSpan>) {
        self.saw_postgres_only_syntax |=
            tokens.iter().any(|token| matches!(token.token, Token::DollarQuotedString(_) | Token::CopyData { .. }));
        // A table option after the columns (`) ENGINE=InnoDB`) or `AUTO_INCREMENT`: a column may
        // be named `engine`, and SQLite reads backquoted names too.
        let words: Vec<&Token> =
            tokens.iter().map(|token| &token.token).filter(|token| !matches!(token, Token::Whitespace(_))).collect();
        let auto_increment =
            |token: &Token| matches!(token, Token::Word(word) if word.keyword == Keyword::AUTO_INCREMENT);
        self.saw_mysql_only_syntax |= words.iter().any(|token| auto_increment(token))
            || words.windows(3).any(|three| match three {
                [Token::RParen, Token::Word(word), Token::Eq] => {
                    word.quote_style.is_none() && word.keyword == Keyword::ENGINE
                }
                _ => false,
            });
        let meta_commands = split_statements(tokens, |statement| self.read_statement(statement));
        self.skipped += meta_commands;
        self.saw_postgres_only_syntax |= meta_commands > 0;
    }

    /// Reads the tokens of one `;`-terminated statement. Only `CREATE` and `ALTER` can add to
    /// the schema, so the rest (notably thousands of INSERTs) is skipped without parsing.
    fn read_statement(&mut self, tokens: Vec<TokenWithSpan>) {
        if !matches!(leading_keywords(&tokens, 1).as_slice(), [Keyword::CREATE | Keyword::ALTER]) {
            self.skipped += 1;
            return;
        }
        let mut parser = Parser::new(self.flavor.kind().parser_dialect())
            .with_tokens_with_locations(without_only_in_create_index(tokens));
        // A chunk normally holds one statement; more when a `;` was missing between them.
        let error = loop {
            while parser.consume_token(&Token::SemiColon) {}
            if parser.peek_token_ref().token == Token::EOF {
                break None;
            }
            let start = parser.index();
            match parser.parse_statement() {
                Ok(statement) => {
                    if !self.apply(statement) {
                        self.skipped += 1;
                    }
                    // Never loop on a statement that consumed nothing.
                    if parser.index() == start {
                        break None;
                    }
                }
                Err(error) => break Some(error),
            }
        };
        if let Some(error) = error
            && !self.apply_attach_partition_tokens(&parser.into_tokens())
        {
            let dialect = self.flavor.kind().name();
            tracing::debug!(dialect, %error, "skipping a statement");
            self.skipped += 1;
        }
    }

    /// Applies a parsed statement; `false` when it adds nothing to the schema.
    fn apply(&mut self, statement: Statement) -> bool {
        match statement {
            Statement::CreateTable(create) => self.create_table(&create),
            Statement::AlterTable(alter) => self.alter_table(&alter),
            Statement::CreateIndex(index) => self.create_index(&index),
            _ => false,
        }
    }

    fn create_table(&mut self, create: &CreateTable) -> bool {
        let flavor = self.flavor;
        let Some(target) = flavor.table_ref(&create.name) else {
            return false;
        };
        // Temporary tables do not outlive the session that runs the script.
        if create.temporary || is_own_table(&target.name) {
            return false;
        }
        let existing = self.tables.find(&target);
        if existing.is_some() && create.if_not_exists {
            return false;
        }
        let mut table = Table {
            schema: target.schema.clone(),
            name: target.name.clone(),
            partitioned: create.partition_by.is_some(),
            partition_key: create.partition_by.as_ref().and_then(|key| partition_key(&key.to_string())),
            ..Table::default()
        };
        for column in &create.columns {
            add_column(flavor, &mut table, column);
        }
        for constraint in &create.constraints {
            add_constraint(flavor, &mut table, constraint);
        }
        if let Some(parent) = create.partition_of.as_ref().and_then(|parent| flavor.table_ref(parent)) {
            self.partitions.push(Partition { child: target, parent });
        }
        // A later definition of the same table (a script that drops and recreates it) wins,
        // keeping the place of the first.
        self.tables.put(existing, table);
        self.tables_read += 1;
        true
    }

    fn alter_table(&mut self, alter: &AlterTable) -> bool {
        let flavor = self.flavor;
        let Some(target) = flavor.table_ref(&alter.name) else {
            return false;
        };
        let mut used = false;
        for operation in &alter.operations {
            match operation {
                AlterTableOperation::AddConstraint { constraint, .. } => {
                    if let Some(position) = self.tables.find(&target) {
                        used |= add_constraint(flavor, &mut self.tables[position], constraint);
                    }
                }
                AlterTableOperation::AttachPartitionOf { partition, .. } => {
                    if let Some(child) = flavor.table_ref(partition) {
                        self.partitions.push(Partition { child, parent: target.clone() });
                        used = true;
                    }
                }
                _ => {}
            }
        }
        used
    }

    fn create_index(&mut self, create: &CreateIndex) -> bool {
        let flavor = self.flavor;
        let Some(position) = flavor.table_ref(&create.table_name).and_then(|target| self.tables.find(&target)) else {
            return false;
        };
        // An index name may be schema-qualified in PostgreSQL; the schema is the table's anyway.
        let name = create.name.as_ref().and_then(|name| flavor.table_ref(name)).map(|name| name.name);
        let columns = flavor.index_columns(&create.columns);
        let index = Index {
            partial: create.predicate.is_some(),
            not_null_predicate: create
                .predicate
                .as_ref()
                .map_or_else(Vec::new, |predicate| super::predicate::not_null_columns(flavor.kind(), predicate)),
            expression: has_expression(&create.columns),
            ..Index::new(name, columns, create.unique)
        };
        add_index(&mut self.tables[position], index);
        true
    }

    /// `ALTER TABLE [IF EXISTS] [ONLY] parent ATTACH PARTITION child ...` read from the tokens,
    /// for a dialect whose parser does not know the clause.
    fn apply_attach_partition_tokens(&mut self, tokens: &[TokenWithSpan]) -> bool {
        let words: Vec<&Token> =
            tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_))).collect();
        let Some(rest) = strip_keywords(&words, &[Keyword::ALTER, Keyword::TABLE]) else {
            return false;
        };
        let rest = strip_keywords(rest, &[Keyword::IF, Keyword::EXISTS]).unwrap_or(rest);
        let rest = strip_keywords(rest, &[Keyword::ONLY]).unwrap_or(rest);
        let Some((parent, rest)) = self.object_name_tokens(rest) else {
            return false;
        };
        let Some(rest) = strip_keywords(rest, &[Keyword::ATTACH, Keyword::PARTITION]) else {
            return false;
        };
        let Some((child, _)) = self.object_name_tokens(rest) else {
            return false;
        };
        self.partitions.push(Partition { child, parent });
        true
    }

    /// A possibly qualified name at the start of `tokens` (`a`, `"a"`, `a.b`), and what follows.
    fn object_name_tokens<'t>(&self, tokens: &'t [&'t Token]) -> Option<(TableRef, &'t [&'t Token])> {
        let mut parts = Vec::new();
        let mut rest = tokens;
        loop {
            let [Token::Word(word), after @ ..] = rest else {
                return None;
            };
            parts.push(self.flavor.word(word));
            rest = after;
            match rest {
                [Token::Period, after @ ..] => rest = after,
                _ => break,
            }
        }
        let name = parts.pop()?;
        Some((self.flavor.table_ref_from(parts.pop(), name), rest))
    }

    /// The tables, with each partition folded into the table it belongs to.
    fn finish(self) -> Vec<Table> {
        self.tables.fold_partitions(&self.partitions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::KeyType;
    use crate::schema::{Column, ForeignKey, PartitionKey, ReferentialAction};

    fn column(name: &str, data_type: &str, nullable: bool) -> Column {
        Column { name: name.into(), data_type: data_type.into(), nullable, key_type: KeyType::of_declared(data_type) }
    }

    fn index(name: Option<&str>, columns: &[&str], unique: bool) -> Index {
        Index::new(name.map(Into::into), columns.iter().map(|c| c.to_string()).collect(), unique)
    }

    fn fk(
        columns: &[&str],
        schema: Option<&str>,
        table: &str,
        referenced: &[&str],
        on_delete: ReferentialAction,
    ) -> ForeignKey {
        ForeignKey {
            name: None,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            referenced_schema: schema.map(Into::into),
            referenced_table: table.into(),
            referenced_columns: referenced.iter().map(|c| c.to_string()).collect(),
            on_delete,
        }
    }

    fn named(name: &str, fk: ForeignKey) -> ForeignKey {
        ForeignKey { name: Some(name.to_owned()), ..fk }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    fn table_names(parsed: &ParsedDdl) -> Vec<String> {
        parsed.schema.tables.iter().map(Table::qualified_name).collect()
    }

    fn table<'a>(parsed: &'a ParsedDdl, name: &str) -> &'a Table {
        parsed.schema.table(name).unwrap_or_else(|| panic!("no table {name} in {:?}", table_names(parsed)))
    }

    const PG_DUMP: &str = r#"
--
-- PostgreSQL database dump
--

SET statement_timeout = 0;
SET client_encoding = 'UTF8';
SELECT pg_catalog.set_config('search_path', '', false);

CREATE TYPE public.mood AS ENUM (
    'sad',
    'happy'
);

CREATE FUNCTION public.last_day(timestamp with time zone) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT
    AS $_$
  SELECT 1; SELECT 2;
  CREATE TABLE not_a_table (id int);
$_$;

CREATE TABLE public.customer (
    customer_id integer NOT NULL,
    name character varying(120),
    mood public.mood
);

COMMENT ON TABLE public.customer IS 'People; who pay';

CREATE TABLE public.rental (
    rental_id integer NOT NULL,
    customer_id integer NOT NULL,
    staff_id integer
);

CREATE TABLE public.payment (
    payment_id integer NOT NULL,
    customer_id integer NOT NULL,
    rental_id integer,
    payment_date date NOT NULL
)
PARTITION BY RANGE (payment_date);

CREATE TABLE public.payment_p2022_01 (
    payment_id integer NOT NULL,
    customer_id integer NOT NULL,
    rental_id integer,
    payment_date date NOT NULL
);

CREATE TABLE public.payment_p2022_02 (
    payment_id integer NOT NULL,
    customer_id integer NOT NULL,
    rental_id integer,
    payment_date date NOT NULL
);

ALTER TABLE ONLY public.payment ATTACH PARTITION public.payment_p2022_01 FOR VALUES FROM ('2022-01-01') TO ('2022-02-01');
ALTER TABLE ONLY public.payment ATTACH PARTITION public.payment_p2022_02 FOR VALUES FROM ('2022-02-01') TO ('2022-03-01');

ALTER TABLE ONLY public.customer
    ADD CONSTRAINT customer_pkey PRIMARY KEY (customer_id);
ALTER TABLE ONLY public.customer
    ADD CONSTRAINT customer_name_key UNIQUE (name);
ALTER TABLE ONLY public.rental
    ADD CONSTRAINT rental_pkey PRIMARY KEY (rental_id);
ALTER TABLE ONLY public.payment
    ADD CONSTRAINT payment_pkey PRIMARY KEY (payment_date, payment_id);

CREATE INDEX idx_fk_customer_id ON public.rental USING btree (customer_id);
CREATE INDEX payment_p2022_01_customer_id_idx ON public.payment_p2022_01 USING btree (customer_id);
CREATE INDEX payment_p2022_02_customer_id_idx ON public.payment_p2022_02 USING btree (customer_id);

ALTER TABLE ONLY public.rental
    ADD CONSTRAINT rental_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.customer(customer_id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE ONLY public.payment_p2022_01
    ADD CONSTRAINT payment_p2022_01_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.customer(customer_id);
ALTER TABLE ONLY public.payment_p2022_01
    ADD CONSTRAINT payment_p2022_01_rental_id_fkey FOREIGN KEY (rental_id) REFERENCES public.rental(rental_id) ON DELETE SET NULL;
ALTER TABLE ONLY public.payment_p2022_02
    ADD CONSTRAINT payment_p2022_02_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.customer(customer_id);
ALTER TABLE ONLY public.payment_p2022_02
    ADD CONSTRAINT payment_p2022_02_rental_id_fkey FOREIGN KEY (rental_id) REFERENCES public.rental(rental_id) ON DELETE SET NULL;

ALTER TABLE public.customer OWNER TO postgres;
"#;

    #[test]
    fn reads_a_pg_dump_script() {
        let parsed = parse_ddl(PG_DUMP);
        assert_eq!(parsed.dialect, "postgresql");
        // SET x2, SELECT, CREATE TYPE, CREATE FUNCTION, COMMENT, OWNER TO.
        assert_eq!(parsed.skipped, 7);
        assert_eq!(table_names(&parsed), ["public.customer", "public.rental", "public.payment"]);

        let customer = table(&parsed, "public.customer");
        assert_eq!(
            customer,
            &Table {
                partitioned: false,
                partition_key: None,
                off_search_path: false,
                delete_triggers: vec![],
                schema: Some("public".into()),
                name: "customer".into(),
                columns: vec![
                    column("customer_id", "integer", false),
                    column("name", "character varying(120)", true),
                    column("mood", "public.mood", true),
                ],
                primary_key: strings(&["customer_id"]),
                foreign_keys: vec![],
                indexes: vec![
                    index(Some("customer_pkey"), &["customer_id"], true),
                    index(Some("customer_name_key"), &["name"], true),
                ],
            }
        );

        let rental = table(&parsed, "rental");
        assert_eq!(rental.primary_key, strings(&["rental_id"]));
        assert_eq!(
            rental.foreign_keys,
            [named(
                "rental_customer_id_fkey",
                fk(&["customer_id"], Some("public"), "customer", &["customer_id"], ReferentialAction::Cascade)
            )]
        );
        assert_eq!(
            rental.indexes,
            [
                index(Some("rental_pkey"), &["rental_id"], true),
                index(Some("idx_fk_customer_id"), &["customer_id"], false)
            ]
        );
    }

    #[test]
    fn folds_attached_partitions_into_their_table() {
        let parsed = parse_ddl(PG_DUMP);
        let payment = table(&parsed, "public.payment");
        assert_eq!(payment.primary_key, strings(&["payment_date", "payment_id"]));
        assert_eq!(
            payment.foreign_keys,
            [
                named(
                    "payment_p2022_01_customer_id_fkey",
                    fk(&["customer_id"], Some("public"), "customer", &["customer_id"], ReferentialAction::NoAction)
                ),
                named(
                    "payment_p2022_01_rental_id_fkey",
                    fk(&["rental_id"], Some("public"), "rental", &["rental_id"], ReferentialAction::SetNull)
                ),
            ]
        );
        assert_eq!(
            payment.indexes,
            [
                index(Some("payment_pkey"), &["payment_date", "payment_id"], true),
                index(Some("payment_p2022_01_customer_id_idx"), &["customer_id"], false),
            ]
        );
        assert!(payment.partitioned);
        assert!(payment.partition_key.as_ref().is_some_and(|key| key.is_range_on("payment_date")), "{payment:?}");
        assert!(parsed.schema.table("payment_p2022_01").is_none());
        assert!(parsed.schema.table("payment_p2022_02").is_none());
    }

    #[test]
    fn folds_partition_of_tables_and_references_to_them() {
        let parsed = parse_ddl(
            "CREATE TABLE events (id int, kind text NOT NULL, PRIMARY KEY (id, kind)) PARTITION BY LIST (kind);
             CREATE TABLE events_a PARTITION OF events FOR VALUES IN ('a');
             CREATE TABLE events_b PARTITION OF events FOR VALUES IN ('b') PARTITION BY RANGE (id);
             CREATE TABLE events_b1 PARTITION OF events_b FOR VALUES FROM (1) TO (100);
             CREATE TABLE users (id int PRIMARY KEY);
             ALTER TABLE events_b1 ADD CONSTRAINT events_b1_user FOREIGN KEY (id) REFERENCES users (id) ON DELETE CASCADE;
             ALTER TABLE events_a ADD CONSTRAINT events_a_user FOREIGN KEY (id) REFERENCES users (id) ON DELETE CASCADE;
             CREATE TABLE notes (event_id int, event_kind text, FOREIGN KEY (event_id, event_kind) REFERENCES events_a (id, kind));",
        );
        assert_eq!(table_names(&parsed), ["events", "users", "notes"]);
        let list = PartitionKey { strategy: "list".into(), columns: vec![Some("kind".into())], function: None };
        assert_eq!(table(&parsed, "events").partition_key, Some(list));
        assert_eq!(
            table(&parsed, "events").foreign_keys,
            [named("events_a_user", fk(&["id"], None, "users", &["id"], ReferentialAction::Cascade))]
        );
        assert_eq!(
            table(&parsed, "notes").foreign_keys,
            [fk(&["event_id", "event_kind"], None, "events", &["id", "kind"], ReferentialAction::NoAction)]
        );
        assert_eq!(parsed.skipped, 0);
    }

    #[test]
    fn reads_a_sqlite_script_with_bracketed_identifiers() {
        let parsed = parse_ddl(
            "PRAGMA foreign_keys = ON;
            DROP TABLE IF EXISTS [Album];
            CREATE TABLE [Artist]
            (
                [ArtistId] INTEGER PRIMARY KEY,
                [Name] NVARCHAR(120)
            );
            CREATE TABLE [Album]
            (
                [AlbumId] INTEGER  NOT NULL,
                [Title] NVARCHAR(160)  NOT NULL,
                [ArtistId] INTEGER  NOT NULL,
                CONSTRAINT [PK_Album] PRIMARY KEY  ([AlbumId]),
                CONSTRAINT [FK_AlbumArtistId] FOREIGN KEY ([ArtistId]) REFERENCES [Artist] ([ArtistId])
                    ON DELETE NO ACTION ON UPDATE NO ACTION
            );
            CREATE INDEX [IFK_AlbumArtistId] ON [Album] ([ArtistId]);
            CREATE TABLE `Track` (
                `TrackId` INTEGER PRIMARY KEY AUTOINCREMENT,
                `AlbumId` INTEGER REFERENCES \"Album\" (\"AlbumId\") ON DELETE CASCADE,
                UNIQUE (`AlbumId`, `TrackId`)
            );",
        );
        assert_eq!(parsed.dialect, "sqlite");
        assert_eq!(parsed.skipped, 2);
        assert_eq!(table_names(&parsed), ["Artist", "Album", "Track"]);
        assert_eq!(
            table(&parsed, "Artist"),
            &Table {
                partitioned: false,
                partition_key: None,
                off_search_path: false,
                delete_triggers: vec![],
                schema: None,
                name: "Artist".into(),
                columns: vec![column("ArtistId", "integer", false), column("Name", "nvarchar(120)", true)],
                primary_key: strings(&["ArtistId"]),
                foreign_keys: vec![],
                indexes: vec![index(None, &["ArtistId"], true)],
            }
        );
        assert_eq!(
            table(&parsed, "Album"),
            &Table {
                partitioned: false,
                partition_key: None,
                off_search_path: false,
                delete_triggers: vec![],
                schema: None,
                name: "Album".into(),
                columns: vec![
                    column("AlbumId", "integer", false),
                    column("Title", "nvarchar(160)", false),
                    column("ArtistId", "integer", false),
                ],
                primary_key: strings(&["AlbumId"]),
                foreign_keys: vec![named(
                    "FK_AlbumArtistId",
                    fk(&["ArtistId"], None, "Artist", &["ArtistId"], ReferentialAction::NoAction)
                )],
                indexes: vec![
                    index(Some("PK_Album"), &["AlbumId"], true),
                    index(Some("IFK_AlbumArtistId"), &["ArtistId"], false),
                ],
            }
        );
        let track = table(&parsed, "Track");
        assert_eq!(track.columns, [column("TrackId", "integer", false), column("AlbumId", "integer", true)]);
        assert_eq!(track.foreign_keys, [fk(&["AlbumId"], None, "Album", &["AlbumId"], ReferentialAction::Cascade)]);
        assert_eq!(track.indexes, [index(None, &["TrackId"], true), index(None, &["AlbumId", "TrackId"], true)]);
    }

    #[test]
    fn composite_primary_key_keeps_key_order_and_is_not_null() {
        let parsed = parse_ddl(
            "CREATE TABLE film_actor (actor_id int, film_id int, note text, CONSTRAINT film_actor_pkey PRIMARY KEY (film_id, actor_id));",
        );
        let film_actor = table(&parsed, "film_actor");
        assert_eq!(film_actor.primary_key, strings(&["film_id", "actor_id"]));
        assert_eq!(
            film_actor.columns,
            [column("actor_id", "int", false), column("film_id", "int", false), column("note", "text", true)]
        );
        assert_eq!(film_actor.indexes, [index(Some("film_actor_pkey"), &["film_id", "actor_id"], true)]);
    }

    #[test]
    fn not_null_and_nullable_foreign_key_columns() {
        let parsed = parse_ddl(
            "CREATE TABLE parent (id bigint PRIMARY KEY);
             CREATE TABLE child (
                 id bigint PRIMARY KEY,
                 owner_id bigint NOT NULL REFERENCES parent (id) ON DELETE CASCADE,
                 reviewer_id bigint CONSTRAINT child_reviewer_fkey REFERENCES parent ON DELETE SET NULL,
                 CONSTRAINT child_owner_key UNIQUE (owner_id)
             );",
        );
        let child = table(&parsed, "child");
        assert_eq!(
            child.columns,
            [column("id", "bigint", false), column("owner_id", "bigint", false), column("reviewer_id", "bigint", true),]
        );
        assert_eq!(
            child.foreign_keys,
            [
                fk(&["owner_id"], None, "parent", &["id"], ReferentialAction::Cascade),
                named("child_reviewer_fkey", fk(&["reviewer_id"], None, "parent", &[], ReferentialAction::SetNull)),
            ]
        );
        assert_eq!(child.indexes, [index(None, &["id"], true), index(Some("child_owner_key"), &["owner_id"], true)]);
        assert!(child.has_index_leading_with(&["owner_id".to_owned()]));
        assert!(!child.has_index_leading_with(&["reviewer_id".to_owned()]));
    }

    #[test]
    fn a_bad_statement_costs_only_itself() {
        let parsed = parse_ddl(
            "CREATE TABLE a (id int PRIMARY KEY);
             CREATE TABLE broken (id int,, oops;
             THIS IS NOT SQL AT ALL;
             CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a (id));",
        );
        assert_eq!(table_names(&parsed), ["a", "b"]);
        assert_eq!(parsed.skipped, 2);
        assert_eq!(table(&parsed, "b").foreign_keys, [fk(&["a_id"], None, "a", &["id"], ReferentialAction::NoAction)]);
    }

    #[test]
    fn an_unterminated_string_costs_only_its_statement() {
        let parsed = parse_ddl(
            "CREATE TABLE a (id int);\nCREATE TABLE b (name text DEFAULT 'oops);\nCREATE TABLE c (id int);\n",
        );
        assert_eq!(table_names(&parsed), ["a", "c"]);
        assert_eq!(parsed.skipped, 1);
    }

    #[test]
    fn empty_and_comment_only_scripts_have_no_tables() {
        for sql in ["", "  \n", "-- nothing here\n/* at all */"] {
            let parsed = parse_ddl(sql);
            let schema = Schema::new(Vec::new(), Some(Kind::Postgres));
            assert_eq!(parsed, ParsedDdl { schema, dialect: "postgresql", skipped: 0 });
        }
    }

    #[test]
    fn postgres_folds_unquoted_identifiers_and_keeps_quoted_ones() {
        let parsed = parse_ddl(
            r#"CREATE TABLE "Sales"."Order" ("Id" int PRIMARY KEY, CustomerId int REFERENCES Sales.Customer (Id));"#,
        );
        let order = &parsed.schema.tables[0];
        assert_eq!((order.schema.as_deref(), order.name.as_str()), (Some("Sales"), "Order"));
        assert_eq!(order.columns, [column("Id", "int", false), column("customerid", "int", true)]);
        assert_eq!(
            order.foreign_keys,
            [fk(&["customerid"], Some("sales"), "customer", &["id"], ReferentialAction::NoAction)]
        );
    }

    #[test]
    fn index_columns_stop_at_the_first_expression() {
        let parsed = parse_ddl(
            "CREATE TABLE public.t (a int, b text, c int);
             CREATE UNIQUE INDEX t_a_lower_b ON ONLY public.t USING btree (a, lower(b), c);
             CREATE INDEX t_lower_b ON public.t USING btree (lower(b));
             CREATE INDEX IF NOT EXISTS t_c ON t (c DESC);
             CREATE INDEX on_a_view ON public.some_view (a);",
        );
        assert_eq!(
            table(&parsed, "t").indexes,
            [
                Index { expression: true, ..index(Some("t_a_lower_b"), &["a"], true) },
                Index { expression: true, ..index(Some("t_lower_b"), &[], false) },
                index(Some("t_c"), &["c"], false),
            ]
        );
        assert_eq!(parsed.skipped, 1);
    }

    #[test]
    fn skips_the_tools_own_tables() {
        let parsed = parse_ddl(
            "CREATE TABLE cascade_runs (id int PRIMARY KEY);
             CREATE TABLE Cascade_Progress (id int);
             CREATE TABLE cascaded (id int);
             CREATE INDEX cascade_runs_idx ON cascade_runs (id);",
        );
        assert_eq!(table_names(&parsed), ["cascaded"]);
        assert_eq!(parsed.skipped, 3);
    }

    #[test]
    fn semicolons_inside_a_trigger_body_do_not_split_it() {
        let parsed = parse_ddl(
            "CREATE TABLE [a] ([id] INTEGER PRIMARY KEY, [n] INT);
             CREATE TRIGGER [a_touch] AFTER INSERT ON [a] BEGIN
                 UPDATE [a] SET [n] = CASE WHEN [n] IS NULL THEN 0 ELSE [n] END WHERE [id] = NEW.[id];
                 DELETE FROM [a] WHERE [id] < 0;
             END;
             CREATE TABLE [b] ([id] INTEGER PRIMARY KEY, [a_id] INTEGER REFERENCES [a]);",
        );
        assert_eq!(parsed.dialect, "sqlite");
        assert_eq!(table_names(&parsed), ["a", "b"]);
        assert_eq!(parsed.skipped, 1);
    }

    #[test]
    fn a_body_that_never_ends_does_not_swallow_the_script() {
        let parsed = parse_ddl(
            "CREATE TABLE a (id int);
             CREATE TRIGGER t AFTER INSERT ON a BEGIN DELETE FROM a;
             CREATE TABLE b (id int);",
        );
        assert_eq!(table_names(&parsed), ["a", "b"]);
        assert_eq!(parsed.skipped, 1);
    }

    #[test]
    fn copy_data_and_psql_meta_commands_are_skipped() {
        let parsed = parse_ddl(
            "\\restrict 5mGqSecretKey\n\
             CREATE TABLE public.actor (actor_id integer NOT NULL, name text);\n\
             COPY public.actor (actor_id, name) FROM stdin;\n\
             1\tO'Brien\n\
             2\tSmith; Jones\n\
             \\.\n\
             \\connect other\n\
             ALTER TABLE ONLY public.actor ADD CONSTRAINT actor_pkey PRIMARY KEY (actor_id);\n",
        );
        assert_eq!(table_names(&parsed), ["public.actor"]);
        assert_eq!(table(&parsed, "actor").primary_key, strings(&["actor_id"]));
        // \restrict, COPY, \connect.
        assert_eq!(parsed.skipped, 3);
    }

    #[test]
    fn statements_find_their_table_by_exact_name_else_with_the_schema_left_out() {
        let parsed = parse_ddl(
            "CREATE TABLE public.a (id int PRIMARY KEY);
             CREATE TABLE other.a (id int PRIMARY KEY);
             CREATE TABLE public.b (id int PRIMARY KEY, a_id int);
             ALTER TABLE b ADD CONSTRAINT b_a FOREIGN KEY (a_id) REFERENCES a (id);
             CREATE INDEX b_a_id ON public.b (a_id);
             CREATE INDEX other_a_id ON other.a (id);
             CREATE TABLE a (id int, name text);
             CREATE INDEX a_name ON a (name);
             CREATE INDEX a_id ON public.a (id);",
        );
        assert_eq!(parsed.dialect, "postgresql");
        // The unqualified `a` replaces the first `a` whose schema it leaves open, in its place.
        assert_eq!(table_names(&parsed), ["a", "other.a", "public.b"]);
        let a = &parsed.schema.tables[0];
        assert_eq!(a.columns, [column("id", "int", true), column("name", "text", true)]);
        assert_eq!(a.indexes, [index(Some("a_name"), &["name"], false), index(Some("a_id"), &["id"], false)]);
        assert_eq!(parsed.schema.tables[1].indexes.last(), Some(&index(Some("other_a_id"), &["id"], false)));
        let b = &parsed.schema.tables[2];
        assert_eq!(b.foreign_keys, [named("b_a", fk(&["a_id"], None, "a", &["id"], ReferentialAction::NoAction))]);
        assert_eq!(b.indexes.last(), Some(&index(Some("b_a_id"), &["a_id"], false)));
    }

    #[test]
    fn sqlite_statements_find_their_table_ignoring_ascii_case() {
        let parsed = parse_ddl(
            "CREATE TABLE [Album] ([AlbumId] INTEGER PRIMARY KEY, [Title] TEXT);
             CREATE INDEX [IAlbumTitle] ON [ALBUM] ([Title]);
             CREATE TABLE IF NOT EXISTS album ([Other] INTEGER);
             CREATE TABLE [Track] ([TrackId] INTEGER PRIMARY KEY, [AlbumId] INTEGER);
             CREATE TABLE ALBUM ([AlbumId] INTEGER PRIMARY KEY, [Name] TEXT);
             CREATE INDEX [IAlbumName] ON [album] ([Name]);",
        );
        assert_eq!(parsed.dialect, "sqlite");
        assert_eq!(table_names(&parsed), ["ALBUM", "Track"]);
        let album = table(&parsed, "ALBUM");
        assert_eq!(album.columns, [column("AlbumId", "integer", false), column("Name", "text", true)]);
        assert_eq!(album.indexes, [index(None, &["AlbumId"], true), index(Some("IAlbumName"), &["Name"], false)]);
    }

    #[test]
    fn a_later_definition_replaces_an_earlier_one_in_place() {
        let parsed = parse_ddl(
            "CREATE TABLE a (id int);
             CREATE TABLE b (id int);
             CREATE TABLE IF NOT EXISTS a (other int);
             DROP TABLE a;
             CREATE TABLE a (id int, name text);",
        );
        assert_eq!(table_names(&parsed), ["a", "b"]);
        assert_eq!(table(&parsed, "a").columns, [column("id", "int", true), column("name", "text", true)]);
    }

    #[test]
    fn a_mysqldump_is_read_as_mysql() {
        let parsed = parse_ddl(
            "/*!40101 SET NAMES utf8mb4 */;
            CREATE TABLE `org` (`id` bigint(20) unsigned NOT NULL AUTO_INCREMENT, PRIMARY KEY (`id`))
                ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
            CREATE TABLE `member` (
              `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
              `org_id` bigint(20) unsigned NOT NULL,
              PRIMARY KEY (`id`),
              KEY `member_org` (`org_id`),
              CONSTRAINT `member_org_fk` FOREIGN KEY (`org_id`) REFERENCES `org` (`id`)
            ) ENGINE=InnoDB;
            INSERT INTO `org` VALUES (1);",
        );
        assert_eq!(parsed.dialect, "mysql");
        assert_eq!(table_names(&parsed), ["org", "member"]);
        let member = table(&parsed, "member");
        assert!(member.has_index_leading_with(&["org_id".to_owned()]));
        // InnoDB checks a key without an action at once, as RESTRICT.
        assert_eq!(member.foreign_keys[0].on_delete, ReferentialAction::Restrict);
        assert_eq!(member.foreign_keys[0].referenced_table, "org");
        // InnoDB indexes a foreign key no index leads with.
        let parsed = parse_ddl(
            "CREATE TABLE `org` (`id` bigint NOT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB;
            CREATE TABLE `note` (`id` bigint NOT NULL, `org_id` bigint, PRIMARY KEY (`id`),
              CONSTRAINT `note_org` FOREIGN KEY (`org_id`) REFERENCES `org` (`id`)) ENGINE=InnoDB;",
        );
        assert!(table(&parsed, "note").has_index_leading_with(&["org_id".to_owned()]));
        // A column named `engine`, or backquoted names, make no MySQL script.
        let sqlite = parse_ddl(
            "CREATE TABLE `car` (id INTEGER PRIMARY KEY, engine TEXT, unsigned INTEGER, CHECK (engine = 'v8'));",
        );
        assert_eq!(sqlite.dialect, "sqlite");
    }
}
