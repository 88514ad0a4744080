#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Criterion benchmark: the same MovingAI queries through our A* and through the `pathfinding`
//! crate's `astar` (same grid, same costs, same octile heuristic), so the ratio shows in one run.
//! The same maps read as hexagonal grids (each cell an axial hexagon, `Topology::Hex`) time the
//! hexagonal search against `astar` with the six neighbours and the hexagonal distance.
//!
//! `cargo bench --bench search`. Maps: Sturtevant, "Benchmarks for Grid-Based Pathfinding", 2012.

use bevy_tilepath::core::movingai::{Scenario, read_map, read_scen};
use bevy_tilepath::core::{AStar, Cell, MoveRules, NavGrid, SearchConfig, SearchStep, Topology};
use criterion::{Criterion, criterion_group, criterion_main};

fn load(map: &str, topology: Topology) -> (NavGrid, Vec<Scenario>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/movingai");
    let rules = MoveRules {
        topology,
        ..MoveRules::default()
    };
    let grid = read_map(format!("{dir}/maps/{map}"), rules).unwrap();
    let scens = read_scen(format!("{dir}/scenarios/{map}.scen")).unwrap();
    // Every fourth query keeps one iteration short while covering all buckets (on hexagons,
    // those whose ends are still connected).
    let scens = scens
        .into_iter()
        .step_by(4)
        .filter(|s| grid.connected(s.start, s.goal))
        .collect();
    (grid, scens)
}

fn ours(grid: &NavGrid, scens: &[Scenario], search: &mut AStar) -> f64 {
    let mut total = 0.0;
    for s in scens {
        search
            .begin(grid, s.start, s.goal, &SearchConfig::default())
            .unwrap();
        match search.step(grid, u32::MAX) {
            SearchStep::Found(p) => total += p.length,
            other => panic!("{other:?}"),
        }
    }
    total
}

fn theirs(grid: &NavGrid, scens: &[Scenario]) -> f64 {
    let costs = grid.rules().costs;
    let mut total = 0.0;
    for s in scens {
        let goal = s.goal;
        let (_, cost) = pathfinding::prelude::astar(
            &s.start,
            |&c: &Cell| {
                let mut out = Vec::with_capacity(8);
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        let n = c + Cell::new(dx, dy);
                        if let Some(step) = grid.step_cost(c, n) {
                            out.push((n, step));
                        }
                    }
                }
                out
            },
            |&c| {
                let d = c - goal;
                if grid.is_hex() {
                    let steps = d.x.abs().max(d.y.abs()).max((d.x + d.y).abs());
                    return steps as u64 * costs.straight as u64;
                }
                let d = d.abs();
                let (hi, lo) = (d.x.max(d.y) as u64, d.x.min(d.y) as u64);
                (hi - lo) * costs.straight as u64 + lo * costs.diagonal as u64
            },
            |&c| c == goal,
        )
        .unwrap();
        total += costs.to_tiles(cost);
    }
    total
}

fn bench(c: &mut Criterion) {
    for (map, topology, name) in [
        ("dao/arena2.map", Topology::Eight, "dao/arena2.map"),
        ("sc1/Aftershock.map", Topology::Eight, "sc1/Aftershock.map"),
        (
            "dao/arena2.map",
            Topology::Hex,
            "dao/arena2.map as hexagons",
        ),
    ] {
        let (grid, scens) = load(map, topology);
        let mut search = AStar::new();
        // Both must find the optimal lengths before they are timed.
        let a = ours(&grid, &scens, &mut search);
        let b = theirs(&grid, &scens);
        assert!((a - b).abs() < 1e-3 * scens.len() as f64, "{a} vs {b}");
        let mut group = c.benchmark_group(name);
        group.sample_size(10);
        group.bench_function("bevy_tilepath", |bch| {
            bch.iter(|| ours(&grid, &scens, &mut search))
        });
        group.bench_function("pathfinding::astar", |bch| {
            bch.iter(|| theirs(&grid, &scens))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
