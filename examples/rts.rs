//! The RTS demo: a generated map drawn with bevy_ecs_tilemap, two armies, box selection,
//! right-click orders, live wall editing and the debug overlay.
//!
//! ```text
//! cargo run --release --features demo --example rts                      # play
//! cargo run --release --features demo --example rts -- --headless --units 1000 --frames 3000 --seed 1
//! cargo run --release --features demo --example rts -- --screenshot docs/rts.png
//! ```
//!
//! `--turning-radius R` gives units a turning radius of R tiles (default 0.5; 0 turns in place).
//! Headless debugging: `RTS_DEBUG=1` lists the units that did not arrive and every wall overlap,
//! `RTS_MAP=1` prints the map with them, `RTS_TRACE=12,40` prints those entities' state each
//! frame.
//!
//! Controls: drag with the left mouse button to select blue units, right-click to order them,
//! `W` toggles a wall under the cursor, `F1`-`F5` toggle the debug layers. Red units are given
//! orders by a simple script.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bevy::diagnostic::{DiagnosticsStore, FrameTimeDiagnosticsPlugin};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::time::TimeUpdateStrategy;
use bevy::window::PrimaryWindow;
use bevy_ecs_tilemap::prelude::*;
use bevy_tilepath::core::{BLOCKED, Cell, GoalPolicy, NavGrid, cell_at, overlaps_blocked};
use bevy_tilepath::debug::{DebugSelected, TilepathDebugPlugin};
use bevy_tilepath::prelude::*;
use bevy_tilepath::tilemap::{NavTile, TilemapNavPlugin, world_to_tile};
use bevy_tilepath::{MoveState, PathProgress, TilepathDiagnostics};

const MAP_W: u32 = 96;
const MAP_H: u32 = 54;
const TILE: f32 = 16.0;

// ---------------------------------------------------------------------------------------------
// The map: shared by the windowed game and the headless simulation.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Terrain {
    Grass,
    Forest,
    Water,
    Wall,
    Road,
}

impl Terrain {
    /// Texture index in assets/tiles.png.
    fn texture(self) -> u32 {
        match self {
            Terrain::Grass => 0,
            Terrain::Forest => 1,
            Terrain::Water => 2,
            Terrain::Wall => 3,
            Terrain::Road => 4,
        }
    }

    /// Navigation cost: roads are fastest, forest slow, water and walls blocked.
    fn cost(self) -> u8 {
        match self {
            Terrain::Road => 1,
            Terrain::Grass => 2,
            Terrain::Forest => 5,
            Terrain::Water | Terrain::Wall => BLOCKED,
        }
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: i32) -> i32 {
        (self.next() % n.max(1) as u64) as i32
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A river with two bridges down the middle, two walled compounds with narrow gates, forests,
/// and roads across.
fn generate_map(seed: u64) -> Vec<Terrain> {
    let (w, h) = (MAP_W as i32, MAP_H as i32);
    let mut rng = Rng::new(seed);
    let mut t = vec![Terrain::Grass; (w * h) as usize];
    let idx = |x: i32, y: i32| (y * w + x) as usize;
    // Forest blobs.
    for _ in 0..14 {
        let (cx, cy, r) = (rng.below(w), rng.below(h), 2 + rng.below(4));
        for y in cy - r..=cy + r {
            for x in cx - r..=cx + r {
                if x >= 0
                    && y >= 0
                    && x < w
                    && y < h
                    && (x - cx).pow(2) + (y - cy).pow(2) <= r * r + rng.below(3)
                {
                    t[idx(x, y)] = Terrain::Forest;
                }
            }
        }
    }
    // A meandering river, two or three tiles wide.
    let mut rx = w as f32 / 2.0;
    for y in 0..h {
        rx += (rng.unit() - 0.5) * 1.6;
        rx = rx.clamp(w as f32 * 0.4, w as f32 * 0.6);
        for dx in 0..3 {
            t[idx(rx as i32 + dx - 1, y)] = Terrain::Water;
        }
    }
    // Roads: one across (with a bridge), one down the left third, a second bridge lower.
    let road_y = h / 2 + rng.below(5) - 2;
    for x in 0..w {
        t[idx(x, road_y)] = Terrain::Road;
    }
    let bridge_y = (h / 5 + rng.below(4)).min(h - 1);
    for x in (w / 2 - 6)..(w / 2 + 6) {
        t[idx(x, bridge_y)] = Terrain::Road;
    }
    let road_x = w / 4 + rng.below(5);
    for y in 0..h {
        t[idx(road_x, y)] = Terrain::Road;
    }
    // Two walled compounds with one-tile gates (narrow passes).
    for (x0, y0, cw, ch) in [(6, 6, 14, 10), (w - 22, h - 18, 15, 11)] {
        for x in x0..x0 + cw {
            for y in [y0, y0 + ch - 1] {
                t[idx(x, y)] = Terrain::Wall;
            }
        }
        for y in y0..y0 + ch {
            for x in [x0, x0 + cw - 1] {
                t[idx(x, y)] = Terrain::Wall;
            }
        }
        t[idx(x0 + cw / 2, y0)] = Terrain::Road; // gates
        t[idx(x0 + cw - 1, y0 + ch / 2)] = Terrain::Road;
    }
    // A long wall with a single gap on each side of the river.
    for (x, gap) in [(w / 2 - 12, h / 3), (w / 2 + 12, 2 * h / 3)] {
        for y in 4..h - 4 {
            if (y - gap).abs() > 0 && t[idx(x, y)] != Terrain::Road {
                t[idx(x, y)] = Terrain::Wall;
            }
        }
    }
    t
}

fn nav_grid(terrain: &[Terrain]) -> NavGrid {
    let costs: Vec<u8> = terrain.iter().map(|t| t.cost()).collect();
    NavGrid::from_terrain(MAP_W, MAP_H, Default::default(), &costs).expect("valid map")
}

/// The largest island's cells (units start only there).
fn main_island(grid: &NavGrid) -> HashSet<u32> {
    let mut sizes = std::collections::HashMap::new();
    for c in grid.cells() {
        if let Some(i) = grid.island(c) {
            *sizes.entry(i).or_insert(0) += 1;
        }
    }
    sizes
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map(|(i, _)| i)
        .into_iter()
        .collect()
}

fn origin() -> Vec2 {
    -Vec2::new(MAP_W as f32, MAP_H as f32) * TILE / 2.0
}

// ---------------------------------------------------------------------------------------------
// Units and orders.

#[derive(Component, Clone, Copy, PartialEq, Eq, Debug)]
enum Team {
    Blue,
    Red,
}

#[derive(Component)]
struct Selected;

/// Goal cells for a group: the walkable cells nearest the target on its island, breadth first,
/// one per unit, so a group spreads around the point instead of fighting for one cell.
fn spread_goals(grid: &NavGrid, target: Cell, n: usize) -> Vec<Cell> {
    let start = if grid.is_walkable(target) {
        target
    } else {
        match bevy_tilepath::core::nearest_on_island(
            grid,
            target,
            main_island(grid).into_iter().next(),
        ) {
            Some(c) => c,
            None => return Vec::new(),
        }
    };
    grid.cells_outward(start, u32::MAX).take(n).collect()
}

/// Orders `units` (entity, grid position) to spread around `target`: each unit, nearest first,
/// takes the closest free goal cell.
fn order_group(commands: &mut Commands, grid: &NavGrid, units: &[(Entity, Vec2)], target: Cell) {
    let mut goals = spread_goals(grid, target, units.len());
    let mut order: Vec<&(Entity, Vec2)> = units.iter().collect();
    let tc = target.as_vec2() + 0.5;
    order.sort_by(|a, b| {
        a.1.distance_squared(tc)
            .total_cmp(&b.1.distance_squared(tc))
    });
    for (entity, pos) in order {
        if goals.is_empty() {
            break;
        }
        let (k, _) = goals
            .iter()
            .enumerate()
            .map(|(k, g)| (k, (g.as_vec2() + 0.5).distance_squared(*pos)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("non-empty");
        let goal = goals.swap_remove(k);
        commands
            .entity(*entity)
            .insert(PathRequest::to_cell(goal).with_policy(GoalPolicy::NearestReachable));
    }
}

/// A unit whose request failed (e.g. every way was blocked by stopped units) tries again.
fn retry_failed(
    mut commands: Commands,
    units: Query<(Entity, &PathStatus, &PathRequest), Changed<PathStatus>>,
) {
    for (entity, status, request) in &units {
        if matches!(status, PathStatus::Failed(_)) {
            commands
                .entity(entity)
                .insert(request.clone().with_policy(GoalPolicy::NearestReachable));
        }
    }
}

fn spawn_positions(grid: &NavGrid, n: usize, left: bool, rng: &mut Rng) -> Vec<Cell> {
    let island = main_island(grid);
    let mut cells: Vec<Cell> = grid
        .cells()
        .filter(|&c| grid.island(c).is_some_and(|i| island.contains(&i)))
        .filter(|c| {
            if left {
                c.x < MAP_W as i32 / 3
            } else {
                c.x >= 2 * MAP_W as i32 / 3
            }
        })
        .collect();
    for i in (1..cells.len()).rev() {
        cells.swap(i, rng.below(i as i32 + 1) as usize);
    }
    cells.truncate(n);
    cells
}

/// `--turning-radius R` (tiles, as f32 bits; set from the command line, default 0.5).
static TURNING_RADIUS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn mover() -> Mover {
    Mover {
        speed: 5.0,
        radius: 0.3,
        turning_radius: f32::from_bits(TURNING_RADIUS.load(std::sync::atomic::Ordering::Relaxed)),
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Command line.

struct Args {
    headless: bool,
    units: usize,
    frames: usize,
    seed: u64,
    screenshot: Option<String>,
    turning_radius: f32,
}

fn parse_args() -> Args {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    Args {
        headless: args.iter().any(|a| a == "--headless"),
        units: value("--units").and_then(|v| v.parse().ok()).unwrap_or(600),
        frames: value("--frames")
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000),
        seed: value("--seed").and_then(|v| v.parse().ok()).unwrap_or(1),
        screenshot: value("--screenshot"),
        turning_radius: value("--turning-radius")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.5),
    }
}

fn main() -> std::process::ExitCode {
    let args = parse_args();
    TURNING_RADIUS.store(
        args.turning_radius.max(0.0).to_bits(),
        std::sync::atomic::Ordering::Relaxed,
    );
    if args.headless {
        headless(&args)
    } else {
        windowed(args);
        std::process::ExitCode::SUCCESS
    }
}

// ---------------------------------------------------------------------------------------------
// Headless: the same simulation without a window, scripted orders, a summary line.

fn headless(args: &Args) -> std::process::ExitCode {
    let terrain = generate_map(args.seed);
    let grid = nav_grid(&terrain);
    let mut rng = Rng::new(args.seed ^ 0xABCD);
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / 60.0,
        )))
        // Inline searches bounded by expansions, not wall time: the run is deterministic.
        .insert_resource(TilepathSettings {
            workers: WorkerMode::Inline,
            searches_per_frame: 16,
            max_inline_searches: 4,
            expansion_budget: 100_000,
            time_budget: Duration::from_millis(100),
            ..Default::default()
        })
        .add_plugins(TilepathPlugin::default())
        .add_systems(
            Update,
            retry_failed.after(bevy_tilepath::TilepathSystems::Receive),
        );
    app.world_mut()
        .spawn(NavMap::new(grid.clone(), origin(), Vec2::splat(TILE)));
    let half = args.units / 2;
    let mut units = Vec::new();
    for (team, left, n) in [
        (Team::Blue, true, half),
        (Team::Red, false, args.units - half),
    ] {
        for c in spawn_positions(&grid, n, left, &mut rng) {
            let p = origin() + (c.as_vec2() + 0.5) * TILE;
            units.push(
                app.world_mut()
                    .spawn((team, mover(), Transform::from_xyz(p.x, p.y, 1.0)))
                    .id(),
            );
        }
    }
    app.update();
    // Scripted orders: groups of 50 cross the map (through the bridges and the wall gaps), then
    // everyone is sent to a final rally point on the other side.
    let final_order_frame = args.frames / 3;
    let mut frame_ms = Vec::new();
    let mut wall_overlaps = 0u64;
    let debug = std::env::var_os("RTS_DEBUG").is_some();
    // RTS_TRACE=3,17: print those entity indices' state every frame.
    let trace: Option<Vec<u32>> = std::env::var("RTS_TRACE")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    for frame in 0..args.frames {
        if frame % 90 == 0 && frame < final_order_frame || frame == final_order_frame {
            let world = app.world_mut();
            let mut q = world.query::<(Entity, &Team, &Transform)>();
            let all: Vec<(Entity, Team, Vec2)> = q
                .iter(world)
                .map(|(e, t, tf)| (e, *t, (tf.translation.truncate() - origin()) / TILE))
                .collect();
            let mut commands_queue = bevy::ecs::world::CommandQueue::default();
            let mut commands = Commands::new(&mut commands_queue, world);
            for team in [Team::Blue, Team::Red] {
                let members: Vec<(Entity, Vec2)> = all
                    .iter()
                    .filter(|u| u.1 == team)
                    .map(|u| (u.0, u.2))
                    .collect();
                if frame == final_order_frame {
                    let x = if team == Team::Blue {
                        MAP_W as i32 * 5 / 6
                    } else {
                        MAP_W as i32 / 6
                    };
                    let target = Cell::new(
                        x,
                        MAP_H as i32 / 2 + if team == Team::Blue { 8 } else { -8 },
                    );
                    order_group(&mut commands, &grid, &members, target);
                } else {
                    let k = (frame / 90) % 8;
                    let group: Vec<(Entity, Vec2)> =
                        members.iter().skip(k * 50).take(50).copied().collect();
                    let target = Cell::new(rng.below(MAP_W as i32), rng.below(MAP_H as i32));
                    order_group(&mut commands, &grid, &group, target);
                }
            }
            commands_queue.apply(world);
        }
        let t = Instant::now();
        app.update();
        frame_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let world = app.world_mut();
        if let Some(trace) = &trace {
            let mut q = world.query::<(Entity, &PathProgress, &PathStatus, &Transform, &Path)>();
            for (e, p, s, tf, path) in q.iter(world) {
                if trace.contains(&e.index_u32()) {
                    let g = (tf.translation.truncate() - origin()) / TILE;
                    eprintln!(
                        "trace {frame} {e} {:?} {s:?} at {g} goal {} next {:?} {p:?}",
                        p.state,
                        path.goal,
                        path.corridor.get(p.cell_index)
                    );
                }
            }
        }
        let mut q = world.query::<(Entity, &Transform, &Mover, &PathProgress)>();
        for (e, tf, m, p) in q.iter(world) {
            let g = (tf.translation.truncate() - origin()) / TILE;
            // Touching a wall is fine; overlapping it by more than a hair is not.
            if overlaps_blocked(&grid, g, m.radius - 1e-3) {
                if debug {
                    eprintln!("frame {frame}: {e} overlaps a wall at {g}: {p:?}");
                }
                wall_overlaps += 1;
            }
        }
    }
    let world = app.world_mut();
    let mut q = world.query::<(
        Entity,
        &PathProgress,
        &PathStatus,
        &Transform,
        Option<&Path>,
    )>();
    let mut arrived = 0;
    let mut stuck = 0;
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for (e, p, s, tf, path) in q.iter(world) {
        if p.state != MoveState::Arrived && std::env::var_os("RTS_DEBUG").is_some() {
            let g = (tf.translation.truncate() - origin()) / TILE;
            eprintln!(
                "{e} {:?} at {g} goal {:?} cell_index {} / {} waypoint {} / {}",
                p.state,
                path.map(|p| p.goal),
                p.cell_index,
                path.map_or(0, |p| p.cells.len()),
                p.waypoint,
                path.map_or(0, |p| p.waypoints.len())
            );
        }
        if p.state == MoveState::Arrived && *s == PathStatus::Found {
            arrived += 1;
        } else {
            stuck += 1;
            *reasons.entry(format!("{:?} {:?}", p.state, s)).or_default() += 1;
        }
    }
    if stuck > 0 {
        eprintln!("not arrived: {reasons:?}");
    }
    if std::env::var_os("RTS_MAP").is_some() {
        // The map as text with units: digits count units not arrived, '.' arrived ones.
        let mut chars: Vec<Vec<char>> = (0..MAP_H as i32)
            .map(|y| {
                (0..MAP_W as i32)
                    .map(|x| match terrain[(y * MAP_W as i32 + x) as usize] {
                        Terrain::Water => '~',
                        Terrain::Wall => '#',
                        Terrain::Road => '=',
                        Terrain::Forest => 'f',
                        Terrain::Grass => ' ',
                    })
                    .collect()
            })
            .collect();
        let mut q = world.query::<(&PathProgress, &Transform)>();
        for (p, tf) in q.iter(world) {
            let c = cell_at((tf.translation.truncate() - origin()) / TILE);
            let ch = &mut chars[c.y as usize][c.x as usize];
            *ch = match (p.state == MoveState::Arrived, *ch) {
                (true, _) => '.',
                (false, d) if d.is_ascii_digit() => {
                    char::from_digit((d as u32 - '0' as u32 + 1).min(9), 10).unwrap()
                }
                (false, _) => '1',
            };
        }
        for row in chars.iter().rev() {
            eprintln!("{}", row.iter().collect::<String>());
        }
    }
    let mut sorted = frame_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let p99 = sorted[((sorted.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)];
    let mean = frame_ms.iter().sum::<f64>() / frame_ms.len().max(1) as f64;
    println!(
        "summary units={} arrived={arrived} stuck={stuck} wall_overlaps={wall_overlaps} frames={} mean_frame_ms={mean:.3} p99_frame_ms={p99:.3}",
        units.len(),
        args.frames
    );
    if stuck > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

// ---------------------------------------------------------------------------------------------
// Windowed game.

#[derive(Resource)]
struct Game {
    seed: u64,
    units: usize,
    screenshot: Option<String>,
    drag_start: Option<Vec2>,
    red_timer: Timer,
    rng_state: u64,
}

#[derive(Component)]
struct Hud;

fn windowed(args: Args) {
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "bevy_tilepath RTS demo".into(),
                    resolution: (1280, 720).into(),
                    ..default()
                }),
                ..default()
            })
            // The textures live in the crate's assets/ wherever the binary is started from.
            .set(AssetPlugin {
                file_path: concat!(env!("CARGO_MANIFEST_DIR"), "/assets").into(),
                ..default()
            }),
    )
    .add_plugins((
        FrameTimeDiagnosticsPlugin::default(),
        TilemapPlugin,
        TilepathPlugin::default(),
        TilemapNavPlugin,
        TilepathDebugPlugin,
    ))
    .insert_resource(ClearColor(Color::srgb(0.08, 0.09, 0.1)))
    .insert_resource(TilepathSettings {
        workers: WorkerMode::Async { max_in_flight: 4 },
        searches_per_frame: 32,
        ..Default::default()
    })
    .insert_resource(Game {
        seed: args.seed,
        units: args.units,
        screenshot: args.screenshot,
        drag_start: None,
        red_timer: Timer::from_seconds(3.0, TimerMode::Repeating),
        rng_state: args.seed,
    })
    .add_systems(Startup, setup)
    .add_systems(
        Update,
        (
            (select_and_order, toggle_wall, red_script, screenshot_script)
                .before(bevy_tilepath::TilepathSystems::First),
            retry_failed.after(bevy_tilepath::TilepathSystems::Receive),
            (draw_selection, update_hud).after(bevy_tilepath::TilepathSystems::Move),
        ),
    )
    .run();
}

fn setup(mut commands: Commands, assets: Res<AssetServer>, game: Res<Game>) {
    commands.spawn((
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scale: 1.2,
            ..OrthographicProjection::default_2d()
        }),
    ));
    let terrain = generate_map(game.seed);
    let map_size = TilemapSize { x: MAP_W, y: MAP_H };
    let map_entity = commands.spawn_empty().id();
    let mut storage = TileStorage::empty(map_size);
    for y in 0..MAP_H {
        for x in 0..MAP_W {
            let t = terrain[(y * MAP_W + x) as usize];
            let pos = TilePos { x, y };
            let tile = commands
                .spawn((
                    TileBundle {
                        position: pos,
                        tilemap_id: TilemapId(map_entity),
                        texture_index: TileTextureIndex(t.texture()),
                        ..default()
                    },
                    NavTile(t.cost()),
                ))
                .id();
            storage.set(&pos, tile);
        }
    }
    let tile_size = TilemapTileSize { x: TILE, y: TILE };
    commands.entity(map_entity).insert(TilemapBundle {
        grid_size: tile_size.into(),
        map_type: TilemapType::Square,
        size: map_size,
        storage,
        texture: TilemapTexture::Single(assets.load("tiles.png")),
        tile_size,
        anchor: TilemapAnchor::Center,
        ..default()
    });

    // Units: blue (yours) on the left, red on the right.
    let grid = nav_grid(&terrain);
    let mut rng = Rng::new(game.seed ^ 0xABCD);
    let image = assets.load("unit.png");
    let half = game.units / 2;
    for (team, left, n, color) in [
        (Team::Blue, true, half, Color::srgb(0.35, 0.6, 1.0)),
        (
            Team::Red,
            false,
            game.units - half,
            Color::srgb(1.0, 0.35, 0.3),
        ),
    ] {
        for c in spawn_positions(&grid, n, left, &mut rng) {
            let p = origin() + (c.as_vec2() + 0.5) * TILE;
            commands.spawn((
                team,
                mover(),
                Sprite {
                    image: image.clone(),
                    color,
                    custom_size: Some(Vec2::splat(TILE * 0.8)),
                    ..default()
                },
                Transform::from_xyz(p.x, p.y, 1.0),
            ));
        }
    }
    commands.spawn((
        Hud,
        Text::new(""),
        TextFont {
            font_size: FontSize::Px(16.0),
            ..default()
        },
        TextColor(Color::WHITE),
        BackgroundColor(Color::srgba(0.0, 0.0, 0.0, 0.55)),
        Node {
            position_type: PositionType::Absolute,
            top: Val::Px(8.0),
            left: Val::Px(8.0),
            padding: UiRect::all(Val::Px(6.0)),
            ..default()
        },
    ));
}

fn cursor_world(
    windows: &Query<&Window, With<PrimaryWindow>>,
    cameras: &Query<(&Camera, &GlobalTransform)>,
) -> Option<Vec2> {
    let window = windows.single().ok()?;
    let (camera, tf) = cameras.single().ok()?;
    camera
        .viewport_to_world_2d(tf, window.cursor_position()?)
        .ok()
}

fn select_and_order(
    mut commands: Commands,
    mut game: ResMut<Game>,
    mouse: Res<ButtonInput<MouseButton>>,
    windows: Query<&Window, With<PrimaryWindow>>,
    cameras: Query<(&Camera, &GlobalTransform)>,
    units: Query<(Entity, &Team, &Transform, Has<Selected>)>,
    maps: Query<&NavMap>,
) {
    let Some(cursor) = cursor_world(&windows, &cameras) else {
        return;
    };
    if mouse.just_pressed(MouseButton::Left) {
        game.drag_start = Some(cursor);
    }
    if mouse.just_released(MouseButton::Left)
        && let Some(start) = game.drag_start.take()
    {
        let (lo, hi) = (start.min(cursor) - 4.0, start.max(cursor) + 4.0);
        for (e, team, tf, selected) in &units {
            let p = tf.translation.truncate();
            let inside = *team == Team::Blue && p.cmpge(lo).all() && p.cmple(hi).all();
            match (inside, selected) {
                (true, false) => {
                    commands.entity(e).insert((Selected, DebugSelected));
                }
                (false, true) => {
                    commands.entity(e).remove::<(Selected, DebugSelected)>();
                }
                _ => {}
            }
        }
    }
    if mouse.just_pressed(MouseButton::Right)
        && let Ok(map) = maps.single()
        && let Some(target) = map.world_to_cell(cursor)
    {
        let group: Vec<(Entity, Vec2)> = units
            .iter()
            .filter(|u| u.3)
            .map(|(e, _, tf, _)| (e, map.world_to_grid(tf.translation.truncate())))
            .collect();
        order_group(&mut commands, map.grid(), &group, target);
    }
}

fn toggle_wall(
    keys: Res<ButtonInput<KeyCode>>,
    windows: Query<&Window, With<PrimaryWindow>>,
    cameras: Query<(&Camera, &GlobalTransform)>,
    maps: Query<(
        &Transform,
        &TilemapSize,
        &TileStorage,
        &TilemapGridSize,
        &TilemapTileSize,
        &TilemapType,
        &TilemapAnchor,
    )>,
    mut tiles: Query<(&mut NavTile, &mut TileTextureIndex)>,
) {
    if !keys.just_pressed(KeyCode::KeyW) {
        return;
    }
    let Some(cursor) = cursor_world(&windows, &cameras) else {
        return;
    };
    for (tf, size, storage, grid, tile, ty, anchor) in &maps {
        if let Some(pos) = world_to_tile(cursor, tf, size, grid, tile, ty, anchor)
            && let Some(e) = storage.get(&pos)
            && let Ok((mut nav, mut tex)) = tiles.get_mut(e)
        {
            let wall = nav.0 != BLOCKED;
            *nav = if wall {
                NavTile(BLOCKED)
            } else {
                NavTile(Terrain::Grass.cost())
            };
            tex.0 = if wall {
                Terrain::Wall.texture()
            } else {
                Terrain::Grass.texture()
            };
        }
    }
}

/// Red's orders: every few seconds a group of red units heads somewhere random.
fn red_script(
    mut commands: Commands,
    time: Res<Time>,
    mut game: ResMut<Game>,
    units: Query<(Entity, &Team, &Transform)>,
    maps: Query<&NavMap>,
) {
    if !game.red_timer.tick(time.delta()).just_finished() {
        return;
    }
    let Ok(map) = maps.single() else {
        return;
    };
    let mut rng = Rng::new(game.rng_state);
    game.rng_state = rng.next();
    let reds: Vec<(Entity, Vec2)> = units
        .iter()
        .filter(|u| *u.1 == Team::Red)
        .map(|(e, _, tf)| (e, map.world_to_grid(tf.translation.truncate())))
        .collect();
    let k = rng.below(6) as usize;
    let group: Vec<(Entity, Vec2)> = reds.iter().skip(k * 50).take(50).copied().collect();
    let target = Cell::new(rng.below(MAP_W as i32), rng.below(MAP_H as i32));
    order_group(&mut commands, map.grid(), &group, target);
}

/// `--screenshot`: select all blue units, order them across the river, save a screenshot a few
/// seconds later and quit.
fn screenshot_script(
    mut commands: Commands,
    game: Res<Game>,
    time: Res<Time>,
    mut step: Local<u32>,
    units: Query<(Entity, &Team, &Transform)>,
    maps: Query<&NavMap>,
    mut exit: MessageWriter<AppExit>,
) {
    let Some(path) = game.screenshot.clone() else {
        return;
    };
    let t = time.elapsed_secs();
    match *step {
        0 if t > 0.5 => {
            let Ok(map) = maps.single() else {
                return;
            };
            let blues: Vec<(Entity, Vec2)> = units
                .iter()
                .filter(|u| *u.1 == Team::Blue)
                .map(|(e, _, tf)| (e, map.world_to_grid(tf.translation.truncate())))
                .collect();
            for (i, (e, _)) in blues.iter().enumerate() {
                if i % 3 == 0 {
                    commands.entity(*e).insert((Selected, DebugSelected));
                }
            }
            order_group(
                &mut commands,
                map.grid(),
                &blues,
                Cell::new(MAP_W as i32 * 3 / 4, MAP_H as i32 / 2),
            );
            *step = 1;
        }
        1 if t > 4.0 => {
            commands
                .spawn(Screenshot::primary_window())
                .observe(save_to_disk(path.clone()));
            *step = 2;
        }
        n if n >= 2 => {
            *step += 1;
            if *step > 30 && std::path::Path::new(&path).exists() {
                exit.write(AppExit::Success);
            }
        }
        _ => {}
    }
}

fn draw_selection(
    mut gizmos: Gizmos,
    game: Res<Game>,
    mouse: Res<ButtonInput<MouseButton>>,
    windows: Query<&Window, With<PrimaryWindow>>,
    cameras: Query<(&Camera, &GlobalTransform)>,
    selected: Query<&Transform, With<Selected>>,
) {
    for tf in &selected {
        gizmos.circle_2d(
            Isometry2d::from_translation(tf.translation.truncate()),
            TILE * 0.55,
            Color::srgb(0.5, 1.0, 0.5),
        );
    }
    if mouse.pressed(MouseButton::Left)
        && let (Some(start), Some(cursor)) = (game.drag_start, cursor_world(&windows, &cameras))
    {
        gizmos.rect_2d(
            Isometry2d::from_translation((start + cursor) / 2.0),
            (cursor - start).abs(),
            Color::srgb(0.5, 1.0, 0.5),
        );
    }
}

fn update_hud(
    diagnostics: Res<DiagnosticsStore>,
    units: Query<&PathProgress>,
    selected: Query<(), With<Selected>>,
    mut hud: Query<&mut Text, With<Hud>>,
) {
    let value = |path: &bevy::diagnostic::DiagnosticPath| {
        diagnostics
            .get(path)
            .and_then(|d| d.smoothed())
            .unwrap_or(0.0)
    };
    let moving = units
        .iter()
        .filter(|p| matches!(p.state, MoveState::Moving | MoveState::Waiting(_)))
        .count();
    for mut text in &mut hud {
        text.0 = format!(
            "FPS {:.0}   units {} (moving {})   selected {}\nqueue {:.0}   searches/frame {:.1}   pathfinding {:.2} ms/frame   latency {:.1} frames\ndrag: select   right-click: move   W: wall   F1-F5: debug layers",
            value(&FrameTimeDiagnosticsPlugin::FPS),
            units.iter().count(),
            moving,
            selected.iter().count(),
            value(&TilepathDiagnostics::QUEUE_LENGTH),
            value(&TilepathDiagnostics::SEARCHES_FINISHED),
            value(&TilepathDiagnostics::MAIN_THREAD_MS),
            value(&TilepathDiagnostics::LATENCY_FRAMES),
        );
    }
}
