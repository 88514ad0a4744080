//! Shared searches: one backward search from a goal answers every unit going there.
//!
//! A [`GoalTree`] grows from the goal over reversed moves (the cost of a step is the cost of
//! entering the cell it ends on, as in the forward search, so it is charged to the cell the
//! backward search expands). Every cell it settles knows its cheapest cost to the goal and its
//! next step there, so the path of any settled start is read off the tree and costs exactly what
//! its own A* would under the same grid and overlay. It is A*, not plain Dijkstra: the estimate
//! is the distance to the bounding box of the starts still to settle (a minimum of consistent
//! estimates, so consistent), which steers the tree toward the group instead of flooding the
//! map. More starts can be added later (a later order to the same goal): the open list is
//! re-keyed for the larger box and the search goes on where it stopped.

use super::cell::{BLOCKED, Cell};
use super::cost::CostModel;
use super::grid::{MoveRules, NavGrid};
use super::heuristic::{Heuristic, WEIGHT_ONE};
use super::kernel::{
    self, CellOverlay, Closed, Counts, End, Expand, Frontier, KeyPacking, Marks, Monomorphised,
    OVERLAY_BLOCKED, Pages, Scratch, for_each_move,
};
use super::links::LinkIndex;
use super::path::{Path, PathError};

/// How far a [`GoalTree`] has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeStep {
    /// Starts are still unsettled and the budget ran out: call [`GoalTree::step`] again.
    Pending,
    /// Every start added so far is settled, or the tree has covered every cell it can reach
    /// (starts it never settled have no path under its overlay).
    Done,
    /// The grid changed since [`GoalTree::begin`]: the tree no longer describes it.
    Stale,
}

/// The box of unsettled starts, and the cost model the estimate uses.
#[derive(Clone, Copy, Debug)]
struct Estimate {
    heuristic: Heuristic,
    /// Hexagonal grid: the larger of the box distances along q and r (no more than the steps
    /// to any cell in the box) is the estimate's step count.
    hex: bool,
    costs: CostModel,
    min_terrain: u64,
    /// `(x0, y0, x1, y1)`, inclusive; `None` before any start is added.
    rect: Option<(u32, u32, u32, u32)>,
    /// With links: the least a path from the box can cost to any link's end over a crossing
    /// (the crossing's cost plus the estimate from its entry to the box); `u64::MAX` without.
    link_exit: u64,
}

impl Estimate {
    #[inline(always)]
    fn h(&self, x: u32, y: u32) -> u64 {
        let Some((x0, y0, x1, y1)) = self.rect else {
            return 0;
        };
        let dx = x0.saturating_sub(x).max(x.saturating_sub(x1));
        let dy = y0.saturating_sub(y).max(y.saturating_sub(y1));
        let (dx, dy) = if self.hex { (dx.max(dy), 0) } else { (dx, dy) };
        self.heuristic
            .estimate(dx, dy, self.costs, self.min_terrain, WEIGHT_ONE)
    }

    /// [`Estimate::h`] lowered to what a path through a link could cost (as the forward
    /// search's estimate is, backward: a crossing is walked from its exit to its entry here).
    #[inline(always)]
    fn h_links(&self, x: u32, y: u32, links: &LinkIndex, i: usize) -> u64 {
        links.lowered(self.h(x, y), i, self.min_terrain, self.link_exit)
    }

    /// Recomputes [`Estimate::link_exit`] for the box as it is.
    fn bound_links(&mut self, grid: &NavGrid) {
        self.link_exit = if self.heuristic == Heuristic::Zero {
            u64::MAX
        } else {
            grid.links_raw().exit_bound(true, |i| {
                let c = grid.cell_of(i);
                self.h(c.x as u32, c.y as u32)
            })
        };
    }

    /// Grows the box to hold `c`; whether it changed.
    fn include(&mut self, c: Cell) -> bool {
        let (x, y) = (c.x as u32, c.y as u32);
        let grown = match self.rect {
            None => (x, y, x, y),
            Some((x0, y0, x1, y1)) => (x0.min(x), y0.min(y), x1.max(x), y1.max(y)),
        };
        let changed = self.rect != Some(grown);
        self.rect = Some(grown);
        changed
    }
}

/// The tree in progress.
#[derive(Clone, Debug)]
struct Growing {
    goal: Cell,
    goal_i: usize,
    version: u64,
    estimate: Estimate,
    packing: KeyPacking,
    /// Starts added and not settled yet.
    unsettled: usize,
    /// Every reachable cell is settled.
    exhausted: bool,
    /// The tree has an overlay.
    overlaid: bool,
    expansions: u64,
    /// The grid's move rules and largest penalty when the tree began (a tree does not follow a
    /// change of the rules, nor a penalty its keys have no room for).
    rules: MoveRules,
    max_penalty: u32,
    /// The grid was edited while the tree grew or served (see [`GoalTree::follow_edits`]).
    edited: bool,
}

/// A backward search from one goal, shared by every unit going there (see the module docs).
///
/// ```
/// use bevy_tilepath::core::{Cell, GoalTree, Heuristic, NavGrid, TreeStep, find_path, SearchConfig};
///
/// let mut grid = NavGrid::new(16, 16).unwrap();
/// for y in 0..12 {
///     grid.set_walkable(Cell::new(8, y), false).unwrap();
/// }
/// let goal = Cell::new(14, 2);
/// let starts = [Cell::new(1, 1), Cell::new(2, 5), Cell::new(3, 9)];
/// let mut tree = GoalTree::new();
/// tree.begin(&grid, goal, &[], Heuristic::Octile).unwrap();
/// tree.add_starts(&grid, &starts);
/// while tree.step(&grid, 64) == TreeStep::Pending {}
/// for s in starts {
///     let shared = tree.path_from(&grid, s).unwrap();
///     let own = find_path(&grid, s, goal, &SearchConfig::default()).unwrap();
///     assert_eq!(shared.cost, own.cost);
/// }
/// ```
#[derive(Clone, Debug, Default)]
pub struct GoalTree {
    /// Node records: `g` is the cost to the goal, `parent` the next cell toward it. The marks
    /// are the tree's starts.
    scratch: Scratch,
    growing: Option<Growing>,
}

impl GoalTree {
    /// An empty tree; its arrays grow to the grid's size on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a tree at `goal` (in bounds and walkable) with per-tree extra costs or blocks
    /// (never applied to the goal; a blocked cell may still be a start). `heuristic` should be
    /// admissible for the grid's moves, or the paths read off the tree may not be the cheapest.
    pub fn begin(
        &mut self,
        grid: &NavGrid,
        goal: Cell,
        overlay: &[(Cell, CellOverlay)],
        heuristic: Heuristic,
    ) -> Result<(), PathError> {
        self.growing = None;
        let goal_i = grid
            .index(goal)
            .map_err(|_| PathError::GoalOutOfBounds(goal))?;
        if grid.terrain_raw()[goal_i] == BLOCKED {
            return Err(PathError::GoalBlocked(goal));
        }
        self.scratch
            .next_generation(grid.terrain_raw().len(), Pages::Lazy);
        self.scratch.use_marks();
        let overlay_max = self.scratch.apply_overlay(grid, overlay, [goal_i, goal_i]);
        let costs = grid.rules().costs;
        let packing = KeyPacking::new(grid, costs, overlay_max);
        self.scratch.seed(goal_i, packing.key(0, 0));
        self.growing = Some(Growing {
            goal,
            goal_i,
            version: grid.version(),
            estimate: Estimate {
                heuristic,
                hex: grid.is_hex(),
                costs,
                min_terrain: grid.min_terrain() as u64,
                rect: None,
                link_exit: u64::MAX,
            },
            packing,
            unsettled: 0,
            exhausted: false,
            overlaid: !overlay.is_empty(),
            expansions: 0,
            rules: grid.rules(),
            max_penalty: grid.max_penalty(),
            edited: false,
        });
        Ok(())
    }

    /// Grows the tree's arrays to `grid`'s size now, so the first tree on it does not pay for
    /// the allocation (its pages are mapped in as the tree reaches them: see `zeroed`).
    pub fn reserve_for(&mut self, grid: &NavGrid) {
        let len = grid.terrain_raw().len();
        if self.scratch.nodes.len() != len {
            self.growing = None;
            self.scratch.next_generation(len, Pages::Lazy);
            self.scratch.use_marks();
        }
    }

    /// The goal of the tree, if one was begun.
    pub fn goal(&self) -> Option<Cell> {
        self.growing.as_ref().map(|g| g.goal)
    }

    /// The grid version the tree was grown on.
    pub fn version(&self) -> Option<u64> {
        self.growing.as_ref().map(|g| g.version)
    }

    /// Keeps the tree across the edits of `grid` made since it began (or since the last call),
    /// instead of starting again: what it settled stays, growth goes on over the grid as it is
    /// now (never expanding a cell blocked since), and every path read off it from now on is
    /// checked step by step against the grid and costed on it ([`GoalTree::path_from`] gives
    /// `None` for a path an edit broke). Such paths are legal but, near the edits, not always
    /// the cheapest: a cell opened or made cheaper after the tree passed it is not used. Returns
    /// `false`, changing nothing, if the tree cannot follow: none begun, the grid's size or
    /// move rules changed, or a penalty above any the grid had when the tree began (start
    /// again with [`GoalTree::begin`]).
    ///
    /// A shared search over a whole map costs tens of milliseconds; starting it again on every
    /// edit anywhere kept a 200-unit group order from ever being served in a game that edits
    /// its map every few frames.
    pub fn follow_edits(&mut self, grid: &NavGrid) -> bool {
        let len = self.scratch.nodes.len();
        let Some(g) = self.growing.as_mut() else {
            return false;
        };
        if len != grid.terrain_raw().len()
            || g.rules != grid.rules()
            || grid.max_penalty() > g.max_penalty
        {
            return false;
        }
        if g.version != grid.version() {
            g.version = grid.version();
            g.edited = true;
        }
        true
    }

    /// Whether the tree followed edits of its grid ([`GoalTree::follow_edits`]): its paths are
    /// legal on the grid but not always the cheapest (a cache should not hand it out).
    pub fn edited(&self) -> bool {
        self.growing.as_ref().is_some_and(|g| g.edited)
    }

    /// Node expansions so far.
    pub fn expansions(&self) -> u64 {
        self.growing.as_ref().map_or(0, |g| g.expansions)
    }

    /// Starts added and not settled yet.
    pub fn unsettled(&self) -> usize {
        self.growing.as_ref().map_or(0, |g| g.unsettled)
    }

    /// The scratch memory the tree holds, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.scratch.memory_bytes()
    }

    /// Whether `cell`'s cheapest path to the goal is known.
    pub fn is_settled(&self, grid: &NavGrid, cell: Cell) -> bool {
        self.growing.is_some() && grid.index(cell).is_ok_and(|i| self.scratch.is_closed(i))
    }

    /// Adds starts the tree must settle; [`GoalTree::step`] goes on until all are. Starts that
    /// are out of bounds, blocked, on another island than the goal or already settled are not
    /// waited for. The open list is re-keyed when the box of starts grows.
    pub fn add_starts(&mut self, grid: &NavGrid, starts: &[Cell]) {
        let closed = self.scratch.closed_stamp();
        let generation = self.scratch.generation;
        let Some(g) = self.growing.as_mut() else {
            return;
        };
        // The islands from which the goal can be reached.
        let islands = grid
            .island_raw(g.goal_i)
            .map_or_else(Vec::new, |l| grid.island_reach(l, true));
        let mut grown = false;
        for &s in starts {
            let Ok(i) = grid.index(s) else {
                continue;
            };
            if grid.terrain_raw()[i] == BLOCKED
                || grid
                    .island_raw(i)
                    .is_none_or(|l| islands.binary_search(&l).is_err())
                || self.scratch.nodes[i].stamp == closed
                || self.scratch.marks[i] == generation
            {
                continue;
            }
            self.scratch.marks[i] = generation;
            g.unsettled += 1;
            grown |= g.estimate.include(s);
        }
        if grown && !g.exhausted {
            g.estimate.bound_links(grid);
            let stride = grid.stride();
            let (estimate, packing) = (g.estimate, g.packing);
            let scratch = &mut self.scratch;
            let links = grid.links_raw();
            for e in &mut scratch.open.items {
                let i = e.node as usize;
                let (x, y) = ((i % stride) as u32 - 1, (i / stride) as u32 - 1);
                let h = estimate.h_links(x, y, links, i);
                e.key = packing.key(scratch.nodes[i].g + h, h);
            }
            // A sorted array is a valid heap.
            scratch.open.items.sort_unstable_by_key(|e| e.key);
        }
    }

    /// Grows the tree by at most `max_pops` heap pops.
    pub fn step(&mut self, grid: &NavGrid, max_pops: u32) -> TreeStep {
        let Some(g) = self.growing.as_ref() else {
            return TreeStep::Done;
        };
        if g.version != grid.version() {
            return TreeStep::Stale;
        }
        if g.unsettled == 0 || g.exhausted {
            return TreeStep::Done;
        }
        let penalties = grid.has_penalties() || g.overlaid;
        kernel::dispatch(self, grid, penalties, max_pops)
    }
}

impl Monomorphised for GoalTree {
    type Out = TreeStep;

    /// The tree's loop for these moves (see [`kernel::run`]).
    #[inline(never)]
    fn run<const MOVES: u8, const CUT: bool, const PENALTY: bool>(
        &mut self,
        grid: &NavGrid,
        budget: u32,
    ) -> TreeStep {
        let g = self.growing.as_mut().expect("run needs a tree");
        let closed = self.scratch.closed_stamp();
        let (mut frontier, marks) = self.scratch.split(g.packing);
        let mut counts = Counts {
            expansions: g.expansions,
            scans: 0,
            ..Counts::default()
        };
        let mut backward = Backward::<MOVES, CUT, PENALTY> {
            links: grid.links_raw(),
            terrain: grid.terrain_raw(),
            penalty: grid.penalty_raw(),
            stride: grid.stride(),
            marks,
            goal_i: g.goal_i,
            estimate: g.estimate,
            straight: g.estimate.costs.straight as u64,
            diagonal: g.estimate.costs.diagonal as u64,
            unsettled: g.unsettled,
            entered: (0, 0),
            extra: 0,
        };
        let end = kernel::run(&mut frontier, closed, budget, &mut counts, &mut backward);
        g.expansions = counts.expansions;
        g.unsettled = backward.unsettled;
        match end {
            End::Budget => TreeStep::Pending,
            End::Empty => {
                g.exhausted = true;
                TreeStep::Done
            }
            End::Done | End::Goal(_) | End::Limit => TreeStep::Done,
        }
    }
}

impl GoalTree {
    /// The cost of `cell`'s cheapest path to the goal, once it is settled.
    pub fn cost_from(&self, grid: &NavGrid, cell: Cell) -> Option<u64> {
        let i = grid.index(cell).ok()?;
        let g = self.growing.as_ref()?;
        if g.version != grid.version() || !self.is_settled(grid, cell) {
            return None;
        }
        if g.edited {
            return self.cost_now(grid, i, g.goal_i);
        }
        Some(self.scratch.nodes[i].g)
    }

    /// The cost on `grid` as it is now of the tree's path from cell index `i` to the goal (its
    /// steps' costs and the overlay's extras, as the search charges them); `None` if an edit
    /// made a step of it illegal.
    fn cost_now(&self, grid: &NavGrid, mut i: usize, goal_i: usize) -> Option<u64> {
        let mut cost = 0;
        while i != goal_i {
            let next = self.scratch.nodes[i].parent as usize;
            let extra = match self.scratch.overlay.get(next) {
                Some(&(s, e)) if s == self.scratch.generation && next != goal_i => {
                    if e == OVERLAY_BLOCKED {
                        return None;
                    }
                    e as u64
                }
                _ => 0,
            };
            cost += grid.step_cost(grid.cell_of(i), grid.cell_of(next))? + extra;
            i = next;
        }
        Some(cost)
    }

    /// The cheapest path from `start` to the goal, read off the tree: `None` until `start` is
    /// settled (never, if it has no path under the tree's overlay), or if the grid changed since
    /// the tree began (or since it last followed edits: [`GoalTree::follow_edits`]; a tree that
    /// followed edits checks the path against the grid and gives `None` if an edit broke it).
    pub fn path_from(&self, grid: &NavGrid, start: Cell) -> Option<Path> {
        let g = self.growing.as_ref()?;
        if g.version != grid.version() || !self.is_settled(grid, start) {
            return None;
        }
        let mut i = grid.index(start).ok()?;
        let cost = if g.edited {
            self.cost_now(grid, i, g.goal_i)?
        } else {
            self.scratch.nodes[i].g
        };
        let mut cells = vec![start];
        while i != g.goal_i {
            i = self.scratch.nodes[i].parent as usize;
            cells.push(grid.cell_of(i));
        }
        Some(Path {
            cost,
            length: grid.cells_length(&cells),
            expansions: g.expansions.min(u32::MAX as u64) as u32,
            goal: g.goal,
            goal_index: None,
            cells,
        })
    }
}

/// The tree in the kernel's loop: over reversed moves, every step onto a cell charged to the
/// cell it leaves toward the goal (the cell being expanded), until every start is settled.
struct Backward<'a, const MOVES: u8, const CUT: bool, const PENALTY: bool> {
    links: &'a LinkIndex,
    terrain: &'a [u8],
    penalty: &'a [u32],
    stride: usize,
    /// The marks are the starts.
    marks: Marks<'a>,
    goal_i: usize,
    estimate: Estimate,
    straight: u64,
    diagonal: u64,
    /// Starts not settled yet.
    unsettled: usize,
    /// The cost of entering the cell just closed, by a straight and by a diagonal step.
    entered: (u64, u64),
    /// The extra (penalty, overlay) of entering the cell just closed, which a crossing onto it
    /// pays beside the link's cost.
    extra: u64,
}

impl<const MOVES: u8, const CUT: bool, const PENALTY: bool> Expand
    for Backward<'_, MOVES, CUT, PENALTY>
{
    #[inline(always)]
    fn done(&self) -> bool {
        self.unsettled == 0
    }

    #[inline(always)]
    fn closed(&mut self, i: usize) -> Closed {
        if self.marks.marked(i) {
            self.unsettled -= 1;
        }
        // The cost of entering `i`, which every step from a neighbour onto it pays.
        let enter = self.terrain[i] as u64;
        if enter == BLOCKED as u64 && i != self.goal_i {
            // Blocked since the tree began ([`GoalTree::follow_edits`]): nothing passes
            // through it.
            return Closed::Skip;
        }
        let mut extra = 0u64;
        if PENALTY {
            extra = self.penalty[i] as u64;
            if i != self.goal_i {
                let e = self.marks.extra(i);
                if e == OVERLAY_BLOCKED {
                    // Nothing may pass through it (it was settled only as a start).
                    return Closed::Skip;
                }
                extra += e as u64;
            }
        }
        self.entered = (self.straight * enter + extra, self.diagonal * enter + extra);
        self.extra = extra;
        Closed::Expand
    }

    #[inline(always)]
    fn expand(&mut self, i: usize, frontier: &mut Frontier) -> u32 {
        let (terrain, stride, estimate, links) =
            (self.terrain, self.stride, self.estimate, self.links);
        let base = frontier.g(i);
        let (to_straight, to_diagonal) = (base + self.entered.0, base + self.entered.1);
        let x = (i % stride) as u32 - 1;
        let y = (i / stride) as u32 - 1;
        macro_rules! relax {
            ($j:expr, $diagonal:expr, $nx:expr, $ny:expr) => {{
                let ng = if $diagonal { to_diagonal } else { to_straight };
                let (j, nx, ny) = ($j, $nx, $ny);
                frontier.relax(i, j, ng, || estimate.h_links(nx, ny, links, j));
            }};
        }
        for_each_move!(MOVES, CUT, terrain, stride, i, x, y, relax);
        if links.any() {
            // Crossings onto `i`, walked back to their entries.
            for e in links.ending_at(i) {
                let j = e.from as usize;
                if terrain[j] != BLOCKED {
                    let (nx, ny) = ((j % stride) as u32 - 1, (j / stride) as u32 - 1);
                    let ng = base + e.cost + self.extra;
                    frontier.relax(i, j, ng, || estimate.h_links(nx, ny, links, j));
                }
            }
        }
        0
    }
}
