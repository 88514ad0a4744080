//! Links: moves between cells that are not neighbours (doors, one-way drops, ladders,
//! teleporters, ferries), kept on a [`NavGrid`](super::NavGrid) beside its cells.
//!
//! A link joins two cells any distance apart at a cost of its own, one way or both ways, and may
//! be closed (a shut door) without being removed. Searches relax a link like a step: from its
//! entry cell onto its exit cell at the link's cost (plus the exit cell's penalty), so a path may
//! have two consecutive cells that are not neighbours: that stretch is a crossing.
//!
//! The index here keeps what searches read on their hot path: the open links' directed edges
//! sorted by entry (and by exit, for backward searches), a bit per cell that has any, and a
//! lower bound of the cost from every cell to the nearest link end, so the A* estimate stays
//! admissible with links that are shortcuts (see [`LinkIndex::entry_bound`]).

use std::sync::OnceLock;

use super::cell::Cell;
use super::cost::CostModel;

/// A link between two cells of a grid: a move from `from` to `to` (and back, if
/// `two_way`) that costs `cost` tiles, whatever the distance between them.
///
/// ```
/// use bevy_tilepath::core::{find_path, Cell, NavGrid, Link, SearchConfig};
///
/// // A wall down the middle of the map, and a teleporter across it.
/// let mut grid = NavGrid::new(20, 10).unwrap();
/// for y in 0..10 {
///     grid.set_walkable(Cell::new(10, y), false).unwrap();
/// }
/// let link = grid.add_link(Link::two_way(Cell::new(8, 5), Cell::new(12, 5), 1.0)).unwrap();
/// let path = find_path(&grid, Cell::new(2, 5), Cell::new(18, 5), &SearchConfig::default()).unwrap();
/// assert!(path.cells.windows(2).any(|w| w == [Cell::new(8, 5), Cell::new(12, 5)]));
/// // 6 steps to the entry, the crossing (1 tile), 6 steps from the exit.
/// assert_eq!(path.length, 13.0);
///
/// // A closed link is not crossed: the goal is unreachable again.
/// grid.set_link_open(link, false).unwrap();
/// assert!(find_path(&grid, Cell::new(2, 5), Cell::new(18, 5), &SearchConfig::default()).is_err());
/// ```
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, bevy::reflect::Reflect)]
pub struct Link {
    /// The cell the link is entered from.
    pub from: Cell,
    /// The cell the link leads to.
    pub to: Cell,
    /// The cost of crossing, in tiles (straight steps on [`NORMAL`](super::NORMAL) terrain):
    /// a ladder of 3 tiles' effort, a teleporter of 0.5. Not below 0.
    pub cost: f32,
    /// Whether the link can also be crossed from `to` to `from`.
    pub two_way: bool,
    /// Whether the link can be crossed now (a door open); a closed link stays on the grid.
    pub open: bool,
    /// How many units may be inside the link at once (a ladder: 1); 0 for any number. Units
    /// that find it full wait at the entry. Searches do not see it: it is for movement.
    pub capacity: u16,
    /// Who may cross: a unit holding any one of these keys (a gate for one player's units, a
    /// tunnel for one unit class). [`LinkKeys::NONE`], the default, needs no key: everyone
    /// crosses. A grid searches with the keys it holds ([`NavGrid::set_held_keys`](super::NavGrid::set_held_keys)).
    #[cfg_attr(feature = "serialize", serde(default))]
    pub keys: LinkKeys,
    /// Whether a unit crossing it moves along the straight line from entry to exit in the
    /// crossing's time (a road between two towns of a waypoint map, a ferry), rather than
    /// waiting at the entry and coming out at the exit (a door, a teleporter). Searches do not
    /// see it: it is for movement.
    #[cfg_attr(feature = "serialize", serde(default))]
    pub walked: bool,
}

/// A set of up to 64 keys that open links ([`Link::keys`]): a game numbers its keys (a player's
/// gate, a class's tunnel) and gives units the keys they hold.
///
/// ```
/// use bevy_tilepath::core::{Cell, find_path, Link, LinkKeys, NavGrid, SearchConfig};
///
/// const BLUE: LinkKeys = LinkKeys::key(0);
/// let mut grid = NavGrid::new(20, 10).unwrap();
/// for y in 0..10 {
///     grid.set_walkable(Cell::new(10, y), false).unwrap();
/// }
/// // A gate through the wall that only blue's units may use.
/// grid.add_link(Link::two_way(Cell::new(9, 5), Cell::new(11, 5), 2.0).for_keys(BLUE)).unwrap();
/// let (from, to) = (Cell::new(2, 5), Cell::new(18, 5));
/// assert!(find_path(&grid, from, to, &SearchConfig::default()).is_err());
/// grid.set_held_keys(BLUE);
/// // 7 steps to the gate, its 2 tiles, 7 steps on.
/// assert_eq!(find_path(&grid, from, to, &SearchConfig::default()).unwrap().length, 16.0);
/// ```
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, bevy::reflect::Reflect,
)]
pub struct LinkKeys(pub u64);

impl LinkKeys {
    /// No keys: on a link, everyone may cross; held, only links without keys open.
    pub const NONE: LinkKeys = LinkKeys(0);
    /// Every key.
    pub const ALL: LinkKeys = LinkKeys(u64::MAX);

    /// Key number `k` alone (`k` below 64; higher numbers wrap).
    pub const fn key(k: u8) -> LinkKeys {
        LinkKeys(1 << (k % 64))
    }

    /// These keys and key number `k`.
    pub const fn with(self, k: u8) -> LinkKeys {
        LinkKeys(self.0 | LinkKeys::key(k).0)
    }

    /// Whether there are no keys here.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether a unit holding `held` may cross a link that needs these keys: no key needed, or
    /// it holds one of them.
    pub const fn open_to(self, held: LinkKeys) -> bool {
        self.0 == 0 || self.0 & held.0 != 0
    }
}

impl Link {
    /// An open link crossed both ways at `cost` tiles.
    pub fn two_way(a: Cell, b: Cell, cost: f32) -> Self {
        Link {
            from: a,
            to: b,
            cost,
            two_way: true,
            open: true,
            capacity: 0,
            keys: LinkKeys::NONE,
            walked: false,
        }
    }

    /// An open link crossed only from `from` to `to` (a drop down a cliff) at `cost` tiles.
    pub fn one_way(from: Cell, to: Cell, cost: f32) -> Self {
        Link {
            from,
            to,
            cost,
            two_way: false,
            open: true,
            capacity: 0,
            keys: LinkKeys::NONE,
            walked: false,
        }
    }

    /// The same link, closed.
    pub fn closed(self) -> Self {
        Link {
            open: false,
            ..self
        }
    }

    /// The crossings it allows when open, as (entry, exit): from `from` to `to`, and back if
    /// it is two-way.
    pub fn crossings(&self) -> impl Iterator<Item = (Cell, Cell)> {
        let back = self.two_way.then_some((self.to, self.from));
        std::iter::once((self.from, self.to)).chain(back)
    }

    /// The same link, its crossing walked along the line between its ends ([`Link::walked`]).
    pub fn walked(self) -> Self {
        Link {
            walked: true,
            ..self
        }
    }

    /// The same link, crossed only by units holding one of `keys` ([`Link::keys`]).
    pub fn for_keys(self, keys: LinkKeys) -> Self {
        Link { keys, ..self }
    }

    /// The same link, holding at most `units` units at once (0: any number).
    pub fn with_capacity(self, units: u16) -> Self {
        Link {
            capacity: units,
            ..self
        }
    }
}

/// A link's handle on its grid ([`NavGrid::add_link`](super::NavGrid::add_link)). Handles are
/// never reused on one grid: a removed link's handle stays invalid.
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, bevy::reflect::Reflect)]
pub struct LinkId(pub u32);

/// A directed crossing of an open link, between padded cell indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    pub(crate) from: u32,
    pub(crate) to: u32,
    /// Fixed-point cost.
    pub(crate) cost: u64,
    /// The link crossed.
    pub(crate) id: LinkId,
}

/// The links of a grid and what searches read of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct LinkIndex {
    /// Every link by handle; removed ones are `None`.
    slots: Vec<Option<Link>>,
    /// Open links' crossings, sorted by entry then exit then cost.
    out: Vec<Edge>,
    /// The same crossings sorted by exit then entry then cost.
    into: Vec<Edge>,
    /// One bit per padded cell: some crossing starts there.
    has_out: Vec<u64>,
    /// One bit per padded cell: some crossing ends there.
    has_into: Vec<u64>,
    /// One bit per padded cell: the end of some link, open or not (jumps stop there). Empty
    /// without links.
    ends: Vec<u64>,
    /// Per padded cell, the cost of the cheapest way to the nearest end of any link (open or
    /// not) on an open grid of the topology with every terrain [`NORMAL`](super::NORMAL): a
    /// lower bound of the cost to reach any link. Empty without links.
    bound: Vec<u32>,
    /// The sum of the open links' costs (a bound on what crossings add to any path).
    total_cost: u64,
    /// The keys the grid's searches hold: links that need others are left out of the
    /// crossings, as closed ones are.
    held: LinkKeys,
    /// The ends of the open crossings, padded cells, sorted.
    graph_ends: Vec<u32>,
    /// The cells of `graph_ends`, in its order.
    graph_cells: Vec<Cell>,
    /// The open crossings as (entry, exit, cost), by places in `graph_ends`, in the order of
    /// `out`.
    graph_crossings: Vec<(u32, u32, u64)>,
    /// The least costs between every two of `graph_ends` ([`LinkIndex::least_between_ends`]),
    /// made by the first search that asks after a change.
    between_ends: OnceLock<BetweenEnds>,
}

/// The least cost between every two ends of the open crossings, on the graph whose edges are
/// the crossings and, between any two ends, the open-grid cost at the cheapest terrain.
#[derive(Clone, Debug)]
struct BetweenEnds {
    /// The cheapest terrain the walks were costed at.
    min_terrain: u64,
    /// Row `a`, column `b`: the least cost from end `b` to end `a` (places in `graph_ends`);
    /// `None` where walks cost more than [`LEAST_CAP`].
    least: Option<Vec<u32>>,
}

/// Why a link could not be added or changed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkError {
    /// An end of the link is outside the grid.
    OutOfBounds(Cell),
    /// Both ends are the same cell.
    SameCell(Cell),
    /// The cost is negative or not a number.
    BadCost(f32),
    /// No link has this handle (never added, or removed).
    UnknownLink(LinkId),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::OutOfBounds(c) => write!(f, "link end ({}, {}) is off the grid", c.x, c.y),
            LinkError::SameCell(c) => write!(f, "link joins ({}, {}) to itself", c.x, c.y),
            LinkError::BadCost(c) => write!(f, "link cost {c} is not a cost (negative or NaN)"),
            LinkError::UnknownLink(id) => write!(f, "no link {}", id.0),
        }
    }
}

impl std::error::Error for LinkError {}

/// The grid's shape, as the index needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub(crate) stride: usize,
    pub(crate) len: usize,
    /// The moves that arrive at a cell from one earlier in row-major order, as `(dx, dy)`
    /// back to that cell, and whether the move is a diagonal.
    pub(crate) back_moves: &'static [(i32, i32, bool)],
    pub(crate) costs: CostModel,
    /// Whether the moves include diagonals (`Some(true)` eight-way, `Some(false)` four-way),
    /// or `None` on hexagons, whose six steps are all straight: the open grid's cost between
    /// two cells ([`Shape::open_cost`]).
    pub(crate) open_steps: Option<bool>,
}

impl Shape {
    fn pad(&self, c: Cell) -> u32 {
        ((c.y as usize + 1) * self.stride + c.x as usize + 1) as u32
    }

    /// The cell of padded index `i` ([`Shape::pad`] undone).
    fn unpad(&self, i: u32) -> Cell {
        let i = i as usize;
        Cell::new((i % self.stride) as i32 - 1, (i / self.stride) as i32 - 1)
    }

    /// The cost of the cheapest way from `a` to `b` on the open grid, every terrain
    /// [`NORMAL`](super::NORMAL) (what [`LinkIndex::rebuild_bound`]'s sweeps find).
    fn open_cost(&self, a: Cell, b: Cell) -> u32 {
        let (s, d) = (self.costs.straight as u64, self.costs.diagonal as u64);
        let (dx, dy) = (a.x.abs_diff(b.x) as u64, a.y.abs_diff(b.y) as u64);
        let cost = match self.open_steps {
            None => super::hex::distance(a, b) as u64 * s,
            Some(false) => (dx + dy) * s,
            Some(true) => super::heuristic::octile(dx, dy, s, d),
        };
        // The sweeps add with saturation.
        cost.min(u32::MAX as u64) as u32
    }
}

/// Links' ends at most for which a search weighs every entry in its estimate: the grid keeps
/// the least costs between every two ends ([`LinkIndex::least_between_ends`]: 0.3 ms for 100
/// ends, 3 to 5 ms for 256, measured 2026-11-30), and each search looks at up to every pair of
/// them.
pub(crate) const ESTIMATED_ENDS: usize = 256;

/// The most a cost in the table of [`LinkIndex::least_between_ends`] may be, so that the sum
/// of two stays exact in 32 bits: dearer crossings count as this (a lower bound), and grids
/// with dearer walks between links' ends get no table.
const LEAST_CAP: u64 = 1 << 30;

/// The least costs between every two of `n` nodes whose edges are `crossings` (from, to,
/// cost; dearer than [`LEAST_CAP`] counted as it) and `walk` between any two (Floyd and
/// Warshall's algorithm), row by row; `None` if a walk costs more than [`LEAST_CAP`].
fn least_costs(
    n: usize,
    crossings: &[(u32, u32, u64)],
    walk: impl Fn(usize, usize) -> u64,
) -> Option<Vec<u32>> {
    let mut least = Vec::with_capacity(n * n);
    for a in 0..n {
        for b in 0..n {
            let cost = walk(a, b);
            if cost > LEAST_CAP {
                return None;
            }
            least.push(cost as u32);
        }
    }
    for &(from, to, cost) in crossings {
        let at = &mut least[from as usize * n + to as usize];
        *at = (*at).min(cost.min(LEAST_CAP) as u32);
    }
    // 32-bit costs: the loop below runs n^3 times, about three times faster than on 64 bits.
    let mut through = vec![0; n];
    for k in 0..n {
        through.copy_from_slice(&least[k * n..(k + 1) * n]);
        for row in least.chunks_exact_mut(n) {
            let to_k = row[k];
            for (at, &on) in row.iter_mut().zip(&through) {
                *at = (*at).min(to_k + on);
            }
        }
    }
    Some(least)
}

#[inline(always)]
fn bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

/// Whether a search holding `held` may cross `link` now.
fn crosses(link: &Link, held: LinkKeys) -> bool {
    link.open && link.keys.open_to(held)
}

/// The run of `edges` (sorted by `key`) whose `key` is padded cell `i`; `bits` marks the cells
/// that have one, so most cells answer without a search.
#[inline(always)]
fn run_at<'a>(edges: &'a [Edge], bits: &[u64], i: usize, key: impl Fn(&Edge) -> u32) -> &'a [Edge] {
    if !bit(bits, i) {
        return &[];
    }
    let first = edges.partition_point(|e| (key(e) as usize) < i);
    let end = first + edges[first..].partition_point(|e| key(e) as usize == i);
    &edges[first..end]
}

impl LinkIndex {
    /// Whether the grid has any link (open or not).
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        !self.bound.is_empty()
    }

    /// Checks a link against a grid of `width` x `height`.
    pub(crate) fn check(link: &Link, width: u32, height: u32) -> Result<(), LinkError> {
        for c in [link.from, link.to] {
            if c.x < 0 || c.y < 0 || c.x as u32 >= width || c.y as u32 >= height {
                return Err(LinkError::OutOfBounds(c));
            }
        }
        if link.from == link.to {
            return Err(LinkError::SameCell(link.from));
        }
        if link.cost.is_nan() || link.cost < 0.0 {
            return Err(LinkError::BadCost(link.cost));
        }
        Ok(())
    }

    /// Adds a checked link; its handle.
    pub(crate) fn add(&mut self, link: Link, shape: Shape) -> LinkId {
        let id = LinkId(self.slots.len() as u32);
        self.slots.push(Some(link));
        if self.bound.len() == shape.len {
            // New ends only lower the bound: no sweeps over the whole grid.
            self.rebuild(shape, false);
            self.lower_bound(shape, [link.from, link.to]);
        } else {
            self.rebuild(shape, true);
        }
        id
    }

    /// Removes a link; the link it was.
    pub(crate) fn remove(&mut self, id: LinkId, shape: Shape) -> Result<Link, LinkError> {
        let link = self
            .slots
            .get_mut(id.0 as usize)
            .and_then(Option::take)
            .ok_or(LinkError::UnknownLink(id))?;
        self.rebuild(shape, true);
        Ok(link)
    }

    /// Opens or closes a link; whether that changed it.
    pub(crate) fn set_open(
        &mut self,
        id: LinkId,
        open: bool,
        shape: Shape,
    ) -> Result<bool, LinkError> {
        let link = self.get_mut(id)?;
        if link.open == open {
            return Ok(false);
        }
        link.open = open;
        self.rebuild(shape, false);
        Ok(true)
    }

    /// The keys the grid's searches hold.
    pub(crate) fn held(&self) -> LinkKeys {
        self.held
    }

    /// Holds `keys` from now on; whether that changed the crossings.
    pub(crate) fn set_held(&mut self, keys: LinkKeys, shape: Shape) -> bool {
        let was = std::mem::replace(&mut self.held, keys);
        let changed = self
            .slots
            .iter()
            .flatten()
            .any(|l| crosses(l, was) != crosses(l, keys));
        if changed {
            self.rebuild(shape, false);
        }
        changed
    }

    fn get_mut(&mut self, id: LinkId) -> Result<&mut Link, LinkError> {
        self.slots
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(LinkError::UnknownLink(id))
    }

    /// Every handle's link (`None` for a removed one), in handle order.
    pub(crate) fn slots(&self) -> &[Option<Link>] {
        &self.slots
    }

    /// Replaces every link with `slots` (each checked against a grid of `width` x `height`),
    /// handle for handle.
    pub(crate) fn restore(
        &mut self,
        slots: Vec<Option<Link>>,
        (width, height): (u32, u32),
        shape: Shape,
    ) -> Result<(), LinkError> {
        for link in slots.iter().flatten() {
            Self::check(link, width, height)?;
        }
        self.slots = slots;
        self.rebuild(shape, true);
        Ok(())
    }

    /// The link with this handle.
    pub(crate) fn get(&self, id: LinkId) -> Option<&Link> {
        self.slots.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// Every link with its handle, in handle order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (LinkId, &Link)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.as_ref().map(|l| (LinkId(i as u32), l)))
    }

    /// Rebuilds the crossings (and, when the ends changed, the bound) after a change to the
    /// links or to the grid's shape and costs.
    pub(crate) fn rebuild(&mut self, shape: Shape, ends_changed: bool) {
        self.out.clear();
        self.total_cost = 0;
        let held = self.held;
        let open = self.slots.iter().enumerate().filter_map(|(k, l)| {
            l.as_ref()
                .filter(|l| crosses(l, held))
                .map(|l| (LinkId(k as u32), l))
        });
        for (id, link) in open {
            let cost = shape.costs.from_tiles(link.cost) as u64;
            for (a, b) in link.crossings() {
                self.out.push(Edge {
                    from: shape.pad(a),
                    to: shape.pad(b),
                    cost,
                    id,
                });
            }
            self.total_cost += cost;
        }
        self.out
            .sort_unstable_by_key(|e| (e.from, e.to, e.cost, e.id));
        self.into.clone_from(&self.out);
        self.into
            .sort_unstable_by_key(|e| (e.to, e.from, e.cost, e.id));
        let words = shape.len.div_ceil(64);
        self.has_out.clear();
        self.has_out.resize(words, 0);
        self.has_into.clear();
        self.has_into.resize(words, 0);
        for e in &self.out {
            self.has_out[e.from as usize / 64] |= 1 << (e.from % 64);
            self.has_into[e.to as usize / 64] |= 1 << (e.to % 64);
        }
        let mut ends: Vec<u32> = self.out.iter().flat_map(|e| [e.from, e.to]).collect();
        ends.sort_unstable();
        ends.dedup();
        let place = |i: u32| ends.binary_search(&i).expect("an end") as u32;
        self.graph_crossings = self
            .out
            .iter()
            .map(|e| (place(e.from), place(e.to), e.cost))
            .collect();
        self.graph_cells = ends.iter().map(|&i| shape.unpad(i)).collect();
        self.graph_ends = ends;
        self.forget_between_ends();
        if ends_changed || self.bound.len() != shape.len {
            self.rebuild_bound(shape);
        }
    }

    /// The open-grid cost from every padded cell to the nearest end of any link, by two sweeps
    /// of the moves' costs (forward over the moves that come from cells already swept, then
    /// backward over the rest). Exact for these move sets: a cheapest open-grid path from an
    /// end can always take its moves of one kind before the other's, so the first sweep carries
    /// one kind and the second the other.
    fn rebuild_bound(&mut self, shape: Shape) {
        if self.slots.iter().all(Option::is_none) {
            self.bound = Vec::new();
            self.ends = Vec::new();
            return;
        }
        self.ends = vec![0; shape.len.div_ceil(64)];
        for link in self.slots.iter().flatten() {
            for i in [shape.pad(link.from), shape.pad(link.to)] {
                self.ends[i as usize / 64] |= 1 << (i % 64);
            }
        }
        let (s, d) = (shape.costs.straight, shape.costs.diagonal);
        let back: Vec<(i32, i32, u32)> = shape
            .back_moves
            .iter()
            .map(|&(dx, dy, diagonal)| (dx, dy, if diagonal { d } else { s }))
            .collect();
        let (w, h) = (
            shape.stride as i32 - 2,
            (shape.len / shape.stride) as i32 - 2,
        );
        let mut bound = vec![u32::MAX; shape.len];
        for link in self.slots.iter().flatten() {
            bound[shape.pad(link.from) as usize] = 0;
            bound[shape.pad(link.to) as usize] = 0;
        }
        // Cells off the grid are never on a path: the sweeps stay on it.
        let relax = |bound: &mut [u32], c: Cell, from: Cell, cost: u32| {
            if from.x >= 0 && from.y >= 0 && from.x < w && from.y < h {
                let via = bound[shape.pad(from) as usize].saturating_add(cost);
                let at = &mut bound[shape.pad(c) as usize];
                *at = (*at).min(via);
            }
        };
        let cells = (0..h).flat_map(|y| (0..w).map(move |x| Cell::new(x, y)));
        for c in cells.clone() {
            for &(dx, dy, cost) in &back {
                relax(&mut bound, c, c - Cell::new(dx, dy), cost);
            }
        }
        for c in cells.rev() {
            for &(dx, dy, cost) in &back {
                relax(&mut bound, c, c + Cell::new(dx, dy), cost);
            }
        }
        self.bound = bound;
    }

    /// Lowers the bound to what it is with `ends` among the links' ends (as
    /// [`LinkIndex::rebuild_bound`] would find it, one end at a time).
    fn lower_bound(&mut self, shape: Shape, ends: [Cell; 2]) {
        let (w, h) = (shape.stride - 2, shape.len / shape.stride - 2);
        for end in ends {
            let i = shape.pad(end) as usize;
            if bit(&self.ends, i) {
                continue;
            }
            self.ends[i / 64] |= 1 << (i % 64);
            for (y, row) in self
                .bound
                .chunks_exact_mut(shape.stride)
                .skip(1)
                .take(h)
                .enumerate()
            {
                for (x, at) in row[1..=w].iter_mut().enumerate() {
                    *at = (*at).min(shape.open_cost(Cell::new(x as i32, y as i32), end));
                }
            }
        }
    }

    /// A lower bound of the cost (on terrain of cost 1) from padded cell `i` to the nearest end
    /// of any link (0 without links).
    #[inline(always)]
    pub(crate) fn entry_bound(&self, i: usize) -> u64 {
        self.bound.get(i).map_or(0, |&b| b as u64)
    }

    /// One bit per padded cell: the ends of every link, open or not (empty without links).
    pub(crate) fn ends(&self) -> &[u64] {
        &self.ends
    }

    /// The crossings that start at padded cell `i`.
    #[inline(always)]
    pub(crate) fn starting_at(&self, i: usize) -> &[Edge] {
        run_at(&self.out, &self.has_out, i, |e| e.from)
    }

    /// The crossings that end at padded cell `i`.
    #[inline(always)]
    pub(crate) fn ending_at(&self, i: usize) -> &[Edge] {
        run_at(&self.into, &self.has_into, i, |e| e.to)
    }

    /// The cheapest open crossing from padded cell `a` to `b` (the first added among equals),
    /// if any: its link and cost.
    pub(crate) fn crossing(&self, a: usize, b: usize) -> Option<(LinkId, u64)> {
        self.starting_at(a)
            .iter()
            .find(|e| e.to as usize == b)
            .map(|e| (e.id, e.cost))
    }

    /// An estimate `h` from padded cell `i` lowered to what a path through a link could cost:
    /// the open-grid cost to the nearest link end (at the cheapest terrain, `min_terrain`),
    /// then `exit` ([`LinkIndex::exit_bound`]; `u64::MAX` leaves `h` as it is).
    #[inline(always)]
    pub(crate) fn lowered(&self, h: u64, i: usize, min_terrain: u64, exit: u64) -> u64 {
        if exit == u64::MAX {
            return h;
        }
        h.min((self.entry_bound(i) * min_terrain).saturating_add(exit))
    }

    /// The least cost from any open crossing's entry to a goal: the crossing's cost plus `h`
    /// from its exit (`h` of a padded index, unweighted); `u64::MAX` without crossings. A
    /// `backward` search walks crossings from exit to entry: `h` is taken from the entry then.
    pub(crate) fn exit_bound(&self, backward: bool, h: impl Fn(usize) -> u64) -> u64 {
        self.out
            .iter()
            .map(|e| e.cost + h(if backward { e.from } else { e.to } as usize))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The cells at the ends of the open crossings (in the order of their padded indices), and
    /// the crossings between them as (entry, exit, cost), by their places in the ends.
    pub(crate) fn crossing_graph(&self) -> (&[Cell], &[(u32, u32, u64)]) {
        (&self.graph_cells, &self.graph_crossings)
    }

    /// The least cost to every end of [`LinkIndex::crossing_graph`] from every other (row `a`,
    /// column `e`: from end `e` to end `a`; `ends x ends`), on the graph whose edges are the
    /// crossings and, between any two ends, the open grid's cost ([`Shape::open_cost`]) at the
    /// cheapest terrain, `min_terrain`. Made once after a change to the links or to the grid's
    /// terrains, by the first search that asks (or ahead of it). `None` with more than
    /// [`ESTIMATED_ENDS`] ends, if the table on hand was made for another cheapest terrain, or
    /// if walks between ends cost more than it holds.
    pub(crate) fn least_between_ends(&self, min_terrain: u64, shape: Shape) -> Option<&[u32]> {
        let cells = &self.graph_cells;
        if cells.len() > ESTIMATED_ENDS {
            return None;
        }
        let table = self.between_ends.get_or_init(|| {
            // The least costs on the graph with every edge turned round, row by row, are the
            // columns of the least costs on the graph itself.
            let reversed: Vec<(u32, u32, u64)> = self
                .graph_crossings
                .iter()
                .map(|&(from, to, cost)| (to, from, cost))
                .collect();
            let walk =
                |a: usize, b: usize| shape.open_cost(cells[b], cells[a]) as u64 * min_terrain;
            BetweenEnds {
                min_terrain,
                least: least_costs(cells.len(), &reversed, walk),
            }
        });
        table
            .least
            .as_deref()
            .filter(|_| table.min_terrain == min_terrain)
    }

    /// Whether [`LinkIndex::least_between_ends`] has nothing left to make: its table is made,
    /// or there is none to make (more than [`ESTIMATED_ENDS`] ends).
    pub(crate) fn between_ends_made(&self) -> bool {
        self.graph_cells.len() > ESTIMATED_ENDS || self.between_ends.get().is_some()
    }

    /// Drops the table of [`LinkIndex::least_between_ends`] (the links or the cheapest
    /// terrain changed).
    pub(crate) fn forget_between_ends(&mut self) {
        self.between_ends = OnceLock::new();
    }

    /// The sum of the open links' costs.
    pub(crate) fn total_cost(&self) -> u64 {
        self.total_cost
    }

    /// The islands reachable from island `start` (itself included), crossing open links whose
    /// ends are walkable (`label` gives a padded cell's island), sorted; `backward`: the islands
    /// from which `start` is reachable instead.
    pub(crate) fn reach(
        &self,
        start: u32,
        backward: bool,
        label: impl Fn(usize) -> Option<u32>,
    ) -> Vec<u32> {
        let mut hops: Vec<(u32, u32)> = self
            .out
            .iter()
            .filter_map(|e| Some((label(e.from as usize)?, label(e.to as usize)?)))
            .filter(|(a, b)| a != b)
            .map(|(a, b)| if backward { (b, a) } else { (a, b) })
            .collect();
        hops.sort_unstable();
        hops.dedup();
        let mut reached = vec![start];
        let mut seen = std::collections::HashSet::from([start]);
        let mut k = 0;
        while k < reached.len() {
            let at = reached[k];
            let first = hops.partition_point(|&(a, _)| a < at);
            for &(_, b) in hops[first..].iter().take_while(|&&(a, _)| a == at) {
                if seen.insert(b) {
                    reached.push(b);
                }
            }
            k += 1;
        }
        reached.sort_unstable();
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::{MoveRules, NavGrid, Topology};
    use super::super::hex;
    use super::super::test_rng::below;
    use super::*;

    /// The table of least costs between links' ends built ahead is the one the first search
    /// makes, is made again after a link closes, and is not made with more ends than searches
    /// weigh.
    #[test]
    fn the_link_table_built_ahead_is_the_one_a_search_makes() {
        let mut grid = NavGrid::new(40, 40).unwrap();
        let mut next = below(11);
        let mut cell = || Cell::new(next(40) as i32, next(40) as i32);
        let mut ids = Vec::new();
        for _ in 0..12 {
            if let Ok(id) = grid.add_link(Link::one_way(cell(), cell(), 2.0)) {
                ids.push(id);
            }
        }
        let searched = grid.clone();
        grid.build_link_table();
        let config = super::super::search::SearchConfig::default();
        let (a, b) = (Cell::new(0, 0), Cell::new(39, 39));
        super::super::search::find_path(&searched, a, b, &config).unwrap();
        let table = grid.link_table().expect("a table").to_vec();
        assert_eq!(searched.link_table().unwrap(), &table[..]);
        grid.set_link_open(ids[0], false).unwrap();
        let fresh = grid.clone();
        fresh.build_link_table();
        assert_ne!(fresh.link_table().unwrap(), &table[..]);
        let mut many = NavGrid::new(200, 200).unwrap();
        for k in 0..=ESTIMATED_ENDS as i32 / 2 {
            let link = Link::two_way(
                Cell::new(k % 200, 2 * (k / 200)),
                Cell::new(k % 200, 199),
                1.0,
            );
            many.add_link(link).unwrap();
        }
        many.build_link_table();
        assert!(many.link_table().is_none());
    }

    /// A grid's jump table, its jumps stopping at links' ends, stays what a new build gives as
    /// links come and go and cells are edited.
    #[test]
    fn the_jump_table_follows_links() {
        let mut next = below(3);
        for _ in 0..20 {
            let (w, h) = (2 + next(30), 2 + next(30));
            let mut grid = NavGrid::new(w, h).unwrap();
            grid.build_jump_table();
            let mut ids = Vec::new();
            for step in 0..30 {
                let c = Cell::new(next(w) as i32, next(h) as i32);
                match step % 3 {
                    0 => {
                        let to = Cell::new(next(w) as i32, next(h) as i32);
                        if let Ok(id) = grid.add_link(Link::one_way(c, to, 1.0)) {
                            ids.push(id);
                        }
                    }
                    1 if !ids.is_empty() => {
                        let id = ids.swap_remove(next(ids.len() as u32) as usize);
                        grid.remove_link(id).unwrap();
                    }
                    _ => grid.set_walkable(c, !grid.is_walkable(c)).unwrap(),
                }
                let mut fresh = grid.clone();
                fresh.drop_jump_table();
                fresh.build_jump_table();
                assert_eq!(grid.jump_table(), fresh.jump_table(), "{w}x{h} step {step}");
            }
        }
    }

    /// The bound is the exact open-grid cost to the nearest link end, for every topology: the
    /// two sweeps, and the lowering as links are added, agree with the closed forms
    /// (Manhattan, octile, hexagonal distance).
    #[test]
    fn the_bound_is_the_open_grid_cost_to_the_nearest_link_end() {
        let mut next = below(7);
        for topology in [Topology::Four, Topology::Eight, Topology::Hex] {
            for _ in 0..20 {
                let (w, h) = (1 + next(30), 1 + next(30));
                let rules = MoveRules {
                    topology,
                    ..MoveRules::default()
                };
                let mut grid = NavGrid::with_rules(w, h, rules).unwrap();
                let cell = |n: &mut dyn FnMut(u32) -> u32| Cell::new(n(w) as i32, n(h) as i32);
                let mut ends = Vec::new();
                for _ in 0..1 + next(4) {
                    let (a, b) = (cell(&mut next), cell(&mut next));
                    if grid.add_link(Link::one_way(a, b, 1.0).closed()).is_ok() {
                        ends.extend([a, b]);
                    }
                }
                if ends.is_empty() {
                    continue;
                }
                let costs = rules.costs;
                let open_cost = |a: Cell, b: Cell| -> u64 {
                    let (dx, dy) = (a.x.abs_diff(b.x) as u64, a.y.abs_diff(b.y) as u64);
                    let (s, d) = (costs.straight as u64, costs.diagonal as u64);
                    match topology {
                        Topology::Four => (dx + dy) * s,
                        Topology::Eight => dx.max(dy).abs_diff(dx.min(dy)) * s + dx.min(dy) * d,
                        Topology::Hex => hex::distance(a, b) as u64 * s,
                    }
                };
                // As the ends came one by one (lowering the bound), then swept afresh.
                for swept in [false, true] {
                    if swept {
                        grid.set_rules(rules);
                    }
                    let links = grid.links_raw();
                    for c in grid.cells() {
                        let want = ends.iter().map(|&e| open_cost(c, e)).min().unwrap();
                        let i = grid.index(c).unwrap();
                        let got = links.entry_bound(i);
                        assert_eq!(got, want, "{topology:?} {w}x{h} at {c:?}, swept {swept}");
                    }
                }
            }
        }
    }
}
