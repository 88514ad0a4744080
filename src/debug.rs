//! Debug overlay (feature `debug`): gizmos for blocked cells, the raw and smoothed paths of
//! selected units (a vehicle's plan of arcs: green forward, red in reverse), claimed cells, the
//! cells the last inline searches expanded and the crowd (bodies, links between bodies in
//! contact, pushes and avoidance velocities), the links between cells, plus a text line of
//! queue statistics. `F1`-`F7` toggle the layers.

use bevy::gizmos::config::GizmoConfigStore;
use bevy::platform::collections::HashMap;
use bevy::prelude::*;

use super::plugin::agent::NavAgent;
use super::plugin::claims::Claims;
use super::plugin::diagnostics::TilepathFrameStats;
use super::plugin::map::NavMap;
use super::plugin::movement::state::PathProgress;
use super::plugin::movement::vehicle::DriveProgress;
use super::plugin::outcomes::{NavPath, SearchKind};
use super::plugin::schedule::TilepathSystems;
use super::plugin::settings::TilepathSettings;
use crate::core::Cell;
use crate::plugin::schedule::{Step, TilepathSchedule};

/// Mark units whose paths the overlay draws.
#[derive(Component, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Component)]
pub struct DebugSelected;

/// Which layers are shown (toggle with `F1`-`F7`).
#[derive(Resource, Clone, Debug, Reflect)]
#[reflect(Resource)]
pub struct DebugLayers {
    /// `F1`: blocked cells.
    pub blocked: bool,
    /// `F2`: raw (cells, thin) and smoothed (waypoints, bright: cyan for a unit's own search,
    /// orange for a path read off a shared search) paths of selected units.
    pub paths: bool,
    /// `F3`: cells claimed by moving units.
    pub claims: bool,
    /// `F4`: cells expanded by the most recent inline searches.
    pub expanded: bool,
    /// `F5`: queue statistics text.
    pub stats: bool,
    /// `F6`: the crowd: every unit's body (white), links between bodies in contact (red), how
    /// far pushes have moved units off their paths (magenta) and the velocities local avoidance
    /// chose (yellow, half a second's travel).
    pub crowd: bool,
    /// `F7`: links between cells (green open, gold open to key holders only, grey closed; an
    /// arrow for one way, a line with a ring at each end for both ways).
    pub links: bool,
}

impl Default for DebugLayers {
    fn default() -> Self {
        DebugLayers {
            blocked: false,
            paths: true,
            claims: false,
            expanded: false,
            stats: true,
            crowd: false,
            links: true,
        }
    }
}

/// Adds the overlay, drawn in the plugin group's schedule after its work (part of
/// [`TilepathPlugins`](crate::TilepathPlugins) with the `debug` feature). It needs Bevy's gizmos
/// and keyboard input (`DefaultPlugins`); in an app without them (a headless server, a test) it
/// logs that and does nothing.
#[derive(Default)]
pub struct TilepathDebugPlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for TilepathDebugPlugin {
    fn build(&self, app: &mut App) {
        self.schedule.configure(app);
        app.init_resource::<DebugLayers>()
            .register_type::<DebugLayers>()
            .register_type::<DebugSelected>();
    }

    fn finish(&self, app: &mut App) {
        // Checked once every plugin is built, so the order plugins were added in does not matter.
        let world = app.world();
        if !world.contains_resource::<GizmoConfigStore>()
            || !world.contains_resource::<ButtonInput<KeyCode>>()
        {
            info!("bevy_tilepath: no gizmos or keyboard input in this app; debug overlay off");
            return;
        }
        app.add_systems(Startup, spawn_stats_text).add_systems(
            self.schedule.0,
            (toggle_layers, draw_overlay, draw_crowd, update_stats_text)
                .chain()
                .in_set(TilepathSystems::Last)
                .before(Step::Checksum),
        );
    }
}

#[derive(Component)]
struct StatsText;

fn spawn_stats_text(mut commands: Commands) {
    commands.spawn((
        StatsText,
        Text::new(""),
        TextFont {
            font_size: FontSize::Px(14.0),
            ..default()
        },
        TextColor(Color::srgb(1.0, 1.0, 0.8)),
        Node {
            position_type: PositionType::Absolute,
            bottom: Val::Px(8.0),
            left: Val::Px(8.0),
            ..default()
        },
    ));
}

fn toggle_layers(
    keys: Res<ButtonInput<KeyCode>>,
    mut layers: ResMut<DebugLayers>,
    mut settings: ResMut<TilepathSettings>,
) {
    let toggles: [(KeyCode, &mut bool); 7] = {
        let l = &mut *layers;
        [
            (KeyCode::F1, &mut l.blocked),
            (KeyCode::F2, &mut l.paths),
            (KeyCode::F3, &mut l.claims),
            (KeyCode::F4, &mut l.expanded),
            (KeyCode::F5, &mut l.stats),
            (KeyCode::F6, &mut l.crowd),
            (KeyCode::F7, &mut l.links),
        ]
    };
    for (key, flag) in toggles {
        if keys.just_pressed(key) {
            *flag = !*flag;
        }
    }
    if settings.record_expanded != layers.expanded {
        settings.record_expanded = layers.expanded;
    }
}

fn cell_rect(gizmos: &mut Gizmos, map: &NavMap, cell: Cell, color: Color) {
    // The cell as the map places it (a square, a rotated or a diamond one, a hexagon), a little
    // smaller.
    let grid = map.grid();
    let center = grid.cell_center(cell);
    let corners = grid.cell_corners(cell);
    let first = corners.clone().next();
    gizmos.linestrip_2d(
        corners
            .chain(first)
            .map(|k| map.grid_to_world(center.lerp(k, 0.9))),
        color,
    );
}

/// The tile cells of a map built from a tilemap: cells no tile maps to (beyond the edges of a
/// staggered or hexagonal map) are not drawn.
#[cfg(feature = "tilemap")]
type MapCells = Option<&'static crate::tilemap::TileCells>;
#[cfg(not(feature = "tilemap"))]
type MapCells = ();

#[cfg(feature = "tilemap")]
fn on_map(cells: Option<&crate::tilemap::TileCells>, cell: Cell) -> bool {
    cells.is_none_or(|c| c.tile(cell).is_some())
}

#[cfg(not(feature = "tilemap"))]
fn on_map(_: (), _: Cell) -> bool {
    true
}

fn draw_overlay(
    mut gizmos: Gizmos,
    layers: Res<DebugLayers>,
    maps: Query<(Entity, &NavMap, MapCells)>,
    selected: Query<(&NavPath, Option<&PathProgress>, Option<&DriveProgress>), With<DebugSelected>>,
    claims: Res<Claims>,
    stats: Res<TilepathFrameStats>,
) {
    for (map_entity, map, map_cells) in &maps {
        if layers.blocked {
            let grid = map.grid();
            for cell in grid
                .cells()
                .filter(|&c| !grid.is_walkable(c) && on_map(map_cells, c))
            {
                cell_rect(&mut gizmos, map, cell, Color::srgba(1.0, 0.2, 0.2, 0.6));
            }
        }
        if layers.claims {
            for (cell, _) in claims.iter_claimed(map_entity) {
                cell_rect(&mut gizmos, map, cell, Color::srgba(1.0, 0.8, 0.1, 0.8));
            }
        }
        if layers.links {
            draw_links(&mut gizmos, map);
        }
    }
    if layers.expanded {
        for (map_entity, cells) in &stats.recent_expanded {
            let Ok((_, map, _)) = maps.get(*map_entity) else {
                continue;
            };
            for &cell in cells {
                cell_rect(&mut gizmos, map, cell, Color::srgba(0.6, 0.3, 1.0, 0.35));
            }
        }
    }
    if layers.paths {
        for (path, progress, drive) in &selected {
            let Ok((_, map, _)) = maps.get(path.map) else {
                continue;
            };
            if let Some(drive) = drive {
                draw_drive_plan(&mut gizmos, map, drive);
                continue;
            }
            let from = progress.map_or(0, |p| p.cell_index.saturating_sub(1));
            gizmos.linestrip_2d(
                path.cells[from.min(path.cells.len())..]
                    .iter()
                    .map(|&c| map.cell_to_world(c)),
                Color::srgba(1.0, 1.0, 1.0, 0.35),
            );
            let wp = progress.map_or(0, |p| p.waypoint.saturating_sub(1));
            let color = match path.search {
                SearchKind::Own | SearchKind::JumpPoints => Color::srgb(0.2, 1.0, 0.9),
                SearchKind::Shared => Color::srgb(1.0, 0.6, 0.2),
                SearchKind::Hierarchical => Color::srgb(0.7, 0.5, 1.0),
            };
            gizmos.linestrip_2d(
                path.waypoints[wp.min(path.waypoints.len())..]
                    .iter()
                    .copied(),
                color,
            );
        }
    }
}

/// The map's links: green open to all, gold open to key holders only
/// ([`Link::keys`](crate::core::Link::keys)), grey closed; one way an arrow, both ways a line with a ring at
/// each end.
fn draw_links(gizmos: &mut Gizmos, map: &NavMap) {
    let ring = map.tile_scale() * 0.3;
    for (_, link) in map.grid().links() {
        let (a, b) = (map.cell_to_world(link.from), map.cell_to_world(link.to));
        let color = if !link.open {
            Color::srgba(0.6, 0.6, 0.6, 0.7)
        } else if link.keys.is_empty() {
            Color::srgb(0.3, 1.0, 0.4)
        } else {
            Color::srgb(1.0, 0.8, 0.2)
        };
        if link.two_way {
            gizmos.line_2d(a, b, color);
            gizmos.circle_2d(a, ring, color);
            gizmos.circle_2d(b, ring, color);
        } else {
            gizmos.arrow_2d(a, b, color);
            gizmos.circle_2d(a, ring, color);
        }
    }
}

/// The rest of a vehicle's plan: forward pieces green, reversing ones red.
fn draw_drive_plan(gizmos: &mut Gizmos, map: &NavMap, drive: &DriveProgress) {
    let Some(plan) = &drive.plan else {
        return;
    };
    let mut done = 0.0;
    for seg in &plan.segments {
        let len = seg.length();
        let (from, to) = ((drive.along - done).max(0.0), len);
        done += len;
        if from >= to {
            continue;
        }
        let color = if seg.reverse {
            Color::srgb(1.0, 0.3, 0.3)
        } else {
            Color::srgb(0.3, 1.0, 0.4)
        };
        let steps = ((to - from) / 0.2).ceil().max(1.0) as usize;
        gizmos.linestrip_2d(
            (0..=steps).map(|k| {
                let s = from + (to - from) * k as f32 / steps as f32;
                map.grid_to_world(seg.pose_at(s).position)
            }),
            color,
        );
    }
}

/// The crowd layer (see [`DebugLayers::crowd`]).
fn draw_crowd(
    mut gizmos: Gizmos,
    layers: Res<DebugLayers>,
    maps: Query<&NavMap>,
    units: Query<(&Transform, &NavAgent, &PathProgress)>,
) {
    if !layers.crowd {
        return;
    }
    // Bodies by map and cell, for the links between bodies in contact.
    let mut cells: HashMap<(Entity, IVec2), Vec<(Vec2, f32)>> = HashMap::new();
    for (transform, agent, progress) in &units {
        let Some((map_entity, map)) = progress.map.and_then(|m| Some((m, maps.get(m).ok()?)))
        else {
            continue;
        };
        let world = transform.translation.truncate();
        let grid = map.world_to_grid(world);
        gizmos.circle_2d(
            Isometry2d::from_translation(world),
            agent.radius * map.tile_scale(),
            Color::srgba(1.0, 1.0, 1.0, 0.5),
        );
        if progress.offset != Vec2::ZERO {
            gizmos.line_2d(
                map.grid_to_world(grid - progress.offset),
                world,
                Color::srgb(1.0, 0.2, 1.0),
            );
        }
        if let Some(v) = progress.avoidance {
            gizmos.arrow_2d(
                world,
                map.grid_to_world(grid + v * 0.5),
                Color::srgb(1.0, 1.0, 0.2),
            );
        }
        let cell = grid.floor().as_ivec2();
        for dy in -1..=1 {
            for dx in -1..=1 {
                let near = cells.get(&(map_entity, cell + IVec2::new(dx, dy)));
                for &(other, r) in near.into_iter().flatten() {
                    if grid.distance(other) < agent.radius + r + CONTACT {
                        gizmos.line_2d(world, map.grid_to_world(other), Color::srgb(1.0, 0.3, 0.3));
                    }
                }
            }
        }
        cells
            .entry((map_entity, cell))
            .or_default()
            .push((grid, agent.radius));
    }
}

/// How close (tiles) two bodies count as in contact for the crowd layer.
const CONTACT: f32 = 0.05;

fn update_stats_text(
    layers: Res<DebugLayers>,
    stats: Res<TilepathFrameStats>,
    mut text: Query<(&mut Text, &mut Visibility), With<StatsText>>,
) {
    for (mut t, mut vis) in &mut text {
        *vis = if layers.stats {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        };
        if layers.stats {
            t.0 = format!(
                "queue {}  in flight {}  outcomes/frame {} ({} shared)  pathfinding {:.2} ms/frame  latency {:.1} frames  [F1 blocked  F2 paths  F3 claims  F4 expanded  F5 stats  F6 crowd  F7 links]",
                stats.queue_len,
                stats.searching + stats.smoothing,
                stats.finished,
                stats.shared,
                stats.main_thread.as_secs_f64() * 1000.0,
                stats.latency_frames,
            );
        }
    }
}
