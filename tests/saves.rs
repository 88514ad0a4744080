//! Saved games (feature `serialize`): a running match saved through Bevy's world serialization
//! (`DynamicWorld` as RON) with [`save_with`], loaded into a fresh app, plays on: every unit
//! arrives, walking units walk on from where they were, and every request the game made ends in
//! exactly one outcome across the save.

#[path = "../examples/common/saved_game.rs"]
mod saved_game;

mod support;

use std::time::Duration;

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{BLOCKED, Cell, MoveRules, NavGrid, TerrainCosts, Topology};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    Claims, ClassId, DriveProgress, DriveStatus, MoveState, NavAgent, NavClasses, PathProgress,
    PathQueue, PendingRequests, PlayerId, Sight, UnitClass, Vehicle,
};
use support::position;

const FOREST: u8 = 3;

/// Every [`PathOutcome`] of an app.
#[derive(Resource, Default)]
struct Outcomes(Vec<PathOutcome>);

/// A plain app with the plugins, stepping 1/60 s a frame, logging outcomes.
fn app() -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .add_plugins(TilepathPlugins::default())
        .init_resource::<Outcomes>()
        .add_systems(
            Update,
            (|mut r: MessageReader<PathOutcome>, mut log: ResMut<Outcomes>| {
                log.0.extend(r.read().copied())
            })
            // In the frame they are sent: none is in flight at a save between frames.
            .after(TilepathSystems::Receive),
        );
    app
}

/// A 48 x 32 field cut by a wall with three gaps, forest on the far side (closed to tanks).
fn grid(hex: bool) -> NavGrid {
    let rules = MoveRules {
        topology: if hex { Topology::Hex } else { Topology::Eight },
        ..MoveRules::default()
    };
    let mut grid = NavGrid::with_rules(48, 32, rules).unwrap();
    for y in 0..32 {
        if ![4, 15, 16, 17, 27].contains(&y) {
            grid.set_terrain(Cell::new(22, y), BLOCKED).unwrap();
        }
        for x in 30..34 {
            if !(14..19).contains(&y) {
                grid.set_terrain(Cell::new(x, y), FOREST).unwrap();
            }
        }
    }
    grid
}

/// The world position of cell `c`'s center.
fn at(map: &NavMap, c: Cell) -> Vec3 {
    map.grid_to_world(map.grid().cell_center(c)).extend(0.0)
}

/// A match: under fog of war, 24 infantry and (square map) 3 tanks of player 1 cross the wall;
/// 4 units of player 2 stand on the far side.
fn game(hex: bool) -> (App, Vec<Entity>) {
    let mut app = app();
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .fog
        .enabled = true;
    let map = NavMap::new(grid(hex), Vec2::new(-300.0, -200.0), Vec2::splat(12.0));
    let mut units = Vec::new();
    for i in 0..27 {
        let tank = i >= 24;
        if tank && hex {
            continue;
        }
        let from = Cell::new(2 + (i % 6) * 3, 2 + (i / 6) * 6);
        let to = Cell::new(38 + (i % 4) * 2, 3 + (i / 4) * 4);
        let mut unit = app.world_mut().spawn((
            Transform::from_translation(at(&map, from)),
            Mover::default(),
            // Hexagons' one-tile gaps are 0.577 tiles wide between the walls' corners.
            NavAgent {
                radius: if tank {
                    0.9
                } else if hex {
                    0.27
                } else {
                    0.3
                },
            },
            PlayerId(1),
            Sight { radius: 6.0 },
            PathRequest::to_cell(to),
        ));
        if tank {
            unit.insert(UnitClass::new(TerrainCosts::identity().blocking(FOREST)));
        }
        units.push(unit.id());
    }
    for i in 0..4 {
        let c = Cell::new(44, 6 + i * 6);
        let unit = app.world_mut().spawn((
            Transform::from_translation(at(&map, c)),
            Mover::default(),
            NavAgent::default(),
            PlayerId(2),
        ));
        units.push(unit.id());
    }
    app.world_mut().spawn(map);
    (app, units)
}

/// The game's requests: how many each unit was given.
#[derive(Default)]
struct Orders(EntityHashMap<usize>);

impl Orders {
    fn give(&mut self, app: &mut App, unit: Entity, request: PathRequest) {
        app.world_mut().entity_mut(unit).insert(request);
        *self.0.entry(unit).or_default() += 1;
    }
}

fn save(app: &mut App) -> String {
    saved_game::save(app.world_mut()).expect("every saved type is registered and serializable")
}

/// Loads `ron` into a fresh app; the saved entities' new ids.
fn load(ron: &str) -> (App, EntityHashMap<Entity>) {
    let mut app = app();
    let ids = saved_game::load(app.world_mut(), ron).expect("the saved game loads");
    (app, ids)
}

fn arrived(app: &App, unit: Entity) -> bool {
    let world = app.world();
    // Never ordered, or its order taken back (its path is gone: it stands).
    let idle = matches!(
        world.get::<PathStatus>(unit),
        Some(PathStatus::Idle | PathStatus::Cancelled)
    ) && world.get::<NavPath>(unit).is_none();
    let done = world
        .get::<PathProgress>(unit)
        .is_some_and(|p| p.state == MoveState::Arrived);
    idle || done
}

fn user_outcomes(app: &App, unit: Entity) -> usize {
    let log = &app.world().resource::<Outcomes>().0;
    log.iter()
        .filter(|o| o.entity == unit && o.origin.is_user())
        .count()
}

fn save_and_load_a_running_match(hex: bool) {
    let (mut a, units) = game(hex);
    let mut orders = Orders::default();
    for &u in &units {
        if a.world().get::<PathRequest>(u).is_some() {
            *orders.0.entry(u).or_default() += 1;
        }
    }
    for _ in 0..150 {
        a.update();
    }
    // Mid-match: five new orders, answered in the frame before the save with the rests of their
    // paths (beyond the first dozen cells) still to smooth; at the save, one new order queued
    // and not searched yet, and one given and taken back (its outcome, cancelled, owed). The
    // frame's budget is wide, so the five searches end in it however loaded the machine is
    // (their rests are smoothed from the next frame on).
    a.world_mut().resource_mut::<TilepathSettings>().time_budget = Duration::from_secs(1);
    for (k, &u) in units.iter().take(5).enumerate() {
        let goal = Cell::new(40 + k as i32, 29);
        orders.give(&mut a, u, PathRequest::to_cell(goal));
    }
    a.update();
    let raw: Vec<(Entity, usize)> = units[..5]
        .iter()
        .filter_map(|&u| Some((u, a.world().get::<NavPath>(u)?.waypoints.len())))
        .collect();
    let map_a = a
        .world_mut()
        .query_filtered::<Entity, With<NavMap>>()
        .single(a.world())
        .unwrap();
    let on_map = PathRequest::to_cell(Cell::new(41, 30)).on_map(map_a);
    orders.give(&mut a, units[6], on_map);
    orders.give(&mut a, units[5], PathRequest::to_cell(Cell::new(40, 30)));
    a.world_mut().entity_mut(units[5]).remove::<PathRequest>();
    let owed = a.world().resource::<PendingRequests>().len();
    assert!(owed >= 2, "requests owed an outcome at the save: {owed}");
    let walking: Vec<Entity> = units[7..]
        .iter()
        .copied()
        .filter(|&u| {
            a.world()
                .get::<PathProgress>(u)
                .is_some_and(|p| p.state == MoveState::Moving)
        })
        .collect();
    assert!(
        walking.len() >= 10,
        "units walking at the save: {walking:?}"
    );

    let before: EntityHashMap<usize> = units.iter().map(|&u| (u, user_outcomes(&a, u))).collect();
    let rests = a.world().resource::<PathQueue>().refining();
    assert!(
        rests >= 3,
        "rests of paths still to smooth at the save: {rests}"
    );
    let before_tickets = a
        .world()
        .resource::<Outcomes>()
        .0
        .iter()
        .map(|o| o.ticket)
        .max()
        .unwrap();
    let ron = save(&mut a);
    assert!(
        a.world_mut()
            .query::<&bevy_tilepath::SavedNav>()
            .iter(a.world())
            .next()
            .is_none(),
        "saving leaves the running game as it was"
    );
    let (mut b, ids) = load(&ron);
    let new = |u: Entity| ids[&u];
    // Entities in the saved components are the loaded game's.
    let loaded = b.world().get::<PathRequest>(new(units[6])).unwrap();
    assert_eq!(loaded.map, Some(new(map_a)));
    let path = b.world().get::<NavPath>(new(units[7])).unwrap();
    assert_eq!(path.map, new(map_a));
    // An order given to a loaded unit at once (its order owed from before the save ends as
    // cancelled).
    let given_before_load = orders.0.clone();
    b.world_mut()
        .entity_mut(new(units[6]))
        .insert(PathRequest::to_cell(Cell::new(42, 30)));
    *orders.0.entry(units[6]).or_default() += 1;

    // Nothing moved in the save, fog's knowledge came along, classes resolve again.
    for &u in &units {
        assert_eq!(position(&a, u), position(&b, new(u)));
    }
    let seen = |app: &mut App| {
        let mut maps = app.world_mut().query::<&NavMap>();
        let map = maps.single(app.world()).unwrap();
        map.knowledge(1).map(|k| k.seen_count())
    };
    assert!(seen(&mut a).is_some_and(|n| n > 0));
    assert_eq!(seen(&mut a), seen(&mut b));
    let waypoints: Vec<usize> = walking
        .iter()
        .map(|&u| a.world().get::<PathProgress>(u).unwrap().waypoint)
        .collect();
    b.update();
    for (&u, &w) in walking.iter().zip(&waypoints) {
        let p = b.world().get::<PathProgress>(new(u)).unwrap();
        assert!(
            p.waypoint >= w,
            "{u} walks on along its path after loading (waypoint {} then {w})",
            p.waypoint
        );
        let claims = b.world().resource::<Claims>();
        let path = b.world().get::<NavPath>(new(u)).unwrap();
        assert!(
            p.claimed()
                .any(|c| claims.claimants(path.map, c).contains(&new(u))),
            "{u} claims the cells ahead again"
        );
    }
    // The rests go on being smoothed: each path has fewer waypoints than its raw cells soon.
    for _ in 0..5 {
        b.update();
    }
    let raw: Vec<(Entity, usize)> = raw.into_iter().filter(|&(_, n)| n > 8).collect();
    assert!(raw.len() >= 2, "paths with raw rests at the save: {raw:?}");
    for &(u, n) in &raw {
        let now = b.world().get::<NavPath>(new(u)).unwrap();
        assert_eq!(
            now.origin,
            PathOrigin::User,
            "{u} still on its order's path"
        );
        assert!(
            now.waypoints.len() < n,
            "{u}'s rest smoothed: {} of {n} waypoints",
            now.waypoints.len()
        );
    }
    if !hex {
        let tank = new(units[24]);
        let class = b.world().get::<ClassId>(tank).copied().unwrap();
        assert_ne!(class, ClassId::DEFAULT);
        assert_eq!(b.world().get::<NavPath>(tank).unwrap().class, class);
        let key = b.world().resource::<NavClasses>().get(class).unwrap();
        assert_eq!(key.class.footprint, 1);
        assert_eq!(key.player, Some(1));
    }

    // Both games play to the end; in each, every request of the game ends once.
    for (name, app) in [("saved", &mut a), ("loaded", &mut b)] {
        eprintln!("{name}");
        let moving: Vec<Entity> = app
            .world_mut()
            .query_filtered::<Entity, With<PathStatus>>()
            .iter(app.world())
            .collect();
        for _ in 0..60 * 60 {
            app.update();
            if moving.iter().all(|&u| arrived(app, u))
                && app.world().resource::<PendingRequests>().is_empty()
            {
                break;
            }
        }
        for &u in &moving {
            let world = app.world();
            assert!(
                arrived(app, u),
                "{u} arrived ({:?}, {:?}, at {}, pending {:?} {:?}, last outcomes {:?})",
                world.get::<PathStatus>(u),
                world.get::<PathProgress>(u).map(|p| p.state),
                position(app, u),
                world.resource::<PendingRequests>().origin(u),
                world.resource::<PendingRequests>().request(u),
                world
                    .resource::<Outcomes>()
                    .0
                    .iter()
                    .filter(|o| o.entity == u)
                    .rev()
                    .take(4)
                    .collect::<Vec<_>>()
            );
        }
        assert!(app.world().resource::<PendingRequests>().is_empty());
    }
    // Tickets stay unique and increasing across the save.
    let last_saved = before_tickets;
    let first_loaded = b
        .world()
        .resource::<Outcomes>()
        .0
        .iter()
        .map(|o| o.ticket)
        .min();
    assert!(
        first_loaded.is_some_and(|t| t > last_saved),
        "{first_loaded:?} after {last_saved}"
    );
    for &u in &units {
        let given = orders.0.get(&u).copied().unwrap_or(0);
        let given_a = given_before_load.get(&u).copied().unwrap_or(0);
        assert_eq!(
            user_outcomes(&a, u),
            given_a,
            "{u}: one outcome per order, unsaved"
        );
        assert_eq!(
            before[&u] + user_outcomes(&b, new(u)),
            given,
            "{u}: one outcome per order across the save: {:?} then {:?}",
            a.world()
                .resource::<Outcomes>()
                .0
                .iter()
                .filter(|o| o.entity == u)
                .collect::<Vec<_>>(),
            b.world()
                .resource::<Outcomes>()
                .0
                .iter()
                .filter(|o| o.entity == new(u))
                .collect::<Vec<_>>(),
        );
    }
}

#[test]
fn a_square_match_with_fog_and_tanks_carries_on_after_loading() {
    save_and_load_a_running_match(false);
}

#[test]
fn a_hex_match_with_fog_carries_on_after_loading() {
    save_and_load_a_running_match(true);
}

#[test]
fn a_follow_order_follows_its_target_after_loading() {
    let mut app = app();
    let map = NavMap::new(NavGrid::new(40, 20).unwrap(), Vec2::ZERO, Vec2::ONE);
    app.world_mut().spawn(map);
    let target = app
        .world_mut()
        .spawn((
            Transform::from_xyz(4.5, 10.5, 0.0),
            Mover {
                speed: 2.0,
                ..default()
            },
            PathRequest::to_cell(Cell::new(36, 16)),
        ))
        .id();
    let follower = app
        .world_mut()
        .spawn((
            Transform::from_xyz(2.5, 3.5, 0.0),
            Mover::default(),
            PathRequest::follow(target, 3.0),
        ))
        .id();
    for _ in 0..120 {
        app.update();
    }
    let ron = save(&mut app);
    // Loaded beside other entities, so the loaded units' ids differ from the saved ones.
    let mut app = self::app();
    for _ in 0..5 {
        app.world_mut().spawn_empty();
    }
    let ids = saved_game::load(app.world_mut(), &ron).expect("the saved game loads");
    let (target, follower) = (ids[&target], ids[&follower]);
    // The order and the pursuit name the loaded target.
    assert_eq!(
        app.world().get::<PathRequest>(follower).unwrap().goal,
        PathGoal::Entity { target, range: 3.0 }
    );
    for _ in 0..60 * 20 {
        app.update();
    }
    let d = position(&app, follower).distance(position(&app, target));
    assert!(d <= 3.05, "{d}");
    assert_eq!(
        app.world()
            .get::<Pursuit>(follower)
            .map(|p| (p.target, p.in_range)),
        Some((target, true))
    );
}

/// Where a unit is and which way it faces.
fn pose(app: &App, unit: Entity) -> (Vec2, Vec2) {
    let t = app.world().get::<Transform>(unit).unwrap();
    (t.translation.truncate(), (t.rotation * Vec3::X).truncate())
}

/// A 32 x 32 open map and a vehicle in its middle, facing east, sent to a goal behind it (it
/// backs up and turns round).
fn vehicle_on_open_ground(app: &mut App) -> Entity {
    app.world_mut().spawn(NavMap::new(
        NavGrid::new(32, 32).unwrap(),
        Vec2::ZERO,
        Vec2::ONE,
    ));
    app.world_mut()
        .spawn((
            Transform::from_xyz(16.5, 16.5, 0.0),
            Mover {
                speed: 3.0,
                ..default()
            },
            NavAgent { radius: 0.3 },
            Vehicle::default(),
            PathRequest::to_cell(Cell::new(10, 16)),
        ))
        .id()
}

#[test]
fn a_vehicle_saved_mid_drive_drives_on_along_its_plan_after_loading() {
    let mut app = app();
    let vehicle = vehicle_on_open_ground(&mut app);
    for _ in 0..40 {
        app.update();
    }
    let ron = save(&mut app);
    // The game that was saved drives on: so does the loaded one, pose for pose (after the
    // loaded app's first frame, in which Bevy's clock does not advance).
    let saved: Vec<(Vec2, Vec2)> = (0..90)
        .map(|_| {
            app.update();
            pose(&app, vehicle)
        })
        .collect();
    let (mut app, ids) = load(&ron);
    let vehicle = ids[&vehicle];
    app.update();
    for (frame, &(next_at, next_facing)) in saved.iter().enumerate() {
        app.update();
        let (at, facing) = pose(&app, vehicle);
        // No snap to a cell centre, no pivot.
        assert!(
            at.distance(next_at) < 1e-3,
            "frame {frame}: {at} against {next_at}"
        );
        assert!(facing.angle_to(next_facing).abs() < 1e-3, "frame {frame}");
    }
    let arrived = (0..1200).any(|_| {
        app.update();
        app.world().get::<DriveProgress>(vehicle).unwrap().status == DriveStatus::Arrived
    });
    assert!(arrived, "the loaded vehicle arrives");
    let end = position(&app, vehicle);
    assert!(end.distance(Vec2::new(10.5, 16.5)) < 0.01, "{end}");
}

#[test]
fn a_vehicle_saved_while_it_plans_plans_and_arrives_after_loading() {
    let mut app = app();
    // One state a frame: its search is still under way when the game is saved.
    app.insert_resource(bevy_tilepath::DriveSettings {
        expansions_per_frame: 1,
        ..default()
    });
    let vehicle = vehicle_on_open_ground(&mut app);
    for _ in 0..5 {
        app.update();
    }
    let status = app.world().get::<DriveProgress>(vehicle).unwrap().status;
    assert_eq!(status, DriveStatus::Planning);
    let ron = save(&mut app);
    let (mut app, ids) = load(&ron);
    let vehicle = ids[&vehicle];
    let arrived = (0..1200).any(|_| {
        app.update();
        app.world().get::<DriveProgress>(vehicle).unwrap().status == DriveStatus::Arrived
    });
    assert!(arrived, "the loaded vehicle plans again and arrives");
}
