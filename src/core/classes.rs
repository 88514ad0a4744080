//! Unit classes on one grid: what each terrain kind costs a class of units, how much room its
//! bodies need, and the grid a class plans on, derived from the shared one and kept up to date
//! cell by cell.
//!
//! The shared [`NavGrid`] stores a terrain *kind* per cell (`0` is a wall for everyone). Under
//! the default class a kind is its own cost, which is all the grid meant before classes: kind `1`
//! is plain ground, kind `3` costs three steps. A [`TerrainCosts`] table gives a class other
//! costs (vehicles: forest blocked, road cheap; amphibious units: water walkable).
//!
//! A unit wider than a tile needs room: its [`MoveClass::footprint`] is how many rings of cells
//! around the cell it stands on must be free for its body, and its class grid blocks every cell
//! without that much *clearance* (the number of free rings around a cell, counted in the class's
//! own walkability; Harabor and Botea's "true clearance", centred on the cell because units walk
//! cell centres). Every search, island label, line check and movement step of the class runs on
//! its derived grid, unchanged: a wide unit on its class grid is a point (or a small body, see
//! [`MoveClass::wall_radius`]) in configuration space.

use bevy::math::IVec2;
use bevy::reflect::{Reflect, std_traits::ReflectDefault};
#[cfg(feature = "serialize")]
use bevy::reflect::{ReflectDeserialize, ReflectSerialize};

use super::cell::{BLOCKED, Cell, cells_around};
use super::grid::{GridError, NavGrid};
use super::links::LinkKeys;

/// The highest clearance stored: footprints of up to `MAX_CLEARANCE - 1` rings (7 x 7 cells) are
/// supported. An edit recomputes clearance within `MAX_CLEARANCE - 1` cells of it only.
pub const MAX_CLEARANCE: u8 = 4;

/// What each terrain kind costs a class of units: `0` blocks the kind, `1` is a plain step, `n`
/// costs `n` steps (the grid's [`CostModel`](super::CostModel) units). Kind `0` is a wall for
/// every class (the grid's border is made of it), so its cost cannot be changed.
///
/// Reflected as an opaque value; with the `serialize` feature it is saved as the kinds whose
/// cost differs from their own value, `[(kind, cost), ...]` (kind `0` is never changed).
#[derive(Clone, PartialEq, Eq, Hash, Reflect)]
#[reflect(opaque, Clone, Debug, PartialEq, Hash, Default)]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct TerrainCosts([u8; 256]);

#[cfg(feature = "serialize")]
impl serde::Serialize for TerrainCosts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let changed: Vec<(u8, u8)> = (0..=255u8)
            .filter(|&k| self.cost(k) != k)
            .map(|k| (k, self.cost(k)))
            .collect();
        changed.serialize(serializer)
    }
}

#[cfg(feature = "serialize")]
impl<'de> serde::Deserialize<'de> for TerrainCosts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let changed = Vec::<(u8, u8)>::deserialize(deserializer)?;
        Ok(changed
            .into_iter()
            .fold(TerrainCosts::identity(), |c, (kind, cost)| {
                c.with_cost(kind, cost)
            }))
    }
}

impl TerrainCosts {
    /// Every kind costs its own value: the grid's terrain read as costs, as without classes.
    pub fn identity() -> Self {
        let mut table = [0u8; 256];
        for (kind, cost) in table.iter_mut().enumerate() {
            *cost = kind as u8;
        }
        TerrainCosts(table)
    }

    /// With `kind` costing `cost` (`0` blocks it). Kind `0` stays blocked whatever `cost` is.
    pub fn with_cost(mut self, kind: u8, cost: u8) -> Self {
        if kind != BLOCKED {
            self.0[kind as usize] = cost;
        }
        self
    }

    /// With `kind` blocked.
    pub fn blocking(self, kind: u8) -> Self {
        self.with_cost(kind, BLOCKED)
    }

    /// The cost of `kind` (`0`: blocked).
    #[inline]
    pub fn cost(&self, kind: u8) -> u8 {
        self.0[kind as usize]
    }

    /// Whether every kind costs its own value ([`TerrainCosts::identity`]).
    pub fn is_identity(&self) -> bool {
        *self == Self::identity()
    }
}

impl Default for TerrainCosts {
    fn default() -> Self {
        Self::identity()
    }
}

impl std::fmt::Debug for TerrainCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Only the kinds that differ from the identity.
        let changed: Vec<(u8, u8)> = (0..=255u8)
            .filter(|&k| self.cost(k) != k)
            .map(|k| (k, self.cost(k)))
            .collect();
        f.debug_tuple("TerrainCosts").field(&changed).finish()
    }
}

/// A class of units: its terrain costs and the room its bodies need.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MoveClass {
    /// The cost of each terrain kind.
    pub costs: TerrainCosts,
    /// Rings of free cells a unit needs around the cell it stands on: `0` for a body within one
    /// tile, `1` for one up to three tiles across (3 x 3 cells), up to `MAX_CLEARANCE - 1`.
    /// [`MoveClass::footprint_for_radius`] gives the smallest that fits a round body.
    pub footprint: u8,
    /// The keys its units hold: links that need others ([`Link::keys`](super::Link::keys)) are
    /// closed to it.
    pub keys: LinkKeys,
}

impl MoveClass {
    /// A class with these costs and footprint.
    pub fn new(costs: TerrainCosts, footprint: u8) -> Self {
        MoveClass {
            costs,
            footprint,
            keys: LinkKeys::NONE,
        }
    }

    /// The same class, its units holding `keys`.
    pub fn with_keys(self, keys: LinkKeys) -> Self {
        MoveClass { keys, ..self }
    }

    /// Whether this is the default class: every kind its own cost, bodies within a tile, no
    /// keys. Its grid is the shared grid itself.
    pub fn is_default(&self) -> bool {
        self.footprint == 0 && self.costs.is_identity() && self.keys.is_empty()
    }

    /// The smallest footprint for a round body of `radius` tiles standing on cell centres: the
    /// rings of cells the body reaches into (`0` up to half a tile).
    pub fn footprint_for_radius(radius: f32) -> u8 {
        let rings = (radius - 0.5).max(0.0).ceil();
        if rings.is_finite() {
            rings.min(255.0) as u8
        } else {
            0
        }
    }

    /// The radius to check a body of `radius` tiles with against this class's grid: walls there
    /// are grown by the footprint, so the body shrinks by as much. A body clear of the class
    /// grid's blocked cells with this radius is clear of the real walls with its own.
    ///
    /// Shrunk, it never goes below [`MIN_WALL_RADIUS`]: a point may touch a blocked cell, and a
    /// point on the edge between two blocked cells touches both without entering either, while
    /// the real body would reach into the walls beyond.
    pub fn wall_radius(&self, radius: f32) -> f32 {
        shrunk(radius, self.footprint)
    }
}

/// The smallest radius a wide body is checked with against its class grid (see
/// [`MoveClass::wall_radius`]).
pub const MIN_WALL_RADIUS: f32 = 0.05;

/// The radius a body of `radius` tiles is checked with against the walls of `grid`, its class's
/// grid with `footprint` rings ([`MoveClass::wall_radius`]).
///
/// On hexagons a gap one cell wide is narrower than a tile: its two wall corners are
/// [`HEX_GAP_CLEARANCE`] from the line through it. A body up to [`HEX_CORNER_GRAZE`] wider than
/// that is checked as that clearance, so it walks through such a gap grazing the two corners
/// (a default unit, radius 0.3, by 0.011 tiles) instead of finding its way blocked there.
pub(crate) fn wall_radius(grid: &NavGrid, radius: f32, footprint: u8) -> f32 {
    let grazes = radius > HEX_GAP_CLEARANCE && radius <= HEX_GAP_CLEARANCE + HEX_CORNER_GRAZE;
    if footprint == 0 && grid.is_hex() && grazes {
        HEX_GAP_CLEARANCE
    } else {
        shrunk(radius, footprint)
    }
}

/// A body of `radius` shrunk by `footprint` rings, never below [`MIN_WALL_RADIUS`].
fn shrunk(radius: f32, footprint: u8) -> f32 {
    if footprint == 0 {
        radius
    } else {
        (radius - footprint as f32).max(MIN_WALL_RADIUS)
    }
}

/// Half the width of a gap one hexagon wide between two blocked hexagons (just under half a
/// hexagon's edge, in tiles: neighbouring centres are one apart): the largest body that passes
/// it without touching a wall.
pub const HEX_GAP_CLEARANCE: f32 = 0.288;

/// How much wider than [`HEX_GAP_CLEARANCE`] a body may be and still be let through a gap one
/// hexagon wide, grazing its corners: movement and smoothing check such a body against the walls
/// of a hexagonal grid with [`HEX_GAP_CLEARANCE`]. Wider bodies are checked with their own
/// radius.
pub const HEX_CORNER_GRAZE: f32 = 0.035;

/// Why a class grid could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassError {
    /// The footprint is `MAX_CLEARANCE` rings or more.
    FootprintTooLarge {
        /// The footprint asked for.
        footprint: u8,
    },
    /// Footprints wider than a cell are for square grids; hexagonal grids take classes of
    /// footprint `0` (costs only).
    FootprintOnHexagons,
    /// A player's knowledge of a grid of another size.
    KnowledgeOfAnotherSize,
}

impl std::fmt::Display for ClassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassError::FootprintTooLarge { footprint } => write!(
                f,
                "a footprint of {footprint} rings is too large (at most {})",
                MAX_CLEARANCE - 1
            ),
            ClassError::FootprintOnHexagons => {
                write!(f, "footprints wider than a cell need a square grid")
            }
            ClassError::KnowledgeOfAnotherSize => {
                write!(f, "the knowledge is of a grid of another size")
            }
        }
    }
}

impl std::error::Error for ClassError {}

/// A class's own grid, derived from a shared one: each cell costs what its kind costs the class,
/// and cells without room for the class's footprint are blocked. Islands, versions and searches
/// are the derived grid's own. Call [`ClassGrid::update`] with the cells edited on the shared
/// grid; it recomputes only the cells near them.
///
/// A class grid can also plan with one player's [`Knowledge`] (fog of war): cells the player
/// has not seen have the kind it assumes, whatever the shared grid says, until
/// [`ClassGrid::reveal`] shows them.
#[derive(Clone, Debug)]
pub struct ClassGrid {
    class: MoveClass,
    /// What the player it plans for knows (`None`: everything).
    known: Option<Knowledge>,
    /// Clearance per cell, row-major (empty for footprint 0, which needs none).
    clearance: Vec<u8>,
    grid: NavGrid,
}

/// The terrain kinds a class grid is derived from: the shared grid's, or as a player knows them.
#[derive(Clone, Copy)]
struct Kinds<'a> {
    base: &'a NavGrid,
    known: Option<&'a Knowledge>,
}

impl Kinds<'_> {
    /// The kind of `c` (`None` outside the grid).
    #[inline]
    fn at(&self, c: Cell) -> Option<u8> {
        let kind = self.base.terrain(c).ok()?;
        Some(match self.known {
            Some(k) if !k.is_seen(c) => k.assumed(),
            _ => kind,
        })
    }
}

impl ClassGrid {
    /// The grid of `class` over `base`.
    pub fn new(base: &NavGrid, class: MoveClass) -> Result<Self, ClassError> {
        Self::build(base, class, None)
    }

    /// The grid of `class` over `base` as a player who knows `known` of it sees it: the cells it
    /// has not seen have the kind it assumes. `known` must be of `base`'s size (a fresh
    /// [`Knowledge::new`] of it).
    pub fn with_knowledge(
        base: &NavGrid,
        class: MoveClass,
        known: Knowledge,
    ) -> Result<Self, ClassError> {
        Self::build(base, class, Some(known))
    }

    fn build(
        base: &NavGrid,
        class: MoveClass,
        known: Option<Knowledge>,
    ) -> Result<Self, ClassError> {
        if class.footprint >= MAX_CLEARANCE {
            return Err(ClassError::FootprintTooLarge {
                footprint: class.footprint,
            });
        }
        if class.footprint > 0 && base.is_hex() {
            return Err(ClassError::FootprintOnHexagons);
        }
        if let Some(k) = &known
            && (k.width, k.height) != (base.width(), base.height())
        {
            return Err(ClassError::KnowledgeOfAnotherSize);
        }
        let kinds = Kinds {
            base,
            known: known.as_ref(),
        };
        let clearance = if class.footprint > 0 {
            clearance_map(kinds, &class.costs)
        } else {
            Vec::new()
        };
        let terrain: Vec<u8> = base
            .cells()
            .map(|c| derived_kind(kinds, &class, &clearance, c))
            .collect();
        // The grid's rules and penalties, with the class's terrain (and fresh islands).
        let (w, h) = (base.width(), base.height());
        let mut grid = NavGrid::from_terrain(w, h, base.rules(), &terrain)
            .expect("same size as a grid that exists");
        if base.has_penalties() {
            for c in base.cells() {
                let p = base.penalty(c).expect("in bounds");
                if p > 0 {
                    grid.set_penalty(c, p).expect("in bounds");
                }
            }
        }
        if base.has_links() {
            grid.copy_links_from(base);
        }
        grid.set_held_keys(class.keys);
        Ok(ClassGrid {
            class,
            known,
            clearance,
            grid,
        })
    }

    /// The class.
    pub fn class(&self) -> &MoveClass {
        &self.class
    }

    /// The class's grid: search it, label its islands, check lines on it.
    pub fn grid(&self) -> &NavGrid {
        &self.grid
    }

    /// Builds the class grid's jump table ([`NavGrid::build_jump_table`]); edits through
    /// [`ClassGrid::update`] keep it up to date.
    pub fn build_jump_table(&mut self) {
        self.grid.build_jump_table();
    }

    /// Gives the class grid a jump table built apart from it
    /// ([`NavGrid::install_jump_table`]); whether it took it.
    pub(crate) fn install_jump_table(&mut self, built: super::grid::BuiltJumpTable) -> bool {
        self.grid.install_jump_table(built)
    }

    /// Gives the class grid the shared grid's links, with the same handles (after a change to
    /// `base`'s links).
    pub fn follow_links(&mut self, base: &NavGrid) {
        self.grid.copy_links_from(base);
    }

    /// Frees the class grid's jump table ([`NavGrid::drop_jump_table`]).
    pub fn drop_jump_table(&mut self) {
        self.grid.drop_jump_table();
    }

    /// What the player this grid plans for knows (`None`: the grid plans with the truth).
    pub fn knowledge(&self) -> Option<&Knowledge> {
        self.known.as_ref()
    }

    /// The clearance of `cell` in the class's walkability (as the grid's player knows it),
    /// capped at [`MAX_CLEARANCE`]: `0` on a cell the class cannot enter, `k` when the `k - 1`
    /// rings of cells around it are free too (cells past the grid's edge count as blocked). For
    /// footprint `0` classes it is `0` or `1`.
    pub fn clearance(&self, base: &NavGrid, cell: Cell) -> Result<u8, GridError> {
        base.index(cell)?;
        if self.clearance.is_empty() {
            let kind = self.kinds(base).at(cell).expect("in bounds");
            return Ok((self.class.costs.cost(kind) != BLOCKED) as u8);
        }
        Ok(self.clearance[(cell.y as u32 * base.width() + cell.x as u32) as usize])
    }

    fn kinds<'a>(&'a self, base: &'a NavGrid) -> Kinds<'a> {
        Kinds {
            base,
            known: self.known.as_ref(),
        }
    }

    /// Brings the class grid up to date after `changed` cells of `base` were edited (terrain or
    /// penalty): recomputes clearance and the class's cells within `MAX_CLEARANCE - 1` of each.
    /// `base` must be the grid this one was made from (same size and rules). Returns the cells
    /// of the class grid whose terrain changed (an edit the player has not seen changes none).
    pub fn update(&mut self, base: &NavGrid, changed: &[Cell]) -> Vec<Cell> {
        let mut out = Vec::new();
        for &e in changed {
            if !base.in_bounds(e) {
                continue;
            }
            self.recompute_around(base, e, &mut |cell, _, _| out.push(cell));
            let p = base.penalty(e).expect("in bounds");
            self.grid.set_penalty(e, p).expect("in bounds");
        }
        out
    }

    /// The player this grid plans for sees `cells` (those outside the grid are ignored): their
    /// true kinds replace the assumption. Returns the cells of the class grid that turned out
    /// worse than assumed, with their terrain now: [`BLOCKED`], or dearer than assumed (a unit
    /// planned across one plans again; a path across cells that turned out cheaper is still
    /// good). Without knowledge it does nothing.
    pub fn reveal(&mut self, base: &NavGrid, cells: &[Cell]) -> Vec<(Cell, u8)> {
        let mut out = Vec::new();
        let Some(known) = &mut self.known else {
            return out;
        };
        let mut contradicted = Vec::new();
        for &c in cells {
            if base.in_bounds(c) && known.reveal(c) && base.terrain(c) != Ok(known.assumed()) {
                contradicted.push(c);
            }
        }
        for c in contradicted {
            self.recompute_around(base, c, &mut |cell, old, new| {
                let worse = new == BLOCKED || old != BLOCKED && new > old;
                if worse {
                    out.push((cell, new));
                }
            });
        }
        out
    }

    /// Recomputes clearance and terrain of the class grid around `e` (within `MAX_CLEARANCE - 1`
    /// with a footprint, at `e` alone without), telling `changed` each cell whose terrain changed,
    /// with its old and new terrain.
    fn recompute_around(
        &mut self,
        base: &NavGrid,
        e: Cell,
        changed: &mut impl FnMut(Cell, u8, u8),
    ) {
        let reach = if self.class.footprint > 0 {
            MAX_CLEARANCE - 1
        } else {
            0
        };
        let kinds = Kinds {
            base,
            known: self.known.as_ref(),
        };
        let near = || cells_around(e, reach).filter(|&c| base.in_bounds(c));
        if reach > 0 {
            for c in near() {
                let i = (c.y as u32 * base.width() + c.x as u32) as usize;
                self.clearance[i] = clearance_at(kinds, &self.class.costs, c);
            }
        }
        for c in near() {
            let kind = derived_kind(kinds, &self.class, &self.clearance, c);
            let old = self.grid.terrain(c).expect("in bounds");
            if old != kind {
                self.grid.set_terrain(c, kind).expect("in bounds");
                changed(c, old, kind);
            }
        }
    }
}

/// What one player knows of a grid (Lester's fog of war): the cells it has seen, and the kind it
/// assumes every other cell has (plain ground, say, so that units plan straight into the unknown
/// and find out). A cell once seen stays known, and follows the grid's edits from then on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knowledge {
    width: u32,
    height: u32,
    /// One bit per cell, row-major.
    seen: Vec<u64>,
    seen_count: usize,
    assumed: u8,
}

impl Knowledge {
    /// Nothing seen yet of `grid`; every cell assumed to be of kind `assumed` ([`NORMAL`](super::NORMAL):
    /// open ground; [`BLOCKED`]: plan only through what was seen).
    pub fn new(grid: &NavGrid, assumed: u8) -> Self {
        let cells = grid.width() as usize * grid.height() as usize;
        Knowledge {
            width: grid.width(),
            height: grid.height(),
            seen: vec![0; cells.div_ceil(64)],
            seen_count: 0,
            assumed,
        }
    }

    /// The kind assumed of unseen cells.
    pub fn assumed(&self) -> u8 {
        self.assumed
    }

    /// Whether `cell` was seen (`false` outside the grid).
    #[inline]
    pub fn is_seen(&self, cell: Cell) -> bool {
        self.bit(cell)
            .is_some_and(|(w, b)| self.seen[w] & (1 << b) != 0)
    }

    /// Marks `cell` seen; whether it was not before (`false` outside the grid).
    pub fn reveal(&mut self, cell: Cell) -> bool {
        let Some((w, b)) = self.bit(cell) else {
            return false;
        };
        let fresh = self.seen[w] & (1 << b) == 0;
        self.seen[w] |= 1 << b;
        self.seen_count += fresh as usize;
        fresh
    }

    /// How many cells were seen.
    pub fn seen_count(&self) -> usize {
        self.seen_count
    }

    /// The size of the grid it is of (width, height).
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn bit(&self, c: Cell) -> Option<(usize, u32)> {
        if c.x < 0 || c.y < 0 || c.x as u32 >= self.width || c.y as u32 >= self.height {
            return None;
        }
        let i = c.y as usize * self.width as usize + c.x as usize;
        Some((i / 64, (i % 64) as u32))
    }
}

/// The class grid's terrain at `c`: the class's cost of the kind there, or blocked without room
/// for the footprint.
fn derived_kind(kinds: Kinds, class: &MoveClass, clearance: &[u8], c: Cell) -> u8 {
    let cost = class.costs.cost(kinds.at(c).expect("in bounds"));
    if class.footprint == 0 {
        return cost;
    }
    let i = (c.y as u32 * kinds.base.width() + c.x as u32) as usize;
    if clearance[i] > class.footprint {
        cost
    } else {
        BLOCKED
    }
}

/// Whether `c` is blocked for a class with `costs` (outside the grid is).
fn class_blocked(kinds: Kinds, costs: &TerrainCosts, c: Cell) -> bool {
    kinds.at(c).is_none_or(|k| costs.cost(k) == BLOCKED)
}

/// The clearance of one cell, by looking at the rings around it.
fn clearance_at(kinds: Kinds, costs: &TerrainCosts, c: Cell) -> u8 {
    if class_blocked(kinds, costs, c) {
        return 0;
    }
    for ring in 1..MAX_CLEARANCE as i32 {
        for k in -ring..=ring {
            let around = [
                IVec2::new(k, -ring),
                IVec2::new(k, ring),
                IVec2::new(-ring, k),
                IVec2::new(ring, k),
            ];
            if around.iter().any(|&d| class_blocked(kinds, costs, c + d)) {
                return ring as u8;
            }
        }
    }
    MAX_CLEARANCE
}

/// Clearance of every cell, row-major: a breadth-first sweep outward from the blocked cells and
/// the grid's edge (each cell's distance to the nearest, in rings, capped).
fn clearance_map(kinds: Kinds, costs: &TerrainCosts) -> Vec<u8> {
    let grid = kinds.base;
    let (w, h) = (grid.width() as i32, grid.height() as i32);
    let at = |c: Cell| (c.y * w + c.x) as usize;
    let mut clearance = vec![MAX_CLEARANCE; (w * h) as usize];
    let mut frontier = Vec::new();
    for c in grid.cells() {
        if class_blocked(kinds, costs, c) {
            clearance[at(c)] = 0;
            frontier.push(c);
        } else if c.x == 0 || c.y == 0 || c.x == w - 1 || c.y == h - 1 {
            // Next to the blocked world outside.
            clearance[at(c)] = 1;
        }
    }
    // Free cells next to a blocked one have clearance 1; the edge cells are seeded above.
    let mut ring: Vec<Cell> = grid.cells().filter(|&c| clearance[at(c)] == 1).collect();
    let mut next = Vec::new();
    for &b in &frontier {
        for dy in -1..=1 {
            for dx in -1..=1 {
                let n = b + IVec2::new(dx, dy);
                if grid.in_bounds(n) && clearance[at(n)] > 1 {
                    clearance[at(n)] = 1;
                    ring.push(n);
                }
            }
        }
    }
    for level in 2..MAX_CLEARANCE {
        next.clear();
        for &c in &ring {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let n = c + IVec2::new(dx, dy);
                    if grid.in_bounds(n) && clearance[at(n)] > level {
                        clearance[at(n)] = level;
                        next.push(n);
                    }
                }
            }
        }
        std::mem::swap(&mut ring, &mut next);
    }
    clearance
}
