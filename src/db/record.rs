//! Rows of the tool's own tables, read by column name into typed values.

use std::str::FromStr;
use std::sync::Arc;

use super::DbError;

/// One row of a query, its columns read as text and found by name (lower case, as both
/// databases name an unquoted alias). A reader says which column it wants and what type it
/// holds: a column the query lacks, a NULL where a value is required, or a value that is not
/// of the type is an error naming the column, never a default standing in for it.
#[derive(Debug)]
pub(crate) struct Record {
    names: Arc<[String]>,
    values: Vec<Option<String>>,
}

impl Record {
    /// The column's value, `None` for NULL.
    pub(crate) fn optional_text(&self, column: &str) -> Result<Option<String>, DbError> {
        Ok(self.value(column)?.map(str::to_owned))
    }

    /// The column's value, which must not be NULL.
    pub(crate) fn text(&self, column: &str) -> Result<String, DbError> {
        self.optional_text(column)?.ok_or_else(|| unreadable(column, "is NULL".to_owned()))
    }

    /// The column's value read as a `T` (a number, mostly), `None` for NULL.
    pub(crate) fn optional<T: FromStr>(&self, column: &str) -> Result<Option<T>, DbError> {
        let Some(text) = self.value(column)? else { return Ok(None) };
        let kind = std::any::type_name::<T>();
        text.parse().map(Some).map_err(|_| unreadable(column, format!("holds `{text}`, which does not read as {kind}")))
    }

    /// The column's value read as a `T`, which must not be NULL.
    pub(crate) fn parsed<T: FromStr>(&self, column: &str) -> Result<T, DbError> {
        self.optional(column)?.ok_or_else(|| unreadable(column, "is NULL".to_owned()))
    }

    fn value(&self, column: &str) -> Result<Option<&str>, DbError> {
        match self.names.iter().position(|name| name == column) {
            Some(index) => Ok(self.values[index].as_deref()),
            None => Err(unreadable(column, format!("is not among the query's columns ({})", self.names.join(", ")))),
        }
    }
}

fn unreadable(column: &str, problem: String) -> DbError {
    DbError::UnreadableColumn { column: column.to_owned(), problem }
}

/// Every row as a [`Record`].
pub(super) fn records<R: sqlx::Row>(rows: &[R]) -> Result<Vec<Record>, sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    use sqlx::Column;
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let names: Arc<[String]> = first.columns().iter().map(|column| column.name().to_lowercase()).collect();
    rows.iter()
        .map(|row| {
            let values =
                (0..row.len()).map(|index| row.try_get::<Option<String>, _>(index)).collect::<Result<_, _>>()?;
            Ok(Record { names: names.clone(), values })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pairs: &[(&str, Option<&str>)]) -> Record {
        Record {
            names: pairs.iter().map(|(name, _)| (*name).to_owned()).collect(),
            values: pairs.iter().map(|(_, value)| value.map(str::to_owned)).collect(),
        }
    }

    #[test]
    fn a_record_reads_its_columns_by_name_and_type() {
        let row = record(&[("id", Some("7")), ("actor", None), ("outcome", Some("failed"))]);
        assert_eq!(row.parsed::<i64>("id").unwrap(), 7);
        assert_eq!(row.optional_text("actor").unwrap(), None);
        assert_eq!(row.text("outcome").unwrap(), "failed");
        assert_eq!(row.optional::<u64>("actor").unwrap(), None);
    }

    #[test]
    fn a_record_names_the_column_it_cannot_read() {
        let row = record(&[("id", Some("seven")), ("actor", None)]);
        let message = |error: DbError| error.to_string();
        assert_eq!(
            message(row.parsed::<i64>("id").unwrap_err()),
            "cannot read column `id` of the tool's tables: holds `seven`, which does not read as i64"
        );
        assert_eq!(message(row.text("actor").unwrap_err()), "cannot read column `actor` of the tool's tables: is NULL");
        assert_eq!(
            message(row.text("pid").unwrap_err()),
            "cannot read column `pid` of the tool's tables: is not among the query's columns (id, actor)"
        );
    }
}
