//! Clean-up of data that already went wrong: orphans (child rows whose parent no longer exists),
//! detected first and read only; deleting them is a dry run that counts what would go.

pub mod orphans;

pub use orphans::{
    DeletePreview, LeftAlone, OrphanError, OrphanOptions, OrphanReport, RelationOrphans, RootPreview, SkippedRelation,
    preview_delete, report,
};
