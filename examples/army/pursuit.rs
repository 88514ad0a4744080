//! The army runner's `pursuit` scene: followers on wandering targets (see the runner's
//! documentation for what it prints).

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{Cell, NavGrid, spread_slots};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{NavAgent, PathProgress, TilepathFrameStats};

use super::Args;
use super::common::{CrowdFrame, CrowdWatch, Rng, thread_cpu};

const WIDTH: u32 = 150;
const HEIGHT: u32 = 60;
const TARGETS: usize = 20;
const TARGET_SPEED: f32 = 2.5;
/// How far (tiles, each axis) a target's next goal lies at most.
const WANDER: i32 = 30;
/// Frames before the share in range is counted (the followers catching up at first).
const WARM_UP: usize = 300;

/// The field: open ground with `bars` walls scattered over it (bars of 1 x 6 and 6 x 1 tiles).
fn field(rng: &mut Rng, bars: u32) -> NavGrid {
    let mut grid = NavGrid::new(WIDTH, HEIGHT).expect("valid size");
    for _ in 0..bars {
        let (x, y) = (
            rng.below(WIDTH - 8) as i32 + 4,
            rng.below(HEIGHT - 8) as i32 + 4,
        );
        let across = rng.below(2) == 0;
        for k in 0..6 {
            let c = if across {
                Cell::new(x + k, y)
            } else {
                Cell::new(x, y + k)
            };
            grid.set_walkable(c, false).ok();
        }
    }
    grid
}

/// `--gap`: the column of the wall across the field and the row of its gap.
const GAP_WALL: i32 = 75;
const GAP_ROW: i32 = 30;

/// Frames after a target walks into a gap one cell wide that `under_90_off_gaps` leaves out (4
/// s: ten followers file through in about 2 s, then close on the target at 1.5 tiles a second).
const GAP_WINDOW: usize = 240;

/// `--gap`'s field: open ground but for a wall across it with a gap one cell wide.
fn gap_field() -> NavGrid {
    let mut grid = NavGrid::new(WIDTH, HEIGHT).expect("valid size");
    for y in (0..HEIGHT as i32).filter(|&y| y != GAP_ROW) {
        grid.set_walkable(Cell::new(GAP_WALL, y), false).ok();
    }
    grid
}

/// `--gap`: the target's next goal, 9 tiles past the wall from `here`, on a random row within
/// 8 of the gap's.
fn across(rng: &mut Rng, here: Cell) -> Cell {
    let x = if here.x < GAP_WALL {
        GAP_WALL + 9
    } else {
        GAP_WALL - 9
    };
    Cell::new(x, GAP_ROW - 8 + rng.below(17) as i32)
}

/// `--gap`: which side of the wall each follower, then the target, was on last frame, and for
/// each crossing of the target the frame it crossed and the frames its followers did.
#[derive(Default)]
struct Files {
    east: Vec<bool>,
    crossings: Vec<(usize, Vec<usize>)>,
}

impl Files {
    /// Notes this frame's crossings: `at` are the followers' positions, then the target's.
    fn frame(&mut self, frame: usize, at: &[Vec2]) {
        let east: Vec<bool> = at.iter().map(|p| p.x > GAP_WALL as f32 + 0.5).collect();
        if self.east.is_empty() {
            self.east = east;
            return;
        }
        let target = at.len() - 1;
        if east[target] != self.east[target] {
            self.crossings.push((frame, Vec::new()));
        }
        let crossed = (0..target).filter(|&k| east[k] != self.east[k]).count();
        if let Some((_, followers)) = self.crossings.last_mut() {
            followers.extend(std::iter::repeat_n(frame, crossed));
        }
        self.east = east;
    }

    /// The seconds from each crossing of the target to its last follower's, over the
    /// crossings all `followers` made.
    fn seconds(&self, followers: usize) -> Vec<f64> {
        self.crossings
            .iter()
            .filter(|(_, f)| f.len() >= followers)
            .map(|(t, f)| (f[followers - 1] - t) as f64 / 60.0)
            .collect()
    }
}

/// A random open cell of `island` within [`WANDER`] tiles of `near`.
fn wander(grid: &NavGrid, rng: &mut Rng, near: Cell, island: Option<u32>) -> Cell {
    loop {
        let c = near
            + IVec2::new(
                rng.below(2 * WANDER as u32 + 1) as i32 - WANDER,
                rng.below(2 * WANDER as u32 + 1) as i32 - WANDER,
            );
        if grid.in_bounds(c) && grid.is_walkable(c) && grid.island(c) == island {
            return c;
        }
    }
}

pub fn run(args: &Args) {
    let mut rng = Rng::new(args.seed);
    let grid = if args.gap {
        gap_field()
    } else {
        field(&mut rng, if args.open { 0 } else { 60 })
    };
    let target_count = if args.gap { 1 } else { TARGETS };
    let map = NavMap::new(grid.clone(), Vec2::ZERO, Vec2::ONE);
    let period = Duration::from_secs_f64(1.0 / 60.0);
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(period))
        .insert_resource(TilepathSettings {
            time_budget: Duration::from_secs(1),
            ..Default::default()
        })
        .add_plugins(TilepathPlugins::default());
    app.world_mut().spawn(map.clone());
    // The biggest island: every target and follower starts on it.
    let centre = Cell::new(WIDTH as i32 / 2, HEIGHT as i32 / 2);
    let island = grid.island(
        grid.cells_outward(centre, 20)
            .find(|&c| grid.is_walkable(c))
            .expect("open ground"),
    );
    let per_target = (args.units as usize).div_ceil(target_count);
    let mut targets = Vec::new();
    let mut followers: Vec<(Entity, usize)> = Vec::new();
    for t in 0..target_count {
        let home = if args.gap {
            Cell::new(GAP_WALL - 7, GAP_ROW)
        } else {
            wander(&grid, &mut rng, centre, island)
        };
        let target = app
            .world_mut()
            .spawn((
                Transform::from_translation(map.cell_to_world(home).extend(0.0)),
                NavAgent::default(),
                Mover {
                    speed: TARGET_SPEED,
                    ..default()
                },
            ))
            .id();
        targets.push(target);
        // Its followers a few tiles off, in a blob.
        let near = wander(&grid, &mut rng, home, island);
        let near = grid
            .cells_outward(home, 8)
            .filter(|&c| grid.island(c) == island && c.distance_squared(home) >= 16)
            .nth(rng.below(8) as usize)
            .unwrap_or(near);
        for c in spread_slots(&grid, near, per_target) {
            if followers.len() >= args.units as usize {
                break;
            }
            let f = app
                .world_mut()
                .spawn((
                    Transform::from_translation(map.cell_to_world(c).extend(0.0)),
                    NavAgent::default(),
                    Mover::default(),
                ))
                .id();
            followers.push((f, t));
        }
    }
    app.update();
    // Its region maps first: the run repeats under load.
    super::common::wait_for_region_maps(&mut app, 600);
    for &(f, t) in &followers {
        app.world_mut()
            .entity_mut(f)
            .insert(PathRequest::follow(targets[t], args.range));
    }

    let mut watch = CrowdWatch::default();
    let mut crowd = CrowdFrame::default();
    let mut outcomes = app
        .world_mut()
        .resource_mut::<Messages<PathOutcome>>()
        .get_cursor();
    let is_follower: std::collections::HashSet<Entity> = followers.iter().map(|f| f.0).collect();
    let (mut searches, mut pursuits, mut stops, mut shared) = (0u64, 0u64, 0u64, 0u64);
    let (mut reachable, mut in_range) = (vec![0u64; followers.len()], vec![0u64; followers.len()]);
    let (mut queue_cpu, mut frame_cpu) = (Duration::ZERO, Duration::ZERO);
    let mut wall_frames = 0u64;
    let mut files = Files::default();
    // Each target's walks into a gap one cell wide (after the warm-up), and the cell it was on.
    let mut gaps = vec![0u32; targets.len()];
    let mut target_cells: Vec<Option<Cell>> = vec![None; targets.len()];
    // The frame each target last walked into such a gap, and each follower's frames (reachable,
    // in range) outside the `GAP_WINDOW` after it.
    let mut last_gap: Vec<Option<usize>> = vec![None; targets.len()];
    let (mut reachable_off, mut in_range_off) =
        (vec![0u64; followers.len()], vec![0u64; followers.len()]);
    for frame in 1..=args.frames {
        let before = thread_cpu();
        app.update();
        frame_cpu += thread_cpu().saturating_sub(before);
        let world = app.world_mut();
        queue_cpu += world.resource::<TilepathFrameStats>().main_thread_cpu;
        crowd += watch.frame(world);
        for o in outcomes.read(world.resource::<Messages<PathOutcome>>()) {
            if !is_follower.contains(&o.entity) {
                continue;
            }
            searches += 1;
            pursuits += u64::from(o.origin == PathOrigin::Pursuit);
            stops += u64::from(o.origin == PathOrigin::InRange);
            shared += u64::from(matches!(
                o.kind,
                OutcomeKind::Found {
                    search: SearchKind::Shared,
                    ..
                }
            ));
        }
        // Targets that arrived (or failed) wander on.
        for &t in &targets {
            let (Some(tf), Some(p)) = (world.get::<Transform>(t), world.get::<PathProgress>(t))
            else {
                continue;
            };
            let s = world.get::<PathStatus>(t).unwrap_or(&PathStatus::Idle);
            let idle = matches!(s, PathStatus::Idle | PathStatus::Failed(_))
                || (*s == PathStatus::Found && !p.state.is_underway());
            if idle {
                let here = map
                    .world_to_cell(tf.translation.truncate())
                    .expect("on the map");
                let next = if args.gap {
                    across(&mut rng, here)
                } else {
                    wander(&grid, &mut rng, here, island)
                };
                world.entity_mut(t).insert(PathRequest::to_cell(next));
            }
        }
        let at = |world: &World, e: Entity| {
            map.world_to_grid(
                world
                    .get::<Transform>(e)
                    .expect("a unit")
                    .translation
                    .truncate(),
            )
        };
        if args.gap {
            let mut all: Vec<Vec2> = followers.iter().map(|&(f, _)| at(world, f)).collect();
            all.push(at(world, targets[0]));
            files.frame(frame, &all);
        }
        for (k, &t) in targets.iter().enumerate() {
            let p = at(world, t);
            wall_frames += u64::from(crate::common::in_wall(&grid, p, NavAgent::default().radius));
            let cell = grid.cell_at(p);
            let entered = target_cells[k].is_some_and(|c| c != cell && !grid.is_one_wide(c));
            if entered && grid.is_one_wide(cell) {
                last_gap[k] = Some(frame);
                gaps[k] += u32::from(frame > WARM_UP);
            }
            target_cells[k] = Some(cell);
        }
        for (k, &(f, t)) in followers.iter().enumerate() {
            let (p, q) = (at(world, f), at(world, targets[t]));
            wall_frames += u64::from(crate::common::in_wall(&grid, p, NavAgent::default().radius));
            let same_island = grid.island(grid.cell_at(p)) == grid.island(grid.cell_at(q));
            if frame > WARM_UP && same_island {
                reachable[k] += 1;
                in_range[k] += u64::from(p.distance(q) <= args.range);
                if last_gap[t].is_none_or(|g| frame > g + GAP_WINDOW) {
                    reachable_off[k] += 1;
                    in_range_off[k] += u64::from(p.distance(q) <= args.range);
                }
            }
        }
    }
    let seconds = args.frames as f64 / 60.0;
    let all_reachable: u64 = reachable.iter().sum();
    let all_in_range: u64 = in_range.iter().sum();
    let in_range_pct = 100.0 * all_in_range as f64 / all_reachable.max(1) as f64;
    let worst = reachable
        .iter()
        .zip(&in_range)
        .map(|(&r, &i)| 100.0 * i as f64 / r.max(1) as f64)
        .fold(100.0f64, f64::min);
    let under_90_of = |reachable: &[u64], in_range: &[u64]| {
        reachable
            .iter()
            .zip(in_range)
            .filter(|&(&r, &i)| r > 0 && 10 * i < 9 * r)
            .count()
    };
    let under_90 = under_90_of(&reachable, &in_range);
    if args.gap {
        let mut s = files.seconds(followers.len());
        s.sort_by(f64::total_cmp);
        let median = s.get(s.len() / 2).copied().unwrap_or(f64::NAN);
        let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
        println!(
            "file median_s={median:.2} mean_s={mean:.2} crossings={}",
            s.len()
        );
    }
    // Gaps one cell wide each target went through, and those of the targets of followers in
    // range less than 90 % of the time.
    let under_gaps: Vec<String> = followers
        .iter()
        .enumerate()
        .filter(|&(k, _)| reachable[k] > 0 && 10 * in_range[k] < 9 * reachable[k])
        .map(|(_, &(_, t))| gaps[t].to_string())
        .collect();
    let all_gaps: Vec<String> = gaps.iter().map(u32::to_string).collect();
    let off: u64 = reachable_off.iter().sum();
    println!(
        "gaps per_target={} under_90_targets={} under_90_off_gaps={} off_gaps_pct={:.1}",
        all_gaps.join(","),
        under_gaps.join(","),
        under_90_of(&reachable_off, &in_range_off),
        100.0 * off as f64 / all_reachable.max(1) as f64,
    );
    let counted = (args.frames.saturating_sub(WARM_UP) * followers.len()).max(1);
    let per_s = |n: u64| n as f64 / seconds;
    println!(
        "summary scene=pursuit followers={} targets={} seconds={seconds:.0} in_range_pct={in_range_pct:.1} worst_in_range_pct={worst:.1} under_90={under_90} reachable_pct={:.1} searches_per_s={:.1} pursuit_per_s={:.1} stops_per_s={:.1} shared_pct={:.1} queue_cpu_ms_per_s={:.2} frame_cpu_ms_per_s={:.1} overlaps_pct={:.2} wall_frames={wall_frames} jump_frames={}",
        followers.len(),
        targets.len(),
        100.0 * all_reachable as f64 / counted as f64,
        per_s(searches),
        per_s(pursuits),
        per_s(stops),
        100.0 * shared as f64 / searches.max(1) as f64,
        queue_cpu.as_secs_f64() * 1000.0 / seconds,
        frame_cpu.as_secs_f64() * 1000.0 / seconds,
        100.0 * crowd.overlapping as f64 / crowd.units.max(1) as f64,
        crowd.jumps,
    );
    let mut failures = Vec::new();
    if in_range_pct < args.min_in_range {
        failures.push(format!(
            "followers in range {in_range_pct:.1} % of their frames (at least {} %)",
            args.min_in_range
        ));
    }
    if worst < args.min_follower_in_range {
        failures.push(format!(
            "a follower in range {worst:.1} % of its frames (each at least {} %)",
            args.min_follower_in_range
        ));
    }
    if wall_frames > 0 || crowd.jumps > 0 {
        failures.push(format!(
            "{wall_frames} frames with a body in a wall, {} with a unit leaping",
            crowd.jumps
        ));
    }
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("error: {failure}");
        }
        std::process::exit(1);
    }
}
