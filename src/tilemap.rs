//! bevy_ecs_tilemap integration (feature `tilemap`): the navigation grid of a square tilemap is
//! built from its tiles' [`NavTile`] components and kept in sync: tiles spawned, despawned or
//! changed update the grid the same frame (an emptied slot blocks, as does a slot never filled;
//! a tile without a `NavTile` is normal ground), and only units whose remaining path crosses a
//! changed tile are repathed (through [`NavMap::set_terrain`]). The grid lies where the map is
//! drawn, through the map's whole `Transform` (moved, scaled, rotated about z; followed when it
//! changes).

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

/// Builds a [`NavMap`] on every square tilemap and keeps it in sync with its tiles, in the
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
            .add_systems(
                schedule,
                (build_nav_maps, sync_nav_tiles, follow_map_transforms)
                    .chain()
                    .in_set(TilepathSystems::First),
            );
    }
}

/// Where each tile of a navigation map sits, so despawned tiles and tiles that lost their
/// [`NavTile`] can be found.
#[derive(Resource, Default)]
struct TileIndex(EntityHashMap<(Entity, Cell)>);

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

/// Where a square tilemap's navigation grid lies in the world: grid space (cell units) to world
/// space, through the map's whole transform (translated, scaled, rotated about z).
pub fn grid_placement(
    map_transform: &Transform,
    size: &TilemapSize,
    grid_size: &TilemapGridSize,
    tile_size: &TilemapTileSize,
    map_type: &TilemapType,
    anchor: &TilemapAnchor,
) -> Affine2 {
    // Cell (0, 0)'s outer corner: the center of tile (0, 0) minus half a grid cell.
    let center =
        TilePos { x: 0, y: 0 }.center_in_world(size, grid_size, tile_size, map_type, anchor);
    let cell = Vec2::new(grid_size.x, grid_size.y);
    map_affine(map_transform)
        * Affine2::from_scale_angle_translation(cell, 0.0, center - cell / 2.0)
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
);

fn build_nav_maps(
    mut commands: Commands,
    maps: Query<MapQuery, Without<NavMap>>,
    tiles: Query<Option<&NavTile>>,
    mut index: ResMut<TileIndex>,
) {
    for (entity, size, storage, grid_size, tile_size, map_type, anchor, transform, rules) in &maps {
        if *map_type != TilemapType::Square {
            warn_once!("bevy_tilepath: only square tilemaps get a navigation grid");
            continue;
        }
        let mut terrain = vec![BLOCKED; (size.x * size.y) as usize];
        for y in 0..size.y {
            for x in 0..size.x {
                let pos = TilePos { x, y };
                if let Some(tile) = storage.get(&pos) {
                    let t = tiles.get(tile).ok().flatten().map_or(NORMAL, |n| n.0);
                    terrain[(y * size.x + x) as usize] = t;
                    index.0.insert(tile, (entity, tile_cell(pos)));
                }
            }
        }
        let rules = rules.map(|r| r.0).unwrap_or_default();
        let Ok(grid) = NavGrid::from_terrain(size.x, size.y, rules, &terrain) else {
            continue;
        };
        let placement = grid_placement(transform, size, grid_size, tile_size, map_type, anchor);
        commands
            .entity(entity)
            .insert(NavMap::with_placement(grid, placement));
    }
}

/// Tiles placed on a map (spawned, or given a new [`NavTile`]) since the last frame.
type PlacedTiles<'a> = (Entity, &'a TilePos, &'a TilemapId, Option<&'a NavTile>);

fn sync_nav_tiles(
    placed: Query<PlacedTiles, Or<(Added<TilePos>, Changed<NavTile>)>>,
    mut lost_nav: RemovedComponents<NavTile>,
    mut despawned: RemovedComponents<TilePos>,
    still_tiles: Query<(), With<TilePos>>,
    mut maps: Query<&mut NavMap>,
    mut index: ResMut<TileIndex>,
) {
    fn set(maps: &mut Query<&mut NavMap>, map: Entity, cell: Cell, terrain: u8) {
        if let Ok(mut nav_map) = maps.get_mut(map) {
            let _ = nav_map.set_terrain(cell, terrain);
        }
    }
    // Emptied slots first (a tile replaced within one frame: the new one counts, below). A
    // despawned tile, with or without a NavTile, leaves no ground: blocked.
    for tile in despawned.read() {
        if let Some((map, cell)) = index.0.remove(&tile) {
            set(&mut maps, map, cell, BLOCKED);
        }
    }
    // A tile that only lost its NavTile is normal ground, like every tile without one.
    for tile in lost_nav.read() {
        if still_tiles.contains(tile)
            && let Some(&(map, cell)) = index.0.get(&tile)
        {
            set(&mut maps, map, cell, NORMAL);
        }
    }
    for (tile, pos, map, nav) in &placed {
        if maps.contains(map.0) {
            set(
                &mut maps,
                map.0,
                tile_cell(*pos),
                nav.map_or(NORMAL, |n| n.0),
            );
            index.0.insert(tile, (map.0, tile_cell(*pos)));
        }
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
        let placement = grid_placement(transform, size, grid_size, tile_size, map_type, anchor);
        if nav_map.placement() != placement {
            nav_map.set_placement(placement);
        }
    }
}
