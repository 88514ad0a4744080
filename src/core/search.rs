//! A* (and Dijkstra) over a [`NavGrid`]: flat node records stamped with a search generation so
//! nothing is cleared between searches, a binary heap ordered by F with ties toward larger G, and
//! a resumable [`AStar::step`] so one search can be spread over several frames.

use bevy::reflect::Reflect;
use std::cell::RefCell;

use super::cost::CostModel;
use super::grid::{BLOCKED, Cell, CornerRule, NavGrid, Topology};
use super::heuristic::{Heuristic, weight_fixed};
use super::hex;
use super::path::{Path, PathError};
use super::zeroed::{Zeroed, grow_zeroed};

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

/// Extra cost on a cell for one search only, e.g. cells claimed or occupied by other units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellOverlay {
    /// Add this many fixed-point cost units to steps onto the cell.
    Penalty(u32),
    /// Treat the cell as blocked (it stays walkable for island checks).
    Blocked,
}

pub(super) const OVERLAY_BLOCKED: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct NodeRecord {
    pub(super) g: u64,
    pub(super) parent: u32,
    /// `2 * generation` = open this search, `2 * generation + 1` = closed; older = untouched.
    pub(super) stamp: u32,
}

// SAFETY: integers only.
unsafe impl Zeroed for NodeRecord {}

#[derive(Clone, Copy, Debug)]
pub(super) struct HeapEntry {
    /// `F << 16 | tie-break`, where the tie-break is the remaining estimate H in sixteenths of a
    /// tile (saturated): among equal F, the entry with less H to go (more G done) comes first.
    /// On grids where F might not fit in 48 bits the key is plain F (ties broken arbitrarily).
    pub(super) key: u64,
    pub(super) node: u32,
}

impl HeapEntry {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.key
    }
}

/// How F and H are packed into a heap key for one search.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeyPacking {
    f_shift: u32,
    h_shift: u32,
    h_mask: u64,
}

impl KeyPacking {
    pub(super) fn new(grid: &NavGrid, costs: CostModel, overlay_max: u32) -> Self {
        // Upper bound of any F: every cell visited at the dearest step, plus the largest estimate.
        let cells = (grid.width() as u128 + 2) * (grid.height() as u128 + 2);
        let step = costs.diagonal.max(costs.straight) as u128 * 255
            + grid.max_penalty() as u128
            + overlay_max as u128;
        let bound = cells * step * 2;
        if bound < (1u128 << 48) {
            // Sixteenths of a straight step.
            let h_shift = (31 - costs.straight.max(1).leading_zeros()).saturating_sub(4);
            KeyPacking {
                f_shift: 16,
                h_shift,
                h_mask: 0xFFFF,
            }
        } else {
            KeyPacking {
                f_shift: 0,
                h_shift: 0,
                h_mask: 0,
            }
        }
    }

    #[inline(always)]
    pub(super) fn key(&self, f: u64, h: u64) -> u64 {
        (f << self.f_shift) | ((h >> self.h_shift).min(self.h_mask))
    }
}

/// A 4-ary min-heap of [`HeapEntry`] (lazy: a node may appear more than once; stale copies are
/// skipped because their node is already closed when they surface). Four children per node halve
/// the depth of a binary heap and keep siblings in one cache line; measured faster than binary
/// on the MovingAI maps (see the README's performance section).
#[derive(Clone, Debug, Default)]
pub(super) struct OpenList {
    pub(super) items: Vec<HeapEntry>,
}

const ARITY: usize = 4;

impl OpenList {
    #[inline(always)]
    pub(super) fn push(&mut self, e: HeapEntry) {
        let key = e.key();
        let mut pos = self.items.len();
        self.items.push(e);
        let items = &mut self.items[..];
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            let p = items[parent];
            if p.key() <= key {
                break;
            }
            items[pos] = p;
            pos = parent;
        }
        items[pos] = e;
    }

    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<HeapEntry> {
        let last = self.items.pop()?;
        let items = &mut self.items[..];
        let len = items.len();
        if len == 0 {
            return Some(last);
        }
        let top = items[0];
        let key = last.key();
        let mut pos = 0;
        loop {
            let first = ARITY * pos + 1;
            if first >= len {
                break;
            }
            let mut child = first;
            let mut child_key = items[first].key();
            let end = (first + ARITY).min(len);
            for (c, item) in items.iter().enumerate().take(end).skip(first + 1) {
                let k = item.key();
                if k < child_key {
                    child = c;
                    child_key = k;
                }
            }
            if key <= child_key {
                break;
            }
            items[pos] = items[child];
            pos = child;
        }
        items[pos] = last;
        Some(top)
    }

    pub(super) fn clear(&mut self) {
        self.items.clear();
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

/// State of the search in progress.
#[derive(Clone, Debug)]
pub(super) struct Active {
    pub(super) start: usize,
    /// Goal index for single-goal searches.
    pub(super) goal: usize,
    pub(super) goal_x: u32,
    pub(super) goal_y: u32,
    pub(super) requested_goal: Cell,
    pub(super) multi_goal: bool,
    pub(super) heuristic: Heuristic,
    pub(super) weight: u64,
    pub(super) min_terrain: u64,
    pub(super) costs: CostModel,
    pub(super) max_expansions: u64,
    pub(super) expansions: u64,
    /// Of `expansions`, those standing for cells a jump point search scanned or read from its
    /// table (see [`AStar::scan_expansions`]).
    pub(super) scans: u64,
    pub(super) grid_version: u64,
    pub(super) config: SearchConfig,
    pub(super) packing: KeyPacking,
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
    pub(super) nodes: Vec<NodeRecord>,
    pub(super) open: OpenList,
    /// Per-cell goal marks (multi-goal searches) stamped with the generation.
    pub(super) goal_marks: Vec<u32>,
    /// Per-cell overlay: `(generation, extra)`.
    pub(super) overlay: Vec<(u32, u32)>,
    pub(super) generation: u32,
    pub(super) active: Option<Active>,
    /// The goals of the multi-goal search in progress (kept to restart it and to report which).
    pub(super) goals: Vec<Cell>,
    /// The overlay of the search in progress (kept to restart it).
    pub(super) overlay_list: Vec<(Cell, CellOverlay)>,
    /// Per-cell marks of jump point search where costs vary (see `jps`), stamped with the
    /// generation.
    pub(super) jump_memo: Vec<u32>,
    /// Whether the search in progress (or the last one) is a jump point search.
    pub(super) jumping: bool,
    /// Expansions of the last search, once it ended (found, failed or cancelled).
    pub(super) ended_expansions: u64,
    /// Of those, the scans' share (see [`AStar::scan_expansions`]).
    pub(super) ended_scans: u64,
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
    pub(super) fn end(&mut self) -> Option<Active> {
        let active = self.active.take();
        if let Some(a) = &active {
            self.ended_expansions = a.expansions;
            self.ended_scans = a.scans;
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
            .map_or(self.ended_expansions, |a| a.expansions)
    }

    /// Of [`AStar::expansions`], those that stand for the cells a jump point search scanned or
    /// read from its jump table (one per 16) rather than for nodes taken off its open list: 0
    /// for A*. Budgets that cost work tell the two apart: a scanned cell costs a fraction of a
    /// node's expansion.
    pub fn scan_expansions(&self) -> u64 {
        self.active.as_ref().map_or(self.ended_scans, |a| a.scans)
    }

    fn next_generation(&mut self, len: usize) {
        if self.nodes.len() != len {
            // Written, not zeroed by the allocator: the pages are touched here, where
            // `reserve_for` is called, not in a budgeted search.
            self.nodes.clear();
            self.nodes.resize(len, NodeRecord::default());
            // Goal marks and overlays grow only when a search uses them.
            self.goal_marks.clear();
            self.overlay.clear();
            self.jump_memo.clear();
            self.generation = 0;
        }
        if self.generation >= u32::MAX / 2 - 1 {
            self.nodes.fill(NodeRecord::default());
            self.goal_marks.fill(0);
            self.overlay.fill((0, 0));
            self.jump_memo.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
        self.open.clear();
    }

    /// Grows the scratch space to `grid`'s size now (and touches it), so the first search on it
    /// does not pay for the allocation.
    pub fn reserve_for(&mut self, grid: &NavGrid) {
        let len = grid.terrain_raw().len();
        if self.nodes.len() != len {
            self.next_generation(len);
            self.open.items.reserve(1024);
        }
    }

    /// The scratch memory this search holds, in bytes (grows to the largest grid searched).
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<NodeRecord>()
            + self.open.items.capacity() * std::mem::size_of::<HeapEntry>()
            + self.goal_marks.capacity() * 4
            + self.overlay.capacity() * 8
            + self.jump_memo.capacity() * 4
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
        let island = grid.island_raw(start_i);
        self.goals.clear();
        self.goals.extend_from_slice(goals);
        self.overlay_list.clear();
        self.overlay_list.extend_from_slice(overlay);
        self.next_generation(grid.terrain_raw().len());
        grow_zeroed(&mut self.goal_marks, self.nodes.len());
        let mark = self.generation;
        let mut any = None;
        for &g in goals {
            if let Ok(i) = grid.index(g)
                && grid.island_raw(i) == island
            {
                self.goal_marks[i] = mark;
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
        self.generation -= 1;
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
        self.next_generation(grid.terrain_raw().len());
        // Jump points where they win: on grids of one terrain without penalties (an overlay of
        // claims is local). Where terrain varies they are slower than A* (every cell next to
        // another cost is expanded in full, and jumps there are short: on the MovingAI maps
        // with a fifth of their cells swamp, 2.5-2.8 times A*'s time). A grid edited mid-search
        // restarts it, and this is decided again.
        self.jumping = config.jumps_on(grid);
        let generation = self.generation;
        let mut overlay_max = 0;
        if !self.overlay_list.is_empty() {
            grow_zeroed(&mut self.overlay, self.nodes.len());
        }
        for &(cell, o) in &self.overlay_list {
            if let Ok(i) = grid.index(cell)
                && i != start
                && i != goal
            {
                let extra = match o {
                    CellOverlay::Penalty(p) => p.min(OVERLAY_BLOCKED - 1),
                    CellOverlay::Blocked => OVERLAY_BLOCKED,
                };
                if extra != OVERLAY_BLOCKED {
                    overlay_max = overlay_max.max(extra);
                }
                let slot = &mut self.overlay[i];
                slot.1 = if slot.0 == generation {
                    extra.max(slot.1)
                } else {
                    extra
                };
                slot.0 = generation;
            }
        }
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
        let active = Active {
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
            max_expansions: config.max_expansions.map_or(u64::MAX, u64::from),
            expansions: 0,
            scans: 0,
            grid_version: grid.version(),
            config: *config,
            packing: KeyPacking::new(grid, rules.costs, overlay_max),
        };
        self.nodes[start] = NodeRecord {
            g: 0,
            parent: start as u32,
            stamp: 2 * generation,
        };
        self.open.push(HeapEntry {
            key: active.packing.key(h, h),
            node: start as u32,
        });
        self.active = Some(active);
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
        let rules = grid.rules();
        let penalties = !self.overlay_list.is_empty()
            || grid.has_penalties()
            || self
                .active
                .as_ref()
                .is_some_and(|a| a.config.turn_penalty > 0);
        let result = match (rules.topology, rules.corner_rule, penalties) {
            _ if self.jumping => self.run_jumps(grid, max_expansions),
            (Topology::Four, _, false) => self.run::<FOUR, false, false>(grid, max_expansions),
            (Topology::Four, _, true) => self.run::<FOUR, false, true>(grid, max_expansions),
            (Topology::Eight, CornerRule::NoCutting, false) => {
                self.run::<EIGHT, false, false>(grid, max_expansions)
            }
            (Topology::Eight, CornerRule::NoCutting, true) => {
                self.run::<EIGHT, false, true>(grid, max_expansions)
            }
            (Topology::Eight, CornerRule::AllowCutting, false) => {
                self.run::<EIGHT, true, false>(grid, max_expansions)
            }
            (Topology::Eight, CornerRule::AllowCutting, true) => {
                self.run::<EIGHT, true, true>(grid, max_expansions)
            }
            (Topology::Hex, _, false) => self.run::<HEX, false, false>(grid, max_expansions),
            (Topology::Hex, _, true) => self.run::<HEX, false, true>(grid, max_expansions),
        };
        match result {
            None => SearchStep::Pending,
            Some(Ok(goal)) => SearchStep::Found(self.trace(grid, goal)),
            Some(Err(e)) => SearchStep::Failed(e),
        }
    }

    fn restart(&mut self, grid: &NavGrid) -> Result<(), PathError> {
        let a = self.active.take().expect("restart needs an active search");
        let start = grid.cell_of(a.start);
        let goals = std::mem::take(&mut self.goals);
        let overlay = std::mem::take(&mut self.overlay_list);
        if a.multi_goal {
            self.begin_nearest_with_overlay(grid, start, &goals, &a.config, &overlay)?;
        } else {
            self.begin_with_overlay(grid, start, a.requested_goal, &a.config, &overlay)?;
        }
        if let Some(n) = self.active.as_mut() {
            n.expansions = a.expansions;
        }
        Ok(())
    }

    /// The inner loop. Returns `None` when the budget ran out, else the goal index or an error.
    #[inline(never)]
    fn run<const MOVES: u8, const CUT: bool, const PENALTY: bool>(
        &mut self,
        grid: &NavGrid,
        budget: u32,
    ) -> Option<Result<usize, PathError>> {
        let active = self.active.as_mut().expect("run needs an active search");
        let terrain = grid.terrain_raw();
        let penalty = grid.penalty_raw();
        let stride = grid.stride();
        let nodes = &mut self.nodes[..];
        let overlay = &self.overlay[..];
        let goal_marks = &self.goal_marks[..];
        let open = &mut self.open;
        let generation = self.generation;
        let open_stamp = 2 * generation;
        let closed_stamp = open_stamp + 1;
        let straight = active.costs.straight as u64;
        let diagonal = active.costs.diagonal as u64;
        let mut left = budget;
        let a = &*active;
        let h_of = |x: u32, y: u32| {
            let (dx, dy) = if MOVES == HEX {
                (
                    hex::distance(Cell::new(x as i32, y as i32), a.requested_goal),
                    0,
                )
            } else {
                (x.abs_diff(a.goal_x), y.abs_diff(a.goal_y))
            };
            a.heuristic
                .estimate(dx, dy, a.costs, a.min_terrain, a.weight)
        };
        let goal = a.goal;
        let packing = a.packing;
        let multi = a.multi_goal;
        let mut expansions = a.expansions;
        let max_expansions = a.max_expansions;
        let turn_penalty = a.config.turn_penalty as u64;
        let result = loop {
            if left == 0 {
                break None;
            }
            let Some(top) = open.pop() else {
                break Some(Err(PathError::NoPath));
            };
            // Every pop counts against the slice, stale ones too: where terrain costs vary, open
            // cells are improved again and again, and their outdated heap entries can outnumber
            // the expansions many times over in one stretch (measured: 11,000 pops in a slice of
            // 256 expansions on a 512 x 512 map, 1.2 ms instead of 20 us).
            left -= 1;
            let i = top.node as usize;
            if nodes[i].stamp == closed_stamp {
                continue;
            }
            nodes[i].stamp = closed_stamp;
            if i == goal || (multi && goal_marks[i] == generation) {
                break Some(Ok(i));
            }
            if expansions >= max_expansions {
                break Some(Err(PathError::LimitExceeded {
                    expansions: expansions as u32,
                }));
            }
            expansions += 1;
            let g = nodes[i].g;
            // Direction into `i` (0 at the start), for the turn penalty.
            let came_from = i as isize - nodes[i].parent as isize;
            let x = (i % stride) as u32 - 1;
            let y = (i / stride) as u32 - 1;
            // A macro rather than a closure: the closure was not inlined (measured: a quarter of
            // the search time went to calling it).
            macro_rules! relax {
                ($j:expr, $base:expr, $nx:expr, $ny:expr) => {{
                    let j: usize = $j;
                    let mut step = $base * terrain[j] as u64;
                    let mut open_it = true;
                    if PENALTY {
                        step += penalty[j] as u64;
                        if turn_penalty > 0
                            && came_from != 0
                            && (j as isize - i as isize) != came_from
                        {
                            step += turn_penalty;
                        }
                        let (s, extra) = overlay.get(j).copied().unwrap_or((0, 0));
                        if s == generation {
                            if extra == OVERLAY_BLOCKED {
                                open_it = false;
                            }
                            step += extra as u64;
                        }
                    }
                    let ng = g + step;
                    let r = &mut nodes[j];
                    if open_it && (r.stamp < open_stamp || (r.stamp == open_stamp && ng < r.g)) {
                        r.g = ng;
                        r.parent = i as u32;
                        r.stamp = open_stamp;
                        let h = h_of($nx, $ny);
                        open.push(HeapEntry {
                            key: packing.key(ng + h, h),
                            node: j as u32,
                        });
                    }
                }};
            }
            let (n, s, w, e) = (i - stride, i + stride, i - 1, i + 1);
            let (tn, ts, tw, te) = (terrain[n], terrain[s], terrain[w], terrain[e]);
            if tn != BLOCKED {
                relax!(n, straight, x, y.wrapping_sub(1));
            }
            if ts != BLOCKED {
                relax!(s, straight, x, y + 1);
            }
            if tw != BLOCKED {
                relax!(w, straight, x.wrapping_sub(1), y);
            }
            if te != BLOCKED {
                relax!(e, straight, x + 1, y);
            }
            if MOVES == HEX {
                // Axial (1, -1) and (-1, 1): the other two of a hexagon's six neighbours.
                if terrain[n + 1] != BLOCKED {
                    relax!(n + 1, straight, x + 1, y.wrapping_sub(1));
                }
                if terrain[s - 1] != BLOCKED {
                    relax!(s - 1, straight, x.wrapping_sub(1), y + 1);
                }
            }
            if MOVES == EIGHT {
                let ok = |a: u8, b: u8| {
                    if CUT {
                        a != BLOCKED || b != BLOCKED
                    } else {
                        a != BLOCKED && b != BLOCKED
                    }
                };
                if ok(tn, tw) && terrain[n - 1] != BLOCKED {
                    relax!(n - 1, diagonal, x.wrapping_sub(1), y.wrapping_sub(1));
                }
                if ok(tn, te) && terrain[n + 1] != BLOCKED {
                    relax!(n + 1, diagonal, x + 1, y.wrapping_sub(1));
                }
                if ok(ts, tw) && terrain[s - 1] != BLOCKED {
                    relax!(s - 1, diagonal, x.wrapping_sub(1), y + 1);
                }
                if ok(ts, te) && terrain[s + 1] != BLOCKED {
                    relax!(s + 1, diagonal, x + 1, y + 1);
                }
            }
        };
        active.expansions = expansions;
        if result.is_some() {
            // Keep the expansion count readable but mark the search finished in `trace`/errors.
            if let Some(Err(_)) = result {
                self.end();
            }
        }
        result
    }

    fn trace(&mut self, grid: &NavGrid, goal: usize) -> Path {
        let active = self.end().expect("trace needs a finished search");
        let mut cells = Vec::new();
        let mut i = goal;
        loop {
            cells.push(grid.cell_of(i));
            let p = self.nodes[i].parent as usize;
            if p == i {
                break;
            }
            i = p;
        }
        cells.reverse();
        if self.jumping {
            // Jump points: the lines between them filled in.
            cells = super::jps::fill_jumps(&cells);
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
            cost: self.nodes[goal].g,
            expansions: active.expansions as u32,
            goal: goal_cell,
            goal_index,
        }
    }

    /// The cells closed (expanded) by the current or last search, for debug drawing.
    pub fn closed_cells(&self, grid: &NavGrid) -> Vec<Cell> {
        let closed = 2 * self.generation + 1;
        if self.nodes.len() != grid.terrain_raw().len() {
            return Vec::new();
        }
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].stamp == closed)
            .map(|i| grid.cell_of(i))
            .collect()
    }

    /// Entries currently in the open list (including stale duplicates).
    pub fn open_len(&self) -> usize {
        self.open.len()
    }
}

/// Move sets of the inner loops: four-way, eight-way and hexagonal.
pub(crate) const FOUR: u8 = 0;
pub(crate) const EIGHT: u8 = 1;
pub(crate) const HEX: u8 = 2;

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
/// least one goal on its island.
pub(crate) fn check_nearest(grid: &NavGrid, start: Cell, goals: &[Cell]) -> Result<(), PathError> {
    if goals.is_empty() {
        return Err(PathError::NoGoals);
    }
    let start_i = check_start(grid, start)?;
    let island = grid.island_raw(start_i);
    if goals
        .iter()
        .any(|&g| grid.index(g).is_ok_and(|i| grid.island_raw(i) == island))
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
    let island = grid.island_raw(start_i);
    if grid.terrain_raw()[goal_i] == BLOCKED {
        return match policy {
            GoalPolicy::Fail => Err(PathError::GoalBlocked(goal)),
            GoalPolicy::NearestReachable => nearest_on_island(grid, goal, island)
                .map(|g| (start_i, g))
                .ok_or(PathError::Unreachable),
        };
    }
    if grid.island_raw(goal_i) != island {
        return match policy {
            GoalPolicy::Fail => Err(PathError::Unreachable),
            GoalPolicy::NearestReachable => nearest_on_island(grid, goal, island)
                .map(|g| (start_i, g))
                .ok_or(PathError::Unreachable),
        };
    }
    Ok((start_i, goal))
}

/// The cell of `island` nearest (straight-line, in grid space) to `target`, searched in growing
/// rings of cells.
pub fn nearest_on_island(grid: &NavGrid, target: Cell, island: Option<u32>) -> Option<Cell> {
    let island = island?;
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
            if grid.island(c) == Some(island) {
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
