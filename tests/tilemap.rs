//! The bevy_ecs_tilemap integration (feature `tilemap`): a tilemap becomes a navigation map and
//! tile edits reach the grid before requests are collected, in whatever schedule the plugin
//! group runs in.
#![cfg(feature = "tilemap")]

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ecs_tilemap::prelude::*;
use bevy_tilepath::prelude::*;
use bevy_tilepath::tilemap::NavTile;

/// A 24 x 8 square tilemap of normal ground, data only (no rendering); returns the map and its
/// tiles by position.
fn spawn_map(world: &mut World) -> (Entity, Vec<Vec<Entity>>) {
    let size = TilemapSize { x: 24, y: 8 };
    let map = world.spawn_empty().id();
    let mut storage = TileStorage::empty(size);
    let mut tiles = vec![Vec::new(); 24];
    for x in 0..24 {
        for y in 0..8 {
            let pos = TilePos { x, y };
            let tile = world
                .spawn((
                    TileBundle {
                        position: pos,
                        tilemap_id: TilemapId(map),
                        ..default()
                    },
                    NavTile::NORMAL,
                ))
                .id();
            storage.set(&pos, tile);
            tiles[x as usize].push(tile);
        }
    }
    let tile_size = TilemapTileSize { x: 16.0, y: 16.0 };
    world.entity_mut(map).insert((
        size,
        storage,
        TilemapGridSize::from(tile_size),
        tile_size,
        TilemapType::Square,
        TilemapAnchor::None,
        Transform::default(),
    ));
    (map, tiles)
}

#[test]
fn tile_edits_are_synced_before_collect_in_fixed_update() {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(
            20,
        )))
        .add_plugins(TilepathPlugins::in_schedule(FixedUpdate));
    let (map, tiles) = spawn_map(app.world_mut());
    // Cell (1, 4)'s center; tile anchor None puts tile (0, 0)'s center at the origin.
    let unit = app
        .world_mut()
        .spawn((
            Transform::from_xyz(16.0, 64.0, 0.0),
            PathRequest::to_cell(Cell::new(22, 4)),
        ))
        .id();
    for _ in 0..10 {
        app.update();
    }
    assert!(
        app.world().get::<NavMap>(map).is_some(),
        "the tilemap got a navigation map"
    );
    let path = app.world().get::<NavPath>(unit).expect("a path");
    assert!(path.cells.contains(&Cell::new(12, 4)));
    // A wall of tiles across the path, with a gap at the top.
    for &tile in &tiles[12][..7] {
        *app.world_mut().get_mut::<NavTile>(tile).unwrap() = NavTile::BLOCKED;
    }
    for _ in 0..10 {
        app.update();
    }
    let map_grid = app.world().get::<NavMap>(map).unwrap().grid().clone();
    assert!(!map_grid.is_walkable(Cell::new(12, 3)));
    let path = app.world().get::<NavPath>(unit).unwrap();
    assert_eq!(path.origin, PathOrigin::GridEdit);
    assert!(path.cells.contains(&Cell::new(12, 7)), "{:?}", path.cells);
}

#[test]
fn emptied_slots_block_and_tiles_without_nav_tile_are_ground() {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .add_plugins(TilepathPlugins::default());
    let (map, tiles) = spawn_map(app.world_mut());
    app.update();
    let walkable = |app: &App, c: Cell| {
        app.world()
            .get::<NavMap>(map)
            .expect("a navigation map")
            .grid()
            .is_walkable(c)
    };
    let (a, b) = (Cell::new(5, 3), Cell::new(9, 6));
    // A tile that loses its NavTile is a plain tile: normal ground.
    app.world_mut().entity_mut(tiles[5][3]).remove::<NavTile>();
    app.update();
    assert!(walkable(&app, a));
    // Despawned as bevy_ecs_tilemap's remove_tiles example does it (a plain tile, and one with
    // a NavTile): the emptied slots block.
    for (tile, pos) in [
        (tiles[5][3], TilePos { x: 5, y: 3 }),
        (tiles[9][6], TilePos { x: 9, y: 6 }),
    ] {
        app.world_mut().entity_mut(tile).despawn();
        app.world_mut()
            .get_mut::<TileStorage>(map)
            .unwrap()
            .remove(&pos);
    }
    app.update();
    assert!(
        !walkable(&app, a),
        "the emptied slot of a plain tile blocks"
    );
    assert!(
        !walkable(&app, b),
        "the emptied slot of a NavTile tile blocks"
    );
    // A plain tile placed in the slot again is ground.
    let pos = TilePos { x: 5, y: 3 };
    let tile = app
        .world_mut()
        .spawn(TileBundle {
            position: pos,
            tilemap_id: TilemapId(map),
            ..default()
        })
        .id();
    app.world_mut()
        .get_mut::<TileStorage>(map)
        .unwrap()
        .set(&pos, tile);
    app.update();
    assert!(walkable(&app, a), "a new plain tile is ground");
    assert!(!walkable(&app, b));
    // And despawning it again blocks again.
    app.world_mut().entity_mut(tile).despawn();
    app.update();
    assert!(!walkable(&app, a));
}
