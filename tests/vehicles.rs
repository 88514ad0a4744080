//! Vehicles through the plugin, as a game uses them: a `Vehicle` ordered with a `PathRequest`
//! drives legal turns only (its facing never turns faster than speed / radius), backs out of a
//! dead end, keeps its body off the walls, arrives, and ends facing the way its request asks.

mod support;

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::Link;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    DriveProgress, DriveSettings, DriveStatus, EnteredLink, LeftLink, LockstepKey, PathProgress,
    PendingRequests, TilepathSettings, Vehicle, WorkerMode,
};
use support::position;

const DT: f32 = 1.0 / 60.0;

fn app(grid: NavGrid) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
            DT,
        )))
        .add_plugins(TilepathPlugins::default());
    app.world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
    app
}

/// A vehicle of radius 1.5 and speed 3 at `cell`'s center facing `facing` (world direction).
fn vehicle(app: &mut App, cell: Cell, facing: Vec2, request: PathRequest) -> Entity {
    let angle = facing.y.atan2(facing.x);
    app.world_mut()
        .spawn((
            Transform::from_xyz(cell.x as f32 + 0.5, cell.y as f32 + 0.5, 0.0)
                .with_rotation(Quat::from_rotation_z(angle)),
            Mover {
                speed: 3.0,
                ..default()
            },
            NavAgent { radius: 0.3 },
            Vehicle::default(),
            request,
        ))
        .id()
}

/// Whether `unit` is at the end of its plan.
fn drive_arrived(app: &App, unit: Entity) -> bool {
    app.world().get::<DriveProgress>(unit).unwrap().status == DriveStatus::Arrived
}

/// What a drive looked like, frame by frame.
#[derive(Default, Debug)]
struct Drive {
    frames: usize,
    max_turn_rate_ratio: f32,
    wall_touches: usize,
    reversed_frames: usize,
    /// The farthest it moved in one frame.
    max_step: f32,
    arrived: bool,
}

/// Runs `app` until `unit` arrives (or `max` frames), watching its facing and body.
fn watch(app: &mut App, unit: Entity, grid: &NavGrid, max: usize) -> Drive {
    let mut drive = Drive::default();
    let speed = 3.0;
    let radius = Vehicle::default().turning_radius;
    let facing = |app: &App| {
        let t = app.world().get::<Transform>(unit).unwrap();
        ((t.rotation * Vec3::X).truncate(), t.translation.truncate())
    };
    let (mut last_facing, mut last_at) = facing(app);
    for _ in 0..max {
        app.update();
        drive.frames += 1;
        let (f, at) = facing(app);
        let turned = last_facing.angle_to(f).abs();
        let moved = at - last_at;
        // Never faster than the fastest the vehicle drives over its radius (but where a link
        // put it down elsewhere, facing the way it goes on: a jump, not a turn driven).
        if moved.length() <= 1.0 {
            drive.max_turn_rate_ratio = drive
                .max_turn_rate_ratio
                .max(turned / (speed * DT / radius));
        }
        drive.max_step = drive.max_step.max(moved.length());
        if moved.length() > 1e-4 && moved.dot(f) < 0.0 {
            drive.reversed_frames += 1;
        }
        for dy in -1..=1 {
            for dx in -1..=1 {
                let c = Cell::new(at.x.floor() as i32 + dx, at.y.floor() as i32 + dy);
                let nearest = at.clamp(c.as_vec2(), c.as_vec2() + Vec2::ONE);
                if !grid.is_walkable(c) && nearest.distance(at) < 0.3 - 1e-3 {
                    drive.wall_touches += 1;
                }
            }
        }
        (last_facing, last_at) = (f, at);
        let progress = app.world().get::<DriveProgress>(unit).unwrap();
        if progress.status == DriveStatus::Arrived {
            drive.arrived = true;
            break;
        }
    }
    drive
}

/// A corridor 3 cells wide along rows 9-11, closed at x = 15.
fn dead_end() -> NavGrid {
    let mut grid = NavGrid::new(24, 20).unwrap();
    for x in 0..24 {
        for y in 0..20 {
            if !((9..=11).contains(&y) && x < 15) {
                grid.set_walkable(Cell::new(x, y), false).unwrap();
            }
        }
    }
    grid
}

/// Checks a drive out of a dead end: it arrived at `goal`, reversing on the way, never turning
/// faster than its radius allows, its body off the walls.
fn backed_out_to(app: &App, unit: Entity, drive: &Drive, goal: Vec2) {
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.reversed_frames > 10, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    assert_eq!(drive.wall_touches, 0, "{drive:?}");
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(goal) < 0.01, "{at}");
}

#[test]
fn a_vehicle_facing_a_dead_end_backs_out_to_a_goal_behind_it() {
    let grid = dead_end();
    let mut app = app(grid.clone());
    let unit = vehicle(
        &mut app,
        Cell::new(13, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(2, 10)),
    );
    let drive = watch(&mut app, unit, &grid, 1200);
    backed_out_to(&app, unit, &drive, Vec2::new(2.5, 10.5));
}

#[test]
fn a_vehicle_drives_round_to_a_goal_behind_it_and_ends_facing_the_way_asked() {
    let grid = NavGrid::new(32, 32).unwrap();
    let mut app = app(grid.clone());
    let mut request = PathRequest::to_cell(Cell::new(10, 16));
    request.facing = Some(Vec2::NEG_Y);
    let unit = vehicle(&mut app, Cell::new(16, 16), Vec2::X, request);
    let drive = watch(&mut app, unit, &grid, 1200);
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    let t = app.world().get::<Transform>(unit).unwrap();
    let facing = (t.rotation * Vec3::X).truncate();
    assert!(facing.distance(Vec2::NEG_Y) < 1e-3, "{facing}");
    // Three tiles further on, it would have turned in place.
    assert!(drive.frames as f32 * DT * 3.0 > 6.0 + 1.0, "{drive:?}");
}

#[test]
fn a_new_order_mid_drive_is_planned_from_where_the_plan_can_stop() {
    let grid = NavGrid::new(40, 40).unwrap();
    let mut app = app(grid.clone());
    let unit = vehicle(
        &mut app,
        Cell::new(5, 20),
        Vec2::X,
        PathRequest::to_cell(Cell::new(35, 20)),
    );
    for _ in 0..60 {
        app.update();
    }
    app.world_mut()
        .entity_mut(unit)
        .insert(PathRequest::to_cell(Cell::new(20, 35)));
    let drive = watch(&mut app, unit, &grid, 1500);
    assert!(drive.arrived, "{drive:?}");
    // No jump and no pivot at the change of plan.
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(Vec2::new(20.5, 35.5)) < 0.01, "{at}");
}

#[test]
fn a_vehicle_with_no_room_to_turn_and_no_reverse_says_so_and_stands() {
    let grid = dead_end();
    let mut app = app(grid.clone());
    record_outcomes(&mut app);
    let unit = vehicle(
        &mut app,
        Cell::new(13, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(2, 10)),
    );
    app.world_mut().get_mut::<Vehicle>(unit).unwrap().reverse = None;
    for _ in 0..60 {
        app.update();
    }
    let progress = app.world().get::<DriveProgress>(unit).unwrap();
    assert_eq!(progress.status, DriveStatus::NoWay);
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(Vec2::new(13.5, 10.5)) < 1e-4);
    // Its request's one outcome says why; the path it cannot drive is gone.
    let failed = OutcomeKind::Failed(PathFailure::NoDrivableWay);
    let seen = &app.world().resource::<AtOutcome>().0;
    assert_eq!(seen, &[(failed, DriveStatus::NoWay, false)]);
    let status = app.world().get::<PathStatus>(unit).unwrap();
    assert_eq!(*status, PathStatus::Failed(PathFailure::NoDrivableWay));
    assert!(app.world().get::<NavPath>(unit).is_none());
}

/// What a vehicle was doing when each of its requests' outcomes came: the outcome, its drive's
/// status, and whether it had a plan.
#[derive(Resource, Default)]
struct AtOutcome(Vec<(OutcomeKind, DriveStatus, bool)>);

/// Records every outcome in [`AtOutcome`].
fn record_outcomes(app: &mut App) {
    app.init_resource::<AtOutcome>().add_observer(
        |outcome: On<PathOutcome>, drives: Query<&DriveProgress>, mut seen: ResMut<AtOutcome>| {
            let progress = drives.get(outcome.entity).unwrap();
            let planned = progress.plan.is_some();
            seen.0.push((outcome.kind, progress.status, planned));
        },
    );
}

#[test]
fn a_vehicles_outcome_comes_with_the_plan_it_drives_its_path_by() {
    let grid = dead_end();
    let mut app = app(grid.clone());
    record_outcomes(&mut app);
    let unit = vehicle(
        &mut app,
        Cell::new(13, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(2, 10)),
    );
    let drive = watch(&mut app, unit, &grid, 1200);
    backed_out_to(&app, unit, &drive, Vec2::new(2.5, 10.5));
    let seen = &app.world().resource::<AtOutcome>().0;
    assert_eq!(seen.len(), 1, "one outcome: {seen:?}");
    let (kind, status, planned) = seen[0];
    assert!(matches!(kind, OutcomeKind::Found { .. }), "{kind:?}");
    assert_eq!((status, planned), (DriveStatus::Driving, true));
}

#[test]
fn infantry_in_a_vehicles_way_is_shoved_aside_and_the_vehicle_keeps_its_curve() {
    let grid = NavGrid::new(24, 20).unwrap();
    let mut app = app(grid.clone());
    let soldier = app
        .world_mut()
        .spawn((Transform::from_xyz(9.5, 10.5, 0.0), Mover::default()))
        .id();
    let unit = vehicle(
        &mut app,
        Cell::new(3, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(16, 10)),
    );
    let drive = watch(&mut app, unit, &grid, 600);
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    // The vehicle drove the straight line, never pushed off it.
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(Vec2::new(16.5, 10.5)) < 1e-3, "{at}");
    // The soldier it met is off the line now.
    let s = app.world().get::<Transform>(soldier).unwrap().translation;
    assert!((s.y - 10.5).abs() > 0.4, "{s}");
    // Other movers see the vehicle as moving, then arrived.
    let state = app.world().get::<PathProgress>(unit).unwrap().state;
    assert_eq!(state, MoveState::Arrived);
}

#[test]
fn a_vehicle_ordered_to_the_cell_it_stands_on_arrives_at_once() {
    let grid = NavGrid::new(12, 12).unwrap();
    let mut app = app(grid.clone());
    let unit = vehicle(
        &mut app,
        Cell::new(5, 5),
        Vec2::Y,
        PathRequest::to_cell(Cell::new(5, 5)),
    );
    let drive = watch(&mut app, unit, &grid, 30);
    assert!(drive.arrived, "{drive:?}");
    let t = app.world().get::<Transform>(unit).unwrap();
    assert!(t.translation.truncate().distance(Vec2::new(5.5, 5.5)) < 1e-4);
    assert!((t.rotation * Vec3::X).truncate().distance(Vec2::Y) < 1e-4);
}

#[test]
fn a_vehicle_sent_where_another_stands_stops_on_the_nearest_free_cell() {
    let grid = NavGrid::new(24, 24).unwrap();
    let mut app = app(grid.clone());
    let first = vehicle(
        &mut app,
        Cell::new(12, 12),
        Vec2::X,
        PathRequest::to_cell(Cell::new(12, 12)),
    );
    for _ in 0..5 {
        app.update();
    }
    let second = vehicle(
        &mut app,
        Cell::new(3, 12),
        Vec2::X,
        PathRequest::to_cell(Cell::new(12, 12)),
    );
    let drive = watch(&mut app, second, &grid, 900);
    assert!(drive.arrived, "{drive:?}");
    let at = |e: Entity| {
        app.world()
            .get::<Transform>(e)
            .unwrap()
            .translation
            .truncate()
    };
    let (a, b) = (at(first), at(second));
    assert_eq!(a, Vec2::new(12.5, 12.5));
    assert!(a.distance(b) >= 0.99 && a.distance(b) < 1.5, "{a} {b}");
}

#[test]
fn a_soldier_sent_under_a_standing_vehicle_stops_beside_it() {
    let grid = NavGrid::new(24, 24).unwrap();
    let mut app = app(grid.clone());
    let tank = vehicle(
        &mut app,
        Cell::new(12, 12),
        Vec2::X,
        PathRequest::to_cell(Cell::new(12, 12)),
    );
    // Two tiles across: its body covers the cells round its own.
    app.world_mut()
        .entity_mut(tank)
        .insert(NavAgent { radius: 0.9 });
    for _ in 0..5 {
        app.update();
    }
    let soldier = app
        .world_mut()
        .spawn((
            Transform::from_xyz(3.5, 12.5, 0.0),
            Mover::default(),
            PathRequest::to_cell(Cell::new(13, 12)),
        ))
        .id();
    for _ in 0..600 {
        app.update();
    }
    let at = |e: Entity| {
        app.world()
            .get::<Transform>(e)
            .unwrap()
            .translation
            .truncate()
    };
    // Not shoved along (standing against it, the soldier shares a hair's push with it).
    assert!(
        at(tank).distance(Vec2::new(12.5, 12.5)) < 0.01,
        "{}",
        at(tank)
    );
    let state = app.world().get::<PathProgress>(soldier).unwrap().state;
    assert_eq!(state, MoveState::Arrived);
    // Beside it, its body against the tank's at most.
    assert!(
        at(soldier).distance(at(tank)) >= 1.2 - 0.05,
        "{}",
        at(soldier)
    );
}

/// A vehicle whose straight way runs through another standing in the open plans round it: its
/// body never comes within touch of the standing one's.
#[test]
fn a_vehicle_drives_round_another_standing_in_its_way() {
    let grid = NavGrid::new(30, 20).unwrap();
    let mut app = app(grid.clone());
    let standing = vehicle(
        &mut app,
        Cell::new(14, 10),
        Vec2::Y,
        PathRequest::to_cell(Cell::new(14, 10)),
    );
    for _ in 0..5 {
        app.update();
    }
    let there = app
        .world()
        .get::<Transform>(standing)
        .unwrap()
        .translation
        .truncate();
    let unit = vehicle(
        &mut app,
        Cell::new(4, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(25, 10)),
    );
    let mut closest = f32::MAX;
    let mut arrived = false;
    for _ in 0..1200 {
        app.update();
        let at = app
            .world()
            .get::<Transform>(unit)
            .unwrap()
            .translation
            .truncate();
        closest = closest.min(at.distance(there));
        if app.world().get::<DriveProgress>(unit).unwrap().status == DriveStatus::Arrived {
            arrived = true;
            break;
        }
    }
    assert!(arrived);
    // Two bodies of radius 0.3.
    assert!(
        closest >= 0.6,
        "came within {closest} of the standing vehicle"
    );
    assert_eq!(
        app.world()
            .get::<Transform>(standing)
            .unwrap()
            .translation
            .truncate(),
        there
    );
}

/// Two vehicles whose straight ways cross at (15, 10) at the same moment, one driving east,
/// one south, vehicles looking `look_ahead` seconds ahead: how close their bodies came, and
/// whether both arrived within 20 s.
fn crossing_at_once(look_ahead: f32) -> (f32, bool) {
    let grid = NavGrid::new(30, 20).unwrap();
    let mut app = app(grid);
    app.insert_resource(DriveSettings {
        look_ahead,
        ..default()
    });
    // Nine tiles each from their start to the crossing.
    let east = vehicle(
        &mut app,
        Cell::new(6, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(26, 10)),
    );
    let south = vehicle(
        &mut app,
        Cell::new(15, 19),
        Vec2::NEG_Y,
        PathRequest::to_cell(Cell::new(15, 1)),
    );
    let mut closest = f32::MAX;
    for _ in 0..1200 {
        app.update();
        closest = closest.min(position(&app, east).distance(position(&app, south)));
        if drive_arrived(&app, east) && drive_arrived(&app, south) {
            return (closest, true);
        }
    }
    (closest, false)
}

#[test]
fn vehicles_looking_ahead_wait_for_one_crossing_their_way() {
    // Two bodies of radius 0.3 overlap by more than a fifth of 0.6 below this.
    let apart = 0.48;
    let (closest, arrived) = crossing_at_once(0.75);
    assert!(arrived);
    assert!(closest >= apart, "came within {closest} of each other");
    // Not looking ahead (the default), they drive through each other.
    let (closest, arrived) = crossing_at_once(DriveSettings::default().look_ahead);
    assert!(arrived);
    assert!(
        closest < apart,
        "kept {closest} apart without looking ahead"
    );
}

/// The map's grid as it is now.
fn live_grid(app: &mut App) -> NavGrid {
    let mut maps = app.world_mut().query::<&NavMap>();
    maps.single(app.world()).unwrap().grid().clone()
}

/// Edits the map's cell `cell` to be walkable or not.
fn set_walkable(app: &mut App, cell: Cell, walkable: bool) {
    let mut maps = app.world_mut().query::<&mut NavMap>();
    let mut map = maps.single_mut(app.world_mut()).unwrap();
    map.set_walkable(cell, walkable).unwrap();
}

/// The cell of the next state of `unit`'s plan (where it can stop and plan again), and how far
/// its body is from that cell.
fn next_stop(app: &App, unit: Entity) -> Option<(Cell, f32)> {
    let progress = app.world().get::<DriveProgress>(unit)?;
    let plan = progress.plan.as_ref()?;
    let k = plan.distances.iter().position(|&d| d > progress.along)?;
    let cell = plan.states[k].0;
    let at = app.world().get::<Transform>(unit)?.translation.truncate();
    let nearest = at.clamp(cell.as_vec2(), cell.as_vec2() + Vec2::ONE);
    Some((cell, nearest.distance(at) - 0.3))
}

/// Where a wall goes up on the cell a driving vehicle would stop at next, it stops short of it
/// (its body never over the wall), backs to the point of its plan it passed last, plans again
/// from there and drives round to its goal, never turning faster than its radius allows and
/// never jumping.
#[test]
fn a_wall_put_up_just_ahead_of_a_driving_vehicle_stops_it_short_and_it_drives_round() {
    let grid = NavGrid::new(40, 40).unwrap();
    let mut app = app(grid.clone());
    let unit = vehicle(
        &mut app,
        Cell::new(5, 20),
        Vec2::X,
        PathRequest::to_cell(Cell::new(30, 20)),
    );
    let mut wall = None;
    for _ in 0..600 {
        app.update();
        let driving =
            app.world().get::<DriveProgress>(unit).unwrap().status == DriveStatus::Driving;
        if let Some((cell, gap)) = next_stop(&app, unit)
            && driving
            && cell.x > 8
            && gap > 0.05
        {
            set_walkable(&mut app, cell, false);
            wall = Some(cell);
            break;
        }
    }
    let wall = wall.expect("the vehicle drove its plan");
    let grid = live_grid(&mut app);
    assert!(!grid.is_walkable(wall));
    let drive = watch(&mut app, unit, &grid, 1500);
    assert!(drive.arrived, "{drive:?}");
    assert_eq!(drive.wall_touches, 0, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    // It backed to the point it passed last: no jump to a cell's center.
    assert!(drive.reversed_frames > 0, "{drive:?}");
    assert!(drive.max_step <= 3.0 * DT + 1e-3, "{drive:?}");
}

/// An edit away from a driving vehicle's plan does not stop it: it drives on along the same
/// plan, never waiting for the planner.
#[test]
fn an_edit_away_from_a_vehicles_plan_leaves_it_driving() {
    let grid = NavGrid::new(40, 40).unwrap();
    let mut app = app(grid.clone());
    let unit = vehicle(
        &mut app,
        Cell::new(5, 20),
        Vec2::X,
        PathRequest::to_cell(Cell::new(30, 20)),
    );
    for _ in 0..30 {
        app.update();
    }
    let before = app.world().get::<DriveProgress>(unit).unwrap().plan.clone();
    assert!(before.is_some());
    let mut planning = 0;
    for k in 0..60 {
        if k % 5 == 0 {
            set_walkable(&mut app, Cell::new(10 + k / 5, 30), false);
        }
        app.update();
        let progress = app.world().get::<DriveProgress>(unit).unwrap();
        planning += usize::from(progress.status == DriveStatus::Planning);
    }
    assert_eq!(planning, 0);
    assert_eq!(app.world().get::<DriveProgress>(unit).unwrap().plan, before);
}

/// A vehicle that stops where another already stands, with no free cell near its goal it could
/// reach, arrives where it is (as a soldier would) instead of planning again for ever.
#[test]
fn a_vehicle_with_no_free_cell_near_its_goal_arrives_where_it_stands() {
    // A room of three cells, (1..=3, 1), walled all round.
    let mut grid = NavGrid::new(5, 3).unwrap();
    for x in 0..5 {
        for y in 0..3 {
            if y != 1 || x == 0 || x == 4 {
                grid.set_walkable(Cell::new(x, y), false).unwrap();
            }
        }
    }
    let mut app = app(grid);
    let parked: Vec<Entity> = (1..=3)
        .map(|x| {
            let cell = Cell::new(x, 1);
            vehicle(&mut app, cell, Vec2::X, PathRequest::to_cell(cell))
        })
        .collect();
    for _ in 0..10 {
        app.update();
    }
    for &p in &parked {
        assert_eq!(
            app.world().get::<DriveProgress>(p).unwrap().status,
            DriveStatus::Arrived
        );
    }
    let late = vehicle(
        &mut app,
        Cell::new(2, 1),
        Vec2::X,
        PathRequest::to_cell(Cell::new(2, 1)),
    );
    let mut arrived_at = None;
    for frame in 0..60 {
        app.update();
        if app.world().get::<DriveProgress>(late).unwrap().status == DriveStatus::Arrived {
            arrived_at = Some(frame);
            break;
        }
    }
    assert!(arrived_at.is_some(), "it plans again for ever");
}

/// `app` with searches on two workers (the vehicles' drive searches too), in lockstep mode
/// or not, and vehicles given 1 state a frame on the main thread: a vehicle that plans there
/// would never get a plan.
fn app_on_workers(grid: NavGrid, lockstep: bool) -> App {
    let mut app = App::new();
    let settings = TilepathSettings {
        workers: WorkerMode::Async { max_in_flight: 2 },
        ..if lockstep {
            TilepathSettings::lockstep()
        } else {
            TilepathSettings::default()
        }
    };
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
            DT,
        )))
        .insert_resource(Time::<Fixed>::from_duration(Duration::from_secs_f32(DT)))
        .insert_resource(settings)
        .insert_resource(DriveSettings {
            expansions_per_frame: 1,
            ..default()
        });
    if lockstep {
        app.add_plugins(TilepathPlugins::in_schedule(FixedUpdate));
    } else {
        app.add_plugins(TilepathPlugins::default());
    }
    app.world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
    app
}

#[test]
fn with_workers_a_vehicle_plans_off_the_main_thread_and_backs_out_of_a_dead_end() {
    let grid = dead_end();
    let mut app = app_on_workers(grid.clone(), false);
    let unit = vehicle(
        &mut app,
        Cell::new(13, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(2, 10)),
    );
    // Its plan comes from a worker within a few frames (at one state a frame on the main
    // thread it would take hundreds).
    let planned = (1..=10).find(|_| {
        app.update();
        app.world().get::<DriveProgress>(unit).unwrap().status == DriveStatus::Driving
    });
    assert!(planned.is_some(), "no plan after 10 frames");
    let drive = watch(&mut app, unit, &grid, 1200);
    backed_out_to(&app, unit, &drive, Vec2::new(2.5, 10.5));
}

#[test]
fn with_workers_in_lockstep_two_games_drive_their_vehicles_alike() {
    let grid = NavGrid::new(40, 40).unwrap();
    let run = || {
        let mut app = app_on_workers(grid.clone(), true);
        let units: Vec<Entity> = (0..4)
            .map(|k| {
                let e = vehicle(
                    &mut app,
                    Cell::new(5 + 8 * k, 10),
                    Vec2::X,
                    PathRequest::to_cell(Cell::new(30 - 6 * k, 30)),
                );
                app.world_mut().entity_mut(e).insert(LockstepKey(k as u64));
                e
            })
            .collect();
        let mut trace = Vec::new();
        for frame in 0..900 {
            app.update();
            if frame == 300 {
                // A new order mid-drive.
                app.world_mut()
                    .entity_mut(units[0])
                    .insert(PathRequest::to_cell(Cell::new(20, 5)));
            }
            for &u in &units {
                let t = app.world().get::<Transform>(u).unwrap();
                trace.push((t.translation.x.to_bits(), t.translation.y.to_bits()));
            }
        }
        let arrived = units
            .iter()
            .filter(|&&u| {
                app.world().get::<DriveProgress>(u).unwrap().status == DriveStatus::Arrived
            })
            .count();
        (trace, arrived)
    };
    let (a, arrived) = run();
    let (b, _) = run();
    assert_eq!(arrived, 4);
    assert!(a == b, "the two games' vehicles parted");
}

/// A vehicle facing the closed end of [`dead_end`], sent out of it, that plans one state a frame
/// (hundreds of frames for its first plan), run until its path came (outcomes recorded).
fn given_its_path_before_its_plan() -> (NavGrid, App, Entity) {
    let grid = dead_end();
    let mut app = app(grid.clone());
    record_outcomes(&mut app);
    // One state a frame: its first plan takes hundreds of frames.
    app.insert_resource(DriveSettings {
        expansions_per_frame: 1,
        ..default()
    });
    let unit = vehicle(
        &mut app,
        Cell::new(13, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(2, 10)),
    );
    let given = (1..=10).find(|_| {
        app.update();
        app.world().get::<NavPath>(unit).is_some()
    });
    assert!(given.is_some(), "no path after 10 frames");
    (grid, app, unit)
}

#[test]
fn a_vehicles_path_replaced_before_its_plan_came_ends_cancelled() {
    let (grid, mut app, unit) = given_its_path_before_its_plan();
    // The path is the vehicle's to plan from; the outcome waits for the plan.
    app.update();
    let progress = app.world().get::<DriveProgress>(unit).unwrap();
    assert_eq!(progress.status, DriveStatus::Planning);
    assert!(app.world().resource::<AtOutcome>().0.is_empty());
    assert!(!app.world().resource::<PendingRequests>().is_empty());
    // A new order before the plan came: the first request ends cancelled, the second found.
    app.world_mut()
        .entity_mut(unit)
        .insert(PathRequest::to_cell(Cell::new(6, 10)));
    app.insert_resource(DriveSettings::default());
    let drive = watch(&mut app, unit, &grid, 1200);
    backed_out_to(&app, unit, &drive, Vec2::new(6.5, 10.5));
    let seen = &app.world().resource::<AtOutcome>().0;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, OutcomeKind::Cancelled);
    assert!(matches!(seen[1].0, OutcomeKind::Found { .. }), "{seen:?}");
    assert_eq!((seen[1].1, seen[1].2), (DriveStatus::Driving, true));
    assert!(app.world().resource::<PendingRequests>().is_empty());
    assert_eq!(
        *app.world().get::<PathStatus>(unit).unwrap(),
        PathStatus::Found
    );
}

#[test]
fn a_unit_that_stops_being_a_vehicle_while_planning_gets_its_outcome() {
    let (_, mut app, unit) = given_its_path_before_its_plan();
    assert!(app.world().resource::<AtOutcome>().0.is_empty());
    app.world_mut().entity_mut(unit).remove::<Vehicle>();
    for _ in 0..3 {
        app.update();
    }
    let seen = &app.world().resource::<AtOutcome>().0;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(matches!(seen[0].0, OutcomeKind::Found { .. }), "{seen:?}");
    assert!(app.world().resource::<PendingRequests>().is_empty());
}

/// Every link crossing's two ends, as `EnteredLink` and `LeftLink` told them, in order.
#[derive(Resource, Default)]
struct Crossings(Vec<(&'static str, Entity, Cell, Cell)>);

fn record_crossings(app: &mut App) {
    app.init_resource::<Crossings>()
        .add_observer(|e: On<EnteredLink>, mut log: ResMut<Crossings>| {
            log.0.push(("entered", e.entity, e.from, e.to));
        })
        .add_observer(|e: On<LeftLink>, mut log: ResMut<Crossings>| {
            log.0.push(("left", e.entity, e.from, e.to));
        });
}

/// A map 40 x 20 cut in two by a wall down columns `wall`, with `link` across it.
fn cut_in_two(wall: std::ops::RangeInclusive<i32>, link: Link) -> (NavGrid, App) {
    let mut grid = NavGrid::new(40, 20).unwrap();
    for x in wall {
        for y in 0..20 {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
        }
    }
    let mut app = app(grid.clone());
    let world = app.world_mut();
    let mut map = world.query::<&mut NavMap>().single_mut(world).unwrap();
    map.add_link(link).unwrap();
    (grid, app)
}

#[test]
fn a_vehicle_drives_to_a_teleporter_crosses_it_and_drives_on_from_the_exit() {
    let portals = Link::two_way(Cell::new(16, 10), Cell::new(24, 10), 0.5);
    let (grid, mut app) = cut_in_two(20..=20, portals);
    record_crossings(&mut app);
    record_outcomes(&mut app);
    let unit = vehicle(
        &mut app,
        Cell::new(4, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(34, 4)),
    );
    let drive = watch(&mut app, unit, &grid, 1200);
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    assert_eq!(drive.wall_touches, 0, "{drive:?}");
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(Vec2::new(34.5, 4.5)) < 0.01, "{at}");
    let (entry, exit) = (Cell::new(16, 10), Cell::new(24, 10));
    let crossings = &app.world().resource::<Crossings>().0;
    assert_eq!(
        crossings,
        &[("entered", unit, entry, exit), ("left", unit, entry, exit)]
    );
    let seen = &app.world().resource::<AtOutcome>().0;
    assert_eq!(seen.len(), 1, "one outcome: {seen:?}");
    assert!(matches!(seen[0].0, OutcomeKind::Found { .. }), "{seen:?}");
}

/// A teleporter whose exit lies at the bottom of a slot one cell wide, entered driving east:
/// the vehicle comes out facing the way its path goes on (north, up the slot) and drives out to
/// its goal. Facing the way it went in, it could neither turn nor back out there.
#[test]
fn a_vehicle_comes_out_of_a_teleporter_facing_the_way_its_path_goes_on() {
    let portals = Link::two_way(Cell::new(12, 3), Cell::new(30, 3), 0.5);
    let (mut grid, mut app) = cut_in_two(20..=20, portals);
    for y in 0..=12 {
        for x in [29, 31] {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
            set_walkable(&mut app, Cell::new(x, y), false);
        }
    }
    grid.set_walkable(Cell::new(30, 0), false).unwrap();
    set_walkable(&mut app, Cell::new(30, 0), false);
    record_crossings(&mut app);
    let unit = vehicle(
        &mut app,
        Cell::new(4, 3),
        Vec2::X,
        PathRequest::to_cell(Cell::new(30, 17)),
    );
    let drive = watch(&mut app, unit, &grid, 1200);
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    assert_eq!(drive.wall_touches, 0, "{drive:?}");
    let crossings = &app.world().resource::<Crossings>().0;
    assert_eq!(crossings.len(), 2, "{crossings:?}");
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(Vec2::new(30.5, 17.5)) < 0.01, "{at}");
}

/// Two vehicles reaching a slow teleporter's entry in one frame from two sides cross it
/// together and come out on one spot: the later in rank lets the other drive off first, so
/// they part at once instead of driving on top of each other; both arrive.
#[test]
fn two_vehicles_put_down_on_one_spot_by_a_teleporter_part_at_once() {
    let portals = Link::two_way(Cell::new(16, 10), Cell::new(24, 10), 4.0);
    let (_, mut app) = cut_in_two(20..=20, portals);
    record_crossings(&mut app);
    let first = vehicle(
        &mut app,
        Cell::new(10, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(34, 9)),
    );
    let second = vehicle(
        &mut app,
        Cell::new(16, 4),
        Vec2::Y,
        PathRequest::to_cell(Cell::new(34, 11)),
    );
    let (at, arrived) = (position, drive_arrived);
    let (mut frames, mut together_east) = (0, 0);
    while frames < 2400 && !(arrived(&app, first) && arrived(&app, second)) {
        app.update();
        frames += 1;
        let (a, b) = (at(&app, first), at(&app, second));
        // Out of the teleporter, both east of the wall, on one spot.
        if a.x > 21.0 && b.x > 21.0 && a.distance(b) < 0.05 {
            together_east += 1;
        }
    }
    assert!(
        arrived(&app, first) && arrived(&app, second),
        "after {frames} frames"
    );
    assert_eq!(app.world().resource::<Crossings>().0.len(), 4);
    // Put down together, then one frame's step apart.
    assert!(together_east <= 2, "{together_east} frames on one spot");
}

#[test]
fn a_vehicle_drives_across_a_walked_link_facing_its_exit() {
    // A river three cells wide, and a bridge over it that vehicles drive along.
    let bridge = Link::two_way(Cell::new(18, 6), Cell::new(22, 6), 4.0).walked();
    let (grid, mut app) = cut_in_two(19..=21, bridge);
    record_crossings(&mut app);
    // Facing away from the bridge: it turns round on the way, never in place.
    let unit = vehicle(
        &mut app,
        Cell::new(10, 12),
        Vec2::NEG_X,
        PathRequest::to_cell(Cell::new(30, 12)),
    );
    let mut facing_on_bridge = Vec::new();
    let mut drive = Drive::default();
    for _ in 0..40 {
        let part = watch(&mut app, unit, &grid, 30);
        drive.max_turn_rate_ratio = drive.max_turn_rate_ratio.max(part.max_turn_rate_ratio);
        drive.arrived = part.arrived;
        let t = app.world().get::<Transform>(unit).unwrap();
        let x = t.translation.x;
        if x > 19.0 && x < 22.0 {
            facing_on_bridge.push((t.rotation * Vec3::X).truncate());
        }
        if drive.arrived {
            break;
        }
    }
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    assert!(!facing_on_bridge.is_empty());
    for f in &facing_on_bridge {
        assert!(f.distance(Vec2::X) < 1e-3, "{f}");
    }
    let crossings = &app.world().resource::<Crossings>().0;
    let (entry, exit) = (Cell::new(18, 6), Cell::new(22, 6));
    assert_eq!(
        crossings,
        &[("entered", unit, entry, exit), ("left", unit, entry, exit)]
    );
}

/// A vehicle sent from (10, 10) to (34, 10) through a wall down column 20, by portals from
/// (16, 10) to (24, 10) taking 4 tiles' time, run until it has entered them.
fn inside_a_slow_link() -> (NavGrid, App, Entity) {
    let portals = Link::two_way(Cell::new(16, 10), Cell::new(24, 10), 4.0);
    let (grid, mut app) = cut_in_two(20..=20, portals);
    record_crossings(&mut app);
    let unit = vehicle(
        &mut app,
        Cell::new(10, 10),
        Vec2::X,
        PathRequest::to_cell(Cell::new(34, 10)),
    );
    for _ in 0..600 {
        app.update();
        if !app.world().resource::<Crossings>().0.is_empty() {
            break;
        }
    }
    assert_eq!(app.world().resource::<Crossings>().0.len(), 1, "entered");
    (grid, app, unit)
}

/// Orders `unit` to `cell` and runs `app` until it arrives there (at most `max` frames).
fn ordered_to(app: &mut App, unit: Entity, grid: &NavGrid, cell: Cell, max: usize) -> Drive {
    app.world_mut()
        .entity_mut(unit)
        .insert(PathRequest::to_cell(cell));
    let drive = watch(app, unit, grid, max);
    assert!(drive.arrived, "{drive:?}");
    let at = app.world().get::<Transform>(unit).unwrap().translation;
    assert!(at.truncate().distance(cell.as_vec2() + 0.5) < 0.01, "{at}");
    drive
}

/// Checks the vehicle crossed the portals of [`inside_a_slow_link`] there and back.
fn crossed_there_and_back(app: &App, unit: Entity) {
    let (a, b) = (Cell::new(16, 10), Cell::new(24, 10));
    let crossings = &app.world().resource::<Crossings>().0;
    assert_eq!(
        crossings,
        &[
            ("entered", unit, a, b),
            ("left", unit, a, b),
            ("entered", unit, b, a),
            ("left", unit, b, a),
        ]
    );
}

#[test]
fn a_vehicle_given_a_new_order_inside_a_link_comes_out_and_drives_it_from_the_exit() {
    let (grid, mut app, unit) = inside_a_slow_link();
    // Inside: a new goal on the far side; once there, one on the near side.
    let drive = ordered_to(&mut app, unit, &grid, Cell::new(30, 16), 1200);
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    ordered_to(&mut app, unit, &grid, Cell::new(6, 4), 1200);
    crossed_there_and_back(&app, unit);
}

#[test]
fn a_vehicle_ordered_back_from_inside_a_link_comes_out_and_crosses_back() {
    let (grid, mut app, unit) = inside_a_slow_link();
    // Inside, ordered to a cell on the side it came from: its new path is searched from the
    // exit, where it comes out, and crosses back.
    let drive = ordered_to(&mut app, unit, &grid, Cell::new(8, 14), 1800);
    assert!(drive.max_turn_rate_ratio <= 1.01, "{drive:?}");
    crossed_there_and_back(&app, unit);
}

/// A vehicle catching up with a slower one going its way in a lane one cell wide follows it: it
/// stops whenever its next step would close on it and overlap, its body never over the slower
/// one's, and both arrive, the faster one behind.
#[test]
fn a_vehicle_behind_a_slower_one_in_a_lane_follows_it_without_overlapping() {
    let mut grid = NavGrid::new(40, 5).unwrap();
    for x in 0..40 {
        for y in [0, 1, 3, 4] {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
        }
    }
    let mut app = app(grid);
    let slow = vehicle(
        &mut app,
        Cell::new(6, 2),
        Vec2::X,
        PathRequest::to_cell(Cell::new(30, 2)),
    );
    app.world_mut().get_mut::<Mover>(slow).unwrap().speed = 1.0;
    let fast = vehicle(
        &mut app,
        Cell::new(2, 2),
        Vec2::X,
        PathRequest::to_cell(Cell::new(28, 2)),
    );
    let (at, arrived) = (position, drive_arrived);
    let (mut closest, mut waits, mut frames) = (f32::MAX, 0, 0);
    let mut last = at(&app, fast);
    while frames < 3000 && !(arrived(&app, slow) && arrived(&app, fast)) {
        app.update();
        frames += 1;
        let (f, s) = (at(&app, fast), at(&app, slow));
        closest = closest.min(f.distance(s));
        waits += usize::from(f == last && !arrived(&app, fast));
        last = f;
    }
    assert!(
        arrived(&app, slow) && arrived(&app, fast),
        "after {frames} frames"
    );
    // Two bodies of radius 0.3; it caught up and waited behind.
    assert!(closest >= 0.6 - 1e-3, "came within {closest}");
    assert!(closest < 0.7, "never caught up: {closest}");
    assert!(waits > 100, "waited {waits} frames");
    assert!(at(&app, fast).x < at(&app, slow).x);
}

/// Four vehicles sent at once to a cell another vehicle stands on each stop on a free cell of
/// their own next to it, choosing apart (none drives to a cell another chose and then on to
/// the next), all within the time a drive there and a short wait take.
#[test]
fn vehicles_sent_together_where_another_stands_stop_on_free_cells_of_their_own() {
    let grid = NavGrid::new(24, 24).unwrap();
    let mut app = app(grid.clone());
    let goal = Cell::new(12, 12);
    vehicle(&mut app, goal, Vec2::X, PathRequest::to_cell(goal));
    for _ in 0..5 {
        app.update();
    }
    let group: Vec<Entity> = (0..4)
        .map(|k| {
            vehicle(
                &mut app,
                Cell::new(3, 10 + 2 * k),
                Vec2::X,
                PathRequest::to_cell(goal),
            )
        })
        .collect();
    let arrived = |app: &App| group.iter().all(|&e| drive_arrived(app, e));
    let mut frames = 0;
    while frames < 3000 && !arrived(&app) {
        app.update();
        frames += 1;
    }
    assert!(arrived(&app), "not all arrived after {frames} frames");
    let cells: std::collections::HashSet<Cell> = group
        .iter()
        .map(|&e| position(&app, e).floor().as_ivec2())
        .collect();
    assert_eq!(cells.len(), 4, "{cells:?}");
    assert!(
        cells.iter().all(|c| (*c - goal).abs().max_element() == 1),
        "{cells:?}"
    );
    // About 9 tiles at 3 tiles a second, turns and waits for each other included.
    assert!(frames < 900, "{frames} frames");
}

#[test]
fn two_vehicles_parked_on_one_spot_part_and_drive_off_without_a_leap_or_a_turn_in_place() {
    let grid = NavGrid::new(30, 20).unwrap();
    let mut app = app(grid.clone());
    // Put down on one spot before the game's first frame (as a game spawns a column at
    // start-up), with no order yet.
    let parked = || {
        (
            Transform::from_xyz(10.5, 10.5, 0.0),
            Mover {
                speed: 3.0,
                ..default()
            },
            NavAgent { radius: 0.3 },
            Vehicle::default(),
        )
    };
    let a = app.world_mut().spawn(parked()).id();
    let b = app.world_mut().spawn(parked()).id();
    for _ in 0..60 {
        app.update();
    }
    let rotation = |app: &App, e: Entity| app.world().get::<Transform>(e).unwrap().rotation;
    let (pa, pb) = (position(&app, a), position(&app, b));
    assert!(
        pa.distance(pb) >= 0.6 - 1e-3,
        "still on one spot: {pa} {pb}"
    );
    // Slid apart, not turned.
    assert_eq!(rotation(&app, a), Quat::IDENTITY);
    assert_eq!(rotation(&app, b), Quat::IDENTITY);
    // One ordered off from where it was pushed to: it slides back onto its plan as it drives,
    // never faster than its speed allows or turning harder than its radius.
    app.world_mut()
        .entity_mut(a)
        .insert(PathRequest::to_cell(Cell::new(24, 10)));
    let drive = watch(&mut app, a, &grid, 1200);
    assert!(drive.arrived, "{drive:?}");
    assert!(drive.max_turn_rate_ratio <= 1.05, "{drive:?}");
    assert!(drive.max_step <= 1.5 * 3.0 * DT, "{drive:?}");
}
