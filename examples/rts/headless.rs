//! The headless run: the same map (through the tilemap integration) and armies without a
//! window, scripted orders (or a replay's), and a summary line; the process fails if a unit did not
//! arrive (a replay: if it desynced).
//! The summary counts the crowd too: `unit_overlaps` (unit-frames in which a unit's body
//! overlaps another's by more than a fifth of the sum of their radii), `walk_through_frames`
//! (unit-frames spent walking through other units), the fastest any unit moved from one frame to
//! the next (`max_unit_speed`, tiles per second) and the unit-frames a unit moved faster than
//! 1.5 x its speed (`fast_unit_frames`) or more than half a tile (`jump_frames`); with
//! `--vehicles`, the vehicle-frames in which a vehicle's body overlaps another vehicle's so
//! (`vehicle_overlaps`, of `vehicle_frames`: a vehicle driving is never pushed apart).
//! `goal_cells_p90` and `goal_cells_max` say how far (cells) arrived units stand from their goal
//! cells at the end (units that stop at the edge of their gathered crowd arrive short of their
//! slots), `last_frame_overlaps` how many units overlap another in the last frame (once settled:
//! bodies parked inside each other, which a player sees for good).
//!
//! `RTS_DEBUG=1` lists the units that did not arrive and every wall overlap (and every 600 frames
//! after the final order how many have not), `RTS_MAP=1` prints the map with them at the end
//! (`RTS_MAP_AT=3000,4200`: at those frames too), `RTS_TRACE=12,40` prints those entities' state each frame, `RTS_HASH=1`
//! prints a hash of all unit positions each frame (to show two builds behave the same),
//! `RTS_ORDER=600:82,35:1,2,35,45` orders, at frame 600, the blue units standing on tiles from
//! (1, 2) to (35, 45) to tile (82, 35) as the player (to replay a windowed order; the script
//! then orders red only), and lists those that did not arrive near it at the end and those with
//! a wall between them and their goals.
//! `RTS_NUDGE=300` moves one unit (the first in entity order) a ten-thousandth of a tile east
//! after frame 300: the same game to the eye, but a crowd is chaotic, so every figure of the
//! summary moves from then on. Runs nudged at a few frames give the noise floor a change of the
//! crowd's rules must rise above (see BENCHMARKS.md, crowds: a crowd's noise floor).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bevy::ecs::world::CommandQueue;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{ClassGrid, MoveClass, NavGrid};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    FogStats, LeftLink, Lockstep, LockstepKey, NavAgent, NavClasses, PathProgress, SearchKind,
    TilepathSchedule,
};

use crate::DemoConfig;
use crate::common::{CrowdFrame, CrowdWatch, Rng, percentile};
use crate::inputs::{Input, Inputs, Shape, apply_inputs, checksums};
use crate::map::{DemoMap, MAP_H, MAP_W, Terrain, generate_map, spawn_tilemap};
use crate::orders::{PLAYER_PRIORITY, retry_failed};
use crate::units::{Kind, Team, muster, tanks_as_vehicles};

/// Frames between the scripted group orders, and units per group.
const ORDER_EVERY: usize = 90;
const GROUP: usize = 50;

pub fn run(config: DemoConfig, inputs: Inputs) -> ExitCode {
    let terrain = generate_map(config.seed);
    let map = DemoMap::new(config.map, &terrain);
    let frames = config.frames;
    let mut rng = Rng::new(config.seed ^ 0xABCD);
    let replaying = inputs.replaying();
    let mut app = build_app(config.clone(), inputs);
    app.insert_resource(map.clone());
    let mut queue = CommandQueue::default();
    let mut commands = Commands::new(&mut queue, app.world());
    spawn_tilemap(&mut commands, config.map, &terrain, &map.links, None);
    queue.apply(app.world_mut());
    let units = spawn_units(&mut app, &map, &config, &mut rng);
    // Until the plugin has built its map (in lockstep mode the first frame runs no tick: fixed
    // time starts counting then).
    let mut built = app.world_mut().query::<&NavMap>();
    for _ in 0..3 {
        app.update();
        if built.iter(app.world()).next().is_some() {
            break;
        }
    }
    // The region maps before the first orders (see `wait_for_region_maps`).
    if !config.lockstep {
        let waited = crate::common::wait_for_region_maps(&mut app, 600);
        if std::env::var_os("RTS_DEBUG").is_some() {
            eprintln!("waited {waited} frames for region maps");
        }
    }
    // The script plans group orders on its own copy of the map (it never changes here), which
    // must be the map the plugin built from the tilemap.
    let built = built.single(app.world()).expect("one navigation map");
    assert_eq!(built.placement(), map.nav.placement());
    assert_eq!(built.grid().rules(), map.grid().rules());
    assert!(
        map.grid()
            .cells()
            .all(|c| built.grid().terrain(c) == map.grid().terrain(c))
    );
    // Scripted orders: groups of 50 cross the map (through the bridges and the wall gaps), then
    // everyone is sent to a final rally point on the other side.
    let final_order_frame = frames / 3;
    let mut frame_ms = Vec::with_capacity(frames);
    let mut wall_overlaps = 0u64;
    let mut crowd = CrowdFrame::default();
    // Units overlapping another in the last frame (settled, in a run long enough).
    let mut last_overlaps = 0u64;
    let mut watch = CrowdWatch::default();
    // Frames from the final order until every unit had arrived (looked at every 30 frames).
    let mut settled: Option<usize> = None;
    // What each kind's body must keep out of: walls and water, and for tanks forest too.
    let tank_walls = ClassGrid::new(map.grid(), MoveClass::new(Kind::Tank.costs(), 0))
        .expect("a class of footprint 0 fits every map");
    let walls = |kind: Kind| match kind {
        Kind::Infantry => map.grid(),
        Kind::Tank => tank_walls.grid(),
    };
    let debug = std::env::var_os("RTS_DEBUG").is_some();
    let hash = std::env::var_os("RTS_HASH").is_some();
    let map_at: Vec<usize> = std::env::var("RTS_MAP_AT")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default();
    let trace: Option<Vec<u32>> = std::env::var("RTS_TRACE")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    let nudge: Option<usize> = std::env::var("RTS_NUDGE")
        .ok()
        .and_then(|v| v.trim().parse().ok());
    let replay = std::env::var("RTS_ORDER")
        .ok()
        .and_then(|v| PlayerOrder::parse(&v));
    let mut replayed = Vec::new();
    // Sleeps between frames from the wall clock, never from the seed.
    let mut jitter = config.jitter.then(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        Rng::new(now.map_or(1, |d| d.as_nanos() as u64) ^ u64::from(std::process::id()))
    });
    for frame in 0..frames {
        let scripted =
            frame % ORDER_EVERY == 0 && frame < final_order_frame || frame == final_order_frame;
        if scripted && !replaying {
            let teams: &[Team] = if replay.is_some() {
                &[Team::Red]
            } else {
                &[Team::Blue, Team::Red]
            };
            give_orders(&mut app, &mut rng, frame, frame == final_order_frame, teams);
        }
        if let Some(order) = replay.as_ref().filter(|o| o.frame == frame) {
            replayed = order.give(&mut app, &map);
        }
        let t = Instant::now();
        app.update();
        frame_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if let Some(jitter) = &mut jitter {
            std::thread::sleep(Duration::from_micros(jitter.below(4000) as u64));
        }
        if nudge == Some(frame) {
            nudge_one(&mut app);
        }
        if let Some(trace) = &trace {
            print_trace(&mut app, &map, trace, frame);
        }
        wall_overlaps += count_wall_overlaps(&mut app, &map, &walls, frame, debug);
        let seen = watch.frame(app.world_mut());
        last_overlaps = seen.overlapping;
        crowd += seen;
        if settled.is_none() && frame > final_order_frame && frame % 30 == 0 {
            let (_, not_arrived) = count_arrivals(&mut app, &map, false, false);
            settled = (not_arrived == 0).then_some(frame - final_order_frame);
            if debug && frame % 600 == 0 {
                eprintln!("frame {frame}: {not_arrived} not arrived");
            }
        }
        if map_at.contains(&frame) {
            eprintln!("map at frame {frame}");
            print_map(&mut app, &map, &terrain);
            dump_units(&mut app, &map);
        }
        if hash {
            eprintln!("hash {frame} {:016x}", positions_hash(&mut app));
        }
    }
    if let Some(order) = &replay {
        order.report(&mut app, &map, &replayed);
    }
    let desync = if replaying {
        let inputs = app.world().resource::<Inputs>();
        println!(
            "replay checksums_matched={} desync_tick={}",
            inputs.matched,
            inputs.desync.map_or("none".to_string(), |t| t.to_string())
        );
        inputs.desync.is_some()
    } else {
        false
    };
    let (arrived, stuck) = count_arrivals(&mut app, &map, true, debug);
    let goal_cells = goal_distances(&mut app, &map);
    if std::env::var_os("RTS_MAP").is_some() {
        print_map(&mut app, &map, &terrain);
    }
    let tanks = count_kind(&mut app, Kind::Tank);
    let crossings = app.world().resource::<Crossings>().0;
    let tally = &app.world().resource::<OutcomeTally>().0;
    let outcomes: Vec<String> = tally
        .iter()
        .map(|((origin, kind), n)| format!("{origin}/{kind}={n}"))
        .collect();
    println!("outcomes {}", outcomes.join(" "));
    let p99 = percentile(&frame_ms, 0.99);
    let mean = frame_ms.iter().sum::<f64>() / frame_ms.len().max(1) as f64;
    let classes = if config.mixed {
        let n = app.world().resource::<NavClasses>().len();
        format!(" classes={n} tanks={tanks}")
    } else {
        String::new()
    };
    let fog = if config.fog {
        let revealed = app.world().resource::<FogStats>().revealed;
        let repaths: usize = tally
            .iter()
            .filter(|((origin, _), _)| origin == "Revealed")
            .map(|(_, n)| n)
            .sum();
        format!(" reveals={revealed} fog_repaths={repaths}")
    } else {
        String::new()
    };
    println!(
        "summary map={}{classes}{fog} units={units} arrived={arrived} stuck={stuck} wall_overlaps={wall_overlaps} crossings={crossings} frames={frames} settled_after={} goal_cells_p90={} goal_cells_max={} mean_frame_ms={mean:.3} p99_frame_ms={p99:.3} last_frame_overlaps={last_overlaps} {crowd}",
        config.map.name(),
        settled.map_or("never".to_string(), |f| f.to_string()),
        percentile(&goal_cells, 0.9),
        goal_cells.iter().copied().fold(0.0, f64::max),
    );
    // A replay fails only on a desync: it may end mid-game, with units still on their way.
    if desync || stuck > 0 && !replaying {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The app: no window, 60 Hz frames. Without `--lockstep`, searches inline (unless
/// `--workers`) bounded by expansions, not wall time, and the first orders wait (the clock
/// paused) for the region maps built on a thread, so the run is deterministic on one machine
/// however loaded it is. With it, the plugins run in lockstep mode at their default settings,
/// one tick a frame in `FixedUpdate`.
fn build_app(config: DemoConfig, inputs: Inputs) -> App {
    let frame = Duration::from_secs_f64(1.0 / 60.0);
    let settings = if config.lockstep {
        TilepathSettings {
            lockstep: Some(Lockstep::default()),
            workers: config.worker_mode(),
            crowd: config.crowd(),
            fog: config.fog(),
            lanes: config.lanes,
            ..Default::default()
        }
    } else {
        TilepathSettings {
            workers: config.worker_mode(),
            searches_per_frame: 16,
            max_inline_searches: 4,
            expansion_budget: 100_000,
            // Never reached: the phases that stop on wall time (collecting requests, delivering
            // outcomes, smoothing) would make the run depend on the machine. With 100 ms, one
            // of five hexagonal runs delivered some paths a frame later (a cold binary's first
            // frames) and went its own way.
            time_budget: Duration::from_secs(3600),
            crowd: config.crowd(),
            fog: config.fog(),
            lanes: config.lanes,
            ..Default::default()
        }
    };
    let sim = config.sim_schedule();
    let mut app = App::new();
    tanks_as_vehicles(&mut app, &config);
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(frame))
        // In lockstep mode the tick is the frame: one tick every update.
        .insert_resource(Time::<Fixed>::from_duration(frame))
        .insert_resource(settings)
        .insert_resource(inputs)
        .insert_resource(config)
        .add_plugins(TilepathPlugins {
            schedule: TilepathSchedule(sim),
        })
        .init_resource::<OutcomeTally>()
        .init_resource::<Crossings>()
        .add_systems(
            sim,
            (
                apply_inputs.before(TilepathSystems::First),
                (retry_failed, tally_outcomes).after(TilepathSystems::Receive),
                tally_crossings.after(TilepathSystems::Move),
                checksums.after(TilepathSystems::Last),
            ),
        );
    app
}

/// Crossings of the map's links (teleporters, the drop, the gate) units made.
#[derive(Resource, Default)]
struct Crossings(usize);

fn tally_crossings(mut reader: MessageReader<LeftLink>, mut crossings: ResMut<Crossings>) {
    crossings.0 += reader.read().count();
}

/// Outcomes by who asked (the game or the plugin, and why) and how they ended.
#[derive(Resource, Default)]
struct OutcomeTally(BTreeMap<(String, &'static str), usize>);

fn tally_outcomes(mut reader: MessageReader<PathOutcome>, mut tally: ResMut<OutcomeTally>) {
    for o in reader.read() {
        let kind = match o.kind {
            OutcomeKind::Found { search, .. } => match search {
                SearchKind::Own => "found",
                SearchKind::JumpPoints => "found_jump_points",
                SearchKind::Shared => "found_shared",
                SearchKind::Hierarchical => "found_hierarchical",
            },
            OutcomeKind::Failed(_) => "failed",
            OutcomeKind::Cancelled => "cancelled",
        };
        *tally
            .0
            .entry((format!("{:?}", o.origin), kind))
            .or_default() += 1;
    }
}

/// Blue units in the left third, red in the right; returns how many.
fn spawn_units(app: &mut App, map: &DemoMap, config: &DemoConfig, rng: &mut Rng) -> usize {
    let recruits = muster(map, config, rng);
    for r in &recruits {
        let p = map.nav.cell_to_world(r.cell);
        app.world_mut()
            .spawn((r.bundle(config), Transform::from_xyz(p.x, p.y, 1.0)));
    }
    recruits.len()
}

/// How many units of `kind` there are.
fn count_kind(app: &mut App, kind: Kind) -> usize {
    let world = app.world_mut();
    let mut q = world.query::<&Kind>();
    q.iter(world).filter(|k| **k == kind).count()
}

/// The script: every [`ORDER_EVERY`] frames the next group of each army goes somewhere random;
/// at the final order everyone goes to a rally point on the other side.
fn give_orders(app: &mut App, rng: &mut Rng, frame: usize, last: bool, teams: &[Team]) {
    let world = app.world_mut();
    let mut q = world.query::<(&LockstepKey, &Team)>();
    let mut all: Vec<(u64, Team)> = q.iter(world).map(|(k, t)| (k.0, *t)).collect();
    // Groups in muster order, whatever order the ECS stores the units in.
    all.sort_unstable_by_key(|u| u.0);
    let mut inputs = world.resource_mut::<Inputs>();
    for &team in teams {
        let members: Vec<u64> = all.iter().filter(|u| u.1 == team).map(|u| u.0).collect();
        if last {
            let blue = team == Team::Blue;
            let (x, y) = if blue {
                (MAP_W * 5 / 6, MAP_H / 2 + 8)
            } else {
                (MAP_W / 6, MAP_H / 2 - 8)
            };
            inputs.give(Input::Order {
                units: members,
                tile: UVec2::new(x, y),
                priority: 0,
                shape: Shape::default(),
            });
        } else {
            let k = (frame / ORDER_EVERY) % 8;
            let group: Vec<u64> = members
                .iter()
                .skip(k * GROUP)
                .take(GROUP)
                .copied()
                .collect();
            let tile = UVec2::new(rng.below(MAP_W), rng.below(MAP_H));
            inputs.give(Input::Order {
                units: group,
                tile,
                priority: 0,
                shape: Shape::default(),
            });
        }
    }
}

/// A hash of every unit's position, whatever order the ECS keeps them in (`RTS_HASH=1` prints
/// it every frame: two builds that behave the same print the same lines).
fn positions_hash(app: &mut App) -> u64 {
    use std::hash::{Hash, Hasher};
    let world = app.world_mut();
    let mut q = world.query_filtered::<&Transform, With<Team>>();
    let mut bits: Vec<(u32, u32)> = q
        .iter(world)
        .map(|t| (t.translation.x.to_bits(), t.translation.y.to_bits()))
        .collect();
    bits.sort_unstable();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bits.hash(&mut h);
    h.finish()
}

/// Moves the unit of the lowest entity a ten-thousandth of a tile east (see `RTS_NUDGE` in the
/// module docs).
fn nudge_one(app: &mut App) {
    let world = app.world_mut();
    let mut q = world.query_filtered::<(Entity, &mut Transform), With<Kind>>();
    if let Some((_, mut tf)) = q.iter_mut(world).min_by_key(|(e, _)| *e) {
        tf.translation.x += 1e-4 * crate::map::TILE;
    }
}

/// Units whose body overlaps a wall (of their kind: forest is one for tanks) by more than a hair
/// this frame (touching is fine).
fn count_wall_overlaps<'g>(
    app: &mut App,
    map: &DemoMap,
    walls: &impl Fn(Kind) -> &'g NavGrid,
    frame: usize,
    debug: bool,
) -> u64 {
    let world = app.world_mut();
    let mut q = world.query::<(Entity, &Transform, &NavAgent, &Kind, &PathProgress)>();
    let mut n = 0;
    for (e, tf, agent, kind, p) in q.iter(world) {
        let g = map.to_grid(tf.translation.truncate());
        if crate::common::in_wall(walls(*kind), g, agent.radius) {
            if debug {
                eprintln!("frame {frame}: {e} ({kind:?}) overlaps a wall at {g}: {p:?}");
            }
            n += 1;
        }
    }
    n
}

/// Arrived and stuck units at the end (a unit counts as arrived only with its last request
/// found); with `report`, says why the others did not (`debug`: each of them).
fn count_arrivals(app: &mut App, map: &DemoMap, report: bool, debug: bool) -> (usize, usize) {
    let world = app.world_mut();
    let mut q = world.query::<(
        Entity,
        &PathProgress,
        &PathStatus,
        &Transform,
        Option<&NavPath>,
        &Kind,
    )>();
    let (mut arrived, mut stuck) = (0, 0);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (e, p, s, tf, path, kind) in q.iter(world) {
        if p.state == MoveState::Arrived && *s == PathStatus::Found {
            arrived += 1;
            continue;
        }
        stuck += 1;
        *reasons.entry(format!("{:?} {:?}", p.state, s)).or_default() += 1;
        if debug {
            let drive = world
                .get::<bevy_tilepath::DriveProgress>(e)
                .map(|d| d.status);
            eprintln!(
                "{e} {kind:?} {:?} {drive:?} at {} goal {:?} cell_index {} / {} waypoint {} / {}",
                p.state,
                map.to_grid(tf.translation.truncate()),
                path.map(|p| p.goal),
                p.cell_index,
                path.map_or(0, |p| p.cells.len()),
                p.waypoint,
                path.map_or(0, |p| p.waypoints.len())
            );
        }
    }
    if stuck > 0 && report {
        eprintln!("not arrived: {reasons:?}");
    }
    (arrived, stuck)
}

/// How far (in steps on an open grid: Chebyshev on squares) each arrived unit stands from the
/// goal cell of its last path: a unit that stops at the edge of its gathered crowd arrives short
/// of its slot.
fn goal_distances(app: &mut App, map: &DemoMap) -> Vec<f64> {
    let grid = map.grid();
    let world = app.world_mut();
    let mut q = world.query::<(&PathProgress, &Transform, &NavPath)>();
    q.iter(world)
        .filter(|(p, _, _)| p.state == MoveState::Arrived)
        .map(|(_, tf, path)| {
            let here = grid.cell_at(map.to_grid(tf.translation.truncate()));
            grid.open_steps(here, path.goal) as f64
        })
        .collect()
}

fn print_trace(app: &mut App, map: &DemoMap, trace: &[u32], frame: usize) {
    let world = app.world_mut();
    let mut q = world.query::<(Entity, &PathProgress, &PathStatus, &Transform, &NavPath)>();
    for (e, p, s, tf, path) in q.iter(world) {
        if trace.contains(&e.index_u32()) {
            // A vehicle's drive: its status, where along its plan, whom it waits for.
            let drive = world
                .get::<bevy_tilepath::DriveProgress>(e)
                .map(|d| format!(" {d:?}"))
                .unwrap_or_default();
            eprintln!(
                "trace {frame} {e} {:?} {s:?} at {} goal {} next {:?} {p:?}{drive}",
                p.state,
                map.to_grid(tf.translation.truncate()),
                path.goal,
                path.corridor.get(p.cell_index)
            );
        }
    }
}

/// The map as text with units: digits count units not arrived, '.' arrived ones; tanks are 'T'
/// (not arrived) and 't'.
fn print_map(app: &mut App, map: &DemoMap, terrain: &[Terrain]) {
    let mut chars: Vec<Vec<char>> = terrain
        .chunks(MAP_W as usize)
        .map(|row| row.iter().map(|t| t.glyph()).collect())
        .collect();
    let world = app.world_mut();
    let mut q = world.query::<(&PathProgress, &Transform, &Kind)>();
    for (p, tf, kind) in q.iter(world) {
        let c = map.grid().cell_at(map.to_grid(tf.translation.truncate()));
        let Some(t) = map.tile(c) else { continue };
        let ch = &mut chars[t.y as usize][t.x as usize];
        *ch = match (p.state == MoveState::Arrived, *ch) {
            (true, _) if *kind == Kind::Tank => 't',
            (false, _) if *kind == Kind::Tank => 'T',
            (true, _) => '.',
            (false, d) if d.is_ascii_digit() => {
                char::from_digit((d as u32 - '0' as u32 + 1).min(9), 10).unwrap_or('9')
            }
            (false, _) => '1',
        };
    }
    for row in chars.iter().rev() {
        eprintln!("{}", row.iter().collect::<String>());
    }
}

/// Every unit's place, body and state, a line each (`RTS_MAP_AT`): `unit ENTITY KIND X Y
/// STATE NEXT_X NEXT_Y GOAL_X GOAL_Y CELL_INDEX` in grid space (for pictures of a jam).
fn dump_units(app: &mut App, map: &DemoMap) {
    let world = app.world_mut();
    let mut q = world.query::<(Entity, &PathProgress, &Transform, &Kind, Option<&NavPath>)>();
    for (e, p, tf, kind, path) in q.iter(world) {
        let at = map.to_grid(tf.translation.truncate());
        let next = path
            .and_then(|path| path.corridor.get(p.cell_index))
            .map_or(at, |c| c.as_vec2() + 0.5);
        let state = format!("{:?}", p.state);
        let state = state.split([' ', '{']).next().unwrap_or("");
        let goal = path.map_or(IVec2::ZERO, |p| p.goal);
        eprintln!(
            "unit {e} {kind:?} {} {} {state} {} {} {} {} {}",
            at.x, at.y, next.x, next.y, goal.x, goal.y, p.cell_index
        );
    }
}

/// A player's order replayed headless (`RTS_ORDER=frame:x,y:x0,y0,x1,y1`).
struct PlayerOrder {
    frame: usize,
    target: (u32, u32),
    from: (u32, u32),
    to: (u32, u32),
}

impl PlayerOrder {
    fn parse(v: &str) -> Option<Self> {
        let mut parts = v.split(':');
        let frame = parts.next()?.parse().ok()?;
        let nums = |s: &str| -> Option<Vec<u32>> { s.split(',').map(|n| n.parse().ok()).collect() };
        let t = nums(parts.next()?)?;
        let b = nums(parts.next()?)?;
        (t.len() == 2 && b.len() == 4).then(|| PlayerOrder {
            frame,
            target: (t[0], t[1]),
            from: (b[0], b[1]),
            to: (b[2], b[3]),
        })
    }

    /// Orders the blue units in the box as the player (applied at the next tick, as the
    /// window's orders are); returns them.
    fn give(&self, app: &mut App, map: &DemoMap) -> Vec<Entity> {
        let world = app.world_mut();
        let mut q = world.query::<(Entity, &LockstepKey, &Team, &Transform)>();
        let mut units: Vec<(u64, Entity)> = q
            .iter(world)
            .filter(|(_, _, t, tf)| {
                let cell = map.grid().cell_at(map.to_grid(tf.translation.truncate()));
                **t == Team::Blue
                    && map.tile(cell).is_some_and(|t| {
                        (self.from.0..=self.to.0).contains(&t.x)
                            && (self.from.1..=self.to.1).contains(&t.y)
                    })
            })
            .map(|(e, k, _, _)| (k.0, e))
            .collect();
        units.sort_unstable_by_key(|u| u.0);
        world.resource_mut::<Inputs>().give(Input::Order {
            units: units.iter().map(|u| u.0).collect(),
            tile: UVec2::new(self.target.0, self.target.1),
            priority: PLAYER_PRIORITY,
            shape: Shape::default(),
        });
        let target = map.cell(self.target.0, self.target.1);
        eprintln!("replayed order: {} units to {target}", units.len());
        units.into_iter().map(|u| u.1).collect()
    }

    /// The ordered units that stand more than 12 tiles from the target, and those with a wall
    /// between them and the goal of their path (their walk there more than twice as long as the
    /// straight steps and four more: outside a walled compound they were sent into, say; a tank
    /// sent in, too wide for its gates, goes to the nearest cell it can reach outside).
    fn report(&self, app: &mut App, map: &DemoMap, units: &[Entity]) {
        let target = map.cell(self.target.0, self.target.1);
        let mut walks: BTreeMap<(i32, i32), Vec<u32>> = BTreeMap::new();
        let world = app.world_mut();
        let mut q = world.query::<(
            &Transform,
            &Kind,
            &PathProgress,
            &PathStatus,
            Option<&NavPath>,
        )>();
        let (mut far, mut walled) = (0, 0);
        for &e in units {
            let Ok((tf, kind, p, s, path)) = q.get(world, e) else {
                continue;
            };
            let here = map.grid().cell_at(map.to_grid(tf.translation.truncate()));
            let goal = path.map_or(target, |p| p.goal);
            let to_goal = map.grid().open_steps(here, goal);
            let walk = walks
                .entry((goal.x, goal.y))
                .or_insert_with(|| walk_steps(map.grid(), goal))
                [(here.y * map.grid().width() as i32 + here.x) as usize];
            if walk > 2 * to_goal + 4 {
                walled += 1;
                eprintln!(
                    "walled off: {e} {kind:?} at {here} {:?} {s:?}, {to_goal} steps from its goal, a walk of {walk}",
                    p.state
                );
            }
            let steps = map.grid().open_steps(here, target);
            if steps > 12 {
                far += 1;
                eprintln!(
                    "far: {e} {kind:?} at {here} {:?} {s:?} goal {:?} origin {:?}",
                    p.state,
                    path.map(|p| p.goal),
                    path.map(|p| p.origin)
                );
            }
        }
        eprintln!(
            "replayed order: {far} of {} units far from {target}, {walled} with a wall between",
            units.len()
        );
    }
}

/// Steps (the map's move rules) from `from` to every cell, row by row (`u32::MAX`: no way
/// there).
fn walk_steps(grid: &NavGrid, from: Cell) -> Vec<u32> {
    let w = grid.width() as i32;
    let slot = |c: Cell| (c.y * w + c.x) as usize;
    let mut steps = vec![u32::MAX; (grid.width() * grid.height()) as usize];
    if !grid.is_walkable(from) {
        return steps;
    }
    steps[slot(from)] = 0;
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(c) = queue.pop_front() {
        let d = steps[slot(c)];
        for n in (-1..=1).flat_map(|y| (-1..=1).map(move |x| c + Cell::new(x, y))) {
            if grid.can_step(c, n) && steps[slot(n)] == u32::MAX {
                steps[slot(n)] = d + 1;
                queue.push_back(n);
            }
        }
    }
    steps
}
