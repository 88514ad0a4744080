//! Headless plugin tests (`MinimalPlugins`, manual time step): the queue's limits, exactly one
//! outcome per request, replace / remove / despawn, failure reasons, worker mode.

use std::collections::HashMap;
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::prelude::*;
use bevy_tilepath::{PathQueue, TilepathFrameStats};

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
        .add_plugins(TilepathPlugin::default())
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

fn run_until_drained(app: &mut App, max_frames: usize) -> usize {
    for frame in 0..max_frames {
        app.update();
        if app.world().resource::<PathQueue>().pending_len() == 0 {
            return frame + 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!("requests still pending after {max_frames} frames");
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
    let grid = app
        .world_mut()
        .query::<&NavMap>()
        .single(app.world())
        .unwrap()
        .grid()
        .clone();
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
        let path = app.world().get::<Path>(*u).unwrap();
        for w in path.cells.windows(2) {
            assert!(grid.can_step(w[0], w[1]));
        }
    }
    assert_eq!(log.events.len(), log.messages.len());
}

#[test]
fn replace_remove_and_despawn_mid_search() {
    // A tiny budget keeps searches in flight over several frames.
    let settings = TilepathSettings {
        expansion_budget: 20,
        searches_per_frame: 4,
        ..Default::default()
    };
    let mut app = app(settings, walls());
    app.update();
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
    let per = outcomes_per_entity(log);
    let kinds = |e: Entity| {
        per.get(&e)
            .map(|v| v.iter().map(|o| o.kind).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let r = kinds(replaced);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0], OutcomeKind::Cancelled);
    assert!(matches!(r[1], OutcomeKind::Found { .. }));
    assert_eq!(
        app.world().get::<Path>(replaced).unwrap().goal,
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
        .map(|&u| app.world().get::<Path>(u).expect("found").cost)
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
    let grid = app
        .world_mut()
        .query::<&NavMap>()
        .single(app.world())
        .unwrap()
        .grid()
        .clone();
    for u in units {
        let path = app.world().get::<Path>(u).expect("found");
        assert!(
            path.cells.contains(&Cell::new(128, 255)),
            "path ignores the new wall"
        );
        for w in path.cells.windows(2) {
            assert!(grid.can_step(w[0], w[1]));
        }
    }
}
