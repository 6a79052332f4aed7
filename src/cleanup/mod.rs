//! Clean-up of data that already went wrong, detected first and read only; acting on it is a
//! separate, confirmed step. `orphans` finds child rows whose parent no longer exists (and counts
//! what deleting them would remove); `duplicates` finds groups of rows that are equal on some
//! columns.

pub(crate) mod batches;
pub mod duplicates;
pub mod orphans;

pub use batches::{BATCH_SIZES, BatchError, BatchOptions, CleanupSummary};

pub use orphans::{
    DeletePreview, LeftAlone, OrphanError, OrphanOptions, OrphanReport, RelationOrphans, RootPreview, SkippedRelation,
    preview_delete, report,
};
