//! A map that is a graph: towns placed anywhere, roads between them (one a one-way river run,
//! one a mountain pass dearer than its length), and caravans going from town to town for ever.
//! Each caravan asks with an ordinary `PathRequest`, walks each road along its line, and when
//! it arrives picks another town.
//!
//! `cargo run --release --features demo --example world_map` opens a window;
//! `-- --headless --frames 3600` runs without one and prints a summary line, failing (non-zero
//! exit) if a caravan left its roads or never finished a trip.

use bevy::prelude::*;
use bevy_tilepath::core::{BuiltWaypoints, WaypointGraph, WaypointId};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{Arrived, LeftLink};

/// The towns: (name, x, y) in world units.
const TOWNS: [(&str, f32, f32); 12] = [
    ("Ash", -520.0, -260.0),
    ("Brook", -380.0, 40.0),
    ("Cairn", -440.0, 260.0),
    ("Dale", -120.0, 220.0),
    ("Elm", -160.0, -120.0),
    ("Ford", 80.0, -280.0),
    ("Gate", 140.0, 60.0),
    ("Hythe", 60.0, 300.0),
    ("Isle", 380.0, 240.0),
    ("Jarl", 420.0, -40.0),
    ("Keld", 300.0, -260.0),
    ("Lune", 560.0, -220.0),
];

/// The roads, both ways at their length unless a cost is given; the river run goes one way.
const ROADS: [(usize, usize, Option<f32>, bool); 17] = [
    (0, 1, None, true),
    (1, 2, None, true),
    (2, 3, None, true),
    (1, 4, None, true),
    (0, 4, None, true),
    (4, 5, None, true),
    (4, 6, None, true),
    (3, 6, None, true),
    (3, 7, None, true),
    (6, 7, None, true),
    (7, 8, None, true),
    (6, 9, None, true),
    (8, 9, None, true),
    (5, 10, None, true),
    (9, 10, None, true),
    (10, 11, None, true),
    // A mountain pass from Lune to Isle, twice its length; and the river from Cairn down to Ash.
    (11, 8, Some(2.0), true),
];
const RIVER: (usize, usize) = (2, 0);

/// World units a cell of the graph's grid.
const SPACING: f32 = 10.0;

#[derive(Resource)]
struct Atlas {
    built: BuiltWaypoints,
    /// Each town's world position (its cell's centre) and each road's ends.
    towns: Vec<Vec2>,
    roads: Vec<(Vec2, Vec2)>,
}

/// A caravan: its pick of towns and the trips it finished.
#[derive(Component)]
struct Caravan {
    seed: u32,
    trips: u32,
}

#[derive(Resource, Default)]
struct Tally {
    crossings: u32,
    off_road_frames: u32,
}

fn main() -> AppExit {
    let mut args = std::env::args().skip(1);
    let (mut headless, mut frames) = (false, 3600u32);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--headless" => headless = true,
            "--frames" => frames = args.next().and_then(|f| f.parse().ok()).unwrap_or(frames),
            other => {
                eprintln!("unknown argument {other:?} (--headless, --frames N)");
                return AppExit::error();
            }
        }
    }
    let mut app = App::new();
    if headless {
        app.add_plugins(MinimalPlugins).insert_resource(
            bevy::time::TimeUpdateStrategy::ManualDuration(std::time::Duration::from_secs_f64(
                1.0 / 60.0,
            )),
        );
    } else {
        app.add_plugins(DefaultPlugins)
            .add_systems(Startup, |mut commands: Commands| {
                commands.spawn(Camera2d);
            })
            .add_systems(Update, draw);
    }
    app.add_plugins(TilepathPlugins::default())
        .init_resource::<Tally>()
        .insert_resource(atlas())
        .add_systems(Startup, spawn)
        .add_systems(Update, check_roads)
        .add_observer(next_trip)
        .add_observer(|_: On<LeftLink>, mut tally: ResMut<Tally>| tally.crossings += 1);
    if !headless {
        return app.run();
    }
    for _ in 0..frames {
        app.update();
    }
    summary(app.world_mut())
}

/// The graph, built.
fn atlas() -> Atlas {
    let mut graph = WaypointGraph::new(SPACING);
    let ids: Vec<WaypointId> = TOWNS
        .iter()
        .map(|&(_, x, y)| graph.add_waypoint(Vec2::new(x, y)))
        .collect();
    let length = |a: usize, b: usize| {
        Vec2::new(TOWNS[a].1, TOWNS[a].2).distance(Vec2::new(TOWNS[b].1, TOWNS[b].2)) / SPACING
    };
    for &(a, b, dearer, two_way) in &ROADS {
        let cost = length(a, b) * dearer.unwrap_or(1.0);
        graph.add_way_with(ids[a], ids[b], cost, two_way).unwrap();
    }
    let (a, b) = RIVER;
    graph
        .add_way_with(ids[a], ids[b], length(a, b) * 0.5, false)
        .unwrap();
    let built = graph.build().expect("the towns are far enough apart");
    let map = NavMap::from_waypoints(&built);
    let towns: Vec<Vec2> = ids
        .iter()
        .map(|&t| map.cell_to_world(built.cell(t)))
        .collect();
    let roads = ROADS
        .iter()
        .map(|&(a, b, ..)| (towns[a], towns[b]))
        .chain([(towns[RIVER.0], towns[RIVER.1])])
        .collect();
    Atlas {
        built,
        towns,
        roads,
    }
}

fn spawn(mut commands: Commands, world: Res<Atlas>) {
    commands.spawn(NavMap::from_waypoints(&world.built));
    for k in 0..36u32 {
        let home = (k as usize * 5) % TOWNS.len();
        let mut caravan = Caravan { seed: k, trips: 0 };
        let goal = pick(&mut caravan, home);
        commands.spawn((
            Transform::from_translation(world.towns[home].extend(1.0)),
            Mover {
                speed: 6.0 + (k % 4) as f32,
                ..default()
            },
            PathRequest::to_cell(world.built.cells[goal]),
            caravan,
        ));
    }
}

/// Another town than `from`, from the caravan's own sequence.
fn pick(caravan: &mut Caravan, from: usize) -> usize {
    caravan.seed = caravan
        .seed
        .wrapping_mul(1_664_525)
        .wrapping_add(1_013_904_223);
    let k = (caravan.seed >> 8) as usize % (TOWNS.len() - 1);
    (from + 1 + k) % TOWNS.len()
}

/// A caravan that arrived sets off for another town.
fn next_trip(
    arrived: On<Arrived>,
    mut caravans: Query<&mut Caravan>,
    world: Res<Atlas>,
    mut commands: Commands,
) {
    let Ok(mut caravan) = caravans.get_mut(arrived.entity) else {
        return;
    };
    caravan.trips += 1;
    let here = world
        .built
        .waypoint_at(arrived.cell)
        .map_or(0, |t| t.0 as usize);
    let next = pick(&mut caravan, here);
    commands
        .entity(arrived.entity)
        .insert(PathRequest::to_cell(world.built.cells[next]));
}

/// Counts frames a caravan is off every road (more than a cell from all of them).
fn check_roads(
    caravans: Query<&Transform, With<Caravan>>,
    world: Res<Atlas>,
    mut tally: ResMut<Tally>,
) {
    for t in &caravans {
        let p = t.translation.truncate();
        let near = world.roads.iter().any(|&(a, b)| {
            let s = ((p - a).dot(b - a) / (b - a).length_squared()).clamp(0.0, 1.0);
            p.distance(a + (b - a) * s) < SPACING
        });
        tally.off_road_frames += u32::from(!near);
    }
}

fn draw(mut gizmos: Gizmos, world: Res<Atlas>, caravans: Query<(&Transform, &Caravan)>) {
    for &(a, b) in &world.roads {
        gizmos.line_2d(a, b, Color::srgb(0.6, 0.5, 0.35));
    }
    for &t in &world.towns {
        gizmos.circle_2d(t, 12.0, Color::srgb(0.9, 0.9, 0.7));
    }
    for (t, c) in &caravans {
        let hue = (c.seed % 360) as f32;
        gizmos.circle_2d(t.translation.truncate(), 4.0, Color::hsl(hue, 0.8, 0.6));
    }
}

fn summary(world: &mut bevy::ecs::world::World) -> AppExit {
    let trips: Vec<u32> = world
        .query::<&Caravan>()
        .iter(world)
        .map(|c| c.trips)
        .collect();
    let tally = world.resource::<Tally>();
    let idle = trips.iter().filter(|&&t| t == 0).count();
    println!(
        "summary towns={} caravans={} trips={} caravans_without_a_trip={idle} crossings={} off_road_frames={}",
        TOWNS.len(),
        trips.len(),
        trips.iter().sum::<u32>(),
        tally.crossings,
        tally.off_road_frames
    );
    if idle > 0 || tally.off_road_frames > 0 {
        return AppExit::error();
    }
    AppExit::Success
}
