//! How a tilemap's tile positions map to its navigation grid's cells ([`TileCells`]), for
//! every kind of map bevy_ecs_tilemap draws.

use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;

use crate::core::{Cell, MoveRules, Topology};

/// How a tilemap's tile positions map to the cells of its navigation grid (set by the plugin on
/// every tilemap with a [`NavMap`](crate::NavMap); build one with [`TileCells::new`] to convert before then).
///
/// - Square and isometric diamond maps: a tile's cell has the tile's coordinates.
/// - Isometric staggered maps are drawn on a diamond grid: tile `(x, y)` is diamond cell
///   `(x, x + y)` (bevy_ecs_tilemap's `DiamondPos::from(StaggeredPos)`).
/// - Hexagonal maps, in every coordinate system (row or column; even, odd or axial): the tile's
///   axial coordinates (bevy_ecs_tilemap's `AxialPos`), shifted so that none is negative.
///
/// Cells no tile maps to (the corners of the grid a staggered or offset hexagonal map leaves
/// empty) are blocked, and the debug overlay leaves them out.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub struct TileCells {
    kind: CellKind,
    size: UVec2,
    /// Added to a tile's coordinates in the grid's system so that every cell is in the grid.
    offset: IVec2,
    grid: UVec2,
}

/// The coordinate systems [`TileCells`] maps from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Reflect)]
enum CellKind {
    Same,
    Staggered,
    HexAxial,
    HexRowOdd,
    HexRowEven,
    HexColumnOdd,
    HexColumnEven,
}

impl TileCells {
    /// The mapping for a tilemap of `size` and `map_type`.
    pub fn new(size: TilemapSize, map_type: TilemapType) -> Self {
        let kind = match map_type {
            TilemapType::Square | TilemapType::Isometric(IsoCoordSystem::Diamond) => CellKind::Same,
            TilemapType::Isometric(IsoCoordSystem::Staggered) => CellKind::Staggered,
            TilemapType::Hexagon(HexCoordSystem::Row | HexCoordSystem::Column) => {
                CellKind::HexAxial
            }
            TilemapType::Hexagon(HexCoordSystem::RowOdd) => CellKind::HexRowOdd,
            TilemapType::Hexagon(HexCoordSystem::RowEven) => CellKind::HexRowEven,
            TilemapType::Hexagon(HexCoordSystem::ColumnOdd) => CellKind::HexColumnOdd,
            TilemapType::Hexagon(HexCoordSystem::ColumnEven) => CellKind::HexColumnEven,
        };
        let size = UVec2::new(size.x, size.y);
        let mut cells = TileCells {
            kind,
            size,
            offset: IVec2::ZERO,
            grid: size,
        };
        // Every mapping is monotonic along each axis: its extremes are on the map's edges.
        let (w, h) = (size.x.max(1) as i32, size.y.max(1) as i32);
        let edge = (0..w)
            .flat_map(|x| [IVec2::new(x, 0), IVec2::new(x, h - 1)])
            .chain((0..h).flat_map(|y| [IVec2::new(0, y), IVec2::new(w - 1, y)]));
        let (lo, hi) = edge
            .map(|t| cells.raw(t))
            .fold((IVec2::MAX, IVec2::MIN), |(lo, hi), c| {
                (lo.min(c), hi.max(c))
            });
        cells.offset = -lo;
        cells.grid = (hi - lo + IVec2::ONE).as_uvec2();
        cells
    }

    /// A tile's coordinates in the grid's system, before the offset.
    fn raw(&self, t: IVec2) -> IVec2 {
        // bevy_ecs_tilemap's offset-to-axial conversions (tile coordinates are never negative).
        match self.kind {
            CellKind::Same | CellKind::HexAxial => t,
            CellKind::Staggered => IVec2::new(t.x, t.x + t.y),
            CellKind::HexRowOdd => IVec2::new(t.x - t.y / 2, t.y),
            CellKind::HexRowEven => IVec2::new(t.x - (t.y + 1) / 2, t.y),
            CellKind::HexColumnOdd => IVec2::new(t.x, t.y - t.x / 2),
            CellKind::HexColumnEven => IVec2::new(t.x, t.y - (t.x + 1) / 2),
        }
    }

    /// The cell of a tile position.
    pub fn cell(&self, pos: TilePos) -> Cell {
        self.raw(IVec2::new(pos.x as i32, pos.y as i32)) + self.offset
    }

    /// The tile position of a cell, or `None` if no tile of the map maps to it.
    pub fn tile(&self, cell: Cell) -> Option<TilePos> {
        let c = cell - self.offset;
        let t = match self.kind {
            CellKind::Same | CellKind::HexAxial => c,
            CellKind::Staggered => IVec2::new(c.x, c.y - c.x),
            CellKind::HexRowOdd => IVec2::new(c.x + c.y.div_euclid(2), c.y),
            CellKind::HexRowEven => IVec2::new(c.x + (c.y + 1).div_euclid(2), c.y),
            CellKind::HexColumnOdd => IVec2::new(c.x, c.y + c.x.div_euclid(2)),
            CellKind::HexColumnEven => IVec2::new(c.x, c.y + (c.x + 1).div_euclid(2)),
        };
        (t.cmpge(IVec2::ZERO).all() && t.cmplt(self.size.as_ivec2()).all()).then_some(TilePos {
            x: t.x as u32,
            y: t.y as u32,
        })
    }

    /// The navigation grid's width and height in cells.
    pub fn grid_size(&self) -> UVec2 {
        self.grid
    }

    /// Whether the cells are hexagons.
    pub fn is_hex(&self) -> bool {
        !matches!(self.kind, CellKind::Same | CellKind::Staggered)
    }

    /// The move rules of the map's grid: `rules` with the map's topology (see
    /// [`TilemapNavRules`](super::TilemapNavRules)).
    pub fn rules(&self, rules: MoveRules) -> MoveRules {
        let topology = match (self.is_hex(), rules.topology) {
            (true, _) => Topology::Hex,
            (false, Topology::Hex) => Topology::Eight,
            (false, t) => t,
        };
        MoveRules { topology, ..rules }
    }

    /// The topology of the map's grid (where its cells' centers lie).
    pub(super) fn topology(&self) -> Topology {
        if self.is_hex() {
            Topology::Hex
        } else {
            Topology::Eight
        }
    }

    /// Every tile position of the map, row by row.
    pub(super) fn tiles(&self) -> impl Iterator<Item = TilePos> + use<> {
        let size = self.size;
        (0..size.y).flat_map(move |y| (0..size.x).map(move |x| TilePos { x, y }))
    }
}
