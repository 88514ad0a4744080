//! bevy_ecs_tilemap integration (feature `tilemap`): the navigation grid of a square or diamond
//! isometric tilemap is built from its tiles' [`NavTile`] components and kept in sync: tiles spawned, despawned or
//! changed update the grid the same frame (an emptied slot blocks, as does a slot never filled;
//! a tile without a `NavTile` is normal ground), and only units whose remaining path crosses a
//! changed tile are repathed (through [`NavMap::set_terrain`]). The grid lies where the map is
//! drawn, through the map's whole `Transform` (moved, scaled, rotated about z; followed when it
//! changes). Tilemaps stacked as bevy_ecs_tilemap's `layers` example stacks them (same size,
//! their cells in the same world places, any z) are layers of one navigation map, on the lowest:
//! a cell is blocked if any layer's tile blocks it or no layer has a tile there, else it costs
//! the dearest layer's tile ([`NavLayerOf`] marks the upper layers; [`NavLayerApart`] keeps a
//! tilemap apart).

use bevy::ecs::entity::EntityHashMap;
use bevy::math::Affine2;
use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;

use crate::core::{BLOCKED, Cell, MoveRules, NORMAL, NavGrid};
use crate::plugin::schedule::TilepathSchedule;
use crate::{NavMap, TilepathSystems};

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
/// its first frame; default rules otherwise).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Reflect)]
#[reflect(Component)]
pub struct TilemapNavRules(pub MoveRules);

/// Builds a [`NavMap`] on every square and diamond isometric tilemap and keeps it in sync with its tiles, in the
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
            .add_systems(
                schedule,
                (build_nav_maps, sync_nav_tiles, follow_map_transforms)
                    .chain()
                    .in_set(TilepathSystems::First),
            );
    }
}

/// Keeps a tilemap apart from the tilemaps stacked with it: it gets a navigation map of its own
/// instead of being a layer of theirs (add it before the tilemap's first frame).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub struct NavLayerApart;

/// Set by the plugin on a tilemap that is a layer of another tilemap's navigation map: the
/// [`NavMap`] is on the entity named here (the lowest of the stack).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub struct NavLayerOf(pub Entity);

/// Where each tile of a navigation map sits, so despawned tiles and tiles that lost their
/// [`NavTile`] can be found, and each navigation map's layers (the tilemap it is on first).
#[derive(Resource, Default)]
struct TileIndex {
    tiles: EntityHashMap<(Entity, Cell)>,
    layers: EntityHashMap<Vec<Entity>>,
}

/// The cell of a tile position.
pub fn tile_cell(pos: TilePos) -> Cell {
    Cell::new(pos.x as i32, pos.y as i32)
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

/// Where a tilemap's navigation grid lies in the world: grid space (cell units) to world space,
/// through the map's whole transform (translated, scaled, rotated about z). Square and diamond
/// isometric maps only (their tile centres are an affine image of the tile coordinates: the
/// same square grid, drawn another way); `None` for the others.
pub fn grid_placement(
    map_transform: &Transform,
    size: &TilemapSize,
    grid_size: &TilemapGridSize,
    tile_size: &TilemapTileSize,
    map_type: &TilemapType,
    anchor: &TilemapAnchor,
) -> Option<Affine2> {
    if !matches!(
        map_type,
        TilemapType::Square | TilemapType::Isometric(IsoCoordSystem::Diamond)
    ) {
        return None;
    }
    // The tilemap's own projection of tile (0, 0) and its two neighbours along the axes.
    let center =
        |x, y| TilePos { x, y }.center_in_world(size, grid_size, tile_size, map_type, anchor);
    let (o, ex, ey) = (
        center(0, 0),
        center(1, 0) - center(0, 0),
        center(0, 1) - center(0, 0),
    );
    // Cell (0, 0)'s outer corner: half a cell back along both axes from its center.
    let local = Affine2::from_mat2_translation(Mat2::from_cols(ex, ey), o - (ex + ey) / 2.0);
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

/// New square and diamond isometric tilemaps get a navigation map, or become a layer of the navigation map of the
/// tilemap they are stacked on (same size, same cells in the same world places, any z), lowest
/// first; tilemaps with [`NavLayerApart`] always get their own.
fn build_nav_maps(
    mut commands: Commands,
    new_maps: Query<MapQuery, (Without<NavMap>, Without<NavLayerOf>)>,
    mut built: Query<(Entity, &mut NavMap, &TilemapSize, Has<NavLayerApart>)>,
    storages: Query<&TileStorage>,
    tiles: Query<Option<&NavTile>, With<TilePos>>,
    mut index: ResMut<TileIndex>,
) {
    let mut new: Vec<_> = new_maps.iter().collect();
    if new.is_empty() {
        return;
    }
    new.sort_by(|a, b| a.7.translation.z.total_cmp(&b.7.translation.z));
    // Stacks: (base, size, placement, apart, whether the base is new this frame).
    // (Maps given a NavMap by the game itself are not the plugin's to stack on.)
    let mut stacks: Vec<(Entity, TilemapSize, Affine2, bool, bool)> = built
        .iter()
        .filter(|(e, ..)| index.layers.contains_key(e))
        .map(|(e, nav, size, apart)| (e, *size, nav.placement(), apart, false))
        .collect();
    let mut grown = Vec::new();
    for (entity, size, storage, grid_size, tile_size, map_type, anchor, transform, _, apart) in &new
    {
        let Some(placement) =
            grid_placement(transform, size, grid_size, tile_size, map_type, anchor)
        else {
            warn_once!(
                "bevy_tilepath: only square and diamond isometric tilemaps get a navigation grid"
            );
            continue;
        };
        for (pos, tile) in storage
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i, (*t)?)))
        {
            let pos = TilePos {
                x: pos as u32 % size.x,
                y: pos as u32 / size.x,
            };
            index.tiles.insert(tile, (*entity, tile_cell(pos)));
        }
        let base = stacks.iter().find(|&&(_, s, p, base_apart, _)| {
            !apart && !base_apart && s == **size && same_placement(p, placement)
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
                stacks.push((*entity, **size, placement, *apart, true));
            }
        }
    }
    for &(base, size, placement, _, is_new) in &stacks {
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
            let terrain: Vec<u8> = (0..size.y)
                .flat_map(|y| (0..size.x).map(move |x| TilePos { x, y }))
                .map(|pos| stacked_terrain(layers, pos, &storages, &tiles))
                .collect();
            if let Ok(grid) = NavGrid::from_terrain(size.x, size.y, rules, &terrain) {
                commands
                    .entity(base)
                    .insert(NavMap::with_placement(grid, placement));
            }
        } else if grown.contains(&base)
            && let Ok((_, mut nav, _, _)) = built.get_mut(base)
        {
            // A layer added to a map already in use: its cells change like edits.
            for y in 0..size.y {
                for x in 0..size.x {
                    let t = stacked_terrain(layers, TilePos { x, y }, &storages, &tiles);
                    let _ = nav.set_terrain(Cell::new(x as i32, y as i32), t);
                }
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
    mut maps: Query<&mut NavMap>,
    mut index: ResMut<TileIndex>,
) {
    // The tilemap layers' cells that changed: despawned tiles (with or without a NavTile; the
    // slot is empty), tiles that lost their NavTile (normal ground, like every tile without
    // one), and tiles placed or given a new NavTile.
    let mut touched: Vec<(Entity, Cell)> = despawned
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
            index.tiles.insert(tile, (layer, tile_cell(*pos)));
            touched.push((layer, tile_cell(*pos)));
        }
    }
    for (layer, cell) in touched {
        let base = layer_of.get(layer).map_or(layer, |l| l.0);
        let (Some(layers), Ok(mut nav)) = (index.layers.get(&base), maps.get_mut(base)) else {
            continue;
        };
        let pos = TilePos {
            x: cell.x as u32,
            y: cell.y as u32,
        };
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
