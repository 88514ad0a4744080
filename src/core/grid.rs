//! The navigation grid: walkability, terrain cost, an additive penalty layer, move rules and
//! island labels, stored in flat arrays with a blocked border so searches never bounds-check.

use bevy::math::Vec2;
use bevy::reflect::Reflect;

use std::sync::Arc;

use super::cell::{BLOCKED, Cell, NORMAL};
use super::cost::CostModel;
use super::islands::Islands;
use super::jump_table::JumpTable;
use super::links::{Link, LinkError, LinkId, LinkIndex, LinkKeys, Shape};

/// A jump table built apart from its grid ([`NavGrid::build_jump_table_apart`]), with the
/// terrain it was built from.
#[derive(Debug)]
pub(crate) struct BuiltJumpTable {
    table: JumpTable,
    terrain: Vec<u8>,
    /// The links' ends it was built with (see `jump_table`).
    stops: Vec<u64>,
}

/// The shape of the cells and how units may move from cell to cell.
///
/// Square grids: cell `(x, y)` is the unit square `[x, x + 1) x [y, y + 1)` of grid space.
/// Hexagonal grids use axial coordinates (as Red Blob Games and bevy_ecs_tilemap's `AxialPos`
/// name them): cell `(q, r)` is the pointy-top hexagon centred at `(q + r / 2, r * sqrt(3) / 2)`,
/// so neighbouring centres are one unit apart, and its six neighbours are `(q +- 1, r)`,
/// `(q, r +- 1)`, `(q + 1, r - 1)` and `(q - 1, r + 1)`. Every hexagonal map (pointy or flat top,
/// offset or axial coordinates) is this grid under another placement in the world; the tilemap
/// integration maps its tile positions to these cells.
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub enum Topology {
    /// Squares; up, down, left and right only.
    Four,
    /// Squares; the four straight moves and the four diagonals (the default).
    #[default]
    Eight,
    /// Hexagons in axial coordinates; six moves of equal length (a straight step each). The
    /// corner rule does not apply.
    Hex,
}

impl Topology {
    /// The center of `cell` in grid space: `(x + 0.5, y + 0.5)` on square grids, the hexagon's
    /// center on hexagonal ones.
    #[inline]
    pub fn cell_center(self, cell: Cell) -> Vec2 {
        if self == Topology::Hex {
            super::hex::center(cell)
        } else {
            super::cell::cell_center(cell)
        }
    }

    /// The cell containing the grid-space point `p` (on hexagonal grids, the nearest center).
    #[inline]
    pub fn cell_at(self, p: Vec2) -> Cell {
        if self == Topology::Hex {
            super::hex::cell_at(p)
        } else {
            super::cell::cell_at(p)
        }
    }
}

/// When a diagonal move past a wall corner is allowed.
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub enum CornerRule {
    /// A diagonal move needs both orthogonal neighbours free (the default, and the MovingAI
    /// benchmark rule; Lester's "no cutting corners").
    #[default]
    NoCutting,
    /// A diagonal move needs at least one orthogonal neighbour free: units may clip a corner, but
    /// never squeeze between two diagonally touching walls.
    AllowCutting,
}

/// The move rules of a grid: topology, corner rule and step costs.
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub struct MoveRules {
    /// Square cells with four- or eight-way moves, or hexagons.
    pub topology: Topology,
    /// The diagonal corner rule (ignored for four-way moves and hexagons).
    pub corner_rule: CornerRule,
    /// The fixed-point cost of a straight and a diagonal step.
    pub costs: CostModel,
}

/// Why a grid access or edit was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridError {
    /// The cell lies outside the grid.
    OutOfBounds {
        /// The cell asked for.
        cell: Cell,
        /// The grid's width.
        width: u32,
        /// The grid's height.
        height: u32,
    },
    /// A grid dimension is zero or too large (width + 2 times height + 2 must fit in `u32`).
    BadSize {
        /// The width asked for.
        width: u32,
        /// The height asked for.
        height: u32,
    },
    /// Input data does not have width x height entries.
    BadLength {
        /// Entries expected.
        expected: usize,
        /// Entries given.
        got: usize,
    },
}

impl std::fmt::Display for GridError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridError::OutOfBounds {
                cell,
                width,
                height,
            } => write!(
                f,
                "cell ({}, {}) is outside the {width}x{height} grid",
                cell.x, cell.y
            ),
            GridError::BadSize { width, height } => {
                write!(f, "a {width}x{height} grid is empty or too large")
            }
            GridError::BadLength { expected, got } => {
                write!(f, "expected {expected} cells, got {got}")
            }
        }
    }
}

impl std::error::Error for GridError {}

/// A width x height navigation grid.
///
/// Each cell has a terrain cost (`0` = [`BLOCKED`], `1` = [`NORMAL`], higher = slower terrain
/// such as forest or swamp: a step onto the cell costs the step cost times the terrain cost) and an
/// additive penalty (influence maps, claimed nodes) in the same fixed-point units as the step costs.
/// Every edit bumps [`NavGrid::version`] so caches and in-flight searches can tell the grid changed,
/// and keeps the island labels ([`NavGrid::island`]) correct.
#[derive(Clone, Debug)]
pub struct NavGrid {
    width: u32,
    height: u32,
    stride: u32,
    rules: MoveRules,
    /// Terrain cost per padded cell; the border ring is [`BLOCKED`].
    terrain: Vec<u8>,
    /// Additive penalty per padded cell.
    penalty: Vec<u32>,
    /// How many cells have a non-zero penalty (searches skip the layer when there are none).
    penalty_cells: usize,
    /// An upper bound of every penalty (exact until penalties are lowered).
    penalty_max: u32,
    /// How many walkable cells have each terrain cost, so the cheapest is known at once.
    terrain_histogram: [u32; 256],
    islands: Islands,
    /// Precomputed jump distances, once [`NavGrid::build_jump_table`] made them; shared
    /// copy-on-write between clones.
    jumps: Option<Arc<JumpTable>>,
    /// Links between cells that are not neighbours ([`NavGrid::add_link`]).
    links: LinkIndex,
    version: u64,
}

impl NavGrid {
    /// An all-walkable grid of [`NORMAL`] terrain with the default move rules.
    pub fn new(width: u32, height: u32) -> Result<Self, GridError> {
        Self::with_rules(width, height, MoveRules::default())
    }

    /// Whether a grid of `width` x `height` cells can exist: both at least 1, and the padded
    /// array, (width + 2) x (height + 2), indexable by `u32`. Check untrusted sizes with this
    /// before allocating anything for them.
    pub fn check_size(width: u32, height: u32) -> Result<(), GridError> {
        let too_big = (width as u64 + 2) * (height as u64 + 2) >= u32::MAX as u64;
        if width == 0 || height == 0 || too_big {
            return Err(GridError::BadSize { width, height });
        }
        Ok(())
    }

    /// An all-walkable grid of [`NORMAL`] terrain with the given move rules.
    pub fn with_rules(width: u32, height: u32, rules: MoveRules) -> Result<Self, GridError> {
        Self::check_size(width, height)?;
        let stride = width + 2;
        let len = (stride * (height + 2)) as usize;
        let mut terrain = vec![BLOCKED; len];
        for y in 0..height {
            let row = ((y + 1) * stride + 1) as usize;
            terrain[row..row + width as usize].fill(NORMAL);
        }
        let mut terrain_histogram = [0; 256];
        terrain_histogram[NORMAL as usize] = width * height;
        let mut grid = NavGrid {
            width,
            height,
            stride,
            rules,
            terrain,
            penalty: vec![0; len],
            penalty_cells: 0,
            penalty_max: 0,
            terrain_histogram,
            islands: Islands::default(),
            jumps: None,
            links: LinkIndex::default(),
            version: 0,
        };
        grid.islands.rebuild(
            &grid.terrain,
            stride as usize,
            rules.topology == Topology::Hex,
        );
        Ok(grid)
    }

    /// A grid from a row-major slice of terrain costs (`width * height` entries, `0` = blocked).
    pub fn from_terrain(
        width: u32,
        height: u32,
        rules: MoveRules,
        terrain: &[u8],
    ) -> Result<Self, GridError> {
        let mut grid = Self::with_rules(width, height, rules)?;
        let expected = width as usize * height as usize;
        if terrain.len() != expected {
            return Err(GridError::BadLength {
                expected,
                got: terrain.len(),
            });
        }
        grid.terrain_histogram = [0; 256];
        for y in 0..height {
            for x in 0..width {
                let t = terrain[(y * width + x) as usize];
                let i = grid.pad(x, y);
                grid.terrain[i] = t;
                if t != BLOCKED {
                    grid.terrain_histogram[t as usize] += 1;
                }
            }
        }
        grid.islands.rebuild(
            &grid.terrain,
            grid.stride as usize,
            rules.topology == Topology::Hex,
        );
        Ok(grid)
    }

    /// Width in cells.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The move rules.
    pub fn rules(&self) -> MoveRules {
        self.rules
    }

    /// Replaces the move rules (islands are relabelled only when the grid changes between
    /// squares and hexagons, see [`NavGrid::island`]).
    pub fn set_rules(&mut self, rules: MoveRules) {
        let hex = rules.topology == Topology::Hex;
        let relabel = hex != (self.rules.topology == Topology::Hex);
        self.rules = rules;
        if relabel {
            self.islands
                .rebuild(&self.terrain, self.stride as usize, hex);
        }
        if !self.jump_table_fits() {
            self.jumps = None;
        }
        let shape = self.link_shape();
        self.links.rebuild(shape, true);
        self.version += 1;
    }

    /// Whether the cells are hexagons ([`Topology::Hex`]).
    #[inline]
    pub fn is_hex(&self) -> bool {
        self.rules.topology == Topology::Hex
    }

    /// The center of `cell` in grid space: `(x + 0.5, y + 0.5)` on square grids, the hexagon's
    /// center on hexagonal ones (see [`Topology`]).
    #[inline]
    pub fn cell_center(&self, cell: Cell) -> Vec2 {
        self.rules.topology.cell_center(cell)
    }

    /// The cell containing the grid-space point `p` (on hexagonal grids, the nearest center).
    #[inline]
    pub fn cell_at(&self, p: Vec2) -> Cell {
        self.rules.topology.cell_at(p)
    }

    /// The size of the grid-space box from the origin that holds every cell: `(width, height)` on
    /// square grids; on hexagonal ones the box of the hexagons' parallelogram.
    pub fn extent(&self) -> Vec2 {
        if self.is_hex() {
            // Each row sits half a cell further right than the one before; rows are sqrt(3)/2
            // apart. The last cell's center plus a cell's reach bounds them all.
            let last = Cell::new(self.width as i32 - 1, self.height as i32 - 1);
            self.cell_center(last) + Vec2::ONE
        } else {
            Vec2::new(self.width as f32, self.height as f32)
        }
    }

    /// The corners of `cell` in grid space, counter-clockwise: four on square grids, six on
    /// hexagonal ones.
    pub fn cell_corners(&self, cell: Cell) -> impl Iterator<Item = Vec2> + Clone + use<> {
        let (corners, n) = if self.is_hex() {
            (super::hex::corners(cell), 6)
        } else {
            let lo = cell.as_vec2();
            let mut k = [lo; 6];
            k[1] = lo + Vec2::X;
            k[2] = lo + Vec2::ONE;
            k[3] = lo + Vec2::Y;
            (k, 4)
        };
        corners.into_iter().take(n)
    }

    /// The steps that connect a cell to its neighbours without any rule: the four straight
    /// ones on square grids (every move rule connects the same cells as they do), the six on
    /// hexagonal ones.
    pub fn connecting_steps(&self) -> &'static [Cell] {
        const SQUARE: [Cell; 4] = [
            Cell::new(1, 0),
            Cell::new(-1, 0),
            Cell::new(0, 1),
            Cell::new(0, -1),
        ];
        if self.is_hex() {
            &super::hex::STEPS
        } else {
            &SQUARE
        }
    }

    /// The number of steps from `a` to `b` on an open grid of this topology: Manhattan distance
    /// for four-way moves, Chebyshev for eight-way, hexagonal distance for hexagons.
    pub fn open_steps(&self, a: Cell, b: Cell) -> u32 {
        let d = (b - a).abs();
        match self.rules.topology {
            Topology::Four => (d.x + d.y) as u32,
            Topology::Eight => d.max_element() as u32,
            Topology::Hex => super::hex::distance(a, b),
        }
    }

    /// The length in grid space of a path of single steps between neighbouring cells: straight
    /// steps 1 and diagonal ones sqrt 2 on square grids, every step 1 on hexagonal ones; a
    /// crossing of a link counts its cost in tiles.
    pub fn cells_length(&self, cells: &[Cell]) -> f64 {
        if self.links.any() {
            let costs = self.rules.costs;
            return cells
                .windows(2)
                .map(|w| {
                    let d = (w[1] - w[0]).abs();
                    match self.crossing_cost(w[0], w[1]) {
                        Some(c) if !self.is_move(w[0], w[1]) => costs.to_tiles(c),
                        _ if d.x == 1 && d.y == 1 && !self.is_hex() => std::f64::consts::SQRT_2,
                        _ => 1.0,
                    }
                })
                .sum();
        }
        if self.is_hex() {
            cells.len().saturating_sub(1) as f64
        } else {
            super::cell::cells_length(cells)
        }
    }

    /// A counter bumped by every edit: compare it with a value you kept to tell the grid changed.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether `cell` lies inside the grid.
    pub fn in_bounds(&self, cell: Cell) -> bool {
        cell.x >= 0 && cell.y >= 0 && (cell.x as u32) < self.width && (cell.y as u32) < self.height
    }

    /// The padded index of `cell`, or an error if it is outside.
    pub fn index(&self, cell: Cell) -> Result<usize, GridError> {
        if self.in_bounds(cell) {
            Ok(self.pad(cell.x as u32, cell.y as u32))
        } else {
            Err(GridError::OutOfBounds {
                cell,
                width: self.width,
                height: self.height,
            })
        }
    }

    #[inline]
    fn pad(&self, x: u32, y: u32) -> usize {
        ((y + 1) * self.stride + x + 1) as usize
    }

    /// The cell of a padded index (the inverse of [`NavGrid::index`]).
    #[inline]
    pub fn cell_of(&self, index: usize) -> Cell {
        let i = index as u32;
        Cell::new((i % self.stride) as i32 - 1, (i / self.stride) as i32 - 1)
    }

    /// The terrain cost of `cell` ([`BLOCKED`] = 0).
    pub fn terrain(&self, cell: Cell) -> Result<u8, GridError> {
        self.index(cell).map(|i| self.terrain[i])
    }

    /// Whether `cell` is inside the grid and walkable. Never fails: outside is not walkable.
    #[inline]
    pub fn is_walkable(&self, cell: Cell) -> bool {
        self.in_bounds(cell) && self.terrain[self.pad(cell.x as u32, cell.y as u32)] != BLOCKED
    }

    /// Whether `cell` and its eight neighbours are all walkable (cells off the grid are not):
    /// one bounds check and three row reads, for line checks through open ground.
    #[inline]
    pub(crate) fn block_walkable(&self, cell: Cell) -> bool {
        if !self.in_bounds(cell) {
            return false;
        }
        let (i, s) = (self.pad(cell.x as u32, cell.y as u32), self.stride as usize);
        // The padding ring makes every neighbour's index valid.
        let open = |row: usize| {
            self.terrain[row - 1..=row + 1]
                .iter()
                .all(|&t| t != BLOCKED)
        };
        open(i - s) && open(i) && open(i + s)
    }

    /// Whether `cell` is a walkable cell of a passage one cell wide: blocked (or off the grid)
    /// on both sides, left and right or above and below, like a bridge or a gate in a wall. Two
    /// bodies cannot pass each other there. Square grids only (`false` on hexagons).
    #[inline]
    pub fn is_one_wide(&self, cell: Cell) -> bool {
        if self.is_hex() || !self.is_walkable(cell) {
            return false;
        }
        // The padding ring (blocked) makes every neighbour's index valid: movement asks this of
        // every unit's cells every frame.
        let (i, s) = (self.pad(cell.x as u32, cell.y as u32), self.stride as usize);
        let blocked = |j: usize| self.terrain[j] == BLOCKED;
        blocked(i - 1) && blocked(i + 1) || blocked(i - s) && blocked(i + s)
    }

    /// The additive penalty of `cell`.
    pub fn penalty(&self, cell: Cell) -> Result<u32, GridError> {
        self.index(cell).map(|i| self.penalty[i])
    }

    /// Sets the terrain cost of `cell` (`0` blocks it) and keeps islands correct.
    pub fn set_terrain(&mut self, cell: Cell, terrain: u8) -> Result<(), GridError> {
        let i = self.index(cell)?;
        let old = self.terrain[i];
        if old == terrain {
            return Ok(());
        }
        let mut terrains_changed = false;
        if old != BLOCKED {
            self.terrain_histogram[old as usize] -= 1;
            terrains_changed |= self.terrain_histogram[old as usize] == 0;
        }
        if terrain != BLOCKED {
            self.terrain_histogram[terrain as usize] += 1;
            terrains_changed |= self.terrain_histogram[terrain as usize] == 1;
        }
        if terrains_changed {
            // The cheapest terrain may have changed, and the links' table costs walks at it.
            self.links.forget_between_ends();
        }
        self.terrain[i] = terrain;
        self.version += 1;
        if let Some(jumps) = self
            .jumps
            .as_mut()
            .filter(|_| (old == BLOCKED) != (terrain == BLOCKED))
        {
            Arc::make_mut(jumps).cell_changed(&self.terrain, self.links.ends(), i);
        }
        match (old == BLOCKED, terrain == BLOCKED) {
            (true, false) => self
                .islands
                .cell_opened(&self.terrain, self.stride as usize, i),
            (false, true) => self
                .islands
                .cell_blocked(&self.terrain, self.stride as usize, i),
            _ => {}
        }
        Ok(())
    }

    /// Blocks or unblocks `cell`; an unblocked cell gets [`NORMAL`] terrain.
    pub fn set_walkable(&mut self, cell: Cell, walkable: bool) -> Result<(), GridError> {
        let current = self.terrain(cell)?;
        match (walkable, current == BLOCKED) {
            (true, true) => self.set_terrain(cell, NORMAL),
            (false, false) => self.set_terrain(cell, BLOCKED),
            _ => Ok(()),
        }
    }

    /// Sets the additive penalty of `cell` (fixed-point step units, see [`CostModel`]).
    pub fn set_penalty(&mut self, cell: Cell, penalty: u32) -> Result<(), GridError> {
        let i = self.index(cell)?;
        if self.penalty[i] != penalty {
            match (self.penalty[i] == 0, penalty == 0) {
                (true, false) => self.penalty_cells += 1,
                (false, true) => self.penalty_cells -= 1,
                _ => {}
            }
            self.penalty[i] = penalty;
            self.penalty_max = self.penalty_max.max(penalty);
            self.version += 1;
        }
        Ok(())
    }

    /// Resets every penalty to zero.
    pub fn clear_penalties(&mut self) {
        self.penalty.fill(0);
        self.penalty_cells = 0;
        self.penalty_max = 0;
        self.version += 1;
    }

    /// An upper bound of the penalties on the grid (0 when there are none).
    pub fn max_penalty(&self) -> u32 {
        self.penalty_max
    }

    /// Whether any cell has a non-zero penalty.
    pub fn has_penalties(&self) -> bool {
        self.penalty_cells > 0
    }

    /// The cheapest terrain cost of any walkable cell (1 on an empty grid); heuristics scale by it
    /// so that they stay admissible when roads are cheaper than plain ground.
    pub fn min_terrain(&self) -> u8 {
        (1..256)
            .find(|&t| self.terrain_histogram[t] > 0)
            .map_or(NORMAL, |t| t as u8)
    }

    /// Whether every walkable cell has the same terrain.
    pub(crate) fn has_uniform_terrain(&self) -> bool {
        (1..256).filter(|&t| self.terrain_histogram[t] > 0).count() <= 1
    }

    /// Whether jump point search runs on this grid when a search asks for it
    /// ([`SearchConfig::jump_points`](super::SearchConfig::jump_points)): eight-way moves
    /// without corner cutting, one terrain, no penalties.
    pub fn jump_points_apply(&self) -> bool {
        self.rules.topology == Topology::Eight
            && self.rules.corner_rule == CornerRule::NoCutting
            && self.has_uniform_terrain()
            && !self.has_penalties()
    }

    /// Precomputes jump distances for jump point search (JPS+), so a search reads where each
    /// jump ends instead of scanning cell by cell: on the MovingAI maps that makes the exact
    /// search several times faster again (see BENCHMARKS). The table costs 16 bytes per cell
    /// (4 MB on 512 x 512), depends only on which cells are blocked (terrain costs may change
    /// under it), and is kept up to date by every edit, locally (the rows and columns through
    /// the cell, and the diagonal entries that read them).
    ///
    /// Does nothing on grids jump point search never runs on (not eight-way without corner
    /// cutting; see [`NavGrid::jump_points_apply`]) or with a side longer than 32,765 cells.
    /// The plugin builds it for its maps' grids where jump points apply.
    pub fn build_jump_table(&mut self) {
        if self.jumps.is_none() && self.jump_table_fits() {
            self.jumps = Some(Arc::new(JumpTable::build(
                &self.terrain,
                self.links.ends(),
                self.stride as usize,
            )));
        }
    }

    /// Makes now what the first search after a change to the links makes otherwise: the least
    /// costs between every two ends of the open links (a link end to end, crossings included),
    /// which searches' estimates read. It takes 0.3 ms for 100 ends and 3-5 ms for 256 (grids
    /// with more get none: their searches use a weaker estimate); call it after placing or
    /// opening and closing links, at a level's load say, so that no search waits for it. Kept
    /// until the links or the cheapest terrain change; nothing without links.
    ///
    /// ```
    /// use bevy_tilepath::core::{Cell, Link, NavGrid, SearchConfig, find_path};
    ///
    /// let mut grid = NavGrid::new(32, 32).unwrap();
    /// grid.add_link(Link::two_way(Cell::new(1, 1), Cell::new(30, 30), 1.0)).unwrap();
    /// // At the level's load: the first search will not wait for it.
    /// grid.build_link_table();
    /// let path = find_path(&grid, Cell::new(0, 0), Cell::new(31, 31), &SearchConfig::default());
    /// assert!(path.unwrap().length < 5.0);
    /// ```
    pub fn build_link_table(&self) {
        let _ = self.link_table();
    }

    /// Whether [`NavGrid::build_link_table`] has nothing to make: the grid has no links, or its
    /// table is made (or none fits).
    pub(crate) fn has_link_table(&self) -> bool {
        !self.links.any() || self.links.between_ends_made()
    }

    /// The table of [`NavGrid::build_link_table`], made if need be; `None` where the grid has
    /// none (no links, too many ends, walks too long).
    pub(crate) fn link_table(&self) -> Option<&[u32]> {
        if !self.links.any() {
            return None;
        }
        self.links
            .least_between_ends(self.min_terrain() as u64, self.link_shape())
    }

    /// The jump table of [`NavGrid::build_jump_table`] built apart from the grid (on another
    /// thread, from a copy of it), to be given to it with [`NavGrid::install_jump_table`];
    /// `None` where a table does not fit the grid.
    pub(crate) fn build_jump_table_apart(&self) -> Option<BuiltJumpTable> {
        self.jump_table_fits().then(|| BuiltJumpTable {
            table: JumpTable::build(&self.terrain, self.links.ends(), self.stride as usize),
            terrain: self.terrain.clone(),
            stops: self.links.ends().to_vec(),
        })
    }

    /// Gives the grid a table [`NavGrid::build_jump_table_apart`] built from an earlier state
    /// of it, brought up to date with the cells blocked or opened since, as an edit would.
    /// Returns whether it took it (not if the grid changed its size or no longer fits a table).
    pub(crate) fn install_jump_table(&mut self, built: BuiltJumpTable) -> bool {
        if !self.jump_table_fits() || built.terrain.len() != self.terrain.len() {
            return false;
        }
        let mut table = built.table;
        let stops = self.links.ends();
        let stop = |bits: &[u64], i: usize| super::jump_table::is_stop(bits, i);
        for (i, (&then, &now)) in built.terrain.iter().zip(&self.terrain).enumerate() {
            if (then == BLOCKED) != (now == BLOCKED) || stop(&built.stops, i) != stop(stops, i) {
                table.cell_changed(&self.terrain, stops, i);
            }
        }
        self.jumps = Some(Arc::new(table));
        true
    }

    /// Frees the table of [`NavGrid::build_jump_table`] (searches scan again).
    pub fn drop_jump_table(&mut self) {
        self.jumps = None;
    }

    /// Whether the grid has a jump table ([`NavGrid::build_jump_table`]).
    pub fn has_jump_table(&self) -> bool {
        self.jumps.is_some()
    }

    /// Bytes held by the jump table (0 without one).
    pub fn jump_table_bytes(&self) -> usize {
        self.jumps.as_ref().map_or(0, |t| t.memory_bytes())
    }

    /// Whether a jump table can serve this grid's searches: eight-way moves without corner
    /// cutting, sides that fit its distances.
    fn jump_table_fits(&self) -> bool {
        self.rules.topology == Topology::Eight
            && self.rules.corner_rule == CornerRule::NoCutting
            && self.width.max(self.height) <= super::jump_table::MAX_SIDE
    }

    /// The jump table, if built.
    pub(crate) fn jump_table(&self) -> Option<&JumpTable> {
        self.jumps.as_deref()
    }

    /// Adds a link between two cells ([`Link`]): searches may cross it from the next search
    /// on (the version is bumped). Its ends may be blocked now; it is crossed once they are
    /// walkable. Each change to links rebuilds the grid's link index (a sweep of the grid:
    /// about a millisecond on 512 x 512), so add a map's links when it is built, not every frame;
    /// [`NavGrid::set_link_open`] is cheaper.
    pub fn add_link(&mut self, link: Link) -> Result<LinkId, LinkError> {
        LinkIndex::check(&link, self.width, self.height)?;
        let shape = self.link_shape();
        let id = self.links.add(link, shape);
        self.link_ends_changed(&link);
        self.version += 1;
        Ok(id)
    }

    /// Removes a link; the link it was.
    pub fn remove_link(&mut self, id: LinkId) -> Result<Link, LinkError> {
        let shape = self.link_shape();
        let link = self.links.remove(id, shape)?;
        self.link_ends_changed(&link);
        self.version += 1;
        Ok(link)
    }

    /// Keeps the jump table, whose jumps stop at links' ends, up to date after `link` came or
    /// went.
    fn link_ends_changed(&mut self, link: &Link) {
        let ends = [link.from, link.to].map(|c| self.pad(c.x as u32, c.y as u32));
        if let Some(jumps) = self.jumps.as_mut() {
            for i in ends {
                Arc::make_mut(jumps).cell_changed(&self.terrain, self.links.ends(), i);
            }
        }
    }

    /// Opens or closes a link (a door); the version is bumped only if that changed it.
    pub fn set_link_open(&mut self, id: LinkId, open: bool) -> Result<(), LinkError> {
        let shape = self.link_shape();
        if self.links.set_open(id, open, shape)? {
            self.version += 1;
        }
        Ok(())
    }

    /// Gives the grid's searches `keys` to hold: links that need other keys ([`Link::keys`])
    /// are not crossed, as closed ones are not. A grid holds no keys at first (only links
    /// without keys are crossed). The version is bumped only if that changed a crossing.
    pub fn set_held_keys(&mut self, keys: LinkKeys) {
        let shape = self.link_shape();
        if self.links.set_held(keys, shape) {
            self.version += 1;
        }
    }

    /// The keys the grid's searches hold ([`NavGrid::set_held_keys`]).
    pub fn held_keys(&self) -> LinkKeys {
        self.links.held()
    }

    /// Every link handle's link so far (`None` for a removed one), in handle order: what
    /// [`NavGrid::restore_links`] takes.
    pub fn link_slots(&self) -> &[Option<Link>] {
        self.links.slots()
    }

    /// Replaces the grid's links with `slots` ([`NavGrid::link_slots`] of a saved grid), each
    /// handle giving the same link again. An error, changing nothing, for a link that does not
    /// fit the grid.
    pub fn restore_links(&mut self, slots: Vec<Option<Link>>) -> Result<(), LinkError> {
        let shape = self.link_shape();
        let before = self.links.clone();
        self.links
            .restore(slots, (self.width, self.height), shape)?;
        // The jump table's stops are the links' ends.
        let ends: Vec<usize> = before
            .slots()
            .iter()
            .chain(self.links.slots())
            .flatten()
            .flat_map(|l| [l.from, l.to])
            .map(|c| self.pad(c.x as u32, c.y as u32))
            .collect();
        if let Some(jumps) = self.jumps.as_mut() {
            for i in ends {
                Arc::make_mut(jumps).cell_changed(&self.terrain, self.links.ends(), i);
            }
        }
        self.version += 1;
        Ok(())
    }

    /// The link with this handle, if it is on the grid.
    pub fn link(&self, id: LinkId) -> Option<&Link> {
        self.links.get(id)
    }

    /// Every link on the grid with its handle, in the order they were added.
    pub fn links(&self) -> impl Iterator<Item = (LinkId, &Link)> + '_ {
        self.links.iter()
    }

    /// Whether the grid has links (open or closed).
    pub fn has_links(&self) -> bool {
        self.links.any()
    }

    /// The cost of the cheapest open link crossing from `from` to `to` (both walkable), if any.
    pub fn crossing_cost(&self, from: Cell, to: Cell) -> Option<u64> {
        self.crossing(from, to).map(|(_, cost)| cost)
    }

    /// The cheapest open link crossing from `from` to `to` (both walkable; the first added
    /// among equals), if any: the link and its fixed-point cost.
    pub fn crossing(&self, from: Cell, to: Cell) -> Option<(LinkId, u64)> {
        if !self.links.any() || !self.is_walkable(from) || !self.is_walkable(to) {
            return None;
        }
        let (a, b) = (
            self.pad(from.x as u32, from.y as u32),
            self.pad(to.x as u32, to.y as u32),
        );
        self.links.crossing(a, b)
    }

    /// A lower bound of the cost (fixed point, as [`Path::cost`](super::Path::cost)) of any
    /// path from `from` to `to` on this grid, links included: what the search's estimate
    /// would say (the open-grid distance at the cheapest terrain, lowered to what a path
    /// through a link could cost). Both cells in bounds.
    pub fn cost_bound(&self, from: Cell, to: Cell) -> u64 {
        self.cost_bound_to(to)(from)
    }

    /// [`NavGrid::cost_bound`] to `to`, from any cell in bounds (what depends on `to` alone is
    /// worked out once).
    pub(crate) fn cost_bound_to(&self, to: Cell) -> impl Fn(Cell) -> u64 + '_ {
        use super::heuristic::{Heuristic, WEIGHT_ONE};
        let min_terrain = u64::from(self.min_terrain().max(1));
        let (costs, hex) = (self.rules.costs, self.is_hex());
        let h = move |a: Cell| {
            let (dx, dy) = if hex {
                (super::hex::distance(a, to), 0)
            } else {
                ((to.x - a.x).unsigned_abs(), (to.y - a.y).unsigned_abs())
            };
            Heuristic::Octile.estimate(dx, dy, costs, min_terrain, WEIGHT_ONE)
        };
        // A path through links walks to some link's end first and leaves its last crossing's
        // exit for `to` over cells.
        let exit = if self.links.any() {
            self.links.exit_bound(false, |i| h(self.cell_of(i)))
        } else {
            u64::MAX
        };
        move |from: Cell| {
            let i = self.pad(from.x as u32, from.y as u32);
            self.links.lowered(h(from), i, min_terrain, exit)
        }
    }

    /// Whether the path's step from `from` to `to` is a link's crossing rather than a move to a
    /// neighbour: the move rules do not allow it as a step, and an open link joins them.
    pub fn is_crossing(&self, from: Cell, to: Cell) -> bool {
        self.links.any() && !self.is_move(from, to) && self.crossing(from, to).is_some()
    }

    /// Gives this grid `other`'s links, with the same handles (a class grid of a map follows the
    /// shared grid's links). The grids must have the same size and move rules.
    pub(crate) fn copy_links_from(&mut self, other: &NavGrid) {
        let held = self.links.held();
        let before = std::mem::replace(&mut self.links, other.links.clone());
        let shape = self.link_shape();
        self.links.set_held(held, shape);
        if let Some(jumps) = self.jumps.as_mut() {
            let stop = super::jump_table::is_stop;
            let (old, new) = (before.ends(), self.links.ends());
            for i in 0..self.terrain.len() {
                if stop(old, i) != stop(new, i) {
                    Arc::make_mut(jumps).cell_changed(&self.terrain, new, i);
                }
            }
        }
        self.version += 1;
    }

    /// The link index (internal, for searches).
    #[inline]
    pub(crate) fn links_raw(&self) -> &LinkIndex {
        &self.links
    }

    fn link_shape(&self) -> Shape {
        Shape {
            stride: self.stride as usize,
            len: self.terrain.len(),
            back_moves: match self.rules.topology {
                Topology::Four => &[(1, 0, false), (0, 1, false)],
                Topology::Eight => &[(1, 0, false), (0, 1, false), (1, 1, true), (-1, 1, true)],
                // Axial (-1, 0), (0, -1) and (1, -1).
                Topology::Hex => &[(1, 0, false), (0, 1, false), (-1, 1, false)],
            },
            costs: self.rules.costs,
            open_steps: match self.rules.topology {
                Topology::Four => Some(false),
                Topology::Eight => Some(true),
                Topology::Hex => None,
            },
        }
    }

    /// The island (connected component) of `cell`, or `None` if it is blocked or outside.
    ///
    /// Every square move rule connects the same cells as four-way moves do (a diagonal step
    /// always needs a free orthogonal neighbour, which is itself a path), so islands hold for all
    /// of them; hexagonal grids connect their six neighbours.
    pub fn island(&self, cell: Cell) -> Option<u32> {
        let i = self.index(cell).ok()?;
        self.islands.label(i)
    }

    /// Whether paths lead from `a` to `b` and from `b` to `a` (both walkable, on the same island
    /// or on islands that open links join both ways). See [`NavGrid::reaches`] for one way.
    pub fn connected(&self, a: Cell, b: Cell) -> bool {
        self.reaches(a, b) && self.reaches(b, a)
    }

    /// Whether a path leads from `from` to `to`: both walkable, and on the same island or on
    /// islands that open links lead between (a one-way link makes this hold one way only).
    /// Known without searching, though overlays and classes may still block the way.
    pub fn reaches(&self, from: Cell, to: Cell) -> bool {
        match (self.island(from), self.island(to)) {
            (Some(a), Some(b)) => a == b || self.island_reach(a, false).contains(&b),
            _ => false,
        }
    }

    /// Whether cells on island `a` are on the same island as those of `b`, without links.
    pub(crate) fn same_island(&self, a: Cell, b: Cell) -> bool {
        matches!((self.island(a), self.island(b)), (Some(x), Some(y)) if x == y)
    }

    /// The islands reachable from `island` over open links (itself included), sorted;
    /// `backward`: those it is reachable from.
    pub(crate) fn island_reach(&self, island: u32, backward: bool) -> Vec<u32> {
        self.links
            .reach(island, backward, |i| self.islands.label(i))
    }

    /// The number of distinct islands.
    pub fn island_count(&self) -> usize {
        self.islands.count()
    }

    /// The padded row length (internal layout, for searches).
    #[inline]
    pub(crate) fn stride(&self) -> usize {
        self.stride as usize
    }

    /// The padded terrain array (internal layout, for searches).
    #[inline]
    pub(crate) fn terrain_raw(&self) -> &[u8] {
        &self.terrain
    }

    /// The padded penalty array (internal layout, for searches).
    #[inline]
    pub(crate) fn penalty_raw(&self) -> &[u32] {
        &self.penalty
    }

    /// The island label of a padded index (internal, for searches).
    #[inline]
    pub(crate) fn island_raw(&self, index: usize) -> Option<u32> {
        self.islands.label(index)
    }

    /// Iterates over all cells, row by row.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        (0..self.height as i32)
            .flat_map(move |y| (0..self.width as i32).map(move |x| Cell::new(x, y)))
    }

    /// `from`, then the walkable cells reachable from it in connecting steps
    /// ([`NavGrid::connecting_steps`]), nearest (in steps) first, out to `max_steps` steps.
    /// Picking free cells near a point (spreading a group's goals, stepping aside) walks this
    /// until a cell suits.
    pub fn cells_outward(&self, from: Cell, max_steps: u32) -> impl Iterator<Item = Cell> + '_ {
        self.cells_outward_through(from, max_steps, |_| true)
    }

    /// [`NavGrid::cells_outward`], reaching only cells that `through` lets a unit onto (a unit
    /// in a crowd reaches no cell beyond a ring of units standing round it).
    pub fn cells_outward_through<'a>(
        &'a self,
        from: Cell,
        max_steps: u32,
        through: impl Fn(Cell) -> bool + 'a,
    ) -> impl Iterator<Item = Cell> + 'a {
        let mut seen = bevy::platform::collections::HashSet::from([from]);
        let mut queue = std::collections::VecDeque::from([(from, 0u32)]);
        let steps = self.connecting_steps();
        std::iter::from_fn(move || {
            let (c, d) = queue.pop_front()?;
            if d < max_steps {
                for &n in steps {
                    let nc = c + n;
                    if self.is_walkable(nc) && through(nc) && seen.insert(nc) {
                        queue.push_back((nc, d + 1));
                    }
                }
            }
            Some(c)
        })
    }

    /// Whether every step of `cells` (a path, cell by cell) is allowed by the move rules now: a
    /// path found on an earlier version of the grid that an edit did not break.
    pub(crate) fn steps_allowed(&self, cells: &[Cell]) -> bool {
        cells.windows(2).all(|w| self.can_step(w[0], w[1]))
    }

    /// Whether a single step from `from` to the neighbouring cell `to` is allowed by the move
    /// rules, or `from` to `to` is a crossing of an open link between walkable cells.
    pub fn can_step(&self, from: Cell, to: Cell) -> bool {
        self.is_move(from, to) || self.crossing_cost(from, to).is_some()
    }

    /// Whether the move rules allow a single step from `from` to the neighbouring cell `to`
    /// (links aside).
    pub(crate) fn is_move(&self, from: Cell, to: Cell) -> bool {
        let d = to - from;
        if d.x.abs() > 1 || d.y.abs() > 1 || d == Cell::ZERO {
            return false;
        }
        if !self.is_walkable(from) || !self.is_walkable(to) {
            return false;
        }
        if d.x == 0 || d.y == 0 {
            return true;
        }
        match self.rules.topology {
            Topology::Four => return false,
            // Axial (1, -1) and (-1, 1) are neighbours; (1, 1) and (-1, -1) are not.
            Topology::Hex => return d.x != d.y,
            Topology::Eight => {}
        }
        let a = self.is_walkable(Cell::new(to.x, from.y));
        let b = self.is_walkable(Cell::new(from.x, to.y));
        match self.rules.corner_rule {
            CornerRule::NoCutting => a && b,
            CornerRule::AllowCutting => a || b,
        }
    }

    /// The fixed-point cost of stepping from `from` onto its neighbour `to` (terrain times step
    /// cost plus the penalty of `to`), or crossing a link from `from` to `to` (the link's cost
    /// plus the penalty of `to`), whichever is cheaper; `None` if neither is allowed.
    pub fn step_cost(&self, from: Cell, to: Cell) -> Option<u64> {
        if !self.can_step(from, to) {
            return None;
        }
        let i = self.pad(to.x as u32, to.y as u32);
        let crossing = self
            .crossing_cost(from, to)
            .map(|c| c + self.penalty[i] as u64);
        if !self.is_move(from, to) {
            return crossing;
        }
        let diagonal = from.x != to.x && from.y != to.y && !self.is_hex();
        let base = if diagonal {
            self.rules.costs.diagonal
        } else {
            self.rules.costs.straight
        };
        let step = base as u64 * self.terrain[i] as u64 + self.penalty[i] as u64;
        Some(crossing.map_or(step, |c| c.min(step)))
    }
}
