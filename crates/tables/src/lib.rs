//! Text tables: every Markdown table quiclab prints or writes is a [`Markdown`], and every CSV
//! table goes through [`csv`] (the `csv` crate: RFC 4180 quoting only where a field needs it,
//! `\n` line ends).
//!
//! Cells are text the caller formats (units, decimals, `n/N`): a table only lays them out. A
//! Markdown cell is written as given between `| ` and ` |`, so an empty cell is two spaces.

#![warn(missing_docs)]

/// Alignment of a Markdown column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Left (`---`): text.
    Left,
    /// Right (`---:`): numbers.
    Right,
}

/// A GitHub Markdown table: a header row, an alignment row, then the rows.
#[derive(Debug, Clone, Default)]
pub struct Markdown {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Markdown {
    /// A table with these column titles, every column left-aligned.
    pub fn new<S: Into<String>>(titles: impl IntoIterator<Item = S>) -> Markdown {
        let header: Vec<String> = titles.into_iter().map(Into::into).collect();
        let align = vec![Align::Left; header.len()];
        Markdown {
            header,
            align,
            rows: Vec::new(),
        }
    }

    /// A table with these (title, alignment) columns.
    pub fn with_columns<S: Into<String>>(
        columns: impl IntoIterator<Item = (S, Align)>,
    ) -> Markdown {
        let (header, align) = columns.into_iter().map(|(t, a)| (t.into(), a)).unzip();
        Markdown {
            header,
            align,
            rows: Vec::new(),
        }
    }

    /// Adds a column at the right.
    pub fn column(&mut self, title: impl Into<String>, align: Align) -> &mut Markdown {
        self.header.push(title.into());
        self.align.push(align);
        self
    }

    /// Adds a row of cells (as many as there are columns: a row is not padded or cut, so a
    /// mismatch shows in the output instead of hiding a value).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Markdown {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row, each ending in `\n`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        line(&mut out, &self.header);
        out.push('|');
        for a in &self.align {
            out.push_str(match a {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        out.push('\n');
        for r in &self.rows {
            line(&mut out, r);
        }
        out
    }
}

impl std::fmt::Display for Markdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

/// `| a | b |` and a line end.
fn line(out: &mut String, cells: &[String]) {
    out.push('|');
    for c in cells {
        out.push(' ');
        out.push_str(c);
        out.push_str(" |");
    }
    out.push('\n');
}

/// A CSV table: the header, then the rows, RFC 4180 quoting where a field needs it (a comma, a
/// quote or a line break), `\n` after every record.
pub fn csv<S, R, C>(
    header: impl IntoIterator<Item = S>,
    rows: impl IntoIterator<Item = R>,
) -> String
where
    S: AsRef<[u8]>,
    R: IntoIterator<Item = C>,
    C: AsRef<[u8]>,
{
    let mut w = ::csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    // Writing into memory cannot fail; a field is bytes, so nothing can be refused either.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_lays_out_header_alignment_and_rows() {
        let mut t = Markdown::with_columns([("x", Align::Left), ("value", Align::Right)]);
        t.row(["1%", "2.5"]).row(["2%", ""]);
        assert_eq!(
            t.render(),
            "| x | value |\n|---|---:|\n| 1% | 2.5 |\n| 2% |  |\n"
        );
        let mut u = Markdown::new(["a"]);
        u.column("b", Align::Right);
        assert!(u.is_empty());
        assert_eq!(u.to_string(), "| a | b |\n|---|---:|\n");
    }

    #[test]
    fn csv_quotes_only_where_needed() {
        let text = csv(
            ["point", "stack", "note"],
            [
                vec!["0", "tcp,cubic", "say \"hi\""],
                vec!["1", "quic", ""],
                vec!["2", "line\nbreak", "cr\r"],
            ],
        );
        assert_eq!(
            text,
            "point,stack,note\n0,\"tcp,cubic\",\"say \"\"hi\"\"\"\n1,quic,\n2,\"line\nbreak\",\"cr\r\"\n"
        );
    }
}
