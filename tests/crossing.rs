//! Units crossing links with the plugin: a unit ordered across a wall with a teleporter in it
//! walks to the entry, waits there the link's time, comes out at the exit and walks on, never
//! inside the wall, with one `EnteredLink` and one `LeftLink`; a group crosses and every unit
//! arrives; a door closed before a unit reaches it sends it round another way; a gate for one
//! key lets its holders through and sends the others round.

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{Cell, Link, LinkId, LinkKeys, NavGrid, overlaps_blocked};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    EnteredLink, HeldKeys, LeftLink, MoveState, NavLink, NavPath, PathProgress, PathQueue,
    SearchKind,
};

#[derive(Resource, Default)]
struct Log {
    entered: Vec<(EnteredLink, u32)>,
    left: Vec<(LeftLink, u32)>,
    frame: u32,
}

fn app(grid: NavGrid, links: &[Link]) -> (App, Vec<LinkId>) {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .add_plugins(TilepathPlugins::default())
        .init_resource::<Log>()
        .add_observer(|e: On<EnteredLink>, mut log: ResMut<Log>| {
            let frame = log.frame;
            log.entered.push((*e, frame));
        })
        .add_observer(|e: On<LeftLink>, mut log: ResMut<Log>| {
            let frame = log.frame;
            log.left.push((*e, frame));
        });
    let mut map = NavMap::new(grid, Vec2::ZERO, Vec2::ONE);
    let ids = links.iter().map(|&l| map.add_link(l).unwrap()).collect();
    app.world_mut().spawn(map);
    app.update();
    (app, ids)
}

fn map(app: &mut App) -> Mut<'_, NavMap> {
    let mut maps = app.world_mut().query::<&mut NavMap>();
    maps.single_mut(app.world_mut()).unwrap()
}

fn unit(app: &mut App, cell: Cell, goal: Cell) -> Entity {
    let p = map(app).cell_to_world(cell);
    app.world_mut()
        .spawn((
            Transform::from_xyz(p.x, p.y, 0.0),
            Mover::default(),
            NavAgent::default(),
            PathRequest::to_cell(goal),
        ))
        .id()
}

/// The unit's position in grid space.
fn at(app: &mut App, e: Entity) -> Vec2 {
    let p = app
        .world()
        .get::<Transform>(e)
        .unwrap()
        .translation
        .truncate();
    map(app).world_to_grid(p)
}

fn arrived(app: &App, e: Entity) -> bool {
    app.world().get::<PathProgress>(e).unwrap().state == MoveState::Arrived
}

/// A wall down column 15 of a 30 x 12 map, open at `gap` rows.
fn wall(gaps: &[i32]) -> NavGrid {
    let mut g = NavGrid::new(30, 12).unwrap();
    for y in (0..12).filter(|y| !gaps.contains(y)) {
        g.set_walkable(Cell::new(15, y), false).unwrap();
    }
    g
}

fn run(app: &mut App, frames: u32, units: &[Entity], grid: &NavGrid, track: &mut [Vec<Vec2>]) {
    for _ in 0..frames {
        app.world_mut().resource_mut::<Log>().frame += 1;
        app.update();
        for (k, &e) in units.iter().enumerate() {
            let p = at(app, e);
            assert!(
                !overlaps_blocked(grid, p, 0.3 - 1e-3),
                "unit {k} in the wall at {p}"
            );
            track[k].push(p);
        }
        if units.iter().all(|&e| arrived(app, e)) {
            break;
        }
    }
}

#[test]
fn a_unit_crosses_a_teleporter_through_a_wall() {
    let grid = wall(&[]);
    let teleporter = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 2.0);
    let (mut app, ids) = app(grid.clone(), &[teleporter]);
    let u = unit(&mut app, Cell::new(3, 6), Cell::new(27, 6));
    let mut track = vec![Vec::new()];
    run(&mut app, 60 * 20, &[u], &grid, &mut track);
    assert!(arrived(&app, u), "not arrived: at {}", at(&mut app, u));
    assert_eq!(grid.cell_at(at(&mut app, u)), Cell::new(27, 6));
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), 1, "{:?}", log.entered);
    assert_eq!(log.left.len(), 1, "{:?}", log.left);
    let ((entered, t0), (left, t1)) = (log.entered[0], log.left[0]);
    assert_eq!((entered.entity, entered.link), (u, ids[0]));
    assert_eq!(
        (entered.from, entered.to),
        (Cell::new(13, 6), Cell::new(17, 6))
    );
    assert_eq!(
        (left.from, left.to, left.link),
        (entered.from, entered.to, ids[0])
    );
    // 2 tiles at 4 tiles a second: half a second, 30 frames.
    assert!((entered.seconds - 0.5).abs() < 1e-6);
    assert!(
        (29..=31).contains(&(t1 - t0)),
        "crossed in {} frames",
        t1 - t0
    );
    // It never walked the 4 tiles between the ends: one frame at the entry, the next at the exit.
    let track = &track[0];
    assert!(
        track.iter().all(|p| p.x < 14.0 || p.x > 17.0),
        "walked between the ends"
    );
    let jump = track
        .windows(2)
        .filter(|w| w[0].distance(w[1]) > 1.0)
        .count();
    assert_eq!(jump, 1);
}

#[test]
fn a_group_crosses_a_teleporter_and_every_unit_arrives() {
    let grid = wall(&[]);
    let teleporter = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 1.0);
    let (mut app, _) = app(grid.clone(), &[teleporter]);
    let units: Vec<Entity> = (0..6)
        .map(|k| {
            unit(
                &mut app,
                Cell::new(3 + k % 3, 4 + 2 * (k / 3)),
                Cell::new(24 + k % 3, 4 + 2 * (k / 3)),
            )
        })
        .collect();
    let mut track = vec![Vec::new(); units.len()];
    run(&mut app, 60 * 40, &units, &grid, &mut track);
    for (k, &e) in units.iter().enumerate() {
        assert!(
            arrived(&app, e),
            "unit {k} not arrived: at {}",
            at(&mut app, e)
        );
        assert!(at(&mut app, e).x > 20.0, "unit {k} arrived short");
    }
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), units.len());
    assert_eq!(log.left.len(), units.len());
}

#[test]
fn a_door_closed_before_the_unit_reaches_it_sends_it_round() {
    let grid = wall(&[0]);
    let door = Link::two_way(Cell::new(14, 8), Cell::new(16, 8), 1.0);
    let (mut app, ids) = app(grid.clone(), &[door]);
    let u = unit(&mut app, Cell::new(3, 8), Cell::new(27, 8));
    let mut track = vec![Vec::new()];
    // A second on its way to the door, then the door shuts.
    run(&mut app, 60, &[u], &grid, &mut track);
    map(&mut app).set_link_open(ids[0], false).unwrap();
    run(&mut app, 60 * 30, &[u], &grid, &mut track);
    assert!(arrived(&app, u), "not arrived: at {}", at(&mut app, u));
    assert_eq!(grid.cell_at(at(&mut app, u)), Cell::new(27, 8));
    assert!(app.world().resource::<Log>().entered.is_empty());
    // Round through the gap at the top.
    assert!(
        track[0]
            .iter()
            .any(|p| p.y < 1.0 && (p.x - 15.5).abs() < 0.5)
    );
}

#[test]
fn link_entities_follow_their_component_and_bad_ones_are_left_out() {
    let (mut app, _) = app(wall(&[]), &[]);
    let map_entity = {
        let mut maps = app.world_mut().query_filtered::<Entity, With<NavMap>>();
        maps.single(app.world()).unwrap()
    };
    let door = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 1.0);
    let links = |app: &mut App| map(app).grid().links().map(|(_, l)| *l).collect::<Vec<_>>();
    let placed = app
        .world_mut()
        .spawn(NavLink {
            map: map_entity,
            link: door,
        })
        .id();
    // Off the grid, and on an entity that is no map: warnings, nothing added, no panic.
    let off = Link::two_way(Cell::new(13, 6), Cell::new(40, 6), 1.0);
    app.world_mut().spawn(NavLink {
        map: map_entity,
        link: off,
    });
    app.world_mut().spawn(NavLink {
        map: placed,
        link: door,
    });
    app.update();
    assert_eq!(links(&mut app), [door]);
    // Moved: the old link goes, the new one comes.
    let moved = Link::one_way(Cell::new(13, 2), Cell::new(17, 2), 3.0);
    app.world_mut().get_mut::<NavLink>(placed).unwrap().link = moved;
    app.update();
    assert_eq!(links(&mut app), [moved]);
    // A unit crosses it one way only.
    let u = unit(&mut app, Cell::new(3, 2), Cell::new(27, 2));
    let grid = map(&mut app).grid().clone();
    let mut track = vec![Vec::new()];
    run(&mut app, 60 * 20, &[u], &grid, &mut track);
    assert!(arrived(&app, u));
    assert!(!grid.reaches(Cell::new(27, 2), Cell::new(3, 2)));
    app.world_mut().entity_mut(placed).remove::<NavLink>();
    app.update();
    assert!(links(&mut app).is_empty());
}

#[test]
fn a_link_entity_waits_for_its_map_to_be_built() {
    let (mut app, _) = app(wall(&[]), &[]);
    let later = app.world_mut().spawn_empty().id();
    let door = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 1.0);
    app.world_mut().spawn(NavLink {
        map: later,
        link: door,
    });
    app.update();
    app.update();
    app.world_mut()
        .entity_mut(later)
        .insert(NavMap::new(wall(&[]), Vec2::ZERO, Vec2::ONE));
    app.update();
    let grid = app.world().get::<NavMap>(later).unwrap().grid();
    assert_eq!(grid.links().map(|(_, l)| *l).collect::<Vec<_>>(), [door]);
}

#[test]
fn a_link_of_capacity_one_takes_one_unit_at_a_time() {
    let grid = wall(&[]);
    let ladder = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 2.0).with_capacity(1);
    let (mut app, _) = app(grid.clone(), &[ladder]);
    let units: Vec<Entity> = (0..5)
        .map(|k| {
            unit(
                &mut app,
                Cell::new(4 + k % 3, 4 + 2 * (k / 3)),
                Cell::new(24 + k % 3, 4 + 2 * (k / 3)),
            )
        })
        .collect();
    let mut track = vec![Vec::new(); units.len()];
    run(&mut app, 60 * 60, &units, &grid, &mut track);
    for (k, &e) in units.iter().enumerate() {
        assert!(
            arrived(&app, e),
            "unit {k} not arrived: at {}",
            at(&mut app, e)
        );
    }
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), units.len());
    // Every crossing's half second ends before the next one begins.
    let mut spans: Vec<(u32, u32)> = log
        .entered
        .iter()
        .map(|&(e, t0)| {
            let t1 = log
                .left
                .iter()
                .find(|(l, _)| l.entity == e.entity)
                .unwrap()
                .1;
            (t0, t1)
        })
        .collect();
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[1].0 >= w[0].1, "two units inside at once: {spans:?}");
    }
}

#[test]
fn a_new_order_given_inside_a_link_is_walked_from_its_exit() {
    let grid = wall(&[]);
    let teleporter = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 4.0);
    let (mut app, _) = app(grid.clone(), &[teleporter]);
    let u = unit(&mut app, Cell::new(3, 6), Cell::new(27, 6));
    let mut track = vec![Vec::new()];
    while app.world().resource::<Log>().entered.is_empty() {
        run(&mut app, 1, &[u], &grid, &mut track);
        assert!(track[0].len() < 60 * 20, "never entered the link");
    }
    // Inside (a second's crossing): ordered back west.
    run(&mut app, 10, &[u], &grid, &mut track);
    app.world_mut()
        .entity_mut(u)
        .insert(PathRequest::to_cell(Cell::new(3, 3)));
    run(&mut app, 60 * 30, &[u], &grid, &mut track);
    assert!(arrived(&app, u), "not arrived: at {}", at(&mut app, u));
    assert_eq!(grid.cell_at(at(&mut app, u)), Cell::new(3, 3));
    // Out at the east end, then back through.
    let log = app.world().resource::<Log>();
    let ends: Vec<Cell> = log.left.iter().map(|(l, _)| l.to).collect();
    assert_eq!(ends, [Cell::new(17, 6), Cell::new(13, 6)]);
}

#[test]
fn a_new_order_given_halfway_along_a_walked_link_is_searched_from_its_exit() {
    // A river three cells wide, and a bridge over it walked in two seconds at the default
    // speed: halfway over, the unit stands above blocked cells.
    let mut grid = NavGrid::new(30, 12).unwrap();
    for x in 14..=16 {
        for y in 0..12 {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
        }
    }
    let bridge = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 8.0).walked();
    let (mut app, _) = app(grid.clone(), &[bridge]);
    let u = unit(&mut app, Cell::new(3, 6), Cell::new(27, 6));
    for _ in 0..60 * 20 {
        app.update();
        if !app.world().resource::<Log>().entered.is_empty() {
            break;
        }
    }
    for _ in 0..45 {
        app.update();
    }
    let halfway = at(&mut app, u);
    assert!(
        !grid.is_walkable(grid.cell_at(halfway)),
        "over the river: {halfway}"
    );
    app.world_mut()
        .entity_mut(u)
        .insert(PathRequest::to_cell(Cell::new(27, 2)));
    for _ in 0..60 * 20 {
        app.update();
        if arrived(&app, u) {
            break;
        }
    }
    assert_eq!(
        app.world().get::<PathStatus>(u),
        Some(&PathStatus::Found),
        "its new order searched from the far bank"
    );
    assert!(arrived(&app, u), "not arrived: at {}", at(&mut app, u));
    assert_eq!(grid.cell_at(at(&mut app, u)), Cell::new(27, 2));
    let log = app.world().resource::<Log>();
    let ends: Vec<Cell> = log.left.iter().map(|(l, _)| l.to).collect();
    assert_eq!(ends, [Cell::new(17, 6)]);
}

#[test]
fn a_unit_whose_new_order_fails_inside_a_link_comes_out_and_frees_its_place() {
    let grid = wall(&[]);
    let ladder = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 8.0).with_capacity(1);
    let (mut app, _) = app(grid.clone(), &[ladder]);
    let first = unit(&mut app, Cell::new(10, 6), Cell::new(24, 6));
    let mut track = vec![Vec::new()];
    while app.world().resource::<Log>().entered.is_empty() {
        run(&mut app, 1, &[first], &grid, &mut track);
        assert!(track[0].len() < 60 * 20, "never entered the link");
    }
    // A second unit on its way to the same ladder, and the first one's new order, into the
    // wall, fails inside it.
    let second = unit(&mut app, Cell::new(9, 4), Cell::new(24, 4));
    app.world_mut()
        .entity_mut(first)
        .insert(PathRequest::to_cell(Cell::new(15, 2)));
    let mut track = vec![Vec::new(), Vec::new()];
    run(&mut app, 5, &[first, second], &grid, &mut track);
    assert!(matches!(
        app.world().get::<PathStatus>(first),
        Some(PathStatus::Failed(_))
    ));
    assert_eq!(
        grid.cell_at(at(&mut app, first)),
        Cell::new(17, 6),
        "out at the exit"
    );
    run(&mut app, 60 * 20, &[second], &grid, &mut track[1..]);
    assert!(
        arrived(&app, second),
        "the second unit was let in: at {}",
        at(&mut app, second)
    );
    let log = app.world().resource::<Log>();
    let crossed: Vec<Entity> = log.left.iter().map(|(l, _)| l.entity).collect();
    assert_eq!(crossed, [first, second]);
}

#[test]
fn a_gate_for_one_key_lets_its_holders_through_and_sends_the_others_round() {
    const BLUE: LinkKeys = LinkKeys::key(0);
    let grid = wall(&[0]);
    let gate = Link::two_way(Cell::new(14, 8), Cell::new(16, 8), 1.0).for_keys(BLUE);
    let (mut app, ids) = app(grid.clone(), &[gate]);
    let blue = unit(&mut app, Cell::new(3, 8), Cell::new(27, 8));
    app.world_mut().entity_mut(blue).insert(HeldKeys(BLUE));
    let red = unit(&mut app, Cell::new(3, 9), Cell::new(27, 9));
    let mut track = vec![Vec::new(); 2];
    run(&mut app, 60 * 30, &[blue, red], &grid, &mut track);
    for e in [blue, red] {
        assert!(arrived(&app, e), "not arrived: at {}", at(&mut app, e));
    }
    // Blue through the gate, red round through the gap at the top.
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), 1, "{:?}", log.entered);
    assert_eq!(
        (log.entered[0].0.entity, log.entered[0].0.link),
        (blue, ids[0])
    );
    assert!(track[0].iter().all(|p| p.y > 2.0), "blue went round");
    assert!(
        track[1]
            .iter()
            .any(|p| p.y < 1.0 && (p.x - 15.5).abs() < 0.5),
        "red did not go round"
    );
    // With the gap shut, red has no way: its request fails (blue's still finds the gate).
    map(&mut app).set_walkable(Cell::new(15, 0), false).unwrap();
    app.update();
    for (e, goal) in [(red, Cell::new(3, 9)), (blue, Cell::new(3, 8))] {
        app.world_mut()
            .entity_mut(e)
            .insert(PathRequest::to_cell(goal));
    }
    for _ in 0..30 {
        app.update();
    }
    let status = |app: &App, e: Entity| *app.world().get::<PathStatus>(e).unwrap();
    assert!(
        matches!(status(&app, red), PathStatus::Failed(_)),
        "{:?}",
        status(&app, red)
    );
    assert!(
        matches!(status(&app, blue), PathStatus::Found),
        "{:?}",
        status(&app, blue)
    );
}

#[test]
fn a_door_opened_far_away_shortens_the_way_of_the_units_it_helps_only() {
    let grid = wall(&[0]);
    let door = Link::two_way(Cell::new(14, 10), Cell::new(16, 10), 1.0).closed();
    let (mut app, ids) = app(grid.clone(), &[door]);
    // East across the wall, round through the gap at the top; and a unit that stays west.
    let across = unit(&mut app, Cell::new(3, 10), Cell::new(27, 10));
    let west = unit(&mut app, Cell::new(3, 4), Cell::new(10, 2));
    let mut track = vec![Vec::new(); 2];
    run(&mut app, 60, &[across, west], &grid, &mut track);
    let ticket = |app: &App, e: Entity| app.world().get::<NavPath>(e).unwrap().ticket;
    let tickets = (ticket(&app, across), ticket(&app, west));
    // A second on its way north: far from the door's ends when it opens.
    let p = at(&mut app, across);
    assert!(p.distance(Vec2::new(14.5, 10.5)) > 5.0, "at {p}");
    map(&mut app).set_link_open(ids[0], true).unwrap();
    run(&mut app, 60 * 30, &[across, west], &grid, &mut track);
    assert!(
        arrived(&app, across),
        "not arrived: at {}",
        at(&mut app, across)
    );
    assert_ne!(
        ticket(&app, across),
        tickets.0,
        "the unit the door helps searched again"
    );
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), 1, "{:?}", log.entered);
    assert_eq!(log.entered[0].0.entity, across);
    assert!(track[0].iter().all(|p| p.y > 1.0), "went round by the gap");
    // The door is no use to the unit that stays west: it kept its path.
    assert_eq!(ticket(&app, west), tickets.1);
}

#[test]
fn a_long_request_goes_through_the_region_map_and_its_teleporter() {
    // 160 tiles of map, a wall down the middle, a teleporter through it: far beyond the
    // distance past which requests go through the region map. A strip of dearer ground: a
    // grid of two terrains, where jump point search does not run.
    let mut grid = NavGrid::new(160, 40).unwrap();
    for y in 0..40 {
        grid.set_walkable(Cell::new(80, y), false).unwrap();
    }
    for x in 0..160 {
        grid.set_terrain(Cell::new(x, 0), 3).unwrap();
    }
    let teleporter = Link::two_way(Cell::new(70, 20), Cell::new(90, 20), 1.0);
    let (mut app, ids) = app(grid.clone(), &[teleporter]);
    // The region map is built on a worker: wait for it.
    let map_entity = {
        let mut maps = app.world_mut().query_filtered::<Entity, With<NavMap>>();
        maps.single(app.world()).unwrap()
    };
    let mut frames = 0;
    while app
        .world()
        .resource::<PathQueue>()
        .region_map(map_entity)
        .is_none()
    {
        std::thread::sleep(Duration::from_millis(5));
        app.update();
        frames += 1;
        assert!(frames < 2000, "no region map");
    }
    let u = unit(&mut app, Cell::new(2, 20), Cell::new(157, 20));
    let mut track = vec![Vec::new()];
    run(&mut app, 60 * 60, &[u], &grid, &mut track);
    assert!(arrived(&app, u), "not arrived: at {}", at(&mut app, u));
    let path = app.world().get::<NavPath>(u).unwrap();
    assert_eq!(path.search, SearchKind::Hierarchical);
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), 1, "{:?}", log.entered);
    assert_eq!(log.entered[0].0.link, ids[0]);
}

#[test]
fn a_unit_ordered_onto_a_teleporter_exit_crosses_once_and_arrives() {
    let grid = wall(&[]);
    let teleporter = Link::two_way(Cell::new(13, 6), Cell::new(17, 6), 1.0);
    let (mut app, _) = app(grid.clone(), &[teleporter]);
    let u = unit(&mut app, Cell::new(3, 6), Cell::new(17, 6));
    let mut track = vec![Vec::new()];
    run(&mut app, 60 * 20, &[u], &grid, &mut track);
    assert!(arrived(&app, u), "not arrived: at {}", at(&mut app, u));
    assert_eq!(grid.cell_at(at(&mut app, u)), Cell::new(17, 6));
    assert_eq!(app.world().resource::<Log>().entered.len(), 1);
}
