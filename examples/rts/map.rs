//! The demo's map: generated terrain (a river with two bridges, walled compounds with narrow
//! gates, forests, roads), the bevy_ecs_tilemap tilemap it becomes (square, isometric diamond or
//! hexagonal: `--map`), and where units start. The windowed game and the headless run share all
//! of it.

use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;
use bevy_tilepath::NavMap;
use bevy_tilepath::core::{BLOCKED, Cell, LinkKeys, NavGrid};
use bevy_tilepath::tilemap::{NavTile, NavTileLink, TileCells, grid_placement};

use crate::common::Rng;

pub const MAP_W: u32 = 96;
pub const MAP_H: u32 = 54;
pub const TILE: f32 = 16.0;

/// The kind of tilemap the demo draws its map on (`--map square|iso|hex`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MapKind {
    #[default]
    Square,
    /// Isometric diamond tiles.
    Iso,
    /// Pointy-top hexagons in offset rows (bevy_ecs_tilemap's `HexCoordSystem::RowOdd`).
    Hex,
}

impl MapKind {
    /// The `--map` value; an unknown one is an error.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "square" => Ok(MapKind::Square),
            "iso" => Ok(MapKind::Iso),
            "hex" => Ok(MapKind::Hex),
            _ => Err(format!(
                "--map: unknown map kind {s:?} (square, iso or hex)"
            )),
        }
    }

    /// The name the summary line gives.
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Square => "square",
            MapKind::Iso => "iso",
            MapKind::Hex => "hex",
        }
    }

    fn map_type(self) -> TilemapType {
        match self {
            MapKind::Square => TilemapType::Square,
            MapKind::Iso => TilemapType::Isometric(IsoCoordSystem::Diamond),
            MapKind::Hex => TilemapType::Hexagon(HexCoordSystem::RowOdd),
        }
    }

    /// Tile (and grid) size in pixels; the texture atlas of that shape.
    fn tiles(self) -> (TilemapTileSize, &'static str) {
        match self {
            MapKind::Square => (TilemapTileSize { x: TILE, y: TILE }, "tiles.png"),
            MapKind::Iso => (
                TilemapTileSize {
                    x: 2.0 * TILE,
                    y: TILE,
                },
                "tiles_iso.png",
            ),
            MapKind::Hex => (
                TilemapTileSize {
                    x: TILE,
                    y: TILE + 2.0,
                },
                "tiles_hex.png",
            ),
        }
    }

    /// How far the camera zooms out to show the whole map in a 1280 x 720 window.
    pub fn camera_scale(self) -> f32 {
        match self {
            MapKind::Iso => 1.9,
            _ => 1.2,
        }
    }

    /// The units' body radius in tiles: on hexagons a one-tile gate is 0.577 tiles wide between
    /// the corners of the wall tiles on either side, so bodies are a little thinner there.
    pub fn unit_radius(self) -> f32 {
        match self {
            MapKind::Hex => 0.27,
            _ => 0.3,
        }
    }
}

/// The map as the tilemap integration builds it, before the first frame: its tiles' cells
/// ([`TileCells`]) and its navigation map (the same grid and placement the plugin builds), so
/// units can be placed and orders planned in the world.
#[derive(Resource, Clone)]
pub struct DemoMap {
    pub cells: TileCells,
    pub nav: NavMap,
    /// The map's links, each on the tile it is entered from (see [`demo_links`]).
    pub links: Vec<(DemoLink, TilePos, NavTileLink)>,
}

impl DemoMap {
    pub fn new(kind: MapKind, terrain: &[Terrain]) -> Self {
        let size = TilemapSize { x: MAP_W, y: MAP_H };
        let cells = TileCells::new(size, kind.map_type());
        let (tile_size, _) = kind.tiles();
        let placement = grid_placement(
            &Transform::default(),
            &size,
            &tile_size.into(),
            &tile_size,
            &kind.map_type(),
            &TilemapAnchor::Center,
        )
        .expect("a placeable map");
        let grid_size = cells.grid_size();
        let mut costs = vec![BLOCKED; (grid_size.x * grid_size.y) as usize];
        for y in 0..MAP_H {
            for x in 0..MAP_W {
                let c = cells.cell(TilePos { x, y });
                costs[(c.y as u32 * grid_size.x + c.x as u32) as usize] =
                    terrain[(y * MAP_W + x) as usize].cost();
            }
        }
        let rules = cells.rules(Default::default());
        let grid =
            NavGrid::from_terrain(grid_size.x, grid_size.y, rules, &costs).expect("valid map");
        let mut map = DemoMap {
            cells,
            nav: NavMap::with_placement(grid, placement),
            links: Vec::new(),
        };
        map.links = demo_links(terrain);
        for &(_, from, tile_link) in &map.links {
            let link = tile_link.link_from(from, &map.cells);
            map.nav
                .add_link(link)
                .expect("links between cells of the map");
        }
        map
    }

    /// The cell of tile `(x, y)`.
    pub fn cell(&self, x: u32, y: u32) -> Cell {
        self.cells.cell(TilePos {
            x: x.min(MAP_W - 1),
            y: y.min(MAP_H - 1),
        })
    }

    /// The tile of a cell, if it is on the map.
    pub fn tile(&self, cell: Cell) -> Option<TilePos> {
        self.cells.tile(cell)
    }

    pub fn grid(&self) -> &NavGrid {
        self.nav.grid()
    }

    /// The grid-space point of a world position.
    pub fn to_grid(&self, world: Vec2) -> Vec2 {
        self.nav.world_to_grid(world)
    }
}

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

/// What a link of the demo's map is.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemoLink {
    /// A pair of teleporters between the far corners of the two banks (two-way).
    Teleporter,
    /// A jump down across the river, west to east only.
    Drop,
    /// A gate through the long wall west of the river, for blue's units only (they hold
    /// [`GATE_KEY`]; `O` opens and shuts it).
    Gate,
}

/// The key blue's units hold ([`HeldKeys`](bevy_tilepath::HeldKeys)): the gate opens for them only.
pub const GATE_KEY: LinkKeys = LinkKeys::key(0);

/// The demo's links, each on the tile it is entered from (tile rows count up the screen): a
/// pair of teleporters (near the north-west and south-east corners, a tile's effort), a one-way
/// drop across the river in its northern part (two tiles' effort), and a gate through the long
/// wall west of the river for blue's units only (a tile's effort, open at the start).
pub fn demo_links(terrain: &[Terrain]) -> Vec<(DemoLink, TilePos, NavTileLink)> {
    let (w, h) = (MAP_W as i32, MAP_H as i32);
    let free = |x: i32, y: i32| {
        x >= 0 && y >= 0 && x < w && y < h && terrain[(y * w + x) as usize].cost() != BLOCKED
    };
    let tile = |x: i32, y: i32| TilePos {
        x: x as u32,
        y: y as u32,
    };
    // The free tile nearest (in rings) to (x, y).
    let near = |x: i32, y: i32| {
        (0..w.max(h)).find_map(|r| {
            (-r..=r)
                .flat_map(|dy| (-r..=r).map(move |dx| (x + dx, y + dy)))
                .find(|&(x, y)| free(x, y))
        })
    };
    let mut links = Vec::new();
    if let (Some(a), Some(b)) = (near(w / 10, h * 4 / 5), near(w * 9 / 10, h / 5)) {
        let link = NavTileLink::two_way(tile(b.0, b.1), 1.0);
        links.push((DemoLink::Teleporter, tile(a.0, a.1), link));
    }
    // The river's run of water on a northern row, jumped from its west bank to its east.
    for y in (h * 3 / 4..h - 2).step_by(3) {
        let water: Vec<i32> = (w * 3 / 10..w * 7 / 10)
            .filter(|&x| terrain[(y * w + x) as usize] == Terrain::Water)
            .collect();
        let (Some(&x0), Some(&x1)) = (water.first(), water.last()) else {
            continue;
        };
        if x1 - x0 < 4 && free(x0 - 1, y) && free(x1 + 1, y) {
            let link = NavTileLink::one_way(tile(x1 + 1, y), 2.0);
            links.push((DemoLink::Drop, tile(x0 - 1, y), link));
            break;
        }
    }
    // The long wall west of the river, its gap at a third of the height: a gate near its other
    // end, away from the road through it.
    let x = w / 2 - 12;
    let gate = (h * 3 / 4..h - 6).find(|&y| {
        terrain[(y * w + x) as usize] == Terrain::Wall && free(x - 1, y) && free(x + 1, y)
    });
    if let Some(y) = gate {
        let mut link = NavTileLink::two_way(tile(x + 1, y), 1.0);
        link.link = link.link.for_keys(GATE_KEY);
        links.push((DemoLink::Gate, tile(x - 1, y), link));
    }
    links
}

/// A river with two bridges down the middle, two walled compounds with narrow gates, forests,
/// and roads across. The roads and bridges are three tiles wide: two armies of bodies that
/// never walk through each other can cross the river both ways on them (a one-tile bridge
/// carries one way at a time), and tanks can cross the river and the long walls where the
/// roads do, and drive through forest on them. The compounds' one-tile gates and the long
/// walls' one-tile gaps are one-way passages, closed to tanks.
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
    // Three tiles wide.
    for dy in [-1, 1] {
        for x in 0..w {
            t[idx(x, (road_y + dy).clamp(0, h - 1))] = Terrain::Road;
        }
        for x in (w / 2 - 6)..(w / 2 + 6) {
            t[idx(x, (bridge_y + dy).clamp(0, h - 1))] = Terrain::Road;
        }
        for y in 0..h {
            t[idx((road_x + dy).clamp(0, w - 1), y)] = Terrain::Road;
        }
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

/// The largest island (units start only there; of two as large, the higher numbered, whatever
/// the hash map's order).
pub fn main_island(grid: &NavGrid) -> Option<u32> {
    let mut sizes = std::collections::HashMap::new();
    for c in grid.cells() {
        if let Some(i) = grid.island(c) {
            *sizes.entry(i).or_insert(0) += 1;
        }
    }
    sizes
        .into_iter()
        .max_by_key(|&(i, n)| (n, i))
        .map(|(i, _)| i)
}

/// Spawns `terrain` as a bevy_ecs_tilemap tilemap centered on the origin, each tile with its
/// [`NavTile`] cost: `TilemapNavPlugin` builds the navigation map from it; and `links` as
/// [`NavTileLink`]s on the tiles they are entered from. With a texture the map is drawn (windowed game); without, it is
/// only data (headless run).
pub fn spawn_tilemap(
    commands: &mut Commands,
    kind: MapKind,
    terrain: &[Terrain],
    links: &[(DemoLink, TilePos, NavTileLink)],
    assets: Option<&AssetServer>,
) {
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
            for &(kind, _, link) in links.iter().filter(|l| l.1 == pos) {
                commands.entity(tile).insert((link, kind));
            }
        }
    }
    let (tile_size, atlas) = kind.tiles();
    match assets {
        Some(assets) => {
            commands.entity(map_entity).insert(TilemapBundle {
                grid_size: tile_size.into(),
                map_type: kind.map_type(),
                size: map_size,
                storage,
                texture: TilemapTexture::Single(assets.load(atlas)),
                tile_size,
                anchor: TilemapAnchor::Center,
                ..default()
            });
        }
        None => {
            commands.entity(map_entity).insert((
                TilemapGridSize::from(tile_size),
                kind.map_type(),
                map_size,
                storage,
                tile_size,
                TilemapAnchor::Center,
                Transform::default(),
            ));
        }
    }
}
