//! bevy_tilepath against bevy_northstar 0.7, in one run on the same MovingAI queries
//! (a same-run comparison). Each query is searched by every contender in turn, so
//! machine noise hits them alike:
//!
//! - `jps`: our exact jump point search (`SearchConfig::jump_points`);
//! - `jps+`: the same search reading the grid's precomputed jump distances
//!   (`NavGrid::build_jump_table`, built before the queries and timed apart);
//! - `astar`: our exact A*;
//! - `regions`: our region-map search (`find_path_hierarchical`, 16-cell clusters), a little
//!   longer than optimal;
//! - `hpa`: northstar's HPA* (its default, refined mode; 16-cell chunks, no corner cutting, as
//!   MovingAI's rules).
//!
//! Per contender: mean and median microseconds per query, mean path excess over the scenario's
//! optimal length, and failures (no path found, or an exact search off optimal).
//!
//! ```text
//! cd benches/northstar
//! cargo run --release -- ../../assets/movingai/maps/dao/arena2.map \
//!     ../../assets/movingai/scenarios/dao/arena2.map.scen --every 3
//! ```
//!
//! Its own workspace (see `Cargo.toml`): bevy_tilepath's builds and CI never compile northstar.

use std::process::ExitCode;
use std::time::Instant;

use bevy::math::UVec3;
use bevy_northstar::filter::NoCornerCutting;
use bevy_northstar::grid::{Grid, GridSettingsBuilder};
use bevy_northstar::nav::Nav;
use bevy_northstar::pathfind::PathfindArgs;
use bevy_northstar::prelude::OrdinalNeighborhood;
use bevy_tilepath::core::movingai::{Scenario, read_map, read_scen};
use bevy_tilepath::core::{
    AStar, Cell, MoveRules, NavGrid, RegionMap, SearchConfig, SearchStep, find_path_hierarchical,
};

/// Cluster (chunk) size of both hierarchies.
const CLUSTER: u32 = 16;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("northstar-compare: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One contender's tally.
#[derive(Default)]
struct Tally {
    us: Vec<f64>,
    excess: Vec<f64>,
    failures: usize,
}

impl Tally {
    fn add(&mut self, us: f64, length: Option<f64>, s: &Scenario, exact: bool) {
        self.us.push(us);
        match length {
            Some(l) if !exact || s.matches(l) => self.excess.push(if s.optimal > 0.0 {
                l / s.optimal - 1.0
            } else {
                0.0
            }),
            _ => self.failures += 1,
        }
    }

    fn mean_us(&self) -> f64 {
        self.us.iter().sum::<f64>() / self.us.len().max(1) as f64
    }

    fn median_us(&self) -> f64 {
        let mut v = self.us.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    }

    fn report(&self, name: &str, against: &Tally) {
        let excess = self.excess.iter().sum::<f64>() / self.excess.len().max(1) as f64;
        // Scenario lengths carry rounding: an exact search is a hair under them.
        let excess = if excess.abs() < 1e-9 { 0.0 } else { excess };
        println!(
            "{name:8} mean_us={:9.1} median_us={:9.1} mean_excess={:6.3}% failures={} mean_vs_hpa={:.2}x",
            self.mean_us(),
            self.median_us(),
            excess * 100.0,
            self.failures,
            self.mean_us() / against.mean_us().max(1e-9)
        );
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: northstar-compare <file.map> <file.scen> [--every N]";
    let map_path = args.next().ok_or(usage)?;
    let scen_path = args.next().ok_or(usage)?;
    let every: usize = match (args.next().as_deref(), args.next()) {
        (Some("--every"), Some(n)) => n.parse().map_err(|_| usage)?,
        (None, _) => 1,
        _ => return Err(usage.into()),
    };
    let grid = read_map(&map_path, MoveRules::default()).map_err(|e| e.to_string())?;
    let scens = read_scen(&scen_path).map_err(|e| e.to_string())?;

    let t = Instant::now();
    let regions = RegionMap::build(&grid, CLUSTER);
    let regions_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let mut tabled = grid.clone();
    tabled.build_jump_table();
    let table_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let northstar = northstar_grid(&grid);
    let northstar_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "map={map_path} queries={} (every {every}) build_ms regions={regions_ms:.1} jump_table={table_ms:.1} northstar={northstar_ms:.1}",
        scens.len().div_ceil(every)
    );

    let jps_config = SearchConfig {
        jump_points: true,
        ..Default::default()
    };
    let astar_config = SearchConfig::default();
    let mut search = AStar::new();
    let (mut jps, mut jps_plus, mut astar, mut hier, mut hpa) = Default::default();
    let tallies: [&mut Tally; 5] = [&mut jps, &mut jps_plus, &mut astar, &mut hier, &mut hpa];
    let [jps, jps_plus, astar, hier, hpa] = tallies;
    for s in scens.iter().step_by(every) {
        let t = Instant::now();
        let l = exact(&mut search, &grid, s, &jps_config);
        jps.add(t.elapsed().as_secs_f64() * 1e6, l, s, true);

        let t = Instant::now();
        let l = exact(&mut search, &tabled, s, &jps_config);
        jps_plus.add(t.elapsed().as_secs_f64() * 1e6, l, s, true);

        let t = Instant::now();
        let l = exact(&mut search, &grid, s, &astar_config);
        astar.add(t.elapsed().as_secs_f64() * 1e6, l, s, true);

        let t = Instant::now();
        let l = find_path_hierarchical(&grid, &regions, s.start, s.goal, &astar_config)
            .ok()
            .map(|p| p.length);
        hier.add(t.elapsed().as_secs_f64() * 1e6, l, s, false);

        let mut request = PathfindArgs::new(pos(s.start), pos(s.goal));
        let t = Instant::now();
        let path = northstar.pathfind(&mut request);
        let us = t.elapsed().as_secs_f64() * 1e6;
        hpa.add(us, path.map(|p| polyline(pos(s.start), p.path())), s, false);
    }
    jps.report("jps", hpa);
    jps_plus.report("jps+", hpa);
    astar.report("astar", hpa);
    hier.report("regions", hpa);
    hpa.report("hpa", hpa);
    Ok(())
}

/// An exact search to the end: its path length, if any.
fn exact(search: &mut AStar, grid: &NavGrid, s: &Scenario, config: &SearchConfig) -> Option<f64> {
    search.begin(grid, s.start, s.goal, config).ok()?;
    loop {
        match search.step(grid, u32::MAX) {
            SearchStep::Pending => continue,
            SearchStep::Found(p) => return Some(p.length),
            _ => return None,
        }
    }
}

fn pos(c: Cell) -> UVec3 {
    UVec3::new(c.x as u32, c.y as u32, 0)
}

/// Length of a northstar path from `start` through its cell centers (straight and diagonal
/// steps, or the straight lines of a refined path; a path that lists its start adds nothing).
fn polyline(start: UVec3, cells: &[UVec3]) -> f64 {
    std::iter::once(&start)
        .chain(cells)
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| {
            let d = w[1].as_vec3() - w[0].as_vec3();
            f64::from(d.x).hypot(f64::from(d.y))
        })
        .sum()
}

/// Northstar's grid of the same map: eight-way, no corner cutting, every open cell cost 1,
/// chunks of [`CLUSTER`] cells, built.
fn northstar_grid(grid: &NavGrid) -> Grid<OrdinalNeighborhood> {
    let settings = GridSettingsBuilder::new_2d(grid.width(), grid.height())
        .chunk_size(CLUSTER)
        .default_impassable()
        .add_neighbor_filter(NoCornerCutting)
        .build();
    let mut ns: Grid<OrdinalNeighborhood> = Grid::new(&settings);
    for c in grid.cells() {
        if grid.is_walkable(c) {
            ns.set_nav(pos(c), Nav::Passable(1));
        }
    }
    ns.build();
    ns
}
