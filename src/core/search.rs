//! A* (and Dijkstra) over a [`NavGrid`]: flat node records stamped with a search generation so
//! nothing is cleared between searches, a binary heap ordered by F with ties toward larger G, and
//! a resumable [`AStar::step`] so one search can be spread over several frames.

use bevy::reflect::Reflect;
use std::cell::RefCell;

use super::cell::{BLOCKED, Cell};
use super::grid::{NavGrid, Topology};
use super::heuristic::{Heuristic, WEIGHT_ONE, weight_fixed};
use super::hex;
use super::jps;
use super::kernel::{
    self, CellOverlay, Closed, Counts, End, Expand, Frontier, HEX, KeyPacking, LinkEstimate, Marks,
    Monomorphised, OVERLAY_BLOCKED, Pages, Query, Scratch, for_each_move, overlay_extra,
};
use super::links::{ESTIMATED_ENDS, LinkIndex};
use super::path::{Path, PathError};

/// What to do when the goal is blocked or on another island than the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub enum GoalPolicy {
    /// Fail with [`PathError::GoalBlocked`] or [`PathError::Unreachable`] (the default).
    #[default]
    Fail,
    /// Go to the reachable cell nearest (straight-line) to the goal instead.
    NearestReachable,
}

/// How a search runs.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub struct SearchConfig {
    /// The heuristic (default octile).
    pub heuristic: Heuristic,
    /// Heuristic weight: 1.0 is plain A*; above 1.0 is weighted A* (faster, paths up to that
    /// factor longer than optimal).
    pub weight: f32,
    /// What to do with a blocked or unreachable goal.
    pub goal_policy: GoalPolicy,
    /// Give up with [`PathError::LimitExceeded`] after this many expansions (`None`: no limit).
    pub max_expansions: Option<u32>,
    /// Give up with [`PathError::LimitExceeded`] once every path left would cost more than this
    /// (fixed-point, as [`Path::cost`]; `None`: no limit). The search's estimate never
    /// overestimates, so a path costing at most this is never given up on (with a weight above
    /// 1.0, the limit is stretched by the weight to keep that so). A detour bound: a search whose
    /// goal is walled in stops near it instead of searching the whole map.
    pub max_cost: Option<u64>,
    /// Extra cost, in fixed-point units, of a step that changes direction (Lester's note 4 and
    /// Pinter's in-search alternative to smoothing: fewer turns, but still 45-degree ones, and
    /// costs are no longer plain distances). Judged against the parent link, as those articles
    /// do, so paths are not guaranteed optimal under this cost. 0 (the default) turns it off.
    pub turn_penalty: u32,
    /// Jump point search instead of plain A* on eight-way grids without corner cutting, of one
    /// terrain and without penalties (an overlay may vary costs): the same path costs, far
    /// fewer cells put on the open list (on the MovingAI maps 8-13 times faster than A*);
    /// nearest-of-several searches too (a jump stops at any of the goals). Other grids (where
    /// it is slower than A*) and searches with a turn penalty run A*
    /// ([`AStar::used_jump_points`] tells which ran).
    pub jump_points: bool,
}

impl SearchConfig {
    /// Whether a search with this configuration runs as a jump point search on `grid`
    /// (see [`SearchConfig::jump_points`]).
    pub(crate) fn jumps_on(&self, grid: &NavGrid) -> bool {
        self.jump_points && self.turn_penalty == 0 && grid.jump_points_apply()
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            heuristic: Heuristic::Octile,
            weight: 1.0,
            goal_policy: GoalPolicy::Fail,
            max_expansions: None,
            max_cost: None,
            turn_penalty: 0,
            jump_points: false,
        }
    }
}

/// Progress of a resumable search.
#[derive(Clone, Debug, PartialEq)]
pub enum SearchStep {
    /// The budget ran out before the search ended: call [`AStar::step`] again.
    Pending,
    /// The search reached its goal.
    Found(Path),
    /// The search ended without a path.
    Failed(PathError),
}

/// A reusable, resumable A* search.
///
/// Node records, the open list and overlays live in flat arrays that are stamped with a search
/// generation instead of being cleared (Lester's `onOpenList` numbers, Pinter's touched bits), so
/// once they have grown to the grid's size, searches allocate nothing but the returned path.
///
/// ```
/// use bevy_tilepath::core::{AStar, Cell, NavGrid, SearchConfig, SearchStep};
///
/// let mut grid = NavGrid::new(8, 8).unwrap();
/// grid.set_walkable(Cell::new(3, 3), false).unwrap();
/// let mut search = AStar::new();
/// search.begin(&grid, Cell::new(0, 0), Cell::new(7, 7), &SearchConfig::default()).unwrap();
/// // Spread the search over "frames" of at most 4 expansions each.
/// let path = loop {
///     match search.step(&grid, 4) {
///         SearchStep::Pending => continue,
///         SearchStep::Found(path) => break path,
///         SearchStep::Failed(e) => panic!("{e}"),
///     }
/// };
/// assert_eq!(path.cells.first(), Some(&Cell::new(0, 0)));
/// assert_eq!(path.cells.last(), Some(&Cell::new(7, 7)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct AStar {
    scratch: Scratch,
    active: Option<Query>,
    /// The configuration of the search in progress (kept to restart it).
    config: SearchConfig,
    /// The goals of the multi-goal search in progress (kept to restart it and to report which).
    goals: Vec<Cell>,
    /// The overlay of the search in progress (kept to restart it).
    overlay_list: Vec<(Cell, CellOverlay)>,
    /// Whether the search in progress (or the last one) is a jump point search.
    jumping: bool,
    /// Expansions of the last search, once it ended (found, failed or cancelled).
    ended_expansions: u64,
    /// Of those, the scans' share (see [`AStar::scan_expansions`]).
    ended_scans: u64,
}

impl AStar {
    /// An empty search; its arrays grow to the grid's size on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a search is in progress.
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// Abandons the search in progress, if any.
    pub fn cancel(&mut self) {
        self.end();
    }

    /// Ends the search in progress, if any, keeping its expansion count.
    fn end(&mut self) -> Option<Query> {
        let active = self.active.take();
        if let Some(a) = &active {
            self.ended_expansions = a.counts.expansions;
            self.ended_scans = a.counts.scans;
        }
        active
    }

    /// Whether the search in progress, or the last one, ran as a jump point search
    /// ([`SearchConfig::jump_points`], on a grid it runs on).
    pub fn used_jump_points(&self) -> bool {
        self.jumping
    }

    /// Expansions of the search in progress or of the last one (whether it found a path,
    /// failed or was cancelled); 0 before the first.
    pub fn expansions(&self) -> u64 {
        self.active
            .as_ref()
            .map_or(self.ended_expansions, |a| a.counts.expansions)
    }

    /// Of [`AStar::expansions`], those that stand for the cells a jump point search scanned or
    /// read from its jump table (one per 16) rather than for nodes taken off its open list: 0
    /// for A*. Budgets that cost work tell the two apart: a scanned cell costs a fraction of a
    /// node's expansion.
    pub fn scan_expansions(&self) -> u64 {
        self.active
            .as_ref()
            .map_or(self.ended_scans, |a| a.counts.scans)
    }

    /// Grows the scratch space to `grid`'s size now (and touches it), so the first search on it
    /// does not pay for the allocation.
    pub fn reserve_for(&mut self, grid: &NavGrid) {
        let len = grid.terrain_raw().len();
        if self.scratch.nodes.len() != len {
            self.scratch.next_generation(len, Pages::Touched);
            self.scratch.open.items.reserve(1024);
        }
    }

    /// The scratch memory this search holds, in bytes (grows to the largest grid searched).
    pub fn memory_bytes(&self) -> usize {
        self.scratch.memory_bytes()
    }

    /// Starts a search from `start` to `goal`.
    ///
    /// Fails at once, without searching, when an end is out of bounds or the start is blocked,
    /// and, under [`GoalPolicy::Fail`], when the goal is blocked or on another island.
    pub fn begin(
        &mut self,
        grid: &NavGrid,
        start: Cell,
        goal: Cell,
        config: &SearchConfig,
    ) -> Result<(), PathError> {
        self.begin_with_overlay(grid, start, goal, config, &[])
    }

    /// Like [`AStar::begin`], with per-search extra costs or blocks on some cells (the start and
    /// the goal are never blocked by an overlay).
    pub fn begin_with_overlay(
        &mut self,
        grid: &NavGrid,
        start: Cell,
        goal: Cell,
        config: &SearchConfig,
        overlay: &[(Cell, CellOverlay)],
    ) -> Result<(), PathError> {
        self.active = None;
        self.ended_expansions = 0;
        self.ended_scans = 0;
        let (start_i, goal) = resolve_ends(grid, start, goal, config.goal_policy)?;
        let goal_i = grid.index(goal).expect("resolved goal is in bounds");
        self.overlay_list.clear();
        self.overlay_list.extend_from_slice(overlay);
        self.start_search(grid, start_i, goal_i, goal, false, config);
        Ok(())
    }

    /// Starts a Dijkstra search from `start` to whichever of `goals` is cheapest to reach (Lester's
    /// "nearest of several targets"). [`Path::goal_index`] tells which goal was reached.
    /// Blocked, unreachable and out-of-bounds goals are skipped; if none is left the search fails
    /// with [`PathError::Unreachable`] (or [`PathError::NoGoals`] for an empty list).
    pub fn begin_nearest(
        &mut self,
        grid: &NavGrid,
        start: Cell,
        goals: &[Cell],
        config: &SearchConfig,
    ) -> Result<(), PathError> {
        self.begin_nearest_with_overlay(grid, start, goals, config, &[])
    }

    /// Like [`AStar::begin_nearest`], with per-search extra costs or blocks on some cells (as
    /// [`AStar::begin_with_overlay`]; the start and the goal found first are never blocked).
    pub fn begin_nearest_with_overlay(
        &mut self,
        grid: &NavGrid,
        start: Cell,
        goals: &[Cell],
        config: &SearchConfig,
        overlay: &[(Cell, CellOverlay)],
    ) -> Result<(), PathError> {
        self.active = None;
        self.ended_expansions = 0;
        self.ended_scans = 0;
        if goals.is_empty() {
            return Err(PathError::NoGoals);
        }
        let start_i = check_start(grid, start)?;
        let reach = reachable_islands(grid, start_i);
        self.goals.clear();
        self.goals.extend_from_slice(goals);
        self.overlay_list.clear();
        self.overlay_list.extend_from_slice(overlay);
        self.scratch
            .next_generation(grid.terrain_raw().len(), Pages::Touched);
        self.scratch.use_marks();
        let mark = self.scratch.generation;
        let mut any = None;
        for &g in goals {
            if let Ok(i) = grid.index(g)
                && on_islands(grid, i, &reach)
            {
                self.scratch.marks[i] = mark;
                any = Some((i, g));
            }
        }
        let Some((goal_i, goal)) = any else {
            return Err(PathError::Unreachable);
        };
        let config = SearchConfig {
            heuristic: Heuristic::Zero,
            ..*config
        };
        // start_search would bump the generation and lose the marks: keep the current one.
        self.scratch.generation -= 1;
        self.start_search(grid, start_i, goal_i, goal, true, &config);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn start_search(
        &mut self,
        grid: &NavGrid,
        start: usize,
        goal: usize,
        goal_cell: Cell,
        multi_goal: bool,
        config: &SearchConfig,
    ) {
        self.scratch
            .next_generation(grid.terrain_raw().len(), Pages::Touched);
        // Jump points where they win: on grids of one terrain without penalties (an overlay of
        // claims is local). Where terrain varies they are slower than A* (every cell next to
        // another cost is expanded in full, and jumps there are short: on the MovingAI maps
        // with a fifth of their cells swamp, 2.5-2.8 times A*'s time). A grid edited mid-search
        // restarts it, and this is decided again.
        self.jumping = config.jumps_on(grid);
        let overlay_max = self
            .scratch
            .apply_overlay(grid, &self.overlay_list, [start, goal]);
        let rules = grid.rules();
        let start_cell = grid.cell_of(start);
        let (dx, dy) = if grid.is_hex() {
            (hex::distance(start_cell, goal_cell), 0)
        } else {
            (
                start_cell.x.abs_diff(goal_cell.x),
                start_cell.y.abs_diff(goal_cell.y),
            )
        };
        let h = config.heuristic.estimate(
            dx,
            dy,
            rules.costs,
            grid.min_terrain() as u64,
            weight_fixed(config.weight),
        );
        let links = if config.heuristic == Heuristic::Zero || multi_goal || !grid.links_raw().any()
        {
            LinkEstimate::none()
        } else {
            link_estimate(grid, (start_cell, goal_cell), config.heuristic)
        };
        let packing = KeyPacking::new(grid, rules.costs, overlay_max);
        self.config = *config;
        let query = Query {
            start,
            goal,
            goal_x: goal_cell.x as u32,
            goal_y: goal_cell.y as u32,
            requested_goal: goal_cell,
            multi_goal,
            heuristic: config.heuristic,
            weight: weight_fixed(config.weight),
            min_terrain: grid.min_terrain() as u64,
            costs: rules.costs,
            turn_penalty: config.turn_penalty as u64,
            counts: Counts {
                expansions: 0,
                scans: 0,
                max_expansions: config.max_expansions.map_or(u64::MAX, u64::from),
                max_key: config.max_cost.map_or(u64::MAX, |c| {
                    packing.max_key(c, weight_fixed(config.weight))
                }),
            },
            grid_version: grid.version(),
            packing,
            links,
        };
        let h = query.through_links(
            h,
            start_cell.x as u32,
            start_cell.y as u32,
            grid.links_raw().entry_bound(start),
        );
        self.scratch.seed(start, packing.key(h, h));
        self.active = Some(query);
    }

    /// Advances the search by at most `max_expansions` node expansions, and at most that many
    /// pops of the open list counting outdated entries, so the time one call takes is bounded.
    ///
    /// If the grid changed since [`AStar::begin`], the search restarts on the new grid (same
    /// ends and settings; the expansion count carries over). Without an active search this
    /// returns [`PathError::NotStarted`].
    pub fn step(&mut self, grid: &NavGrid, max_expansions: u32) -> SearchStep {
        let Some(active) = self.active.as_ref() else {
            return SearchStep::Failed(PathError::NotStarted);
        };
        if active.grid_version != grid.version()
            && let Err(e) = self.restart(grid)
        {
            self.end();
            return SearchStep::Failed(e);
        }
        let penalties =
            !self.overlay_list.is_empty() || grid.has_penalties() || self.config.turn_penalty > 0;
        let end = if self.jumping {
            let query = self.active.as_mut().expect("a search is active");
            jps::run(
                &mut self.scratch,
                query,
                &self.overlay_list,
                grid,
                max_expansions,
            )
        } else {
            kernel::dispatch(self, grid, penalties, max_expansions)
        };
        let result = match end {
            End::Budget => return SearchStep::Pending,
            End::Goal(goal) => return SearchStep::Found(self.trace(grid, goal)),
            End::Empty | End::Done => PathError::NoPath,
            End::Limit => PathError::LimitExceeded {
                expansions: self.expansions() as u32,
            },
        };
        self.end();
        SearchStep::Failed(result)
    }

    fn restart(&mut self, grid: &NavGrid) -> Result<(), PathError> {
        let a = self.active.take().expect("restart needs an active search");
        let start = grid.cell_of(a.start);
        let goals = std::mem::take(&mut self.goals);
        let overlay = std::mem::take(&mut self.overlay_list);
        let config = self.config;
        if a.multi_goal {
            self.begin_nearest_with_overlay(grid, start, &goals, &config, &overlay)?;
        } else {
            self.begin_with_overlay(grid, start, a.requested_goal, &config, &overlay)?;
        }
        if let Some(n) = self.active.as_mut() {
            n.counts.expansions = a.counts.expansions;
        }
        Ok(())
    }

    fn trace(&mut self, grid: &NavGrid, goal: usize) -> Path {
        let active = self.end().expect("trace needs a finished search");
        // The path's padded cells, goal first.
        let mut points = vec![goal];
        let mut i = goal;
        while self.scratch.nodes[i].parent as usize != i {
            i = self.scratch.nodes[i].parent as usize;
            points.push(i);
        }
        points.reverse();
        let mut cells: Vec<Cell> = points.iter().map(|&i| grid.cell_of(i)).collect();
        if self.jumping {
            // Jump points: the lines between them filled in, but for links' crossings: two
            // points a crossing joins at the cost recorded between them (the crossing's cost
            // and the overlay's extra where it lands; a jump of the same cost may also join
            // them, but its line may be blocked where the crossing is not).
            let scratch = &self.scratch;
            let crossed = |k: usize| {
                let (a, b) = (points[k], points[k + 1]);
                let (ca, cb) = (cells[k], cells[k + 1]);
                let extra = overlay_extra(&scratch.overlay, scratch.generation, b) as u64;
                !grid.is_move(ca, cb)
                    && grid
                        .crossing_cost(ca, cb)
                        .is_some_and(|c| scratch.nodes[a].g + c + extra == scratch.nodes[b].g)
            };
            cells = jps::fill_jumps(&cells, crossed);
        }
        let goal_cell = grid.cell_of(goal);
        let goal_index = if active.multi_goal {
            self.goals.iter().position(|&g| g == goal_cell)
        } else {
            None
        };
        Path {
            length: grid.cells_length(&cells),
            cells,
            cost: self.scratch.nodes[goal].g,
            expansions: active.counts.expansions as u32,
            goal: goal_cell,
            goal_index,
        }
    }

    /// The cells closed (expanded) by the current or last search, for debug drawing.
    pub fn closed_cells(&self, grid: &NavGrid) -> Vec<Cell> {
        if self.scratch.nodes.len() != grid.terrain_raw().len() {
            return Vec::new();
        }
        self.scratch
            .closed_indices()
            .map(|i| grid.cell_of(i))
            .collect()
    }

    /// Entries currently in the open list (including stale duplicates).
    pub fn open_len(&self) -> usize {
        self.scratch.open.len()
    }
}

impl Monomorphised for AStar {
    type Out = End;

    /// The search's loop for these moves (see [`kernel::run`]).
    #[inline(never)]
    fn run<const MOVES: u8, const CUT: bool, const PENALTY: bool>(
        &mut self,
        grid: &NavGrid,
        budget: u32,
    ) -> End {
        let query = self.active.as_mut().expect("run needs an active search");
        let mut counts = query.counts;
        let closed = self.scratch.closed_stamp();
        let (mut frontier, marks) = self.scratch.split(query.packing);
        let mut forward = Forward::<MOVES, CUT, PENALTY> {
            query: &*query,
            links: grid.links_raw(),
            terrain: grid.terrain_raw(),
            penalty: grid.penalty_raw(),
            stride: grid.stride(),
            marks,
        };
        let end = kernel::run(&mut frontier, closed, budget, &mut counts, &mut forward);
        query.counts = counts;
        end
    }
}

/// A* in the kernel's loop: the goal (or a marked goal) ends it; every move onto a walkable cell
/// costs the step's length times the cell's terrain, plus (`PENALTY`) the cell's penalty, the
/// overlay's extra and a turn penalty; a link's crossing costs the link's cost instead of the
/// step's.
struct Forward<'a, const MOVES: u8, const CUT: bool, const PENALTY: bool> {
    query: &'a Query,
    links: &'a LinkIndex,
    terrain: &'a [u8],
    penalty: &'a [u32],
    stride: usize,
    marks: Marks<'a>,
}

impl<const MOVES: u8, const CUT: bool, const PENALTY: bool> Expand
    for Forward<'_, MOVES, CUT, PENALTY>
{
    #[inline(always)]
    fn closed(&mut self, i: usize) -> Closed {
        if i == self.query.goal || (self.query.multi_goal && self.marks.marked(i)) {
            Closed::Goal
        } else {
            Closed::Expand
        }
    }

    #[inline(always)]
    fn expand(&mut self, i: usize, frontier: &mut Frontier) -> u32 {
        let (q, terrain, penalty, stride) = (self.query, self.terrain, self.penalty, self.stride);
        let (overlay, generation) = (self.marks.overlay, self.marks.generation);
        let g = frontier.g(i);
        // Direction into `i` (0 at the start), for the turn penalty.
        let came_from = i as isize - frontier.parent(i) as isize;
        let x = (i % stride) as u32 - 1;
        let y = (i / stride) as u32 - 1;
        let (straight, diagonal) = (q.costs.straight as u64, q.costs.diagonal as u64);
        let links = self.links;
        let h_of = |j: usize, x: u32, y: u32| {
            let h = if MOVES == HEX {
                let dx = hex::distance(Cell::new(x as i32, y as i32), q.requested_goal);
                q.heuristic
                    .estimate(dx, 0, q.costs, q.min_terrain, q.weight)
            } else {
                q.h_square(x, y)
            };
            q.through_links(h, x, y, links.entry_bound(j))
        };
        macro_rules! relax {
            ($j:expr, $diagonal:expr, $nx:expr, $ny:expr) => {{
                let j: usize = $j;
                let base = if $diagonal { diagonal } else { straight };
                relax!(@cost j, base * terrain[j] as u64, $nx, $ny)
            }};
            (@cost $j:expr, $cost:expr, $nx:expr, $ny:expr) => {{
                let j: usize = $j;
                let mut step: u64 = $cost;
                let mut open_it = true;
                if PENALTY {
                    step += penalty[j] as u64;
                    if q.turn_penalty > 0
                        && came_from != 0
                        && (j as isize - i as isize) != came_from
                    {
                        step += q.turn_penalty;
                    }
                    let (s, extra) = overlay.get(j).copied().unwrap_or((0, 0));
                    if s == generation {
                        if extra == OVERLAY_BLOCKED {
                            open_it = false;
                        }
                        step += extra as u64;
                    }
                }
                if open_it {
                    let (nx, ny) = ($nx, $ny);
                    frontier.relax(i, j, g + step, || h_of(j, nx, ny));
                }
            }};
        }
        for_each_move!(MOVES, CUT, terrain, stride, i, x, y, relax);
        if links.any() {
            for e in links.starting_at(i) {
                let j = e.to as usize;
                if terrain[j] != BLOCKED {
                    relax!(@cost j, e.cost, (j % stride) as u32 - 1, (j / stride) as u32 - 1);
                }
            }
        }
        0
    }
}

fn check_start(grid: &NavGrid, start: Cell) -> Result<usize, PathError> {
    let i = grid
        .index(start)
        .map_err(|_| PathError::StartOutOfBounds(start))?;
    if grid.terrain_raw()[i] == BLOCKED {
        return Err(PathError::StartBlocked(start));
    }
    Ok(i)
}

/// Checks a nearest-of-several-goals query without searching: the start must be valid and at
/// least one goal reachable from it (on its island, or over links).
pub(crate) fn check_nearest(grid: &NavGrid, start: Cell, goals: &[Cell]) -> Result<(), PathError> {
    if goals.is_empty() {
        return Err(PathError::NoGoals);
    }
    let start_i = check_start(grid, start)?;
    let reach = reachable_islands(grid, start_i);
    if goals
        .iter()
        .any(|&g| grid.index(g).is_ok_and(|i| on_islands(grid, i, &reach)))
    {
        Ok(())
    } else {
        Err(PathError::Unreachable)
    }
}

/// Validates the ends of a query without searching and applies the goal policy: returns the
/// start's padded index and the goal actually searched for.
pub(crate) fn resolve_ends(
    grid: &NavGrid,
    start: Cell,
    goal: Cell,
    policy: GoalPolicy,
) -> Result<(usize, Cell), PathError> {
    let start_i = check_start(grid, start)?;
    let goal_i = grid
        .index(goal)
        .map_err(|_| PathError::GoalOutOfBounds(goal))?;
    let reach = reachable_islands(grid, start_i);
    if grid.terrain_raw()[goal_i] == BLOCKED {
        return match policy {
            GoalPolicy::Fail => Err(PathError::GoalBlocked(goal)),
            GoalPolicy::NearestReachable => nearest_on_islands(grid, goal, &reach)
                .map(|g| (start_i, g))
                .ok_or(PathError::Unreachable),
        };
    }
    if !on_islands(grid, goal_i, &reach) {
        return match policy {
            GoalPolicy::Fail => Err(PathError::Unreachable),
            GoalPolicy::NearestReachable => nearest_on_islands(grid, goal, &reach)
                .map(|g| (start_i, g))
                .ok_or(PathError::Unreachable),
        };
    }
    Ok((start_i, goal))
}

/// For each end of `crossings` (entry, exit, cost, by places), the least over the crossings
/// it enters of their cost plus `then` at their exit (`u64::MAX` for an end that enters none).
fn cheapest_across(crossings: &[(u32, u32, u64)], then: &[u64]) -> Vec<u64> {
    let mut across = vec![u64::MAX; then.len()];
    for &(from, to, cost) in crossings {
        let via = &mut across[from as usize];
        *via = (*via).min(cost.saturating_add(then[to as usize]));
    }
    across
}

/// The entries of `crossings` (entry, exit, cost, by places) whose term can lower a search's
/// estimate, with their least cost on to the goal, `on`: those whose path on starts with
/// their own crossing (from the others a path walks first, to another end, whose term covers
/// it) and is cheaper than walking, `to_goal` (by the triangle inequality of the open grid's
/// cost, an entry's walk on never lowers an estimate).
fn crossing_first(on: &[u64], to_goal: &[u64], crossings: &[(u32, u32, u64)]) -> Vec<(usize, u64)> {
    let first = cheapest_across(crossings, on);
    (0..on.len())
        .filter(|&k| first[k] == on[k] && on[k] < to_goal[k])
        .map(|k| (k, on[k]))
        .collect()
}

/// The least cost from each end of the grid's links to the goal, `to_goal` walking: on the
/// graph of the ends, to the entry of the last crossing a path takes (by the grid's table of
/// least costs to each end from every other, `to_end`, a row per end), across it, then
/// walking (`across`: [`cheapest_across`] of `to_goal`). A path with no crossing costs at least
/// the walk, so only the crossings whose exit's walk on beats their entry's are looked at.
fn least_to_goal(to_end: &[u32], to_goal: &[u64], across: &[u64]) -> Vec<u64> {
    // A crossing no cheaper than its entry's walk never helps: any path that takes it last
    // costs at least as much as the same path walking on from its entry, whose last crossing
    // (if any) comes earlier. Each of the others lowers every end's least cost at once, along
    // its entry's row: a loop without branches over 32-bit costs where they fit (the table's
    // are at most 2^30, and a crossing kept costs less than its entry's walk).
    let rows = to_end.chunks_exact(to_goal.len());
    let last = rows
        .zip(across.iter().zip(to_goal))
        .filter(|(_, (via, walk))| via < walk);
    if to_goal.iter().all(|&w| w < 1 << 31) {
        let mut least: Vec<u32> = to_goal.iter().map(|&w| w as u32).collect();
        for (row, (&via, _)) in last {
            let via = via as u32;
            for (at, &to) in least.iter_mut().zip(row) {
                *at = (*at).min(to + via);
            }
        }
        least.into_iter().map(u64::from).collect()
    } else {
        let mut least = to_goal.to_vec();
        for (row, (&via, _)) in last {
            for (at, &to) in least.iter_mut().zip(row) {
                *at = (*at).min(to as u64 + via);
            }
        }
        least
    }
}

/// What a path through `grid`'s links costs at least to `goal`, for a search's estimate
/// `heuristic` ([`LinkEstimate`]): the least cost from every end of an open crossing to the
/// goal on a graph of the ends alone, whose edges are the crossings and, between any two ends
/// and from any end to the goal, the open grid's cost (from the grid's table of least costs
/// between ends, [`LinkIndex::least_between_ends`](super::links::LinkIndex::least_between_ends),
/// and each end's walk to the goal). The entries whose cost is their own crossing's, and less
/// than their walk, keep it. Grids with more ends than [`ESTIMATED_ENDS`], estimates other
/// than the open grid's cost and searches whose start is nearer the goal than any way through
/// links get one bound for all instead.
fn link_estimate(
    grid: &NavGrid,
    (start, goal): (Cell, Cell),
    heuristic: Heuristic,
) -> LinkEstimate {
    let rules = grid.rules();
    let min_terrain = grid.min_terrain() as u64;
    let estimate = |a: Cell, b: Cell| {
        let (dx, dy) = if grid.is_hex() {
            (hex::distance(a, b), 0)
        } else {
            (a.x.abs_diff(b.x), a.y.abs_diff(b.y))
        };
        heuristic.estimate(dx, dy, rules.costs, min_terrain, WEIGHT_ONE)
    };
    let links = grid.links_raw();
    let mut out = LinkEstimate {
        hex: grid.is_hex(),
        octile: !grid.is_hex() && heuristic == Heuristic::Octile,
        ..LinkEstimate::none()
    };
    let (cells, crossings) = links.crossing_graph();
    // One bound for all where links cannot lower the estimate at the start (the ends far),
    // where there are too many ends, or where the estimate is not the open grid's cost (a
    // term's own bound needs it: the open-grid cost to the nearest end never passes the
    // estimate to any end; and the grid's table of costs between ends is made with it, by
    // whichever search comes first).
    let from_start = estimate(start, goal);
    let to_link = grid.index(start).map_or(0, |i| links.entry_bound(i)) * min_terrain;
    // On hexagons every estimate but zero is the open grid's cost (its steps are all straight).
    let open_grid_cost = match rules.topology {
        Topology::Hex => heuristic != Heuristic::Zero,
        Topology::Eight => heuristic == Heuristic::Octile,
        Topology::Four => heuristic == Heuristic::Manhattan,
    };
    let one_bound = |exit: u64| LinkEstimate {
        rest: exit,
        ..out.clone()
    };
    if !open_grid_cost || cells.len() > ESTIMATED_ENDS {
        return one_bound(links.exit_bound(false, |i| estimate(grid.cell_of(i), goal)));
    }
    let to_goal: Vec<u64> = cells.iter().map(|&c| estimate(c, goal)).collect();
    // From each entry, the least cost across one of its crossings and walking on; the least
    // of those is the least cost from any entry to the goal, its crossing included.
    let across = cheapest_across(crossings, &to_goal);
    let exit = across.iter().copied().min().unwrap_or(u64::MAX);
    if to_link.saturating_add(exit) >= from_start {
        return one_bound(exit);
    }
    let Some(between) = grid.link_table() else {
        return one_bound(exit);
    };
    let on = least_to_goal(between, &to_goal, &across);
    let crossed = crossing_first(&on, &to_goal, crossings);
    out.entries = crossed
        .into_iter()
        .map(|(k, cost)| (cells[k].x as u32, cells[k].y as u32, cost))
        .collect();
    out.entries
        .sort_unstable_by_key(|&(x, y, cost)| (cost, y, x));
    out
}

/// The islands a path from padded cell `start_i` can reach, its own among them (over open
/// links), sorted; none if the cell is blocked.
fn reachable_islands(grid: &NavGrid, start_i: usize) -> Vec<u32> {
    grid.island_raw(start_i)
        .map_or_else(Vec::new, |l| grid.island_reach(l, false))
}

/// Whether padded cell `i` is on one of the sorted `islands`.
fn on_islands(grid: &NavGrid, i: usize, islands: &[u32]) -> bool {
    grid.island_raw(i)
        .is_some_and(|l| islands.binary_search(&l).is_ok())
}

/// The cell of `island` nearest (straight-line, in grid space) to `target`, searched in growing
/// rings of cells.
pub fn nearest_on_island(grid: &NavGrid, target: Cell, island: Option<u32>) -> Option<Cell> {
    nearest_on_islands(grid, target, &[island?])
}

/// The cell of any of the sorted `islands` nearest (straight-line, in grid space) to `target`.
fn nearest_on_islands(grid: &NavGrid, target: Cell, islands: &[u32]) -> Option<Cell> {
    if islands.is_empty() {
        return None;
    }
    let max_r = grid.width().max(grid.height()) as i32;
    // A cell on ring r is at least r (squares) or r sqrt(3) / 2 (hexagons) from the target.
    let ring_gap = if grid.is_hex() { 0.75 } else { 1.0 };
    let at = grid.cell_center(target);
    let mut best: Option<(f32, Cell)> = None;
    for r in 0..=max_r {
        if let Some((d2, _)) = best
            && (r as f32) * (r as f32) * ring_gap > d2
        {
            break;
        }
        let mut visit = |c: Cell| {
            if grid
                .island(c)
                .is_some_and(|l| islands.binary_search(&l).is_ok())
            {
                let d2 = grid.cell_center(c).distance_squared(at);
                if best.is_none_or(|(b, bc)| d2 < b || (d2 == b && (c.y, c.x) < (bc.y, bc.x))) {
                    best = Some((d2, c));
                }
            }
        };
        if r == 0 {
            visit(target);
            continue;
        }
        for k in -r..=r {
            visit(target + Cell::new(k, -r));
            visit(target + Cell::new(k, r));
        }
        for k in -r + 1..r {
            visit(target + Cell::new(-r, k));
            visit(target + Cell::new(r, k));
        }
    }
    best.map(|(_, c)| c)
}

thread_local! {
    static SCRATCH: RefCell<AStar> = RefCell::new(AStar::new());
}

/// Runs a whole search at once with this thread's reusable scratch space.
///
/// ```
/// use bevy_tilepath::core::{find_path, Cell, NavGrid, SearchConfig};
///
/// let grid = NavGrid::new(10, 10).unwrap();
/// let path = find_path(&grid, Cell::new(0, 0), Cell::new(3, 0), &SearchConfig::default()).unwrap();
/// assert_eq!(path.length, 3.0);
/// ```
pub fn find_path(
    grid: &NavGrid,
    start: Cell,
    goal: Cell,
    config: &SearchConfig,
) -> Result<Path, PathError> {
    with_scratch(|search| {
        search.begin(grid, start, goal, config)?;
        search.finish(grid)
    })
}

/// Finds the cheapest of several goals with Dijkstra's algorithm (see [`AStar::begin_nearest`]).
///
/// ```
/// use bevy_tilepath::core::{find_nearest, Cell, NavGrid, SearchConfig};
///
/// let grid = NavGrid::new(10, 10).unwrap();
/// let goals = [Cell::new(9, 9), Cell::new(2, 1), Cell::new(0, 9)];
/// let path = find_nearest(&grid, Cell::new(0, 0), &goals, &SearchConfig::default()).unwrap();
/// assert_eq!(path.goal, Cell::new(2, 1));
/// ```
pub fn find_nearest(
    grid: &NavGrid,
    start: Cell,
    goals: &[Cell],
    config: &SearchConfig,
) -> Result<Path, PathError> {
    with_scratch(|search| {
        search.begin_nearest(grid, start, goals, config)?;
        search.finish(grid)
    })
}

/// Runs `f` with this thread's reusable search (a fresh one if it is already in use), so worker
/// threads keep one scratch each across searches.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut AStar) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut search) => f(&mut search),
        // Re-entered from inside a search callback: use a fresh scratch.
        Err(_) => f(&mut AStar::new()),
    })
}

impl AStar {
    /// Steps the search until it ends.
    pub fn finish(&mut self, grid: &NavGrid) -> Result<Path, PathError> {
        self.finish_in_slices(grid, u32::MAX, || {})
    }

    /// Steps the search until it ends, `slice` heap pops at a time, calling `between` after
    /// every slice that did not end it (a worker thread can give way there).
    pub fn finish_in_slices(
        &mut self,
        grid: &NavGrid,
        slice: u32,
        mut between: impl FnMut(),
    ) -> Result<Path, PathError> {
        loop {
            match self.step(grid, slice) {
                SearchStep::Pending => between(),
                SearchStep::Found(p) => return Ok(p),
                SearchStep::Failed(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::NavGrid;
    use super::super::links::Link;
    use super::super::test_rng::below;
    use super::*;

    /// The least cost from each link end to the goal, found through the crossings taken last
    /// only, is the least over every end of the way there plus its walk on (the whole table,
    /// read the plain way), with one-way crossings, on 32-bit costs and on costs too big for
    /// them.
    #[test]
    fn the_least_cost_on_from_each_end_reads_only_the_crossings_taken_last() {
        let mut next = below(7);
        for round in 0..200 {
            let n = 1 + next(12) as usize;
            let ends: Vec<Cell> = (0..n)
                .map(|_| Cell::new(next(40) as i32, next(40) as i32))
                .collect();
            let goal = Cell::new(next(40) as i32, next(40) as i32);
            let walk = |a: Cell, b: Cell| {
                let (dx, dy) = (a.x.abs_diff(b.x) as u64, a.y.abs_diff(b.y) as u64);
                super::super::heuristic::octile(dx, dy, 2, 3)
            };
            let crossings: Vec<(u32, u32, u64)> = (0..next(2 * n as u32 + 1))
                .map(|_| (next(n as u32), next(n as u32), next(20) as u64))
                .collect();
            // The least costs between ends, row `a` column `b` from `a` to `b` (Floyd and
            // Warshall's algorithm), and the table the estimate reads: a row per end, to it.
            let mut from = vec![0u64; n * n];
            for a in 0..n {
                for b in 0..n {
                    from[a * n + b] = walk(ends[a], ends[b]);
                }
            }
            for &(a, b, c) in &crossings {
                let at = &mut from[a as usize * n + b as usize];
                *at = (*at).min(c);
            }
            for k in 0..n {
                for a in 0..n {
                    for b in 0..n {
                        from[a * n + b] = from[a * n + b].min(from[a * n + k] + from[k * n + b]);
                    }
                }
            }
            let to_end: Vec<u32> = (0..n * n)
                .map(|i| from[(i % n) * n + i / n] as u32)
                .collect();
            // Every other round, walks to the goal too dear for 32 bits (the same added to all).
            let far = if round % 2 == 0 { 0 } else { 3 << 30 };
            let to_goal: Vec<u64> = ends.iter().map(|&e| walk(e, goal) + far).collect();
            let want: Vec<u64> = (0..n)
                .map(|e| (0..n).map(|f| from[e * n + f] + to_goal[f]).min().unwrap())
                .collect();
            let across = cheapest_across(&crossings, &to_goal);
            assert_eq!(
                least_to_goal(&to_end, &to_goal, &across),
                want,
                "round {round}"
            );
        }
    }

    /// With links, a search's estimate never passes the cost left to the goal, and between
    /// any two cells it drops by no more than the way between them costs (consistent), for
    /// searches with a term per entry and searches with one bound for all, after the cheapest
    /// terrain changes or a link closes too.
    #[test]
    fn the_estimate_through_links_is_admissible_and_consistent() {
        let mut next = below(29);
        let (mut with_terms, mut dearer_with_terms) = (0, 0);
        for round in 0..120 {
            let (w, h) = (14 + next(6) as i32, 14 + next(6) as i32);
            let mut grid = NavGrid::new(w as u32, h as u32).unwrap();
            for _ in 0..next(40) {
                let c = Cell::new(next(w as u32) as i32, next(h as u32) as i32);
                grid.set_walkable(c, false).unwrap();
            }
            let cell = |next: &mut dyn FnMut(u32) -> u32| {
                Cell::new(next(w as u32) as i32, next(h as u32) as i32)
            };
            for _ in 0..1 + next(3) {
                let (a, b) = (cell(&mut next), cell(&mut next));
                let cost = next(4) as f32;
                let link = if next(2) == 0 {
                    Link::two_way(a, b, cost)
                } else {
                    Link::one_way(a, b, cost)
                };
                let _ = grid.add_link(link);
            }
            let (start, goal) = (Cell::new(0, 0), Cell::new(w - 1, h - 1));
            grid.set_walkable(start, true).unwrap();
            grid.set_walkable(goal, true).unwrap();
            let config = SearchConfig::default();
            let mut search = AStar::new();
            if search.begin(&grid, start, goal, &config).is_err() {
                continue;
            }
            // After a first search made the table of costs between the links' ends: a change
            // to the cheapest terrain, or a link closed.
            match round % 3 {
                1 => {
                    for c in grid
                        .cells()
                        .filter(|&c| grid.is_walkable(c))
                        .collect::<Vec<_>>()
                    {
                        grid.set_terrain(c, 2).unwrap();
                    }
                }
                2 => {
                    let first = grid.links().next().map(|(id, _)| id);
                    if let Some(id) = first {
                        grid.set_link_open(id, false).unwrap();
                    }
                }
                _ => {}
            }
            if search.begin(&grid, start, goal, &config).is_err() {
                continue;
            }
            let query = search.active.clone().expect("begun");
            with_terms += usize::from(!query.links.entries.is_empty());
            dearer_with_terms += usize::from(round % 3 == 1 && !query.links.entries.is_empty());
            let estimate = |c: Cell| {
                let i = grid.index(c).unwrap();
                let (x, y) = (c.x as u32, c.y as u32);
                query.through_links(query.h_square(x, y), x, y, grid.links_raw().entry_bound(i))
            };
            let cost = |a: Cell, b: Cell| find_path(&grid, a, b, &config).ok().map(|p| p.cost);
            for c in grid.cells().filter(|&c| grid.is_walkable(c)) {
                if let Some(left) = cost(c, goal) {
                    assert!(estimate(c) <= left, "round {round}: {c:?} over {left}");
                }
                let near = (-1..=1).flat_map(|dy| (-1..=1).map(move |dx| Cell::new(dx, dy)));
                let ends: Vec<Cell> = grid
                    .links()
                    .flat_map(|(_, l)| l.crossings())
                    .filter(|&(a, _)| a == c)
                    .map(|(_, b)| b)
                    .chain(near.map(|d| c + d))
                    .filter(|&n| n != c && grid.is_walkable(n))
                    .collect();
                for n in ends {
                    if let Some(way) = cost(c, n) {
                        assert!(
                            estimate(c) <= way + estimate(n),
                            "round {round}: {c:?} -> {n:?}"
                        );
                    }
                }
            }
        }
        assert!(with_terms > 10, "searches with terms: {with_terms}");
        assert!(
            dearer_with_terms > 3,
            "on dearer terrain: {dearer_with_terms}"
        );
    }
}
