//! Maps that are graphs: designer waypoints placed anywhere and the ways between them (a world
//! map of towns, a space map of star systems): Lester's "non-square search areas", where the
//! nodes of the search are not squares but points a designer put down.
//!
//! A [`WaypointGraph`] is built into an ordinary [`NavGrid`] whose only walkable cells are the
//! waypoints' and whose only moves are the ways, as walked [`Link`]s: every search, the
//! plugin's queue, outcomes, movement, lockstep and saves serve it unchanged. The grid is laid
//! over the waypoints with cells `spacing` world units wide; each waypoint stands at the centre
//! of its cell, at most half a spacing from where it was placed.

use bevy::math::Vec2;

use super::cell::{BLOCKED, Cell, NORMAL};
use super::grid::{GridError, MoveRules, NavGrid};
use super::links::{Link, LinkError, LinkId};

/// A waypoint's handle in its [`WaypointGraph`] (its index, in the order waypoints were added).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaypointId(pub u32);

/// A way between two waypoints: its ends, its cost in tiles (cells of the graph's spacing)
/// and whether it goes both ways.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Way {
    from: WaypointId,
    to: WaypointId,
    cost: f32,
    two_way: bool,
}

/// A map that is a graph: waypoints anywhere in the world and ways between them. Build it
/// into a grid with [`WaypointGraph::build`] (the plugin's
/// [`NavMap::from_waypoints`](crate::NavMap::from_waypoints) does it for a map).
///
/// ```
/// use bevy::math::Vec2;
/// use bevy_tilepath::core::{SearchConfig, WaypointGraph, find_path};
///
/// // Three towns: the road from the first to the third goes through the second.
/// let mut graph = WaypointGraph::new(10.0);
/// let a = graph.add_waypoint(Vec2::new(0.0, 0.0));
/// let b = graph.add_waypoint(Vec2::new(300.0, 400.0));
/// let c = graph.add_waypoint(Vec2::new(600.0, 0.0));
/// graph.add_way(a, b).unwrap();
/// graph.add_way(b, c).unwrap();
/// let built = graph.build().unwrap();
/// let path = find_path(&built.grid, built.cell(a), built.cell(c), &SearchConfig::default()).unwrap();
/// assert_eq!(path.cells, [built.cell(a), built.cell(b), built.cell(c)]);
/// // 500 world units a road, 10 a tile.
/// assert!((path.length - 100.0).abs() < 1e-3);
/// ```
#[derive(Clone, Debug, Default)]
pub struct WaypointGraph {
    spacing: f32,
    points: Vec<Vec2>,
    ways: Vec<Way>,
}

/// Why a waypoint graph could not be built, or a way not added.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WaypointError {
    /// No waypoint has this handle.
    UnknownWaypoint(WaypointId),
    /// A way from a waypoint to itself.
    SameWaypoint(WaypointId),
    /// A cost below 0 or not a number, or a waypoint's position not finite.
    BadValue(f32),
    /// Two waypoints fall in the same cell or in neighbouring ones: place them further apart
    /// or use a smaller spacing.
    TooClose(WaypointId, WaypointId),
    /// The grid over the waypoints would be too large (more than [`WaypointGraph::MAX_CELLS`]
    /// cells): use a larger spacing.
    TooLarge {
        /// The grid's width in cells.
        width: u64,
        /// The grid's height in cells.
        height: u64,
    },
    /// The graph has no waypoints.
    Empty,
    /// The grid could not be made.
    Grid(GridError),
    /// A way could not be made a link.
    Link(LinkError),
}

impl std::fmt::Display for WaypointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaypointError::UnknownWaypoint(w) => write!(f, "no waypoint {}", w.0),
            WaypointError::SameWaypoint(w) => write!(f, "a way from waypoint {} to itself", w.0),
            WaypointError::BadValue(v) => write!(f, "{v} is not a cost or position"),
            WaypointError::TooClose(a, b) => write!(
                f,
                "waypoints {} and {} are closer than two cells: use a smaller spacing",
                a.0, b.0
            ),
            WaypointError::TooLarge { width, height } => write!(
                f,
                "a grid of {width} x {height} cells over the waypoints is too large: use a larger spacing"
            ),
            WaypointError::Empty => write!(f, "a waypoint graph without waypoints"),
            WaypointError::Grid(e) => write!(f, "{e}"),
            WaypointError::Link(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WaypointError {}

/// A [`WaypointGraph`] built into a grid: search the grid, place it with `origin` and
/// `spacing` (a cell's corner `(0, 0)` at `origin`, cells `spacing` world units wide), and find
/// each waypoint's cell and each way's link.
#[derive(Clone, Debug)]
pub struct BuiltWaypoints {
    /// The grid: walkable only at the waypoints, its moves the ways (walked links).
    pub grid: NavGrid,
    /// Where the grid's cell `(0, 0)` starts in the world.
    pub origin: Vec2,
    /// A cell's width in world units.
    pub spacing: f32,
    /// Each waypoint's cell, by [`WaypointId`].
    pub cells: Vec<Cell>,
    /// Each way's link, in the order the ways were added.
    pub links: Vec<LinkId>,
}

impl BuiltWaypoints {
    /// The cell of waypoint `id` (panics on a handle the graph never gave).
    pub fn cell(&self, id: WaypointId) -> Cell {
        self.cells[id.0 as usize]
    }

    /// The waypoint standing on `cell`, if any.
    pub fn waypoint_at(&self, cell: Cell) -> Option<WaypointId> {
        self.cells
            .iter()
            .position(|&c| c == cell)
            .map(|k| WaypointId(k as u32))
    }
}

impl WaypointGraph {
    /// The most cells a built graph's grid may have (4096 x 4096).
    pub const MAX_CELLS: u64 = 1 << 24;

    /// An empty graph whose grid will have cells `spacing` world units wide (below the least
    /// distance between two waypoints divided by two; a way's default cost counts these
    /// cells). A spacing that is not a positive number is taken as 1.
    pub fn new(spacing: f32) -> Self {
        let spacing = if spacing.is_finite() && spacing > 0.0 {
            spacing
        } else {
            1.0
        };
        WaypointGraph {
            spacing,
            points: Vec::new(),
            ways: Vec::new(),
        }
    }

    /// Adds a waypoint at `at` (world units); its handle.
    pub fn add_waypoint(&mut self, at: Vec2) -> WaypointId {
        self.points.push(at);
        WaypointId(self.points.len() as u32 - 1)
    }

    /// The waypoints' positions, by handle.
    pub fn waypoints(&self) -> &[Vec2] {
        &self.points
    }

    /// Adds a way both ways between `a` and `b`, costing its length (in cells of the spacing).
    pub fn add_way(&mut self, a: WaypointId, b: WaypointId) -> Result<(), WaypointError> {
        let cost = self.length(a, b)?;
        self.add_way_with(a, b, cost, true)
    }

    /// Adds a way from `a` to `b` (and back, if `two_way`) costing `cost` tiles (cells of the
    /// spacing: a unit crosses it in `cost / speed` seconds): a mountain road dearer than its
    /// length, a one-way river.
    pub fn add_way_with(
        &mut self,
        a: WaypointId,
        b: WaypointId,
        cost: f32,
        two_way: bool,
    ) -> Result<(), WaypointError> {
        self.length(a, b)?;
        if cost.is_nan() || cost < 0.0 {
            return Err(WaypointError::BadValue(cost));
        }
        self.ways.push(Way {
            from: a,
            to: b,
            cost,
            two_way,
        });
        Ok(())
    }

    /// The distance from `a` to `b` in cells of the spacing.
    fn length(&self, a: WaypointId, b: WaypointId) -> Result<f32, WaypointError> {
        let at = |w: WaypointId| {
            self.points
                .get(w.0 as usize)
                .copied()
                .ok_or(WaypointError::UnknownWaypoint(w))
        };
        if a == b {
            return Err(WaypointError::SameWaypoint(a));
        }
        Ok(at(a)?.distance(at(b)?) / self.spacing)
    }

    /// The grid of the graph: one walkable cell per waypoint, every other cell blocked, and a
    /// walked link per way. An error for waypoints closer than two cells, a grid of more than
    /// [`WaypointGraph::MAX_CELLS`], or a position that is not finite.
    pub fn build(&self) -> Result<BuiltWaypoints, WaypointError> {
        if let Some(p) = self.points.iter().find(|p| !p.is_finite()) {
            return Err(WaypointError::BadValue(if p.x.is_finite() {
                p.y
            } else {
                p.x
            }));
        }
        let lo = self
            .points
            .iter()
            .copied()
            .reduce(Vec2::min)
            .ok_or(WaypointError::Empty)?;
        let hi = self.points.iter().copied().reduce(Vec2::max).unwrap_or(lo);
        // A ring of blocked cells round the waypoints.
        let origin = lo - Vec2::splat(self.spacing * 1.5);
        let cell_of = |p: Vec2| {
            let c = ((p - origin) / self.spacing).floor();
            Cell::new(c.x as i32, c.y as i32)
        };
        let far = cell_of(hi) + Cell::splat(2);
        let (width, height) = (far.x as u64, far.y as u64);
        if width * height > Self::MAX_CELLS {
            return Err(WaypointError::TooLarge { width, height });
        }
        let cells: Vec<Cell> = self.points.iter().map(|&p| cell_of(p)).collect();
        let mut taken: Vec<(Cell, usize)> = cells.iter().copied().zip(0..).collect();
        taken.sort_unstable_by_key(|&(c, k)| (c.x, c.y, k));
        for (k, &(c, i)) in taken.iter().enumerate() {
            // Sorted by column: a neighbour is within the next cells of this column or the next.
            for &(d, j) in taken[k + 1..].iter().take_while(|(d, _)| d.x <= c.x + 1) {
                if (d - c).abs().max_element() <= 1 {
                    let (a, b) = (i.min(j), i.max(j));
                    return Err(WaypointError::TooClose(
                        WaypointId(a as u32),
                        WaypointId(b as u32),
                    ));
                }
            }
        }
        let (w, h) = (width as u32, height as u32);
        let mut terrain = vec![BLOCKED; (width * height) as usize];
        for c in &cells {
            terrain[(c.y as u32 * w + c.x as u32) as usize] = NORMAL;
        }
        let mut grid = NavGrid::from_terrain(w, h, MoveRules::default(), &terrain)
            .map_err(WaypointError::Grid)?;
        // All the links at once: one rebuild of the grid's link index, not one a link.
        let slots: Vec<Option<Link>> = self
            .ways
            .iter()
            .map(|way| {
                let (a, b) = (cells[way.from.0 as usize], cells[way.to.0 as usize]);
                let link = if way.two_way {
                    Link::two_way(a, b, way.cost)
                } else {
                    Link::one_way(a, b, way.cost)
                };
                Some(link.walked())
            })
            .collect();
        let links = (0..slots.len() as u32).map(LinkId).collect();
        grid.restore_links(slots).map_err(WaypointError::Link)?;
        Ok(BuiltWaypoints {
            grid,
            origin,
            spacing: self.spacing,
            cells,
            links,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waypoints_too_close_or_too_far_are_errors() {
        let mut graph = WaypointGraph::new(10.0);
        let a = graph.add_waypoint(Vec2::ZERO);
        let b = graph.add_waypoint(Vec2::new(8.0, 0.0));
        assert_eq!(graph.build().unwrap_err(), WaypointError::TooClose(a, b));
        assert_eq!(graph.add_way(a, a), Err(WaypointError::SameWaypoint(a)));
        let nowhere = WaypointId(9);
        assert_eq!(
            graph.add_way(a, nowhere),
            Err(WaypointError::UnknownWaypoint(nowhere))
        );
        assert_eq!(
            graph.add_way_with(a, b, -1.0, true),
            Err(WaypointError::BadValue(-1.0))
        );
        let mut wide = WaypointGraph::new(1.0);
        wide.add_waypoint(Vec2::ZERO);
        wide.add_waypoint(Vec2::new(1e6, 1e6));
        assert!(matches!(wide.build(), Err(WaypointError::TooLarge { .. })));
        assert_eq!(
            WaypointGraph::new(1.0).build().unwrap_err(),
            WaypointError::Empty
        );
        let mut bad = WaypointGraph::new(1.0);
        bad.add_waypoint(Vec2::new(f32::NAN, 0.0));
        assert!(matches!(bad.build(), Err(WaypointError::BadValue(_))));
    }

    #[test]
    fn every_waypoint_is_an_island_joined_by_its_ways_only() {
        let mut graph = WaypointGraph::new(4.0);
        let w: Vec<WaypointId> = [(0.0, 0.0), (40.0, 0.0), (40.0, 40.0), (0.0, 40.0)]
            .map(|(x, y)| graph.add_waypoint(Vec2::new(x, y)))
            .to_vec();
        graph.add_way(w[0], w[1]).unwrap();
        graph.add_way_with(w[1], w[2], 3.0, false).unwrap();
        let built = graph.build().unwrap();
        let grid = &built.grid;
        assert_eq!(grid.cells().filter(|&c| grid.is_walkable(c)).count(), 4);
        assert!(grid.reaches(built.cell(w[0]), built.cell(w[2])));
        assert!(!grid.reaches(built.cell(w[2]), built.cell(w[0])));
        assert!(!grid.reaches(built.cell(w[0]), built.cell(w[3])));
        // Each waypoint's cell holds where it was placed.
        for (k, &p) in graph.waypoints().iter().enumerate() {
            let c = built.cells[k];
            let corner = built.origin + Vec2::new(c.x as f32, c.y as f32) * built.spacing;
            assert!(p.cmpge(corner).all() && p.cmplt(corner + built.spacing).all());
            assert_eq!(built.waypoint_at(c), Some(WaypointId(k as u32)));
        }
        assert!(grid.links().all(|(_, l)| l.walked));
    }
}
