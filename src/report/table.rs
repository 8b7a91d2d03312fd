//! A table of already formatted cells, rendered as Markdown or as HTML.
//! Every table in the report goes through here, so summary.md and
//! index.html always show the same cells.

/// How a column lines up: numbers on the right, text on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub title: String,
    /// One line under the title (what is fixed, what the numbers mean).
    pub note: Option<String>,
    pub columns: Vec<(String, Align)>,
    pub rows: Vec<Vec<String>>,
    /// `id` attribute of the HTML table, for tests and links.
    pub id: String,
}

impl Table {
    pub fn new(id: &str, title: &str, columns: &[(&str, Align)]) -> Table {
        Table {
            title: title.to_string(),
            note: None,
            columns: columns.iter().map(|(c, a)| (c.to_string(), *a)).collect(),
            rows: Vec::new(),
            id: id.to_string(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// `level` is the heading depth (`###`); a table without a title has
    /// no heading.
    pub fn to_markdown(&self, level: usize) -> String {
        let mut s = String::new();
        if !self.title.is_empty() {
            s = format!("{} {}\n\n", "#".repeat(level), md_cell(&self.title));
        }
        if let Some(n) = &self.note {
            s.push_str(&format!("{}\n\n", md_cell(n)));
        }
        if self.rows.is_empty() {
            // The note says why there is nothing; an empty grid adds nothing.
            return s;
        }
        let head: Vec<String> = self.columns.iter().map(|(c, _)| md_cell(c)).collect();
        s.push_str(&format!("| {} |\n", head.join(" | ")));
        let rule: Vec<&str> = self
            .columns
            .iter()
            .map(|(_, a)| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        s.push_str(&format!("| {} |\n", rule.join(" | ")));
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
            s.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        s.push('\n');
        s
    }

    /// For a terminal: the Markdown grid with every column padded to its
    /// widest cell (numbers on the right), so it reads as a table on screen
    /// and still pastes into Markdown. Title and note are the caller's.
    pub fn to_terminal(&self) -> String {
        let head: Vec<String> = self.columns.iter().map(|(c, _)| md_cell(c)).collect();
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| md_cell(c)).collect())
            .collect();
        let widths: Vec<usize> = (0..head.len())
            .map(|i| {
                std::iter::once(&head)
                    .chain(&body)
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .zip(&self.columns)
                .map(|((c, &w), (_, a))| match a {
                    Align::Left => format!("{c:<w$}"),
                    Align::Right => format!("{c:>w$}"),
                })
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut s = line(&head);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        s.push_str(&format!("|-{}-|\n", rule.join("-|-")));
        for r in &body {
            s.push_str(&line(r));
        }
        s
    }

    pub fn to_html(&self, level: usize) -> String {
        let mut s = format!("<h{level}>{}</h{level}>\n", esc(&self.title));
        if let Some(n) = &self.note {
            s.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
        }
        if self.rows.is_empty() {
            return s;
        }
        s.push_str(&format!(
            "<div class=\"scroll\"><table id=\"{}\">\n<thead><tr>",
            esc(&self.id)
        ));
        for (c, a) in &self.columns {
            s.push_str(&format!("<th{}>{}</th>", class(*a), esc(c)));
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for r in &self.rows {
            s.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let a = self.columns.get(i).map_or(Align::Left, |c| c.1);
                s.push_str(&format!("<td{}>{}</td>", class(a), esc(c)));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table></div>\n");
        s
    }
}

fn class(a: Align) -> &'static str {
    match a {
        Align::Left => "",
        Align::Right => " class=\"num\"",
    }
}

/// Escapes text for HTML element content and double-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// A Markdown table cell: a `|` would end the cell and a newline the row.
fn md_cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_escaped() {
        let mut t = Table::new("t", "T", &[("a", Align::Left), ("b", Align::Right)]);
        t.push(vec!["x|y".into(), "<1>".into()]);
        assert!(t.to_markdown(2).contains("| x\\|y | <1> |"));
        let h = t.to_html(2);
        assert!(h.contains("<td>x|y</td><td class=\"num\">&lt;1&gt;</td>"));
        t.push(vec!["long text".into(), "2".into()]);
        assert_eq!(
            t.to_terminal(),
            "| a         |   b |\n|-----------|-----|\n| x\\|y      | <1> |\n| long text |   2 |\n"
        );
    }
}
