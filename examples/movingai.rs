//! MovingAI benchmark runner: runs every query of a scenario file through our search and checks
//! the lengths against the optimal ones.
//!
//! ```text
//! cargo run --release --example movingai -- <file.map> <file.scen> [--per-query] [--mode astar|dijkstra|weighted] [--smooth] [--hierarchical N]
//! ```
//!
//! With `--hierarchical N`: every query also runs through a [`RegionMap`] of N x N clusters; a
//! `hierarchical` line compares its time, expansions and path length with the flat search's
//! (queries of at least 100 tiles reported apart), and counts invalid paths.
//!
//! With `--per-query`: one line per query, `<row-index> <length> <expansions> <microseconds>`.
//! Always, as the last line:
//! `summary map=<name> queries=<n> mismatches=<m> mean_us=<f> p99_us=<f> expansions_per_s=<f>`
//! (`--smooth` appends `raw_turns=<n> smoothed_turns=<n> smoothed_longer=<n>`).

#[path = "common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::time::Instant;

use bevy_tilepath::core::movingai::{read_map, read_scen};
use bevy_tilepath::core::{AStar, Heuristic, MoveRules, SearchConfig, SearchStep, count_turns};
use bevy_tilepath::core::{RegionMap, find_path_hierarchical, polyline_length, smooth_path};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    use lexopt::prelude::*;
    let mut positional = Vec::new();
    let mut per_query = false;
    let mut smooth = false;
    let mut mode = "astar".to_string();
    let mut cluster: Option<u32> = None;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("per-query") => per_query = true,
            Long("smooth") => smooth = true,
            Long("mode") => mode = common::value(&mut parser, "--mode")?,
            Long("hierarchical") => cluster = Some(common::value(&mut parser, "--hierarchical")?),
            Value(v) => positional.push(v.to_string_lossy().into_owned()),
            other => return Err(common::unexpected(other)),
        }
    }
    let [map_path, scen_path] = positional.as_slice() else {
        return Err(
            "usage: movingai <file.map> <file.scen> [--per-query] [--mode astar|dijkstra|weighted] [--smooth] [--hierarchical N]"
                .into(),
        );
    };
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
        other => {
            return Err(format!(
                "unknown mode {other:?} (astar, dijkstra, weighted)"
            ));
        }
    };
    let grid = read_map(map_path, MoveRules::default()).map_err(|e| e.to_string())?;
    let scens = read_scen(scen_path).map_err(|e| e.to_string())?;

    let regions = cluster.map(|c| {
        let t = Instant::now();
        let r = RegionMap::build(&grid, c);
        (r, t.elapsed().as_secs_f64() * 1e3)
    });
    let mut hier = Hier::default();
    let mut search = AStar::new();
    let mut times = Vec::with_capacity(scens.len());
    let mut mismatches = 0;
    let mut total_exp: u64 = 0;
    let mut total_secs = 0.0;
    let (mut raw_turns, mut smooth_turns, mut smoothed_longer) = (0usize, 0usize, 0usize);
    let mut smooth_times: Vec<f64> = Vec::new();
    for (row, s) in scens.iter().enumerate() {
        let t0 = Instant::now();
        let result = search
            .begin(&grid, s.start, s.goal, &config)
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
        times.push(dt * 1e6);
        total_secs += dt;
        let (length, expansions) = match &result {
            SearchStep::Found(p) => (p.length, p.expansions as u64),
            _ => (-1.0, 0),
        };
        total_exp += expansions;
        if !s.matches(length) && mode != "weighted" {
            mismatches += 1;
        }
        if smooth && let SearchStep::Found(p) = &result {
            let t1 = Instant::now();
            let smoothed = smooth_path(&grid, &p.cells, 0.0);
            smooth_times.push(t1.elapsed().as_secs_f64() * 1e6);
            raw_turns += count_turns(&p.cells);
            smooth_turns += bevy_tilepath::core::count_turns_f(&smoothed);
            // f32 waypoints: allow their rounding (1e-5 relative), nothing more.
            if polyline_length(&smoothed) > p.length * (1.0 + 1e-5) + 1e-5 {
                smoothed_longer += 1;
            }
        }
        if let (Some((regions, _)), SearchStep::Found(p)) = (&regions, &result) {
            let t1 = Instant::now();
            let h = find_path_hierarchical(&grid, regions, s.start, s.goal, &config);
            let dt1 = t1.elapsed().as_secs_f64() * 1e6;
            match h {
                Ok(h)
                    if h.cells.first() == Some(&s.start)
                        && h.cells.last() == Some(&s.goal)
                        && h.cells.windows(2).all(|w| grid.can_step(w[0], w[1])) =>
                {
                    let long = usize::from(p.length >= 100.0);
                    hier.queries[long] += 1;
                    hier.flat_us[long] += dt * 1e6;
                    hier.hier_us[long] += dt1;
                    hier.flat_exp[long] += p.expansions as u64;
                    hier.hier_exp[long] += h.expansions as u64;
                    let excess = h.length / p.length.max(1e-9) - 1.0;
                    hier.excess_sum[long] += excess;
                    hier.excess_max = hier.excess_max.max(excess);
                }
                _ => hier.invalid += 1,
            }
        }
        if per_query {
            println!("{row} {length:.6} {expansions} {:.1}", dt * 1e6);
        }
    }
    times.sort_by(f64::total_cmp);
    let n = times.len().max(1);
    let mean = times.iter().sum::<f64>() / n as f64;
    let p99 = times
        .get(((n as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0);
    let name = std::path::Path::new(map_path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(map_path);
    let mut line = format!(
        "summary map={name} queries={} mismatches={mismatches} mean_us={mean:.1} p99_us={p99:.1} expansions_per_s={:.0}",
        scens.len(),
        total_exp as f64 / total_secs.max(1e-12)
    );
    if smooth {
        smooth_times.sort_by(f64::total_cmp);
        println!(
            "smoothing median_us={:.1} max_us={:.1}",
            smooth_times
                .get(smooth_times.len() / 2)
                .copied()
                .unwrap_or(0.0),
            smooth_times.last().copied().unwrap_or(0.0)
        );
        line += &format!(
            " raw_turns={raw_turns} smoothed_turns={smooth_turns} smoothed_longer={smoothed_longer}"
        );
    }
    if let Some((regions, build_ms)) = &regions {
        let part = |k: usize| {
            let q = hier.queries[k].max(1) as f64;
            format!(
                "queries={} flat_mean_us={:.1} hier_mean_us={:.1} flat_exp={:.0} hier_exp={:.0} mean_excess_pct={:.2}",
                hier.queries[k],
                hier.flat_us[k] / q,
                hier.hier_us[k] / q,
                hier.flat_exp[k] as f64 / q,
                hier.hier_exp[k] as f64 / q,
                hier.excess_sum[k] / q * 100.0,
            )
        };
        println!(
            "hierarchical cluster={} nodes={} build_ms={build_ms:.1} invalid={} max_excess_pct={:.2} | short: {} | long (>= 100 tiles): {}",
            regions.cluster_size(),
            regions.node_count(),
            hier.invalid,
            hier.excess_max * 100.0,
            part(0),
            part(1),
        );
    }
    println!("{line}");
    Ok(())
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
