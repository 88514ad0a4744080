//! MovingAI benchmark runner: runs every query of a scenario file through our search and checks
//! the lengths against the optimal ones.
//!
//! ```text
//! cargo run --release --example movingai -- <file.map> <file.scen> [--per-query] [--mode astar|dijkstra|weighted|jps|jps+] [--smooth] [--hierarchical N] [--swamp] [--links N] [--check|--no-check]
//! ```
//!
//! With `--swamp` (patches of dearer terrain) or `--links N` (N pairs of teleporters, two-way,
//! a tile's effort, between walkable cells picked at random), the optimal lengths no longer
//! hold: each query's cost is checked against A*'s instead (`mismatches`), a `links` line
//! gives the time adding them took, and a `link table` line the time the table of least costs
//! between their ends took ([`NavGrid::build_link_table`], before the queries, as the jump
//! table is). `--check` checks against A* without them too, so that a
//! map with links and without are timed alike (the check runs between the timed queries, and
//! A*'s memory traffic slows the next query); `--no-check` times them with no check at all.
//!
//! With `--hierarchical N`: every query also runs through a [`RegionMap`] of N x N clusters; a
//! `hierarchical` line compares its time, expansions and path length with the flat search's
//! (queries of at least 100 tiles reported apart), and counts invalid paths.
//!
//! With `--per-query`: one line per query, `<row-index> <length> <expansions> <microseconds>`.
//! Always, as the last line:
//! `summary map=<name> queries=<n> mismatches=<m> mean_us=<f> p99_us=<f> expansions_per_s=<f>`
//! (`--smooth` appends `raw_turns=<n> smoothed_turns=<n> smoothed_longer=<n>`, and prints a
//! `smoothing` line comparing whole smoothing with the chunks the plugin smooths urgent rests
//! in: times, turns and how much longer the chunked paths are in all).

#[path = "common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::time::Instant;

use bevy_tilepath::core::movingai::{Scenario, read_map, read_scen};
use bevy_tilepath::core::{
    AStar, Heuristic, MoveRules, NavGrid, Path, SearchConfig, SearchStep, Smoother, count_turns,
    count_turns_f,
};
use bevy_tilepath::core::{
    Cell, Link, RegionMap, find_path_hierarchical, polyline_length, smooth_path,
};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The command line.
struct Args {
    map_path: String,
    scen_path: String,
    per_query: bool,
    smooth: bool,
    mode: String,
    config: SearchConfig,
    cluster: Option<u32>,
    swamp: bool,
    links: u32,
    /// Check against A*: `Some(true)` always, `Some(false)` never, `None` with `--swamp` or
    /// `--links`.
    check: Option<bool>,
}

const USAGE: &str = "usage: movingai <file.map> <file.scen> [--per-query] [--mode astar|dijkstra|weighted|jps|jps+] [--smooth] [--hierarchical N] [--swamp] [--links N] [--check|--no-check]";

fn parse_args() -> Result<Args, String> {
    use lexopt::prelude::*;
    let mut positional = Vec::new();
    let (mut per_query, mut smooth, mut swamp) = (false, false, false);
    let mut check = None;
    let mut mode = "astar".to_string();
    let mut cluster: Option<u32> = None;
    let mut links = 0;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("per-query") => per_query = true,
            Long("smooth") => smooth = true,
            Long("swamp") => swamp = true,
            Long("check") => check = Some(true),
            Long("no-check") => check = Some(false),
            Long("mode") => mode = common::value(&mut parser, "--mode")?,
            Long("hierarchical") => cluster = Some(common::value(&mut parser, "--hierarchical")?),
            Long("links") => links = common::value(&mut parser, "--links")?,
            Value(v) => positional.push(v.to_string_lossy().into_owned()),
            other => return Err(common::unexpected(other)),
        }
    }
    let [map_path, scen_path] = <[String; 2]>::try_from(positional).map_err(|_| USAGE)?;
    let config = match mode.as_str() {
        "astar" => SearchConfig::default(),
        "dijkstra" => SearchConfig {
            heuristic: Heuristic::Zero,
            ..Default::default()
        },
        "weighted" => SearchConfig {
            weight: 1.5,
            ..Default::default()
        },
        // `jps+`: the same search reading the grid's jump table (built before the queries).
        "jps" | "jps+" => SearchConfig {
            jump_points: true,
            ..Default::default()
        },
        other => {
            return Err(format!(
                "unknown mode {other:?} (astar, dijkstra, weighted, jps, jps+)"
            ));
        }
    };
    Ok(Args {
        map_path,
        scen_path,
        per_query,
        smooth,
        mode,
        config,
        cluster,
        swamp,
        check,
        links,
    })
}

/// Flat A* figures over all queries.
#[derive(Default)]
struct Flat {
    times_us: Vec<f64>,
    mismatches: usize,
    expansions: u64,
    secs: f64,
}

/// Smoothing figures (with `--smooth`).
#[derive(Default)]
struct Smoothing {
    raw_turns: usize,
    smoothed_turns: usize,
    longer: usize,
    times_us: Vec<f64>,
    /// The same paths smoothed as the plugin smooths an urgent rest: leading passes of
    /// [`REST_CHUNK`] cells one after the other.
    chunked_turns: usize,
    chunked_times_us: Vec<f64>,
    /// Summed lengths of the whole and the chunked smoothings.
    smoothed_length: f64,
    chunked_length: f64,
}

/// Cells an urgent rest's chunk covers at least (the plugin's `refine::REST_CHUNK`).
const REST_CHUNK: usize = 24;

/// `cells` smoothed in chunks: a leading pass over the next [`REST_CHUNK`] cells (and the rest
/// of the path, looking ahead), then again from its last waypoint, to the end.
fn smooth_in_chunks(grid: &NavGrid, cells: &[Cell]) -> Vec<bevy::math::Vec2> {
    let mut out: Vec<bevy::math::Vec2> = Vec::new();
    let mut from = 0;
    loop {
        let part = &cells[from..];
        let points =
            Smoother::leading(grid, part, 0.0, REST_CHUNK).finish_in_steps(grid, 64, || {});
        let last = points.last().copied();
        out.extend(points.iter().skip(usize::from(!out.is_empty())));
        // A leading pass's waypoints are cell centers of the path.
        match part
            .iter()
            .rposition(|&c| Some(grid.cell_center(c)) == last)
        {
            Some(k) if k + 1 < part.len() && k > 0 => from += k,
            _ => return out,
        }
    }
}

impl Smoothing {
    /// Smooths `p` and counts its turns before and after.
    fn add(&mut self, grid: &NavGrid, p: &Path) {
        let t1 = Instant::now();
        let smoothed = smooth_path(grid, &p.cells, 0.0);
        self.times_us.push(t1.elapsed().as_secs_f64() * 1e6);
        self.raw_turns += count_turns(&p.cells);
        self.smoothed_turns += count_turns_f(&smoothed);
        // f32 waypoints: allow their rounding (1e-5 relative), nothing more.
        if polyline_length(&smoothed) > p.length * (1.0 + 1e-5) + 1e-5 {
            self.longer += 1;
        }
        let t2 = Instant::now();
        let chunked = smooth_in_chunks(grid, &p.cells);
        self.chunked_times_us.push(t2.elapsed().as_secs_f64() * 1e6);
        self.chunked_turns += count_turns_f(&chunked);
        self.smoothed_length += polyline_length(&smoothed) as f64;
        self.chunked_length += polyline_length(&chunked) as f64;
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let mut grid = read_map(&args.map_path, MoveRules::default()).map_err(|e| e.to_string())?;
    if args.swamp {
        swamp(&mut grid);
    }
    if args.links > 0 {
        let t = Instant::now();
        let added = teleporters(&mut grid, args.links);
        println!(
            "links: {added} two-way links added one by one in {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        // What the first search would make otherwise: built ahead, as the jump table is.
        let t = Instant::now();
        grid.build_link_table();
        println!("link table: {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    // The scenario's optimal lengths hold on the map as it was read.
    let changed_map = args.swamp || args.links > 0;
    let checked = args.check.unwrap_or(changed_map);
    if args.mode == "jps+" {
        let t = Instant::now();
        grid.build_jump_table();
        println!(
            "jump table: {:.1} ms, {:.1} MB",
            t.elapsed().as_secs_f64() * 1e3,
            grid.jump_table_bytes() as f64 / 1e6
        );
    }
    // With `--swamp` or `--links` the optimal lengths no longer hold: each query is checked
    // against A*.
    let (mut reference, mut reference_us) = (AStar::new(), Vec::new());
    let scens = read_scen(&args.scen_path).map_err(|e| e.to_string())?;
    let regions = args.cluster.map(|c| {
        let t = Instant::now();
        let r = RegionMap::build(&grid, c);
        (r, t.elapsed().as_secs_f64() * 1e3)
    });
    let (mut flat, mut smoothing, mut hier) =
        (Flat::default(), Smoothing::default(), Hier::default());
    let mut search = AStar::new();
    for (row, s) in scens.iter().enumerate() {
        let t0 = Instant::now();
        let result = search
            .begin(&grid, s.start, s.goal, &args.config)
            .map_err(SearchStep::Failed)
            .map(|()| {
                loop {
                    match search.step(&grid, u32::MAX) {
                        SearchStep::Pending => continue,
                        done => break done,
                    }
                }
            })
            .unwrap_or_else(|e| e);
        let dt = t0.elapsed().as_secs_f64();
        flat.times_us.push(dt * 1e6);
        flat.secs += dt;
        let (length, expansions) = match &result {
            SearchStep::Found(p) => (p.length, p.expansions as u64),
            _ => (-1.0, 0),
        };
        flat.expansions += expansions;
        if checked {
            let t = Instant::now();
            let a = reference
                .begin(&grid, s.start, s.goal, &SearchConfig::default())
                .map(|()| {
                    loop {
                        match reference.step(&grid, u32::MAX) {
                            SearchStep::Pending => continue,
                            done => break done,
                        }
                    }
                });
            reference_us.push(t.elapsed().as_secs_f64() * 1e6);
            let cost = |r: &SearchStep| match r {
                SearchStep::Found(p) => Some(p.cost),
                _ => None,
            };
            if a.as_ref().ok().and_then(cost) != cost(&result) && args.mode != "weighted" {
                flat.mismatches += 1;
            }
        } else if !s.matches(length) && args.mode != "weighted" && !changed_map {
            flat.mismatches += 1;
        }
        if let SearchStep::Found(p) = &result {
            if args.smooth {
                smoothing.add(&grid, p);
            }
            if let Some((regions, _)) = &regions {
                hier.add(&grid, regions, s, p, dt * 1e6, &args.config);
            }
        }
        if args.per_query {
            println!("{row} {length:.6} {expansions} {:.1}", dt * 1e6);
        }
    }
    if changed_map && !checked {
        println!("unchecked: the map changed and --no-check skips A* (mismatches not counted)");
    }
    if checked {
        println!(
            "checked reference=astar astar_mean_us={:.1} (mismatches on the summary line: costs that differ from A*'s)",
            reference_us.iter().sum::<f64>() / reference_us.len().max(1) as f64
        );
    }
    report(&args, scens.len(), flat, smoothing, &hier, regions.as_ref());
    if let Some((regions, build_ms)) = regions {
        time_edits(grid, regions, build_ms);
    }
    Ok(())
}

/// `pairs` pairs of teleporters (`--links`): two-way links of a tile's effort between walkable
/// cells picked at random (the same ones every run); how many were added.
fn teleporters(grid: &mut NavGrid, pairs: u32) -> usize {
    let mut rng = common::Rng::new(63);
    let (w, h) = (grid.width(), grid.height());
    let mut walkable = || loop {
        let c = Cell::new(rng.below(w) as i32, rng.below(h) as i32);
        if grid.is_walkable(c) {
            break c;
        }
    };
    let ends: Vec<(Cell, Cell)> = (0..pairs).map(|_| (walkable(), walkable())).collect();
    let pairs: Vec<(Cell, Cell)> = ends.into_iter().filter(|(a, b)| a != b).collect();
    for &(a, b) in &pairs {
        grid.add_link(Link::two_way(a, b, 1.0))
            .expect("cells of the grid");
    }
    pairs.len()
}

/// Every fifth open cell, in 4 x 4 patches, becomes a cost-3 swamp (`--swamp`).
fn swamp(grid: &mut NavGrid) {
    for y in 0..grid.height() as i32 {
        for x in 0..grid.width() as i32 {
            let patch = ((x / 4) as u32).wrapping_mul(0x9E37_79B9)
                ^ ((y / 4) as u32).wrapping_mul(0x85EB_CA6B);
            let c = Cell::new(x, y);
            if grid.is_walkable(c) && (patch.wrapping_mul(0x27D4_EB2F) >> 16).is_multiple_of(5) {
                grid.set_terrain(c, 3).expect("in bounds");
            }
        }
    }
}

/// The `edits` line: the time to bring the region map up to date after one tile edit
/// ([`RegionMap::update`]), for 200 walkable cells picked at random, each blocked then opened
/// again (400 updates), beside a rebuild's time.
fn time_edits(mut grid: NavGrid, mut regions: RegionMap, build_ms: f64) {
    let mut rng = common::Rng::new(7);
    let mut us = Vec::new();
    while us.len() < 400 {
        let cell = Cell::new(
            rng.below(grid.width()) as i32,
            rng.below(grid.height()) as i32,
        );
        if !grid.is_walkable(cell) {
            continue;
        }
        for walkable in [false, true] {
            grid.set_walkable(cell, walkable).expect("in bounds");
            let t = Instant::now();
            regions.update(&grid, [cell]);
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    println!(
        "edits updates={} update_median_us={:.1} update_p99_us={:.1} update_max_us={:.1} build_ms={build_ms:.1}",
        us.len(),
        common::percentile(&us, 0.5),
        common::percentile(&us, 0.99),
        common::percentile(&us, 1.0),
    );
}

/// The `smoothing`, `hierarchical` and `summary` lines.
fn report(
    args: &Args,
    queries: usize,
    flat: Flat,
    mut smoothing: Smoothing,
    hier: &Hier,
    regions: Option<&(RegionMap, f64)>,
) {
    let times = &flat.times_us;
    let n = times.len().max(1);
    let mean = times.iter().sum::<f64>() / n as f64;
    let p99 = common::percentile(times, 0.99);
    let name = std::path::Path::new(&args.map_path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(&args.map_path);
    let mut line = format!(
        "summary map={name} queries={queries} mismatches={} mean_us={mean:.1} p99_us={p99:.1} expansions_per_s={:.0}",
        flat.mismatches,
        flat.expansions as f64 / flat.secs.max(1e-12)
    );
    if args.smooth {
        let st = &mut smoothing.times_us;
        st.sort_by(f64::total_cmp);
        let ct = &mut smoothing.chunked_times_us;
        ct.sort_by(f64::total_cmp);
        println!(
            "smoothing median_us={:.1} max_us={:.1} chunked_median_us={:.1} chunked_max_us={:.1} chunked_turns={} chunked_longer_pct={:.2}",
            st.get(st.len() / 2).copied().unwrap_or(0.0),
            st.last().copied().unwrap_or(0.0),
            ct.get(ct.len() / 2).copied().unwrap_or(0.0),
            ct.last().copied().unwrap_or(0.0),
            smoothing.chunked_turns,
            100.0 * (smoothing.chunked_length / smoothing.smoothed_length.max(1e-9) - 1.0),
        );
        line += &format!(
            " raw_turns={} smoothed_turns={} smoothed_longer={}",
            smoothing.raw_turns, smoothing.smoothed_turns, smoothing.longer
        );
    }
    if let Some((regions, build_ms)) = regions {
        hier.report(regions, *build_ms);
    }
    println!("{line}");
}

/// Flat vs hierarchical figures, for short (0) and long (1) queries.
#[derive(Default)]
struct Hier {
    queries: [u64; 2],
    flat_us: [f64; 2],
    hier_us: [f64; 2],
    flat_exp: [u64; 2],
    hier_exp: [u64; 2],
    excess_sum: [f64; 2],
    excess_max: f64,
    invalid: u64,
}

impl Hier {
    /// Runs query `s` through the region map and compares it with the flat path `p` (found in
    /// `flat_us`).
    fn add(
        &mut self,
        grid: &NavGrid,
        regions: &RegionMap,
        s: &Scenario,
        p: &Path,
        flat_us: f64,
        config: &SearchConfig,
    ) {
        let t1 = Instant::now();
        let h = find_path_hierarchical(grid, regions, s.start, s.goal, config);
        let hier_us = t1.elapsed().as_secs_f64() * 1e6;
        match h {
            Ok(h)
                if h.cells.first() == Some(&s.start)
                    && h.cells.last() == Some(&s.goal)
                    && h.cells.windows(2).all(|w| grid.can_step(w[0], w[1])) =>
            {
                let long = usize::from(p.length >= 100.0);
                self.queries[long] += 1;
                self.flat_us[long] += flat_us;
                self.hier_us[long] += hier_us;
                self.flat_exp[long] += p.expansions as u64;
                self.hier_exp[long] += h.expansions as u64;
                let excess = h.length / p.length.max(1e-9) - 1.0;
                self.excess_sum[long] += excess;
                self.excess_max = self.excess_max.max(excess);
            }
            _ => self.invalid += 1,
        }
    }

    /// The `hierarchical` line.
    fn report(&self, regions: &RegionMap, build_ms: f64) {
        let part = |k: usize| {
            let q = self.queries[k].max(1) as f64;
            format!(
                "queries={} flat_mean_us={:.1} hier_mean_us={:.1} flat_exp={:.0} hier_exp={:.0} mean_excess_pct={:.2}",
                self.queries[k],
                self.flat_us[k] / q,
                self.hier_us[k] / q,
                self.flat_exp[k] as f64 / q,
                self.hier_exp[k] as f64 / q,
                self.excess_sum[k] / q * 100.0,
            )
        };
        println!(
            "hierarchical cluster={} nodes={} build_ms={build_ms:.1} invalid={} max_excess_pct={:.2} | short: {} | long (>= 100 tiles): {}",
            regions.cluster_size(),
            regions.node_count(),
            self.invalid,
            self.excess_max * 100.0,
            part(0),
            part(1),
        );
    }
}
