//! The rows of trees whose children are being deleted, to tell a tree from a loop of rows.
//!
//! A model that references itself is deleted depth first, one chunk per level: below a chunk,
//! the chunk of its rows' children, and so on. The same row can be on that path more than once
//! (a root id below another root id of the same chunk is deleted as its descendant first), so a
//! row seen again proves nothing. But every level holds a row that is a descendant of a row of the
//! level above, so without a loop the levels never outnumber the distinct rows on the path; rows
//! that reference each other in a loop make the levels grow for ever over the same rows.

use std::collections::HashMap;

/// One table's chunks on the path: how many rows each key is in, and how many levels are open.
#[derive(Default)]
struct Levels {
    keys: HashMap<String, u32>,
    open: usize,
}

/// The open chunks of every tree, by table.
#[derive(Default)]
pub(super) struct TreePath<'a> {
    tables: HashMap<&'a str, Levels>,
}

impl<'a> TreePath<'a> {
    /// A chunk of `table` whose children are now deleted; a key of a loop when the levels
    /// outnumber the rows.
    pub(super) fn enter(&mut self, table: &'a str, keys: Vec<String>) -> Result<(), String> {
        let levels = self.tables.entry(table).or_default();
        levels.open += 1;
        let mut repeated = None;
        for key in keys {
            let seen = levels.keys.entry(key.clone()).or_default();
            *seen += 1;
            if *seen > 1 {
                repeated = Some(key);
            }
        }
        match repeated {
            Some(key) if levels.open > levels.keys.len() => Err(key),
            _ => Ok(()),
        }
    }

    /// The chunk `keys` of `table` is deleted.
    pub(super) fn leave(&mut self, table: &str, keys: Vec<String>) {
        let Some(levels) = self.tables.get_mut(table) else { return };
        levels.open = levels.open.saturating_sub(1);
        for key in keys {
            if let Some(seen) = levels.keys.get_mut(&key) {
                *seen -= 1;
                if *seen == 0 {
                    levels.keys.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TreePath;

    fn keys(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|key| (*key).to_owned()).collect()
    }

    #[test]
    fn a_chain_inside_one_chunk_is_no_loop() {
        // Roots 1, 2, 3 where 3's parent is 2 and 2's parent is 1: each goes again below.
        let mut path = TreePath::default();
        assert_eq!(path.enter("t", keys(&["1", "2", "3"])), Ok(()));
        assert_eq!(path.enter("t", keys(&["2", "3"])), Ok(()));
        assert_eq!(path.enter("t", keys(&["3"])), Ok(()));
        path.leave("t", keys(&["3"]));
        path.leave("t", keys(&["2", "3"]));
        path.leave("t", keys(&["1", "2", "3"]));
        assert_eq!(path.enter("t", keys(&["1"])), Ok(()));
    }

    #[test]
    fn rows_that_reference_each_other_are_a_loop() {
        let mut path = TreePath::default();
        assert_eq!(path.enter("t", keys(&["a"])), Ok(()));
        assert_eq!(path.enter("t", keys(&["b"])), Ok(()));
        assert_eq!(path.enter("t", keys(&["a"])), Err("a".to_owned()));
    }
}
