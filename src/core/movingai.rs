//! The MovingAI grid benchmark formats (Sturtevant, "Benchmarks for Grid-Based Pathfinding",
//! 2012): `.map` files and `.scen` scenario files.

use std::path::Path;

use super::cell::{BLOCKED, Cell, NORMAL};
use super::grid::{MoveRules, NavGrid};

/// A malformed MovingAI file: the line (1-based) and what was wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for FormatError {}

fn err(line: usize, message: impl Into<String>) -> FormatError {
    FormatError {
        line,
        message: message.into(),
    }
}

/// Parses a `.map` file into a grid with the given rules (`.`, `G`, `S` passable; `@`, `O`,
/// `T`, `W` blocked).
pub fn parse_map(text: &str, rules: MoveRules) -> Result<NavGrid, FormatError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end()));
    let mut height = None;
    let mut width = None;
    let mut header_end = 0;
    for (n, line) in lines.by_ref() {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some("type"), _) => {}
            (Some("height"), Some(v)) => {
                height = Some(v.parse::<u32>().map_err(|_| err(n, "bad height"))?)
            }
            (Some("width"), Some(v)) => {
                width = Some(v.parse::<u32>().map_err(|_| err(n, "bad width"))?)
            }
            (Some("map"), None) => {
                header_end = n;
                break;
            }
            (None, _) => {}
            _ => return Err(err(n, format!("unexpected header line {line:?}"))),
        }
    }
    let (Some(width), Some(height)) = (width, height) else {
        return Err(err(
            header_end.max(1),
            "missing width or height before `map`",
        ));
    };
    if header_end == 0 {
        return Err(err(1, "missing `map` line"));
    }
    // The header is not trusted: sizes are checked against the grid's own limit, and nothing
    // larger than the text itself (one character per cell) is allocated before rows are read.
    NavGrid::check_size(width, height).map_err(|e| err(header_end, e.to_string()))?;
    let cells = width as usize * height as usize;
    let mut terrain = Vec::with_capacity(cells.min(text.len()));
    let mut rows = 0;
    for (n, line) in lines {
        if rows == height {
            if line.is_empty() {
                continue;
            }
            return Err(err(n, "more rows than the height"));
        }
        if line.chars().count() != width as usize {
            return Err(err(
                n,
                format!("row has {} cells, expected {width}", line.chars().count()),
            ));
        }
        for c in line.chars() {
            terrain.push(match c {
                '.' | 'G' | 'S' => NORMAL,
                '@' | 'O' | 'T' | 'W' => BLOCKED,
                other => return Err(err(n, format!("unknown map character {other:?}"))),
            });
        }
        rows += 1;
    }
    if rows != height {
        return Err(err(
            header_end + rows as usize + 1,
            format!("expected {height} rows, found {rows}"),
        ));
    }
    NavGrid::from_terrain(width, height, rules, &terrain).map_err(|e| err(1, e.to_string()))
}

/// One query of a scenario file.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Difficulty bucket.
    pub bucket: u32,
    /// The map the file names (informational).
    pub map: String,
    /// Map width.
    pub width: u32,
    /// Map height.
    pub height: u32,
    /// Start cell.
    pub start: Cell,
    /// Goal cell.
    pub goal: Cell,
    /// Optimal length (octile, no corner cutting).
    pub optimal: f64,
    /// The optimal length as printed, for the tolerance of its last digit.
    pub optimal_text: String,
}

impl Scenario {
    /// Whether `length` matches the optimal length to within one unit of its last printed digit.
    pub fn matches(&self, length: f64) -> bool {
        (length - self.optimal).abs() <= last_digit_unit(&self.optimal_text) * 1.000_001
    }
}

/// One unit of the last printed digit of a decimal number ("289.764" -> 0.001, "12" -> 1).
pub fn last_digit_unit(text: &str) -> f64 {
    match text.split_once('.') {
        Some((_, frac)) => 10f64.powi(-(frac.len() as i32)),
        None => 1.0,
    }
}

/// Parses a `.scen` file (version 1 or 1.0; fields separated by tabs or spaces).
pub fn parse_scen(text: &str) -> Result<Vec<Scenario>, FormatError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    match lines.next() {
        Some((_, l)) if l.split_whitespace().collect::<Vec<_>>() == ["version", "1"] => {}
        Some((_, l)) if l.split_whitespace().collect::<Vec<_>>() == ["version", "1.0"] => {}
        Some((n, l)) => return Err(err(n, format!("expected `version 1`, found {l:?}"))),
        None => return Err(err(1, "empty scenario file")),
    }
    let mut out = Vec::new();
    for (n, line) in lines {
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 9 {
            return Err(err(n, format!("expected 9 fields, found {}", f.len())));
        }
        let num = |k: usize, what: &str| -> Result<u32, FormatError> {
            f[k].parse::<u32>()
                .map_err(|_| err(n, format!("bad {what} {:?}", f[k])))
        };
        let optimal = f[8]
            .parse::<f64>()
            .map_err(|_| err(n, format!("bad optimal length {:?}", f[8])))?;
        out.push(Scenario {
            bucket: num(0, "bucket")?,
            map: f[1].to_string(),
            width: num(2, "width")?,
            height: num(3, "height")?,
            start: Cell::new(num(4, "start x")? as i32, num(5, "start y")? as i32),
            goal: Cell::new(num(6, "goal x")? as i32, num(7, "goal y")? as i32),
            optimal,
            optimal_text: f[8].to_string(),
        });
    }
    Ok(out)
}

/// A MovingAI file that could not be read or parsed, with its path.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read.
    Io {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The file is malformed.
    Format {
        /// The file.
        path: String,
        /// Where and what.
        error: FormatError,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io { path, error } => write!(f, "{path}: {error}"),
            LoadError::Format { path, error } => write!(f, "{path}: {error}"),
        }
    }
}

impl std::error::Error for LoadError {}

fn read(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|error| LoadError::Io {
        path: path.display().to_string(),
        error,
    })
}

/// Reads and parses a `.map` file (see [`parse_map`]).
pub fn read_map(path: impl AsRef<Path>, rules: MoveRules) -> Result<NavGrid, LoadError> {
    let path = path.as_ref();
    parse_map(&read(path)?, rules).map_err(|error| LoadError::Format {
        path: path.display().to_string(),
        error,
    })
}

/// Reads and parses a `.scen` file (see [`parse_scen`]).
pub fn read_scen(path: impl AsRef<Path>) -> Result<Vec<Scenario>, LoadError> {
    let path = path.as_ref();
    parse_scen(&read(path)?).map_err(|error| LoadError::Format {
        path: path.display().to_string(),
        error,
    })
}
