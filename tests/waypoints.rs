//! Maps that are graphs: a unit on a map of waypoints (towns and the roads between them) is
//! ordered from town to town with the plugin's ordinary request; it walks each road along its
//! line at its speed, one `EnteredLink` / `LeftLink` pair a road, and arrives; a one-way road is
//! not taken back; a town no road leads to fails with its reason; five units sent to one town
//! all arrive in it; every search mode agrees with a plain Dijkstra over the roads.

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_tilepath::core::{
    Cell, Heuristic, SearchConfig, WaypointGraph, WaypointId, find_nearest, find_path,
};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{EnteredLink, LeftLink, MoveState, PathProgress};

#[derive(Resource, Default)]
struct Log {
    entered: Vec<EnteredLink>,
    left: Vec<LeftLink>,
}

/// Four towns: west to middle to east by road, a one-way road from east to north, and a lone
/// island no road reaches. 10 world units a cell.
fn towns() -> (WaypointGraph, [WaypointId; 5]) {
    let mut graph = WaypointGraph::new(10.0);
    let west = graph.add_waypoint(Vec2::new(0.0, 0.0));
    let middle = graph.add_waypoint(Vec2::new(300.0, 400.0));
    let east = graph.add_waypoint(Vec2::new(600.0, 0.0));
    let north = graph.add_waypoint(Vec2::new(600.0, 600.0));
    let island = graph.add_waypoint(Vec2::new(0.0, 600.0));
    graph.add_way(west, middle).unwrap();
    graph.add_way(middle, east).unwrap();
    graph.add_way_with(east, north, 30.0, false).unwrap();
    (graph, [west, middle, east, north, island])
}

fn app() -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        .add_plugins(TilepathPlugins::default())
        .init_resource::<Log>()
        .add_observer(|e: On<EnteredLink>, mut log: ResMut<Log>| log.entered.push(*e))
        .add_observer(|e: On<LeftLink>, mut log: ResMut<Log>| log.left.push(*e));
    app
}

fn distance_to_segment(p: Vec2, a: Vec2, b: Vec2) -> f32 {
    let t = ((p - a).dot(b - a) / (b - a).length_squared()).clamp(0.0, 1.0);
    p.distance(a + (b - a) * t)
}

#[test]
fn a_unit_walks_the_roads_from_town_to_town() {
    let (graph, [west, middle, east, north, island]) = towns();
    let built = graph.build().unwrap();
    let mut app = app();
    let map = NavMap::from_waypoints(&built);
    let places: Vec<Vec2> = [west, middle, east, north]
        .map(|t| map.cell_to_world(built.cell(t)))
        .to_vec();
    let at = |t: WaypointId| places[t.0 as usize];
    let (w, m, e) = (at(west), at(middle), at(east));
    app.world_mut().spawn(map);
    app.update();
    let speed = 5.0;
    let unit = app
        .world_mut()
        .spawn((
            Transform::from_translation(w.extend(0.0)),
            Mover { speed, ..default() },
            PathRequest::to_cell(built.cell(east)),
        ))
        .id();
    let mut frames = 0;
    let position = |app: &App| {
        app.world()
            .get::<Transform>(unit)
            .unwrap()
            .translation
            .truncate()
    };
    while app.world().get::<PathProgress>(unit).map(|p| p.state) != Some(MoveState::Arrived) {
        app.update();
        frames += 1;
        assert!(frames < 60 * 60, "not arrived: at {}", position(&app));
        // Always on one of the two roads (a tile is 10 world units).
        let p = position(&app);
        let off = distance_to_segment(p, w, m).min(distance_to_segment(p, m, e));
        assert!(off < 1.0, "off the road at {p}, {off} units");
    }
    assert!(position(&app).distance(e) < 1.0);
    // Two roads of 50 tiles at 5 tiles a second: 20 seconds.
    let seconds = frames as f32 / 60.0;
    assert!((19.5..21.0).contains(&seconds), "{seconds} s");
    let log = app.world().resource::<Log>();
    assert_eq!(log.entered.len(), 2);
    assert_eq!(log.left.len(), 2);
    assert_eq!(
        log.left.iter().map(|l| l.to).collect::<Vec<_>>(),
        [built.cell(middle), built.cell(east)]
    );

    // On to the north by the one-way road, then back: no road leads back from the north.
    app.world_mut()
        .entity_mut(unit)
        .insert(PathRequest::to_cell(built.cell(north)));
    for _ in 0..60 * 10 {
        app.update();
    }
    assert!(position(&app).distance(at(north)) < 1.0);
    for goal in [west, island] {
        app.world_mut()
            .entity_mut(unit)
            .insert(PathRequest::to_cell(built.cell(goal)));
        for _ in 0..10 {
            app.update();
        }
        let status = *app.world().get::<PathStatus>(unit).unwrap();
        assert!(matches!(status, PathStatus::Failed(_)), "{status:?}");
    }
}

#[test]
fn searches_on_a_waypoint_map_agree_with_a_dijkstra_over_its_roads() {
    // A ring of 12 towns with roads between neighbours and a few across.
    let mut graph = WaypointGraph::new(5.0);
    let towns: Vec<WaypointId> = (0..12)
        .map(|k| {
            let a = k as f32 * std::f32::consts::TAU / 12.0;
            graph.add_waypoint(Vec2::new(a.cos(), a.sin()) * 200.0)
        })
        .collect();
    let mut roads = Vec::new();
    for k in 0..12 {
        roads.push((k, (k + 1) % 12, None));
    }
    roads.extend([(0, 6, Some(35.0)), (3, 9, Some(90.0)), (2, 7, None)]);
    for &(a, b, cost) in &roads {
        match cost {
            Some(c) => graph.add_way_with(towns[a], towns[b], c, true).unwrap(),
            None => graph.add_way(towns[a], towns[b]).unwrap(),
        }
    }
    let built = graph.build().unwrap();
    // The reference: Dijkstra over the roads' costs in tiles.
    let cost = |a: usize, b: usize, c: Option<f32>| {
        c.unwrap_or(graph.waypoints()[a].distance(graph.waypoints()[b]) / 5.0) as f64
    };
    let mut best = [[f64::INFINITY; 12]; 12];
    for (k, row) in best.iter_mut().enumerate() {
        row[k] = 0.0;
    }
    for &(a, b, c) in &roads {
        best[a][b] = best[a][b].min(cost(a, b, c));
        best[b][a] = best[b][a].min(cost(a, b, c));
    }
    for k in 0..12 {
        for i in 0..12 {
            for j in 0..12 {
                best[i][j] = best[i][j].min(best[i][k] + best[k][j]);
            }
        }
    }
    for a in 0..12 {
        for b in 0..12 {
            if a == b {
                continue;
            }
            let (from, to) = (built.cell(towns[a]), built.cell(towns[b]));
            for heuristic in [Heuristic::Octile, Heuristic::Zero] {
                for jump_points in [false, true] {
                    let config = SearchConfig {
                        heuristic,
                        jump_points,
                        ..default()
                    };
                    let path = find_path(&built.grid, from, to, &config).unwrap();
                    assert!(
                        (path.length - best[a][b]).abs() < 1e-2,
                        "{a} -> {b}: {} vs {}",
                        path.length,
                        best[a][b]
                    );
                    assert!(path.cells.iter().all(|&c| built.waypoint_at(c).is_some()));
                }
            }
        }
        // Nearest of the two towns across the ring.
        let goals: Vec<Cell> = [(a + 5) % 12, (a + 7) % 12]
            .map(|k| built.cell(towns[k]))
            .to_vec();
        let path = find_nearest(&built.grid, built.cell(towns[a]), &goals, &default()).unwrap();
        let want = best[a][(a + 5) % 12].min(best[a][(a + 7) % 12]);
        assert!((path.length - want).abs() < 1e-2, "nearest from {a}");
    }
}

#[test]
fn a_caravan_of_units_reaches_one_town() {
    let (graph, [west, _, east, ..]) = towns();
    let built = graph.build().unwrap();
    let mut app = app();
    let map = NavMap::from_waypoints(&built);
    let (w, e) = (
        map.cell_to_world(built.cell(west)),
        map.cell_to_world(built.cell(east)),
    );
    app.world_mut().spawn(map);
    app.update();
    let units: Vec<Entity> = (0..5)
        .map(|_| {
            app.world_mut()
                .spawn((
                    Transform::from_translation(w.extend(0.0)),
                    Mover::default(),
                    PathRequest::to_cell(built.cell(east)),
                ))
                .id()
        })
        .collect();
    for _ in 0..60 * 40 {
        app.update();
    }
    for (k, &u) in units.iter().enumerate() {
        let p = app
            .world()
            .get::<Transform>(u)
            .unwrap()
            .translation
            .truncate();
        let state = app.world().get::<PathProgress>(u).unwrap().state;
        assert_eq!(state, MoveState::Arrived, "unit {k}");
        // In the east town's cell (10 world units), sharing it.
        assert!(p.distance(e) < 5.0, "unit {k} at {p}, not in the east town");
    }
}
