//! Results: one row per figure, printed as a table and saved as JSON.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy)]
pub enum Unit {
    Millis,
    MibPerSec,
}

impl Unit {
    fn symbol(self) -> &'static str {
        match self {
            Unit::Millis => "ms",
            Unit::MibPerSec => "MiB/s",
        }
    }

    fn format(self, value: f64) -> String {
        match self {
            Unit::Millis => format!("{value:.3} ms"),
            Unit::MibPerSec => format!("{value:.1} MiB/s"),
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

    fn describe(self) -> String {
        match self {
            Aim::AtMost(limit) => format!("<= {limit:.2}x"),
            Aim::AtLeast(floor) => format!(">= {floor:.2}x"),
        }
    }
}

/// One figure and the baseline it is compared with.
#[derive(Debug, Clone)]
pub struct Row {
    pub section: String,
    pub measure: String,
    pub figure: f64,
    pub unit: Unit,
    pub baseline: f64,
    pub baseline_label: String,
    pub aim: Option<Aim>,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.figure / self.baseline
    }

    pub fn meets_aim(&self) -> Option<bool> {
        self.aim.map(|aim| aim.met_by(self.ratio()))
    }

    fn cells(&self) -> [String; 6] {
        let verdict = match self.meets_aim() {
            Some(true) => "ok",
            Some(false) => "MISSED",
            None => "",
        };
        [
            format!("  {}", self.measure),
            self.unit.format(self.figure),
            format!(
                "{} {}",
                self.unit.format(self.baseline),
                self.baseline_label
            ),
            format!("{:.2}x", self.ratio()),
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
            "figure": self.figure,
            "unit": self.unit.symbol(),
            "baseline": self.baseline,
            "baseline_label": self.baseline_label,
            "ratio": self.ratio(),
            "aim": self.aim.map(|aim| match aim {
                Aim::AtMost(limit) => json!({ "ratio_at_most": limit }),
                Aim::AtLeast(floor) => json!({ "ratio_at_least": floor }),
            }),
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
}

impl Report {
    pub fn new(title: String, setup: Value) -> Report {
        Report {
            title,
            setup,
            rows: Vec::new(),
            warnings: Vec::new(),
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
        json!({
            "title": self.title,
            "setup": self.setup,
            "results": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
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
