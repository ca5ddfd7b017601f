//! Results: one row per figure, printed as a table and saved as JSON.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy)]
pub enum Unit {
    Millis,
    MibPerSec,
    Bytes,
}

impl Unit {
    fn symbol(self) -> &'static str {
        match self {
            Unit::Millis => "ms",
            Unit::MibPerSec => "MiB/s",
            Unit::Bytes => "B",
        }
    }

    fn format(self, value: f64) -> String {
        match self {
            Unit::Millis => format!("{value:.3} ms"),
            Unit::MibPerSec => format!("{value:.1} MiB/s"),
            Unit::Bytes => format!("{value:.0} B"),
        }
    }
}

/// The aim for a row's ratio (figure / baseline). Aims are reported, never
/// enforced.
#[derive(Debug, Clone, Copy)]
pub enum Aim {
    AtMost(f64),
    AtLeast(f64),
}

impl Aim {
    fn met_by(self, ratio: f64) -> bool {
        match self {
            Aim::AtMost(limit) => ratio <= limit,
            Aim::AtLeast(floor) => ratio >= floor,
        }
    }

    /// "<= 3.00x", ">= 1.00x".
    pub fn describe(self) -> String {
        match self {
            Aim::AtMost(limit) => format!("<= {limit:.2}x"),
            Aim::AtLeast(floor) => format!(">= {floor:.2}x"),
        }
    }

    pub fn to_json(self) -> Value {
        match self {
            Aim::AtMost(limit) => json!({ "ratio_at_most": limit }),
            Aim::AtLeast(floor) => json!({ "ratio_at_least": floor }),
        }
    }
}

/// A measured value, or why there is none (the side failed or lacks a
/// feature); shown as `n/a` in the table.
pub type Measured = Result<f64, String>;

/// At most this many characters of an error go into a table cell; the whole
/// error belongs in a warning.
const CELL_ERROR_CHARS: usize = 40;

/// One figure and the baseline it is compared with.
#[derive(Debug, Clone)]
pub struct Row {
    pub section: String,
    pub measure: String,
    pub figure: Measured,
    pub unit: Unit,
    pub baseline: Measured,
    pub baseline_label: String,
    pub aim: Option<Aim>,
}

impl Row {
    /// A row whose figure and baseline were both measured.
    pub fn measured(
        section: &str,
        measure: String,
        (figure, unit): (f64, Unit),
        (baseline, baseline_label): (f64, &str),
        aim: Option<Aim>,
    ) -> Row {
        Row {
            section: section.into(),
            measure,
            figure: Ok(figure),
            unit,
            baseline: Ok(baseline),
            baseline_label: baseline_label.into(),
            aim,
        }
    }

    /// figure / baseline, when both were measured.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.figure.as_ref().ok()? / self.baseline.as_ref().ok()?)
    }

    pub fn meets_aim(&self) -> Option<bool> {
        Some(self.aim?.met_by(self.ratio()?))
    }

    fn value_cell(&self, value: &Measured) -> String {
        match value {
            Ok(value) => self.unit.format(*value),
            Err(error) => {
                let first = error.lines().next().unwrap_or("");
                let mut short: String = first.chars().take(CELL_ERROR_CHARS).collect();
                if short.len() < error.len() {
                    short.push_str("...");
                }
                format!("n/a ({short})")
            }
        }
    }

    fn cells(&self) -> [String; 6] {
        let verdict = match self.meets_aim() {
            Some(true) => "ok",
            Some(false) => "MISSED",
            None => "",
        };
        [
            format!("  {}", self.measure),
            self.value_cell(&self.figure),
            format!(
                "{} {}",
                self.value_cell(&self.baseline),
                self.baseline_label
            ),
            self.ratio()
                .map_or_else(|| "n/a".into(), |ratio| format!("{ratio:.2}x")),
            self.aim
                .map(Aim::describe)
                .unwrap_or_else(|| "(scale)".into()),
            verdict.into(),
        ]
    }

    fn to_json(&self) -> Value {
        json!({
            "section": self.section,
            "measure": self.measure,
            "figure": self.figure.as_ref().ok(),
            "figure_error": self.figure.as_ref().err(),
            "unit": self.unit.symbol(),
            "baseline": self.baseline.as_ref().ok(),
            "baseline_error": self.baseline.as_ref().err(),
            "baseline_label": self.baseline_label,
            "ratio": self.ratio(),
            "aim": self.aim.map(Aim::to_json),
            "meets_aim": self.meets_aim(),
        })
    }
}

const HEADER: [&str; 6] = ["measure", "figure", "baseline", "ratio", "aim", ""];

/// All results of a run.
pub struct Report {
    pub title: String,
    pub setup: Value,
    pub rows: Vec<Row>,
    pub warnings: Vec<String>,
    /// More results, saved as `details` in the JSON form (not in the table).
    pub details: Value,
}

impl Report {
    pub fn new(title: String, setup: Value) -> Report {
        Report {
            title,
            setup,
            rows: Vec::new(),
            warnings: Vec::new(),
            details: Value::Null,
        }
    }

    pub fn warn(&mut self, warning: String) {
        eprintln!("warning: {warning}");
        self.warnings.push(warning);
    }

    /// The table, sections in the order their first row was added.
    pub fn table(&self) -> String {
        let cells: Vec<[String; 6]> = self.rows.iter().map(Row::cells).collect();
        let mut widths = HEADER.map(str::len);
        for row in &cells {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |row: &[String]| -> String {
            let mut out = String::new();
            for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
                // Figures and ratios read best right-aligned.
                let _ = match i {
                    1 | 3 => write!(out, "{cell:>width$}  "),
                    _ => write!(out, "{cell:<width$}  "),
                };
            }
            out.trim_end().to_string() + "\n"
        };
        let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
        let mut out = format!("{}\n{}\n", self.title, "=".repeat(total));
        out += &line(&HEADER.map(String::from));
        let mut section = None;
        for (row, cells) in self.rows.iter().zip(&cells) {
            if section != Some(&row.section) {
                section = Some(&row.section);
                out += &format!("{}\n{}\n", "-".repeat(total), row.section);
            }
            out += &line(cells);
        }
        out += &"=".repeat(total);
        out.push('\n');
        for warning in &self.warnings {
            out += &format!("WARNING: {warning}\n");
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "title": self.title,
            "setup": self.setup,
            "results": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "warnings": self.warnings,
        });
        if !self.details.is_null() {
            value["details"] = self.details.clone();
        }
        value
    }

    /// Writes the JSON form to `path`, creating its folder.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(&self.to_json()).expect("JSON");
        std::fs::write(path, text + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(figure: Measured, baseline: Measured) -> Row {
        Row {
            section: "section".into(),
            measure: "measure".into(),
            figure,
            unit: Unit::Millis,
            baseline,
            baseline_label: "base".into(),
            aim: Some(Aim::AtMost(3.0)),
        }
    }

    #[test]
    fn a_missing_figure_shows_n_a_and_meets_no_aim() {
        let mut report = Report::new("title".into(), Value::Null);
        report.rows.push(row(Ok(2.0), Ok(1.0)));
        report
            .rows
            .push(row(Err("exec: HTTP 404: no route".into()), Ok(1.0)));
        assert_eq!(report.rows[0].meets_aim(), Some(true));
        assert_eq!(report.rows[1].ratio(), None);
        assert_eq!(report.rows[1].meets_aim(), None);
        let table = report.table();
        assert!(table.contains("2.00x  <= 3.00x  ok"), "{table}");
        assert!(table.contains("n/a (exec: HTTP 404: no route)"), "{table}");
        let json = report.to_json();
        assert_eq!(json["results"][1]["figure"], Value::Null);
        assert_eq!(
            json["results"][1]["figure_error"],
            "exec: HTTP 404: no route"
        );
        assert_eq!(json["results"][0]["figure"], 2.0);
    }
}
