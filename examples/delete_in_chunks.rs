//! The library's chunked interface, as a service would embed it: load a config, compile the
//! deletion of one organization, then call `chunk()` until no work remains. Each call runs one
//! bounded unit (one transaction), so the caller can interleave, pause or hand off in between.
//! Run: `cargo run --example delete_in_chunks` (builds a small demo database in a temp dir).

use cascade::audit::RunOutcome;
use cascade::db::{Access, Database};
use cascade::engine::{DeleteOptions, Engine};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("demo.db");
    let demo = cascade::demo::build(&path, 5_000).await?;
    println!("demo database with {} rows", demo.rows);

    let mut loaded = cascade::config::load(std::path::Path::new("cascades"))?;
    let checked = cascade::planner::check(&mut loaded, None).ok_or_else(|| anyhow::anyhow!("the config has errors"))?;
    let database = Database::connect(&format!("sqlite://{}", path.display()), Access::ReadWrite).await?;
    // Reads the live schema and checks the config against it before anything is written.
    let engine = Engine::prepare(database, &checked).await?;

    let plan = cascade::planner::compile(engine.config(), "organization")?;
    let ids = [demo.organizations[0].to_string()];
    let mut deletion = engine.start(&plan, &ids, DeleteOptions::default()).await?;
    let mut units = 0;
    while deletion.chunk().await? {
        units += 1;
        if units % 10 == 0 {
            println!("{units} chunks, {} rows so far", deletion.summary().rows());
        }
    }
    let summary = deletion.finish(RunOutcome::Succeeded, None).await?;
    println!("done: {} rows in {} chunks, longest {:.1} ms", summary.rows(), summary.chunks, summary.max_chunk_ms);
    Ok(())
}
