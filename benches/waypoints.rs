#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Criterion benchmark: a map that is a graph, 2,000 waypoints scattered over a square (none
//! closer than 15 world units, cells of 5), each with roads to its three nearest: building its
//! grid, and a search between two waypoints (100 pairs, the ones found).
//!
//! `cargo bench --bench waypoints`.

use bevy::math::Vec2;
use bevy_tilepath::core::{BuiltWaypoints, SearchConfig, WaypointGraph, WaypointId, find_path};
use criterion::{Criterion, criterion_group, criterion_main};

fn graph(n: usize) -> (WaypointGraph, Vec<WaypointId>) {
    let mut graph = WaypointGraph::new(5.0);
    let mut seed = 12345u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 10_000) as f32 / 10_000.0
    };
    let side = (n as f32).sqrt() * 40.0;
    let mut points: Vec<Vec2> = Vec::new();
    while points.len() < n {
        let p = Vec2::new(next(), next()) * side;
        if points.iter().all(|q| q.distance(p) > 15.0) {
            points.push(p);
        }
    }
    let ids: Vec<WaypointId> = points.iter().map(|&p| graph.add_waypoint(p)).collect();
    for i in 0..n {
        let mut near: Vec<(f32, usize)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| (points[i].distance(points[j]), j))
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        for &(_, j) in near.iter().take(3).filter(|&&(_, j)| i < j) {
            graph.add_way(ids[i], ids[j]).unwrap();
        }
    }
    (graph, ids)
}

fn pairs(built: &BuiltWaypoints, ids: &[WaypointId]) -> Vec<(WaypointId, WaypointId)> {
    let n = ids.len();
    (0..100)
        .map(|k| (ids[(k * 7) % n], ids[(k * 13 + 5) % n]))
        .filter(|&(a, b)| built.grid.reaches(built.cell(a), built.cell(b)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let (graph, ids) = graph(2000);
    c.bench_function("waypoints build 2000", |b| {
        b.iter(|| graph.build().unwrap())
    });
    let built = graph.build().unwrap();
    let pairs = pairs(&built, &ids);
    let config = SearchConfig::default();
    let mut k = 0;
    c.bench_function("waypoints search 2000", |b| {
        b.iter(|| {
            let (from, to) = pairs[k % pairs.len()];
            k += 1;
            find_path(&built.grid, built.cell(from), built.cell(to), &config).unwrap()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
