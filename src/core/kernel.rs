//! The search kernel: the one best-first loop every grid search of the core runs, and what it
//! runs on. Node records and per-cell marks stamped with a search generation instead of cleared
//! (Lester's `onOpenList` numbers, Pinter's touched bits), the open list, heap keys, the overlay
//! of one search, the relax step, the moves of square and hexagonal cells, and the dispatch to
//! loops monomorphised for the grid's moves.
//!
//! A search is a user of the kernel: [`AStar`](super::AStar) (forward, toward a goal), jump
//! point search (forward, its successors the jump points), and the goal tree
//! ([`GoalTree`](super::GoalTree), backward from a goal). Each supplies an [`Expand`]: its goal
//! test and its successors. The loop, the stale-entry skip, the budget and the expansion limit
//! are here, once.

use super::cell::Cell;
use super::cost::CostModel;
use super::grid::{CornerRule, NavGrid, Topology};
use super::heuristic::{Heuristic, WEIGHT_ONE, octile};
use super::zeroed::{Zeroed, grow_zeroed, zeroed_vec};

/// Extra cost on a cell for one search only, e.g. cells claimed or occupied by other units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellOverlay {
    /// Add this many fixed-point cost units to steps onto the cell.
    Penalty(u32),
    /// Treat the cell as blocked (it stays walkable for island checks).
    Blocked,
}

/// An overlay's extra that blocks its cell.
pub(super) const OVERLAY_BLOCKED: u32 = u32::MAX;

/// Move sets of the monomorphised loops: four-way, eight-way and hexagonal.
pub(crate) const FOUR: u8 = 0;
pub(crate) const EIGHT: u8 = 1;
pub(crate) const HEX: u8 = 2;

/// A cell's record in a search.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct NodeRecord {
    pub(super) g: u64,
    pub(super) parent: u32,
    /// `2 * generation` = open this search, `2 * generation + 1` = closed; older = untouched.
    pub(super) stamp: u32,
}

// SAFETY: integers only.
unsafe impl Zeroed for NodeRecord {}

/// An entry of the open list.
#[derive(Clone, Copy, Debug)]
pub(super) struct HeapEntry {
    /// `F << 16 | tie-break`, where the tie-break is the remaining estimate H in sixteenths of a
    /// tile (saturated): among equal F, the entry with less H to go (more G done) comes first.
    /// On grids where F might not fit in 48 bits the key is plain F (ties broken arbitrarily).
    pub(super) key: u64,
    pub(super) node: u32,
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
        let crossings = grid.links_raw().total_cost() as u128 * 4;
        Self::with_bound(cells * step * 2 + crossings, costs.straight)
    }

    /// The packing for a search whose F never exceeds `bound`, with straight steps of
    /// `straight` (a vehicle's search: its own bound over its states).
    pub(super) fn with_bound(bound: u128, straight: u32) -> Self {
        if bound < (1u128 << 48) {
            // Sixteenths of a straight step.
            let h_shift = (31 - straight.max(1).leading_zeros()).saturating_sub(4);
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

    /// The largest key of an entry whose path may still cost at most `max_cost`, in a search
    /// whose estimate is weighted by `weight` (fixed-point, [`WEIGHT_ONE`] for plain A*): F is
    /// at most `max_cost` times the weight there.
    pub(super) fn max_key(&self, max_cost: u64, weight: u64) -> u64 {
        let f = u128::from(max_cost) * u128::from(weight.max(WEIGHT_ONE)) / u128::from(WEIGHT_ONE);
        if f >= 1u128 << (64 - self.f_shift) {
            return u64::MAX;
        }
        self.key(f as u64, u64::MAX)
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
        let key = e.key;
        let mut pos = self.items.len();
        self.items.push(e);
        let items = &mut self.items[..];
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            let p = items[parent];
            if p.key <= key {
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
        let key = last.key;
        let mut pos = 0;
        loop {
            let first = ARITY * pos + 1;
            if first >= len {
                break;
            }
            let mut child = first;
            let mut child_key = items[first].key;
            let end = (first + ARITY).min(len);
            for (c, item) in items.iter().enumerate().take(end).skip(first + 1) {
                let k = item.key;
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

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }
}

/// How a search's node records get their memory when they grow to a new grid's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pages {
    /// Written at once, where the scratch is reserved, so a budgeted search never pays for
    /// fresh pages (A*: a search's cost should be its expansions).
    Touched,
    /// Zeroed by the allocator and mapped in as the search reaches them (the goal tree: one tree
    /// on a 512 x 512 map would otherwise pay 2.5 ms up front in one budgeted step).
    Lazy,
}

/// The per-cell scratch of a search: node records, per-cell marks and the overlay, all stamped
/// with the search's generation instead of cleared, so once grown to the grid's size a search
/// allocates nothing but its result.
#[derive(Clone, Debug, Default)]
pub(super) struct Scratch {
    pub(super) nodes: Vec<NodeRecord>,
    pub(super) open: OpenList,
    /// Per-cell marks (a nearest-of-several search's goals, a goal tree's starts): the
    /// generation on a marked cell. Grown when a search uses them.
    pub(super) marks: Vec<u32>,
    /// Per-cell overlay: `(generation, extra)`. Grown when a search has one.
    pub(super) overlay: Vec<(u32, u32)>,
    /// Per-cell memo of jump point search (see `jps`), stamped with the generation.
    pub(super) memo: Vec<u32>,
    pub(super) generation: u32,
}

impl Scratch {
    /// Starts a new search on a grid of `len` padded cells: everything stamped before is
    /// forgotten at once.
    pub(super) fn next_generation(&mut self, len: usize, pages: Pages) {
        if self.nodes.len() != len {
            match pages {
                Pages::Touched => {
                    self.nodes.clear();
                    self.nodes.resize(len, NodeRecord::default());
                }
                Pages::Lazy => self.nodes = zeroed_vec(len),
            }
            self.marks.clear();
            self.overlay.clear();
            self.memo.clear();
            self.generation = 0;
        }
        if self.generation >= u32::MAX / 2 - 1 {
            self.nodes.fill(NodeRecord::default());
            self.marks.fill(0);
            self.overlay.fill((0, 0));
            self.memo.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
        self.open.clear();
    }

    /// The stamp of a node open in this search.
    pub(super) fn open_stamp(&self) -> u32 {
        2 * self.generation
    }

    /// The stamp of a node closed in this search.
    pub(super) fn closed_stamp(&self) -> u32 {
        2 * self.generation + 1
    }

    /// Whether padded cell `i` is closed in this search.
    pub(super) fn is_closed(&self, i: usize) -> bool {
        self.nodes
            .get(i)
            .is_some_and(|n| n.stamp == self.closed_stamp())
    }

    /// Grows the marks to the grid's size (zeroed, lazily mapped).
    pub(super) fn use_marks(&mut self) {
        grow_zeroed(&mut self.marks, self.nodes.len());
    }

    /// Stamps `overlay` on the grid's cells for this search, sparing the cells in `spare` (a
    /// search's ends); the largest extra that does not block.
    pub(super) fn apply_overlay(
        &mut self,
        grid: &NavGrid,
        overlay: &[(Cell, CellOverlay)],
        spare: [usize; 2],
    ) -> u32 {
        if !overlay.is_empty() {
            grow_zeroed(&mut self.overlay, self.nodes.len());
        }
        let generation = self.generation;
        let mut overlay_max = 0;
        for &(cell, o) in overlay {
            if let Ok(i) = grid.index(cell)
                && !spare.contains(&i)
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
        overlay_max
    }

    /// Opens the search at padded cell `i` (cost 0, its own parent) with heap key `key`.
    pub(super) fn seed(&mut self, i: usize, key: u64) {
        self.nodes[i] = NodeRecord {
            g: 0,
            parent: i as u32,
            stamp: self.open_stamp(),
        };
        self.open.push(HeapEntry {
            key,
            node: i as u32,
        });
    }

    /// The cells closed in this search.
    pub(super) fn closed_indices(&self) -> impl Iterator<Item = usize> + '_ {
        let closed = self.closed_stamp();
        (0..self.nodes.len()).filter(move |&i| self.nodes[i].stamp == closed)
    }

    /// The memory the scratch holds, in bytes.
    pub(super) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<NodeRecord>()
            + self.open.items.capacity() * std::mem::size_of::<HeapEntry>()
            + self.marks.capacity() * 4
            + self.overlay.capacity() * 8
            + self.memo.capacity() * 4
    }

    /// The node records and open list for the kernel's loop, and the rest of the scratch for
    /// the search's [`Expand`].
    pub(super) fn split(&mut self, packing: KeyPacking) -> (Frontier<'_>, Marks<'_>) {
        let generation = self.generation;
        (
            Frontier {
                nodes: &mut self.nodes,
                open: &mut self.open,
                open_stamp: 2 * generation,
                packing,
            },
            Marks {
                marks: &self.marks,
                overlay: &self.overlay,
                memo: &mut self.memo,
                generation,
            },
        )
    }
}

/// The scratch a search's [`Expand`] reads (beside the node records).
pub(super) struct Marks<'a> {
    pub(super) marks: &'a [u32],
    pub(super) overlay: &'a [(u32, u32)],
    pub(super) memo: &'a mut [u32],
    pub(super) generation: u32,
}

impl Marks<'_> {
    /// Whether padded cell `i` is marked in this search.
    #[inline(always)]
    pub(super) fn marked(&self, i: usize) -> bool {
        self.marks[i] == self.generation
    }

    /// The overlay's extra on padded cell `i` in this search (0 where it has none).
    #[inline(always)]
    pub(super) fn extra(&self, i: usize) -> u32 {
        overlay_extra(self.overlay, self.generation, i)
    }
}

/// The extra of `overlay` (stamped with search `generation`) on padded cell `i` (0 where it has
/// none; [`OVERLAY_BLOCKED`] where it blocks the cell).
#[inline(always)]
pub(super) fn overlay_extra(overlay: &[(u32, u32)], generation: u32, i: usize) -> u32 {
    match overlay.get(i) {
        Some(&(s, e)) if s == generation => e,
        _ => 0,
    }
}

/// The node records and the open list, as a search's [`Expand`] sees them.
pub(super) struct Frontier<'a> {
    nodes: &'a mut [NodeRecord],
    open: &'a mut OpenList,
    open_stamp: u32,
    packing: KeyPacking,
}

impl Frontier<'_> {
    /// The cost so far of padded cell `i`.
    #[inline(always)]
    pub(super) fn g(&self, i: usize) -> u64 {
        self.nodes[i].g
    }

    /// The parent of padded cell `i`.
    #[inline(always)]
    pub(super) fn parent(&self, i: usize) -> usize {
        self.nodes[i].parent as usize
    }

    /// The relax step: reaches `to` from `from` at cost `g`; if that is its first or a cheaper
    /// way this search, records it and puts it on the open list with the estimate `h()`.
    #[inline(always)]
    pub(super) fn relax(&mut self, from: usize, to: usize, g: u64, h: impl FnOnce() -> u64) {
        let open_stamp = self.open_stamp;
        let r = &mut self.nodes[to];
        if r.stamp < open_stamp || (r.stamp == open_stamp && g < r.g) {
            r.g = g;
            r.parent = from as u32;
            r.stamp = open_stamp;
            let h = h();
            self.open.push(HeapEntry {
                key: self.packing.key(g + h, h),
                node: to as u32,
            });
        }
    }
}

/// What a search does with the node the loop has just closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Closed {
    /// It ends the search.
    Goal,
    /// It is not expanded (nothing may pass through it).
    Skip,
    /// It is expanded.
    Expand,
}

/// A search's part in the kernel's loop: its goal test and its successors.
pub(super) trait Expand {
    /// Whether the search is over before the next pop, goal or not (a goal tree whose starts
    /// are all settled).
    #[inline(always)]
    fn done(&self) -> bool {
        false
    }

    /// Padded cell `i` was just closed.
    fn closed(&mut self, i: usize) -> Closed;

    /// Relaxes the successors of padded cell `i`; returns the expansions its extra work costs
    /// (a jump point search's scanned cells), 0 for a plain expansion.
    fn expand(&mut self, i: usize, frontier: &mut Frontier) -> u32;
}

/// Why the kernel's loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// The budget of pops ran out: the search goes on in the next call.
    Budget,
    /// This padded cell ended the search ([`Closed::Goal`]).
    Goal(usize),
    /// The open list is empty: every reachable cell is closed.
    Empty,
    /// The expansion limit was reached, or the cost limit ([`Counts::max_key`]).
    Limit,
    /// [`Expand::done`].
    Done,
}

/// A search's expansion counts, carried from call to call, and its limits.
#[derive(Clone, Copy, Debug)]
pub(super) struct Counts {
    /// Expansions, scans included.
    pub(super) expansions: u64,
    /// Of `expansions`, those charged for extra work ([`Expand::expand`]'s return).
    pub(super) scans: u64,
    /// No expansion past this many.
    pub(super) max_expansions: u64,
    /// No entry popped with a heap key above this ([`KeyPacking::max_key`]: a cost limit).
    pub(super) max_key: u64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            expansions: 0,
            scans: 0,
            max_expansions: u64::MAX,
            max_key: u64::MAX,
        }
    }
}

/// The loop: pops the open list at most `budget` times (stale entries too: where terrain costs
/// vary, open cells are improved again and again, and their outdated heap entries can outnumber
/// the expansions many times over in one stretch; measured: 11,000 pops in a slice of 256
/// expansions on a 512 x 512 map, 1.2 ms instead of 20 us), skips entries of closed cells,
/// closes the cell, asks the search what to do with it and expands it, within the expansion
/// limit.
#[inline(always)]
pub(super) fn run<E: Expand>(
    frontier: &mut Frontier,
    closed_stamp: u32,
    budget: u32,
    counts: &mut Counts,
    search: &mut E,
) -> End {
    let mut left = budget;
    let mut expansions = counts.expansions;
    let mut scans = counts.scans;
    let (max_expansions, max_key) = (counts.max_expansions, counts.max_key);
    let end = loop {
        if search.done() {
            break End::Done;
        }
        if left == 0 {
            break End::Budget;
        }
        let Some(top) = frontier.open.pop() else {
            break End::Empty;
        };
        if top.key > max_key {
            break End::Limit;
        }
        left -= 1;
        let i = top.node as usize;
        if frontier.nodes[i].stamp == closed_stamp {
            continue;
        }
        frontier.nodes[i].stamp = closed_stamp;
        match search.closed(i) {
            Closed::Goal => break End::Goal(i),
            Closed::Skip => continue,
            Closed::Expand => {}
        }
        if expansions >= max_expansions {
            break End::Limit;
        }
        expansions += 1;
        let charged = search.expand(i, frontier);
        if charged > 0 {
            left = left.saturating_sub(charged);
            expansions += charged as u64;
            scans += charged as u64;
        }
    };
    counts.expansions = expansions;
    counts.scans = scans;
    end
}

/// Visits the moves from padded cell `i` (column `x`, row `y`) onto walkable cells, in a fixed
/// order, under the move set `$moves` ([`FOUR`], [`EIGHT`], [`HEX`]) and the corner rule (`$cut`:
/// cutting allowed): `$visit!(j, diagonal, x, y)` for each, with the target's padded index,
/// whether the move is a diagonal, and the target's column and row. A macro, not a function
/// taking a closure: the closure was not inlined (measured: a quarter of the search time went
/// to calling it).
macro_rules! for_each_move {
    ($moves:expr, $cut:expr, $terrain:expr, $stride:expr, $i:expr, $x:expr, $y:expr, $visit:ident) => {{
        use $crate::core::cell::BLOCKED;
        let (terrain, i, x, y): (&[u8], usize, u32, u32) = ($terrain, $i, $x, $y);
        let (n, s, w, e) = (i - $stride, i + $stride, i - 1, i + 1);
        let (tn, ts, tw, te) = (terrain[n], terrain[s], terrain[w], terrain[e]);
        if tn != BLOCKED {
            $visit!(n, false, x, y.wrapping_sub(1));
        }
        if ts != BLOCKED {
            $visit!(s, false, x, y + 1);
        }
        if tw != BLOCKED {
            $visit!(w, false, x.wrapping_sub(1), y);
        }
        if te != BLOCKED {
            $visit!(e, false, x + 1, y);
        }
        if $moves == $crate::core::kernel::HEX {
            // Axial (1, -1) and (-1, 1): the other two of a hexagon's six neighbours.
            if terrain[n + 1] != BLOCKED {
                $visit!(n + 1, false, x + 1, y.wrapping_sub(1));
            }
            if terrain[s - 1] != BLOCKED {
                $visit!(s - 1, false, x.wrapping_sub(1), y + 1);
            }
        }
        if $moves == $crate::core::kernel::EIGHT {
            let ok = |a: u8, b: u8| {
                if $cut {
                    a != BLOCKED || b != BLOCKED
                } else {
                    a != BLOCKED && b != BLOCKED
                }
            };
            if ok(tn, tw) && terrain[n - 1] != BLOCKED {
                $visit!(n - 1, true, x.wrapping_sub(1), y.wrapping_sub(1));
            }
            if ok(tn, te) && terrain[n + 1] != BLOCKED {
                $visit!(n + 1, true, x + 1, y.wrapping_sub(1));
            }
            if ok(ts, tw) && terrain[s - 1] != BLOCKED {
                $visit!(s - 1, true, x.wrapping_sub(1), y + 1);
            }
            if ok(ts, te) && terrain[s + 1] != BLOCKED {
                $visit!(s + 1, true, x + 1, y + 1);
            }
        }
    }};
}
pub(super) use for_each_move;

/// A search with a loop monomorphised for a grid's moves: `MOVES` ([`FOUR`], [`EIGHT`],
/// [`HEX`]), `CUT` (corner cutting allowed) and `PENALTY` (some step costs more than its terrain
/// says: penalties, an overlay, a turn penalty).
pub(super) trait Monomorphised {
    /// What a slice of the loop returns.
    type Out;
    /// Runs a slice of at most `budget` pops of the loop for these moves on `grid`.
    fn run<const MOVES: u8, const CUT: bool, const PENALTY: bool>(
        &mut self,
        grid: &NavGrid,
        budget: u32,
    ) -> Self::Out;
}

/// Runs a slice of `search`'s loop monomorphised for `grid`'s move rules (with `penalties` or
/// without).
#[inline(always)]
pub(super) fn dispatch<M: Monomorphised>(
    search: &mut M,
    grid: &NavGrid,
    penalties: bool,
    budget: u32,
) -> M::Out {
    let rules = grid.rules();
    match (rules.topology, rules.corner_rule, penalties) {
        (Topology::Four, _, false) => search.run::<FOUR, false, false>(grid, budget),
        (Topology::Four, _, true) => search.run::<FOUR, false, true>(grid, budget),
        (Topology::Eight, CornerRule::NoCutting, false) => {
            search.run::<EIGHT, false, false>(grid, budget)
        }
        (Topology::Eight, CornerRule::NoCutting, true) => {
            search.run::<EIGHT, false, true>(grid, budget)
        }
        (Topology::Eight, CornerRule::AllowCutting, false) => {
            search.run::<EIGHT, true, false>(grid, budget)
        }
        (Topology::Eight, CornerRule::AllowCutting, true) => {
            search.run::<EIGHT, true, true>(grid, budget)
        }
        (Topology::Hex, _, false) => search.run::<HEX, false, false>(grid, budget),
        (Topology::Hex, _, true) => search.run::<HEX, false, true>(grid, budget),
    }
}

/// A forward search in progress (A*, jump point search): its ends, its estimate and its counts.
#[derive(Clone, Debug)]
pub(super) struct Query {
    pub(super) start: usize,
    /// The goal's padded index (of single-goal searches; one of the goals otherwise).
    pub(super) goal: usize,
    pub(super) goal_x: u32,
    pub(super) goal_y: u32,
    pub(super) requested_goal: Cell,
    /// A nearest-of-several search: its goals are the marked cells.
    pub(super) multi_goal: bool,
    pub(super) heuristic: Heuristic,
    pub(super) weight: u64,
    pub(super) min_terrain: u64,
    pub(super) costs: CostModel,
    /// Extra cost of a step that changes direction (see
    /// [`SearchConfig::turn_penalty`](super::SearchConfig::turn_penalty)).
    pub(super) turn_penalty: u64,
    pub(super) counts: Counts,
    pub(super) grid_version: u64,
    pub(super) packing: KeyPacking,
    /// With links: what a path through them costs at least (see [`Query::through_links`]).
    pub(super) links: LinkEstimate,
}

/// What a path through a grid's links costs at least to a search's goal, for its estimate
/// ([`Query::through_links`]).
#[derive(Clone, Debug)]
pub(super) struct LinkEstimate {
    /// Entries from which a path through links may beat the estimate, as (column, row, the
    /// least cost on from there to the goal), cheapest first.
    pub(super) entries: Vec<(u32, u32, u64)>,
    /// Searches without `entries` (grids with many links' ends, estimates other than the open
    /// grid's cost, starts nearer the goal than any way through links): the least cost on from
    /// any link's end, its crossing included (the estimate adds the open-grid cost to the
    /// nearest end); `u64::MAX`: not used.
    pub(super) rest: u64,
    /// Whether the grid is hexagonal (entries' estimates by hexagonal distance).
    pub(super) hex: bool,
    /// Whether the estimate is octile on a square grid (written out in
    /// [`Query::through_links`]).
    pub(super) octile: bool,
}

impl LinkEstimate {
    /// The least of `cap` and each entry's term: `to(column, row)`, the estimate to the entry,
    /// plus its cost on. Entries come cheapest first, and a term is at least its entry's cost:
    /// none past the least so far can lower it.
    #[inline(always)]
    fn least_term(&self, cap: u64, to: impl Fn(u32, u32) -> u64) -> u64 {
        let mut least = cap;
        for &(ex, ey, cost) in &self.entries {
            if cost >= least {
                break;
            }
            least = least.min(to(ex, ey) + cost);
        }
        least
    }

    /// No links: the estimate stays as it is.
    pub(super) fn none() -> Self {
        LinkEstimate {
            entries: Vec::new(),
            rest: u64::MAX,
            hex: false,
            octile: false,
        }
    }
}

impl Query {
    /// The estimate from column `x`, row `y` to the goal (square grids).
    #[inline(always)]
    pub(super) fn h_square(&self, x: u32, y: u32) -> u64 {
        self.heuristic.estimate(
            x.abs_diff(self.goal_x),
            y.abs_diff(self.goal_y),
            self.costs,
            self.min_terrain,
            self.weight,
        )
    }

    /// The estimate `h` of column `x`, row `y` lowered to what a path through a link could
    /// cost: the estimate to each entry of [`LinkEstimate::entries`] and its least cost on
    /// from there (or, without them, `entry_bound`, the open-grid cost to the nearest link
    /// end on terrain of cost 1, at the cheapest terrain, and the least cost on from any
    /// end). Each term is admissible and consistent, so their minimum is: a path
    /// through links first crosses at some entry, and across a crossing the estimate drops by
    /// no more than the crossing costs (an entry's cost on is at most its crossing's and the
    /// least over the exit's own terms).
    #[inline(always)]
    pub(super) fn through_links(&self, h: u64, x: u32, y: u32, entry_bound: u64) -> u64 {
        let links = &self.links;
        if links.rest == u64::MAX && links.entries.is_empty() {
            return h;
        }
        // Any other entry: the open-grid cost to the nearest end, then the least cost on.
        let rest = (entry_bound * self.min_terrain).saturating_add(links.rest);
        // Below which an entry's term counts (weighted, `h` compares only at the end).
        let cap = if self.weight == WEIGHT_ONE {
            h.min(rest)
        } else {
            rest
        };
        let via = if links.octile {
            // The common case written out: this runs for every cell a search reaches.
            let mt = self.min_terrain;
            let (s, d) = (
                self.costs.straight as u64 * mt,
                self.costs.diagonal as u64 * mt,
            );
            links.least_term(cap, |ex, ey| {
                octile(x.abs_diff(ex) as u64, y.abs_diff(ey) as u64, s, d)
            })
        } else {
            links.least_term(cap, |ex, ey| {
                let (dx, dy) = if links.hex {
                    let d = super::hex::distance(
                        Cell::new(x as i32, y as i32),
                        Cell::new(ex as i32, ey as i32),
                    );
                    (d, 0)
                } else {
                    (x.abs_diff(ex), y.abs_diff(ey))
                };
                self.heuristic
                    .estimate(dx, dy, self.costs, self.min_terrain, WEIGHT_ONE)
            })
        };
        h.min(if self.weight == WEIGHT_ONE {
            via
        } else {
            via * self.weight / WEIGHT_ONE
        })
    }
}
