//! Group orders as an army gets them: lanes down a road, and formations at the target, through
//! the public API as a game gives them.

use std::collections::BTreeMap;
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{ClassId, MoveState, PathProgress};

/// A 90 x 31 map, one tile a world unit: two open fields joined by a road three tiles wide
/// (rows 14-16) from x 25 to x 65. 60 frames a second.
fn new_app(lanes: bool) -> App {
    let mut grid = NavGrid::new(90, 31).unwrap();
    for x in 25..65 {
        for y in (0..31).filter(|y| !(14..=16).contains(y)) {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
        }
    }
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .insert_resource(TilepathSettings {
            lanes,
            ..Default::default()
        })
        .add_plugins(TilepathPlugins::default());
    app.world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
    app.update();
    app
}

/// `n` units in a block of rows of six with its corner at `at`.
fn army(app: &mut App, at: Vec2, n: u32) -> Vec<(Entity, Vec2)> {
    (0..n)
        .map(|k| {
            let p = at + Vec2::new((k / 6) as f32, (k % 6) as f32);
            let e = app
                .world_mut()
                .spawn((Transform::from_xyz(p.x, p.y, 0.0), Mover::default()))
                .id();
            (e, p)
        })
        .collect()
}

/// The app's one navigation map, as a game's order code reads it.
fn nav_map(app: &mut App) -> NavMap {
    app.world_mut()
        .query::<&NavMap>()
        .single(app.world())
        .unwrap()
        .clone()
}

fn order(app: &mut App, order: GroupOrder, units: &[(Entity, Vec2)]) {
    let map = nav_map(app);
    for (e, request) in order.requests(&map, units) {
        app.world_mut().entity_mut(e).insert(request);
    }
}

/// Frames until every path is delivered (at most 30).
fn delivered_paths(app: &mut App, units: &[(Entity, Vec2)]) -> Vec<Vec<Cell>> {
    for _ in 0..30 {
        app.update();
        let found = units
            .iter()
            .all(|&(e, _)| app.world().get::<PathStatus>(e) == Some(&PathStatus::Found));
        if found {
            break;
        }
    }
    units
        .iter()
        .map(|&(e, _)| {
            let path = app.world().get::<NavPath>(e).expect("a path");
            path.cells.clone()
        })
        .collect()
}

/// Of the paths' cells in the middle of the road, how many lie in each of its rows.
fn road_rows(paths: &[Vec<Cell>]) -> BTreeMap<i32, usize> {
    let mut rows = BTreeMap::new();
    for p in paths {
        for c in p.iter().filter(|c| c.x == 45) {
            *rows.entry(c.y).or_insert(0) += 1;
        }
    }
    rows
}

#[test]
fn an_army_walks_a_road_in_three_lanes_in_its_own_order() {
    let mut app = new_app(true);
    let units = army(&mut app, Vec2::new(6.5, 12.5), 30);
    order(&mut app, GroupOrder::new(Vec2::new(80.5, 15.5)), &units);
    let paths = delivered_paths(&mut app, &units);
    let rows = road_rows(&paths);
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), vec![14, 15, 16]);
    // Members a tile apart across the way share a lane: rows hold a fifth of the army or more.
    assert!(rows.values().all(|&n| n >= 6), "{rows:?}");
    // Each path is a walk: steps between neighbours, every cell walkable.
    let grid = nav_map(&mut app).grid().clone();
    for p in &paths {
        assert!(p.windows(2).all(|w| grid.can_step(w[0], w[1])), "{p:?}");
    }
    // Units standing north (left, going east) walk the north lane, most of them (a lane is its
    // slot's side, and a blob's slots go to the units nearest them), none the south one.
    let north: Vec<i32> = units
        .iter()
        .zip(&paths)
        .filter(|((_, at), _)| at.y > 16.0)
        .map(|(_, p)| p.iter().find(|c| c.x == 45).unwrap().y)
        .collect();
    let in_north = north.iter().filter(|&&y| y == 16).count();
    assert!(
        4 * in_north >= 3 * north.len() && !north.contains(&14),
        "{north:?}"
    );
    // Without lanes the army funnels into the tree's corridor: one row holds most of it.
    let mut app = new_app(false);
    let units = army(&mut app, Vec2::new(6.5, 12.5), 30);
    order(&mut app, GroupOrder::new(Vec2::new(80.5, 15.5)), &units);
    let rows = road_rows(&delivered_paths(&mut app, &units));
    assert!(rows.values().any(|&n| n >= 20), "{rows:?}");
}

/// Walks until every unit has arrived (at most 60 s); the units' positions then.
fn walk(app: &mut App, units: &[(Entity, Vec2)]) -> Vec<Vec2> {
    for _ in 0..3600 {
        app.update();
        let all = units.iter().all(|&(e, _)| {
            app.world()
                .get::<PathProgress>(e)
                .is_some_and(|p| p.state == MoveState::Arrived)
        });
        if all {
            break;
        }
    }
    units
        .iter()
        .map(|&(e, _)| {
            let tf = app.world().get::<Transform>(e).unwrap();
            tf.translation.truncate()
        })
        .collect()
}

fn centre(points: &[Vec2]) -> Vec2 {
    points.iter().copied().sum::<Vec2>() / points.len() as f32
}

/// The median unit's change of its offset from the group's centre between `start` and `end`.
fn median_shape_change(start: &[Vec2], end: &[Vec2]) -> f32 {
    let (c0, c1) = (centre(start), centre(end));
    let mut changes: Vec<f32> = start
        .iter()
        .zip(end)
        .map(|(s, e)| ((*e - c1) - (*s - c0)).length())
        .collect();
    changes.sort_by(f32::total_cmp);
    changes[changes.len() / 2]
}

#[test]
fn keep_shape_brings_the_group_through_the_road_as_it_stood() {
    let mut app = new_app(true);
    let units = army(&mut app, Vec2::new(6.5, 12.5), 24);
    let order_ = GroupOrder::new(Vec2::new(78.5, 15.5)).with_formation(Formation::KeepShape);
    order(&mut app, order_, &units);
    let end = walk(&mut app, &units);
    let start: Vec<Vec2> = units.iter().map(|u| u.1).collect();
    let change = median_shape_change(&start, &end);
    assert!(change <= 1.0, "{change}");
    let c1 = centre(&end);
    assert!(c1.distance(Vec2::new(78.5, 15.5)) < 1.5, "{c1}");
}

#[test]
fn a_line_stands_square_to_its_facing() {
    let mut app = new_app(true);
    let units = army(&mut app, Vec2::new(70.5, 3.5), 24);
    // Facing north: ranks run east-west, wide and shallow.
    let order_ = GroupOrder::new(Vec2::new(76.5, 24.5))
        .with_formation(Formation::Line)
        .facing(Vec2::Y);
    order(&mut app, order_, &units);
    let end = walk(&mut app, &units);
    let (lo, hi) = end
        .iter()
        .fold((Vec2::INFINITY, Vec2::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(*p), hi.max(*p))
        });
    let size = hi - lo;
    assert!(size.x >= 8.0 && size.y <= 3.0, "{size}");
    // A second later every unit faces north (its x axis turned to +y).
    for _ in 0..60 {
        app.update();
    }
    for &(e, _) in &units {
        let tf = app.world().get::<Transform>(e).unwrap();
        let ahead = (tf.rotation * Vec3::X).truncate();
        assert!(ahead.dot(Vec2::Y) > 0.99, "{ahead}");
    }
}

/// Seconds between the first and the last unit's arrival, and the median change of the units'
/// offsets from the group's centre, for a KeepShape order across the road with every other
/// unit half as fast again as the rest (6 tiles a second against 4), at the slowest's pace or
/// each at its own speed.
fn mixed_speeds(pace: bool) -> (f32, f32) {
    let mut app = new_app(true);
    let units = army(&mut app, Vec2::new(6.5, 12.5), 24);
    for (k, &(e, _)) in units.iter().enumerate() {
        if k % 2 == 0 {
            app.world_mut().get_mut::<Mover>(e).unwrap().speed = 6.0;
        }
    }
    let mut order_ = GroupOrder::new(Vec2::new(78.5, 15.5)).with_formation(Formation::KeepShape);
    if pace {
        order_ = order_.at_pace(4.0);
    }
    order(&mut app, order_, &units);
    let mut arrived = vec![None; units.len()];
    for frame in 0..3600 {
        app.update();
        for (k, &(e, _)) in units.iter().enumerate() {
            let there = app
                .world()
                .get::<PathProgress>(e)
                .is_some_and(|p| p.state == MoveState::Arrived);
            if there && arrived[k].is_none() {
                arrived[k] = Some(frame);
            }
        }
        if arrived.iter().all(Option::is_some) {
            break;
        }
    }
    let frames: Vec<i32> = arrived.iter().map(|a| a.expect("arrived")).collect();
    let spread = (frames.iter().max().unwrap() - frames.iter().min().unwrap()) as f32 / 60.0;
    let end: Vec<Vec2> = units
        .iter()
        .map(|&(e, _)| {
            app.world()
                .get::<Transform>(e)
                .unwrap()
                .translation
                .truncate()
        })
        .collect();
    let start: Vec<Vec2> = units.iter().map(|u| u.1).collect();
    (spread, median_shape_change(&start, &end))
}

#[test]
fn a_group_at_its_slowest_units_pace_arrives_together() {
    let (own, own_change) = mixed_speeds(false);
    let (paced, paced_change) = mixed_speeds(true);
    assert!(
        paced * 2.0 <= own,
        "arrival spread {paced} s at the pace, {own} s each at its own speed"
    );
    assert!(
        paced_change <= 1.0,
        "{paced_change} (own speeds: {own_change})"
    );
}

#[test]
fn wide_units_get_slots_their_class_can_stand_on() {
    let mut app = new_app(true);
    // Twelve wide bodies (a footprint of one ring round their cell) on the west field.
    let tanks: Vec<(Entity, Vec2)> = (0..12)
        .map(|k| {
            let p = Vec2::new(4.5 + (k % 4) as f32 * 2.0, 4.5 + (k / 4) as f32 * 2.0);
            let e = app
                .world_mut()
                .spawn((
                    Transform::from_xyz(p.x, p.y, 0.0),
                    Mover::default(),
                    NavAgent { radius: 0.9 },
                ))
                .id();
            (e, p)
        })
        .collect();
    for _ in 0..3 {
        app.update();
    }
    let map = nav_map(&mut app);
    let classes: Vec<(Entity, Vec2, ClassId)> = tanks
        .iter()
        .map(|&(e, p)| (e, p, *app.world().get::<ClassId>(e).unwrap()))
        .collect();
    let class = classes[0].2;
    assert_ne!(class, ClassId::DEFAULT);
    let grid = map.grid_of(class);
    // A line against the wall at x = 25, facing it.
    let order = GroupOrder::new(Vec2::new(24.5, 6.5))
        .with_formation(Formation::Line)
        .facing(Vec2::X);
    let slot = |r: &PathRequest| match r.goal {
        PathGoal::Slot { slot, .. } => slot,
        _ => panic!("not a slot: {r:?}"),
    };
    let shared: Vec<Cell> = order
        .requests(&map, &tanks)
        .iter()
        .map(|r| slot(&r.1))
        .collect();
    assert!(
        shared.iter().any(|&c| !grid.is_walkable(c)),
        "some slot on the shared grid should be too near the wall for a wide body: {shared:?}"
    );
    let by_class: Vec<Cell> = order
        .requests_by_class(&map, &classes)
        .iter()
        .map(|r| slot(&r.1))
        .collect();
    assert!(
        by_class.iter().all(|&c| grid.is_walkable(c)),
        "{by_class:?}"
    );
    let distinct: std::collections::HashSet<Cell> = by_class.iter().copied().collect();
    assert_eq!(distinct.len(), by_class.len(), "{by_class:?}");
}
