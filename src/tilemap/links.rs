//! Links placed on tiles ([`NavTileLink`]): a door, a ladder or a teleporter drawn as tiles
//! becomes a link of the tilemap's navigation map, its ends the tiles' cells whatever the map's
//! kind (square, isometric, hexagonal: see [`TileCells`]).

use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;

use super::cells::TileCells;
use super::layers::NavLayerOf;
use crate::core::{Cell, Link};
use crate::plugin::map::links::NavLink;

/// A link from the tile it is on to the tile `to` of the same tilemap (or of the same stack of
/// layers): the plugin gives the tile entity the [`NavLink`] on the tilemap's navigation map,
/// from the tile's cell to `to`'s, with `link`'s rules (cost, one way or both, open, capacity,
/// keys). Change `link.open` to open or close it; despawn the tile (or remove this component) to
/// take it away. `link`'s own `from` and `to` are not read: the tiles give them.
///
/// ```
/// use bevy::prelude::*;
/// use bevy_ecs_tilemap::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::tilemap::NavTileLink;
///
/// let mut app = App::new();
/// app.add_plugins((MinimalPlugins, TilepathPlugins::default()));
/// let size = TilemapSize { x: 10, y: 4 };
/// let map = app.world_mut().spawn_empty().id();
/// let mut storage = TileStorage::empty(size);
/// for x in 0..size.x {
///     for y in 0..size.y {
///         let position = TilePos { x, y };
///         let tile = TileBundle { position, tilemap_id: TilemapId(map), ..default() };
///         let tile = app.world_mut().spawn(tile).id();
///         storage.set(&position, tile);
///     }
/// }
/// let tile_size = TilemapTileSize { x: 16.0, y: 16.0 };
/// app.world_mut().entity_mut(map).insert((
///     size, storage, TilemapGridSize::from(tile_size), tile_size, TilemapType::Square,
///     TilemapAnchor::None, Transform::default(),
/// ));
/// // A ladder from tile (1, 1) up to tile (8, 2), three tiles' effort, one way.
/// let from = storage_tile(&app, map, TilePos { x: 1, y: 1 });
/// app.world_mut()
///     .entity_mut(from)
///     .insert(NavTileLink::one_way(TilePos { x: 8, y: 2 }, 3.0));
/// app.update();
/// app.update();
/// let grid = app.world().get::<NavMap>(map).unwrap().grid();
/// let (_, link) = grid.links().next().expect("the ladder");
/// assert_eq!((link.from, link.to, link.two_way), (Cell::new(1, 1), Cell::new(8, 2), false));
///
/// fn storage_tile(app: &App, map: Entity, pos: TilePos) -> Entity {
///     app.world().get::<TileStorage>(map).unwrap().get(&pos).unwrap()
/// }
/// ```
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct NavTileLink {
    /// The tile the link leads to.
    pub to: TilePos,
    /// Its rules (its `from` and `to` cells are the tiles').
    pub link: Link,
}

impl NavTileLink {
    /// A link both ways to `to`, crossed at `cost` tiles, open.
    pub fn two_way(to: TilePos, cost: f32) -> Self {
        NavTileLink {
            to,
            link: Link::two_way(Cell::ZERO, Cell::ZERO, cost),
        }
    }

    /// A link one way, from its tile to `to`, crossed at `cost` tiles, open.
    pub fn one_way(to: TilePos, cost: f32) -> Self {
        NavTileLink {
            to,
            link: Link::one_way(Cell::ZERO, Cell::ZERO, cost),
        }
    }

    /// The link it makes from the tile at `from` on a map laid out as `cells`: `link` between
    /// the two tiles' cells (what the plugin puts on the map; a game building a navigation map
    /// ahead of the plugin, as the RTS demo does, adds the same).
    pub fn link_from(&self, from: TilePos, cells: &TileCells) -> Link {
        Link {
            from: cells.cell(from),
            to: cells.cell(self.to),
            ..self.link
        }
    }
}

/// The tiles whose [`NavTileLink`] is new, changed, moved or not placed yet (its map not built
/// yet).
type TileLinks<'a> = (
    Entity,
    &'a NavTileLink,
    &'a TilePos,
    &'a TilemapId,
    Option<&'a NavLink>,
);

/// Gives each tile with a [`NavTileLink`] its [`NavLink`] (once its tilemap has a navigation
/// map), keeps it in step with the tile link, and takes it away with it.
pub(super) fn place_tile_links(
    mut commands: Commands,
    tiles: Query<
        TileLinks,
        Or<(
            Changed<NavTileLink>,
            Changed<TilePos>,
            Changed<TilemapId>,
            Without<NavLink>,
        )>,
    >,
    mut lost: RemovedComponents<NavTileLink>,
    maps: Query<(&TileCells, &TilemapSize)>,
    layer_of: Query<&NavLayerOf>,
    mut warned: Local<Vec<Entity>>,
) {
    for tile in lost.read() {
        if let Ok(mut e) = commands.get_entity(tile) {
            e.try_remove::<NavLink>();
        }
    }
    for (tile, tile_link, pos, tilemap, placed) in &tiles {
        let base = layer_of.get(tilemap.0).map_or(tilemap.0, |l| l.0);
        let Ok((cells, size)) = maps.get(base) else {
            // Its map is not built yet: it waits.
            continue;
        };
        if tile_link.to.x >= size.x || tile_link.to.y >= size.y {
            if !warned.contains(&tile) {
                warned.push(tile);
                let to = tile_link.to;
                warn!(
                    "NavTileLink on {tile}: tile ({}, {}) is off its map",
                    to.x, to.y
                );
            }
            continue;
        }
        let link = tile_link.link_from(*pos, cells);
        let nav = NavLink { map: base, link };
        if placed != Some(&nav) {
            commands.entity(tile).insert(nav);
        }
    }
}
