//! The windowed game: the tilemap drawn, two armies, box selection, right-click orders, wall
//! toggling, the red script, the HUD and the `--screenshot` script.

use bevy::diagnostic::{DiagnosticsStore, FrameTimeDiagnosticsPlugin};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::window::PrimaryWindow;
use bevy_ecs_tilemap::prelude::*;
use bevy_tilepath::debug::DebugSelected;
use bevy_tilepath::prelude::*;
use bevy_tilepath::tilemap::world_to_tile;
use bevy_tilepath::{Lockstep, LockstepKey, PathProgress, TilepathDiagnostics, TilepathSchedule};

use crate::DemoConfig;
use crate::common::Rng;
use crate::inputs::{Input, Inputs, Shape, apply_inputs, checksums, formation_name};
use crate::map::{DemoMap, MAP_H, MAP_W, TILE, generate_map, spawn_tilemap};
use crate::orders::{PLAYER_PRIORITY, retry_failed};
use crate::units::{Kind, Team, muster, tanks_as_vehicles};

/// The player's input state and the red script's.
#[derive(Resource)]
struct Game {
    drag_start: Option<Vec2>,
    /// Where the right button went down (world) and on which tile: the order's target; where
    /// it comes up sets the facing.
    order_start: Option<(Vec2, UVec2)>,
    /// The formation of the player's move orders (`G` cycles).
    formation: Formation,
    red_timer: Timer,
    rng_state: u64,
}

#[derive(Component)]
struct Selected;

/// The player's last order: how many frames until its first unit and its last unit had a path
/// (from the outcomes' own latency), for the HUD.
#[derive(Resource, Default)]
struct PlayerOrder {
    units: usize,
    waiting: bevy::ecs::entity::EntityHashSet,
    first: Option<u32>,
    last: Option<u32>,
}

fn track_player_order(mut order: ResMut<PlayerOrder>, mut outcomes: MessageReader<PathOutcome>) {
    for o in outcomes.read() {
        if o.origin.is_user() && order.waiting.remove(&o.entity) {
            order.first = Some(
                order
                    .first
                    .map_or(o.latency_frames, |f| f.min(o.latency_frames)),
            );
            order.last = Some(
                order
                    .last
                    .map_or(o.latency_frames, |f| f.max(o.latency_frames)),
            );
        }
    }
}

#[derive(Component)]
struct Hud;

pub fn run(config: DemoConfig, inputs: Inputs) {
    let sim = config.sim_schedule();
    let settings = TilepathSettings {
        workers: config.worker_mode(),
        searches_per_frame: 32,
        lockstep: config.lockstep.then(Lockstep::default),
        crowd: config.crowd(),
        fog: config.fog(),
        lanes: config.lanes,
        ..Default::default()
    };
    let mut app = App::new();
    tanks_as_vehicles(&mut app, &config);
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
        TilepathPlugins {
            schedule: TilepathSchedule(sim),
        },
    ))
    .insert_resource(ClearColor(Color::srgb(0.08, 0.09, 0.1)))
    // In lockstep mode the simulation ticks 60 times a second, however fast frames are drawn.
    .insert_resource(Time::<Fixed>::from_hz(60.0))
    .insert_resource(settings)
    .insert_resource(inputs)
    .insert_resource(Game {
        drag_start: None,
        order_start: None,
        formation: Formation::Blob,
        red_timer: Timer::from_seconds(3.0, TimerMode::Repeating),
        rng_state: config.seed,
    })
    .insert_resource(config)
    .init_resource::<PlayerOrder>()
    .add_systems(Startup, setup)
    // The window and the red script give inputs; the simulation applies them at its next tick.
    .add_systems(
        Update,
        (
            (
                select_and_order,
                cycle_formation,
                stop_or_hold,
                toggle_wall,
                toggle_fog,
                red_script,
                screenshot_script,
            )
                .before(apply_inputs),
            (draw_selection, update_hud, draw_fog, hide_in_fog).after(TilepathSystems::Move),
        ),
    )
    .add_systems(
        sim,
        (
            apply_inputs.before(TilepathSystems::First),
            (retry_failed, track_player_order).after(TilepathSystems::Receive),
            checksums.after(TilepathSystems::Last),
        ),
    )
    .run();
}

fn setup(mut commands: Commands, assets: Res<AssetServer>, config: Res<DemoConfig>) {
    commands.spawn((
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scale: config.map.camera_scale(),
            ..OrthographicProjection::default_2d()
        }),
    ));
    let terrain = generate_map(config.seed);
    let map = DemoMap::new(config.map, &terrain);
    spawn_tilemap(
        &mut commands,
        config.map,
        &terrain,
        &map.links,
        Some(&assets),
    );
    commands.insert_resource(map.clone());

    // Units: blue (yours) on the left, red on the right.
    let mut rng = Rng::new(config.seed ^ 0xABCD);
    let image = assets.load("unit.png");
    let tank_image = assets.load("tank.png");
    for r in muster(&map, &config, &mut rng) {
        let p = map.nav.cell_to_world(r.cell);
        let color = match r.team {
            Team::Blue => Color::srgb(0.35, 0.6, 1.0),
            Team::Red => Color::srgb(1.0, 0.35, 0.3),
        };
        let (image, size) = match r.kind {
            Kind::Infantry => (image.clone(), TILE * 0.8),
            Kind::Tank => (tank_image.clone(), TILE * 2.0 * r.kind.radius(&config)),
        };
        commands.spawn((
            r.bundle(&config),
            Sprite {
                image,
                color,
                custom_size: Some(Vec2::splat(size)),
                ..default()
            },
            Transform::from_xyz(p.x, p.y, 1.0),
        ));
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

/// The world position under the mouse cursor.
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
    units: Query<(Entity, &Team, &Transform, Has<Selected>, &LockstepKey)>,
    maps: Query<&NavMap>,
    demo_map: Res<DemoMap>,
    mut order: ResMut<PlayerOrder>,
    mut inputs: ResMut<Inputs>,
    keys: Res<ButtonInput<KeyCode>>,
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
        for (e, team, tf, selected, _) in &units {
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
    let tile_at = |p: Vec2| {
        let map = maps.single().ok()?;
        let tile = demo_map.tile(map.world_to_cell(p)?)?;
        Some(UVec2::new(tile.x, tile.y))
    };
    // The order goes when the right button comes up: a drag of a tile or more sets the facing.
    if mouse.just_pressed(MouseButton::Right) && !inputs.replaying() {
        game.order_start = tile_at(cursor).map(|t| (cursor, t));
    }
    if mouse.just_released(MouseButton::Right)
        && let Some((press, tile)) = game.order_start.take()
    {
        let units_near: Vec<(Team, Vec2, u64)> = units
            .iter()
            .map(|(_, team, tf, _, key)| (*team, tf.translation.truncate(), key.0))
            .collect();
        let facing = tile_at(cursor)
            .map(|end| end.as_ivec2() - tile.as_ivec2())
            .filter(|d| d.length_squared() >= 2);
        let mut group: Vec<(u64, Entity)> = units
            .iter()
            .filter(|u| u.3)
            .map(|(e, _, _, _, key)| (key.0, e))
            .collect();
        group.sort_unstable_by_key(|u| u.0);
        if group.is_empty() {
            return;
        }
        let units = group.iter().map(|u| u.0).collect();
        let priority = PLAYER_PRIORITY;
        let queued = keys.any_pressed([KeyCode::ShiftLeft, KeyCode::ShiftRight]);
        // A click (not a drag) on a red unit: follow it (and stop within range of it).
        let enemy = units_near
            .iter()
            .filter(|u| u.0 == Team::Red && facing.is_none())
            .map(|u| (u.1.distance_squared(press), u.2))
            .filter(|u| u.0 <= (0.8 * TILE) * (0.8 * TILE))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        // Shift: a waypoint after the current orders; P held: patrol there and back.
        inputs.give(if let Some((_, target)) = enemy {
            Input::Follow {
                units,
                target,
                priority,
            }
        } else if queued {
            Input::Waypoint {
                units,
                tile,
                priority,
            }
        } else if keys.pressed(KeyCode::KeyP) {
            Input::Patrol {
                units,
                tile,
                priority,
            }
        } else {
            Input::Order {
                units,
                tile,
                priority,
                shape: Shape {
                    formation: game.formation,
                    facing,
                },
            }
        });
        // The HUD follows the order the units start on now (a waypoint starts later).
        if !queued {
            *order = PlayerOrder {
                units: group.len(),
                waiting: group.iter().map(|g| g.1).collect(),
                ..default()
            };
        }
    }
}

/// `G` cycles the formation of the player's move orders.
fn cycle_formation(keys: Res<ButtonInput<KeyCode>>, mut game: ResMut<Game>) {
    if keys.just_pressed(KeyCode::KeyG) {
        let all = Formation::ALL;
        let k = all.iter().position(|&f| f == game.formation).unwrap_or(0);
        game.formation = all[(k + 1) % all.len()];
    }
}

/// `W` toggles the tile under the cursor between wall and grass (at the next tick).
fn toggle_wall(
    keys: Res<ButtonInput<KeyCode>>,
    windows: Query<&Window, With<PrimaryWindow>>,
    cameras: Query<(&Camera, &GlobalTransform)>,
    maps: Query<(
        &Transform,
        &TilemapSize,
        &TilemapGridSize,
        &TilemapTileSize,
        &TilemapType,
        &TilemapAnchor,
    )>,
    mut inputs: ResMut<Inputs>,
) {
    if !keys.just_pressed(KeyCode::KeyW) {
        return;
    }
    let Some(cursor) = cursor_world(&windows, &cameras) else {
        return;
    };
    for (tf, size, grid, tile, ty, anchor) in &maps {
        if let Some(pos) = world_to_tile(cursor, tf, size, grid, tile, ty, anchor) {
            inputs.give(Input::Wall(UVec2::new(pos.x, pos.y)));
        }
    }
}

/// `S` stops the selected units, `H` has them hold their position (at the next tick).
fn stop_or_hold(
    keys: Res<ButtonInput<KeyCode>>,
    units: Query<&LockstepKey, With<Selected>>,
    mut inputs: ResMut<Inputs>,
) {
    let hold = keys.just_pressed(KeyCode::KeyH);
    if !hold && !keys.just_pressed(KeyCode::KeyS) {
        return;
    }
    let mut selected: Vec<u64> = units.iter().map(|k| k.0).collect();
    if selected.is_empty() {
        return;
    }
    selected.sort_unstable();
    inputs.give(Input::Stop {
        units: selected,
        hold,
    });
}

/// `F` turns fog of war on and off, `O` opens or shuts the gate (at the next tick).
fn toggle_fog(keys: Res<ButtonInput<KeyCode>>, mut inputs: ResMut<Inputs>) {
    if keys.just_pressed(KeyCode::KeyF) {
        inputs.give(Input::Fog);
    }
    if keys.just_pressed(KeyCode::KeyO) {
        inputs.give(Input::Gate);
    }
}

/// Under fog of war, the tiles blue has not seen are drawn dark (redrawn when blue sees more or
/// the fog is turned on or off).
fn draw_fog(
    settings: Res<TilepathSettings>,
    maps: Query<&NavMap>,
    demo_map: Res<DemoMap>,
    mut tiles: Query<(&TilePos, &mut TileColor)>,
    mut drawn: Local<Option<(bool, usize)>>,
) {
    let Ok(map) = maps.single() else {
        return;
    };
    let known = map
        .knowledge(Team::Blue.player().0)
        .filter(|_| settings.fog.enabled);
    let state = (known.is_some(), known.map_or(0, |k| k.seen_count()));
    if *drawn == Some(state) {
        return;
    }
    *drawn = Some(state);
    for (pos, mut color) in &mut tiles {
        let seen = known.is_none_or(|k| k.is_seen(demo_map.cell(pos.x, pos.y)));
        color.0 = if seen {
            Color::WHITE
        } else {
            Color::srgb(0.22, 0.22, 0.26)
        };
    }
}

/// Under fog of war, red units on ground blue has not seen are not drawn.
fn hide_in_fog(
    settings: Res<TilepathSettings>,
    maps: Query<&NavMap>,
    mut units: Query<(&Team, &Transform, &mut Visibility)>,
) {
    let Ok(map) = maps.single() else {
        return;
    };
    let known = map
        .knowledge(Team::Blue.player().0)
        .filter(|_| settings.fog.enabled);
    for (team, tf, mut visibility) in &mut units {
        let hidden = *team == Team::Red
            && known.is_some_and(|k| {
                map.world_to_cell(tf.translation.truncate())
                    .is_some_and(|c| !k.is_seen(c))
            });
        let want = if hidden {
            Visibility::Hidden
        } else {
            Visibility::Inherited
        };
        visibility.set_if_neq(want);
    }
}

/// Red's orders: every few seconds a group of red units heads somewhere random, or (every
/// other time, on average) a smaller group chases a blue unit (not while a replay gives the
/// orders).
fn red_script(
    time: Res<Time>,
    mut game: ResMut<Game>,
    units: Query<(&Team, &LockstepKey)>,
    mut inputs: ResMut<Inputs>,
) {
    if !game.red_timer.tick(time.delta()).just_finished() || inputs.replaying() {
        return;
    }
    let mut rng = Rng::new(game.rng_state);
    game.rng_state = rng.next_u64();
    let mut reds: Vec<u64> = units
        .iter()
        .filter(|u| *u.0 == Team::Red)
        .map(|(_, key)| key.0)
        .collect();
    reds.sort_unstable();
    let mut blues: Vec<u64> = units
        .iter()
        .filter(|u| *u.0 == Team::Blue)
        .map(|(_, key)| key.0)
        .collect();
    blues.sort_unstable();
    let k = rng.below(6) as usize;
    // Every other time, a smaller group chases a blue unit instead.
    let chase = rng.below(2) == 0 && !blues.is_empty();
    let size = if chase { 20 } else { 50 };
    let group: Vec<u64> = reds.iter().skip(k * size).take(size).copied().collect();
    inputs.give(if chase {
        Input::Follow {
            units: group,
            target: blues[rng.below(blues.len() as u32) as usize],
            priority: 0,
        }
    } else {
        Input::Order {
            units: group,
            tile: UVec2::new(rng.below(MAP_W), rng.below(MAP_H)),
            priority: 0,
            shape: Shape::default(),
        }
    });
}

/// `--screenshot`: select all blue units, order them across the river, save a screenshot a few
/// seconds later and quit.
fn screenshot_script(
    mut commands: Commands,
    config: Res<DemoConfig>,
    time: Res<Time>,
    mut step: Local<u32>,
    units: Query<(Entity, &Team, &LockstepKey)>,
    mut inputs: ResMut<Inputs>,
    mut exit: MessageWriter<AppExit>,
) {
    let Some(path) = config.screenshot.clone() else {
        return;
    };
    let t = time.elapsed_secs();
    match *step {
        0 if t > 0.5 => {
            let mut blues: Vec<(u64, Entity)> = units
                .iter()
                .filter(|u| *u.1 == Team::Blue)
                .map(|(e, _, key)| (key.0, e))
                .collect();
            blues.sort_unstable_by_key(|u| u.0);
            for (i, (_, e)) in blues.iter().enumerate() {
                if i % 3 == 0 {
                    commands.entity(*e).insert((Selected, DebugSelected));
                }
            }
            inputs.give(Input::Order {
                units: blues.iter().map(|u| u.0).collect(),
                tile: UVec2::new(MAP_W * 3 / 4, MAP_H / 2),
                priority: PLAYER_PRIORITY,
                shape: Shape::default(),
            });
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
    // A right-drag: the target and the way the formation will face.
    if mouse.pressed(MouseButton::Right)
        && let (Some((start, _)), Some(cursor)) =
            (game.order_start, cursor_world(&windows, &cameras))
        && start.distance(cursor) > TILE
    {
        gizmos.arrow_2d(start, cursor, Color::srgb(1.0, 0.9, 0.3));
    }
}

fn update_hud(
    diagnostics: Res<DiagnosticsStore>,
    game: Res<Game>,
    settings: Res<TilepathSettings>,
    units: Query<&PathProgress>,
    selected: Query<(), With<Selected>>,
    order: Res<PlayerOrder>,
    mut hud: Query<&mut Text, With<Hud>>,
) {
    let value = |path: &bevy::diagnostic::DiagnosticPath| {
        diagnostics
            .get(path)
            .and_then(|d| d.smoothed())
            .unwrap_or(0.0)
    };
    let moving = units.iter().filter(|p| p.state.is_underway()).count();
    let frames = |f: Option<u32>| f.map_or("-".to_string(), |f| f.to_string());
    let your_order = format!(
        "your order: {} units, first path after {} frames, all after {}   formation {} (G)   lanes {}",
        order.units,
        frames(order.first),
        if order.waiting.is_empty() {
            frames(order.last)
        } else {
            format!("({} waiting)", order.waiting.len())
        },
        formation_name(game.formation),
        if settings.lanes { "on" } else { "off" },
    );
    for mut text in &mut hud {
        text.0 = format!(
            "FPS {:.0}   units {} (moving {})   selected {}\nqueue {:.0}   searches/frame {:.1}   pathfinding {:.2} ms/frame   latency {:.1} frames\n{your_order}\ndrag: select   right-click: move (drag: facing; shift: waypoint, P: patrol; click a red unit: follow)   S: stop   H: hold   W: wall   F: fog of war   O: gate   F1-F7: debug layers",
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
