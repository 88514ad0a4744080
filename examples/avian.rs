//! Units that are avian2d physics bodies: a hundred or more bodies cross a walled map through
//! its gates, walking their paths through their velocity (`DesiredVelocity` copied to avian's
//! `LinearVelocity`), the walls a static body built from the grid (`NavWallColliders`).
//! Headless: a summary line per run, the same scenario moved by the plugin itself beside it.
//!
//! `cargo run --release --features avian --example avian -- [--units N] [--frames N] [--seed N]
//! [--mode ours|avian|contacts|all] [--margin TILES]`
//!
//! - `ours`: no physics, the plugin moves the units' `Transform`s (its pushes part bodies).
//! - `avian`: dynamic bodies; the plugin's pushes go into the velocity, contacts part the rest.
//! - `contacts`: dynamic bodies, the plugin's pushing off: contacts alone part bodies.
//!
//! Measured (BENCHMARKS.md, physics): 100, 300 and 1,000 bodies all arrive, settling 1.0-1.2
//! times as late as the plugin's own movement at 2.5-4 times its frame cost; with contacts alone
//! (`contacts`), crowds jam in the gates (its failures do not fail the process: it is the
//! comparison).
//!
//! The summary: `arrived`, `stuck` (not arrived at the end), `settled_after` (frames until every
//! unit arrived), `in_cell_frames` (unit-frames with a body overlapping a blocked cell by more
//! than float rounding, `common::TOUCH`), `wall_frames` (by more than 0.05 tiles), the crowd's
//! overlaps (as the RTS demo counts them),
//! and the mean and 99th percentile frame time. The process fails if a unit did not arrive or a
//! body overlapped a blocked cell. The wall colliders reach `--margin` tiles (0.15) past the
//! blocked cells ([`NavWallMargin`]): a physics solver lets pressed bodies sink into colliders
//! by a small slop (up to 0.08 tiles with 1,000 bodies and 12 substeps), and the
//! margin keeps them off the cells themselves (0 unit-frames in 1,000-body runs, seeds 1-4).
//! `AVIAN_DEBUG=1` lists the units that did not arrive, with where they stand and their goals.

#[path = "common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use avian2d::prelude::*;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::avian::{NavWallColliders, NavWallMargin};
use bevy_tilepath::core::overlaps_blocked;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{CrowdSettings, DesiredVelocity, NavAgent, PathProgress};

use common::{CrowdWatch, Rng, percentile, unexpected, value};

const USAGE: &str = "usage: avian [--units N] [--frames N] [--seed N] [--mode ours|avian|contacts|all] [--margin TILES]";

/// The map: 40 tiles high, a wall down the middle with three gates, blocks on either side, and
/// a spawn zone at each end, wide enough for each army to fill half its cells.
const H: i32 = 40;

/// Columns of a spawn zone for `units` in all: at least 8.
fn zone(units: usize) -> i32 {
    ((units as i32 + H - 1) / H).max(8)
}

/// A body's radius in tiles.
const RADIUS: f32 = 0.3;

/// How far (tiles) a body may sink into a wall before the frame counts: touching is fine, and a
/// physics solver resolves contacts within a small slop.
const WALL_SLOP: f32 = 0.05;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Ours,
    Avian,
    Contacts,
}

struct Config {
    units: usize,
    frames: usize,
    seed: u64,
    modes: Vec<Mode>,
    /// Tiles the wall colliders reach past the blocked cells ([`NavWallMargin`]).
    margin: f32,
}

fn parse() -> Result<Config, String> {
    use lexopt::prelude::*;
    let mut config = Config {
        units: 100,
        frames: 3600,
        seed: 1,
        margin: 0.15,
        modes: vec![Mode::Ours, Mode::Avian, Mode::Contacts],
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("units") => config.units = value(&mut parser, "--units")?,
            Long("frames") => config.frames = value(&mut parser, "--frames")?,
            Long("seed") => config.seed = value(&mut parser, "--seed")?,
            Long("margin") => config.margin = value(&mut parser, "--margin")?,
            Long("mode") => {
                let mode: String = value(&mut parser, "--mode")?;
                config.modes = match mode.as_str() {
                    "ours" => vec![Mode::Ours],
                    "avian" => vec![Mode::Avian],
                    "contacts" => vec![Mode::Contacts],
                    "all" => vec![Mode::Ours, Mode::Avian, Mode::Contacts],
                    _ => return Err(format!("--mode: unknown mode {mode:?}\n{USAGE}")),
                };
            }
            Long("help") | Short('h') => return Err(USAGE.into()),
            _ => return Err(format!("{}\n{USAGE}", unexpected(arg))),
        }
    }
    Ok(config)
}

fn main() -> ExitCode {
    let config = match parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ok = true;
    for &mode in &config.modes {
        ok &= run(&config, mode) || mode == Mode::Contacts;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The walled map, `w` tiles wide: a wall down the middle with gates 3, 2 and 4 tiles wide, and
/// square blocks between the spawn zones (`zone` columns at each end).
fn map(rng: &mut Rng, w: i32, zone: i32) -> NavGrid {
    let mut grid = NavGrid::new(w as u32, H as u32).expect("a valid size");
    let gates = [(6, 9), (19, 21), (30, 34)];
    for y in 0..H {
        if !gates.iter().any(|&(a, b)| (a..b).contains(&y)) {
            grid.set_walkable(Cell::new(w / 2, y), false).unwrap();
        }
    }
    for _ in 0..24 {
        let (x, y) = (rng.below(w as u32) as i32, rng.below(H as u32) as i32);
        let near_wall = (x - w / 2).abs() < 4;
        let in_spawn = !(zone..w - zone - 1).contains(&x);
        if near_wall || in_spawn {
            continue;
        }
        for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let _ = grid.set_walkable(Cell::new(x + dx, y + dy), false);
        }
    }
    grid
}

fn app(mode: Mode) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .insert_resource(Time::<Fixed>::from_hz(60.0))
        // One movement tick, then one physics step, per frame.
        .add_plugins(TilepathPlugins::in_schedule(FixedUpdate))
        .insert_resource(TilepathSettings {
            crowd: CrowdSettings {
                pushing: mode != Mode::Contacts,
                ..default()
            },
            ..default()
        });
    if mode != Mode::Ours {
        app.add_plugins(PhysicsPlugins::default())
            .insert_resource(Gravity::ZERO);
        // Twice avian's default substeps: bodies pressed by a crowd sink into walls about half
        // as deep (1,000 bodies: 0.07-0.08 tiles at most, against 0.11-0.14), for a tenth
        // more frame time.
        app.insert_resource(SubstepCount(12));
    }
    // Updated by hand, not run: the plugins' last set-up steps are ours to call.
    app.finish();
    app.cleanup();
    app
}

/// One run; true if every unit arrived and no body sank into a wall.
fn run(config: &Config, mode: Mode) -> bool {
    let mut rng = Rng::new(config.seed);
    let zone = zone(config.units);
    let w = 56 + 2 * zone;
    let grid = map(&mut rng, w, zone);
    let mut app = app(mode);
    app.world_mut().spawn((
        NavMap::new(grid.clone(), Vec2::ZERO, Vec2::ONE),
        NavWallColliders,
        NavWallMargin(config.margin),
    ));
    // Half the units on each side, each ordered to a random cell on the other side.
    let mut units = Vec::new();
    let mut taken = std::collections::HashSet::new();
    let free = |rng: &mut Rng, x0: i32, taken: &mut std::collections::HashSet<Cell>| loop {
        let c = Cell::new(
            x0 + rng.below(zone as u32) as i32,
            rng.below(H as u32) as i32,
        );
        if grid.is_walkable(c) && taken.insert(c) {
            return c;
        }
    };
    let mut goals = std::collections::HashSet::new();
    for i in 0..config.units {
        let left = i % 2 == 0;
        let (from_x, to_x) = if left { (0, w - zone) } else { (w - zone, 0) };
        let start = free(&mut rng, from_x, &mut taken);
        let goal = free(&mut rng, to_x, &mut goals);
        let p = grid.cell_center(start);
        let mut unit = app.world_mut().spawn((
            Transform::from_xyz(p.x, p.y, 0.0),
            Mover::default(),
            NavAgent { radius: RADIUS },
            PathRequest::to_cell(goal),
        ));
        if mode != Mode::Ours {
            unit.insert((
                DesiredVelocity::default(),
                RigidBody::Dynamic,
                Collider::circle(RADIUS),
                LockedAxes::ROTATION_LOCKED,
                // Bodies slide past each other (with friction, two pressed together stick).
                Friction::ZERO,
            ));
        }
        units.push(unit.id());
    }
    let mut watch = CrowdWatch::default();
    let mut crowd = common::CrowdFrame::default();
    let mut wall_frames = 0u64;
    // Unit-frames with a body overlapping a blocked cell at all (beyond float rounding).
    let mut in_cell_frames = 0u64;
    let mut deepest = 0.0f32;
    let mut frame_ms = Vec::with_capacity(config.frames);
    let mut settled = None;
    for frame in 0..config.frames {
        let t = Instant::now();
        app.update();
        frame_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let world = app.world_mut();
        let mut q = world.query::<(&Transform, &PathProgress)>();
        let mut arrived = 0;
        for &e in &units {
            let Ok((tf, p)) = q.get(world, e) else {
                continue;
            };
            // Touching a wall is fine; sinking 0.05 tiles into one is not.
            let at = tf.translation.truncate();
            in_cell_frames += u64::from(common::in_wall(&grid, at, RADIUS));
            if overlaps_blocked(&grid, at, RADIUS - WALL_SLOP) {
                wall_frames += 1;
                // How deep: the largest radius of 0.01 steps that still overlaps.
                let depth = (1..=30)
                    .map(|k| k as f32 * 0.01)
                    .take_while(|&d| overlaps_blocked(&grid, at, RADIUS - d))
                    .last()
                    .unwrap_or(WALL_SLOP);
                deepest = deepest.max(depth);
            }
            arrived += usize::from(p.state == MoveState::Arrived);
        }
        crowd += watch.frame(world);
        if arrived == units.len() && settled.is_none() {
            settled = Some(frame);
        }
    }
    let world = app.world_mut();
    let mut q = world.query::<&PathProgress>();
    let arrived = units
        .iter()
        .filter(|&&e| q.get(world, e).is_ok_and(|p| p.state == MoveState::Arrived))
        .count();
    if std::env::var_os("AVIAN_DEBUG").is_some() {
        let mut q = world.query::<(&Transform, &PathProgress, Option<&NavPath>)>();
        for &e in &units {
            if let Ok((tf, p, path)) = q.get(world, e)
                && p.state != MoveState::Arrived
            {
                eprintln!(
                    "{e} at {} {:?} goal {:?}",
                    tf.translation.truncate(),
                    p.state,
                    path.map(|p| p.goal)
                );
            }
        }
    }
    let mean = frame_ms.iter().sum::<f64>() / frame_ms.len().max(1) as f64;
    println!(
        "summary mode={mode:?} units={} arrived={arrived} stuck={} settled_after={} wall_frames={wall_frames} in_cell_frames={in_cell_frames} deepest_in_wall={deepest:.2} mean_frame_ms={mean:.3} p99_frame_ms={:.3} {crowd}",
        units.len(),
        units.len() - arrived,
        settled.map_or("never".to_string(), |f| f.to_string()),
        percentile(&frame_ms, 0.99),
    );
    arrived == units.len() && deepest <= 0.1 && in_cell_frames == 0
}
