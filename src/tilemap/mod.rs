//! bevy_ecs_tilemap integration (feature `tilemap`): the navigation grid of a tilemap of any kind
//! (square, isometric diamond or staggered, hexagonal in each of bevy_ecs_tilemap's coordinate
//! systems) is built from its tiles' [`NavTile`] components and kept in sync: tiles spawned, despawned or
//! changed update the grid the same frame (an emptied slot blocks, as does a slot never filled;
//! a tile without a `NavTile` is normal ground), and only units whose remaining path crosses a
//! changed tile are repathed (through [`NavMap::set_terrain`]). The grid lies where the map is
//! drawn, through the map's whole `Transform` (moved, scaled, rotated about z; followed when it
//! changes). Tilemaps stacked as bevy_ecs_tilemap's `layers` example stacks them (same size,
//! their cells in the same world places, any z) are layers of one navigation map, on the lowest:
//! a cell is blocked if any layer's tile blocks it or no layer has a tile there, else it costs
//! the dearest layer's tile ([`NavLayerOf`] marks the upper layers; [`NavLayerApart`] keeps a
//! tilemap apart).
//!
//! A tile can carry a link to another tile ([`NavTileLink`]: a door, a ladder, a teleporter),
//! which becomes a link of the navigation map (a [`NavLink`](crate::NavLink) on the tile).
//!
//! Tile positions become grid cells through [`TileCells`] (a component on each tilemap with a
//! navigation map): square and diamond maps keep their coordinates, hexagonal maps become a
//! [`Topology::Hex`](crate::core::Topology::Hex) grid in axial coordinates, staggered maps the diamond grid they are drawn
//! on. Cells no tile maps to are blocked.

mod cells;
mod layers;
mod links;

pub use cells::TileCells;
pub use layers::{NavLayerApart, NavLayerOf};
pub use links::NavTileLink;

use bevy::ecs::entity::EntityHashMap;
use bevy::math::Affine2;
use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;

use super::plugin::map::NavMap;
use super::plugin::schedule::TilepathSystems;
use crate::core::{BLOCKED, GridError, MoveRules, NORMAL, NavGrid};
use crate::plugin::schedule::{Step, TilepathSchedule};

/// Walkability and terrain cost of a tile: `NavTile(0)` is blocked, `NavTile(1)` normal ground,
/// higher values are slower terrain (a step onto the tile costs that many times more). Tiles
/// without it count as normal ground; empty tile slots (never filled, or emptied by despawning
/// their tile, as bevy_ecs_tilemap's `remove_tiles` example does) are blocked.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Component)]
pub struct NavTile(pub u8);

impl NavTile {
    /// A blocked tile.
    pub const BLOCKED: NavTile = NavTile(BLOCKED);
    /// Normal ground.
    pub const NORMAL: NavTile = NavTile(NORMAL);
}

/// Move rules for the grid built from a tilemap (add this component to the tilemap entity before
/// its first frame; default rules otherwise). The topology follows the map: hexagonal maps get
/// [`Topology::Hex`](crate::core::Topology::Hex); square and isometric maps take the one given here, eight-way if it is
/// `Hex`.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Reflect)]
#[reflect(Component)]
pub struct TilemapNavRules(pub MoveRules);

/// Builds a [`NavMap`] on every tilemap and keeps it in sync with its tiles, in the
/// schedule of the plugin group (part of [`TilepathPlugins`](crate::TilepathPlugins) with the
/// `tilemap` feature).
#[derive(Default)]
pub struct TilemapNavPlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for TilemapNavPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        app.init_resource::<TileIndex>()
            .register_type::<NavTile>()
            .register_type::<TilemapNavRules>()
            .register_type::<NavLayerApart>()
            .register_type::<NavLayerOf>()
            .register_type::<TileCells>()
            .register_type::<NavTileLink>()
            .add_systems(
                schedule,
                (
                    build_nav_maps,
                    sync_nav_tiles,
                    follow_map_transforms,
                    links::place_tile_links,
                )
                    .chain()
                    .in_set(TilepathSystems::First)
                    .before(Step::Orders),
            );
    }
}

/// Where each tile of a navigation map sits, so despawned tiles and tiles that lost their
/// [`NavTile`] can be found, and each navigation map's layers (the tilemap it is on first).
#[derive(Resource, Default)]
struct TileIndex {
    tiles: EntityHashMap<(Entity, TilePos)>,
    layers: EntityHashMap<Vec<Entity>>,
}

/// The tilemap's own `Transform` (translation, rotation and scale, as it acts on the xy plane)
/// as a 2D affine map from the map's local space to the world.
pub fn map_affine(map_transform: &Transform) -> Affine2 {
    let a = map_transform.compute_affine();
    Affine2::from_mat2_translation(
        Mat2::from_cols(a.matrix3.x_axis.truncate(), a.matrix3.y_axis.truncate()),
        a.translation.truncate(),
    )
}

/// Where a tilemap's navigation grid lies in the world: grid space (cell units, see
/// [`NavGrid::cell_center`]) to world space, through the map's whole transform (translated,
/// scaled, rotated about z). Every kind of map is an affine image of its grid (the same square
/// or hexagonal grid, drawn another way), so the placement comes from the tilemap's own centres
/// of three tiles; `None` if they are degenerate (a zero grid size).
pub fn grid_placement(
    map_transform: &Transform,
    size: &TilemapSize,
    grid_size: &TilemapGridSize,
    tile_size: &TilemapTileSize,
    map_type: &TilemapType,
    anchor: &TilemapAnchor,
) -> Option<Affine2> {
    let cells = TileCells::new(*size, *map_type);
    let topology = cells.topology();
    // The tilemap's own projection of three tiles, and their centres in grid space.
    let pos = [(0, 0), (1, 0), (0, 1)].map(|(x, y)| TilePos { x, y });
    let world = pos.map(|p| p.center_in_world(size, grid_size, tile_size, map_type, anchor));
    let grid = pos.map(|p| topology.cell_center(cells.cell(p)));
    let g = Mat2::from_cols(grid[1] - grid[0], grid[2] - grid[0]);
    let w = Mat2::from_cols(world[1] - world[0], world[2] - world[0]);
    let det = g.determinant() * w.determinant();
    if !det.is_finite() || det.abs() < 1e-12 {
        return None;
    }
    let m = w * g.inverse();
    let local = Affine2::from_mat2_translation(m, world[0] - m * grid[0]);
    Some(map_affine(map_transform) * local)
}

/// The tile position of a world position on a tilemap (bevy_ecs_tilemap's own projection, after
/// undoing the map's whole transform), or `None` outside the map.
pub fn world_to_tile(
    world: Vec2,
    map_transform: &Transform,
    size: &TilemapSize,
    grid_size: &TilemapGridSize,
    tile_size: &TilemapTileSize,
    map_type: &TilemapType,
    anchor: &TilemapAnchor,
) -> Option<TilePos> {
    let local = map_affine(map_transform).inverse().transform_point2(world);
    TilePos::from_world_pos(&local, size, grid_size, tile_size, map_type, anchor)
}

type MapQuery<'a> = (
    Entity,
    &'a TilemapSize,
    &'a TileStorage,
    &'a TilemapGridSize,
    &'a TilemapTileSize,
    &'a TilemapType,
    &'a TilemapAnchor,
    &'a Transform,
    Option<&'a TilemapNavRules>,
    Has<NavLayerApart>,
);

/// A cell's terrain from every layer of a navigation map: blocked if any layer's tile blocks it
/// or no layer has a tile there (an empty slot on one layer is only a hole in that layer), else
/// the dearest layer's cost (a tile without a [`NavTile`] is normal ground).
fn stacked_terrain(
    layers: &[Entity],
    pos: TilePos,
    storages: &Query<&TileStorage>,
    tiles: &Query<Option<&NavTile>, With<TilePos>>,
) -> u8 {
    let mut terrain = None;
    for &layer in layers {
        let Some(tile) = storages.get(layer).ok().and_then(|s| s.get(&pos)) else {
            continue;
        };
        // A despawned tile still in the storage is an empty slot.
        let Ok(nav) = tiles.get(tile) else { continue };
        let t = nav.map_or(NORMAL, |n| n.0);
        if t == BLOCKED {
            return BLOCKED;
        }
        terrain = Some(terrain.map_or(t, |u: u8| u.max(t)));
    }
    terrain.unwrap_or(BLOCKED)
}

/// Whether two placements put the cells of a grid at the same world places (within a
/// thousandth of a cell).
fn same_placement(a: Affine2, b: Affine2) -> bool {
    let unit = a.matrix2.x_axis.length().max(a.matrix2.y_axis.length()) * 1e-3;
    a.translation.distance(b.translation) <= unit
        && a.matrix2.x_axis.distance(b.matrix2.x_axis) <= unit
        && a.matrix2.y_axis.distance(b.matrix2.y_axis) <= unit
}

/// Indexes the tiles of the tilemap `entity` (of `size`) by their entity.
fn index_tiles(index: &mut TileIndex, entity: Entity, size: &TilemapSize, storage: &TileStorage) {
    for (pos, tile) in storage
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some((i, (*t)?)))
    {
        let pos = TilePos {
            x: pos as u32 % size.x,
            y: pos as u32 / size.x,
        };
        index.tiles.insert(tile, (entity, pos));
    }
}

/// The grid of a stack of tilemap `layers` laid out as `cells`, with the move `rules`: each
/// cell's terrain read off its tiles in the layers; cells no tile maps to stay blocked.
fn stacked_grid(
    cells: &TileCells,
    rules: MoveRules,
    layers: &[Entity],
    storages: &Query<&TileStorage>,
    tiles: &Query<Option<&NavTile>, With<TilePos>>,
) -> Result<NavGrid, GridError> {
    let size = cells.grid_size();
    let mut terrain = vec![BLOCKED; size.x as usize * size.y as usize];
    for pos in cells.tiles() {
        let c = cells.cell(pos);
        terrain[c.y as usize * size.x as usize + c.x as usize] =
            stacked_terrain(layers, pos, storages, tiles);
    }
    NavGrid::from_terrain(size.x, size.y, cells.rules(rules), &terrain)
}

/// New tilemaps get a navigation map, or become a layer of the navigation map of the tilemap
/// they are stacked on (same size, same cells in the same world places, any z), lowest
/// first; tilemaps with [`NavLayerApart`] always get their own.
fn build_nav_maps(
    mut commands: Commands,
    new_maps: Query<MapQuery, (Without<NavMap>, Without<NavLayerOf>)>,
    mut built: Query<(Entity, &mut NavMap, &TileCells, Has<NavLayerApart>)>,
    storages: Query<&TileStorage>,
    tiles: Query<Option<&NavTile>, With<TilePos>>,
    mut index: ResMut<TileIndex>,
) {
    let mut new: Vec<_> = new_maps.iter().collect();
    if new.is_empty() {
        return;
    }
    new.sort_by(|a, b| a.7.translation.z.total_cmp(&b.7.translation.z));
    // Stacks: (base, cells, placement, apart, whether the base is new this frame).
    // (Maps given a NavMap by the game itself are not the plugin's to stack on.)
    let mut stacks: Vec<(Entity, TileCells, Affine2, bool, bool)> = built
        .iter()
        .filter(|(e, ..)| index.layers.contains_key(e))
        .map(|(e, nav, cells, apart)| (e, *cells, nav.placement(), apart, false))
        .collect();
    let mut grown = Vec::new();
    for (entity, size, storage, grid_size, tile_size, map_type, anchor, transform, _, apart) in &new
    {
        let Some(placement) =
            grid_placement(transform, size, grid_size, tile_size, map_type, anchor)
        else {
            warn_once!("bevy_tilepath: a tilemap with a zero grid size gets no navigation grid");
            continue;
        };
        let cells = TileCells::new(**size, **map_type);
        index_tiles(&mut index, *entity, size, storage);
        let base = stacks.iter().find(|&&(_, c, p, base_apart, _)| {
            !apart && !base_apart && c == cells && same_placement(p, placement)
        });
        match base {
            Some(&(base, _, _, _, is_new)) => {
                commands.entity(*entity).insert(NavLayerOf(base));
                index.layers.entry(base).or_default().push(*entity);
                if !is_new && !grown.contains(&base) {
                    grown.push(base);
                }
            }
            None => {
                index.layers.insert(*entity, vec![*entity]);
                stacks.push((*entity, cells, placement, *apart, true));
            }
        }
    }
    for &(base, cells, placement, _, is_new) in &stacks {
        let Some(layers) = index.layers.get(&base) else {
            continue;
        };
        if is_new {
            let rules = new
                .iter()
                .find(|m| m.0 == base)
                .and_then(|m| m.8)
                .map(|r| r.0)
                .unwrap_or_default();
            if let Ok(grid) = stacked_grid(&cells, rules, layers, &storages, &tiles) {
                commands
                    .entity(base)
                    .insert((NavMap::with_placement(grid, placement), cells));
            }
        } else if grown.contains(&base)
            && let Ok((_, mut nav, _, _)) = built.get_mut(base)
        {
            // A layer added to a map already in use: its cells change like edits.
            for pos in cells.tiles() {
                let t = stacked_terrain(layers, pos, &storages, &tiles);
                let _ = nav.set_terrain(cells.cell(pos), t);
            }
        }
    }
}

/// Tiles placed on a map (spawned, or given a new [`NavTile`]) since the last frame.
type PlacedTiles<'a> = (Entity, &'a TilePos, &'a TilemapId, Option<&'a NavTile>);

fn sync_nav_tiles(
    placed: Query<PlacedTiles, Or<(Added<TilePos>, Changed<NavTile>)>>,
    mut lost_nav: RemovedComponents<NavTile>,
    mut despawned: RemovedComponents<TilePos>,
    layer_of: Query<&NavLayerOf>,
    storages: Query<&TileStorage>,
    tiles: Query<Option<&NavTile>, With<TilePos>>,
    mut maps: Query<(&mut NavMap, &TileCells)>,
    mut index: ResMut<TileIndex>,
) {
    // The tilemap layers' cells that changed: despawned tiles (with or without a NavTile; the
    // slot is empty), tiles that lost their NavTile (normal ground, like every tile without
    // one), and tiles placed or given a new NavTile.
    let mut touched: Vec<(Entity, TilePos)> = despawned
        .read()
        .filter_map(|tile| index.tiles.remove(&tile))
        .collect();
    touched.extend(
        lost_nav
            .read()
            .filter_map(|tile| index.tiles.get(&tile).copied()),
    );
    for (tile, pos, map, _) in &placed {
        let layer = map.0;
        let base = layer_of.get(layer).map_or(layer, |l| l.0);
        if index.layers.contains_key(&base) {
            index.tiles.insert(tile, (layer, *pos));
            touched.push((layer, *pos));
        }
    }
    for (layer, pos) in touched {
        let base = layer_of.get(layer).map_or(layer, |l| l.0);
        let (Some(layers), Ok((mut nav, cells))) = (index.layers.get(&base), maps.get_mut(base))
        else {
            continue;
        };
        let cell = cells.cell(pos);
        let _ = nav.set_terrain(cell, stacked_terrain(layers, pos, &storages, &tiles));
    }
}

/// A tilemap moved, scaled or turned: its navigation map is placed anew (units stay where they
/// are in the world).
fn follow_map_transforms(
    mut maps: Query<
        (
            &mut NavMap,
            &Transform,
            &TilemapSize,
            &TilemapGridSize,
            &TilemapTileSize,
            &TilemapType,
            &TilemapAnchor,
        ),
        Or<(
            Changed<Transform>,
            Changed<TilemapAnchor>,
            Changed<TilemapGridSize>,
        )>,
    >,
) {
    for (mut nav_map, transform, size, grid_size, tile_size, map_type, anchor) in &mut maps {
        let Some(placement) =
            grid_placement(transform, size, grid_size, tile_size, map_type, anchor)
        else {
            continue;
        };
        if nav_map.placement() != placement {
            nav_map.set_placement(placement);
        }
    }
}
