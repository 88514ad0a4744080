//! avian2d integration: bodies walk their paths through their velocity, through a gate in a
//! wall that is a static collider, and the wall's collider follows grid edits and the map's
//! placement.
#![cfg(feature = "avian")]

mod support;

use std::time::Duration;

use avian2d::prelude::*;
use bevy::math::Affine2;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::avian::{NavWallColliders, NavWallMargin};
use bevy_tilepath::core::overlaps_blocked;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{DesiredVelocity, NavAgent, PathProgress};
use support::position as pos;

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .insert_resource(Time::<Fixed>::from_hz(60.0))
        .add_plugins((
            TilepathPlugins::in_schedule(FixedUpdate),
            PhysicsPlugins::default(),
        ))
        .insert_resource(Gravity::ZERO);
    // Updated by hand, not run: the plugins' last set-up steps are ours to call.
    app.finish();
    app.cleanup();
    app
}

/// A 30 x 12 grid, a wall at x = 15 with a gate two cells wide at y = 5 and 6.
fn gate() -> NavGrid {
    let mut grid = NavGrid::new(30, 12).unwrap();
    for y in 0..12 {
        if y != 5 && y != 6 {
            grid.set_walkable(Cell::new(15, y), false).unwrap();
        }
    }
    grid
}

fn body(app: &mut App, cell: Cell, goal: Cell) -> Entity {
    let p = Vec2::new(cell.x as f32 + 0.5, cell.y as f32 + 0.5);
    app.world_mut()
        .spawn((
            Transform::from_xyz(p.x, p.y, 0.0),
            Mover::default(),
            NavAgent { radius: 0.3 },
            DesiredVelocity::default(),
            RigidBody::Dynamic,
            Collider::circle(0.3),
            LockedAxes::ROTATION_LOCKED,
            Friction::ZERO,
            PathRequest::to_cell(goal),
        ))
        .id()
}

#[test]
fn bodies_cross_a_walled_map_through_its_gate() {
    let grid = gate();
    let mut app = app();
    app.world_mut().spawn((
        NavMap::new(grid.clone(), Vec2::ZERO, Vec2::ONE),
        NavWallColliders,
    ));
    // Eight bodies each way through the gate.
    let mut units = Vec::new();
    for i in 0..8 {
        units.push(body(&mut app, Cell::new(2, 2 + i), Cell::new(27, 9 - i)));
        units.push(body(&mut app, Cell::new(27, 2 + i), Cell::new(2, 9 - i)));
    }
    let arrived = |app: &mut App| {
        let world = app.world_mut();
        let mut q = world.query::<&PathProgress>();
        units
            .iter()
            .filter(|&&e| q.get(world, e).unwrap().state == MoveState::Arrived)
            .count()
    };
    for _ in 0..60 * 40 {
        app.update();
        for &e in &units {
            let p = pos(&app, e);
            assert!(
                !overlaps_blocked(&grid, p, 0.3 - 0.05),
                "a body sank into the wall at {p}"
            );
        }
        if arrived(&mut app) == units.len() {
            break;
        }
    }
    assert_eq!(arrived(&mut app), units.len());
    // The bodies stand where their paths end (a cell off at most: a gathered crowd).
    for &e in &units {
        let p = pos(&app, e);
        let goal = app.world().get::<NavPath>(e).unwrap().goal;
        assert!(
            (grid.cell_at(p) - goal).abs().max_element() <= 1,
            "{p} is not at {goal}"
        );
    }
}

#[test]
fn the_walls_collider_follows_grid_edits_and_the_maps_placement() {
    let mut app = app();
    let map = app
        .world_mut()
        .spawn((NavMap::new(gate(), Vec2::ZERO, Vec2::ONE), NavWallColliders))
        .id();
    // The plugin group runs in `FixedUpdate`: the first frame has no tick.
    let ticks = |app: &mut App| {
        for _ in 0..3 {
            app.update();
        }
    };
    ticks(&mut app);
    let walls = |app: &mut App| {
        let world = app.world_mut();
        let mut q = world.query_filtered::<&Collider, With<RigidBody>>();
        q.iter(world)
            .map(|c| c.shape().as_compound().map_or(0, |c| c.shapes().len()))
            .collect::<Vec<_>>()
    };
    // Two wall pieces and the map's four edges, one static body.
    assert_eq!(walls(&mut app), vec![6]);
    // The gate closed: one piece.
    let mut nav = app.world_mut().get_mut::<NavMap>(map).unwrap();
    nav.set_walkable(Cell::new(15, 5), false).unwrap();
    nav.set_walkable(Cell::new(15, 6), false).unwrap();
    ticks(&mut app);
    assert_eq!(walls(&mut app), vec![5]);
    // The map moved 100 tiles east: so do its walls.
    let left = |app: &mut App| {
        let world = app.world_mut();
        let mut q = world.query_filtered::<&Collider, With<RigidBody>>();
        let collider = q.single(world).unwrap();
        collider.aabb(Vec2::ZERO, 0.0).min.x
    };
    let before = left(&mut app);
    app.world_mut()
        .get_mut::<NavMap>(map)
        .unwrap()
        .set_placement(Affine2::from_translation(Vec2::new(100.0, 0.0)));
    ticks(&mut app);
    assert!((left(&mut app) - before - 100.0).abs() < 1e-3);
    // A margin grows every piece by it (the left edge's piece reaches 0.15 further out).
    app.world_mut().entity_mut(map).insert(NavWallMargin(0.15));
    ticks(&mut app);
    assert!((left(&mut app) - before - 100.0 + 0.15).abs() < 1e-3);
    // The marker removed: the body goes.
    app.world_mut().entity_mut(map).remove::<NavWallColliders>();
    ticks(&mut app);
    assert_eq!(walls(&mut app), Vec::<usize>::new());
}

#[test]
fn a_body_walking_through_others_passes_through_them_then_is_solid_again() {
    let mut app = app();
    app.world_mut().spawn(NavMap::new(
        NavGrid::new(20, 20).unwrap(),
        Vec2::ZERO,
        Vec2::ONE,
    ));
    // `a` on its way east, `b` standing.
    let a = body(&mut app, Cell::new(2, 5), Cell::new(18, 5));
    let b = body(&mut app, Cell::new(15, 15), Cell::new(15, 15));
    for _ in 0..5 {
        app.update();
    }
    let disabled = |app: &App, e: Entity| app.world().get::<ColliderDisabled>(e).is_some();
    assert!(!disabled(&app, a));
    // `a` walks through others: its collider is off while it does.
    let through = MoveState::WalkingThrough { from: pos(&app, a) };
    app.world_mut().get_mut::<PathProgress>(a).unwrap().state = through;
    app.update();
    assert!(disabled(&app, a));
    assert!(!disabled(&app, b));
    // Back to walking, but standing inside `b`: still off, until it is out of it.
    app.world_mut().get_mut::<PathProgress>(a).unwrap().state = MoveState::Idle;
    let inside = app.world().get::<Transform>(b).copied().unwrap();
    *app.world_mut().get_mut::<Transform>(a).unwrap() = inside;
    *app.world_mut().get_mut::<Position>(a).unwrap() = Position(inside.translation.truncate());
    app.update();
    assert!(disabled(&app, a), "made solid inside another body");
    let away = Vec2::new(5.5, 5.5);
    *app.world_mut().get_mut::<Transform>(a).unwrap() =
        Transform::from_translation(away.extend(0.0));
    *app.world_mut().get_mut::<Position>(a).unwrap() = Position(away);
    app.update();
    app.update();
    assert!(!disabled(&app, a));
}
