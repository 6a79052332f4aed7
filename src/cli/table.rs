//! Plain-text output: tables (every cell padded to its column's widest, two spaces between
//! columns, the last column left as it is) and counted nouns.

/// `1 batch`, `2 batches`.
pub fn plural(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Rows per model as `member 3, invite 1`, or `empty` when there are none.
pub fn per_model(counts: &indexmap::IndexMap<String, u64>, empty: &str) -> String {
    let parts: Vec<String> = counts.iter().map(|(model, rows)| format!("{model} {rows}")).collect();
    if parts.is_empty() { empty.to_owned() } else { parts.join(", ") }
}

/// The widths of a table's columns, and which are numbers (aligned right).
pub struct Table {
    widths: Vec<usize>,
    right_aligned: Vec<usize>,
}

impl Table {
    /// The widths `headers` and `rows` need; `right_aligned` lists the columns of numbers.
    pub fn new<const N: usize>(headers: [&str; N], rows: &[[String; N]], right_aligned: &[usize]) -> Self {
        let widths =
            (0..N).map(|column| rows.iter().map(|row| row[column].len()).fold(headers[column].len(), usize::max));
        Self { widths: widths.collect(), right_aligned: right_aligned.to_vec() }
    }

    /// The whole table: `headers`, then every row.
    pub fn render<const N: usize>(headers: [&str; N], rows: &[[String; N]], right_aligned: &[usize]) -> String {
        let table = Self::new(headers, rows, right_aligned);
        let mut text = table.line(&headers);
        for row in rows {
            text += &table.line(&row.each_ref().map(String::as_str));
        }
        text
    }

    /// One line of the table, with its newline.
    pub fn line(&self, cells: &[&str]) -> String {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            let width = self.widths[index];
            if index + 1 == cells.len() {
                text += cell;
            } else if self.right_aligned.contains(&index) {
                text += &format!("{cell:>width$}  ");
            } else {
                text += &format!("{cell:<width$}  ");
            }
        }
        text + "\n"
    }
}
