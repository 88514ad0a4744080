//! The demo's map: generated terrain (a river with two bridges, walled compounds with narrow
//! gates, forests, roads), the bevy_ecs_tilemap tilemap it becomes, and where units start. The
//! windowed game and the headless run share all of it.

use std::collections::HashSet;

use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;
use bevy_tilepath::core::{BLOCKED, Cell, NavGrid};
use bevy_tilepath::tilemap::NavTile;

use crate::common::Rng;

pub const MAP_W: u32 = 96;
pub const MAP_H: u32 = 54;
pub const TILE: f32 = 16.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Terrain {
    Grass,
    Forest,
    Water,
    Wall,
    Road,
}

impl Terrain {
    /// Texture index in assets/tiles.png.
    pub fn texture(self) -> u32 {
        match self {
            Terrain::Grass => 0,
            Terrain::Forest => 1,
            Terrain::Water => 2,
            Terrain::Wall => 3,
            Terrain::Road => 4,
        }
    }

    /// Navigation cost: roads are fastest, forest slow, water and walls blocked.
    pub fn cost(self) -> u8 {
        match self {
            Terrain::Road => 1,
            Terrain::Grass => 2,
            Terrain::Forest => 5,
            Terrain::Water | Terrain::Wall => BLOCKED,
        }
    }

    /// How the map prints as text (`RTS_MAP=1`).
    pub fn glyph(self) -> char {
        match self {
            Terrain::Water => '~',
            Terrain::Wall => '#',
            Terrain::Road => '=',
            Terrain::Forest => 'f',
            Terrain::Grass => ' ',
        }
    }
}

/// A river with two bridges down the middle, two walled compounds with narrow gates, forests,
/// and roads across.
pub fn generate_map(seed: u64) -> Vec<Terrain> {
    let (w, h) = (MAP_W as i32, MAP_H as i32);
    let mut rng = Rng::new(seed);
    let mut below = |n: i32| rng.below(n as u32) as i32;
    let mut t = vec![Terrain::Grass; (w * h) as usize];
    let idx = |x: i32, y: i32| (y * w + x) as usize;
    // Forest blobs.
    for _ in 0..14 {
        let (cx, cy, r) = (below(w), below(h), 2 + below(4));
        for y in cy - r..=cy + r {
            for x in cx - r..=cx + r {
                if x >= 0
                    && y >= 0
                    && x < w
                    && y < h
                    && (x - cx).pow(2) + (y - cy).pow(2) <= r * r + below(3)
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
    let mut below = |n: i32| rng.below(n as u32) as i32;
    // Roads: one across (with a bridge), one down the left third, a second bridge lower.
    let road_y = h / 2 + below(5) - 2;
    for x in 0..w {
        t[idx(x, road_y)] = Terrain::Road;
    }
    let bridge_y = (h / 5 + below(4)).min(h - 1);
    for x in (w / 2 - 6)..(w / 2 + 6) {
        t[idx(x, bridge_y)] = Terrain::Road;
    }
    let road_x = w / 4 + below(5);
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

/// The navigation grid of `terrain` (the tilemap integration builds the same one from the
/// tiles; this copy places units and spreads goals before the first frame).
pub fn nav_grid(terrain: &[Terrain]) -> NavGrid {
    let costs: Vec<u8> = terrain.iter().map(|t| t.cost()).collect();
    NavGrid::from_terrain(MAP_W, MAP_H, Default::default(), &costs).expect("valid map")
}

/// The largest island (units start only there).
pub fn main_island(grid: &NavGrid) -> Option<u32> {
    let mut sizes = std::collections::HashMap::new();
    for c in grid.cells() {
        if let Some(i) = grid.island(c) {
            *sizes.entry(i).or_insert(0) += 1;
        }
    }
    sizes.into_iter().max_by_key(|&(_, n)| n).map(|(i, _)| i)
}

/// World position of the outer corner of cell (0, 0): the map is centered on the origin.
pub fn origin() -> Vec2 {
    -Vec2::new(MAP_W as f32, MAP_H as f32) * TILE / 2.0
}

/// The world position of a grid-space point.
pub fn to_world(grid_pos: Vec2) -> Vec2 {
    origin() + grid_pos * TILE
}

/// The grid-space point of a world position.
pub fn to_grid(world: Vec2) -> Vec2 {
    (world - origin()) / TILE
}

/// `n` random start cells on the main island, in the left or right third of the map.
pub fn spawn_positions(grid: &NavGrid, n: usize, left: bool, rng: &mut Rng) -> Vec<Cell> {
    let island: HashSet<u32> = main_island(grid).into_iter().collect();
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
        cells.swap(i, rng.below(i as u32 + 1) as usize);
    }
    cells.truncate(n);
    cells
}

/// Spawns `terrain` as a bevy_ecs_tilemap tilemap centered on the origin, each tile with its
/// [`NavTile`] cost: `TilemapNavPlugin` builds the navigation map from it. With a texture the map
/// is drawn (windowed game); without, it is only data (headless run).
pub fn spawn_tilemap(commands: &mut Commands, terrain: &[Terrain], texture: Option<Handle<Image>>) {
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
    match texture {
        Some(texture) => {
            commands.entity(map_entity).insert(TilemapBundle {
                grid_size: tile_size.into(),
                map_type: TilemapType::Square,
                size: map_size,
                storage,
                texture: TilemapTexture::Single(texture),
                tile_size,
                anchor: TilemapAnchor::Center,
                ..default()
            });
        }
        None => {
            commands.entity(map_entity).insert((
                TilemapGridSize::from(tile_size),
                TilemapType::Square,
                map_size,
                storage,
                tile_size,
                TilemapAnchor::Center,
                Transform::default(),
            ));
        }
    }
}
