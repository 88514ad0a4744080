//! Movement: turning geometry, walls never entered, claims released, groups spreading out, a
//! head-on meeting in a one-tile corridor resolving without overlap, and pushing.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{
    Cell, MoveRules, NavGrid, Smoother, Topology, TurnPlan, cell_at, overlaps_blocked, walkable,
};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    Claims, DesiredVelocity, MoveState, MovementFrameStats, PathOrigin, PathProgress,
    PendingRequests, SearchKind, TilepathFrameStats,
};
use support::position as pos;

#[test]
fn turn_plans_follow_the_turning_circle_then_a_line() {
    for (heading, target) in [
        (Vec2::X, Vec2::new(0.0, 5.0)),
        (Vec2::X, Vec2::new(-3.0, -4.0)),
        (Vec2::Y, Vec2::new(6.0, 1.0)),
        (Vec2::new(1.0, 1.0).normalize(), Vec2::new(-2.0, 8.0)),
    ] {
        let r = 1.5;
        let plan =
            TurnPlan::new(Vec2::ZERO, heading, target, r).expect("target outside the circles");
        // On the arc every point is r from the center; the end is the target.
        let arc = plan.arc_length();
        for k in 0..=20 {
            let d = arc * k as f32 / 20.0;
            let (p, h) = plan.sample(d);
            assert!(
                (p.distance(plan.center) - r).abs() < 1e-3,
                "off the circle at {d}"
            );
            assert!((h.length() - 1.0).abs() < 1e-3);
        }
        let (end, h) = plan.sample(plan.length());
        assert!(end.distance(target) < 1e-3);
        // Leaving the arc, the heading points at the target.
        assert!(h.dot((target - plan.tangent).normalize()) > 0.999);
        // It starts along the initial heading.
        let (_, h0) = plan.sample(0.0);
        assert!(h0.dot(heading) > 0.999, "{h0} vs {heading}");
    }
    // A target inside the left turning circle is reached by turning right, the long way round.
    let plan = TurnPlan::new(Vec2::ZERO, Vec2::X, Vec2::new(0.2, 1.0), 2.0).unwrap();
    assert!(plan.sweep < 0.0, "sweep {}", plan.sweep);
}

fn app(grid: NavGrid) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .add_plugins(TilepathPlugins::default());
    app.world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
    app.update();
    app
}

fn unit(app: &mut App, cell: Cell, goal: Cell, mover: Mover) -> Entity {
    unit_sized(app, cell, goal, mover, NavAgent::default())
}

fn unit_sized(app: &mut App, cell: Cell, goal: Cell, mover: Mover, agent: NavAgent) -> Entity {
    let mut maps = app.world_mut().query::<&NavMap>();
    let p = maps.single(app.world()).unwrap().cell_to_world(cell);
    app.world_mut()
        .spawn((
            Transform::from_xyz(p.x, p.y, 0.0),
            mover,
            agent,
            PathRequest::to_cell(goal),
        ))
        .id()
}

fn state(app: &App, e: Entity) -> MoveState {
    app.world().get::<PathProgress>(e).unwrap().state
}

/// Rooms and walls with doors, so paths bend around corners.
fn rooms() -> NavGrid {
    let mut g = NavGrid::new(40, 30).unwrap();
    for y in 0..30 {
        if y != 5 && y != 6 {
            g.set_walkable(Cell::new(12, y), false).unwrap();
        }
        if y != 24 {
            g.set_walkable(Cell::new(26, y), false).unwrap();
        }
    }
    for x in 13..26 {
        if x != 20 {
            g.set_walkable(Cell::new(x, 15), false).unwrap();
        }
    }
    g
}

#[test]
fn units_never_enter_blocked_cells_and_release_their_claims() {
    let movers = [
        (Mover::default(), NavAgent::default()),
        (
            Mover {
                turning_radius: 1.0,
                ..Default::default()
            },
            NavAgent::default(),
        ),
        (
            Mover {
                turning_radius: 0.5,
                speed: 7.0,
                ..Default::default()
            },
            NavAgent { radius: 0.45 },
        ),
    ];
    walk_the_rooms(rooms(), &movers);
}

/// The same rooms on hexagons (axial cells: the walls are slanted lines on screen), with bodies
/// thin enough for a one-cell door (0.577 wide between the wall cells' corners).
#[test]
fn units_on_hexagons_never_enter_blocked_cells_and_release_their_claims() {
    let square = rooms();
    let hex = MoveRules {
        topology: Topology::Hex,
        ..Default::default()
    };
    let terrain: Vec<u8> = square.cells().map(|c| square.terrain(c).unwrap()).collect();
    let grid = NavGrid::from_terrain(square.width(), square.height(), hex, &terrain).unwrap();
    let thin = NavAgent { radius: 0.27 };
    let movers = [
        (Mover::default(), thin),
        (
            Mover {
                turning_radius: 1.0,
                ..Default::default()
            },
            thin,
        ),
        (
            Mover {
                turning_radius: 0.5,
                speed: 7.0,
                ..Default::default()
            },
            NavAgent { radius: 0.25 },
        ),
    ];
    walk_the_rooms(grid, &movers);
}

/// Three units cross the rooms of `grid` from the left to the far room: none overlaps a wall,
/// claims follow each, all arrive on their goal cells and every claim is released.
fn walk_the_rooms(grid: NavGrid, movers: &[(Mover, NavAgent)]) {
    let mut app = app(grid.clone());
    let units: Vec<Entity> = movers
        .iter()
        .enumerate()
        .map(|(i, (m, a))| {
            unit_sized(
                &mut app,
                Cell::new(2, 2 + 3 * i as i32),
                Cell::new(37, 27 - i as i32),
                m.clone(),
                *a,
            )
        })
        .collect();
    let mut max_claims = 0;
    for _ in 0..60 * 40 {
        app.update();
        for (i, &e) in units.iter().enumerate() {
            let p = pos(&app, e);
            assert!(
                !overlaps_blocked(&grid, p, movers[i].1.radius - 1e-3),
                "unit {i} overlaps a wall at {p}"
            );
            // Claims: only cells of the path from the current one on, at most claim_ahead + 1.
            let progress = app.world().get::<PathProgress>(e).unwrap();
            let claimed: Vec<Cell> = progress.claimed().collect();
            max_claims = max_claims.max(claimed.len());
            assert!(claimed.len() <= movers[i].0.claim_ahead + 1);
            if let Some(path) = app.world().get::<NavPath>(e) {
                let from = progress.cell_index.saturating_sub(1);
                for c in &claimed {
                    assert!(path.corridor[from..].contains(c), "claims a cell it left");
                }
                // Claims follow the unit: the first is (next to) the cell it stands on.
                if let Some(first) = claimed.first() {
                    let here = grid.cell_at(p);
                    assert!(
                        (*first - here).abs().max_element() <= 1,
                        "unit {i} at {here} claims from {first}"
                    );
                }
            }
        }
        if units.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
            break;
        }
    }
    assert!(max_claims > 0, "moving units claim cells");
    for (i, &e) in units.iter().enumerate() {
        assert_eq!(
            state(&app, e),
            MoveState::Arrived,
            "unit {i} did not arrive"
        );
        let goal = Cell::new(37, 27 - i as i32);
        assert_eq!(grid.cell_at(pos(&app, e)), goal);
        assert_eq!(
            app.world()
                .get::<PathProgress>(e)
                .unwrap()
                .claimed()
                .count(),
            0
        );
    }
    let claims = app.world().resource::<Claims>();
    assert_eq!(claims.claimed_len(), 0, "every claim was released");
}

#[test]
fn twenty_units_ordered_to_one_spot_spread_out() {
    let mut app = app(NavGrid::new(40, 40).unwrap());
    let goal = Cell::new(30, 30);
    let units: Vec<Entity> = (0..20)
        .map(|i| {
            unit(
                &mut app,
                Cell::new(2 + (i % 5) * 2, 2 + (i / 5) * 2),
                goal,
                Mover::default(),
            )
        })
        .collect();
    for _ in 0..60 * 30 {
        app.update();
        if units.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
            break;
        }
    }
    let cells: HashSet<Cell> = units.iter().map(|&e| cell_at(pos(&app, e))).collect();
    let states: Vec<(MoveState, Option<PathStatus>, Vec2)> = units
        .iter()
        .map(|&e| {
            (
                state(&app, e),
                app.world().get::<PathStatus>(e).copied(),
                pos(&app, e),
            )
        })
        .collect();
    assert!(
        units.iter().all(|&e| state(&app, e) == MoveState::Arrived),
        "{states:?}"
    );
    // Bodies (radius 0.3) stand apart: none overlaps another by more than a fifth of the two
    // radii, and they cover many cells (up to two bodies fit in a cell side by side).
    for (i, &a) in units.iter().enumerate() {
        for &b in &units[i + 1..] {
            let d = pos(&app, a).distance(pos(&app, b));
            assert!(d >= 0.8 * 0.6, "two bodies {d} tiles apart");
        }
    }
    assert!(cells.len() >= 10, "only {} distinct cells", cells.len());
    for c in &cells {
        assert!(
            (*c - goal).abs().max_element() <= 6,
            "{c} is far from the spot"
        );
    }
}

#[test]
fn a_unit_that_turns_in_place_walks_on_at_full_speed() {
    // A corridor one tile high: a unit with a turning radius, facing east, sent 23 tiles west
    // has no room for any arc, so it turns in place (slowly), then walks the corridor at its
    // full speed, 4 tiles a second: about 6 s in all (before, the whole leg at the turn's
    // speed took 16 s).
    let mut app = app(NavGrid::new(30, 1).unwrap());
    let mover = Mover {
        turning_radius: 1.0,
        ..Default::default()
    };
    let speed = mover.speed;
    let e = unit(&mut app, Cell::new(25, 0), Cell::new(2, 0), mover);
    let mut frames = 0;
    let mut fastest = 0.0f32;
    let mut last = pos(&app, e);
    while state(&app, e) != MoveState::Arrived && frames < 60 * 20 {
        app.update();
        frames += 1;
        fastest = fastest.max(pos(&app, e).distance(last) * 60.0);
        last = pos(&app, e);
    }
    assert_eq!(state(&app, e), MoveState::Arrived);
    assert!((fastest - speed).abs() < 0.01, "fastest {fastest}");
    assert!(frames < 60 * 7, "{frames} frames");
}

#[test]
fn head_on_in_a_one_tile_corridor_resolves() {
    // Two 6x6 rooms joined by a 12-tile corridor one tile wide.
    let mut g = NavGrid::new(26, 7).unwrap();
    for x in 6..20 {
        for y in 0..7 {
            if y != 3 {
                g.set_walkable(Cell::new(x, y), false).unwrap();
            }
        }
    }
    let mut app = app(g.clone());
    let a = unit(
        &mut app,
        Cell::new(1, 3),
        Cell::new(24, 3),
        Mover::default(),
    );
    let b = unit(
        &mut app,
        Cell::new(24, 4),
        Cell::new(1, 2),
        Mover::default(),
    );
    let mut closest = f32::INFINITY;
    for _ in 0..60 * 60 {
        app.update();
        for e in [a, b] {
            assert!(!overlaps_blocked(&g, pos(&app, e), 0.3 - 1e-3));
        }
        closest = closest.min(pos(&app, a).distance(pos(&app, b)));
        if [a, b].iter().all(|&e| {
            state(&app, e) == MoveState::Arrived
                && app.world().get::<PathStatus>(e) == Some(&PathStatus::Found)
        }) {
            break;
        }
    }
    assert_eq!(
        cell_at(pos(&app, a)),
        Cell::new(24, 3),
        "a stuck at {}",
        pos(&app, a)
    );
    assert_eq!(
        cell_at(pos(&app, b)),
        Cell::new(1, 2),
        "b stuck at {}",
        pos(&app, b)
    );
    // One yielded to the other: their bodies (radius 0.3) never overlapped by more than a fifth
    // of the sum of their radii.
    assert!(closest >= 0.8 * 0.6, "bodies came {closest} tiles close");
}

/// Spawns idle units (their goal is their own cell) at exact positions.
fn idle_at(app: &mut App, p: Vec2) -> Entity {
    app.world_mut()
        .spawn((
            Transform::from_xyz(p.x, p.y, 0.0),
            Mover::default(),
            PathRequest::to_cell(cell_at(p)),
        ))
        .id()
}

#[test]
fn units_stopped_on_a_taken_cell_each_take_a_free_cell_of_their_own() {
    let mut app = app(NavGrid::new(12, 12).unwrap());
    // Nobody shoved: the units find their cells themselves.
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .crowd
        .pushing = false;
    let here = Vec2::new(5.5, 5.5);
    let first = idle_at(&mut app, here);
    for _ in 0..5 {
        app.update();
    }
    // Four more stop on its cell in one frame (a melee's units told to stop, say).
    let stacked: Vec<Entity> = (0..4).map(|_| idle_at(&mut app, here)).collect();
    let mut free_cells = Vec::new();
    for _ in 0..10 {
        app.update();
        let book = app.world().resource::<PendingRequests>();
        for &e in &stacked {
            if book.origin(e) == Some(PathOrigin::GoalTaken)
                && let Some(PathGoal::Cell(c)) = book.request(e).map(|r| r.goal.clone())
                && !free_cells.contains(&(e, c))
            {
                free_cells.push((e, c));
            }
        }
    }
    // Each looked for a free cell once, and no two chose the same one.
    assert_eq!(free_cells.len(), 4, "{free_cells:?}");
    let cells: HashSet<Cell> = free_cells.iter().map(|&(_, c)| c).collect();
    assert_eq!(cells.len(), 4, "{free_cells:?}");
    for _ in 0..300 {
        app.update();
    }
    let stood: HashSet<Cell> = std::iter::once(first)
        .chain(stacked)
        .map(|e| cell_at(pos(&app, e)))
        .collect();
    assert_eq!(stood.len(), 5, "every unit on a cell of its own");
}

#[test]
fn overlapping_idle_units_are_pushed_apart_only_with_pushing_on() {
    for pushing in [true, false] {
        let mut g = NavGrid::new(10, 10).unwrap();
        g.set_walkable(Cell::new(5, 4), false).unwrap();
        let mut app = app(g.clone());
        app.world_mut()
            .resource_mut::<TilepathSettings>()
            .crowd
            .pushing = pushing;
        // Three units arrive on their cells, then are moved (a game's knock-back, say) onto
        // nearly one spot against a wall.
        let units: Vec<Entity> = [(2, 2), (2, 6), (7, 7)]
            .into_iter()
            .map(|(x, y)| idle_at(&mut app, Vec2::new(x as f32 + 0.5, y as f32 + 0.5)))
            .collect();
        for _ in 0..10 {
            app.update();
        }
        let start = [
            Vec2::new(4.6, 4.5),
            Vec2::new(4.65, 4.55),
            Vec2::new(4.6, 4.6),
        ];
        for (&e, p) in units.iter().zip(start) {
            assert_eq!(state(&app, e), MoveState::Arrived);
            app.world_mut().get_mut::<Transform>(e).unwrap().translation = p.extend(0.0);
        }
        for _ in 0..120 {
            app.update();
            for &e in &units {
                assert!(!overlaps_blocked(&g, pos(&app, e), 0.3 - 1e-3));
            }
        }
        let now: Vec<Vec2> = units.iter().map(|&e| pos(&app, e)).collect();
        if pushing {
            for i in 0..3 {
                for j in i + 1..3 {
                    let d = now[i].distance(now[j]);
                    assert!(d >= 0.6 - 1e-3, "{i} and {j} still {d} apart");
                }
            }
        } else {
            assert_eq!(now, start, "nobody was pushed");
        }
    }
}

#[test]
fn a_stream_through_a_gate_pushes_idle_units_aside_never_into_walls() {
    // A wall across the map with a two-tile gate; idle units stand just past it.
    let mut g = NavGrid::new(24, 14).unwrap();
    for y in 0..14 {
        if y != 6 && y != 7 {
            g.set_walkable(Cell::new(10, y), false).unwrap();
        }
    }
    let mut app = app(g.clone());
    let idle: Vec<Entity> = [(11, 6), (11, 7), (12, 5), (12, 8)]
        .into_iter()
        .map(|(x, y)| idle_at(&mut app, Vec2::new(x as f32 + 0.5, y as f32 + 0.5)))
        .collect();
    for _ in 0..10 {
        app.update();
    }
    let stream: Vec<Entity> = (0..12)
        .map(|i| {
            unit(
                &mut app,
                Cell::new(1 + i % 4, 4 + i / 4 * 2),
                Cell::new(20, 3 + i / 2),
                Mover::default(),
            )
        })
        .collect();
    let units: Vec<Entity> = idle.iter().chain(&stream).copied().collect();
    let start: Vec<Vec2> = idle.iter().map(|&e| pos(&app, e)).collect();
    for _ in 0..60 * 40 {
        app.update();
        for &e in &units {
            assert!(
                !overlaps_blocked(&g, pos(&app, e), 0.3 - 1e-3),
                "{e} in a wall at {}",
                pos(&app, e)
            );
        }
        if stream.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
            break;
        }
    }
    for &e in &stream {
        assert_eq!(
            state(&app, e),
            MoveState::Arrived,
            "{e} at {}",
            pos(&app, e)
        );
    }
    // The idle units were shoved rather than walked through, and stand on walkable cells.
    let pushed = idle
        .iter()
        .zip(&start)
        .filter(|&(&e, &p)| pos(&app, e).distance(p) > 0.05)
        .count();
    assert!(pushed > 0, "no idle unit was pushed");
    for &e in &idle {
        assert!(g.is_walkable(cell_at(pos(&app, e))));
    }
}

#[test]
fn a_path_without_corridor_cells_is_walked_along_its_waypoints() {
    // A path built by hand or loaded may have waypoints and no corridor: the unit walks it to
    // its goal (claiming nothing ahead), never panics.
    let mut app = app(NavGrid::new(16, 8).unwrap());
    let (from, to) = (Cell::new(1, 1), Cell::new(12, 5));
    let e = unit(&mut app, from, to, Mover::default());
    app.update();
    let mut path = app.world().get::<NavPath>(e).expect("found").clone();
    assert!(!path.corridor.is_empty());
    path.corridor.clear();
    path.cells.clear();
    app.world_mut().despawn(e);
    // A unit whose first path it is (as one loaded from a saved game).
    let at = path.waypoints[0];
    let e = app
        .world_mut()
        .spawn((
            Transform::from_xyz(at.x, at.y, 0.0),
            Mover::default(),
            NavAgent::default(),
            PathStatus::Found,
            path,
        ))
        .id();
    for _ in 0..60 * 10 {
        app.update();
        if state(&app, e) == MoveState::Arrived {
            break;
        }
    }
    assert_eq!(state(&app, e), MoveState::Arrived);
    assert_eq!(cell_at(pos(&app, e)), to);
}

#[test]
fn a_standing_unit_sleeps_until_something_touches_it() {
    let mut app = app(NavGrid::new(12, 12).unwrap());
    let idle = unit(&mut app, Cell::new(3, 3), Cell::new(3, 3), Mover::default());
    let stats = |app: &App| app.world().resource::<MovementFrameStats>().clone();
    app.update();
    app.update();
    assert_eq!(state(&app, idle), MoveState::Arrived);
    for _ in 0..5 {
        app.update();
        let s = stats(&app);
        assert_eq!((s.moving, s.standing, s.asleep), (0, 1, 1));
        assert!(s.total() >= s.steps);
    }
    let map = app
        .world_mut()
        .query_filtered::<Entity, With<NavMap>>()
        .single(app.world())
        .unwrap();
    let stopped_at = |app: &App, c| app.world().resource::<Claims>().stopped_at(map, c);
    assert_eq!(stopped_at(&app, Cell::new(3, 3)), Some(idle));
    // The game moves it: it wakes, and occupies the cell it now stands on.
    app.world_mut()
        .get_mut::<Transform>(idle)
        .unwrap()
        .translation = Vec3::new(7.5, 8.5, 0.0);
    app.update();
    let s = stats(&app);
    assert_eq!((s.standing, s.asleep), (1, 0), "moved by the game: awake");
    assert_eq!(stopped_at(&app, Cell::new(3, 3)), None);
    assert_eq!(stopped_at(&app, Cell::new(7, 8)), Some(idle));
    app.update();
    assert_eq!(stats(&app).asleep, 1, "asleep again");
    // A new order wakes it and it walks.
    app.world_mut()
        .entity_mut(idle)
        .insert(PathRequest::to_cell(Cell::new(1, 1)));
    app.update();
    app.update();
    assert_eq!(stats(&app).moving, 1);
}

#[test]
fn movement_reports_its_thread_cpu_time_within_its_wall_time() {
    let mut app = app(NavGrid::new(24, 24).unwrap());
    for k in 0..8 {
        unit(
            &mut app,
            Cell::new(1, 1 + 2 * k),
            Cell::new(22, 22 - 2 * k),
            Mover::default(),
        );
    }
    let mut cpu = Duration::ZERO;
    for _ in 0..30 {
        app.update();
        let s = app.world().resource::<MovementFrameStats>();
        // Measured over the same stretch as the wall time, on the systems' own threads: never
        // more (but for the clocks' reading order, well under a microsecond).
        assert!(
            s.cpu <= s.total() + Duration::from_micros(20),
            "cpu {:?} over wall {:?}",
            s.cpu,
            s.total()
        );
        cpu += s.cpu;
    }
    assert!(
        cpu > Duration::ZERO,
        "eight units walking cost some CPU time"
    );
}

#[test]
fn an_idle_unit_in_a_gate_makes_way() {
    // A wall across the map with a one-tile gate; an idle unit stands in the gate.
    let mut g = NavGrid::new(21, 11).unwrap();
    for y in 0..11 {
        if y != 5 {
            g.set_walkable(Cell::new(10, y), false).unwrap();
        }
    }
    let gate = Cell::new(10, 5);
    let mut app = app(g.clone());
    #[derive(Resource, Default)]
    struct Arrivals(Vec<Entity>);
    app.init_resource::<Arrivals>()
        .add_observer(|arrived: On<Arrived>, mut log: ResMut<Arrivals>| log.0.push(arrived.entity));
    let idle = unit(&mut app, gate, gate, Mover::default());
    for _ in 0..30 {
        app.update();
    }
    assert_eq!(state(&app, idle), MoveState::Arrived);
    let stats = app.world().resource::<MovementFrameStats>();
    assert_eq!((stats.standing, stats.asleep), (1, 1), "it stands asleep");
    let mover = unit(
        &mut app,
        Cell::new(2, 5),
        Cell::new(18, 5),
        Mover::default(),
    );
    let mut closest = f32::INFINITY;
    for _ in 0..60 * 20 {
        app.update();
        closest = closest.min(pos(&app, idle).distance(pos(&app, mover)));
        for e in [idle, mover] {
            assert!(!overlaps_blocked(&g, pos(&app, e), 0.3 - 1e-3));
        }
        if state(&app, mover) == MoveState::Arrived && state(&app, idle) == MoveState::Arrived {
            break;
        }
    }
    assert_eq!(
        cell_at(pos(&app, mover)),
        Cell::new(18, 5),
        "mover went through"
    );
    assert_ne!(
        cell_at(pos(&app, idle)),
        gate,
        "the idle unit left the gate"
    );
    // It stepped aside rather than being walked through (bodies of radius 0.3 never overlapped
    // by more than a little while passing), and it did not report a second arrival.
    assert!(closest > 0.4, "bodies came {closest} tiles close");
    let log = &app.world().resource::<Arrivals>().0;
    assert_eq!(log.iter().filter(|&&e| e == idle).count(), 1);
    assert_eq!(log.iter().filter(|&&e| e == mover).count(), 1);
}

#[test]
fn a_wall_dropped_across_a_units_way_is_never_walked_into() {
    // Open ground: one straight leg from (2, 10) to (37, 10).
    let mut app = app(NavGrid::new(40, 20).unwrap());
    let goal = Cell::new(37, 10);
    let u = unit(&mut app, Cell::new(2, 10), goal, Mover::default());
    // Walk until the unit is on its way, its body just short of x = 12.
    for _ in 0..600 {
        app.update();
        if pos(&app, u).x > 11.0 {
            break;
        }
    }
    assert!(
        pos(&app, u).x > 11.0 && pos(&app, u).x < 11.6,
        "{}",
        pos(&app, u)
    );
    // The queue stalls for two seconds: the unit's repath stays queued and it walks on along
    // its old leg meanwhile (a searching unit stops; a queued one does not).
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .searches_per_frame = 0;
    // A wall across its leg, with a gap far to the side: the leg in progress must not carry
    // the unit into it, before or after its new path arrives.
    let wall: Vec<Cell> = (0..17).map(|y| Cell::new(12, y)).collect();
    {
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        for &c in &wall {
            map.set_walkable(c, false).unwrap();
        }
    }
    let radius = NavAgent::default().radius;
    let mut arrived = false;
    for f in 0..3000 {
        app.update();
        if f == 120 {
            // The queue moves again: the new path arrives and goes round the wall.
            app.world_mut()
                .resource_mut::<TilepathSettings>()
                .searches_per_frame = 16;
        }
        let grid = {
            let mut q = app.world_mut().query::<&NavMap>();
            q.single(app.world()).unwrap().grid().clone()
        };
        assert!(
            !overlaps_blocked(&grid, pos(&app, u), radius),
            "in the wall at {}",
            pos(&app, u)
        );
        if state(&app, u) == MoveState::Arrived {
            arrived = true;
            break;
        }
    }
    assert!(
        arrived,
        "never arrived: {:?} at {}",
        state(&app, u),
        pos(&app, u)
    );
    assert_eq!(cell_at(pos(&app, u)), goal);
}

/// A wall across a 30 x 12 room with a one-tile gate in it, and a crowd on each side ordered
/// through it to the other side.
fn two_streams(app: &mut App, per_side: i32) -> Vec<Entity> {
    let mut units = Vec::new();
    for i in 0..per_side {
        let (x, y) = (2 + (i % 4) * 2, 2 + (i / 4) * 2);
        units.push(unit(
            app,
            Cell::new(x, y),
            Cell::new(27 - x, y),
            Mover::default(),
        ));
        units.push(unit(
            app,
            Cell::new(27 - x, y),
            Cell::new(x, y),
            Mover::default(),
        ));
    }
    units
}

fn gate_wall() -> NavGrid {
    let mut g = NavGrid::new(30, 12).unwrap();
    for y in 0..12 {
        if y != 6 {
            g.set_walkable(Cell::new(15, y), false).unwrap();
        }
    }
    g
}

#[test]
fn streams_meeting_in_a_one_tile_gate_take_turns_without_walking_through() {
    let g = gate_wall();
    assert!(g.is_one_wide(Cell::new(15, 6)));
    assert!(!g.is_one_wide(Cell::new(14, 6)));
    let mut app = app(g.clone());
    let units = two_streams(&mut app, 8);
    let mut through_frames = 0;
    let mut closest_in_gate = f32::INFINITY;
    for _ in 0..60 * 90 {
        app.update();
        for (i, &a) in units.iter().enumerate() {
            assert!(!overlaps_blocked(&g, pos(&app, a), 0.3 - 1e-3));
            through_frames += matches!(state(&app, a), MoveState::WalkingThrough { .. }) as u32;
            // Two bodies going opposite ways, in the gate and its mouths: they never pass
            // through each other (units alternate sides in `units`); a unit coming out shoves
            // one waiting at the mouth aside, pressing into it at most halfway for a moment.
            let near_gate = |p: Vec2| (p - Vec2::new(15.5, 6.5)).abs().max_element() <= 1.0;
            for &b in units[i + 1..].iter().step_by(2) {
                let (p, q) = (pos(&app, a), pos(&app, b));
                if near_gate(p) && near_gate(q) {
                    closest_in_gate = closest_in_gate.min(p.distance(q));
                }
            }
        }
        if units.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
            break;
        }
    }
    let left: Vec<Vec2> = units
        .iter()
        .filter(|&&e| state(&app, e) != MoveState::Arrived)
        .map(|&e| pos(&app, e))
        .collect();
    assert!(left.is_empty(), "not arrived: {left:?}");
    // Every unit arrived on its goal's side of the wall (units alternate: left to right first),
    // none stopped short before the gate or at its far mouth.
    for (i, &e) in units.iter().enumerate() {
        let x = pos(&app, e).x;
        assert!(
            (x > 16.0) == (i % 2 == 0) && (x - 15.5).abs() > 1.0,
            "unit {i} arrived at {} on the wrong side of the gate",
            pos(&app, e)
        );
    }
    assert_eq!(through_frames, 0, "units walked through others");
    assert!(
        closest_in_gate >= 0.5 * 0.6,
        "bodies came {closest_in_gate} tiles close at the gate"
    );
}

#[test]
fn two_units_side_by_side_at_a_one_tile_gate_go_through_in_turn() {
    // Two units walking side by side into a gate one cell wide each pressed the other against
    // a post of the gate (neither is in the other's next cell) until the crowd's last resort
    // walked one through the other, 9-10 s later. The one nearer the gate now goes first.
    let mut g = NavGrid::new(30, 14).unwrap();
    for y in (0..14).filter(|&y| y != 7) {
        g.set_walkable(Cell::new(15, y), false).unwrap();
    }
    let starts = [
        (Vec2::new(11.5, 6.8), Vec2::new(11.5, 8.2)),
        (Vec2::new(12.0, 7.0), Vec2::new(12.0, 8.0)),
        (Vec2::new(12.5, 6.5), Vec2::new(12.5, 8.5)),
        (Vec2::new(13.5, 7.2), Vec2::new(13.5, 7.8)),
        (Vec2::new(9.0, 6.0), Vec2::new(9.0, 9.0)),
        (Vec2::new(12.0, 5.5), Vec2::new(12.0, 9.5)),
        (Vec2::new(13.0, 6.6), Vec2::new(13.0, 8.4)),
    ];
    for (a, b) in starts {
        let mut app = app(g.clone());
        let units = [(a, Cell::new(25, 7)), (b, Cell::new(25, 8))].map(|(p, goal)| {
            app.world_mut()
                .spawn((
                    Transform::from_xyz(p.x, p.y, 0.0),
                    Mover::default(),
                    NavAgent::default(),
                    PathRequest::to_cell(goal),
                ))
                .id()
        });
        let mut frames = 0;
        while units.iter().any(|&e| pos(&app, e).x < 16.5) && frames < 60 * 20 {
            app.update();
            frames += 1;
            for &e in &units {
                assert!(!overlaps_blocked(&g, pos(&app, e), 0.3 - 1e-3));
                assert!(
                    !matches!(state(&app, e), MoveState::WalkingThrough { .. }),
                    "from {a} and {b}: a unit walked through the other"
                );
            }
        }
        // 1.3-2.3 s of walking, and a second of jostling at most before one goes first.
        assert!(
            frames <= 60 * 4,
            "from {a} and {b}: both through after {frames} frames"
        );
    }
}

#[test]
fn a_crowd_pressing_through_a_gap_never_leaps() {
    // 40 units pressing through a three-tile gap: pushes and the curve they walk never move a
    // body more than a frame's walk and a little more (an earlier build made 3-tile leaps).
    let mut g = NavGrid::new(30, 20).unwrap();
    for y in 0..20 {
        if !(9..=11).contains(&y) {
            g.set_walkable(Cell::new(12, y), false).unwrap();
        }
    }
    let mut app = app(g.clone());
    let units: Vec<Entity> = (0..40)
        .map(|i| {
            unit(
                &mut app,
                Cell::new(2 + i % 8, 6 + i / 8 * 2),
                Cell::new(25, 10),
                Mover::default(),
            )
        })
        .collect();
    let mut last: Vec<Vec2> = units.iter().map(|&e| pos(&app, e)).collect();
    let mut fastest = 0.0f32;
    for _ in 0..60 * 40 {
        app.update();
        for (k, &e) in units.iter().enumerate() {
            let p = pos(&app, e);
            assert!(!overlaps_blocked(&g, p, 0.3 - 1e-3));
            fastest = fastest.max(p.distance(last[k]));
            last[k] = p;
        }
        if units.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
            break;
        }
    }
    assert!(units.iter().all(|&e| state(&app, e) == MoveState::Arrived));
    // A frame's walk is 4 / 60 tiles; pushes add at most three passes of 6 / 60.
    assert!(fastest < 0.5, "a body moved {fastest} tiles in one frame");
}

/// A zigzag of walls with gaps at alternate ends, so long paths bend many times.
fn zigzag() -> NavGrid {
    let mut g = NavGrid::new(96, 64).unwrap();
    for (k, x) in (8..96).step_by(8).enumerate() {
        for y in 0..64 {
            let gap = if k % 2 == 0 { y >= 58 } else { y <= 5 };
            if !gap {
                g.set_walkable(Cell::new(x, y), false).unwrap();
            }
        }
    }
    g
}

#[test]
fn a_busy_queue_smooths_a_walking_units_rest_before_it_gets_there_and_drops_replaced_ones() {
    let mut app = app(zigzag());
    // A long walk through the zigzag: its first leg comes smoothed (one long straight line up
    // the first column), the rest as raw cell centers.
    let walker = unit(
        &mut app,
        Cell::new(2, 2),
        Cell::new(93, 60),
        Mover::default(),
    );
    // Forty units that never move get new orders across the map all the time, so the queue
    // always has searches to run (and their rests, replaced over and over, pile up unless they
    // leave).
    let mut maps = app.world_mut().query::<&NavMap>();
    let map = maps.single(app.world()).unwrap().clone();
    let busy: Vec<Entity> = (0..40)
        .map(|i| {
            let c = Cell::new(1 + (i % 7), 10 + i / 7 * 8);
            let p = map.cell_to_world(c);
            app.world_mut()
                .spawn(Transform::from_xyz(p.x, p.y, 0.0))
                .id()
        })
        .collect();
    let mut delivered: Option<(usize, usize)> = None;
    let mut patched = false;
    for frame in 0..700 {
        for (i, &e) in busy.iter().enumerate() {
            if (i + frame) % 4 == 0 {
                let x = 60 + ((i * 7 + frame) % 35) as i32;
                let goal = Cell::new(x, ((i * 13 + frame) % 60) as i32);
                app.world_mut()
                    .entity_mut(e)
                    .insert(PathRequest::to_cell(goal));
            }
        }
        app.update();
        let stats = app.world().resource::<TilepathFrameStats>().clone();
        assert!(
            stats.refining <= busy.len() + 1,
            "frame {frame}: {} rests waiting for {} units",
            stats.refining,
            busy.len() + 1
        );
        assert_eq!(
            stats.walking_raw, 0,
            "frame {frame}: the walker walks raw cells"
        );
        let Some(path) = app.world().get::<NavPath>(walker) else {
            continue;
        };
        match delivered {
            None => delivered = Some((path.waypoints.len(), path.cells.len())),
            Some((before, _)) => patched |= path.waypoints.len() < before,
        }
    }
    let (before, cells) = delivered.expect("the walker got its path");
    assert!(
        before > cells / 2,
        "delivered with a raw rest: {before} waypoints, {cells} cells"
    );
    assert!(
        patched,
        "the rest was never smoothed while the queue was busy"
    );
    // The walker got past the end of its first leg (about 30 cells of its path).
    let walked = pos(&app, walker).y - 2.5;
    assert!(walked > 30.0, "walked only {walked} tiles");
}

#[test]
fn a_path_found_on_a_worker_comes_smoothed_whole() {
    // The same long walk through the zigzag, searched on a worker: the worker smooths the whole
    // path before it sends it (its first leg as inline, the rest with the same forward pass), so
    // no rest waits for the main thread.
    let mut app = app(zigzag());
    app.world_mut().resource_mut::<TilepathSettings>().workers =
        WorkerMode::Async { max_in_flight: 1 };
    let walker = unit(
        &mut app,
        Cell::new(2, 2),
        Cell::new(93, 60),
        Mover::default(),
    );
    let mut path = None;
    for frame in 0..300 {
        app.update();
        let stats = app.world().resource::<TilepathFrameStats>();
        assert_eq!(stats.refining, 0, "frame {frame}: a rest waits");
        if let Some(p) = app.world().get::<NavPath>(walker) {
            path = Some(p.clone());
            break;
        }
    }
    let path = path.expect("the walker got its path");
    let grid = zigzag();
    let radius = NavAgent::default().radius;
    let mut maps = app.world_mut().query::<&NavMap>();
    let map = maps.single(app.world()).unwrap().clone();
    let forward = Smoother::forward(&grid, &path.cells, radius)
        .step(&grid, u32::MAX)
        .expect("unbounded");
    let expected: Vec<Vec2> = forward.iter().map(|&p| map.grid_to_world(p)).collect();
    assert_eq!(path.waypoints, expected);
    assert!(
        path.waypoints.len() * 8 < path.cells.len(),
        "{} waypoints for {} cells",
        path.waypoints.len(),
        path.cells.len()
    );
    for leg in forward.windows(2) {
        assert!(walkable(&grid, leg[0], leg[1], radius), "{leg:?}");
    }
}

#[test]
fn a_wall_edited_in_beside_a_diagonal_step_is_never_clipped() {
    // A path (2.5, 2.5) -> (4.5, 2.5) -> (5.5, 3.5) -> (8.5, 3.5): its diagonal step passes the
    // corner of cell (5, 2), which is then blocked while the unit walks its first leg (and the
    // queue stalls, so its repath waits). The step's line only touches that cell, but a body of
    // radius 0.3 walking it would overlap it: the unit must stop short, then take its new path.
    let mut app = app(NavGrid::new(12, 8).unwrap());
    let map = {
        let mut q = app.world_mut().query::<(Entity, &NavMap)>();
        q.single(app.world()).unwrap().0
    };
    let waypoints = vec![
        Vec2::new(2.5, 2.5),
        Vec2::new(4.5, 2.5),
        Vec2::new(5.5, 3.5),
        Vec2::new(8.5, 3.5),
    ];
    let cells: Vec<Cell> = [(2, 2), (3, 2), (4, 2), (5, 3), (6, 3), (7, 3), (8, 3)]
        .into_iter()
        .map(|(x, y)| Cell::new(x, y))
        .collect();
    let goal = Cell::new(8, 3);
    let path = NavPath {
        cells: cells.clone(),
        waypoints: waypoints.clone(),
        corridor: cells,
        cost: 0,
        length: 6.41,
        goal,
        map,
        class: Default::default(),
        origin: PathOrigin::User,
        search: SearchKind::Own,
        ticket: 0,
        request: PathRequest::to_cell(goal),
    };
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .searches_per_frame = 0;
    let u = app
        .world_mut()
        .spawn((
            Transform::from_xyz(2.5, 2.5, 0.0),
            Mover::default(),
            PathStatus::Found,
            path,
        ))
        .id();
    app.update();
    {
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        map.set_walkable(Cell::new(5, 2), false).unwrap();
    }
    let radius = NavAgent::default().radius;
    let mut arrived = false;
    for f in 0..900 {
        if f == 300 {
            // The queue moves again: the new path goes round the wall.
            app.world_mut()
                .resource_mut::<TilepathSettings>()
                .searches_per_frame = 16;
        }
        app.update();
        let grid = {
            let mut q = app.world_mut().query::<&NavMap>();
            q.single(app.world()).unwrap().grid().clone()
        };
        assert!(
            !overlaps_blocked(&grid, pos(&app, u), radius - 1e-3),
            "frame {f}: in the wall at {}",
            pos(&app, u)
        );
        if state(&app, u) == MoveState::Arrived {
            arrived = true;
            break;
        }
    }
    assert!(arrived, "never arrived: at {}", pos(&app, u));
    assert_eq!(cell_at(pos(&app, u)), goal);
}

/// A game's controller for units with a [`DesiredVelocity`]: moves each body by `share` of the
/// velocity it wants (1: a kinematic body; less: a sluggish one, held back as a physics body
/// is by its contacts), and turns it to face the way it wants.
#[derive(Resource)]
struct ControllerShare(f32);

fn controller(
    time: Res<Time>,
    share: Res<ControllerShare>,
    mut bodies: Query<(&DesiredVelocity, &mut Transform)>,
) {
    for (desired, mut transform) in &mut bodies {
        transform.translation += (desired.velocity * share.0 * time.delta_secs()).extend(0.0);
        if desired.facing != Vec2::ZERO {
            transform.rotation = Quat::from_rotation_z(desired.facing.to_angle());
        }
    }
}

#[test]
fn units_with_a_desired_velocity_are_moved_by_the_games_controller() {
    let movers = [
        Mover::default(),
        Mover {
            turning_radius: 1.0,
            ..Default::default()
        },
    ];
    // Two units through the rooms (meeting in a door), moved by the plugin, by a kinematic
    // controller, and by a sluggish one.
    let walk = |share: Option<f32>| {
        let grid = rooms();
        let mut app = app(grid.clone());
        if let Some(share) = share {
            app.insert_resource(ControllerShare(share))
                .add_systems(Update, controller.after(TilepathSystems::Move));
        }
        let units: Vec<Entity> = movers
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let e = unit(
                    &mut app,
                    Cell::new(2, 2 + 3 * i as i32),
                    Cell::new(37, 27 - i as i32),
                    m.clone(),
                );
                if share.is_some() {
                    app.world_mut()
                        .entity_mut(e)
                        .insert(DesiredVelocity::default());
                }
                e
            })
            .collect();
        let mut track = Vec::new();
        for _ in 0..60 * 40 {
            app.update();
            let at: Vec<Vec2> = units.iter().map(|&e| pos(&app, e)).collect();
            for (i, p) in at.iter().enumerate() {
                assert!(
                    !overlaps_blocked(&grid, *p, NavAgent::default().radius - 1e-3),
                    "{share:?}: unit {i} overlaps a wall at {p}"
                );
            }
            track.push(at);
            if units.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
                break;
            }
        }
        for (i, &e) in units.iter().enumerate() {
            assert_eq!(state(&app, e), MoveState::Arrived, "{share:?}: unit {i}");
            let goal = Cell::new(37, 27 - i as i32);
            assert_eq!(grid.cell_at(pos(&app, e)), goal, "{share:?}: unit {i}");
            if share.is_some() {
                // Standing (after its last step): it wants to stay where it is.
                app.update();
                let desired = app.world().get::<DesiredVelocity>(e).unwrap();
                assert_eq!(desired.velocity, Vec2::ZERO);
            }
        }
        track
    };
    let plugin = walk(None);
    let kinematic = walk(Some(1.0));
    // A controller that applies the velocity in full moves the bodies as the plugin does.
    assert!(
        kinematic.len().abs_diff(plugin.len()) <= 2,
        "{} {}",
        kinematic.len(),
        plugin.len()
    );
    for (frame, (a, b)) in plugin.iter().zip(&kinematic).enumerate() {
        for (p, q) in a.iter().zip(b) {
            assert!(p.distance(*q) < 0.05, "frame {frame}: {p} against {q}");
        }
    }
    // A sluggish body lags behind the walk, and is asked for more: it gets there all the same.
    // It moves 0.6 of what it is asked for, and the ask grows with its lag (by the lag over
    // half a second, the lag at most a tile before the walk waits for it): at most 0.6 x (4 +
    // 2) = 3.6 tiles a second against the walk's 4, so it arrives later, by less than 30 %.
    let sluggish = walk(Some(0.6));
    assert!(
        sluggish.len() > plugin.len() && 10 * sluggish.len() <= 13 * plugin.len(),
        "{} {}",
        sluggish.len(),
        plugin.len()
    );
}

#[test]
fn without_a_controller_a_unit_with_a_desired_velocity_stays_where_it_is() {
    let mut app = app(NavGrid::new(20, 5).unwrap());
    let e = unit(
        &mut app,
        Cell::new(2, 2),
        Cell::new(15, 2),
        Mover::default(),
    );
    app.world_mut()
        .entity_mut(e)
        .insert(DesiredVelocity::default());
    let start = app.world().get::<Transform>(e).copied().unwrap();
    for _ in 0..60 {
        app.update();
    }
    // The plugin never wrote its Transform; it wants to go east, at its speed at most.
    assert_eq!(app.world().get::<Transform>(e).copied().unwrap(), start);
    let desired = *app.world().get::<DesiredVelocity>(e).unwrap();
    assert!(
        desired.velocity.x > 0.5 * Mover::default().speed,
        "{desired:?}"
    );
    assert!(desired.velocity.length() <= Mover::default().speed + 1e-3);
    assert!(desired.facing.x > 0.9, "{desired:?}");
    assert_eq!(state(&app, e), MoveState::Moving);
}

#[test]
fn crowds_with_desired_velocities_are_pushed_apart_through_them() {
    let mut app = app(NavGrid::new(40, 40).unwrap());
    app.insert_resource(ControllerShare(1.0))
        .add_systems(Update, controller.after(TilepathSystems::Move));
    let goal = Cell::new(30, 30);
    let units: Vec<Entity> = (0..20)
        .map(|i| {
            let e = unit(
                &mut app,
                Cell::new(2 + (i % 5) * 2, 2 + (i / 5) * 2),
                goal,
                Mover::default(),
            );
            app.world_mut()
                .entity_mut(e)
                .insert(DesiredVelocity::default());
            e
        })
        .collect();
    for _ in 0..60 * 30 {
        app.update();
        if units.iter().all(|&e| state(&app, e) == MoveState::Arrived) {
            break;
        }
    }
    assert!(units.iter().all(|&e| state(&app, e) == MoveState::Arrived));
    // As with the plugin moving them (see twenty_units_ordered_to_one_spot_spread_out).
    for (i, &a) in units.iter().enumerate() {
        for &b in &units[i + 1..] {
            let d = pos(&app, a).distance(pos(&app, b));
            assert!(d >= 0.8 * 0.6, "two bodies {d} tiles apart");
        }
    }
}

#[test]
fn units_spawned_into_each_other_before_the_first_frame_are_pushed_apart() {
    // A game that spawns its map and an army on one spot at start-up: its first frame is 0 s
    // long, so nobody can be pushed then, and pushing must not forget them after it.
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .add_plugins(TilepathPlugins::default());
    app.world_mut().spawn(NavMap::new(
        NavGrid::new(12, 12).unwrap(),
        Vec2::ZERO,
        Vec2::ONE,
    ));
    let units: Vec<Entity> = [
        Vec2::new(5.5, 5.5),
        Vec2::new(5.6, 5.5),
        Vec2::new(5.5, 5.6),
    ]
    .into_iter()
    .map(|p| {
        app.world_mut()
            .spawn((Transform::from_translation(p.extend(0.0)), Mover::default()))
            .id()
    })
    .collect();
    for _ in 0..120 {
        app.update();
    }
    let now: Vec<Vec2> = units.iter().map(|&e| pos(&app, e)).collect();
    for i in 0..3 {
        for j in i + 1..3 {
            let d = now[i].distance(now[j]);
            assert!(d >= 0.6 - 1e-3, "{i} and {j} still {d} apart: {now:?}");
        }
    }
}
