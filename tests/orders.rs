//! RTS orders: waypoints queued after a unit's order, patrols, stop and hold position, through
//! the public API as a game gives them.

mod support;

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    Claims, HoldPosition, MoveState, NEXT_ORDER_WITHIN, OrderQueue, PathProgress, PendingRequests,
    Pursuit, hold_position, stop,
};
use support::position;

/// What the game saw: outcomes and arrivals.
#[derive(Resource, Default)]
struct Log {
    outcomes: Vec<PathOutcome>,
    arrived: Vec<Arrived>,
}

/// A 40 x 20 open field, one tile a world unit; 60 frames a second.
fn app() -> (App, Entity) {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .add_plugins(TilepathPlugins::default())
        .init_resource::<Log>()
        .add_systems(
            Update,
            (|mut o: MessageReader<PathOutcome>,
              mut a: MessageReader<Arrived>,
              mut log: ResMut<Log>| {
                log.outcomes.extend(o.read().copied());
                log.arrived.extend(a.read().copied());
            })
            .after(TilepathSystems::Move),
        );
    let map = app
        .world_mut()
        .spawn(NavMap::new(
            NavGrid::new(40, 20).unwrap(),
            Vec2::ZERO,
            Vec2::ONE,
        ))
        .id();
    app.update();
    (app, map)
}

fn spawn(app: &mut App, at: Cell) -> Entity {
    let p = at.as_vec2() + 0.5;
    app.world_mut()
        .spawn((Transform::from_xyz(p.x, p.y, 0.0), Mover::default()))
        .id()
}

/// A unit at `at` walking to `to` at 2.5 tiles a second (slower than a default follower's 4).
fn spawn_walker(app: &mut App, at: Cell, to: Cell) -> Entity {
    let unit = spawn(app, at);
    app.world_mut().entity_mut(unit).insert((
        Mover {
            speed: 2.5,
            ..default()
        },
        PathRequest::to_cell(to),
    ));
    unit
}

fn center(c: Cell) -> Vec2 {
    c.as_vec2() + 0.5
}

fn arrived(app: &App, unit: Entity) -> bool {
    app.world().get::<PathStatus>(unit) == Some(&PathStatus::Found)
        && app
            .world()
            .get::<PathProgress>(unit)
            .is_some_and(|p| p.state == MoveState::Arrived)
}

fn outcomes_of(app: &App, unit: Entity) -> Vec<OutcomeKind> {
    let log = app.world().resource::<Log>();
    log.outcomes
        .iter()
        .filter(|o| o.entity == unit && o.origin.is_user())
        .map(|o| o.kind)
        .collect()
}

#[test]
fn queued_waypoints_are_walked_in_turn_without_stopping() {
    let (mut app, _) = app();
    let unit = spawn(&mut app, Cell::new(2, 10));
    let (a, b, c) = (Cell::new(14, 10), Cell::new(14, 3), Cell::new(30, 3));
    // The first order's facing (a formation's, say) is its own, not the waypoints'.
    app.world_mut().entity_mut(unit).insert((
        PathRequest::to_cell(a).facing(Vec2::Y),
        OrderQueue::new([PathGoal::Cell(b), PathGoal::Cell(c)]),
    ));
    let (mut near_a, mut near_b) = (f32::MAX, f32::MAX);
    let mut still = 0;
    let mut last = position(&app, unit);
    for _ in 0..60 * 20 {
        app.update();
        let p = position(&app, unit);
        near_a = near_a.min(p.distance(center(a)));
        near_b = near_b.min(p.distance(center(b)));
        if arrived(&app, unit) {
            break;
        }
        if p == last {
            still += 1;
        }
        last = p;
    }
    assert!(arrived(&app, unit));
    assert!(position(&app, unit).distance(center(c)) < 0.1);
    assert!(
        near_a <= NEXT_ORDER_WITHIN + 0.1,
        "passed by the first waypoint: {near_a}"
    );
    assert!(
        near_b <= NEXT_ORDER_WITHIN + 0.1,
        "and the second: {near_b}"
    );
    assert!(still <= 1, "it stood still {still} frames on its way");
    // One outcome per order, and it arrived once: at the last waypoint.
    let kinds = outcomes_of(&app, unit);
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert!(kinds.iter().all(|k| matches!(k, OutcomeKind::Found { .. })));
    let log = app.world().resource::<Log>();
    let arrivals: Vec<Cell> = log
        .arrived
        .iter()
        .filter(|a| a.entity == unit)
        .map(|a| a.cell)
        .collect();
    assert_eq!(arrivals, vec![c]);
    assert_eq!(app.world().get::<PathRequest>(unit).unwrap().facing, None);
    assert!(
        app.world()
            .get::<OrderQueue>(unit)
            .unwrap()
            .goals
            .is_empty()
    );
}

#[test]
fn a_patrol_loops_between_its_points() {
    let (mut app, _) = app();
    let home = Cell::new(3, 10);
    let far = Cell::new(20, 10);
    let unit = spawn(&mut app, home);
    app.world_mut().entity_mut(unit).insert((
        PathRequest::to_cell(far),
        OrderQueue::patrol([PathGoal::Cell(home)]),
    ));
    // Visits: the end it last came near.
    let mut visits = Vec::new();
    for _ in 0..60 * 25 {
        app.update();
        let p = position(&app, unit);
        for end in [far, home] {
            if p.distance(center(end)) <= NEXT_ORDER_WITHIN + 0.1 && visits.last() != Some(&end) {
                visits.push(end);
            }
        }
    }
    // 17 tiles at 4 tiles a second: a leg in about 4 s; 25 s make five legs and more.
    assert!(visits.len() >= 6, "{visits:?}");
    assert!(visits.windows(2).all(|w| w[0] != w[1]));
    assert_eq!(
        visits[..2],
        [home, far],
        "it starts at home and goes out first"
    );
    let kinds = outcomes_of(&app, unit);
    assert!(kinds.len() >= 5, "{kinds:?}");
    assert!(kinds.iter().all(|k| matches!(k, OutcomeKind::Found { .. })));
    assert!(app.world().resource::<PendingRequests>().len() <= 1);
}

#[test]
fn a_stopped_unit_stands_where_it_is_and_holds_its_cell() {
    let (mut app, map) = app();
    let unit = spawn(&mut app, Cell::new(2, 10));
    app.world_mut().entity_mut(unit).insert((
        PathRequest::to_cell(Cell::new(36, 10)),
        OrderQueue::new([PathGoal::Cell(Cell::new(36, 2))]),
    ));
    for _ in 0..90 {
        app.update();
    }
    let walking = position(&app, unit);
    assert!(walking.x > 5.0, "on its way: {walking}");
    stop(app.world_mut().entity_mut(unit));
    for _ in 0..10 {
        app.update();
    }
    let stopped = position(&app, unit);
    for _ in 0..60 {
        app.update();
    }
    assert!(
        stopped.distance(walking) < 1.0,
        "stopped within a tile: {walking} then {stopped}"
    );
    assert_eq!(position(&app, unit), stopped, "and stays");
    assert!(arrived(&app, unit));
    assert!(app.world().get::<OrderQueue>(unit).is_none());
    let cell = Cell::new(stopped.x as i32, stopped.y as i32);
    assert_eq!(
        app.world().resource::<Claims>().stopped_at(map, cell),
        Some(unit)
    );
    assert!(app.world().resource::<PendingRequests>().is_empty());
}

/// How far a unit standing at (20, 10) is moved while eight units walk through its cell.
fn pushed_while_others_pass(hold: bool) -> f32 {
    let (mut app, _) = app();
    let stander = spawn(&mut app, Cell::new(20, 10));
    if hold {
        hold_position(app.world_mut().entity_mut(stander));
    } else {
        app.world_mut()
            .entity_mut(stander)
            .insert(PathRequest::to_cell(Cell::new(20, 10)));
    }
    for _ in 0..10 {
        app.update();
    }
    let at = position(&app, stander);
    let walkers: Vec<Entity> = (0..8)
        .map(|i| {
            let unit = spawn(&mut app, Cell::new(4 + (i % 2), 8 + i / 2));
            app.world_mut()
                .entity_mut(unit)
                .insert(PathRequest::to_cell(Cell::new(35 + (i % 2), 8 + i / 2)));
            unit
        })
        .collect();
    let mut moved = 0.0f32;
    for _ in 0..60 * 30 {
        app.update();
        moved = moved.max(position(&app, stander).distance(at));
        if walkers.iter().all(|&w| arrived(&app, w)) {
            break;
        }
    }
    for &w in &walkers {
        assert!(arrived(&app, w), "{w} got past");
    }
    assert_eq!(app.world().get::<HoldPosition>(stander).is_some(), hold);
    moved
}

#[test]
fn a_unit_holding_its_position_is_never_pushed_aside() {
    let held = pushed_while_others_pass(true);
    assert!(held < 1e-4, "held: moved {held}");
    // Without holding, the same crowd shoves it.
    let free = pushed_while_others_pass(false);
    assert!(free > 0.05, "not held: moved {free}");
}

#[test]
fn a_group_walks_its_queued_waypoints_in_turn() {
    // Group orders (a slot each, one shared search per target) queued after one another.
    let (mut app, map) = app();
    let units: Vec<Entity> = (0..12)
        .map(|i| spawn(&mut app, Cell::new(2 + i % 4, 8 + i / 4)))
        .collect();
    let (a, b, c) = (Cell::new(20, 10), Cell::new(30, 3), Cell::new(30, 16));
    let nav = app.world().get::<NavMap>(map).unwrap().clone();
    let at: Vec<(Entity, Vec2)> = units.iter().map(|&u| (u, position(&app, u))).collect();
    let slots = |target: Cell| group_order(&nav, nav.cell_to_world(target), &at);
    let (to_a, to_b, to_c) = (slots(a), slots(b), slots(c));
    for (i, (unit, request)) in to_a.into_iter().enumerate() {
        let queue = OrderQueue::new([to_b[i].1.goal.clone(), to_c[i].1.goal.clone()]);
        app.world_mut().entity_mut(unit).insert((request, queue));
    }
    let mut near_b = vec![f32::MAX; units.len()];
    for _ in 0..60 * 30 {
        app.update();
        for (k, &u) in units.iter().enumerate() {
            near_b[k] = near_b[k].min(position(&app, u).distance(center(b)));
        }
        if units.iter().all(|&u| arrived(&app, u)) {
            break;
        }
    }
    for (k, &u) in units.iter().enumerate() {
        assert!(arrived(&app, u), "{u} arrived");
        assert!(
            near_b[k] < 4.0,
            "{u} went by the second waypoint: {}",
            near_b[k]
        );
        assert!(position(&app, u).distance(center(c)) < 4.0);
        assert_eq!(outcomes_of(&app, u).len(), 3);
    }
}

#[test]
fn a_unit_whose_order_is_taken_back_lets_its_cells_go() {
    // Walking its first order, the unit is given a second and the game takes that back before
    // it is answered: the cancellation leaves it without a path. It claims nothing any more.
    let (mut app, map) = app();
    let unit = spawn(&mut app, Cell::new(2, 10));
    app.world_mut()
        .entity_mut(unit)
        .insert(PathRequest::to_cell(Cell::new(36, 10)));
    for _ in 0..60 {
        app.update();
    }
    assert!(
        app.world()
            .get::<PathProgress>(unit)
            .unwrap()
            .claimed()
            .count()
            > 0
    );
    app.world_mut()
        .entity_mut(unit)
        .insert(PathRequest::to_cell(Cell::new(36, 2)));
    app.world_mut().entity_mut(unit).remove::<PathRequest>();
    for _ in 0..3 {
        app.update();
    }
    assert_eq!(
        app.world().get::<PathStatus>(unit),
        Some(&PathStatus::Cancelled)
    );
    assert!(app.world().get::<NavPath>(unit).is_none());
    let progress = app.world().get::<PathProgress>(unit).unwrap();
    assert_eq!(progress.state, MoveState::Idle);
    assert_eq!(progress.claimed().count(), 0);
    let claims = app.world().resource::<Claims>();
    assert_eq!(claims.iter_claimed(map).count(), 0, "no cell claimed");
    assert!(claims.intent(unit).is_none());
    let here = position(&app, unit);
    let cell = Cell::new(here.x as i32, here.y as i32);
    assert_eq!(claims.moving_at(map, cell), None);
}

/// Every outcome of `unit`'s requests (the game's and the plugin's own), with their origins.
fn all_outcomes_of(app: &App, unit: Entity) -> Vec<(PathOrigin, OutcomeKind)> {
    let log = app.world().resource::<Log>();
    log.outcomes
        .iter()
        .filter(|o| o.entity == unit)
        .map(|o| (o.origin, o.kind))
        .collect()
}

fn pursuit(app: &App, unit: Entity) -> Option<Pursuit> {
    app.world().get::<Pursuit>(unit).copied()
}

#[test]
fn a_follower_keeps_within_range_of_a_moving_target() {
    let (mut app, _) = app();
    let range = 3.0;
    let target = spawn_walker(&mut app, Cell::new(4, 10), Cell::new(36, 14));
    let follower = spawn(&mut app, Cell::new(2, 2));
    app.world_mut()
        .entity_mut(follower)
        .insert(PathRequest::follow(target, range));
    // Once it has caught up, it stays in range while the target walks 33 tiles and stops;
    // close to the walking target, it walks at its pace (2.5 tiles a second, its own 4).
    let (mut caught_up, mut frames, mut in_range, mut paced) = (false, 0, 0, 0);
    let mut stops_while_target_walks = 0;
    for _ in 0..60 * 20 {
        app.update();
        let d = position(&app, follower).distance(position(&app, target));
        caught_up |= d <= range;
        if caught_up {
            frames += 1;
            in_range += usize::from(d <= range + 0.5);
        }
        let p = pursuit(&app, follower);
        if let Some(pace) = p.and_then(|p| p.pace) {
            assert!(pace > 1.0 && pace < 2.6, "paced at {pace}");
            paced += 1;
        }
        if !arrived(&app, target) {
            stops_while_target_walks = all_outcomes_of(&app, follower)
                .iter()
                .filter(|(o, _)| *o == PathOrigin::InRange)
                .count();
        }
    }
    assert_eq!(
        stops_while_target_walks, 0,
        "stopped while the target walked ({paced} frames at its pace)"
    );
    assert!(
        paced >= 60 * 5,
        "walked at the target's pace {paced} frames"
    );
    assert!(caught_up, "never caught up");
    assert!(
        in_range * 10 >= frames * 9,
        "in range {in_range} of {frames} frames"
    );
    // Both stand now: the follower within its range, stopped, and knowing it.
    let d = position(&app, follower).distance(position(&app, target));
    assert!(d <= range + 0.05, "{d}");
    assert!(arrived(&app, follower));
    assert!(pursuit(&app, follower).is_some_and(|p| p.in_range && p.target == target));
    // The game's one order; the rest were the plugin's: searches after the target and a stop.
    let all = all_outcomes_of(&app, follower);
    assert_eq!(outcomes_of(&app, follower).len(), 1, "{all:?}");
    assert!(
        all.iter().any(|(o, _)| *o == PathOrigin::Pursuit),
        "{all:?}"
    );
    assert!(
        all.len() <= 40,
        "it searched {} times in 20 s: {all:?}",
        all.len()
    );
    assert_eq!(
        app.world().get::<PathRequest>(follower).unwrap().goal,
        PathGoal::Entity { target, range },
        "the game's request stays as it was"
    );
}

#[test]
fn a_follower_goes_through_a_gap_a_stopped_unit_stands_in_not_round_the_wall() {
    let (mut app, map) = app();
    // A wall across the field at x = 20 (rows 2-17) with a gap on row 10; the way round its
    // ends is 28 tiles or more, through the gap 10.
    {
        let mut nav = app.world_mut().get_mut::<NavMap>(map).unwrap();
        for y in (2..18).filter(|&y| y != 10) {
            nav.set_walkable(Cell::new(20, y), false).unwrap();
        }
    }
    // A unit ordered into the gap stops there.
    let gap = Cell::new(20, 10);
    let plug = spawn(&mut app, Cell::new(19, 10));
    app.world_mut()
        .entity_mut(plug)
        .insert(PathRequest::to_cell(gap));
    for _ in 0..60 {
        app.update();
    }
    assert!(arrived(&app, plug), "the plug stands in the gap");
    let target = spawn(&mut app, Cell::new(25, 10));
    let follower = spawn(&mut app, Cell::new(14, 10));
    let range = 3.0;
    app.world_mut()
        .entity_mut(follower)
        .insert(PathRequest::follow(target, range));
    app.update();
    app.update();
    // Its path goes through the gap (at the price of a claimed cell), not round the wall.
    let path = app.world().get::<NavPath>(follower).expect("a path");
    assert!(path.cells.contains(&gap), "{:?}", path.cells);
    assert!(path.length < 14.0, "{}", path.length);
    // And the unit in the gap makes way: the follower is in range long before it could have
    // walked round the wall (28 tiles at 4 tiles a second: 7 s).
    let mut frames = 0;
    while position(&app, follower).distance(position(&app, target)) > range {
        app.update();
        frames += 1;
        assert!(frames < 60 * 5, "not in range after 5 s");
    }
}

#[test]
fn a_follower_stops_within_its_range_of_a_standing_target() {
    let (mut app, _) = app();
    let target = spawn(&mut app, Cell::new(30, 10));
    let follower = spawn(&mut app, Cell::new(2, 10));
    app.world_mut()
        .entity_mut(follower)
        .insert(PathRequest::follow(target, 6.0));
    for _ in 0..60 * 10 {
        app.update();
    }
    // It stopped a tile and a half inside its range (CLOSE_IN), not at the target's cell.
    let d = position(&app, follower).distance(position(&app, target));
    assert!((4.0..=4.55).contains(&d), "{d}");
    assert!(arrived(&app, follower));
    let all = all_outcomes_of(&app, follower);
    assert_eq!(
        all.last().map(|o| o.0),
        Some(PathOrigin::InRange),
        "{all:?}"
    );
    assert_eq!(all.len(), 2, "{all:?}");
    // The target steps closer: the follower stands.
    app.world_mut()
        .entity_mut(target)
        .insert(PathRequest::to_cell(Cell::new(29, 10)));
    for _ in 0..60 * 2 {
        app.update();
    }
    assert_eq!(all_outcomes_of(&app, follower).len(), 2);
    // Away, toward the edge of the range: it follows before the target is out of range.
    app.world_mut()
        .entity_mut(target)
        .insert(PathRequest::to_cell(Cell::new(36, 10)));
    for _ in 0..60 * 4 {
        app.update();
    }
    let d = position(&app, follower).distance(position(&app, target));
    assert!(d <= 5.05, "{d}");
    assert!(all_outcomes_of(&app, follower).len() > 2);
}

#[test]
fn followers_of_one_target_share_their_searches() {
    let (mut app, _) = app();
    let target = spawn(&mut app, Cell::new(34, 10));
    let followers: Vec<Entity> = (0..8)
        .map(|k| spawn(&mut app, Cell::new(2 + k % 2, 4 + k)))
        .collect();
    for &f in &followers {
        app.world_mut()
            .entity_mut(f)
            .insert(PathRequest::follow(target, 4.0));
    }
    for _ in 0..3 {
        app.update();
    }
    let log = app.world().resource::<Log>();
    let shared = log
        .outcomes
        .iter()
        .filter(|o| {
            matches!(
                o.kind,
                OutcomeKind::Found {
                    search: SearchKind::Shared,
                    ..
                }
            )
        })
        .count();
    assert_eq!(shared, followers.len(), "{:?}", log.outcomes);
}

#[test]
fn a_follower_whose_target_is_despawned_fails_once_and_takes_its_next_order() {
    let (mut app, _) = app();
    // The target walks east, slower than the follower, which catches up and keeps its pace.
    let target = spawn_walker(&mut app, Cell::new(8, 10), Cell::new(38, 10));
    let follower = spawn(&mut app, Cell::new(2, 10));
    let next = Cell::new(10, 2);
    app.world_mut().entity_mut(follower).insert((
        PathRequest::follow(target, 2.0),
        OrderQueue::new([PathGoal::Cell(next)]),
    ));
    for _ in 0..60 * 5 {
        app.update();
    }
    assert!(
        pursuit(&app, follower).is_some_and(|p| p.pace.is_some()),
        "at its target's pace"
    );
    app.world_mut().entity_mut(target).despawn();
    app.update();
    assert!(
        pursuit(&app, follower).is_none_or(|p| p.pace.is_none() && !p.in_range),
        "no pace kept after a target gone"
    );
    for _ in 0..60 * 8 {
        app.update();
    }
    let all = all_outcomes_of(&app, follower);
    let gone: Vec<_> = all
        .iter()
        .filter(|(_, k)| *k == OutcomeKind::Failed(PathFailure::TargetGone))
        .collect();
    assert_eq!(gone.len(), 1, "{all:?}");
    assert_eq!(gone[0].0, PathOrigin::Pursuit);
    assert!(arrived(&app, follower));
    assert!(position(&app, follower).distance(center(next)) < 0.1);
    // On its next order it is no follower: no pursuit says it is in range of anything.
    assert_eq!(pursuit(&app, follower), None);
    // A follow order given with its target gone fails at once, with the reason.
    app.world_mut()
        .entity_mut(follower)
        .insert(PathRequest::follow(target, 2.0));
    app.update();
    assert_eq!(
        outcomes_of(&app, follower).last(),
        Some(&OutcomeKind::Failed(PathFailure::TargetGone))
    );
    assert_eq!(
        app.world().get::<PathStatus>(follower),
        Some(&PathStatus::Failed(PathFailure::TargetGone))
    );
}

#[test]
fn a_follower_of_a_target_out_of_reach_fails_then_follows_once_it_can() {
    let (mut app, map) = app();
    // A pen of walls round (30..=34, 8..=12), the target inside.
    let pen: Vec<Cell> = (29..=35)
        .flat_map(|x| (7..=13).map(move |y| Cell::new(x, y)))
        .filter(|c| c.x == 29 || c.x == 35 || c.y == 7 || c.y == 13)
        .collect();
    {
        let mut nav = app.world_mut().get_mut::<NavMap>(map).unwrap();
        for &c in &pen {
            nav.set_walkable(c, false).unwrap();
        }
    }
    let target = spawn(&mut app, Cell::new(32, 10));
    let follower = spawn(&mut app, Cell::new(2, 10));
    app.world_mut()
        .entity_mut(follower)
        .insert(PathRequest::follow(target, 2.0));
    for _ in 0..60 {
        app.update();
    }
    assert_eq!(
        outcomes_of(&app, follower),
        vec![OutcomeKind::Failed(PathFailure::Unreachable)]
    );
    let tries = all_outcomes_of(&app, follower).len();
    assert!(tries <= 2, "it tried {tries} times while the target stood");
    // The pen opens and the target steps out: the follower follows.
    {
        let mut nav = app.world_mut().get_mut::<NavMap>(map).unwrap();
        nav.set_walkable(Cell::new(29, 10), false).ok();
        for &c in &pen {
            nav.set_walkable(c, true).unwrap();
        }
    }
    app.world_mut()
        .entity_mut(target)
        .insert(PathRequest::to_cell(Cell::new(26, 10)));
    for _ in 0..60 * 10 {
        app.update();
    }
    let d = position(&app, follower).distance(position(&app, target));
    assert!(d <= 2.05, "{d}: {:?}", all_outcomes_of(&app, follower));
    assert!(pursuit(&app, follower).is_some_and(|p| p.in_range));
}

#[test]
fn a_follow_range_that_is_not_a_number_fails() {
    let (mut app, _) = app();
    let target = spawn(&mut app, Cell::new(30, 10));
    let follower = spawn(&mut app, Cell::new(2, 10));
    for range in [f32::NAN, -1.0] {
        app.world_mut()
            .entity_mut(follower)
            .insert(PathRequest::follow(target, range));
        app.update();
        assert_eq!(
            outcomes_of(&app, follower).last(),
            Some(&OutcomeKind::Failed(PathFailure::BadRange))
        );
    }
}

#[test]
fn queued_waypoints_go_on_after_a_failed_leg() {
    let (mut app, map) = app();
    let walled = Cell::new(20, 10);
    app.world_mut()
        .get_mut::<NavMap>(map)
        .unwrap()
        .set_walkable(walled, false)
        .unwrap();
    let unit = spawn(&mut app, Cell::new(2, 10));
    let (a, c) = (Cell::new(10, 10), Cell::new(30, 4));
    app.world_mut().entity_mut(unit).insert((
        PathRequest::to_cell(a),
        OrderQueue::new([PathGoal::Cell(walled), PathGoal::Cell(c)]),
    ));
    for _ in 0..60 * 12 {
        app.update();
    }
    assert_eq!(
        outcomes_of(&app, unit)
            .iter()
            .map(|k| matches!(k, OutcomeKind::Found { .. }))
            .collect::<Vec<_>>(),
        vec![true, false, true]
    );
    assert_eq!(
        outcomes_of(&app, unit)[1],
        OutcomeKind::Failed(PathFailure::GoalBlocked)
    );
    assert!(arrived(&app, unit));
    assert!(position(&app, unit).distance(center(c)) < 0.1);
}

#[test]
fn a_patrol_whose_route_is_walled_off_keeps_to_the_rest_without_spinning() {
    let (mut app, map) = app();
    let unit = spawn(&mut app, Cell::new(4, 10));
    let (a, b, c) = (Cell::new(4, 10), Cell::new(34, 10), Cell::new(4, 3));
    app.world_mut().entity_mut(unit).insert((
        PathRequest::to_cell(b),
        OrderQueue::patrol([PathGoal::Cell(c), PathGoal::Cell(a)]),
    ));
    app.update();
    // b is walled in before the unit gets there.
    {
        let mut nav = app.world_mut().get_mut::<NavMap>(map).unwrap();
        for x in 31..=37 {
            for y in 7..=13 {
                if x == 31 || x == 37 || y == 7 || y == 13 {
                    nav.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
    }
    for _ in 0..60 * 30 {
        app.update();
    }
    let kinds = outcomes_of(&app, unit);
    let all = all_outcomes_of(&app, unit);
    assert!(
        all.contains(&(
            PathOrigin::GridEdit,
            OutcomeKind::Failed(PathFailure::Unreachable)
        )),
        "{all:?}"
    );
    // It patrols between a and c: a handful of orders in 30 s, not one every frame.
    let queue = app.world().get::<OrderQueue>(unit).unwrap();
    assert!(!queue.goals.contains(&PathGoal::Cell(b)), "{queue:?}");
    assert!(kinds.len() <= 60, "{} orders: {kinds:?}", kinds.len());
    let found = kinds
        .iter()
        .filter(|k| matches!(k, OutcomeKind::Found { .. }))
        .count();
    assert!(found >= 4, "{kinds:?}");
}

#[test]
fn an_army_stopped_at_once_is_answered_in_the_frame_without_searching() {
    let (mut app, _) = app();
    // 200 units, more than a frame's searches (32 by default) many times over.
    let units: Vec<Entity> = (0..200)
        .map(|i| spawn(&mut app, Cell::new(i % 40, i / 40 * 2)))
        .collect();
    for &unit in &units {
        stop(app.world_mut().entity_mut(unit));
    }
    app.update();
    let log = &app.world().resource::<Log>().outcomes;
    assert_eq!(log.len(), units.len());
    for outcome in log {
        assert!(
            matches!(outcome.kind, OutcomeKind::Found { length, .. } if length == 0.0),
            "{outcome:?}"
        );
    }
    assert!(app.world().resource::<PendingRequests>().is_empty());
    for &unit in &units {
        let path = app.world().get::<NavPath>(unit).unwrap();
        assert_eq!(path.cells.len(), 1);
    }
}
