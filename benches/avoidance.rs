#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Criterion benchmark: ORCA local avoidance for a dense crowd, one frame of 1,000 units, each
//! with its neighbours within 2 tiles and the walls within 1.5 tiles (the neighbour lists are
//! found outside the timed part: the plugin keeps them in a spatial hash).
//!
//! `cargo bench --bench avoidance`.

use bevy::math::Vec2;
use bevy_tilepath::core::{AvoidanceParams, Body, Cell, NavGrid, avoid_velocity, wall_points};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    // 1,000 units a tile apart (jittered), walking east; a wall with gaps across their way.
    let mut grid = NavGrid::new(64, 64).unwrap();
    for y in (0..64).filter(|y| y % 8 > 2) {
        grid.set_walkable(Cell::new(40, y), false).unwrap();
    }
    let mut seed = 12345u32;
    let mut jitter = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    };
    let bodies: Vec<Body> = (0..1000)
        .map(|k| Body {
            position: Vec2::new(4.5 + (k % 32) as f32, 16.5 + (k / 32) as f32)
                + Vec2::new(jitter(), jitter()) * 0.2,
            velocity: Vec2::new(3.0, jitter()),
            radius: 0.35,
        })
        .collect();
    let near: Vec<Vec<Body>> = bodies
        .iter()
        .map(|b| {
            bodies
                .iter()
                .filter(|o| o.position != b.position && o.position.distance(b.position) < 2.0)
                .copied()
                .collect()
        })
        .collect();
    let walls: Vec<Vec<Vec2>> = bodies
        .iter()
        .map(|b| wall_points(&grid, b.position, 1.5))
        .collect();
    let params = AvoidanceParams::default();
    let neighbours = near.iter().map(Vec::len).sum::<usize>() as f64 / near.len() as f64;
    println!("mean neighbours within 2 tiles: {neighbours:.1}");
    c.bench_function("avoid_velocity, 1,000 units", |bch| {
        bch.iter(|| {
            bodies
                .iter()
                .zip(&near)
                .zip(&walls)
                .map(|((b, n), w)| avoid_velocity(b, Vec2::new(4.0, 0.0), n, w, &params).x)
                .sum::<f32>()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
