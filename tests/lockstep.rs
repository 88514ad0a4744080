//! Lockstep mode: two apps given the same inputs at the same ticks hash to the same
//! [`NavChecksum`] at every tick (inline and with workers, with their entities numbered
//! differently, one of them sleeping at random between ticks); a desync injected into one is
//! seen at the first tick it happens. Vehicles among the units too.

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{LockstepKey, NavChecksum, TilepathFrameStats, Vehicle};

/// One tick of game time.
const TICK: Duration = Duration::from_micros(16_667);

/// A 96 x 96 map with walls, gates and a marsh.
fn map() -> NavGrid {
    let mut g = NavGrid::new(96, 96).unwrap();
    for y in 0..96 {
        if y % 24 != 12 {
            g.set_walkable(Cell::new(32, y), false).unwrap();
            g.set_walkable(Cell::new(64, y), false).unwrap();
        }
    }
    for x in 40..56 {
        for y in 40..56 {
            g.set_terrain(Cell::new(x, y), 3).unwrap();
        }
    }
    g
}

/// What the game does at a tick: orders (unit key, goal cell), group orders, cells toggled.
#[derive(Clone, Debug, PartialEq)]
enum Input {
    Order(u64, Cell),
    Group(Vec<u64>, Cell),
    Toggle(Cell),
    Despawn(u64),
    /// A unit ordered to follow another (by key), within 3 tiles.
    Follow(u64, u64),
}

/// A fixed pseudo-random stream of inputs over `ticks` ticks for `units` units (the recording).
fn inputs(units: u64, ticks: u64) -> Vec<(u64, Input)> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut out = Vec::new();
    for tick in 1..ticks {
        if tick % 3 == 0 {
            let cell = Cell::new(next(96) as i32, next(96) as i32);
            out.push((tick, Input::Order(next(units), cell)));
        }
        if tick % 90 == 45 {
            let group: Vec<u64> = (0..units).filter(|k| k % 3 == tick % 3).collect();
            let cell = Cell::new(next(96) as i32, next(96) as i32);
            out.push((tick, Input::Group(group, cell)));
        }
        if tick % 20 == 10 {
            // Gate cells and cells of the open field: walls go up and come down.
            let cell = Cell::new([32, 64, 10, 80][next(4) as usize], 12 + 24 * next(4) as i32);
            out.push((tick, Input::Toggle(cell)));
        }
        if tick % 60 == 30 {
            // Some follow the unit that is despawned half way.
            let target = if tick % 120 == 30 {
                units - 1
            } else {
                next(units)
            };
            out.push((tick, Input::Follow(next(units - 1), target)));
        }
        if tick == ticks / 2 {
            out.push((tick, Input::Despawn(units - 1)));
        }
    }
    out
}

/// A lockstep app with `units` keyed units; with `shuffled`, unrelated entities are spawned
/// first and the units in another order, so its units' entities and their storage order differ
/// from another app's.
fn app(units: u64, workers: usize, shuffled: bool) -> (App, Entity, Vec<Entity>) {
    let settings = TilepathSettings {
        workers: match workers {
            0 => WorkerMode::Inline,
            n => WorkerMode::Async { max_in_flight: n },
        },
        ..TilepathSettings::lockstep()
    };
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .insert_resource(Time::<Fixed>::from_duration(TICK))
        .insert_resource(settings)
        .add_plugins(TilepathPlugins::in_schedule(FixedUpdate));
    if shuffled {
        for _ in 0..7 {
            app.world_mut().spawn_empty();
        }
    }
    let map = app
        .world_mut()
        .spawn(NavMap::new(map(), Vec2::ZERO, Vec2::ONE))
        .id();
    // Odd keys first, then even ones, when shuffled.
    let mut order: Vec<u64> = (0..units).collect();
    if shuffled {
        order.sort_by_key(|k| (k % 2 == 0, *k));
    }
    let mut ids = vec![Entity::PLACEHOLDER; units as usize];
    for k in order {
        ids[k as usize] = {
            let (x, y) = (2.0 + (k % 12) as f32 * 2.0, 2.0 + (k / 12) as f32 * 2.0);
            app.world_mut()
                .spawn((
                    LockstepKey(k),
                    Transform::from_xyz(x + 0.5, y + 0.5, 0.0),
                    Mover {
                        turning_radius: if k % 4 == 0 { 1.0 } else { 0.0 },
                        ..default()
                    },
                ))
                .id()
        };
    }
    (app, map, ids)
}

/// Applies `input` to the app's world (units named by key).
fn apply(world: &mut World, map: Entity, units: &[Entity], input: &Input) {
    match input {
        Input::Order(k, cell) => {
            if let Ok(mut e) = world.get_entity_mut(units[*k as usize]) {
                e.insert(PathRequest::to_cell(*cell).with_policy(GoalPolicy::NearestReachable));
            }
        }
        Input::Group(keys, cell) => {
            let members: Vec<(Entity, Vec2)> = keys
                .iter()
                .filter_map(|k| {
                    let e = units[*k as usize];
                    Some((e, world.get::<Transform>(e)?.translation.truncate()))
                })
                .collect();
            let nav = world.get::<NavMap>(map).unwrap();
            let target = nav.cell_to_world(*cell);
            for (e, request) in group_order(nav, target, &members) {
                world.entity_mut(e).insert(request);
            }
        }
        Input::Toggle(cell) => {
            let mut nav = world.get_mut::<NavMap>(map).unwrap();
            let open = nav.grid().is_walkable(*cell);
            nav.set_walkable(*cell, !open).unwrap();
        }
        Input::Despawn(k) => {
            world.despawn(units[*k as usize]);
        }
        Input::Follow(k, target) => {
            let target = units[*target as usize];
            if let Ok(mut e) = world.get_entity_mut(units[*k as usize]) {
                e.insert(PathRequest::follow(target, 3.0));
            }
        }
    }
}

/// Runs `ticks` ticks of `recording` and returns the checksum after each; `disturb` is called
/// after each tick (sleeps, injected desyncs).
fn run(
    (mut app, map, units): (App, Entity, Vec<Entity>),
    recording: &[(u64, Input)],
    ticks: u64,
    mut disturb: impl FnMut(u64, &mut World),
) -> Vec<NavChecksum> {
    let mut sums = Vec::new();
    let mut next = 0;
    for tick in 0..ticks {
        while next < recording.len() && recording[next].0 == tick {
            apply(app.world_mut(), map, &units, &recording[next].1);
            next += 1;
        }
        app.update();
        disturb(tick, app.world_mut());
        sums.push(*app.world().resource::<NavChecksum>());
    }
    sums
}

/// The first tick at which two runs' checksums differ.
fn first_difference(a: &[NavChecksum], b: &[NavChecksum]) -> Option<u64> {
    a.iter().zip(b).find(|(x, y)| x != y).map(|(x, _)| x.tick)
}

#[test]
fn the_same_inputs_give_the_same_checksum_every_tick_inline() {
    let recording = inputs(36, 600);
    let a = run(app(36, 0, false), &recording, 600, |_, _| {});
    let b = run(app(36, 0, true), &recording, 600, |_, _| {});
    // Ticks advance (one a frame after the first, whose delta is zero) and the state moves: the
    // checksum is not a constant.
    assert!(a[1..].windows(2).all(|w| w[1].tick == w[0].tick + 1));
    let distinct: std::collections::HashSet<u64> = a.iter().map(|c| c.value).collect();
    assert!(
        distinct.len() > 500,
        "{} distinct checksums",
        distinct.len()
    );
    assert_eq!(first_difference(&a, &b), None);
}

#[test]
fn the_same_inputs_give_the_same_checksum_every_tick_with_workers_late_or_not() {
    let recording = inputs(36, 400);
    let a = run(app(36, 2, false), &recording, 400, |_, _| {});
    // The other app sleeps a little between some ticks: its workers are ahead of its ticks there,
    // and behind elsewhere.
    let b = run(app(36, 2, true), &recording, 400, |tick, _| {
        if tick % 7 == 0 {
            std::thread::sleep(Duration::from_micros(300 * (tick % 5)));
        }
    });
    assert_eq!(first_difference(&a, &b), None);
    // Workers were used: paths came from them.
    let inline = run(app(36, 0, false), &recording, 400, |_, _| {});
    assert_ne!(
        first_difference(&a, &inline),
        None,
        "worker results come a fixed number of ticks later than inline ones"
    );
}

/// `app` with every third unit a vehicle.
fn with_vehicles(app: (App, Entity, Vec<Entity>)) -> (App, Entity, Vec<Entity>) {
    let (mut app, map, units) = app;
    for (k, &e) in units.iter().enumerate() {
        if k % 3 == 0 {
            app.world_mut().entity_mut(e).insert(Vehicle::default());
        }
    }
    (app, map, units)
}

#[test]
fn vehicles_give_the_same_checksum_every_tick_whatever_their_entities() {
    let recording = inputs(36, 600);
    let a = run(with_vehicles(app(36, 0, false)), &recording, 600, |_, _| {});
    let b = run(with_vehicles(app(36, 0, true)), &recording, 600, |_, _| {});
    assert_eq!(first_difference(&a, &b), None);
    // The vehicles drove: their runs differ from the same units on foot.
    let on_foot = run(app(36, 0, false), &recording, 600, |_, _| {});
    assert_ne!(first_difference(&a, &on_foot), None);
}

#[test]
fn a_desync_is_seen_at_the_tick_it_happens() {
    let recording = inputs(24, 300);
    let a = run(app(24, 0, false), &recording, 300, |_, _| {});
    let b = run(app(24, 0, false), &recording, 300, |tick, world| {
        if tick == 149 {
            // One client alone gives a unit an order before the next tick (a lost or doubled
            // packet).
            let mut q = world.query::<(Entity, &LockstepKey)>();
            let unit = q.iter(world).find(|(_, k)| k.0 == 5).unwrap().0;
            world
                .entity_mut(unit)
                .insert(PathRequest::to_cell(Cell::new(90, 90)));
        }
    });
    assert_eq!(first_difference(&a, &b), Some(a[150].tick));
    assert_eq!(a[150].tick, a[149].tick + 1);
}

#[test]
fn with_workers_a_tick_hands_off_as_many_searches_as_a_wall_clock_frame() {
    // A search holds its runner's slot until its result is due, `worker_ticks` (2) ticks later:
    // a runner has twice the slots in lockstep mode, so the first due tick brings as many paths
    // as a frame starts (`searches_per_frame`, 32), not half of them.
    let (mut app, _, units) = app(100, 1, false);
    for (k, &e) in units.iter().enumerate() {
        let goal = Cell::new(80 + (k % 12) as i32, 10 + 8 * (k / 12) as i32);
        app.world_mut()
            .entity_mut(e)
            .insert(PathRequest::to_cell(goal));
    }
    let mut paths = 0;
    for _ in 0..20 {
        app.update();
        paths = app
            .world_mut()
            .query::<&NavPath>()
            .iter(app.world())
            .count();
        if paths > 0 {
            break;
        }
    }
    assert_eq!(paths, 32, "paths of the first due tick");
}

/// Runs `app` (120 units, `units`) for 600 ticks with a budget of `budget_us`, `unit_count`
/// units from `first` on ordered across the map every tick and `each_tick` run before every
/// tick; asserts that the queue was busy and that every rest still wanted 30 ticks after its
/// path's delivery was smoothed by then.
fn assert_rests_in_time(
    (mut app, units): (App, Vec<Entity>),
    budget_us: u64,
    (first, unit_count, per_tick): (usize, usize, usize),
    mut each_tick: impl FnMut(&mut App, &[Entity], usize),
) {
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .time_budget = Duration::from_micros(budget_us);
    let (mut smoothed, mut late, mut abandoned) = (Vec::new(), 0, 0);
    let mut busy_ticks = 0;
    for tick in 0..600usize {
        for i in 0..per_tick {
            let k = first + (tick * per_tick + i) % unit_count;
            let goal = Cell::new(
                (40 + (k * 37 + tick) % 56) as i32,
                ((k * 53 + tick * 7) % 96) as i32,
            );
            app.world_mut()
                .entity_mut(units[k])
                .insert(PathRequest::to_cell(goal));
        }
        each_tick(&mut app, &units, tick);
        app.update();
        let stats = app.world().resource::<TilepathFrameStats>();
        busy_ticks += usize::from(stats.queue_len > 0);
        smoothed.extend_from_slice(&stats.smoothed_rests);
        abandoned += stats.abandoned_rests.len();
        late += stats.abandoned_rests.iter().filter(|&&w| w > 30).count();
    }
    assert!(busy_ticks > 500, "the queue was busy in {busy_ticks} ticks");
    assert!(smoothed.len() > 1000, "{} rests smoothed", smoothed.len());
    let slow = smoothed.iter().filter(|&&w| w > 30).count();
    assert_eq!(
        (slow, late),
        (0, 0),
        "rests smoothed after 30 ticks, and left unsmoothed after 30 ticks (of {} smoothed, {abandoned} left unsmoothed)",
        smoothed.len()
    );
}

#[test]
fn in_a_busy_queue_every_rest_still_wanted_is_smoothed_within_30_ticks() {
    // 120 units, 6 of them ordered across the map every tick (each about every 20 ticks, so most
    // rests are still wanted 30 ticks on unless smoothed), with a budget of 0.8 ms: the searches
    // keep the queue busy every tick, and rests far from their units would otherwise wait for a
    // tick with time to spare (measured with rests never late: 60 smoothed, 1,332 left
    // unsmoothed, 516 of them after more than 30 ticks).
    let (app, _, units) = app(120, 0, false);
    assert_rests_in_time((app, units), 800, (0, 120, 6), |_, _, _| {});
}

#[test]
fn a_group_orders_burst_of_rests_is_smoothed_within_30_ticks() {
    // 120 units on a map of scattered blocks, a busy queue (4 units ordered across the map
    // every tick, a budget of 0.8 ms), and every 100 ticks the 60 units not ordered singly sent
    // together to the far side: their rests all come late at once (measured with a quarter of
    // the budget for late rests however many wait: 15 of 1,518 rests smoothed more than 30
    // ticks after delivery; now the slowest waits 28).
    let (mut app, map, units) = app(120, 0, false);
    // Scattered single blocks away from the units' places: paths with many bends.
    {
        let mut nav = app.world_mut().get_mut::<NavMap>(map).unwrap();
        for y in (0..96).step_by(3) {
            for x in (0..96).step_by(4) {
                let c = Cell::new(x + (y / 3 % 4), y);
                if (c.y > 24 || c.x > 28) && c.y % 24 != 12 {
                    nav.set_walkable(c, false).unwrap();
                }
            }
        }
    }
    assert_rests_in_time((app, units), 800, (60, 60, 4), |app, units, tick| {
        if tick % 100 == 0 {
            let far = if tick % 200 == 0 {
                Cell::new(88, 80)
            } else {
                Cell::new(6, 10)
            };
            let group = Input::Group((0..60).collect(), far);
            apply(app.world_mut(), map, units, &group);
        }
    });
}

/// A lockstep app with one worker and one unit at (2, 2) of an open 64 x 64 map ordered to
/// (60, 40); `edit` runs on the map's grid once the unit's search is on the worker. Returns the
/// path delivered and the grid at the end.
fn worker_path_with_edit(edit: impl FnOnce(&mut NavMap)) -> (NavPath, NavGrid) {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
        .insert_resource(Time::<Fixed>::from_duration(TICK))
        .insert_resource(TilepathSettings {
            workers: WorkerMode::Async { max_in_flight: 1 },
            ..TilepathSettings::lockstep()
        })
        .add_plugins(TilepathPlugins::in_schedule(FixedUpdate));
    let grid = NavGrid::new(64, 64).unwrap();
    app.world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
    let unit = app
        .world_mut()
        .spawn((
            LockstepKey(0),
            Transform::from_xyz(2.5, 2.5, 0.0),
            PathRequest::to_cell(Cell::new(60, 40)),
        ))
        .id();
    let mut edit = Some(edit);
    for _ in 0..200 {
        app.update();
        if app.world().get::<PathStatus>(unit) == Some(&PathStatus::Searching)
            && let Some(edit) = edit.take()
        {
            let mut maps = app.world_mut().query::<&mut NavMap>();
            edit(&mut maps.single_mut(app.world_mut()).unwrap());
        }
        if let Some(path) = app.world().get::<NavPath>(unit).cloned() {
            assert!(
                edit.is_none(),
                "the path came before the search was seen on the worker"
            );
            let mut maps = app.world_mut().query::<&NavMap>();
            let grid = maps.single(app.world()).unwrap().grid().clone();
            return (path, grid);
        }
    }
    panic!("no path in 200 ticks");
}

#[test]
fn a_wall_built_while_a_worker_smooths_a_path_is_never_crossed_by_its_lines() {
    // Without the edit: the path's smoothed lines cross cells off its steps.
    let (open, _) = worker_path_with_edit(|_| {});
    let near_steps = |c: Cell| {
        open.cells
            .iter()
            .any(|s| (s.x - c.x).abs() <= 1 && (s.y - c.y).abs() <= 1)
    };
    let off = *open
        .corridor
        .iter()
        .find(|&&c| !near_steps(c))
        .expect("a smoothed line cuts across cells off the path's steps");
    // The same order with that cell blocked while the worker searches the open grid: the path's
    // steps stay legal, its smoothed lines would not.
    let (path, grid) = worker_path_with_edit(|map| map.set_walkable(off, false).unwrap());
    assert!(!grid.is_walkable(off));
    for c in &path.corridor {
        assert!(grid.is_walkable(*c), "{c:?} of the corridor is blocked");
    }
    for leg in path.waypoints.windows(2) {
        assert!(
            bevy_tilepath::core::walkable(&grid, leg[0], leg[1], 0.0),
            "{leg:?} crosses the wall"
        );
    }
}

#[test]
fn without_pushing_who_gives_way_head_on_follows_the_keys_not_the_entities() {
    // Without pushing, units meeting head-on anywhere settle who steps aside by their lockstep
    // order; the shuffled app's entities sort the other way round for half its pairs of keys.
    let recording = inputs(150, 300);
    let unpushed = |(mut app, map, units): (App, Entity, Vec<Entity>)| {
        let mut settings = app.world_mut().resource_mut::<TilepathSettings>();
        settings.crowd.pushing = false;
        (app, map, units)
    };
    let a = run(unpushed(app(150, 0, false)), &recording, 300, |_, _| {});
    let b = run(unpushed(app(150, 0, true)), &recording, 300, |_, _| {});
    assert_eq!(first_difference(&a, &b), None);
}

#[test]
fn the_plugins_systems_run_in_one_order_whatever_the_threads_do() {
    // Two of the plugins' systems touching the same data without an order between them run in
    // whichever order the executor's threads happen to start them: the same inputs could give
    // different paths under load. Bevy's ambiguity check fails the schedule's build if there
    // are any (every plugin of the group: the tilemap's and avian's with their features on).
    let settings = bevy::ecs::schedule::ScheduleBuildSettings {
        ambiguity_detection: bevy::ecs::schedule::LogLevel::Error,
        ..Default::default()
    };
    for lockstep in [false, true] {
        let mut app = App::new();
        app.add_plugins(MinimalPlugins)
            .insert_resource(TimeUpdateStrategy::ManualDuration(TICK))
            .insert_resource(Time::<Fixed>::from_duration(TICK));
        if lockstep {
            app.insert_resource(TilepathSettings::lockstep())
                .add_plugins(TilepathPlugins::in_schedule(FixedUpdate));
        } else {
            app.add_plugins(TilepathPlugins::default());
        }
        // (After the plugins: it applies to the schedules there are.)
        app.configure_schedules(settings.clone());
        app.world_mut()
            .spawn(NavMap::new(map(), Vec2::ZERO, Vec2::ONE));
        let unit = app
            .world_mut()
            .spawn((
                Transform::from_xyz(2.5, 2.5, 0.0),
                NavAgent::default(),
                Mover::default(),
                PathRequest::to_cell(Cell::new(80, 80)),
            ))
            .id();
        for _ in 0..30 {
            app.update();
        }
        assert!(
            app.world().get::<NavPath>(unit).is_some(),
            "the unit got its path (lockstep: {lockstep})"
        );
    }
}
