//! The markdown printed to stdout: a table per tree and its targets, each "met" or "MISSED".

use crate::Measured;
use crate::methods::{LOOP_BATCH, Method, Outcome, PT_ARCHIVER_LIMIT};

/// Two decimals, rounded down, so that a target missed by a little never reads as met.
fn rounded_down(ratio: f64) -> f64 {
    (ratio * 100.0).floor() / 100.0
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0))
}

/// `outcome`'s throughput against the native DELETE's on the same tree, rounded down.
fn ratio(measured: &Measured, outcome: &Outcome) -> Option<f64> {
    let native = measured.outcome(Method::Native)?;
    Some(rounded_down(native.wall.as_secs_f64() / outcome.wall.as_secs_f64()))
}

fn table(results: &[Measured]) {
    println!(
        "| database | tree rows | rows deleted | method | foreign keys | wall (ms) | rows/s | × native | transactions | \
         longest (ms) | p99 (ms) | cascade elapsed_ms | peak RSS (MiB) | all runs (ms) |"
    );
    println!("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for m in results {
        for o in &m.outcomes {
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
                m.database,
                m.tree_rows,
                m.deleted_rows,
                o.method.name(),
                o.method.keys().name(),
                o.wall.as_secs_f64() * 1e3,
                o.rows_per_second(),
                ratio(m, o).map_or("n/a".to_owned(), |r| format!("{r:.2}")),
                o.transactions,
                if o.max_ms.is_nan() { "n/a".to_owned() } else { format!("{:.1}", o.max_ms) },
                o.p99_ms.map_or("n/a".to_owned(), |p| format!("{p:.1}")),
                o.engine_ms.map_or("".to_owned(), |e| format!("{e:.0}")),
                if o.method.is_cascade() { mib(o.rss_kib) } else { "".to_owned() },
                o.walls.iter().map(|w| format!("{:.0}", w.as_secs_f64() * 1e3)).collect::<Vec<_>>().join(", "),
            );
        }
    }
    let builds: Vec<String> =
        results.iter().map(|m| format!("{} {} rows {:.1} s", m.database, m.tree_rows, m.build.as_secs_f64())).collect();
    println!("\nBuilding the databases (every kind of foreign keys): {}.", builds.join(", "));
}

/// A minimum throughput against native for `method` on `database`.
struct RatioTarget {
    database: &'static str,
    method: Method,
    at_least: f64,
}

/// The targets every section shares: throughput ratios, the longest transaction, peak RSS
/// under `rss_mib` and flat between the smallest and the largest tree.
fn targets(results: &[Measured], ratios: &[RatioTarget], rss_mib: u64) {
    println!("\nTargets:\n");
    for m in results {
        let of = format!("{}, {} rows", m.database, m.tree_rows);
        for target in ratios.iter().filter(|t| t.database == m.database) {
            if let Some(ratio) = m.outcome(target.method).and_then(|o| ratio(m, o)) {
                println!(
                    "- {of}: {} ({}) at least {:.2}× native: {ratio:.2}× ({})",
                    target.method.name(),
                    target.method.keys().describe(),
                    target.at_least,
                    verdict(ratio >= target.at_least)
                );
            }
        }
        let cascades: Vec<&Outcome> = m.outcomes.iter().filter(|o| o.method.is_cascade()).collect();
        if let Some(longest) = cascades.iter().max_by(|a, b| a.max_ms.total_cmp(&b.max_ms)) {
            println!(
                "- {of}: every cascade transaction at most 100 ms: longest {:.1} ms, {} ({})",
                longest.max_ms,
                longest.method.name(),
                verdict(cascades.iter().all(|o| o.max_ms <= 100.0))
            );
        }
        let rss: Vec<Option<u64>> = cascades.iter().map(|o| o.rss_kib).collect();
        if !rss.is_empty() {
            let largest = rss.iter().copied().max().flatten();
            let known = rss.iter().all(Option::is_some);
            println!(
                "- {of}: peak RSS of every cascade run under {rss_mib} MiB: largest {} MiB ({})",
                mib(largest),
                verdict(known && largest.is_some_and(|k| k < rss_mib * 1024))
            );
        }
        for o in &m.outcomes {
            let Some(cascade) = o.method.loop_counterpart().and_then(|c| m.outcome(c)) else { continue };
            println!(
                "- {of}, {}: the hand-written loop not faster than cascade: loop {:.0} ms, cascade {:.0} ms \
                 ({})",
                o.method.keys().describe(),
                o.wall.as_secs_f64() * 1e3,
                cascade.wall.as_secs_f64() * 1e3,
                verdict(cascade.wall <= o.wall)
            );
        }
    }
    // Flat: every cascade method's RSS on the largest tree against the smallest, per database.
    let mut databases: Vec<&str> = results.iter().map(|m| m.database).collect();
    databases.dedup();
    for database in databases {
        let trees: Vec<&Measured> = results.iter().filter(|m| m.database == database).collect();
        let (Some(large), Some(small)) =
            (trees.iter().max_by_key(|m| m.tree_rows), trees.iter().min_by_key(|m| m.tree_rows))
        else {
            continue;
        };
        if large.tree_rows == small.tree_rows {
            continue;
        }
        let growth: Vec<(Method, Option<f64>)> = large
            .outcomes
            .iter()
            .filter(|o| o.method.is_cascade())
            .map(|o| {
                let before = small.outcome(o.method).and_then(|s| s.rss_kib);
                (o.method, o.rss_kib.zip(before).map(|(big, little)| big as f64 / little as f64))
            })
            .collect();
        let Some((method, worst)) =
            growth.iter().max_by(|a, b| a.1.unwrap_or(f64::MAX).total_cmp(&b.1.unwrap_or(f64::MAX)))
        else {
            continue;
        };
        println!(
            "- {database}: peak RSS flat from {} to {} rows (at most 1.25×): largest growth {} ({}) ({})",
            small.tree_rows,
            large.tree_rows,
            worst.map_or("n/a".to_owned(), |g| format!("{g:.2}×")),
            method.name(),
            verdict(growth.iter().all(|(_, g)| g.is_some_and(|g| g <= 1.25)))
        );
    }
}

/// The realistic tree: every method side by side, against the throughput targets.
pub fn realistic(results: &[Measured], durability: &[(&str, String)], repeat: u64) {
    println!("## Realistic tree: org → 20 project → grp → 1 hash + 8 event per group\n");
    table(results);
    let ratios = [
        RatioTarget { database: "SQLite", method: Method::Cascade, at_least: 0.9 },
        RatioTarget { database: "SQLite", method: Method::Outbox, at_least: 0.9 },
        RatioTarget { database: "SQLite", method: Method::Outbox, at_least: 0.6 },
        RatioTarget { database: "SQLite", method: Method::Archive, at_least: 0.6 },
        RatioTarget { database: "PostgreSQL", method: Method::Cascade, at_least: 0.45 },
        RatioTarget { database: "PostgreSQL", method: Method::Outbox, at_least: 0.3 },
        RatioTarget { database: "PostgreSQL", method: Method::CascadeWithoutKeys, at_least: 1.0 },
        RatioTarget { database: "MariaDB", method: Method::Cascade, at_least: 0.5 },
    ];
    targets(results, &ratios, 50);
    for m in results {
        let (Some(archiver), Some(cascade)) = (m.outcome(Method::PtArchiver), m.outcome(Method::Cascade)) else {
            continue;
        };
        println!(
            "- {}, {} rows: cascade faster than pt-archiver purging table by table: {:.0} ms against {:.0} ms ({})",
            m.database,
            m.tree_rows,
            cascade.wall.as_secs_f64() * 1e3,
            archiver.wall.as_secs_f64() * 1e3,
            verdict(cascade.wall < archiver.wall)
        );
    }
    for m in results {
        let (Some(trigger), Some(outbox)) = (m.outcome(Method::NativeWithTrigger), m.outcome(Method::Outbox)) else {
            continue;
        };
        println!(
            "- {}, {} rows: cascade + outbox + status faster than the native DELETE + trigger tombstones: {:.0} ms \
             against {:.0} ms ({})",
            m.database,
            m.tree_rows,
            outbox.wall.as_secs_f64() * 1e3,
            trigger.wall.as_secs_f64() * 1e3,
            verdict(outbox.wall < trigger.wall)
        );
    }
    for m in results {
        let (Some(limit), Some(outbox)) = (m.outcome(Method::NativeWithTombstones), m.outcome(Method::Outbox)) else {
            continue;
        };
        println!(
            "- {}, {} rows: cascade + outbox + status against the native DELETE + tombstones (the limit with the \
             outbox; no target): {:.2}×",
            m.database,
            m.tree_rows,
            limit.wall.as_secs_f64() / outbox.wall.as_secs_f64()
        );
    }
    println!("\n{}", rounds(repeat));
    println!(
        "\nMethods, each on its own fresh copy of the database: native DELETE: one `DELETE FROM org WHERE id = 1` with \
         ON DELETE CASCADE on every foreign key, one transaction, the statement alone timed. Native DELETE + \
         tombstones: the same, after one `INSERT ... SELECT` per outbox table (`grp`, `event`) of the tombstones \
         cascade writes into its own `cascade_outbox_entry` (made by its migrations, with its indexes), in the same \
         transaction, the statements alone timed: the physical limit with the outbox. Native DELETE + bare \
         tombstones: the same number of tombstones into a table of a key and the object only, no other index (the \
         most that any outbox writing one row per deleted row can reach). Native DELETE + trigger tombstones: the \
         native DELETE alone timed, with a row-level `AFTER DELETE` trigger on `grp` and `event` (made before the \
         clock starts; PL/pgSQL on PostgreSQL) inserting the tombstone cascade writes into `cascade_outbox_entry`, with the codes of its names as literals: what a \
         user of native cascades would build. \
         Hand-written loop \
         (sqlx, in the bench): per transaction up to {LOOP_BATCH} `grp` ids of org 1 in id order, their `hash` and \
         `event` rows, then those groups; then the projects and the org in one transaction; timed from connecting \
         to closing. cascade: `cascade delete org 1 --confirm --format json` of the release binary, org/project/grp \
         per_row and hash/event bulk, default settings (adaptive chunk sizes); + outbox + status: a status check on \
         `org` and tombstones for every `grp` and `event` row; + archive: `--archive DIR` as well. Foreign keys \
         \"none\": the same tables and indexes without any foreign key; its ratio is against the native DELETE with \
         foreign keys. Wall: the whole cascade process (start-up, connecting, schema checks, checking the version of \
         its own tables, recording the run, the deletion); every database copy already has the tool's tables, as \
         after a first run (creating them is that run's cost only: 30-40 ms on PostgreSQL); rows/s = rows deleted / wall; × native rounded down to two decimals. Transactions \
         and longest/p99: cascade's `chunks`, `max_chunk_ms` and `p99_chunk_ms` (nearest rank: with 100 \
         transactions or fewer it is the longest); the loop times its own. Peak RSS: `/usr/bin/time -f %M` of the \
         cascade process. pt-archiver (MariaDB): `pt-archiver --purge --where COND --limit {PT_ARCHIVER_LIMIT} \
         --commit-each --bulk-delete --primary-key-only` once per table, event and hash first, org last (COND \
         selects the table's rows under org 1 through nested `IN` sub-queries), every process timed whole; its \
         transactions are the commits its `--statistics` count. MariaDB has no database copy: each method's \
         database is built anew from the same script."
    );
    println!("\nDurability:\n");
    for (database, settings) in durability {
        println!("- {database}: {settings}");
    }
}

/// How the table's figures were taken from `repeat` runs of each method.
fn rounds(repeat: u64) -> String {
    format!(
        "{repeat} interleaved round(s) of every method; each row is the median run by wall time (the upper one of an \
         even count), with the longest transaction, p99 and peak RSS the worst of all its runs, and every run's wall \
         in the last column."
    )
}

/// The deep tree of the first deletion bench: the native DELETE against cascade.
pub fn forest(results: &[Measured], repeat: u64) {
    let title = "Forest: post → reply, threads of 50 replies (`reply.parent_id` → `reply`), every other one 50 deep";
    cascade_against_native(results, title, repeat, 0.5);
    if results.iter().any(|m| m.database == "MariaDB") {
        println!(
            "\nOn MariaDB the native DELETE does not run: InnoDB cascades 15 levels deep at most and refuses the \
             threads 50 deep (error 193), which cascade deletes."
        );
    }
}

pub fn deep(results: &[Measured], repeat: u64) {
    cascade_against_native(results, "Deep tree: root → 100 l1 → l2 → l3 (about 99 leaves per l2)", repeat, 0.7);
}

/// A section of `cascade delete` against the native DELETE, with its target ratio on each database.
fn cascade_against_native(results: &[Measured], title: &str, repeat: u64, at_least: f64) {
    if results.is_empty() {
        return;
    }
    println!("\n## {title}\n");
    table(results);
    println!("\n{}\n", rounds(repeat));
    let ratios = [
        RatioTarget { database: "SQLite", method: Method::Cascade, at_least },
        RatioTarget { database: "PostgreSQL", method: Method::Cascade, at_least },
    ];
    targets(results, &ratios, 100);
}
