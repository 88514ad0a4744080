//! The vehicles scene: 100 vehicles (turning radius 1.5 tiles, reversing allowed) on a 96 x 64
//! map of three bands joined by gates three tiles wide at alternate ends (every trip between
//! bands makes U-turns round wall ends), with twelve dead-end pockets three wide; a vehicle
//! starts in each pocket facing its closed end, the rest anywhere open, facing any way; each is
//! ordered to an open cell in another band.

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{Cell, NavGrid, SearchConfig, find_path};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{DriveProgress, DriveStatus, Vehicle};

use super::Args;
use super::common::{Rng, thread_cpu};

const W: i32 = 96;
const H: i32 = 64;
/// The bands' rows: `(first, last)`; walls on the rows between.
const BANDS: [(i32, i32); 3] = [(0, 20), (22, 41), (43, 63)];
/// The pockets' left walls (each band has one at each).
const POCKETS: [i32; 4] = [12, 32, 52, 72];
const SPEED: f32 = 3.0;
const RADIUS: f32 = 1.5;
const BODY: f32 = 0.3;

fn map() -> NavGrid {
    let mut g = NavGrid::new(W as u32, H as u32).unwrap();
    let mut block = |x: i32, y: i32| g.set_walkable(Cell::new(x, y), false).unwrap();
    for x in 0..W {
        // The wall above the first band opens at the east end, the next at the west end.
        if !(90..=92).contains(&x) {
            block(x, 21);
        }
        if !(3..=5).contains(&x) {
            block(x, 42);
        }
    }
    for &(y0, _) in &BANDS {
        for &x0 in &POCKETS {
            for y in y0..y0 + 10 {
                block(x0, y);
                block(x0 + 4, y);
            }
        }
    }
    g
}

fn band_of(c: Cell) -> usize {
    BANDS
        .iter()
        .position(|&(a, b)| (a..=b).contains(&c.y))
        .unwrap_or(0)
}

/// An open cell with its eight neighbours open, not in a pocket, of a band other than `not`.
fn open_cell(grid: &NavGrid, rng: &mut Rng, not: Option<usize>) -> Cell {
    loop {
        let c = Cell::new(rng.below(W as u32) as i32, rng.below(H as u32) as i32);
        let in_pocket = POCKETS.iter().any(|&x0| (x0..=x0 + 4).contains(&c.x))
            && BANDS.iter().any(|&(y0, _)| (y0..y0 + 11).contains(&c.y));
        let clear = (-1..=1).all(|dy| (-1..=1).all(|dx| grid.is_walkable(c + IVec2::new(dx, dy))));
        if clear && !in_pocket && Some(band_of(c)) != not {
            return c;
        }
    }
}

/// One vehicle's trip as watched.
#[derive(Default)]
struct Trip {
    facing: Vec2,
    at: Vec2,
    driven: f32,
    reversed_frames: u32,
    in_place_turns: u32,
    arrived_at: Option<usize>,
}

pub fn run(args: &Args) {
    let mut rng = Rng::new(args.seed);
    let grid = map();
    let map = NavMap::new(grid.clone(), Vec2::ZERO, Vec2::ONE);
    let period = Duration::from_secs_f64(1.0 / 60.0);
    let dt = period.as_secs_f32();
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(period))
        .add_plugins(TilepathPlugins::default());
    app.world_mut().spawn(map.clone());
    app.update();
    let mut units = Vec::new();
    let count = args.units.max(12) as usize;
    for k in 0..count {
        let (start, facing) = if k < 12 {
            let (y0, _) = BANDS[k / 4];
            let x0 = POCKETS[k % 4];
            // Deep in the pocket, facing its closed end.
            (Cell::new(x0 + 2, y0 + 4), Vec2::NEG_Y)
        } else {
            let a = rng.below(8) as f32 * std::f32::consts::FRAC_PI_4;
            (open_cell(&grid, &mut rng, None), Vec2::from_angle(a))
        };
        let goal = open_cell(&grid, &mut rng, Some(band_of(start)));
        let flat = find_path(&grid, start, goal, &SearchConfig::default()).expect("connected");
        let at = map.cell_to_world(start);
        let e = app
            .world_mut()
            .spawn((
                Transform::from_translation(at.extend(0.0))
                    .with_rotation(Quat::from_rotation_z(facing.to_angle())),
                Mover {
                    speed: SPEED,
                    ..default()
                },
                NavAgent { radius: BODY },
                Vehicle {
                    turning_radius: RADIUS,
                    ..default()
                },
                PathRequest::to_cell(goal),
            ))
            .id();
        let trip = Trip {
            facing,
            at,
            ..default()
        };
        units.push((e, trip, flat.length as f32, goal, k < 12));
    }
    let (mut max_ratio, mut wall_frames, mut no_way) = (0.0f32, 0u32, 0usize);
    let mut overlap_frames = 0u32;
    let cpu0 = thread_cpu();
    let mut frames = 0;
    for frame in 0..args.frames {
        app.update();
        frames = frame + 1;
        for (e, trip, ..) in units.iter_mut() {
            let t = app.world().get::<Transform>(*e).unwrap();
            let (f, at) = ((t.rotation * Vec3::X).truncate(), t.translation.truncate());
            let turned = trip.facing.angle_to(f).abs();
            let moved = at - trip.at;
            max_ratio = max_ratio.max(turned / (SPEED * dt / RADIUS));
            if turned > 1e-4 && moved.length() < 1e-5 {
                trip.in_place_turns += 1;
            }
            if moved.length() > 1e-5 && moved.dot(f) < 0.0 {
                trip.reversed_frames += 1;
            }
            trip.driven += moved.length();
            let over = (-1..=1).any(|dy| {
                (-1..=1).any(|dx| {
                    let c = Cell::new(at.x.floor() as i32 + dx, at.y.floor() as i32 + dy);
                    let nearest = at.clamp(c.as_vec2(), c.as_vec2() + Vec2::ONE);
                    !grid.is_walkable(c) && nearest.distance(at) < BODY - 1e-3
                })
            });
            wall_frames += over as u32;
            (trip.facing, trip.at) = (f, at);
            let status = app.world().get::<DriveProgress>(*e).unwrap().status;
            if status == DriveStatus::Arrived && trip.arrived_at.is_none() {
                trip.arrived_at = Some(frame);
            }
        }
        // Vehicles overlapping another by more than a tenth of a tile.
        for (i, a) in units.iter().enumerate() {
            if units[i + 1..]
                .iter()
                .any(|b| a.1.at.distance(b.1.at) < 2.0 * BODY - 0.1)
            {
                overlap_frames += 1;
            }
        }
        if units.iter().all(|u| u.1.arrived_at.is_some()) {
            break;
        }
    }
    let cpu = thread_cpu() - cpu0;
    for (e, ..) in &units {
        if app.world().get::<DriveProgress>(*e).unwrap().status == DriveStatus::NoWay {
            no_way += 1;
        }
    }
    let arrived: Vec<_> = units.iter().filter(|u| u.1.arrived_at.is_some()).collect();
    let mut ratios: Vec<f32> = arrived.iter().map(|u| u.1.driven / u.2.max(1.0)).collect();
    ratios.sort_by(f32::total_cmp);
    let pick = |q: f32| {
        ratios
            .get(((ratios.len() as f32 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let in_place: u32 = units.iter().map(|u| u.1.in_place_turns).sum();
    let reversing = units.iter().filter(|u| u.1.reversed_frames > 0).count();
    let pockets_reversed = units
        .iter()
        .filter(|u| u.4 && u.1.reversed_frames > 0)
        .count();
    let last = arrived
        .iter()
        .filter_map(|u| u.1.arrived_at)
        .max()
        .unwrap_or(0);
    let ok = arrived.len() == units.len()
        && max_ratio <= 1.01
        && in_place == 0
        && wall_frames == 0
        && pockets_reversed == 12;
    println!(
        "summary scene=vehicles vehicles={} arrived={} no_way={} max_turn_rate_ratio={:.3} in_place_turns={} wall_frames={} overlap_pct={:.2} reversing={} pockets_reversed={}/12 trip_ratio_median={:.2} trip_ratio_p90={:.2} trip_ratio_max={:.2} last_arrival_s={:.1} frames={} cpu_ms_per_frame={:.3}",
        units.len(),
        arrived.len(),
        no_way,
        max_ratio,
        in_place,
        wall_frames,
        100.0 * overlap_frames as f64 / (units.len() * frames.max(1)) as f64,
        reversing,
        pockets_reversed,
        pick(0.5),
        pick(0.9),
        pick(1.0),
        last as f32 * dt,
        frames,
        cpu.as_secs_f64() * 1e3 / frames.max(1) as f64,
    );
    if !ok {
        eprintln!(
            "error: every vehicle must arrive, turn no faster than speed / radius, never in place, keep off the walls, and back out of every pocket"
        );
        std::process::exit(1);
    }
}
