//! Headless plugin tests (`MinimalPlugins`, manual time step): the queue's limits, exactly one
//! outcome per request, replace / remove / despawn, failure reasons, worker mode.

use std::collections::HashMap;
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{
    Lockstep, PathQueue, PendingRequests, SearchKind, TilepathFrameStats, group_order,
};

#[derive(Resource, Default)]
struct Log {
    messages: Vec<PathOutcome>,
    events: Vec<PathOutcome>,
    max_started: u32,
    max_searching: usize,
}

fn record(
    mut log: ResMut<Log>,
    mut reader: MessageReader<PathOutcome>,
    stats: Res<TilepathFrameStats>,
    queue: Res<PathQueue>,
) {
    log.messages.extend(reader.read().copied());
    log.max_started = log.max_started.max(stats.started);
    log.max_searching = log.max_searching.max(queue.searching());
}

fn app(settings: TilepathSettings, grid: NavGrid) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(
            16,
        )))
        .insert_resource(settings)
        .add_plugins(TilepathPlugins::default())
        .init_resource::<Log>()
        .add_systems(
            Update,
            record
                .after(TilepathSystems::Receive)
                .before(TilepathSystems::Last),
        )
        .add_observer(|o: On<PathOutcome>, mut log: ResMut<Log>| log.events.push(*o));
    app.world_mut()
        .spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));
    app
}

/// A 64 x 64 grid with a few walls.
fn walls() -> NavGrid {
    let mut g = NavGrid::new(64, 64).unwrap();
    for y in 0..60 {
        g.set_walkable(Cell::new(20, y), false).unwrap();
    }
    for y in 4..64 {
        g.set_walkable(Cell::new(40, y), false).unwrap();
    }
    g
}

fn unit_at(app: &mut App, cell: Cell, request: PathRequest) -> Entity {
    app.world_mut()
        .spawn((
            Transform::from_xyz(cell.x as f32 + 0.5, cell.y as f32 + 0.5, 0.0),
            request,
        ))
        .id()
}

/// Updates `app` until its map's grid has its jump table (built on a worker); panics after
/// 500 frames.
fn wait_for_jump_table(app: &mut App) {
    for _ in 0..500 {
        if map_grid(app).has_jump_table() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
        app.update();
    }
    panic!("no jump table after 500 frames");
}

/// The grid of the app's only map, as it is now.
fn map_grid(app: &mut App) -> NavGrid {
    let mut maps = app.world_mut().query::<&NavMap>();
    maps.single(app.world()).unwrap().grid().clone()
}

fn run_until_drained(app: &mut App, max_frames: usize) -> usize {
    for frame in 0..max_frames {
        app.update();
        if app.world().resource::<PendingRequests>().is_empty() {
            return frame + 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!("requests still pending after {max_frames} frames");
}

/// The outcome kinds of `unit`, in order.
fn kinds_of(log: &Log, unit: Entity) -> Vec<OutcomeKind> {
    log.messages
        .iter()
        .filter(|o| o.entity == unit)
        .map(|o| o.kind)
        .collect()
}

fn outcomes_per_entity(log: &Log) -> HashMap<Entity, Vec<PathOutcome>> {
    let mut m: HashMap<Entity, Vec<PathOutcome>> = HashMap::new();
    for o in &log.messages {
        m.entry(o.entity).or_default().push(*o);
    }
    m
}

#[test]
fn thousand_requests_get_exactly_one_outcome_and_starts_are_capped() {
    let settings = TilepathSettings {
        searches_per_frame: 7,
        ..Default::default()
    };
    let mut app = app(settings, walls());
    app.update();
    let mut units = Vec::new();
    for i in 0..1000 {
        let start = Cell::new(i % 19, (i * 7) % 64);
        let goal = Cell::new(63 - (i % 20), (i * 13) % 64);
        units.push(unit_at(&mut app, start, PathRequest::to_cell(goal)));
    }
    run_until_drained(&mut app, 2000);
    app.update();
    let grid = map_grid(&mut app);
    let log = app.world().resource::<Log>();
    assert!(
        log.max_started <= 7,
        "started {} in one frame",
        log.max_started
    );
    assert!(log.max_started > 0);
    // Inline searches in progress at once: at most `max_inline_searches` (2 by default), each
    // holding scratch memory the size of the grid.
    assert!(log.max_searching <= 2, "{} searching", log.max_searching);
    let per = outcomes_per_entity(log);
    for u in &units {
        assert_eq!(per.get(u).map(|v| v.len()), Some(1), "unit {u:?}");
        let o = per[u][0];
        assert!(matches!(o.kind, OutcomeKind::Found { .. }), "{o:?}");
        assert_eq!(app.world().get::<PathStatus>(*u), Some(&PathStatus::Found));
        let path = app.world().get::<NavPath>(*u).unwrap();
        for w in path.cells.windows(2) {
            assert!(grid.can_step(w[0], w[1]));
        }
    }
    assert_eq!(log.events.len(), log.messages.len());
}

#[test]
fn replace_remove_and_despawn_mid_search() {
    // A tiny budget keeps searches in flight over several frames (one expansion a frame: a
    // jump point search reading the grid's jump table needs only a few dozen).
    let settings = TilepathSettings {
        expansion_budget: 1,
        searches_per_frame: 4,
        ..Default::default()
    };
    let mut app = app(settings, walls());
    app.update();
    // Searches read the jump table, built on a worker: on a loaded machine it can come late,
    // and a search without it needs far more than the frames below at one expansion each.
    wait_for_jump_table(&mut app);
    let far = PathRequest::to_cell(Cell::new(63, 63));
    let replaced = unit_at(&mut app, Cell::new(0, 0), far.clone());
    let removed = unit_at(&mut app, Cell::new(1, 0), far.clone());
    let despawned = unit_at(&mut app, Cell::new(2, 0), far.clone());
    let kept = unit_at(&mut app, Cell::new(3, 0), far.clone());
    app.update();
    app.update();
    assert_eq!(
        app.world().get::<PathStatus>(replaced),
        Some(&PathStatus::Searching)
    );
    app.world_mut()
        .entity_mut(replaced)
        .insert(PathRequest::to_cell(Cell::new(5, 5)));
    app.world_mut().entity_mut(removed).remove::<PathRequest>();
    app.world_mut().entity_mut(despawned).despawn();
    run_until_drained(&mut app, 5000);
    app.update();
    let log = app.world().resource::<Log>();
    let kinds = |e: Entity| kinds_of(log, e);
    let r = kinds(replaced);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0], OutcomeKind::Cancelled);
    assert!(matches!(r[1], OutcomeKind::Found { .. }));
    assert_eq!(
        app.world().get::<NavPath>(replaced).unwrap().goal,
        Cell::new(5, 5)
    );
    assert_eq!(kinds(removed), vec![OutcomeKind::Cancelled]);
    assert_eq!(
        app.world().get::<PathStatus>(removed),
        Some(&PathStatus::Cancelled)
    );
    assert!(
        kinds(despawned).is_empty(),
        "a despawned unit leaves no trace"
    );
    assert_eq!(kinds(kept).len(), 1);
    assert!(matches!(kinds(kept)[0], OutcomeKind::Found { .. }));
}

#[test]
fn a_despawned_unit_is_owed_nothing_cancelled_or_waiting_for_delivery() {
    // A small budget, counted (lockstep): the outcomes of one search shared by the group
    // wait for delivery over several frames.
    let settings = TilepathSettings {
        time_budget: Duration::from_micros(80),
        lockstep: Some(Lockstep::default()),
        ..Default::default()
    };
    let mut app = app(settings, walls());
    app.update();
    let units: Vec<Entity> = (0..40)
        .map(|i| {
            let goal = PathRequest::to_cell(Cell::new(5, 60));
            unit_at(&mut app, Cell::new(i % 10, i / 10), goal)
        })
        .collect();
    let mut frames = 0;
    while app.world().resource::<PathQueue>().ready_len() < 2 {
        app.update();
        frames += 1;
        assert!(frames < 500, "outcomes never waited for delivery");
    }
    // Every unit still waiting (some with outcomes waiting for delivery), one of them with its
    // request just replaced (its cancelled outcome still to go out): despawned between frames.
    let answered: Vec<Entity> = outcomes_per_entity(app.world().resource::<Log>())
        .into_keys()
        .collect();
    let gone: Vec<Entity> = units
        .iter()
        .copied()
        .filter(|u| !answered.contains(u))
        .collect();
    app.world_mut()
        .entity_mut(gone[0])
        .insert(PathRequest::to_cell(Cell::new(1, 1)));
    for &u in &gone {
        app.world_mut().entity_mut(u).despawn();
    }
    run_until_drained(&mut app, 200);
    app.update();
    let log = app.world().resource::<Log>();
    for u in &gone {
        assert!(
            kinds_of(log, *u).is_empty(),
            "{u:?}: {:?}",
            kinds_of(log, *u)
        );
    }
    // Everyone else still has exactly one outcome.
    let per = outcomes_per_entity(log);
    for u in units.iter().filter(|u| !gone.contains(u)) {
        assert_eq!(per.get(u).map(Vec::len), Some(1), "unit {u:?}");
    }
    assert_eq!(app.world().resource::<PathQueue>().ready_len(), 0);
    assert!(app.world().resource::<PendingRequests>().is_empty());
}

#[test]
fn each_failure_reason() {
    let mut grid = walls();
    // An enclosed pocket: unreachable.
    for c in [
        Cell::new(50, 50),
        Cell::new(52, 50),
        Cell::new(51, 49),
        Cell::new(51, 51),
    ] {
        grid.set_walkable(c, false).unwrap();
    }
    let mut app = app(TilepathSettings::default(), grid);
    app.update();
    let s = Cell::new(1, 1);
    let cases = [
        (
            unit_at(&mut app, s, PathRequest::to_world(Vec2::new(f32::NAN, 3.0))),
            PathFailure::GoalNotFinite,
        ),
        (
            unit_at(&mut app, s, PathRequest::to_cell(Cell::new(64, 3))),
            PathFailure::GoalOutOfBounds,
        ),
        (
            unit_at(&mut app, s, PathRequest::to_world(Vec2::new(-5.0, 3.0))),
            PathFailure::GoalOutOfBounds,
        ),
        (
            unit_at(
                &mut app,
                Cell::new(-3, 0),
                PathRequest::to_cell(Cell::new(3, 3)),
            ),
            PathFailure::StartOutOfBounds,
        ),
        (
            unit_at(
                &mut app,
                Cell::new(20, 5),
                PathRequest::to_cell(Cell::new(3, 3)),
            ),
            PathFailure::StartBlocked,
        ),
        (
            unit_at(&mut app, s, PathRequest::to_cell(Cell::new(20, 5))),
            PathFailure::GoalBlocked,
        ),
        (
            unit_at(&mut app, s, PathRequest::to_cell(Cell::new(51, 50))),
            PathFailure::Unreachable,
        ),
        (
            unit_at(&mut app, s, PathRequest::to_nearest(vec![])),
            PathFailure::NoGoals,
        ),
        (
            unit_at(
                &mut app,
                s,
                PathRequest::to_cell(Cell::new(3, 3)).on_map(Entity::PLACEHOLDER),
            ),
            PathFailure::NoMap,
        ),
    ];
    // Unreachable goals are answered without a search: in the first frame, nothing started.
    app.update();
    assert_eq!(app.world().resource::<Log>().max_started, 0);
    for (e, reason) in cases {
        assert_eq!(
            app.world().get::<PathStatus>(e),
            Some(&PathStatus::Failed(reason)),
            "{reason:?}"
        );
    }
    // The search limit.
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .search
        .max_expansions = Some(10);
    let limited = unit_at(&mut app, s, PathRequest::to_cell(Cell::new(63, 63)));
    run_until_drained(&mut app, 100);
    assert_eq!(
        app.world().get::<PathStatus>(limited),
        Some(&PathStatus::Failed(PathFailure::SearchLimitExceeded))
    );
    // The nearest-reachable policy turns the blocked goal into a found path.
    app.world_mut()
        .resource_mut::<TilepathSettings>()
        .search
        .max_expansions = None;
    let near = unit_at(
        &mut app,
        s,
        PathRequest::to_cell(Cell::new(51, 50)).with_policy(GoalPolicy::NearestReachable),
    );
    run_until_drained(&mut app, 100);
    assert_eq!(
        app.world().get::<PathStatus>(near),
        Some(&PathStatus::Found)
    );
}

fn costs(workers: WorkerMode) -> Vec<u64> {
    let settings = TilepathSettings {
        workers,
        searches_per_frame: 32,
        ..Default::default()
    };
    let mut app = app(settings, walls());
    app.update();
    let units: Vec<Entity> = (0..200)
        .map(|i| {
            unit_at(
                &mut app,
                Cell::new(i % 19, (i * 5) % 64),
                PathRequest::to_cell(Cell::new(63 - i % 17, (i * 11) % 64)),
            )
        })
        .collect();
    run_until_drained(&mut app, 20_000);
    units
        .iter()
        .map(|&u| app.world().get::<NavPath>(u).expect("found").cost)
        .collect()
}

#[test]
fn worker_mode_matches_inline_costs() {
    assert_eq!(
        costs(WorkerMode::Inline),
        costs(WorkerMode::Async { max_in_flight: 8 })
    );
}

#[test]
fn grid_edit_during_worker_search_gives_a_valid_path_on_the_new_grid() {
    let settings = TilepathSettings {
        workers: WorkerMode::Async { max_in_flight: 4 },
        ..Default::default()
    };
    let mut app = app(settings, NavGrid::new(256, 256).unwrap());
    app.update();
    let units: Vec<Entity> = (0..40)
        .map(|i| {
            unit_at(
                &mut app,
                Cell::new(0, i * 6),
                PathRequest::to_cell(Cell::new(255, 255 - i * 6)),
            )
        })
        .collect();
    app.update(); // searches start on workers against the open grid
    {
        // A wall across the middle with one gap, built while they search.
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        for y in 0..255 {
            map.set_walkable(Cell::new(128, y), false).unwrap();
        }
    }
    run_until_drained(&mut app, 20_000);
    let grid = map_grid(&mut app);
    for u in units {
        let path = app.world().get::<NavPath>(u).expect("found");
        assert!(
            path.cells.contains(&Cell::new(128, 255)),
            "path ignores the new wall"
        );
        for w in path.cells.windows(2) {
            assert!(grid.can_step(w[0], w[1]));
        }
    }
}

#[test]
fn plugin_searches_leave_the_users_request_alone_and_say_who_asked() {
    let mut app = app(TilepathSettings::default(), NavGrid::new(32, 8).unwrap());
    app.update();
    let order = PathRequest::to_cell(Cell::new(30, 4));
    let u = unit_at(&mut app, Cell::new(1, 4), order.clone());
    run_until_drained(&mut app, 100);
    // A wall across the path (with a gap) makes the plugin search again on its own.
    {
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        for y in 0..7 {
            map.set_walkable(Cell::new(15, y), false).unwrap();
        }
    }
    run_until_drained(&mut app, 100);
    let log = app.world().resource::<Log>();
    let origins: Vec<PathOrigin> = log.messages.iter().map(|o| o.origin).collect();
    assert_eq!(origins, vec![PathOrigin::User, PathOrigin::GridEdit]);
    assert_eq!(log.events.len(), 2);
    // The game's request is still the game's; the new path answers it, around the wall.
    assert_eq!(app.world().get::<PathRequest>(u), Some(&order));
    let path = app.world().get::<NavPath>(u).unwrap();
    assert_eq!(path.origin, PathOrigin::GridEdit);
    assert_eq!(path.request, order);
    assert!(path.cells.contains(&Cell::new(15, 7)));
    // A game that only wants its own outcomes filters them.
    let mine: Vec<&PathOutcome> = log.messages.iter().filter(|o| o.origin.is_user()).collect();
    assert_eq!(mine.len(), 1);
}

#[test]
fn a_wall_beside_a_path_keeps_it_and_one_on_its_way_or_an_opening_searches_again() {
    let mut app = app(TilepathSettings::default(), NavGrid::new(32, 8).unwrap());
    app.update();
    let u = unit_at(
        &mut app,
        Cell::new(1, 4),
        PathRequest::to_cell(Cell::new(30, 4)),
    );
    run_until_drained(&mut app, 100);
    let grid_edits = |app: &App| {
        let log = app.world().resource::<Log>();
        log.messages
            .iter()
            .filter(|o| o.origin == PathOrigin::GridEdit)
            .count()
    };
    let edit = |app: &mut App, cell: Cell, open: bool| {
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        map.set_walkable(cell, open).unwrap();
    };
    let before = app.world().get::<NavPath>(u).unwrap().clone();
    // A wall beside the straight line the unit walks, touching its corridor's neighbours but not
    // the line: the path stays.
    edit(&mut app, Cell::new(15, 5), false);
    run_until_drained(&mut app, 100);
    assert_eq!(grid_edits(&app), 0);
    assert_eq!(app.world().get::<NavPath>(u), Some(&before));
    // Opened again: a cheaper way may have appeared, so it searches again.
    edit(&mut app, Cell::new(15, 5), true);
    run_until_drained(&mut app, 100);
    assert_eq!(grid_edits(&app), 1);
    // A wall on the line itself: it searches again, round it.
    edit(&mut app, Cell::new(20, 4), false);
    run_until_drained(&mut app, 100);
    assert_eq!(grid_edits(&app), 2);
    let grid = map_grid(&mut app);
    let path = app.world().get::<NavPath>(u).unwrap();
    assert!(!path.cells.contains(&Cell::new(20, 4)));
    for w in path.waypoints.windows(2) {
        assert!(bevy_tilepath::core::walkable(&grid, w[0], w[1], 0.0));
    }
}

#[test]
fn paths_without_the_movement_plugin_in_fixed_update() {
    use bevy_tilepath::MovementPlugin;
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(
            20,
        )))
        .add_plugins(
            TilepathPlugins::in_schedule(FixedUpdate)
                .build()
                .disable::<MovementPlugin>(),
        );
    app.world_mut()
        .spawn(NavMap::new(walls(), Vec2::ZERO, Vec2::ONE));
    let u = unit_at(
        &mut app,
        Cell::new(2, 2),
        PathRequest::to_cell(Cell::new(60, 60)),
    );
    for _ in 0..20 {
        app.update();
    }
    let path = app
        .world()
        .get::<NavPath>(u)
        .expect("a path without movement");
    assert_eq!(path.goal, Cell::new(60, 60));
    // Nobody moves the unit: it is where it was, and no mover state was added.
    assert!(app.world().get::<bevy_tilepath::PathProgress>(u).is_none());
    assert_eq!(
        app.world().get::<Transform>(u).unwrap().translation,
        Vec3::new(2.5, 2.5, 0.0)
    );
}

#[test]
fn claims_on_one_map_never_touch_another() {
    let mut app = app(TilepathSettings::default(), NavGrid::new(16, 16).unwrap());
    // A second map, far away in the world, with the same cells.
    let other = app
        .world_mut()
        .spawn(NavMap::new(
            NavGrid::new(16, 16).unwrap(),
            Vec2::new(1000.0, 0.0),
            Vec2::ONE,
        ))
        .id();
    let first = app
        .world_mut()
        .query::<(Entity, &NavMap)>()
        .iter(app.world())
        .find(|(e, _)| *e != other)
        .unwrap()
        .0;
    app.update();
    let mover = app
        .world_mut()
        .spawn((
            Transform::from_xyz(1.5, 1.5, 0.0),
            Mover::default(),
            PathRequest::to_cell(Cell::new(14, 1)).on_map(first),
        ))
        .id();
    let mut claimed_any = false;
    for _ in 0..30 {
        app.update();
        let claims = app.world().resource::<bevy_tilepath::Claims>();
        claimed_any |= claims.iter_claimed(first).next().is_some();
        assert!(claims.iter_claimed(other).next().is_none());
        // A searcher on the other map sees no penalty from the unit walking on the first.
        let overlay = claims.overlay_for(other, Entity::PLACEHOLDER, Cell::new(3, 1), 8.0, 1, true);
        assert!(overlay.is_empty(), "{overlay:?}");
    }
    assert!(claimed_any, "the mover claims cells on its own map");
    assert!(app.world().get::<NavPath>(mover).is_some());
}

#[test]
fn public_types_are_registered_for_reflection() {
    let app = app(TilepathSettings::default(), NavGrid::new(4, 4).unwrap());
    let registry = app.world().resource::<AppTypeRegistry>().read();
    for (name, id) in [
        ("PathRequest", std::any::TypeId::of::<PathRequest>()),
        ("PathStatus", std::any::TypeId::of::<PathStatus>()),
        ("NavPath", std::any::TypeId::of::<NavPath>()),
        ("NavAgent", std::any::TypeId::of::<NavAgent>()),
        ("Mover", std::any::TypeId::of::<Mover>()),
        (
            "PathProgress",
            std::any::TypeId::of::<bevy_tilepath::PathProgress>(),
        ),
        (
            "TilepathSettings",
            std::any::TypeId::of::<TilepathSettings>(),
        ),
        (
            "TilepathFrameStats",
            std::any::TypeId::of::<TilepathFrameStats>(),
        ),
        ("PathOutcome", std::any::TypeId::of::<PathOutcome>()),
        ("Arrived", std::any::TypeId::of::<Arrived>()),
    ] {
        assert!(registry.get(id).is_some(), "{name} is not registered");
    }
}

/// Sums the expansions of every frame (to tell a cached tree from a new search).
#[derive(Resource, Default)]
struct Expansions(u64);

fn count_expansions(mut total: ResMut<Expansions>, stats: Res<TilepathFrameStats>) {
    total.0 += stats.expansions;
}

fn shared_app(settings: TilepathSettings) -> App {
    let mut app = app(settings, walls());
    app.init_resource::<Expansions>().add_systems(
        Update,
        count_expansions
            .after(TilepathSystems::Receive)
            .before(TilepathSystems::Last),
    );
    app.update();
    app
}

fn found_search(log: &Log, unit: Entity) -> Option<SearchKind> {
    let per = outcomes_per_entity(log);
    let v = per.get(&unit)?;
    assert_eq!(v.len(), 1, "{v:?}");
    match v[0].kind {
        OutcomeKind::Found { search, .. } => Some(search),
        _ => None,
    }
}

#[test]
fn one_shared_search_serves_a_group_at_their_own_astar_costs() {
    for workers in [WorkerMode::Inline, WorkerMode::Async { max_in_flight: 2 }] {
        // Budget enough to validate all 120 in one (debug build) frame: they wait together.
        let mut app = shared_app(TilepathSettings {
            workers,
            time_budget: Duration::from_millis(50),
            ..Default::default()
        });
        let goal = Cell::new(60, 2);
        let units: Vec<Entity> = (0..120)
            .map(|i| {
                unit_at(
                    &mut app,
                    Cell::new(i % 12, i / 12 * 3),
                    PathRequest::to_cell(goal),
                )
            })
            .collect();
        run_until_drained(&mut app, 2000);
        app.update();
        let grid = walls();
        let log = app.world().resource::<Log>();
        for &u in &units {
            assert_eq!(
                found_search(log, u),
                Some(SearchKind::Shared),
                "{workers:?}"
            );
            let path = app.world().get::<NavPath>(u).unwrap();
            let own =
                bevy_tilepath::core::find_path(&grid, path.cells[0], goal, &Default::default())
                    .unwrap();
            assert_eq!(path.cost, own.cost, "{workers:?}");
            assert_eq!(path.search, SearchKind::Shared);
        }
        // One search, not 120 (at most 16 starting a frame). Inline, requests validated in
        // later frames join the tree in progress; with workers, whose tree is away on a thread,
        // they start a second one.
        let most = if workers == WorkerMode::Inline { 1 } else { 2 };
        assert!(
            log.max_searching <= most,
            "{workers:?}: {}",
            log.max_searching
        );
    }
}

#[test]
fn shared_searches_off_search_alone_at_the_same_costs() {
    let mut app = shared_app(TilepathSettings {
        share_searches: false,
        ..Default::default()
    });
    let goal = Cell::new(60, 2);
    let units: Vec<Entity> = (0..20)
        .map(|i| unit_at(&mut app, Cell::new(i, 30), PathRequest::to_cell(goal)))
        .collect();
    run_until_drained(&mut app, 2000);
    app.update();
    let log = app.world().resource::<Log>();
    for &u in &units {
        // Their own searches: jump point searches on this grid of one terrain.
        assert_eq!(found_search(log, u), Some(SearchKind::JumpPoints));
    }
}

/// Units spawned on `cells` (their centres) and given one group order to `target`: the units
/// and where they stand.
fn group_at(app: &mut App, cells: impl Iterator<Item = Cell>, target: Vec2) -> Vec<(Entity, Vec2)> {
    let units: Vec<(Entity, Vec2)> = cells
        .map(|c| {
            let at = c.as_vec2() + 0.5;
            let e = app
                .world_mut()
                .spawn(Transform::from_translation(at.extend(0.0)))
                .id();
            (e, at)
        })
        .collect();
    let requests = {
        let mut q = app.world_mut().query::<&NavMap>();
        let map = q.single(app.world()).unwrap();
        group_order(map, target, &units)
    };
    for (e, r) in requests {
        app.world_mut().entity_mut(e).insert(r);
    }
    units
}

#[test]
fn group_order_gives_every_unit_a_legal_slot_of_its_own() {
    let mut app = shared_app(TilepathSettings::default());
    let spots = (0..90).map(|i| Cell::new(i % 15, 20 + i / 15));
    // The target is a wall cell: the group gathers at the nearest walkable cell.
    let units = group_at(&mut app, spots, Vec2::new(40.5, 30.5));
    run_until_drained(&mut app, 2000);
    app.update();
    let grid = walls();
    let log = app.world().resource::<Log>();
    let mut ends = std::collections::HashSet::new();
    for &(u, _) in &units {
        assert_eq!(found_search(log, u), Some(SearchKind::Shared));
        let path = app.world().get::<NavPath>(u).unwrap();
        let end = *path.cells.last().unwrap();
        assert!(grid.is_walkable(end) && grid.connected(end, Cell::new(0, 0)));
        assert!(ends.insert(end), "two units sent to {end:?}");
        assert!(
            (end - Cell::new(40, 30)).abs().max_element() <= 8,
            "{end:?}"
        );
        for w in path.cells.windows(2) {
            assert!(grid.can_step(w[0], w[1]));
        }
        let PathGoal::Slot { slot, .. } = path.request.goal else {
            panic!("{:?}", path.request.goal);
        };
        assert_eq!(slot, end);
    }
}

/// Grows the tree of a 90-unit group order on `walls()` over many frames (a small expansion
/// budget), toggling a cell far from the group every `edit_every` frames while it grows (0: no
/// edits) and closing one cell of the way through the east wall's gap once; every unit's path,
/// and the expansions the whole order took.
fn group_order_under_edits(edit_every: u64) -> (Vec<Option<NavPath>>, u64, App) {
    let mut app = shared_app(TilepathSettings {
        expansion_budget: 150,
        ..Default::default()
    });
    let spots = (0..90).map(|i| Cell::new(2 + i % 15, 20 + i / 15));
    let units = group_at(&mut app, spots, Vec2::new(55.5, 30.5));
    for frame in 1..=3000u64 {
        if edit_every > 0 && frame % edit_every == 0 && frame <= 60 {
            let mut maps = app.world_mut().query::<&mut NavMap>();
            let mut nav = maps.single_mut(app.world_mut()).unwrap();
            // Far from the group and its way: the south-east corner.
            let c = Cell::new(60 + (frame / edit_every % 3) as i32, 60);
            let open = nav.grid().is_walkable(c);
            nav.set_walkable(c, !open).unwrap();
            if frame == 2 * edit_every {
                // One cell of the way from the middle column to the gap in the east wall.
                nav.set_walkable(Cell::new(30, 1), false).unwrap();
            }
        }
        app.update();
        if frame > 60 && app.world().resource::<PendingRequests>().is_empty() {
            break;
        }
    }
    app.update();
    let paths = units
        .iter()
        .map(|&(u, _)| app.world().get::<NavPath>(u).cloned())
        .collect();
    let expansions = app.world().resource::<Expansions>().0;
    (paths, expansions, app)
}

#[test]
fn a_group_orders_shared_search_follows_edits_instead_of_starting_again() {
    let (quiet, quiet_expansions, _) = group_order_under_edits(0);
    let (edited, edited_expansions, mut app) = group_order_under_edits(4);
    let grid = map_grid(&mut app);
    let log = app.world().resource::<Log>();
    assert!(quiet.iter().all(Option::is_some));
    let mut shared = 0;
    for path in &edited {
        let path = path.as_ref().expect("every unit has a path");
        for w in path.cells.windows(2) {
            assert!(grid.can_step(w[0], w[1]), "{w:?}");
        }
        shared += usize::from(path.search == SearchKind::Shared);
    }
    assert!(
        log.messages
            .iter()
            .all(|o| matches!(o.kind, OutcomeKind::Found { .. }))
    );
    // The tree went on through the edits (it started again at every one before: 12,264
    // expansions against 3,508 without edits); a member whose path an edit broke searches
    // alone.
    assert!(shared >= 80, "{shared} of 90 served by the shared search");
    assert!(
        edited_expansions < quiet_expansions * 3 / 2,
        "{edited_expansions} expansions with edits, {quiet_expansions} without"
    );
}

#[test]
fn shared_search_members_replaced_removed_despawned_or_joining_mid_search() {
    // A tiny budget keeps the tree growing over many frames.
    let mut app = shared_app(TilepathSettings {
        expansion_budget: 20,
        ..Default::default()
    });
    let far = PathRequest::to_cell(Cell::new(63, 63));
    let units: Vec<Entity> = (0..8)
        .map(|i| unit_at(&mut app, Cell::new(i, 0), far.clone()))
        .collect();
    app.update();
    app.update();
    assert_eq!(
        app.world().get::<PathStatus>(units[0]),
        Some(&PathStatus::Searching)
    );
    app.world_mut()
        .entity_mut(units[0])
        .insert(PathRequest::to_cell(Cell::new(5, 5)));
    app.world_mut().entity_mut(units[1]).remove::<PathRequest>();
    app.world_mut().entity_mut(units[2]).despawn();
    let late = unit_at(&mut app, Cell::new(0, 40), far.clone());
    run_until_drained(&mut app, 20_000);
    app.update();
    let log = app.world().resource::<Log>();
    let kinds = |e: Entity| kinds_of(log, e);
    let r = kinds(units[0]);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0], OutcomeKind::Cancelled);
    assert!(matches!(r[1], OutcomeKind::Found { .. }));
    assert_eq!(kinds(units[1]), vec![OutcomeKind::Cancelled]);
    assert!(kinds(units[2]).is_empty());
    for &u in units[3..].iter().chain([&late]) {
        assert_eq!(found_search(log, u), Some(SearchKind::Shared));
    }
}

#[test]
fn a_few_requests_to_one_cell_search_alone_where_a_jump_table_serves() {
    // A jump point search reading the grid's jump table costs a fraction of a shared tree:
    // fewer than eight requests to one cell each search alone; eight or more share a tree, as
    // do two without jump tables.
    let goal = Cell::new(60, 60);
    for (units, jump_tables, shared) in [(7, true, false), (8, true, true), (2, false, true)] {
        let mut app = shared_app(TilepathSettings {
            jump_tables,
            searches_per_frame: 1,
            ..Default::default()
        });
        // The map's table is built on a worker (searches scan until it is there): these
        // requests come once it is.
        if jump_tables {
            wait_for_jump_table(&mut app);
        }
        let members: Vec<Entity> = (0..units)
            .map(|x| unit_at(&mut app, Cell::new(2 + x, 2), PathRequest::to_cell(goal)))
            .collect();
        // Requests sent back to wait for their own turn (one search starts a frame here) say
        // so: queued, not searching.
        app.update();
        let queued = members
            .iter()
            .filter(|&&u| app.world().get::<PathStatus>(u) == Some(&PathStatus::Queued))
            .count();
        if !shared {
            assert_eq!(queued, units as usize - 1, "the others wait, queued");
        }
        run_until_drained(&mut app, 100);
        app.update();
        let log = app.world().resource::<Log>();
        for &u in &members {
            let kind = found_search(log, u);
            let want = if shared {
                SearchKind::Shared
            } else {
                SearchKind::JumpPoints
            };
            assert_eq!(kind, Some(want), "{units} units, jump tables {jump_tables}");
        }
    }
}

#[test]
fn a_cached_tree_answers_later_requests_until_the_grid_changes() {
    let mut app = shared_app(TilepathSettings::default());
    let goal = Cell::new(60, 60);
    // Eight units to one goal share a tree (fewer search alone on a grid with a jump table).
    let first = unit_at(&mut app, Cell::new(2, 2), PathRequest::to_cell(goal));
    for x in 3..10 {
        unit_at(&mut app, Cell::new(x, 2), PathRequest::to_cell(goal));
    }
    run_until_drained(&mut app, 100);
    app.update();
    assert_eq!(app.world().resource::<PathQueue>().cached_trees(), 1);
    let on_route = app.world().get::<NavPath>(first).unwrap().cells[30];
    // A second unit standing on the first one's route: its path is read off the cached tree
    // without a single expansion.
    app.world_mut().resource_mut::<Expansions>().0 = 0;
    let second = unit_at(&mut app, on_route, PathRequest::to_cell(goal));
    run_until_drained(&mut app, 100);
    app.update();
    assert_eq!(app.world().resource::<Expansions>().0, 0);
    assert_eq!(
        found_search(app.world().resource::<Log>(), second),
        Some(SearchKind::Shared)
    );
    // A wall across the route: the cached tree is not used; the new path goes around it.
    let cut = app.world().get::<NavPath>(first).unwrap().cells[40];
    {
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        map.set_walkable(cut, false).unwrap();
    }
    let third = unit_at(&mut app, Cell::new(2, 2), PathRequest::to_cell(goal));
    run_until_drained(&mut app, 100);
    app.update();
    assert!(app.world().resource::<Expansions>().0 > 0);
    let path = app.world().get::<NavPath>(third).unwrap();
    assert!(!path.cells.contains(&cut));
}

#[test]
fn a_players_order_never_waits_behind_the_plugins_own_repaths() {
    // One search a frame, each alone: a backlog of automatic repaths builds up.
    let mut app = app(
        TilepathSettings {
            searches_per_frame: 1,
            share_searches: false,
            ..Default::default()
        },
        NavGrid::new(64, 64).unwrap(),
    );
    app.update();
    let movers: Vec<Entity> = (0..40)
        .map(|i| {
            let e = unit_at(
                &mut app,
                Cell::new(1, i + 10),
                PathRequest::to_cell(Cell::new(62, i + 10)),
            );
            app.world_mut().entity_mut(e).insert(Mover::default());
            e
        })
        .collect();
    run_until_drained(&mut app, 500);
    // A wall across every unit's way (a gap at the top): they all repath at once.
    {
        let mut q = app.world_mut().query::<&mut NavMap>();
        let mut map = q.single_mut(app.world_mut()).unwrap();
        for y in 0..60 {
            map.set_walkable(Cell::new(40, y), false).unwrap();
        }
    }
    app.update();
    let player = unit_at(
        &mut app,
        Cell::new(5, 5),
        PathRequest::to_cell(Cell::new(20, 5)),
    );
    app.world_mut().resource_mut::<Log>().messages.clear();
    run_until_drained(&mut app, 500);
    let log = app.world().resource::<Log>();
    let order: Vec<PathOutcome> = log.messages.clone();
    let repaths = order
        .iter()
        .filter(|o| o.origin == PathOrigin::GridEdit)
        .count();
    assert!(repaths >= 30, "{repaths} repaths");
    let at = order
        .iter()
        .position(|o| o.entity == player)
        .expect("the player's outcome");
    assert!(
        at <= 2,
        "the player's order came after {at} of the plugin's repaths"
    );
    assert!(order[at].latency_frames <= 3, "{:?}", order[at]);
    assert!(
        movers
            .iter()
            .all(|m| app.world().get::<NavPath>(*m).is_some())
    );
}

/// A 160 x 160 grid with a wall at x = 80 open only at y = 150..155 (a long detour north).
fn detour() -> NavGrid {
    let mut g = NavGrid::new(160, 160).unwrap();
    for y in (0..150).chain(155..160) {
        g.set_walkable(Cell::new(80, y), false).unwrap();
    }
    g
}

/// Runs frames until `map`'s region map is built.
fn wait_for_regions(app: &mut App) -> Entity {
    let map = app
        .world_mut()
        .query_filtered::<Entity, With<NavMap>>()
        .single(app.world())
        .unwrap();
    for _ in 0..2000 {
        app.update();
        if app
            .world()
            .resource::<PathQueue>()
            .region_map(map)
            .is_some()
        {
            return map;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the region map was never built");
}

/// The path of `unit`: legal on `grid`, from `start` to `goal`; its cost over the shortest's.
fn excess_over_shortest(app: &App, unit: Entity, grid: &NavGrid, start: Cell, goal: Cell) -> f64 {
    let path = app.world().get::<NavPath>(unit).expect("a path");
    assert_eq!(path.cells.first(), Some(&start));
    assert_eq!(path.cells.last(), Some(&goal));
    assert!(path.cells.windows(2).all(|w| grid.can_step(w[0], w[1])));
    let cost: u64 = path
        .cells
        .windows(2)
        .map(|w| grid.step_cost(w[0], w[1]).unwrap())
        .sum();
    let best = bevy_tilepath::core::find_path(grid, start, goal, &Default::default()).unwrap();
    cost as f64 / best.cost as f64 - 1.0
}

#[test]
fn long_requests_search_the_region_map_and_follow_edits() {
    for workers in [WorkerMode::Inline, WorkerMode::Async { max_in_flight: 2 }] {
        // Jump point search off: on this grid of one terrain long requests would be exact jump
        // point searches (see the next test).
        let mut app = app(
            TilepathSettings {
                workers,
                search: bevy_tilepath::core::SearchConfig {
                    jump_points: false,
                    ..Default::default()
                },
                ..Default::default()
            },
            detour(),
        );
        let map = wait_for_regions(&mut app);
        let (start, goal) = (Cell::new(4, 10), Cell::new(150, 12));
        let far = unit_at(&mut app, start, PathRequest::to_cell(goal));
        // Another goal: requests to one goal would share a search (exact too).
        let exact = unit_at(
            &mut app,
            start + Cell::new(0, 1),
            PathRequest::to_cell(goal + Cell::new(0, 2)).shortest(),
        );
        let near = unit_at(
            &mut app,
            start + Cell::new(0, 2),
            PathRequest::to_cell(start),
        );
        run_until_drained(&mut app, 3000);
        app.update();
        let grid = detour();
        {
            let log = app.world().resource::<Log>();
            assert_eq!(found_search(log, far), Some(SearchKind::Hierarchical));
            assert_eq!(found_search(log, exact), Some(SearchKind::Own));
            assert_eq!(found_search(log, near), Some(SearchKind::Own));
        }
        let excess = excess_over_shortest(&app, far, &grid, start, goal);
        assert!((0.0..0.05).contains(&excess), "{workers:?}: {excess}");
        let (s1, g1) = (start + Cell::new(0, 1), goal + Cell::new(0, 2));
        let exact_excess = excess_over_shortest(&app, exact, &grid, s1, g1);
        assert_eq!(exact_excess, 0.0, "{workers:?}");

        // The gap closes and another opens in the south: the region map follows (updated in the
        // clusters the edit touched) and the next long path takes the new gap.
        {
            let mut maps = app.world_mut().query::<&mut NavMap>();
            let mut nav = maps.single_mut(app.world_mut()).unwrap();
            for y in 150..155 {
                nav.set_walkable(Cell::new(80, y), false).unwrap();
            }
            for y in 3..6 {
                nav.set_walkable(Cell::new(80, y), true).unwrap();
            }
        }
        app.update();
        let edited = map_grid(&mut app);
        let regions = app.world().resource::<PathQueue>().region_map(map).unwrap();
        assert!(regions.is_current(&edited), "{workers:?}");
        let rebuilt = bevy_tilepath::core::RegionMap::build(&edited, regions.cluster_size());
        assert_eq!(regions.links(), rebuilt.links(), "{workers:?}");
        app.world_mut()
            .entity_mut(far)
            .insert(PathRequest::to_cell(goal));
        run_until_drained(&mut app, 3000);
        app.update();
        let log = app.world().resource::<Log>();
        let last = outcomes_per_entity(log)[&far].last().unwrap().kind;
        assert!(
            matches!(
                last,
                OutcomeKind::Found {
                    search: SearchKind::Hierarchical,
                    ..
                }
            ),
            "{workers:?}: {last:?}"
        );
        let excess = excess_over_shortest(&app, far, &edited, start, goal);
        assert!((0.0..0.05).contains(&excess), "{workers:?}: {excess}");
    }
}

#[test]
fn long_requests_on_a_grid_of_one_terrain_are_exact_jump_point_searches() {
    for workers in [WorkerMode::Inline, WorkerMode::Async { max_in_flight: 2 }] {
        let mut app = app(
            TilepathSettings {
                workers,
                ..Default::default()
            },
            detour(),
        );
        wait_for_regions(&mut app);
        let (start, goal) = (Cell::new(4, 10), Cell::new(150, 12));
        let far = unit_at(&mut app, start, PathRequest::to_cell(goal));
        run_until_drained(&mut app, 3000);
        app.update();
        let log = app.world().resource::<Log>();
        assert_eq!(found_search(log, far), Some(SearchKind::JumpPoints));
        let excess = excess_over_shortest(&app, far, &detour(), start, goal);
        assert!(excess.abs() < 1e-9, "{workers:?}: {excess}");
    }
}
#[test]
fn an_urgent_request_stops_a_less_urgent_worker_search_within_the_cap() {
    // A serpentine maze: a search across it expands most of its million cells.
    let mut grid = NavGrid::new(1000, 1000).unwrap();
    for x in (2..1000).step_by(4) {
        let gap = if x % 8 == 2 { 999 } else { 0 };
        for y in (0..1000).filter(|&y| y != gap) {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
        }
    }
    // A* (a jump point search reading a jump table crosses the maze within a frame, and the
    // slow search could end before the urgent request comes).
    let mut app = app(
        TilepathSettings {
            workers: WorkerMode::Async { max_in_flight: 1 },
            hierarchical_beyond: 0,
            search: bevy_tilepath::core::SearchConfig {
                jump_points: false,
                ..Default::default()
            },
            ..Default::default()
        },
        grid,
    );
    app.update();
    let slow = unit_at(
        &mut app,
        Cell::new(0, 0),
        PathRequest::to_cell(Cell::new(999, 0)),
    );
    app.update();
    let urgent = unit_at(
        &mut app,
        Cell::new(0, 5),
        PathRequest::to_cell(Cell::new(1, 9)).with_priority(50),
    );
    run_until_drained(&mut app, 20_000);
    let log = app.world().resource::<Log>();
    let order: Vec<Entity> = log.events.iter().map(|o| o.entity).collect();
    assert_eq!(order, vec![urgent, slow], "the urgent path first");
    for unit in [slow, urgent] {
        assert!(matches!(
            kinds_of(log, unit)[..],
            [OutcomeKind::Found { .. }]
        ));
    }
    assert!(log.max_searching <= 1, "{}", log.max_searching);
}

#[test]
fn one_worker_serves_many_searches_in_one_round_trip() {
    // One worker, twelve requests in one frame: the worker serves them one after the other
    // without waiting a frame between them, so they all come back in the next frames (before,
    // a worker took one search per frame's round trip: twelve frames at least).
    let mut app = app(
        TilepathSettings {
            workers: WorkerMode::Async { max_in_flight: 1 },
            hierarchical_beyond: 0,
            ..Default::default()
        },
        walls(),
    );
    app.update();
    let units: Vec<Entity> = (0..12)
        .map(|i| {
            unit_at(
                &mut app,
                Cell::new(2, 2 + i * 4),
                PathRequest::to_cell(Cell::new(60, 60 - i * 4)),
            )
        })
        .collect();
    let mut frames = 0;
    while !app.world().resource::<PendingRequests>().is_empty() {
        app.update();
        frames += 1;
        assert!(frames <= 6, "still pending after {frames} frames");
        // Time for the worker to finish everything it was handed (a few ms of searches).
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = app.world().resource::<Log>();
    for unit in units {
        assert!(matches!(
            kinds_of(log, unit)[..],
            [OutcomeKind::Found { .. }]
        ));
    }
    assert!(log.max_searching <= 1, "{}", log.max_searching);
}

#[test]
fn jump_tables_are_built_on_a_worker_and_in_lockstep_given_at_a_fixed_tick() {
    // One terrain, eight-way moves without corner cutting: jump point search runs, so the map
    // gets a table.
    let open = || NavGrid::new(48, 48).unwrap();
    let has_table = |app: &mut App| map_grid(app).has_jump_table();
    let mut app = app(TilepathSettings::default(), open());
    app.update();
    // A wall put up while the table is being built: the table is given to the grid all the same
    // (brought up to date with it).
    {
        let mut maps = app.world_mut().query::<&mut NavMap>();
        let mut map = maps.single_mut(app.world_mut()).unwrap();
        map.set_walkable(Cell::new(10, 10), false).unwrap();
    }
    wait_for_jump_table(&mut app);
    // Lockstep: the table is given at `region_ticks` after its build started, on every client.
    let settings = TilepathSettings {
        lockstep: Some(Lockstep {
            region_ticks: 5,
            ..default()
        }),
        ..default()
    };
    let mut app = self::app(settings, open());
    for _ in 0..5 {
        app.update();
        assert!(!has_table(&mut app));
    }
    app.update();
    assert!(has_table(&mut app));
}

/// A map reads as changed (`Changed<NavMap>`) only in the frames it was edited in, so a game
/// (and the movement's sleeping units) can tell; a unit's request alone changes no map.
#[test]
fn a_map_reads_as_changed_only_when_edited() {
    #[derive(Resource, Default)]
    struct Changes(usize);
    let mut app = app(TilepathSettings::default(), walls());
    app.init_resource::<Changes>().add_systems(
        Last,
        |maps: Query<(), Changed<NavMap>>, mut changes: ResMut<Changes>| {
            changes.0 += maps.iter().count();
        },
    );
    wait_for_jump_table(&mut app);
    unit_at(
        &mut app,
        Cell::new(2, 2),
        PathRequest::to_cell(Cell::new(50, 50)),
    );
    let changes = |app: &mut App| std::mem::take(&mut app.world_mut().resource_mut::<Changes>().0);
    changes(&mut app);
    for _ in 0..30 {
        app.update();
    }
    assert_eq!(changes(&mut app), 0, "no edit");
    let mut maps = app.world_mut().query::<&mut NavMap>();
    let mut map = maps.single_mut(app.world_mut()).unwrap();
    map.set_walkable(Cell::new(60, 60), false).unwrap();
    app.update();
    app.update();
    assert_eq!(changes(&mut app), 1, "one edit");
}
